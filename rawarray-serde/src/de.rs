//! Deserialize any serde value from a `.ra` file.
//!
//! Each sequence the Rust type asks for takes one dim, outermost (last) first; once the dims
//! are used up, a scalar must match the file's eltype and elbyte exactly (the error names
//! both). A struct or heterogeneous tuple reads one eltype-0 element field by field and must
//! consume exactly its elbyte bytes. A complex element reads as `Complex<_>` or as any 2-tuple
//! of its float type. `&str` and `&[u8]` borrow from the input of [`from_slice`](crate::from_slice)
//! when the data is stored plain (little-endian, uncompressed).
//!
//! Two limits keep a hostile file from costing more than its bytes justify: a file with no data
//! (a dim is 0) yields at most 1024 empty sequences per level (dims `[0, 2^40]` would ask for
//! 2^40 empty `Vec`s), and a self-describing read (`deserialize_any`) refuses more than 128
//! nested dims (one level of recursion each).

use std::borrow::Cow;
use std::io::Read;
use std::ops::Range;

use half::{bf16, f16};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use crate::array::EMBEDDED;
use crate::bulk;
use crate::eltype::ScalarType as Scalar;
use crate::eltype::{type_label, ElType};
use crate::error::{Error, ErrorKind, Result};
use crate::header::{Flags, Header};

/// Most empty sequences read per level from a file without data (a dim is 0). Each costs the
/// caller a value (24 bytes for a `Vec`) that no byte of the input pays for, so a file of a few
/// bytes could otherwise ask for unbounded time and memory.
pub(crate) const MAX_EMPTY_ITEMS: u64 = 1 << 10;

/// Most dims left when a self-describing read (`deserialize_any`, as `IgnoredAny` or a generic
/// value uses) starts: each dim is one level of recursion.
pub(crate) const MAX_ANY_DEPTH: usize = 128;

/// The input: the caller's bytes, or a stream's, of which only the data section is kept.
enum Input<'de> {
    Borrowed(&'de [u8]),
    Stream,
}

/// The record (eltype-0 element) being read field by field.
#[derive(Clone, Copy)]
struct Record {
    name: &'static str,
    start: usize,
    end: usize,
}

/// A serde `Deserializer` over one `.ra` file.
///
/// ```
/// use serde::Deserialize;
/// let bytes = rawarray_serde::to_vec(&vec![vec![1i32, 2], vec![3, 4], vec![5, 6]]).unwrap();
/// let mut de = rawarray_serde::Deserializer::from_slice(&bytes).unwrap();
/// assert_eq!(de.header().dims, [2, 3]);
/// let v = Vec::<[i32; 2]>::deserialize(&mut de).unwrap();
/// de.end().unwrap();
/// assert_eq!(v, [[1, 2], [3, 4], [5, 6]]);
/// ```
pub struct Deserializer<'de> {
    input: Input<'de>,
    header: Header,
    /// The plain little-endian data: borrowed from the caller's bytes where it is stored so.
    data: Cow<'de, [u8]>,
    pos: usize,
    /// Dims outermost first; `depth` of them have been entered.
    dims: Vec<u64>,
    depth: usize,
    /// Reading one half of a complex element: the half's float type and size.
    half: Option<(ElType, u64)>,
    /// The `u16` that follows is the bits of an f16/bf16 already checked.
    raw16: bool,
    record: Option<Record>,
    entered: bool,
    /// What a scalar read must be at this point, as [`scalar_code`]: the element type at
    /// element level, [`ANY`] inside a record, [`NOT_HERE`] where dims remain. Kept current
    /// so the hot path is one comparison; the slow path explains every refusal.
    here: u32,
    /// [`scalar_code`] of the file's element type.
    elem: u32,
    /// Where reads must stop: the end of the data, or of the record being read.
    limit: usize,
}

/// `here` inside a record: any scalar, unchecked (the header does not describe the fields).
const ANY: u32 = u32::MAX;
/// `here` where a scalar cannot be read.
const NOT_HERE: u32 = u32::MAX - 1;

#[inline(always)]
fn scalar_code(eltype: ElType, elbyte: u64) -> u32 {
    if elbyte < (1 << 16) {
        ((eltype as u32) << 16) | elbyte as u32
    } else {
        NOT_HERE
    }
}

impl<'de> Deserializer<'de> {
    /// A deserializer over a whole file's bytes; `&str` and `&[u8]` borrow from them where the
    /// data is plain.
    pub fn from_slice(bytes: &'de [u8]) -> Result<Deserializer<'de>> {
        let header = Header::decode(bytes)?;
        header.check_input_len(bytes.len() as u64)?;
        let start = header.encoded_len();
        let section = &bytes[start..start + crate::data::to_usize(header.size)?];
        Deserializer::new(Input::Borrowed(bytes), header, Cow::Borrowed(section))
    }

    /// A deserializer over a stream: the header, then the data section, read into one buffer
    /// that grows as bytes arrive (a header that lies about its size costs at most the bytes
    /// really there, twice). The stream is left after the data section.
    pub fn from_reader<R: Read>(mut reader: R) -> Result<Deserializer<'static>> {
        let header = Header::read_from(&mut reader)?;
        let section = crate::data::read_bytes(&mut reader, header.size, None)?;
        Deserializer::new(Input::Stream, header, Cow::Owned(section))
    }

    fn new(
        input: Input<'de>,
        header: Header,
        section: Cow<'de, [u8]>,
    ) -> Result<Deserializer<'de>> {
        let mut data = if header.is_compressed() {
            Cow::Owned(crate::data::decompress(&section, &header)?)
        } else {
            section
        };
        if header.is_big_endian() {
            match header.eltype.swap_width(header.elbyte) {
                None => {
                    return Err(Error::unsupported(
                        "big-endian user-defined elements: their scalars are not described by the header",
                    ))
                }
                // Swapped once, up front (in a copy of borrowed bytes, in place in a stream's
                // buffer): swapping scalar by scalar instead costs every little-endian read
                // about a tenth of its speed (`cargo bench --bench serde`).
                Some(w) if w > 1 => {
                    crate::data::swap_by_eltype(data.to_mut(), header.eltype, header.elbyte);
                }
                Some(_) => {}
            }
        }
        let dims: Vec<u64> = header.dims.iter().rev().copied().collect();
        let elem = scalar_code(header.eltype, header.elbyte);
        let here = if dims.is_empty() { elem } else { NOT_HERE };
        let limit = data.len();
        Ok(Deserializer {
            input,
            header,
            data,
            pos: 0,
            dims,
            depth: 0,
            half: None,
            raw16: false,
            record: None,
            entered: false,
            here,
            elem,
            limit,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Checks that the value read used every element of the file.
    pub fn end(&self) -> Result<()> {
        let len = self.data().len();
        if self.pos != len {
            return Err(Error::msg(format!(
                "the value read used {} of the {len} data bytes (dims {:?})",
                self.pos, self.header.dims
            )));
        }
        Ok(())
    }

    #[inline]
    fn data(&self) -> &[u8] {
        &self.data
    }

    /// The data with the input's lifetime, when it is the caller's bytes.
    fn borrowed_data(&self) -> Option<&'de [u8]> {
        match self.data {
            Cow::Borrowed(b) => Some(b),
            Cow::Owned(_) => None,
        }
    }

    /// Refuses to enter the dim at `depth` when the file has no data (a dim is 0) and the dims
    /// entered so far multiply to more than [`MAX_EMPTY_ITEMS`] empty sequences: a 64-byte
    /// file with dims `[0, 2^40]` would otherwise build 2^40 empty `Vec`s.
    fn check_empty_items(&self, rust: &str) -> Result<()> {
        if !self.data().is_empty() {
            // Each item at any level then holds at least one element's bytes.
            return Ok(());
        }
        let items = self.dims[..=self.depth]
            .iter()
            .fold(1u64, |p, &d| p.saturating_mul(d));
        if items > MAX_EMPTY_ITEMS {
            return Err(Error::msg(format!(
                "the outermost {} dims describe {items} empty {rust}s but the file holds no \
                 data (a dim is 0); at most {MAX_EMPTY_ITEMS} empty sequences per level are read",
                self.depth + 1
            )));
        }
        Ok(())
    }

    /// Takes the next `n` bytes of the data (inside a record: of the record).
    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<Range<usize>> {
        let end = self.pos + n;
        let limit = self.record.map_or(self.data().len(), |r| r.end);
        if end > limit {
            return Err(match self.record {
                Some(r) => self.record_error(r, end - r.start),
                None => Error::msg("internal: read past the data section"),
            });
        }
        let r = self.pos..end;
        self.pos = end;
        Ok(r)
    }

    fn record_error(&self, r: Record, consumed: usize) -> Error {
        Error::msg(format!(
            "record {}: elbyte is {} but the fields consume {consumed} bytes",
            r.name,
            r.end - r.start
        ))
    }

    fn file_label(&self) -> String {
        type_label(self.header.eltype, self.header.elbyte)
    }

    /// The eltype and elbyte scalars are read as here.
    fn scalar_type(&self) -> (ElType, u64) {
        self.half
            .unwrap_or((self.header.eltype, self.header.elbyte))
    }

    /// Checks that a scalar of `eltype`/`N` bytes can be read here and reads its bytes.
    #[inline(always)]
    fn scalar<const N: usize>(&mut self, eltype: ElType, rust: &'static str) -> Result<[u8; N]> {
        if self.here == scalar_code(eltype, N as u64) || self.here == ANY {
            let end = self.pos + N;
            if end <= self.limit {
                let bytes = self.data[self.pos..end].try_into().expect("N bytes");
                self.pos = end;
                return Ok(bytes);
            }
        }
        self.scalar_slow::<N>(eltype, rust)
    }

    /// The scalar read the hot path refused: an f16/bf16's bits, or an error saying why.
    #[cold]
    #[inline(never)]
    fn scalar_slow<const N: usize>(
        &mut self,
        eltype: ElType,
        rust: &'static str,
    ) -> Result<[u8; N]> {
        if self.record.is_none() {
            if self.depth != self.dims.len() {
                return Err(self.shape_error(rust));
            }
            let (t, b) = self.scalar_type();
            if (t, b) != (eltype, N as u64) && !std::mem::take(&mut self.raw16) {
                return Err(ErrorKind::TypeMismatch {
                    file_eltype: t,
                    file_elbyte: b,
                    requested: rust.to_string(),
                    requested_eltype: eltype,
                    requested_elbyte: N as u64,
                }
                .into());
            }
        }
        let r = self.take(N)?;
        Ok(self.data()[r].try_into().expect("N bytes"))
    }

    fn shape_error(&self, rust: &str) -> Error {
        let left: Vec<u64> = self.dims[self.depth..].iter().rev().copied().collect();
        Error::new(ErrorKind::DimsMismatch {
            expected: format!(
                "no dims left for a {rust}, but dims {left:?} remain (a sequence per dim)"
            ),
            found: self.header.dims.clone(),
        })
    }

    /// Starts reading an eltype-0 element field by field; `None` if already inside one.
    /// Inlined (the record comes back in registers, not through memory); the refusals are
    /// out of line.
    #[inline(always)]
    fn begin_record(&mut self, name: &'static str) -> Result<Option<Record>> {
        if self.record.is_some() {
            return Ok(None);
        }
        if self.depth != self.dims.len()
            || self.header.eltype != ElType::User
            || self.half.is_some()
        {
            return Err(self.record_refusal(name));
        }
        let r = Record {
            name,
            start: self.pos,
            end: self.pos + self.header.elbyte as usize,
        };
        self.record = Some(r);
        self.here = ANY;
        self.limit = r.end;
        Ok(Some(r))
    }

    /// Why a record cannot be read here.
    #[cold]
    #[inline(never)]
    fn record_refusal(&self, name: &'static str) -> Error {
        if self.depth != self.dims.len() {
            return self.shape_error(name);
        }
        Error::msg(format!(
            "{name} is read from user-defined (eltype 0) elements; the file holds {}",
            self.file_label()
        ))
    }

    #[inline(always)]
    fn end_record(&mut self, started: Option<Record>) -> Result<()> {
        if let Some(r) = started {
            self.record = None;
            self.here = self.elem;
            self.limit = self.data.len();
            if self.pos != r.end {
                return Err(self.record_short(r));
            }
        }
        Ok(())
    }

    /// A record whose fields did not consume exactly elbyte bytes: the error, with the
    /// position moved to the record's end.
    #[cold]
    #[inline(never)]
    fn record_short(&mut self, r: Record) -> Error {
        let consumed = self.pos - r.start;
        self.pos = r.end;
        self.record_error(r, consumed)
    }

    /// Reads the bytes of one whole innermost dim of uint8 (a string or byte buffer), or of
    /// one user-defined element.
    fn byte_run(&mut self, rust: &'static str) -> Result<Range<usize>> {
        if let Some(r) = self.record {
            return Err(Error::msg(format!(
                "record {}: a {rust} field has no stored length; use a fixed-size array",
                r.name
            )));
        }
        let depth = self.depth;
        let (t, b) = (self.header.eltype, self.header.elbyte);
        if depth + 1 == self.dims.len() && (t, b) == (ElType::Uint, 1) {
            let n = self.dims[depth] as usize;
            return self.take(n);
        }
        if depth == self.dims.len() && t == ElType::User {
            return self.take(b as usize);
        }
        Err(Error::msg(format!(
            "a {rust} is read from the innermost dim of a uint8 file (or one user-defined element); the file holds {} with dims {:?}",
            self.file_label(),
            self.header.dims
        )))
    }

    fn visit_byte_run<V: Visitor<'de>>(
        &mut self,
        r: Range<usize>,
        as_str: bool,
        visitor: V,
    ) -> Result<V::Value> {
        if let Some(b) = self.borrowed_data() {
            let b = &b[r];
            return if as_str {
                visitor.visit_borrowed_str(std::str::from_utf8(b).map_err(Error::msg)?)
            } else {
                visitor.visit_borrowed_bytes(b)
            };
        }
        let b = &self.data()[r];
        if as_str {
            visitor.visit_str(std::str::from_utf8(b).map_err(Error::msg)?)
        } else {
            visitor.visit_bytes(b)
        }
    }

    fn seq<V: Visitor<'de>>(
        &mut self,
        len: Option<usize>,
        visitor: V,
        rust: &'static str,
    ) -> Result<V::Value> {
        self.entered = true;
        if let Some(r) = self.record {
            let Some(len) = len else {
                return Err(Error::msg(format!(
                    "record {}: a {rust} field has no stored length; use a fixed-size array",
                    r.name
                )));
            };
            return visitor.visit_seq(Items {
                de: &mut *self,
                left: len as u64,
            });
        }
        if self.depth < self.dims.len() {
            let dim = self.dims[self.depth];
            self.check_empty_items(rust)?;
            if let Some(len) = len {
                if len as u64 != dim {
                    return Err(Error::new(ErrorKind::DimsMismatch {
                        expected: format!("a dim of {len} for a {rust} of {len}"),
                        found: self.header.dims.clone(),
                    }));
                }
            }
            // Every item of this dim is read one dim deeper: set that up once, not per item.
            self.depth += 1;
            let saved = self.here;
            self.here = if self.depth == self.dims.len() {
                self.elem
            } else {
                NOT_HERE
            };
            let mut items = Items {
                de: &mut *self,
                left: dim,
            };
            let value = visitor.visit_seq(&mut items);
            let left = items.left;
            self.depth -= 1;
            self.here = saved;
            let value = value?;
            if left != 0 {
                return Err(Error::msg(format!(
                    "a {rust} stopped with {left} of {dim} items unread"
                )));
            }
            return Ok(value);
        }
        let (t, b) = self.scalar_type();
        if t == ElType::Complex && len.is_none_or(|l| l == 2) {
            let half = (ElType::Float, b / 2);
            let saved = (self.half, self.here);
            self.half = Some(half);
            self.here = scalar_code(half.0, half.1);
            let value = visitor.visit_seq(Items {
                de: &mut *self,
                left: 2,
            });
            (self.half, self.here) = saved;
            return value;
        }
        if t == ElType::User {
            if let Some(len) = len {
                let started = self.begin_record("tuple")?;
                let v = visitor.visit_seq(Items {
                    de: &mut *self,
                    left: len as u64,
                })?;
                self.end_record(started)?;
                return Ok(v);
            }
        }
        Err(Error::msg(format!(
            "a {rust} needs a dim or a complex element; the dims are used up and the file holds {}",
            self.file_label()
        )))
    }

    /// A tuple or array read item by item (out of line: the fast path is inlined into every
    /// caller).
    #[inline(never)]
    fn tuple_items<V: Visitor<'de>>(&mut self, len: usize, visitor: V) -> Result<V::Value> {
        self.seq(Some(len), visitor, "tuple or array")
    }
}

/// The one-copy paths of [`crate::bulk`]: each returns `None`, having read nothing, where the
/// element-by-element path must decide (and explain any error).
impl<'de> Deserializer<'de> {
    /// An item whose seed is `PhantomData<[P; N]>` of a plain scalar (`next_element::<[f64;
    /// 8]>()`, a field of a record), built here in place: serde's own `[T; N]::deserialize` is
    /// often not inlined, and its result then makes a round trip through memory.
    ///
    /// Optimised, the checks fold to constants and this is inlined away. In builds with debug
    /// assertions (unoptimised by default) nothing folds: kept out of line there, its 17 x 32
    /// arms do not enlarge the frame of every sequence item, which a self-describing read
    /// recurses through once per dim.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline(never))]
    fn plain_array_item<T: DeserializeSeed<'de>>(&mut self) -> Option<T::Value> {
        let (kind, len) = bulk::array_seed_kind::<T>(std::mem::size_of::<T::Value>())?;
        self.plain_array::<T::Value>(kind, len)
    }

    /// A `Vec` of the plain scalar `kind` over the innermost dim, whole.
    #[inline]
    fn plain_vec<V: Visitor<'de>>(&mut self, kind: Scalar) -> Result<Option<V::Value>> {
        let (eltype, elbyte) = (kind.eltype(), kind.elbyte());
        if self.record.is_some()
            || self.half.is_some()
            || self.depth + 1 != self.dims.len()
            || self.elem != scalar_code(eltype, elbyte)
        {
            return Ok(None);
        }
        self.check_empty_items("sequence")?;
        self.entered = true;
        let n = self.dims[self.depth];
        let bytes = crate::data::to_usize(n.saturating_mul(elbyte))?;
        if self.pos + bytes > self.limit {
            return Ok(None);
        }
        let start = self.pos;
        let r = self.take(bytes)?;
        let value = bulk::vec_value::<V>(kind, &self.data[r]);
        if value.is_none() {
            self.pos = start;
        }
        Ok(value)
    }

    /// An array of `len` plain scalars `kind`, whole: a field of a record, or the innermost dim.
    #[inline(always)]
    fn plain_array<U>(&mut self, kind: Scalar, len: usize) -> Option<U> {
        let (eltype, elbyte) = (kind.eltype(), kind.elbyte());
        if self.half.is_some() {
            return None;
        }
        if self.record.is_none()
            && (self.depth + 1 != self.dims.len()
                || self.dims[self.depth] != len as u64
                || self.elem != scalar_code(eltype, elbyte))
        {
            return None;
        }
        let bytes = len * elbyte as usize;
        if self.pos + bytes > self.limit {
            return None;
        }
        let value = bulk::array_value::<U>(kind, len, &self.data[self.pos..self.pos + bytes])?;
        self.entered = true;
        self.pos += bytes;
        Some(value)
    }
}

/// The items of a sequence: a dim, consecutive values of a record, or a complex element's
/// halves. The caller sets up what reading an item means (depth, `here`) around the visit.
struct Items<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    left: u64,
}

impl<'de> de::SeqAccess<'de> for Items<'_, 'de> {
    type Error = Error;

    #[inline(always)]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        if let Some(v) = self.de.plain_array_item::<T>() {
            return Ok(Some(v));
        }
        seed.deserialize(&mut *self.de).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.left).ok()
    }
}

macro_rules! scalars {
    ($($method:ident => $visit:ident($t:ty, $eltype:ident)),* $(,)?) => {$(
        #[inline(always)]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let b = self.scalar(ElType::$eltype, stringify!($t))?;
            visitor.$visit(<$t>::from_le_bytes(b))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    scalars! {
        deserialize_i8 => visit_i8(i8, Int), deserialize_i16 => visit_i16(i16, Int),
        deserialize_i32 => visit_i32(i32, Int), deserialize_i64 => visit_i64(i64, Int),
        deserialize_i128 => visit_i128(i128, Int),
        deserialize_u8 => visit_u8(u8, Uint), deserialize_u32 => visit_u32(u32, Uint),
        deserialize_u64 => visit_u64(u64, Uint), deserialize_u128 => visit_u128(u128, Uint),
        deserialize_f32 => visit_f32(f32, Float), deserialize_f64 => visit_f64(f64, Float),
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let b = self.scalar(ElType::Uint, "u16")?;
        visitor.visit_u16(u16::from_le_bytes(b))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let [b] = self.scalar(ElType::Uint, "bool")?;
        match b {
            0 | 1 => visitor.visit_bool(b == 1),
            v => Err(ErrorKind::InvalidValue {
                what: "bool",
                index: (self.pos - 1) as u64,
                value: v.into(),
            }
            .into()),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let v = u32::from_le_bytes(self.scalar(ElType::Uint, "char")?);
        let c = char::from_u32(v).ok_or(ErrorKind::InvalidValue {
            what: "char",
            index: (self.pos / 4 - 1) as u64,
            value: v.into(),
        })?;
        visitor.visit_char(c)
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if let Some(r) = self.record {
            return Err(Error::msg(format!(
                "record {}: fields of user-defined elements must be read as a known type",
                r.name
            )));
        }
        if self.depth < self.dims.len() {
            if self.dims.len() - self.depth > MAX_ANY_DEPTH {
                return Err(Error::msg(format!(
                    "{} nested dims are too deep for a self-describing read (at most {MAX_ANY_DEPTH})",
                    self.dims.len() - self.depth
                )));
            }
            return self.seq(None, visitor, "sequence");
        }
        match self.scalar_type() {
            (ElType::Int, 1) => self.deserialize_i8(visitor),
            (ElType::Int, 2) => self.deserialize_i16(visitor),
            (ElType::Int, 4) => self.deserialize_i32(visitor),
            (ElType::Int, 8) => self.deserialize_i64(visitor),
            (ElType::Int, _) => self.deserialize_i128(visitor),
            (ElType::Uint, 1) => self.deserialize_u8(visitor),
            (ElType::Uint, 2) => self.deserialize_u16(visitor),
            (ElType::Uint, 4) => self.deserialize_u32(visitor),
            (ElType::Uint, 8) => self.deserialize_u64(visitor),
            (ElType::Uint, _) => self.deserialize_u128(visitor),
            (ElType::Float, 2) => {
                let b = self.scalar(ElType::Float, "f16")?;
                visitor.visit_f32(f16::from_le_bytes(b).to_f32())
            }
            (ElType::Float, 4) => self.deserialize_f32(visitor),
            (ElType::Float, 8) => self.deserialize_f64(visitor),
            (ElType::BFloat16, _) => {
                let b = self.scalar(ElType::BFloat16, "bf16")?;
                visitor.visit_f32(bf16::from_le_bytes(b).to_f32())
            }
            (ElType::Complex, _) => self.seq(Some(2), visitor, "complex"),
            (ElType::User, _) => {
                let r = self.byte_run("user-defined element")?;
                self.visit_byte_run(r, false, visitor)
            }
            (ElType::Float, n) => Err(Error::unsupported(format!(
                "{}-bit floats have no Rust type",
                n * 8
            ))),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let r = self.byte_run("string")?;
        self.visit_byte_run(r, true, visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let r = self.byte_run("byte buffer")?;
        self.visit_byte_run(r, false, visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Error::msg(
            "Option cannot be read from .ra: elements have no missing values",
        ))
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Error::msg(
            "unit `()` cannot be read from .ra: it has no bytes",
        ))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: V,
    ) -> Result<V::Value> {
        Err(Error::msg(format!(
            "unit struct {name} cannot be read from .ra: it has no bytes"
        )))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        match name {
            "f16" | "bf16" => {
                let want = if name == "f16" {
                    ElType::Float
                } else {
                    ElType::BFloat16
                };
                if self.record.is_none() && self.depth == self.dims.len() {
                    let (t, b) = self.scalar_type();
                    if (t, b) != (want, 2) {
                        return Err(ErrorKind::TypeMismatch {
                            file_eltype: t,
                            file_elbyte: b,
                            requested: name.to_string(),
                            requested_eltype: want,
                            requested_elbyte: 2,
                        }
                        .into());
                    }
                    self.raw16 = true;
                }
                visitor.visit_newtype_struct(self)
            }
            EMBEDDED if !self.entered && self.depth == 0 && self.pos == 0 => {
                // The whole input is the embedded file.
                self.pos = self.data().len();
                if let Input::Borrowed(b) = self.input {
                    return visitor.visit_borrowed_bytes(b);
                }
                // A stream kept only its data: the file again, with the data as it is held
                // (plain, little-endian).
                let mut header = self.header.clone();
                header.flags = Flags::NONE;
                header.size = self.data().len() as u64;
                let mut file = header.encode();
                file.extend_from_slice(self.data());
                visitor.visit_bytes(&file)
            }
            EMBEDDED => {
                let r = self.byte_run("embedded .ra file")?;
                self.visit_byte_run(r, false, visitor)
            }
            _ => visitor.visit_newtype_struct(self),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if let Some(kind) = bulk::vec_visitor_kind::<V>() {
            if let Some(v) = self.plain_vec::<V>(kind)? {
                return Ok(v);
            }
        }
        self.seq(None, visitor, "sequence")
    }

    /// Inlined so that `len` is the caller's constant: the check for an array of plain
    /// scalars then folds away, and the array is built in place.
    #[inline(always)]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        if let Some(kind) = bulk::array_visitor_kind::<V>(len) {
            if let Some(v) = self.plain_array::<V::Value>(kind, len) {
                return Ok(v);
            }
        }
        self.tuple_items(len, visitor)
    }

    #[inline(always)]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.entered = true;
        let started = self.begin_record(name)?;
        let v = visitor.visit_seq(Items {
            de: &mut *self,
            left: len as u64,
        })?;
        self.end_record(started)?;
        Ok(v)
    }

    fn deserialize_map<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Error::msg("maps cannot be read from .ra"))
    }

    #[inline(always)]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple_struct(name, fields.len(), visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let index = u32::from_le_bytes(self.scalar(ElType::Uint, name)?);
        visitor.visit_enum(IntoDeserializer::<Error>::into_deserializer(index))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(Error::msg(
            ".ra stores no field names; structs are read field by field in order",
        ))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}
