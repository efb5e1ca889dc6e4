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
//! nested dims (one level of recursion each). A stream's header is trusted no more than a
//! slice's: what it claims is allocated only as its bytes arrive (see [`read`]), and serde's
//! preallocation from a size hint counts only bytes that have arrived.

use std::io::Read;
use std::marker::PhantomData;
use std::ops::Range;

use half::{bf16, f16};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use crate::array::EMBEDDED;
use crate::bulk;
use crate::eltype::{type_label, ElType, ScalarType, ScalarType as Scalar};
use crate::error::{Error, ErrorKind, Result};
use crate::header::{Flags, Header};

pub mod read;

use read::{Input, SliceInput, StreamInput};

/// Most empty sequences read per level from a file without data (a dim is 0). Each costs the
/// caller a value (24 bytes for a `Vec`) that no byte of the input pays for, so a file of a few
/// bytes could otherwise ask for unbounded time and memory.
pub(crate) const MAX_EMPTY_ITEMS: u64 = 1 << 10;

/// Most dims left when a self-describing read (`deserialize_any`, as `IgnoredAny` or a generic
/// value uses) starts: each dim is one level of recursion.
pub(crate) const MAX_ANY_DEPTH: usize = 128;

/// The record (eltype-0 element) being read field by field.
#[derive(Clone, Copy)]
struct Record {
    name: &'static str,
    start: usize,
    end: usize,
}

/// A serde `Deserializer` over one `.ra` file, read through the input `I`: the caller's bytes
/// ([`from_slice`](Deserializer::from_slice), the default) or a stream
/// ([`from_reader`](Deserializer::from_reader)); see [`read`]. Both take the same path through
/// the same code; only where the bytes come from differs.
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
pub struct Deserializer<'de, I = SliceInput<'de>> {
    /// The data section, plain little-endian, as [`read`] describes.
    input: I,
    header: Header,
    /// The length of the plain data section.
    len: usize,
    /// The offset in the data section of the next byte to read.
    pos: usize,
    /// Dims outermost first; `depth` of them have been entered.
    dims: Vec<u64>,
    depth: usize,
    /// Reading one half of a complex element: the half's float type and size.
    half: Option<(ElType, u64)>,
    /// The `u16` that follows is the bits of an f16/bf16 already checked.
    raw16: bool,
    record: Option<Record>,
    /// The record being read was at hand whole when it began (always, from a slice; from a
    /// stream, once it is in the window), so its fields are read from the input with one check
    /// each, against `limit`. While a record is read, nothing outside it is asked of the input
    /// (a field that does not fit is an error, a nested record or a `Vec` is refused), so what
    /// was at hand stays so until the record ends.
    at_hand: bool,
    entered: bool,
    /// What a scalar read must be at this point, as [`scalar_code`]: the element type at
    /// element level, [`ANY`] inside a record, [`NOT_HERE`] where dims remain. Kept current
    /// so the hot path is one comparison; the slow path explains every refusal.
    here: u32,
    /// [`scalar_code`] of the file's element type.
    elem: u32,
    /// `here` where a record may begin: `elem` in a file of user-defined elements (whose
    /// `here` is `elem` only at element level, outside records and complex halves), else
    /// [`NO_RECORDS`].
    records: u32,
    /// Where reads must stop: the end of the data, or of the record being read.
    limit: usize,
    de: PhantomData<&'de ()>,
}

/// `here` inside a record: any scalar, unchecked (the header does not describe the fields).
const ANY: u32 = u32::MAX;
/// `here` where a scalar cannot be read.
const NOT_HERE: u32 = u32::MAX - 1;
/// `records` where no record begins on the fast path: a value `here` never takes.
const NO_RECORDS: u32 = u32::MAX - 2;

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
        let header = Header::decode_any(bytes)?;
        header.check_input_len(bytes.len() as u64)?;
        let input = SliceInput::new(bytes, &header)?;
        Ok(Deserializer::new(input, header))
    }
}

impl<R: Read> Deserializer<'static, StreamInput<R>> {
    /// A deserializer over a stream: the header, then the data section as the value asks for
    /// it, through a reused window of 64 KiB (a `Vec` of plain scalars is read straight into
    /// its memory). A header that claims more than the stream holds costs at most what
    /// really arrives, twice, and the read fails where the stream ends. After a value that used
    /// every element ([`end`](Self::end)), the stream is left just after the data section.
    ///
    /// ```
    /// use serde::Deserialize;
    /// let bytes = rawarray_serde::to_vec(&vec![1.5f32, 2.5]).unwrap();
    /// let mut de = rawarray_serde::Deserializer::from_reader(&bytes[..]).unwrap();
    /// assert_eq!(Vec::<f32>::deserialize(&mut de).unwrap(), [1.5, 2.5]);
    /// de.end().unwrap();
    /// ```
    pub fn from_reader(reader: R) -> Result<Deserializer<'static, StreamInput<R>>> {
        Deserializer::from_stream(reader, None)
    }

    /// As [`from_reader`](Self::from_reader), where the stream is known to hold `available`
    /// bytes from its current position (a file's length): the data section must fit in them,
    /// and then a value is allocated whole before its bytes are read.
    pub(crate) fn from_stream(
        mut reader: R,
        available: Option<u64>,
    ) -> Result<Deserializer<'static, StreamInput<R>>> {
        let header = Header::read_from_any(&mut reader)?;
        if let Some(a) = available {
            header.check_input_len(a)?;
        }
        let after_header = available.map(|a| a - header.encoded_len() as u64);
        let input = StreamInput::new(reader, &header, after_header)?;
        Ok(Deserializer::new(input, header))
    }
}

impl<'de, I: Input<'de>> Deserializer<'de, I> {
    fn new(input: I, header: Header) -> Deserializer<'de, I> {
        let dims: Vec<u64> = header.dims.iter().rev().copied().collect();
        let elem = scalar_code(header.eltype, header.elbyte);
        let here = if dims.is_empty() { elem } else { NOT_HERE };
        let records = if header.eltype == ElType::User && elem != NOT_HERE {
            elem
        } else {
            NO_RECORDS
        };
        let len = input.data_len();
        Deserializer {
            input,
            header,
            len,
            pos: 0,
            dims,
            depth: 0,
            half: None,
            raw16: false,
            record: None,
            at_hand: false,
            entered: false,
            here,
            elem,
            records,
            limit: len,
            de: PhantomData,
        }
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Checks that the value read used every element of the file.
    pub fn end(&self) -> Result<()> {
        let len = self.len;
        if self.pos != len {
            return Err(ErrorKind::TrailingData {
                used: self.pos as u64,
                len: len as u64,
                dims: self.header.dims.clone(),
            }
            .into());
        }
        Ok(())
    }

    /// Refuses to enter the dim at `depth` when the file has no data (a dim is 0) and the dims
    /// entered so far multiply to more than [`MAX_EMPTY_ITEMS`] empty sequences: a 64-byte
    /// file with dims `[0, 2^40]` would otherwise build 2^40 empty `Vec`s.
    fn check_empty_items(&self, rust: &str) -> Result<()> {
        if self.len != 0 {
            // Each item at any level then holds at least one element's bytes.
            return Ok(());
        }
        let items = self.dims[..=self.depth]
            .iter()
            .fold(1u64, |p, &d| p.saturating_mul(d));
        if items > MAX_EMPTY_ITEMS {
            return Err(ErrorKind::TooManyEmpty {
                level: self.depth + 1,
                items,
                rust: rust.to_string(),
                max: MAX_EMPTY_ITEMS,
            }
            .into());
        }
        Ok(())
    }

    /// Takes the next `n` bytes of the data (inside a record: of the record).
    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<Range<usize>> {
        let end = self.pos + n;
        let limit = self.record.map_or(self.len, |r| r.end);
        if end > limit {
            return Err(match self.record {
                Some(r) => self.record_error(r, end - r.start),
                // Only ranges inside the data are taken: this is a check, not a path.
                None => ErrorKind::Truncated {
                    expected: end as u64,
                    found: limit as u64,
                }
                .into(),
            });
        }
        let r = self.pos..end;
        self.pos = end;
        Ok(r)
    }

    fn record_error(&self, r: Record, consumed: usize) -> Error {
        ErrorKind::RecordSize {
            record: r.name.to_string(),
            elbyte: (r.end - r.start) as u64,
            consumed: consumed as u64,
        }
        .into()
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
        // Written with no more locals than the path without `at_hand` had: a self-describing
        // read recurses once per dim through every scalar arm, and unoptimised builds give
        // each local its own stack slot.
        let end = self.pos + N;
        if (self.at_hand || self.here == scalar_code(eltype, N as u64) || self.here == ANY)
            && end <= self.limit
        {
            let b = if self.at_hand {
                // SAFETY: `at_hand`: the record `start..limit` was found at hand whole when it
                // began, nothing outside it was asked for since, and `pos` is not before its
                // start (reads go forward), so `pos..end` is inside it.
                Some(unsafe { self.input.get_unchecked(self.pos, N) })
            } else {
                self.input.get(self.pos, N)
            };
            if let Some(b) = b {
                let bytes = b.try_into().expect("N bytes");
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
        Ok(self.input.fetch(r.start, N)?.try_into().expect("N bytes"))
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

    /// Starts reading an eltype-0 element field by field; `false` if already inside one.
    /// Inlined; the refusals are out of line.
    #[inline(always)]
    fn begin_record(&mut self, name: &'static str) -> Result<bool> {
        // One comparison where a record may begin (the element level of a file of records,
        // outside a record and a complex half); every other case is decided out of line.
        if self.here != self.records {
            return self.begin_record_slow(name);
        }
        self.start_record(name)
    }

    #[cold]
    #[inline(never)]
    fn begin_record_slow(&mut self, name: &'static str) -> Result<bool> {
        if self.record.is_some() {
            return Ok(false);
        }
        if self.depth != self.dims.len()
            || self.header.eltype != ElType::User
            || self.half.is_some()
        {
            return Err(self.record_refusal(name));
        }
        // A record too long for `records` to name (an elbyte of 64 KiB or more).
        self.start_record(name)
    }

    #[inline(always)]
    fn start_record(&mut self, name: &'static str) -> Result<bool> {
        let r = Record {
            name,
            start: self.pos,
            end: self.pos + self.header.elbyte as usize,
        };
        // `get` finds nothing past the data's end, so a record it finds is inside the data.
        // A stream's window may end inside the record: `prefetch` moves it on.
        let at_hand = self.input.get(r.start, r.end - r.start).is_some() || self.prefetch(r)?;
        self.at_hand = at_hand;
        self.record = Some(r);
        self.here = ANY;
        self.limit = r.end;
        Ok(true)
    }

    #[cold]
    #[inline(never)]
    fn fill_window(&mut self) -> Result<()> {
        self.input.fetch(self.pos, 1).map(drop)
    }

    /// Brings a record no longer than the window into a stream's window: whether it is at
    /// hand now. A record longer than the window is read field by field, each fetched as it
    /// comes; one past the data's end is not at hand (its fields fail as they reach the end).
    #[cold]
    #[inline(never)]
    fn prefetch(&mut self, r: Record) -> Result<bool> {
        let n = r.end - r.start;
        if r.end > self.len {
            return Ok(false);
        }
        if n <= read::WINDOW {
            self.input.fetch(r.start, n)?;
        }
        Ok(self.input.get(r.start, n).is_some())
    }

    /// Why a record cannot be read here.
    #[cold]
    #[inline(never)]
    fn record_refusal(&self, name: &'static str) -> Error {
        if self.depth != self.dims.len() {
            return self.shape_error(name);
        }
        ErrorKind::WrongShape {
            rust: name.to_string(),
            expected: "is read from user-defined (eltype 0) elements".into(),
            found: self.file_label(),
        }
        .into()
    }

    /// Ends the record `begin_record` started (`started`), whose end is `limit`.
    #[inline(always)]
    fn end_record(&mut self, started: bool) -> Result<()> {
        if started {
            if self.pos != self.limit {
                return Err(self.record_short());
            }
            self.leave_record();
        }
        Ok(())
    }

    #[inline(always)]
    fn leave_record(&mut self) {
        self.record = None;
        self.at_hand = false;
        self.here = self.elem;
        self.limit = self.len;
    }

    /// A record whose fields did not consume exactly elbyte bytes: the error, with the
    /// position moved to the record's end.
    #[cold]
    #[inline(never)]
    fn record_short(&mut self) -> Error {
        // Inside the record `begin_record` started, which `limit` ends.
        let r = self.record.unwrap_or(Record {
            name: "record",
            start: self.pos,
            end: self.limit,
        });
        self.leave_record();
        let consumed = self.pos - r.start;
        self.pos = r.end;
        self.record_error(r, consumed)
    }

    /// Reads the bytes of one whole innermost dim of uint8 (a string or byte buffer), or of
    /// one user-defined element.
    fn byte_run(&mut self, rust: &'static str) -> Result<Range<usize>> {
        if let Some(r) = self.record {
            return Err(no_stored_length(r, rust));
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
        Err(ErrorKind::WrongShape {
            rust: rust.to_string(),
            expected: "is read from the innermost dim of a uint8 file (or one user-defined \
                       element)"
                .into(),
            found: format!("{} with dims {:?}", self.file_label(), self.header.dims),
        }
        .into())
    }

    fn visit_byte_run<V: Visitor<'de>>(
        &mut self,
        r: Range<usize>,
        as_str: bool,
        visitor: V,
    ) -> Result<V::Value> {
        if let Some(b) = self.input.borrow(r.start, r.len()) {
            return if as_str {
                visitor.visit_borrowed_str(std::str::from_utf8(b).map_err(invalid_utf8)?)
            } else {
                visitor.visit_borrowed_bytes(b)
            };
        }
        let b = self.input.fetch(r.start, r.len())?;
        if as_str {
            visitor.visit_str(std::str::from_utf8(b).map_err(invalid_utf8)?)
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
                return Err(no_stored_length(r, rust));
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
            if self.pos < self.len && self.input.get(self.pos, 1).is_none() {
                // A stream with nothing at hand: its next window is read now, so that the
                // size hint serde preallocates from counts bytes that have arrived.
                self.fill_window()?;
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
                return Err(ErrorKind::WrongShape {
                    rust: rust.to_string(),
                    expected: format!("reads all {dim} items of its dim"),
                    found: format!("{left} of them left unread"),
                }
                .into());
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
        Err(ErrorKind::WrongShape {
            rust: rust.to_string(),
            expected: "needs a dim or a complex element; the dims are used up".into(),
            found: self.file_label(),
        }
        .into())
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
impl<'de, I: Input<'de>> Deserializer<'de, I> {
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
        if let Some(b) = self.input.get(self.pos, bytes) {
            // At hand (a slice, or a short run in a stream's window): one copy, into memory
            // that is not zeroed first.
            let value = bulk::vec_value::<V>(kind, b);
            if value.is_some() {
                self.pos += bytes;
            }
            return Ok(value);
        }
        // From a stream: straight into the `Vec`, allocated as far as the input justifies.
        let first = self.input.justified(self.pos, bytes) / elbyte as usize;
        let (input, pos) = (&mut self.input, &mut self.pos);
        let mut fill = |dst: &mut [u8]| -> Result<()> {
            input.read_into(*pos, dst)?;
            *pos += dst.len();
            Ok(())
        };
        bulk::vec_filled::<V, Error>(kind, bytes / elbyte as usize, first, &mut fill).transpose()
    }

    /// An array of `len` plain scalars `kind`, whole: a field of a record, or the innermost dim.
    #[inline(always)]
    fn plain_array<U>(&mut self, kind: Scalar, len: usize) -> Option<U> {
        let (eltype, elbyte) = (kind.eltype(), kind.elbyte());
        // A field of a record at hand whole skips the checks (no complex half is read inside
        // a record).
        if !self.at_hand
            && (self.half.is_some()
                || (self.record.is_none()
                    && (self.depth + 1 != self.dims.len()
                        || self.dims[self.depth] != len as u64
                        || self.elem != scalar_code(eltype, elbyte))))
        {
            return None;
        }
        let bytes = len * elbyte as usize;
        if self.pos + bytes > self.limit {
            return None;
        }
        let b = if self.at_hand {
            // SAFETY: as in `scalar`: inside a record found at hand whole, `pos..pos + bytes`
            // ends before its end (`limit`).
            unsafe { self.input.get_unchecked(self.pos, bytes) }
        } else {
            // Not at hand (a stream's window ends inside the array): item by item, which
            // reads on.
            self.input.get(self.pos, bytes)?
        };
        let value = bulk::array_value::<U>(kind, len, b)?;
        self.entered = true;
        self.pos += bytes;
        Some(value)
    }
}

/// The items of a sequence: a dim, consecutive values of a record, or a complex element's
/// halves. The caller sets up what reading an item means (depth, `here`) around the visit.
struct Items<'a, 'de, I> {
    de: &'a mut Deserializer<'de, I>,
    left: u64,
}

impl<'de, I: Input<'de>> de::SeqAccess<'de> for Items<'_, 'de, I> {
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

    /// The items left, but no more than the bytes at hand can hold: serde preallocates from
    /// the hint (up to 1 MiB), and a stream's header claims what may never arrive.
    fn size_hint(&self) -> Option<usize> {
        let de = &*self.de;
        if de.record.is_some() || de.half.is_some() || de.len == 0 {
            return usize::try_from(self.left).ok();
        }
        let item = de.dims[de.depth..]
            .iter()
            .fold(de.header.elbyte, |p, &d| p.saturating_mul(d))
            .max(1);
        let at_hand = de.input.at_hand(de.pos) as u64;
        usize::try_from(self.left.min(at_hand / item)).ok()
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

impl<'de, I: Input<'de>> de::Deserializer<'de> for &mut Deserializer<'de, I> {
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
            return Err(ErrorKind::Unreadable {
                what: format!(
                    "record {}: fields of user-defined elements must be read as a known type",
                    r.name
                ),
            }
            .into());
        }
        if self.depth < self.dims.len() {
            if self.dims.len() - self.depth > MAX_ANY_DEPTH {
                return Err(ErrorKind::TooDeep {
                    depth: self.dims.len() - self.depth,
                    max: MAX_ANY_DEPTH,
                }
                .into());
            }
            return self.seq(None, visitor, "sequence");
        }
        use ScalarType as S;
        let (t, b) = self.scalar_type();
        // Exhaustive on the element-type table: a new row must say how it is read here.
        match ScalarType::of(t, b) {
            Some(S::I8) => self.deserialize_i8(visitor),
            Some(S::I16) => self.deserialize_i16(visitor),
            Some(S::I32) => self.deserialize_i32(visitor),
            Some(S::I64) => self.deserialize_i64(visitor),
            Some(S::I128) => self.deserialize_i128(visitor),
            Some(S::U8) => self.deserialize_u8(visitor),
            Some(S::U16) => self.deserialize_u16(visitor),
            Some(S::U32) => self.deserialize_u32(visitor),
            Some(S::U64) => self.deserialize_u64(visitor),
            Some(S::U128) => self.deserialize_u128(visitor),
            Some(S::F16) => {
                let b = self.scalar(ElType::Float, "f16")?;
                visitor.visit_f32(f16::from_le_bytes(b).to_f32())
            }
            Some(S::F32) => self.deserialize_f32(visitor),
            Some(S::F64) => self.deserialize_f64(visitor),
            Some(S::BF16) => {
                let b = self.scalar(ElType::BFloat16, "bf16")?;
                visitor.visit_f32(bf16::from_le_bytes(b).to_f32())
            }
            Some(S::Complex32 | S::Complex64 | S::Complex128) => {
                self.seq(Some(2), visitor, "complex")
            }
            Some(raw @ (S::F128 | S::Complex256)) => Err(Error::unsupported(format!(
                "{} has no Rust type",
                raw.label()
            ))),
            None => {
                let r = self.byte_run("user-defined element")?;
                self.visit_byte_run(r, false, visitor)
            }
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
        Err(unreadable(
            "Option cannot be read from .ra: elements have no missing values",
        ))
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
        Err(unreadable(
            "unit `()` cannot be read from .ra: it has no bytes",
        ))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _: V,
    ) -> Result<V::Value> {
        Err(unreadable(format!(
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
                self.pos = self.len;
                if let Some(b) = self.input.whole_file() {
                    return visitor.visit_borrowed_bytes(b);
                }
                // A stream has only its data: the file again, with the data as the input
                // hands it out (plain, little-endian).
                let mut header = self.header.clone();
                header.flags = Flags::NONE;
                header.size = self.len as u64;
                let mut file = header.encode();
                file.extend_from_slice(self.input.fetch(0, self.len)?);
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
        Err(unreadable("maps cannot be read from .ra"))
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
        Err(unreadable(
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

/// A record field whose length the file does not store (a `Vec`, a `String`).
#[cold]
fn no_stored_length(r: Record, rust: &str) -> Error {
    ErrorKind::Unreadable {
        what: format!(
            "record {}: a {rust} field has no stored length; use a fixed-size array",
            r.name
        ),
    }
    .into()
}

#[cold]
fn invalid_utf8(e: std::str::Utf8Error) -> Error {
    ErrorKind::InvalidUtf8 {
        valid_up_to: e.valid_up_to() as u64,
    }
    .into()
}

#[cold]
fn unreadable(what: impl Into<String>) -> Error {
    ErrorKind::Unreadable { what: what.into() }.into()
}
