//! Ragged arrays: a list of rows of different lengths, each a 1-d run of fixed-size values,
//! found through an offsets array of `u64`s (flag bit 3; doc/format.md, section 10).
//!
//! ```text
//! header: flags = 8, dims = [value dims..., values m, rows n], size = 8 x slots + m x value bytes
//! data:   offsets (slots u64s: offsets[0..=n] used, the rest free) | values (m values)
//! ```
//!
//! Row `k` is `values[offsets[k]..offsets[k + 1]]`: O(1), touching no other row. The offsets
//! region may hold more slots than `n + 1` ([`RaggedWriter`] reserves them so that rows can be
//! appended without moving the values); readers never look past `offsets[n]`.
//!
//! With flag bit 2 as well (flags = 12, section 10.2) the values are compressed: the data
//! section is `slots (u64) | offsets | the values as a chunked section` of the codec layer
//! ([`crate::codec`]), so a row still finds its values in O(1) and decodes only their chunks
//! ([`Ragged::write_file_with`]).

use std::borrow::Cow;
use std::fs::File;
use std::io::Write;
use std::marker::PhantomData;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use crate::atomic::{create_atomic, write_atomic};
use crate::codec;
use crate::data;
use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{read_exact_at, stable_header_bytes, write_all_at};
use crate::header::{le_u64, Flags, Header, FIXED_HEADER_LEN, MAGIC, MAX_NDIMS};
use crate::io::{PinnedFile, ReadAt};
use crate::layout::{Layout, Logical};
use crate::lock::{lock_exclusive, open_locked};
use crate::options::WriteOptions;
use crate::records::{reserve_spare, settle, Durability, ElementSpec, Recovery};
use crate::section::{stream, Section};
use crate::trailer::{
    block_len, encode_block_into, locate, probe_backward, probe_forward, Block, Probe, Trailer,
};

/// Flag bit 3: the file is a ragged array. Plain-array readers refuse it (it is not in
/// [`Flags::KNOWN`]).
pub const RAGGED: u64 = 8;

/// Offsets slots a new [`RaggedWriter`] reserves (4 KiB); the region grows when full
/// ([`grown_slots`]).
const FIRST_SLOTS: u64 = 512;

/// The offsets slots a full region of `slots` grows to, for `rows` rows (flushed or pending,
/// `need` slots at least) holding `value_bytes` bytes of values.
///
/// Each growth rewrites the file, copying the values written so far, so the region grows by a
/// factor `g` that makes those copies rarer where values are large: over a file's life they
/// add up to between `1 / (g - 1)` of its values (a file that ends just before a growth) and
/// `g / (g - 1)` (just after one). The slots not yet used cost nothing on disk (a
/// hole until written) but count in the file's length, `8 (g - 1)` bytes a row against its
/// `b + 8` (`b` the mean bytes of values a row); `g = 1 + (b + 8) / 16` keeps them to half the
/// file at most, between 2 (the doubling of tiny rows, whose copies are of small values) and
/// 16. Rows of 128 bytes (32 `f32`) grow 9.5-fold: the copies come to 12% to 112% of the
/// values, against 100% to 200% when doubling. [`RaggedOptions::reserve_rows`] avoids them.
fn grown_slots(slots: u64, need: u64, rows: u64, value_bytes: u64) -> u64 {
    let per_row = value_bytes.checked_div(rows).unwrap_or(0) as f64;
    let g = (1.0 + (per_row + 8.0) / 16.0).clamp(2.0, 16.0);
    let grown = (rows.max(slots) as f64 * g).min(u64::MAX as f64 / 2.0) as u64;
    need.max(slots.saturating_mul(2)).max(grown)
}

/// The most bytes a header may take to be rewritten in one untearable write (as for records).
const MAX_HEADER_LEN: usize = 512;

/// A ragged file's header, decoded and validated; for a file whose values are chunked (flag
/// bit 2 with bit 3), with the slot count word that follows the dims.
///
/// ```
/// use rawarray_serde::{ElType, RaggedHeader};
/// let h = RaggedHeader::new(ElType::Float, 4, vec![], 5, 2, 3).unwrap();
/// assert_eq!(h.size, 3 * 8 + 5 * 4);
/// assert_eq!(RaggedHeader::decode(&h.encode()).unwrap(), h);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaggedHeader {
    /// The values' element type.
    pub eltype: ElType,
    /// Bytes per element.
    pub elbyte: u64,
    /// The dims of one value (`[3]` for `[f32; 3]`), empty for scalars and records.
    pub value_dims: Vec<u64>,
    /// Number of values in all rows (dims[ndims - 2]).
    pub values: u64,
    /// Number of rows (the last dim).
    pub rows: u64,
    /// Bytes of the data section: the offsets region, then the values (chunked: the slot
    /// count word, the offsets region, then the values' chunked section).
    pub size: u64,
    /// Whether the values are a chunked section (flag bit 2; doc/format.md, section 10.2).
    pub chunked: bool,
    /// A chunked file's slot count (the word after the dims); 0 for a plain one, whose slot
    /// count follows from `size`.
    chunked_slots: u64,
}

impl RaggedHeader {
    /// A header for `values` values in `rows` rows, with an offsets region of `slots` `u64`s.
    pub fn new(
        eltype: ElType,
        elbyte: u64,
        value_dims: Vec<u64>,
        values: u64,
        rows: u64,
        slots: u64,
    ) -> Result<RaggedHeader> {
        let mut h = RaggedHeader {
            eltype,
            elbyte,
            value_dims,
            values,
            rows,
            size: 0,
            chunked: false,
            chunked_slots: 0,
        };
        let values_len = h.values_header()?.size;
        h.size = slots
            .checked_mul(8)
            .and_then(|o| o.checked_add(values_len))
            .ok_or_else(|| {
                bad(format!(
                    "{slots} offsets and {values_len} value bytes overflow a u64"
                ))
            })?;
        h.validate()?;
        Ok(h)
    }

    /// A header for a file whose values are a chunked section of `section` bytes, after the
    /// slot count word and an offsets region of `slots` `u64`s.
    ///
    /// ```
    /// use rawarray_serde::{ElType, RaggedHeader};
    /// let h = RaggedHeader::new_chunked(ElType::Float, 4, vec![], 5, 2, 3, 700).unwrap();
    /// assert_eq!((h.size, h.slots(), h.offsets_at(), h.values_at()), (8 + 24 + 700, 3, 72, 96));
    /// assert_eq!(RaggedHeader::decode(&h.encode()).unwrap(), h);
    /// ```
    pub fn new_chunked(
        eltype: ElType,
        elbyte: u64,
        value_dims: Vec<u64>,
        values: u64,
        rows: u64,
        slots: u64,
        section: u64,
    ) -> Result<RaggedHeader> {
        let size = slots
            .checked_add(1)
            .and_then(|w| w.checked_mul(8))
            .and_then(|o| o.checked_add(section))
            .ok_or_else(|| {
                bad(format!(
                    "{slots} offsets and a values section of {section} bytes overflow a u64"
                ))
            })?;
        let h = RaggedHeader {
            eltype,
            elbyte,
            value_dims,
            values,
            rows,
            size,
            chunked: true,
            chunked_slots: slots,
        };
        h.validate()?;
        Ok(h)
    }

    /// The values as a plain array's header (dims `[value dims..., values]`): the element
    /// checks (eltype, elbyte, overflow) are that header's.
    pub fn values_header(&self) -> Result<Header> {
        let mut dims = self.value_dims.clone();
        dims.push(self.values);
        Header::new(self.eltype, self.elbyte, dims)
    }

    /// Checks the rules of the format: at least 2 dims and at most [`MAX_NDIMS`], a valid
    /// element, and an offsets region (`size` minus the values' bytes) of whole `u64`s, at
    /// least `rows + 1` of them.
    pub fn validate(&self) -> Result<()> {
        let ndims = self.value_dims.len() as u64 + 2;
        if ndims > MAX_NDIMS {
            return Err(ErrorKind::TooManyDims {
                ndims,
                max: MAX_NDIMS,
            }
            .into());
        }
        let values_len = self.values_header()?.size;
        if self.chunked {
            return self.validate_chunked();
        }
        let region = self.size.checked_sub(values_len).ok_or_else(|| {
            bad(format!(
                "size = {} is less than the {} bytes of the {} values",
                self.size, values_len, self.values
            ))
        })?;
        if region % 8 != 0 {
            return Err(bad(format!(
                "size = {}: the offsets region (size minus {values_len} value bytes) is {region} \
                 bytes, not a whole number of u64s",
                self.size
            )));
        }
        if self.rows >= region / 8 {
            return Err(bad(format!(
                "size = {}: the offsets region holds {} offsets, fewer than rows + 1 = {}",
                self.size,
                region / 8,
                u128::from(self.rows) + 1
            )));
        }
        Ok(())
    }

    /// A chunked file's rules: at least `rows + 1` slots, and the slot count word and the
    /// slots within `size`.
    fn validate_chunked(&self) -> Result<()> {
        if self.chunked_slots <= self.rows {
            return Err(bad(format!(
                "slots = {}: the offsets region holds fewer offsets than rows + 1 = {}",
                self.chunked_slots,
                u128::from(self.rows) + 1
            )));
        }
        let offsets = self
            .chunked_slots
            .checked_add(1)
            .and_then(|w| w.checked_mul(8))
            .filter(|&b| b <= self.size);
        if offsets.is_none() {
            return Err(bad(format!(
                "slots = {}: the slot count word and {} offsets pass size = {}",
                self.chunked_slots, self.chunked_slots, self.size
            )));
        }
        Ok(())
    }

    /// Slots of the offsets region (at least `rows + 1`).
    pub fn slots(&self) -> u64 {
        if self.chunked {
            return self.chunked_slots;
        }
        (self.size - self.values_len()) / 8
    }

    /// The values' chunked section as a chunked plain array's header (dims `[value dims...,
    /// values]`, `size` the section's bytes), for the codec layer; `None` for plain values.
    pub fn values_section_header(&self) -> Option<Header> {
        if !self.chunked {
            return None;
        }
        let mut h = self.values_header().ok()?;
        h.flags = Flags::CHUNKED;
        h.size = self.size - 8 * (self.chunked_slots + 1);
        Some(h)
    }

    /// Bytes of one value.
    pub fn value_bytes(&self) -> u64 {
        self.value_dims.iter().product::<u64>() * self.elbyte
    }

    /// Bytes of all values, decoded.
    pub fn values_len(&self) -> u64 {
        self.value_bytes() * self.values
    }

    /// Bytes of the header: 48 + 8 x ndims (the slot count word of a chunked file is the data
    /// section's first word).
    pub fn encoded_len(&self) -> u64 {
        (FIXED_HEADER_LEN + 8 * (self.value_dims.len() + 2)) as u64
    }

    /// File offset of `offsets[0]` (after the slot count word in a chunked file).
    pub fn offsets_at(&self) -> u64 {
        self.encoded_len() + if self.chunked { 8 } else { 0 }
    }

    /// File offset of the first value (chunked: of the values' chunked section).
    pub fn values_at(&self) -> u64 {
        self.offsets_at() + 8 * self.slots()
    }

    /// File offset after the data section (where the trailer block starts).
    /// A hostile `size` near 2^64 saturates: an end past any file, refused as truncated.
    pub fn data_end(&self) -> u64 {
        self.encoded_len().saturating_add(self.size)
    }

    /// The header's bytes (chunked: with the slot count word after the dims).
    pub fn encode(&self) -> Vec<u8> {
        let words = [
            MAGIC,
            RAGGED
                | if self.chunked {
                    Flags::CHUNKED.bits()
                } else {
                    0
                },
            self.eltype.code(),
            self.elbyte,
            self.size,
            self.value_dims.len() as u64 + 2,
        ];
        let dims = self
            .value_dims
            .iter()
            .copied()
            .chain([self.values, self.rows]);
        let slots = self.chunked.then_some(self.chunked_slots);
        words
            .into_iter()
            .chain(dims)
            .chain(slots)
            .flat_map(u64::to_le_bytes)
            .collect()
    }

    /// Decodes and validates the header at the start of `bytes` (and, flag bit 2 set, the slot
    /// count word after it). A plain array (bit 3 clear) and a ragged file with other flags
    /// (big-endian, one LZ4 block) are refused.
    pub fn decode(bytes: &[u8]) -> Result<RaggedHeader> {
        // The magic first, on what there is: an input that is no `.ra` file is refused as such,
        // even when shorter than a header (doc/format.md section 10).
        crate::header::check_magic(bytes)?;
        let fixed = bytes
            .get(..FIXED_HEADER_LEN)
            .ok_or(ErrorKind::HeaderTruncated {
                needed: FIXED_HEADER_LEN as u64,
                found: bytes.len() as u64,
            })?;
        let w = |i: usize| le_u64(&fixed[i * 8..i * 8 + 8]);
        let flags = w(1);
        if flags & RAGGED == 0 {
            return Err(bad(format!(
                "flags = {flags}: bit 3 (ragged) is clear; the file is a plain array (read it \
                 with RawArray or DynArray)"
            )));
        }
        Flags::from_bits(flags & !RAGGED)?;
        let chunked = flags == RAGGED | Flags::CHUNKED.bits();
        if flags != RAGGED && !chunked {
            return Err(Error::unsupported(format!(
                "flags = {flags}: a big-endian ragged file, or one whose values are one LZ4 \
                 block, is not supported by this version (flags = 8, or 12 for chunked values)"
            )));
        }
        let eltype = ElType::from_code(w(2))?;
        let ndims = w(5);
        if ndims > MAX_NDIMS {
            return Err(ErrorKind::TooManyDims {
                ndims,
                max: MAX_NDIMS,
            }
            .into());
        }
        if ndims < 2 {
            return Err(bad(format!(
                "ndims = {ndims}: a ragged file has at least 2 dims (values, rows)"
            )));
        }
        let end = FIXED_HEADER_LEN + 8 * (ndims as usize + usize::from(chunked));
        let dims: Vec<u64> = bytes
            .get(FIXED_HEADER_LEN..end)
            .ok_or(ErrorKind::HeaderTruncated {
                needed: end as u64,
                found: bytes.len() as u64,
            })?
            .chunks_exact(8)
            .map(le_u64)
            .collect();
        let (dims, chunked_slots) = match chunked {
            true => (&dims[..dims.len() - 1], dims[dims.len() - 1]),
            false => (&dims[..], 0),
        };
        let h = RaggedHeader {
            eltype,
            elbyte: w(3),
            value_dims: dims[..dims.len() - 2].to_vec(),
            values: dims[dims.len() - 2],
            rows: dims[dims.len() - 1],
            size: w(4),
            chunked,
            chunked_slots,
        };
        h.validate()?;
        Ok(h)
    }

    /// Writes a whole ragged file at `path`, atomically, from its parts: the rows' `offsets`
    /// (`rows + 1` of them, checked as a reader checks them) into `values` (packed
    /// little-endian, as this header's element describes), with `schema` (the element's
    /// layout) in the trailer, or the text marker if `text` (then every row is checked to be
    /// UTF-8). The values are compressed as `opts` say (doc/format.md, section 10.2), or plain
    /// for `None`. `self` gives the element and the counts; its slots must be `rows + 1`.
    /// What a binding that knows the element only at run time (the Python package) calls.
    ///
    /// ```
    /// use rawarray_serde::codec::Codec;
    /// use rawarray_serde::WriteOptions;
    /// use rawarray_serde::{ElType, Layout, Ragged, RaggedHeader};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let h = RaggedHeader::new(ElType::Uint, 2, vec![], 3, 2, 3).unwrap();
    /// let values: Vec<u8> = [1u16, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// let opts = WriteOptions::chunked().codec(Codec::Lz4);
    /// h.write_file(&path, &[0, 1, 3], &values, Layout::scalar(ElType::Uint, 2), false, Some(&opts)).unwrap();
    /// let r = Ragged::<u16>::read_file(&path).unwrap();
    /// assert_eq!(r.iter().collect::<Vec<_>>(), [&[1u16][..], &[2, 3]]);
    /// ```
    pub fn write_file(
        &self,
        path: impl AsRef<Path>,
        offsets: &[u64],
        values: &[u8],
        schema: Layout,
        text: bool,
        opts: Option<&WriteOptions>,
    ) -> Result<()> {
        self.validate()?;
        if self.chunked || self.slots() != self.rows + 1 || offsets.len() as u64 != self.rows + 1 {
            return Err(bad(format!(
                "a ragged file written whole has rows + 1 = {} offsets in as many slots, \
                 found {} offsets and {} slots{}",
                self.rows + 1,
                offsets.len(),
                self.slots(),
                if self.chunked {
                    " (and a chunked header)"
                } else {
                    ""
                }
            )));
        }
        if values.len() as u64 != self.values_len() {
            return Err(bad(format!(
                "values: expected {} bytes for {} values of {} bytes, found {}",
                self.values_len(),
                self.values,
                self.value_bytes(),
                values.len()
            )));
        }
        check_offsets(offsets, self.values)?;
        if text {
            check_text(offsets, values, self.value_bytes())?;
        }
        let trailer = text_marked(Some(schema), text);
        write_atomic(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            match opts {
                Some(opts) => write_chunked(&mut w, self, offsets, values, opts, &trailer)?,
                None => {
                    write_head(&mut w, self, offsets)?;
                    w.write_all(values)?;
                    write_tail(&mut w, self, &trailer)?;
                }
            }
            w.flush().map_err(Error::from)
        })
    }

    /// Whether the file's header says ragged (flag bit 3) and sets no flag bit this version
    /// does not know: how tools pick the reader. A flag word with unknown bits goes to the
    /// plain reader, which names them all, so every reader reports them alike.
    ///
    /// ```
    /// use rawarray_serde::{Ragged, RaggedHeader, RawArray};
    /// assert!(!RaggedHeader::is_ragged(&RawArray::from_vec(vec![1u8]).to_bytes()));
    /// assert!(RaggedHeader::is_ragged(&Ragged::from_rows([[1u8]]).to_bytes().unwrap()));
    /// ```
    pub fn is_ragged(bytes: &[u8]) -> bool {
        let flags = || le_u64(&bytes[8..16]);
        bytes.len() >= 16
            && le_u64(&bytes[..8]) == MAGIC
            && flags() & RAGGED != 0
            && flags() & !(RAGGED | Flags::KNOWN.bits()) == 0
    }

    /// Checks that this header is one of values of `spec` (the element a typed reader asks for).
    fn check_element(&self, spec: &ElementSpec, requested: &str) -> Result<()> {
        if spec.eltype() != self.eltype || spec.elbyte() != self.elbyte {
            return Err(ErrorKind::TypeMismatch {
                file_eltype: self.eltype,
                file_elbyte: self.elbyte,
                requested: requested.to_string(),
                requested_eltype: spec.eltype(),
                requested_elbyte: spec.elbyte(),
            }
            .into());
        }
        if spec.inner_dims() != self.value_dims.as_slice() {
            return Err(ErrorKind::DimsMismatch {
                expected: format!("value dims {:?} of {requested}", spec.inner_dims()),
                found: self.value_dims.clone(),
            }
            .into());
        }
        Ok(())
    }
}

fn bad(why: String) -> Error {
    ErrorKind::BadRagged { why }.into()
}

/// Reads and decodes a ragged file's header (two reads that agree, as for records), with the
/// slot count word after the dims when flag bit 2 says the values are chunked.
fn read_header(file: &File) -> Result<RaggedHeader> {
    let mut bytes = stable_header_bytes(file)?;
    if bytes.len() >= 16 && le_u64(&bytes[8..16]) & Flags::CHUNKED.bits() != 0 {
        let mut word = [0u8; 8];
        // A file that ends before the word is refused by `decode`, naming the bytes it needs.
        if read_exact_at(file, &mut word, bytes.len() as u64).is_ok() {
            bytes.extend_from_slice(&word);
        }
    }
    RaggedHeader::decode(&bytes)
}

/// The values of a chunked ragged file, decoded through the codec layer: `values_len()` bytes.
fn decode_values_section<S: ReadAt>(h: &RaggedHeader, source: S) -> Result<Vec<u8>> {
    let vh = h.values_section_header().expect("called on chunked files");
    Section::open_at(&vh, source, h.values_at())?.read_all()
}

/// Checks offsets read from a file: `offsets[0]` is 0, none decreases, none passes `values`,
/// and the last is `values`. Each failure names the row.
///
/// ```
/// use rawarray_serde::ragged::check_offsets;
/// assert!(check_offsets(&[0, 2, 2, 5], 5).is_ok());
/// let err = check_offsets(&[0, 3, 2], 3).unwrap_err();
/// assert!(err.to_string().contains("row 1"), "{err}");
/// ```
pub fn check_offsets(offsets: &[u64], values: u64) -> Result<()> {
    let Some(&first) = offsets.first() else {
        return Err(bad(
            "no offsets: even a file of no rows has offsets[0] = 0".into()
        ));
    };
    check_ends(first, offsets.len() as u64 - 1, None, values)?;
    for (row, pair) in offsets.windows(2).enumerate() {
        let (start, end) = (pair[0], pair[1]);
        if end < start {
            return Err(bad(format!(
                "row {row} ends at value {end}, before it starts at {start} (offsets[{}] < \
                 offsets[{row}])",
                row + 1
            )));
        }
        if end > values {
            return Err(bad(format!(
                "row {row} ends at value {end}, past the {values} values of the file \
                 (offsets[{}])",
                row + 1
            )));
        }
    }
    check_ends(
        first,
        offsets.len() as u64 - 1,
        offsets.last().copied(),
        values,
    )
}

/// The checks of the first offset (`offsets[0]` is 0) and, when given, the last (`offsets[rows]`
/// is the value count): the ones a reader makes on opening, before it reads any row.
fn check_ends(first: u64, rows: u64, last: Option<u64>, values: u64) -> Result<()> {
    if first != 0 {
        return Err(bad(format!(
            "row 0 starts at value {first}, not 0 (offsets[0])"
        )));
    }
    match last {
        Some(last) if last != values => Err(bad(format!(
            "row {} ends at value {last}, but the file holds {values} values (offsets[{rows}], \
             the last offset, must be the value count)",
            rows.saturating_sub(1)
        ))),
        _ => Ok(()),
    }
}

/// The layout of one value of a text file: a `u8` marked [`Logical::Text`].
fn text_layout() -> Layout {
    Layout::Scalar {
        eltype: ElType::Uint,
        elbyte: 1,
        logical: Some(Logical::Text),
    }
}

/// Whether `trailer`'s schema marks the values as UTF-8 text (its layout is
/// [`Logical::Text`]'s `u8`; the trailer checked that the marker sits on a `u8`).
fn is_text_trailer(trailer: Option<&Trailer>) -> bool {
    trailer.and_then(|t| t.schema.as_ref()) == Some(&text_layout())
}

/// The row as text, or an error naming the row.
fn text_of(row: &[u8], k: usize) -> Result<&str> {
    std::str::from_utf8(row).map_err(|e| bad(format!("row {k} is not UTF-8 text: {e}")))
}

/// A ragged array in memory: rows of different lengths, stored as one run of values and
/// `rows + 1` offsets into it.
///
/// ```
/// use rawarray_serde::Ragged;
/// let r = Ragged::from_rows([vec![1.0f32, 2.0], vec![], vec![3.0]]);
/// assert_eq!(r.rows(), 3);
/// assert_eq!(r.row(0), Some(&[1.0f32, 2.0][..]));
/// assert_eq!(r.offsets(), [0, 2, 2, 3]);
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("r.ra");
/// r.write_file(&path).unwrap();
/// assert_eq!(Ragged::<f32>::read_file(&path).unwrap(), r);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Ragged<T> {
    offsets: Vec<u64>,
    values: Vec<T>,
    text: bool,
}

impl<T: Element> Default for Ragged<T> {
    fn default() -> Self {
        Ragged::new()
    }
}

impl<T: Element> Ragged<T> {
    /// No rows.
    pub fn new() -> Ragged<T> {
        Ragged {
            offsets: vec![0],
            values: Vec::new(),
            text: false,
        }
    }

    /// The rows given, in order.
    pub fn from_rows<R: AsRef<[T]>>(rows: impl IntoIterator<Item = R>) -> Ragged<T>
    where
        T: Clone,
    {
        let mut r = Ragged::new();
        for row in rows {
            r.push_row(row.as_ref());
        }
        r
    }

    /// From offsets and values, checked as a file's are ([`check_offsets`]).
    pub fn from_parts(offsets: Vec<u64>, values: Vec<T>) -> Result<Ragged<T>> {
        check_offsets(&offsets, values.len() as u64)?;
        Ok(Ragged {
            offsets,
            values,
            text: false,
        })
    }

    /// Appends one row.
    pub fn push_row(&mut self, row: &[T])
    where
        T: Clone,
    {
        self.values.extend_from_slice(row);
        self.offsets.push(self.values.len() as u64);
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Row `k`, or `None` past the last row.
    pub fn row(&self, k: usize) -> Option<&[T]> {
        let start = *self.offsets.get(k)? as usize;
        let end = *self.offsets.get(k + 1)? as usize;
        Some(&self.values[start..end])
    }

    /// The rows in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[T]> + '_ {
        self.offsets
            .windows(2)
            .map(|w| &self.values[w[0] as usize..w[1] as usize])
    }

    /// The offsets: `rows + 1` of them, from 0 to the value count.
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Every value, row after row.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The file's bytes: header, offsets, values, trailer (the element's schema, and the text
    /// marker of [`Ragged::from_strs`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file's bytes (see [`Ragged::to_bytes`]) to `w`.
    pub fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> Result<()> {
        let spec = ElementSpec::of::<T>();
        let h = RaggedHeader::new(
            spec.eltype(),
            spec.elbyte(),
            spec.inner_dims().to_vec(),
            self.values.len() as u64,
            self.rows() as u64,
            self.offsets.len() as u64,
        )?;
        write_head(w, &h, &self.offsets)?;
        data::write_values(&self.values, false, w)?;
        write_tail(w, &h, &ragged_trailer::<T>(self.text))
    }

    /// Writes the file at `path`, atomically (a temporary file renamed over it).
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomic(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            self.write_to(&mut w)?;
            w.flush().map_err(Error::from)
        })
    }

    /// The file's bytes with the values compressed: a chunked section (flag bit 2, the
    /// filters and codecs of `opts`; doc/format.md, section 10.2) after the offsets, which stay
    /// plain so that a row is found in O(1) and decodes only the chunks it touches.
    ///
    /// ```
    /// use rawarray_serde::codec::{Codec, Shuffle};
    /// use rawarray_serde::WriteOptions;
    /// use rawarray_serde::{Ragged, RaggedReader};
    /// let rows: Vec<Vec<f32>> = (0..2000).map(|k| vec![k as f32; k % 7]).collect();
    /// let r = Ragged::from_rows(&rows);
    /// let opts = WriteOptions::chunked().codec(Codec::Zstd).shuffle(Shuffle::Byte);
    /// let packed = r.to_bytes_with(&opts).unwrap();
    /// assert!(packed.len() < r.to_bytes().unwrap().len());
    /// assert_eq!(Ragged::<f32>::from_bytes(&packed).unwrap(), r);
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// r.write_file_with(&path, &opts).unwrap();
    /// assert_eq!(*RaggedReader::<f32>::open(&path).unwrap().row(13).unwrap(), [13.0; 6]);
    /// ```
    pub fn to_bytes_with(&self, opts: &WriteOptions) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to_with(&mut out, opts)?;
        Ok(out)
    }

    /// Writes the file's bytes with compressed values (see [`Ragged::to_bytes_with`]) to `w`.
    pub fn write_to_with<W: Write + ?Sized>(&self, w: &mut W, opts: &WriteOptions) -> Result<()> {
        let spec = ElementSpec::of::<T>();
        let plain = RaggedHeader::new(
            spec.eltype(),
            spec.elbyte(),
            spec.inner_dims().to_vec(),
            self.values.len() as u64,
            self.rows() as u64,
            self.offsets.len() as u64,
        )?;
        let mut raw = Vec::new();
        data::write_values(&self.values, false, &mut raw)?;
        write_chunked(
            w,
            &plain,
            &self.offsets,
            &raw,
            opts,
            &ragged_trailer::<T>(self.text),
        )
    }

    /// Writes the file at `path` with compressed values (see [`Ragged::to_bytes_with`]),
    /// atomically.
    pub fn write_file_with(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<()> {
        write_atomic(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            self.write_to_with(&mut w, opts)?;
            w.flush().map_err(Error::from)
        })
    }

    /// Reads a ragged file's bytes. The header, the offsets and (for text) every row's UTF-8
    /// are checked before the values are decoded; each failure names the field or the row.
    pub fn from_bytes(bytes: &[u8]) -> Result<Ragged<T>> {
        let h = RaggedHeader::decode(bytes)?;
        h.check_element(&ElementSpec::of::<T>(), std::any::type_name::<T>())?;
        let parts = Parts::read(bytes)?;
        let values = data::decode_values(&parts.values, false)?;
        Ok(Ragged {
            offsets: parts.offsets,
            values,
            text: parts.text,
        })
    }

    /// Reads the ragged file at `path`, checked as [`Ragged::from_bytes`] checks. Plain values
    /// are read with one read into the final buffer (after the offsets, checked first);
    /// chunked values are decoded through the codec layer. Every read goes through the one
    /// descriptor the header was read from.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Ragged<T>> {
        use std::io::{Seek, SeekFrom};
        let mut file = File::open(path)?;
        let h = read_header(&file)?;
        h.check_element(&ElementSpec::of::<T>(), std::any::type_name::<T>())?;
        let len = file.metadata()?.len();
        if h.chunked {
            let mut all = data::try_zeroed_bytes(len)?;
            read_exact_at(&file, &mut all, 0)?;
            return Ragged::from_bytes(&all);
        }
        if len < h.data_end() {
            return Err(ErrorKind::Truncated {
                expected: h.size,
                found: len.saturating_sub(h.encoded_len()),
            }
            .into());
        }
        // The offsets as a plain u64 array read into place: at most `size` bytes, which the
        // file holds.
        let n = h.rows + 1;
        file.seek(SeekFrom::Start(h.offsets_at()))?;
        let offsets: Vec<u64> = stream::read_values(
            &Header::new(ElType::Uint, 8, vec![n])?,
            &mut file,
            Some(8 * n),
        )?;
        check_offsets(&offsets, h.values)?;
        let text = is_text_trailer(locate(&file, h.data_end(), len).into_result()?.as_ref());
        file.seek(SeekFrom::Start(h.values_at()))?;
        let vh = h.values_header()?;
        let values: Vec<T> = stream::read_values(&vh, &mut file, Some(h.values_len()))?;
        if text {
            check_text(
                &offsets,
                &data::encode_values(&values, false),
                h.value_bytes(),
            )?;
        }
        Ok(Ragged {
            offsets,
            values,
            text,
        })
    }
}

/// Writes the header and the offsets of a file written whole (`slots = rows + 1`).
pub(crate) fn write_head<W: Write + ?Sized>(
    w: &mut W,
    h: &RaggedHeader,
    offsets: &[u64],
) -> Result<()> {
    w.write_all(&h.encode())?;
    // In place on a little-endian machine (no packed copy of the offsets).
    data::write_values(offsets, false, w)
}

/// Writes a whole file whose values (`raw`, packed, as `plain` describes them) go through the
/// codec layer: the header with the slot count word, `offsets`, the values' chunked section,
/// the trailer block.
fn write_chunked<W: Write + ?Sized>(
    w: &mut W,
    plain: &RaggedHeader,
    offsets: &[u64],
    raw: &[u8],
    opts: &WriteOptions,
    trailer: &Trailer,
) -> Result<()> {
    let (_, section) = codec::encode(&plain.values_header()?, raw, opts)?;
    let h = RaggedHeader::new_chunked(
        plain.eltype,
        plain.elbyte,
        plain.value_dims.clone(),
        plain.values,
        plain.rows,
        offsets.len() as u64,
        section.len() as u64,
    )?;
    write_head(w, &h, offsets)?;
    w.write_all(&section)?;
    write_tail(w, &h, trailer)
}

/// Writes the trailer block after the values of a file written whole.
pub(crate) fn write_tail<W: Write + ?Sized>(
    w: &mut W,
    h: &RaggedHeader,
    trailer: &Trailer,
) -> Result<()> {
    let json = trailer.to_json();
    let mut block = Vec::with_capacity(block_len(json.len()));
    encode_block_into(&json, h.data_end(), &mut block);
    w.write_all(&block)?;
    Ok(())
}

/// A ragged file's parts, read from its bytes and checked (header, offsets, text).
pub(crate) struct Parts<'a> {
    pub header: RaggedHeader,
    pub offsets: Vec<u64>,
    /// The values' packed bytes: borrowed, or decoded from a chunked section.
    pub values: Cow<'a, [u8]>,
    pub text: bool,
}

impl<'a> Parts<'a> {
    /// Reads and checks the parts of the ragged file in `bytes`.
    pub fn read(bytes: &'a [u8]) -> Result<Parts<'a>> {
        let h = RaggedHeader::decode(bytes)?;
        let have = (bytes.len() as u64).saturating_sub(h.encoded_len());
        if have < h.size {
            return Err(ErrorKind::Truncated {
                expected: h.size,
                found: have,
            }
            .into());
        }
        let at = h.offsets_at() as usize;
        let offsets: Vec<u64> = bytes[at..at + 8 * (h.rows as usize + 1)]
            .chunks_exact(8)
            .map(le_u64)
            .collect();
        check_offsets(&offsets, h.values)?;
        let trailer = locate(bytes, h.data_end(), bytes.len() as u64).into_result()?;
        let text = is_text_trailer(trailer.as_ref());
        let values = if h.chunked {
            Cow::Owned(decode_values_section(&h, bytes)?)
        } else {
            let start = h.values_at() as usize;
            Cow::Borrowed(&bytes[start..start + h.values_len() as usize])
        };
        if text {
            check_text(&offsets, &values, h.value_bytes())?;
        }
        Ok(Parts {
            header: h,
            offsets,
            values,
            text,
        })
    }

    /// The packed bytes of row `k` (its offsets checked on read).
    pub fn row(&self, k: usize) -> &[u8] {
        let vb = self.header.value_bytes() as usize;
        &self.values[self.offsets[k] as usize * vb..self.offsets[k + 1] as usize * vb]
    }
}

/// Checks that every row of `u8` values is UTF-8.
fn check_text(offsets: &[u64], values: &[u8], value_bytes: u64) -> Result<()> {
    if value_bytes != 1 {
        return Err(bad(format!(
            "the trailer marks the values as text, but they are {value_bytes}-byte values, not bytes"
        )));
    }
    for (k, w) in offsets.windows(2).enumerate() {
        text_of(&values[w[0] as usize..w[1] as usize], k)?;
    }
    Ok(())
}

/// The trailer every ragged file of `T` gets: the element's schema, and the text marker.
fn ragged_trailer<T: Element>(text: bool) -> Trailer {
    text_marked(Some(T::layout()), text)
}

/// A trailer of `schema` (if known); if `text`, the schema is the text marker's `u8` instead
/// (the marker lives in the layout, as `bool`'s does: one home for the fact).
pub(crate) fn text_marked(schema: Option<Layout>, text: bool) -> Trailer {
    let t = Trailer::new(serde_json::Value::Null).expect("a null params value always serializes");
    match (text, schema) {
        (true, _) => t.with_schema(text_layout()),
        (false, Some(schema)) => t.with_schema(schema),
        (false, None) => t,
    }
}

impl Ragged<u8> {
    /// Text: one UTF-8 string a row, marked as text in the trailer's schema (a `u8` of
    /// [`Logical::Text`], `"logical":"text"`), so that readers give strings back.
    ///
    /// ```
    /// use rawarray_serde::Ragged;
    /// let r = Ragged::from_strs(["héllo", "", "wörld"]);
    /// let back = Ragged::<u8>::from_bytes(&r.to_bytes().unwrap()).unwrap();
    /// assert!(back.is_text());
    /// assert_eq!(back.to_strings().unwrap(), ["héllo", "", "wörld"]);
    /// ```
    pub fn from_strs<S: AsRef<str>>(strs: impl IntoIterator<Item = S>) -> Ragged<u8> {
        let mut r = Ragged::from_rows(strs.into_iter().map(|s| s.as_ref().as_bytes().to_vec()));
        r.text = true;
        r
    }

    /// Whether the rows are text.
    pub fn is_text(&self) -> bool {
        self.text
    }

    /// Row `k` as text (an error naming the row if it is not UTF-8).
    pub fn str_row(&self, k: usize) -> Result<&str> {
        let row = self.row(k).ok_or(ErrorKind::OutOfBounds {
            start: k as u64,
            end: k as u64 + 1,
            len: self.rows() as u64,
        })?;
        text_of(row, k)
    }

    /// Every row as a `String`.
    pub fn to_strings(&self) -> Result<Vec<String>> {
        (0..self.rows())
            .map(|k| self.str_row(k).map(str::to_owned))
            .collect()
    }
}

/// Options for a [`RaggedWriter`].
#[derive(Clone, Debug, Default)]
pub struct RaggedOptions {
    durability: Durability,
    text: bool,
    reserve_rows: u64,
}

impl RaggedOptions {
    /// Defaults: no `fsync` at flushes ([`Durability::NoFsync`]), not text.
    pub fn new() -> RaggedOptions {
        RaggedOptions::default()
    }

    /// Whether each flush syncs, as for records.
    pub fn durability(mut self, durability: Durability) -> RaggedOptions {
        self.durability = durability;
        self
    }

    /// Marks the rows as UTF-8 text (a writer of `u8` only).
    pub fn text(mut self, on: bool) -> RaggedOptions {
        self.text = on;
        self
    }

    /// Reserves offsets slots for `rows` rows in the new file (a hole on disk until written),
    /// so that appending that many rows never rewrites the file to grow its offsets region
    /// (by default 511 rows, then growing 2 to 16-fold by the mean size of a row: each growth
    /// copies the values written so far).
    ///
    /// ```
    /// use rawarray_serde::{RaggedOptions, RaggedWriter};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let opts = RaggedOptions::new().reserve_rows(1_000_000);
    /// let w = RaggedWriter::<f32>::create_with(&path, &opts).unwrap();
    /// assert_eq!(w.finish().unwrap().slots(), 1_000_001);
    /// ```
    pub fn reserve_rows(mut self, rows: u64) -> RaggedOptions {
        self.reserve_rows = rows;
        self
    }
}

/// Appends rows to a ragged file, committed by one header write per flush, as
/// [`RecordWriter`](crate::RecordWriter) commits records: readers see the rows of the last
/// flush, a crash loses only rows not flushed, and the file's exclusive lock keeps other
/// writers out.
///
/// Each flush writes the new offsets into free slots of the offsets region (past the
/// `rows + 1` a reader uses), the new values and a trailer block after the data end, then the
/// header. When the region is full the file is rewritten with 2 to 16 times the slots (more
/// for larger rows, whose values cost more to copy; see [`RaggedOptions::reserve_rows`]) and renamed over
/// the path (readers that have it open keep the old file).
///
/// ```
/// use rawarray_serde::{Ragged, RaggedWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("steps.ra");
/// let mut w = RaggedWriter::<u32>::create(&path).unwrap();
/// w.append_row(&[1, 2, 3]).unwrap();
/// w.append_row(&[]).unwrap();
/// w.flush().unwrap();
/// w.append_row(&[4]).unwrap();
/// w.finish().unwrap();
/// let r = Ragged::<u32>::read_file(&path).unwrap();
/// assert_eq!(r.iter().collect::<Vec<_>>(), [&[1, 2, 3][..], &[], &[4]]);
/// ```
#[derive(Debug)]
pub struct RaggedWriter<T: Element> {
    path: std::path::PathBuf,
    file: File,
    header: RaggedHeader,
    json: Vec<u8>,
    spare_at: u64,
    /// Offsets of the rows not yet committed.
    pending_offsets: Vec<u64>,
    /// Their packed values.
    pending_values: Vec<u8>,
    durability: Durability,
    closed: bool,
    _element: PhantomData<fn(T)>,
}

impl<T: Element> RaggedWriter<T> {
    /// Creates (or replaces, atomically) the file at `path` with no rows.
    pub fn create(path: impl AsRef<Path>) -> Result<RaggedWriter<T>> {
        RaggedWriter::create_with(path, &RaggedOptions::new())
    }

    /// [`RaggedWriter::create`] with options.
    pub fn create_with(path: impl AsRef<Path>, opts: &RaggedOptions) -> Result<RaggedWriter<T>> {
        let spec = ElementSpec::of::<T>();
        if opts.text && spec.layout() != &u8::layout() {
            return Err(Error::unsupported(
                "only a RaggedWriter<u8> writes text (one UTF-8 string a row)",
            ));
        }
        let header = RaggedHeader::new(
            spec.eltype(),
            spec.elbyte(),
            spec.inner_dims().to_vec(),
            0,
            0,
            FIRST_SLOTS.max(opts.reserve_rows.saturating_add(1)),
        )?;
        check_header_len(&header)?;
        let json = ragged_trailer::<T>(opts.text).to_json();
        let sync = opts.durability == Durability::Fsync;
        let path = path.as_ref();
        let file = create_atomic(path, sync, |f| {
            write_fresh(f, &header, &0u64.to_le_bytes(), &[], &json)
        })?;
        Ok(RaggedWriter::with_file(
            path,
            file,
            header,
            json,
            opts.durability,
        ))
    }

    /// Opens the ragged file at `path` to append rows, after leaving it as
    /// [`RaggedWriter::finish`] would (rows a crash left uncommitted are dropped).
    pub fn open(path: impl AsRef<Path>) -> Result<RaggedWriter<T>> {
        let path = path.as_ref();
        let file = open_locked(path)?;
        let header = read_header(&file)?;
        if header.chunked {
            return Err(chunked_append());
        }
        let spec = ElementSpec::of::<T>();
        header.check_element(&spec, std::any::type_name::<T>())?;
        check_header_len(&header)?;
        let len = file.metadata()?.len();
        let end = header.data_end();
        if len < end {
            return Err(ErrorKind::Truncated {
                expected: header.size,
                found: len.saturating_sub(header.encoded_len()),
            }
            .into());
        }
        let trailer = match locate(&file, end, len) {
            Probe::Valid(b) => Some(b.trailer),
            Probe::Absent => None,
            Probe::Damaged(why) => return Err(ErrorKind::Trailer(why).into()),
        };
        let json = ragged_trailer::<T>(is_text_trailer(trailer.as_ref())).to_json();
        let spare = probe_backward(&file, end, len).valid().map(|b| b.start);
        settle(&file, end, &json, len, spare, false)?;
        clear_free_slots(&file, &header)?;
        Ok(RaggedWriter::with_file(
            path,
            file,
            header,
            json,
            Durability::NoFsync,
        ))
    }

    fn with_file(
        path: &Path,
        file: File,
        header: RaggedHeader,
        json: Vec<u8>,
        durability: Durability,
    ) -> RaggedWriter<T> {
        RaggedWriter {
            path: path.to_path_buf(),
            file,
            spare_at: header.data_end(),
            header,
            json,
            pending_offsets: Vec::new(),
            pending_values: Vec::new(),
            durability,
            closed: false,
            _element: PhantomData,
        }
    }

    /// Appends one row (buffered until [`RaggedWriter::flush`]).
    pub fn append_row(&mut self, row: &[T]) -> Result<()> {
        // Plain-old-data rows on a little-endian machine are their packed bytes: one copy.
        if let Some(bytes) = T::as_pod_bytes(row) {
            self.pending_values.extend_from_slice(bytes);
        } else {
            let start = self.pending_values.len();
            self.pending_values
                .resize(start + row.len() * T::PACKED_SIZE, 0);
            data::pack_into(row, false, &mut self.pending_values[start..]);
        }
        let last = self
            .pending_offsets
            .last()
            .copied()
            .unwrap_or(self.header.values);
        self.pending_offsets.push(last + row.len() as u64);
        Ok(())
    }

    /// Rows appended, flushed or not.
    pub fn rows(&self) -> u64 {
        self.header.rows + self.pending_offsets.len() as u64
    }

    /// Rows the header on disk covers.
    pub fn flushed_rows(&self) -> u64 {
        self.header.rows
    }

    /// Commits the rows appended so far: offsets into free slots, values and a trailer block
    /// after the data end (one `pwrite`), then the header (one `pwrite`), each synced with
    /// [`Durability::Fsync`]. On an error the file holds the rows of the last flush.
    pub fn flush(&mut self) -> Result<()> {
        if self.pending_offsets.is_empty() {
            return Ok(());
        }
        let rows = self.header.rows + self.pending_offsets.len() as u64;
        if rows + 1 > self.header.slots() {
            return self.grow(rows + 1);
        }
        let file = &self.file;
        let sync = self.durability == Durability::Fsync;
        let h = &self.header;
        let offsets = data::encode_values(&self.pending_offsets, false);
        write_all_at(file, &offsets, h.offsets_at() + 8 * (h.rows + 1))?;
        let at = h.data_end();
        let new_end = at + self.pending_values.len() as u64;
        reserve_spare(
            file,
            &self.json,
            h.encoded_len(),
            &mut self.spare_at,
            new_end,
            sync,
        )?;
        let buffered = self.pending_values.len();
        encode_block_into(&self.json, new_end, &mut self.pending_values);
        let written = write_all_at(file, &self.pending_values, at);
        self.pending_values.truncate(buffered);
        written?;
        if sync {
            file.sync_data()?;
        }
        let values = *self.pending_offsets.last().expect("not empty");
        let mut next = self.header.clone();
        next.size += buffered as u64;
        next.values = values;
        next.rows = rows;
        next.validate()?;
        write_all_at(file, &next.encode(), 0)?;
        if sync {
            file.sync_data()?;
        }
        self.header = next;
        self.pending_offsets.clear();
        self.pending_values.clear();
        Ok(())
    }

    /// Rewrites the file with an offsets region of at least `need` slots (2 to 16 times as
    /// many as now: [`grown_slots`]), every row appended included, and renames it over the path.
    fn grow(&mut self, need: u64) -> Result<()> {
        let values = *self.pending_offsets.last().expect("not empty");
        let rows = self.header.rows + self.pending_offsets.len() as u64;
        let value_bytes = self.header.values_len() + self.pending_values.len() as u64;
        let slots = grown_slots(self.header.slots(), need, rows, value_bytes);
        let mut next = self.header.clone();
        next.values = values;
        next.rows = rows;
        next.size = 0;
        let next = RaggedHeader::new(
            next.eltype,
            next.elbyte,
            next.value_dims,
            values,
            rows,
            slots,
        )?;
        let old = &self.file;
        let h = &self.header;
        let mut offsets = vec![0u8; 8 * (h.rows as usize + 1)];
        read_exact_at(old, &mut offsets, h.offsets_at())?;
        offsets.extend(self.pending_offsets.iter().flat_map(|o| o.to_le_bytes()));
        let sync = self.durability == Durability::Fsync;
        // The replacement takes the path's lock, which our own handle holds: let it go first.
        // Another writer taking it in between makes this flush fail with `Locked`; the file
        // then still holds the rows of the last flush.
        old.unlock()?;
        let created = create_atomic(&self.path, sync, |f| {
            // The committed values move file to file (in the kernel where it can), never
            // through a buffer of their size; the new rows follow them.
            write_fresh(f, &next, &offsets, &[], &self.json)?;
            copy_range(old, h.values_at(), h.values_len(), f, next.values_at())?;
            write_all_at(f, &self.pending_values, next.values_at() + h.values_len())?;
            Ok(())
        });
        self.file = match created {
            Ok(file) => file,
            Err(e) => {
                // Still ours unless another writer took it; either way the error is this one.
                let _ = lock_exclusive(&self.file, &self.path);
                return Err(e);
            }
        };
        self.spare_at = next.data_end();
        self.header = next;
        self.pending_offsets.clear();
        self.pending_values.clear();
        Ok(())
    }

    /// Commits as [`Durability::Fsync`] would, whatever the writer's durability.
    pub fn sync(&mut self) -> Result<()> {
        let durability = std::mem::replace(&mut self.durability, Durability::Fsync);
        let flushed = self.flush();
        self.durability = durability;
        flushed?;
        self.file.sync_data()?;
        Ok(())
    }

    /// Flushes, cuts the file after the trailer block and closes it.
    pub fn finish(mut self) -> Result<RaggedHeader> {
        self.close()?;
        Ok(self.header.clone())
    }

    fn close(&mut self) -> Result<()> {
        self.flush()?;
        let end = self.header.data_end();
        let file = &self.file;
        if self.spare_at != end {
            file.set_len(end + block_len(self.json.len()) as u64)?;
            self.spare_at = end;
        }
        self.closed = true;
        Ok(())
    }
}

impl<T: Element> Drop for RaggedWriter<T> {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported here; the file is valid whatever happens.
            let _ = self.close();
        }
    }
}

/// Zeroes the offsets slots past `offsets[rows]` (and syncs), so that what a dead writer's
/// torn flush left there can never be taken by [`recover`](crate::recover) for rows of a
/// later flush: it reads the rows of an uncommitted flush from those slots.
fn clear_free_slots(file: &File, h: &RaggedHeader) -> Result<()> {
    let free = h.slots() - h.rows - 1;
    if free == 0 {
        return Ok(());
    }
    let at = h.offsets_at() + 8 * (h.rows + 1);
    let mut buf = vec![0u8; data::to_usize((8 * free).min(1 << 20))?];
    let mut done = 0u64;
    let mut dirty = false;
    while done < 8 * free {
        let n = (8 * free - done).min(buf.len() as u64) as usize;
        read_exact_at(file, &mut buf[..n], at + done)?;
        if buf[..n].iter().any(|&b| b != 0) {
            buf[..n].fill(0);
            write_all_at(file, &buf[..n], at + done)?;
            dirty = true;
        }
        done += n as u64;
    }
    if dirty {
        file.sync_data()?;
    }
    Ok(())
}

/// [`recover`](crate::recover) of a ragged file whose exclusive lock `file` holds: extends
/// the header over the rows of a flush whose header write was lost, found through the offsets
/// it wrote into the free slots and the forward trailer block it wrote after their values,
/// then leaves the file as [`RaggedWriter::finish`] would.
///
/// A flush writes its rows' offsets into the slots after `offsets[n]`, then their values and
/// a forward block (whose `at` is its own offset) after the data end, then the header. So the
/// rows `n .. n + k` are complete when slots `n + 1 ..= n + k` do not decrease from `m`, slot
/// `n + k` is some `m + j > m`, and a valid forward block starts `j` values after the data
/// end. The largest such `k` is taken, with the empty rows that end the flush (slots equal to
/// slot `n + k`); [`RaggedWriter::open`] zeroes the free slots, so a stale slot equal to
/// `m + j` cannot follow. A flush of empty rows only is not found (its block is where the
/// committed one was): those rows are lost, as any uncommitted row may be.
pub(crate) fn recover_locked(file: &File) -> Result<Recovery> {
    let mut header = read_header(file)?;
    if header.chunked {
        return Err(chunked_append());
    }
    check_header_len(&header)?;
    let file_len = file.metadata()?.len();
    let end = header.data_end();
    if file_len < end {
        return Err(ErrorKind::Truncated {
            expected: header.size,
            found: file_len.saturating_sub(header.encoded_len()),
        }
        .into());
    }
    // The committed rows must be sound before rows are taken back after them: offsets that
    // are not (a damaged file, not a torn flush) are the error readers give, and nothing is
    // written. Reading them costs what the file holds (`rows + 1 <= slots`, checked above).
    let mut offsets = vec![0u8; 8 * (header.rows as usize + 1)];
    read_exact_at(file, &mut offsets, header.offsets_at())?;
    let offsets: Vec<u64> = offsets.chunks_exact(8).map(le_u64).collect();
    check_offsets(&offsets, header.values)?;
    let before = header.rows;
    let mut recovery = Recovery {
        records_before: before,
        records_after: before,
        trailer: true,
        bytes_removed: 0,
        dropped_chunks: Vec::new(),
        dropped_segments: Vec::new(),
    };
    let spare = probe_backward(file, end, file_len).valid();
    let limit = spare
        .as_ref()
        .filter(|b| b.start > end)
        .map_or(file_len, |b| b.start);
    if let Some((k, block)) = scan_free_slots(file, &header, limit)? {
        let values = header.values + (block.start - end) / header.value_bytes();
        header.size += block.start - end;
        header.values = values;
        header.rows += k;
        header.validate()?;
        write_all_at(file, &header.encode(), 0)?;
        file.sync_data()?;
        if file_len > block.end() {
            file.set_len(block.end())?;
            file.sync_data()?;
        }
        recovery.records_after = header.rows;
        recovery.bytes_removed = file_len - block.end();
        return Ok(recovery);
    }
    match locate(file, end, file_len) {
        Probe::Valid(found) => {
            // The last flush was torn: keep the trailer, drop what follows the data.
            let json = found.trailer.to_json();
            settle(file, end, &json, file_len, spare.map(|b| b.start), true)?;
            recovery.bytes_removed = file_len.saturating_sub(end + block_len(json.len()) as u64);
            Ok(recovery)
        }
        Probe::Damaged(why) => Err(ErrorKind::Trailer(format!(
            "{why}; without a trailer copy, complete rows cannot be told from torn ones"
        ))
        .into()),
        Probe::Absent if file_len == end => {
            recovery.trailer = false;
            Ok(recovery)
        }
        Probe::Absent => Err(Error::unsupported(format!(
            "{} bytes follow the data but no trailer block: a RaggedWriter always leaves one, \
             so rows cannot be told from other bytes",
            file_len - end
        ))),
    }
}

/// The rows of an uncommitted flush (see [`recover_locked`]): how many, and the forward block
/// after their values. Reads the free slots a window at a time and stops at the first slot
/// that decreases or points past `limit`.
fn scan_free_slots(file: &File, h: &RaggedHeader, limit: u64) -> Result<Option<(u64, Block)>> {
    const WINDOW: u64 = 4096;
    let vb = h.value_bytes();
    if vb == 0 {
        // Values of no bytes put every row's block at the data end, where the committed one is.
        return Ok(None);
    }
    let end = h.data_end();
    let free = h.slots() - h.rows - 1;
    let first = h.offsets_at() + 8 * (h.rows + 1);
    let mut prev = h.values;
    let mut found: Option<(u64, Block)> = None;
    let mut buf = Vec::new();
    let mut k = 0u64;
    'scan: while k < free {
        let n = (free - k).min(WINDOW);
        buf.resize(8 * n as usize, 0);
        read_exact_at(file, &mut buf, first + 8 * k)?;
        for slot in buf.chunks_exact(8).map(le_u64) {
            let at = (slot - h.values.min(slot))
                .checked_mul(vb)
                .and_then(|b| b.checked_add(end));
            match (slot < prev, at) {
                (true, _) | (_, None) => break 'scan,
                (_, Some(at)) if at > limit => break 'scan,
                _ => {}
            }
            let at = at.expect("checked above");
            k += 1;
            match &found {
                // The empty rows that end the flush.
                Some((_, b)) if slot == prev && b.start == at => found = Some((k, b.clone())),
                _ if slot > h.values && slot != prev => {
                    if let Probe::Valid(b) = probe_forward(file, at, limit) {
                        if b.is_forward() {
                            found = Some((k, b));
                        }
                    }
                }
                _ => {}
            }
            prev = slot;
        }
    }
    Ok(found)
}

/// The error for appending to (or recovering) a file whose values are chunked.
fn chunked_append() -> Error {
    Error::unsupported(
        "the values are chunked (compressed, flag bit 2): this version appends rows only to \
         plain values, so such a file was never appended to (ra decompress gives plain values)",
    )
}

fn check_header_len(h: &RaggedHeader) -> Result<()> {
    if h.encoded_len() as usize > MAX_HEADER_LEN {
        return Err(Error::unsupported(format!(
            "a ragged header of {} bytes cannot be updated in one untearable write (at most \
             {MAX_HEADER_LEN})",
            h.encoded_len()
        )));
    }
    Ok(())
}

/// Copies `len` bytes at `from` in `src` to `to` in `dst` (`std::io::copy`, which Linux does
/// with `copy_file_range`); a source shorter than that is an error.
fn copy_range(src: &File, from: u64, len: u64, dst: &File, to: u64) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut src, mut dst) = (src, dst);
    src.seek(SeekFrom::Start(from))?;
    dst.seek(SeekFrom::Start(to))?;
    let copied = std::io::copy(&mut src.take(len), &mut dst)?;
    if copied < len {
        return Err(ErrorKind::Truncated {
            expected: len,
            found: copied,
        }
        .into());
    }
    Ok(())
}

/// Writes a whole ragged file: header, `offsets` (packed; the rest of the region a hole),
/// `values` (packed) and the trailer block.
fn write_fresh(
    f: &File,
    h: &RaggedHeader,
    offsets: &[u8],
    values: &[u8],
    json: &[u8],
) -> Result<()> {
    write_all_at(f, &h.encode(), 0)?;
    write_all_at(f, offsets, h.offsets_at())?;
    write_all_at(f, values, h.values_at())?;
    let mut block = Vec::new();
    encode_block_into(json, h.data_end(), &mut block);
    write_all_at(f, &block, h.data_end())?;
    Ok(())
}

/// A ragged file through a memory map: open is O(1), row `k` reads two offsets and the row's
/// bytes, borrowed from the map for plain-old-data elements whose bytes are aligned. Chunked
/// values (section 10.2) are decoded from the chunks the row touches (a decoded copy).
///
/// The reader sees the rows of the header it read at open: a [`RaggedWriter`] appending at the
/// same time writes only into offsets slots past those rows and after the data end, so what
/// the reader sees never changes.
///
/// ```
/// use std::borrow::Cow;
/// use rawarray_serde::{Ragged, RaggedReader};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("r.ra");
/// Ragged::from_rows([vec![1u32, 2], vec![3]]).write_file(&path).unwrap();
/// let r = RaggedReader::<u32>::open(&path).unwrap();
/// assert_eq!(r.rows(), 2);
/// let row = r.row(0).unwrap();
/// assert_eq!(*row, [1, 2]);
/// assert!(matches!(row, Cow::Borrowed(_)));
/// ```
#[derive(Debug)]
pub struct RaggedReader<T> {
    mapped: Mapped,
    _element: PhantomData<fn() -> T>,
}

impl<T: Element + Clone> RaggedReader<T> {
    /// Opens and maps the file; checks the header, the element type and the first and last
    /// offsets (each row's offsets are checked when the row is read).
    pub fn open(path: impl AsRef<Path>) -> Result<RaggedReader<T>> {
        let mapped = Mapped::open(path.as_ref())?;
        mapped
            .header
            .check_element(&ElementSpec::of::<T>(), std::any::type_name::<T>())?;
        Ok(RaggedReader {
            mapped,
            _element: PhantomData,
        })
    }

    /// Number of rows (as the header said at open).
    pub fn rows(&self) -> usize {
        self.mapped.header.rows as usize
    }

    /// The header read at open.
    pub fn header(&self) -> &RaggedHeader {
        &self.mapped.header
    }

    /// The trailer read at open, if any.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.mapped.trailer.as_ref()
    }

    /// Row `k`: borrowed from the map where `T`'s bytes can be (plain-old-data, aligned, values
    /// not chunked), a decoded copy otherwise. A row whose offsets break the rules is an error
    /// naming it.
    pub fn row(&self, k: usize) -> Result<Cow<'_, [T]>> {
        let bytes = self.mapped.row_bytes(k)?;
        if let Cow::Borrowed(bytes) = bytes {
            if let Some(values) = T::cast_pod_slice(bytes) {
                return Ok(Cow::Borrowed(values));
            }
        }
        data::decode_values(&bytes, false).map(Cow::Owned)
    }
}

/// A ragged file opened for reading: its header, its trailer, its data section mapped, and
/// for chunked values the section reader that decodes them (through the same open file).
#[derive(Debug)]
struct Mapped {
    header: RaggedHeader,
    trailer: Option<Trailer>,
    map: Mmap,
    values: Option<Section<PinnedFile>>,
}

impl Mapped {
    /// Opens a ragged file and maps its data section; checks the first and last offsets.
    fn open(path: &Path) -> Result<Mapped> {
        let file = File::open(path)?;
        // The header and the trailer probe of one moment: a writer appending may commit a new
        // header (and write values over the old trailer) between the two reads, as
        // `RecordReader` allows for.
        let (header, _len, probe) = {
            let mut seen = None;
            for _ in 0..100 {
                let header = read_header(&file)?;
                let len = file.metadata()?.len();
                if len < header.data_end() {
                    return Err(ErrorKind::Truncated {
                        expected: header.size,
                        found: len.saturating_sub(header.encoded_len()),
                    }
                    .into());
                }
                let probe = locate(&file, header.data_end(), len);
                let again = read_header(&file)?;
                let settled = again == header;
                seen = Some((header, len, probe));
                if settled {
                    break;
                }
                std::thread::yield_now();
            }
            seen.expect("tried at least once")
        };
        let trailer = probe.into_result()?;
        let size = data::to_usize(header.size)?;
        // SAFETY: memmap2 requires that the mapped bytes are not modified or truncated away
        // while mapped. The map covers the data section of the header read above. A
        // `RaggedWriter` never changes the bytes this reader uses: it writes offsets only into
        // slots past `rows + 1` of any header it committed, values and trailers only after the
        // data end, cuts the file only after the data end, and grows by renaming a new file
        // over the path (this one is left alone); writers hold the file's lock. Other programs
        // editing the file in place break this, as for any map (see `ReadMode`).
        let map = unsafe {
            MmapOptions::new()
                .offset(header.encoded_len())
                .len(size)
                .map(&file)?
        };
        let values = match header.values_section_header() {
            Some(vh) => Some(Section::open_at(
                &vh,
                PinnedFile::new(file, path)?,
                header.values_at(),
            )?),
            None => None,
        };
        let m = Mapped {
            header,
            trailer,
            map,
            values,
        };
        let rows = m.header.rows;
        check_ends(
            m.offset(0),
            rows,
            Some(m.offset(rows as usize)),
            m.header.values,
        )?;
        Ok(m)
    }

    /// `offsets[k]`, for `k <= rows` (the header guarantees the slots are in the map).
    fn offset(&self, k: usize) -> u64 {
        let at = (self.header.offsets_at() - self.header.encoded_len()) as usize + 8 * k;
        le_u64(&self.map[at..at + 8])
    }

    /// The packed bytes of values `start..end` (offsets already checked against the count).
    fn values_bytes(&self, start: u64, end: u64) -> Result<Cow<'_, [u8]>> {
        let h = &self.header;
        let vb = h.value_bytes();
        match &self.values {
            None => {
                let base = (h.values_at() - h.encoded_len()) as usize;
                let (s, e) = ((start * vb) as usize, (end * vb) as usize);
                Ok(Cow::Borrowed(&self.map[base + s..base + e]))
            }
            Some(section) => {
                // The value count is the file's word and compressed values never written read
                // as zeros, so a small file may claim more than memory holds: an error, not an
                // abort.
                let len = (end - start).checked_mul(vb).ok_or_else(|| {
                    Error::msg(format!("{} values of {vb} bytes: too large", end - start))
                })?;
                let mut out = data::try_zeroed_bytes(len)?;
                if start < end {
                    let mut ranges: Vec<std::ops::Range<u64>> =
                        h.value_dims.iter().map(|&d| 0..d).collect();
                    ranges.push(start..end);
                    section.read_box(&ranges, &mut out)?;
                }
                Ok(Cow::Owned(out))
            }
        }
    }

    /// The bytes of row `k`, its offsets checked.
    fn row_bytes(&self, k: usize) -> Result<Cow<'_, [u8]>> {
        let h = &self.header;
        if k as u64 >= h.rows {
            return Err(ErrorKind::OutOfBounds {
                start: k as u64,
                end: k as u64 + 1,
                len: h.rows,
            }
            .into());
        }
        let (start, end) = (self.offset(k), self.offset(k + 1));
        if start > end || end > h.values || (k == 0 && start != 0) {
            return Err(bad(format!(
                "row {k} spans values {start}..{end} of {} (offsets[{k}], offsets[{}])",
                h.values,
                k + 1
            )));
        }
        self.values_bytes(start, end)
    }

    /// `offsets[rows.start..=rows.end]`.
    fn offsets(&self, rows: std::ops::Range<u64>) -> Vec<u64> {
        (rows.start as usize..=rows.end as usize)
            .map(|k| self.offset(k))
            .collect()
    }
}

/// A ragged file of any element type, for tools (`ra info`, `ra cat`): rows as packed
/// little-endian bytes, the element described by the header and the trailer's schema.
///
/// ```
/// use rawarray_serde::{Ragged, ragged::DynRagged};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.ra");
/// Ragged::from_strs(["a", "bcd"]).write_file(&path).unwrap();
/// let d = DynRagged::open(&path).unwrap();
/// assert_eq!((d.rows(), d.header().values, d.longest_row().unwrap()), (2, 4, 3));
/// assert!(d.is_text());
/// assert_eq!(&*d.row_bytes(1).unwrap(), b"bcd");
/// ```
#[derive(Debug)]
pub struct DynRagged {
    mapped: Mapped,
}

impl DynRagged {
    /// Opens and maps a ragged file of any element type.
    pub fn open(path: impl AsRef<Path>) -> Result<DynRagged> {
        Ok(DynRagged {
            mapped: Mapped::open(path.as_ref())?,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> u64 {
        self.mapped.header.rows
    }

    /// The header.
    pub fn header(&self) -> &RaggedHeader {
        &self.mapped.header
    }

    /// The trailer, if any.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.mapped.trailer.as_ref()
    }

    /// The element's layout: the trailer's schema, else the header's scalar.
    pub fn layout(&self) -> Option<Layout> {
        let h = &self.mapped.header;
        self.mapped
            .trailer
            .as_ref()
            .and_then(|t| t.schema.clone())
            .or_else(|| {
                (h.eltype != ElType::User).then_some(Layout::Scalar {
                    eltype: h.eltype,
                    elbyte: h.elbyte,
                    logical: None,
                })
            })
    }

    /// Whether the rows are text.
    pub fn is_text(&self) -> bool {
        is_text_trailer(self.mapped.trailer.as_ref())
    }

    /// Row `k`'s packed little-endian bytes: borrowed from the map, or decoded from the
    /// chunks it touches when the values are chunked.
    pub fn row_bytes(&self, k: u64) -> Result<Cow<'_, [u8]>> {
        let k = usize::try_from(k).unwrap_or(usize::MAX);
        self.mapped.row_bytes(k)
    }

    /// Row `k` as text (an error naming the row if it is not UTF-8).
    pub fn row_str(&self, k: u64) -> Result<Cow<'_, str>> {
        match self.row_bytes(k)? {
            Cow::Borrowed(b) => text_of(b, k as usize).map(Cow::Borrowed),
            Cow::Owned(b) => text_of(&b, k as usize).map(|s| Cow::Owned(s.to_owned())),
        }
    }

    /// `offsets[0..=rows]` as little-endian `u64` bytes, every one checked first
    /// ([`check_offsets`], each failure naming the row): for readers that hand the whole
    /// offsets array out (the Python package's `Ragged.offsets`, a numpy view). Borrowed from
    /// the map; a `Cow` so that a layout whose offsets are not stored plain can decode them.
    ///
    /// ```
    /// use rawarray_serde::{Ragged, ragged::DynRagged};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// Ragged::from_rows([vec![7u16, 8], vec![9]]).write_file(&path).unwrap();
    /// let d = DynRagged::open(&path).unwrap();
    /// let words: Vec<u64> = d.offsets_bytes().unwrap().chunks(8)
    ///     .map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
    /// assert_eq!(words, [0, 2, 3]);
    /// assert_eq!(*d.values_bytes().unwrap(), [7, 0, 8, 0, 9, 0]);
    /// ```
    pub fn offsets_bytes(&self) -> Result<Cow<'_, [u8]>> {
        let m = &self.mapped;
        let at = (m.header.offsets_at() - m.header.encoded_len()) as usize;
        let bytes = &m.map[at..at + 8 * (m.header.rows as usize + 1)];
        let offsets: Vec<u64> = bytes.chunks_exact(8).map(le_u64).collect();
        check_offsets(&offsets, m.header.values)?;
        Ok(Cow::Borrowed(bytes))
    }

    /// Every value, row after row, as packed little-endian bytes (`values x value bytes`; row
    /// `k` is the bytes of values `offsets[k]..offsets[k + 1]`): borrowed from the map; a `Cow`
    /// so that values stored compressed can be decoded.
    pub fn values_bytes(&self) -> Result<Cow<'_, [u8]>> {
        self.mapped.values_bytes(0, self.mapped.header.values)
    }

    /// Writes rows `rows` (a range of row indices) as a ragged file of their own, with this
    /// file's element and trailer (`ra slice`), its values plain.
    pub fn write_rows<W: Write + ?Sized>(
        &self,
        rows: std::ops::Range<u64>,
        w: &mut W,
    ) -> Result<()> {
        self.write_rows_with(rows, w, None)
    }

    /// [`DynRagged::write_rows`], the values compressed as `opts` say (`None`: plain), as
    /// `ra compress` and `ra decompress` write a ragged file.
    pub fn write_rows_with<W: Write + ?Sized>(
        &self,
        rows: std::ops::Range<u64>,
        w: &mut W,
        opts: Option<&WriteOptions>,
    ) -> Result<()> {
        let h = &self.mapped.header;
        if rows.start > rows.end || rows.end > h.rows {
            return Err(ErrorKind::OutOfBounds {
                start: rows.start,
                end: rows.end,
                len: h.rows,
            }
            .into());
        }
        let offsets = self.mapped.offsets(rows.clone());
        let (first, last) = (offsets[0], offsets[offsets.len() - 1]);
        if first > last || last > h.values {
            return Err(bad(format!(
                "rows {}..{} span values {first}..{last} of {} (offsets[{}], offsets[{}])",
                rows.start, rows.end, h.values, rows.start, rows.end
            )));
        }
        let shifted: Vec<u64> = offsets.iter().map(|o| o.wrapping_sub(first)).collect();
        let values = last - first;
        // Rows named by their place in this file, not in the slice.
        check_offsets(&shifted, values).map_err(|e| {
            bad(format!(
                "in rows {}..{} (row 0 is row {}): {e}",
                rows.start, rows.end, rows.start
            ))
        })?;
        let out = RaggedHeader::new(
            h.eltype,
            h.elbyte,
            h.value_dims.clone(),
            values,
            rows.end - rows.start,
            rows.end - rows.start + 1,
        )?;
        let trailer = match &self.mapped.trailer {
            Some(t) => t.clone(),
            None => text_marked(self.layout(), false),
        };
        let bytes = self.mapped.values_bytes(first, last)?;
        match opts {
            Some(opts) => write_chunked(w, &out, &shifted, &bytes, opts, &trailer),
            None => {
                write_head(w, &out, &shifted)?;
                w.write_all(&bytes)?;
                write_tail(w, &out, &trailer)
            }
        }
    }

    /// The length of the longest row, in values, checking every row's offsets.
    pub fn longest_row(&self) -> Result<u64> {
        let offsets = self.mapped.offsets(0..self.mapped.header.rows);
        check_offsets(&offsets, self.mapped.header.values)?;
        Ok(offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::grown_slots;
    use crate::{ElType, Layout, RaggedHeader};

    #[test]
    fn a_ragged_file_written_from_parts_is_checked_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.ra");
        let u8s = Layout::scalar(ElType::Uint, 1);
        let h = RaggedHeader::new(ElType::Uint, 1, vec![], 3, 2, 3).unwrap();
        let write = |h: &RaggedHeader, offsets: &[u64], values: &[u8], text: bool| {
            h.write_file(&path, offsets, values, u8s.clone(), text, None)
                .map_err(|e| e.to_string())
        };
        assert!(write(&h, &[0, 1], b"abc", false)
            .unwrap_err()
            .contains("rows + 1 = 3 offsets"));
        assert!(write(&h, &[0, 1, 3], b"ab", false)
            .unwrap_err()
            .contains("expected 3 bytes"));
        assert!(write(&h, &[0, 2, 1], b"abc", false).is_err());
        assert!(write(&h, &[0, 1, 3], b"a\xff\xfe", true)
            .unwrap_err()
            .contains("row 1 is not UTF-8"));
        let spare = RaggedHeader::new(ElType::Uint, 1, vec![], 3, 2, 9).unwrap();
        assert!(write(&spare, &[0, 1, 3], b"abc", false)
            .unwrap_err()
            .contains("9 slots"));
        assert!(!path.exists());
        write(&h, &[0, 1, 3], b"abc", true).unwrap();
        let r = crate::Ragged::<u8>::read_file(&path).unwrap();
        assert_eq!(r.to_strings().unwrap(), ["a", "bc"]);
    }

    #[test]
    fn the_offsets_region_grows_by_the_size_of_a_row() {
        // 128 bytes a row: g = 1 + 136 / 16 = 9.5.
        assert_eq!(grown_slots(512, 513, 512, 512 * 128), 4864);
        // Empty and tiny rows double, as before.
        assert_eq!(grown_slots(512, 513, 512, 0), 1024);
        assert_eq!(grown_slots(512, 513, 512, 512 * 4), 1024);
        // Large rows grow 16-fold at most.
        assert_eq!(grown_slots(512, 513, 512, 512 * 4096), 8192);
        // A flush of many rows at once gets the slots it needs at least.
        assert_eq!(grown_slots(512, 100_000, 99_999, 0), 199_998);
        // Huge counts saturate rather than overflow.
        assert!(grown_slots(u64::MAX / 4, u64::MAX / 4, u64::MAX / 4, u64::MAX) >= u64::MAX / 4);
    }
}
