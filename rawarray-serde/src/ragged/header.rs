//! The ragged header: the array's dims read as value dims, values and rows; its offsets
//! slots; the checks of the offsets every reader makes.

use std::fs::File;

use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{header_bytes, stable_header_bytes};
use crate::header::{le_u64, Flags, Header, FIXED_HEADER_LEN, MAGIC, MAX_NDIMS};
use crate::io::header_bytes_of;
use crate::io::ReadAt;
use crate::records::ElementSpec;
use crate::section::Section;

pub use crate::header::RAGGED;

/// Offsets slots a new [`RaggedWriter`] reserves (4 KiB); the region grows when full
/// ([`grown_slots`]).
pub(super) const FIRST_SLOTS: u64 = 512;

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
pub(super) fn grown_slots(slots: u64, need: u64, rows: u64, value_bytes: u64) -> u64 {
    let per_row = value_bytes.checked_div(rows).unwrap_or(0) as f64;
    let g = (1.0 + (per_row + 8.0) / 16.0).clamp(2.0, 16.0);
    let grown = (rows.max(slots) as f64 * g).min(u64::MAX as f64 / 2.0) as u64;
    need.max(slots.saturating_mul(2)).max(grown)
}

/// The most bytes a header may take to be rewritten in one untearable write (as for records).
pub(super) const MAX_HEADER_LEN: usize = 512;

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

    /// [`RaggedHeader::values_section_header`], or an error naming what is wrong: for the
    /// readers and writers of a file its flags say is chunked.
    pub(crate) fn chunked_values_header(&self) -> Result<Header> {
        self.values_section_header().ok_or_else(|| {
            ErrorKind::BadRagged {
                why: format!(
                    "the values of a chunked ragged file: expected a chunked values section of {} values of {} bytes, found a header that cannot describe one",
                    self.values,
                    self.value_bytes()
                ),
            }
            .into()
        })
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
        let fixed = crate::header::magic_and_fixed(bytes)?;
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
        // One home for the test: what the section module says a file holds.
        crate::section::Holds::of_head(bytes) == crate::section::Holds::Rows
    }

    /// Checks that this header is one of values of `spec` (the element a typed reader asks for).
    pub(super) fn check_element(&self, spec: &ElementSpec, requested: &str) -> Result<()> {
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

pub(super) fn bad(why: String) -> Error {
    ErrorKind::BadRagged { why }.into()
}

/// Reads and decodes a ragged file's header (two reads that agree, as for records), with the
/// slot count word after the dims when flag bit 2 says the values are chunked.
pub(super) fn read_header(file: &File) -> Result<RaggedHeader> {
    header_from(file, stable_header_bytes(file)?)
}

/// [`read_header`] in one read, for a reader checking that the header it read (two reads
/// that agreed) is still there: a read equal to it is that header.
pub(super) fn read_header_again(file: &File) -> Result<RaggedHeader> {
    header_from(file, header_bytes(file)?)
}

/// [`read_header`] of a source that is not a local file (an object in a store), which no
/// writer changes under the reader: one read of its bytes.
pub(super) fn read_source_header<S: ReadAt + ?Sized>(source: &S) -> Result<RaggedHeader> {
    header_from(source, header_bytes_of(source)?)
}

/// The header of `bytes` (read from `file`), with the slot count word read after them when
/// the values are chunked.
fn header_from<S: ReadAt + ?Sized>(file: &S, mut bytes: Vec<u8>) -> Result<RaggedHeader> {
    if bytes.len() >= 16 && le_u64(&bytes[8..16]) & Flags::CHUNKED.bits() != 0 {
        let mut word = [0u8; 8];
        // A file that ends before the word is refused by `decode`, naming the bytes it needs.
        if file.read_exact_at(&mut word, bytes.len() as u64).is_ok() {
            bytes.extend_from_slice(&word);
        }
    }
    RaggedHeader::decode(&bytes)
}

/// The size of the values section at `base` of the chunked ragged file `source` by the header
/// now at its start, if that file is the one whose section had header `vh` (the same element,
/// value dims and slots, the section at the same place), grown since: for a reader that found
/// index entries past the size it was opened with (doc/chunked.md section 7.1).
pub(crate) fn later_values_size<S: ReadAt + ?Sized>(
    vh: &Header,
    source: &S,
    base: u64,
) -> Option<u64> {
    // Value dims, m and n, then the slot count word.
    let mut bytes = vec![0u8; FIXED_HEADER_LEN + 8 * (vh.dims.len() + 2)];
    // As `later_size`: none leaves the section in the state it was opened in.
    crate::io::read_settled_at(source, &mut bytes, 0).ok()?;
    let now = RaggedHeader::decode(&bytes).ok()?;
    let nvh = now.values_section_header()?;
    (now.values_at() == base && nvh.is_grown_from(vh) && nvh.size > vh.size).then_some(nvh.size)
}

/// The values of a chunked ragged file, decoded through the codec layer: `values_len()` bytes.
pub(super) fn decode_values_section<S: ReadAt>(h: &RaggedHeader, source: S) -> Result<Vec<u8>> {
    let vh = h.chunked_values_header()?;
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
pub(super) fn check_ends(first: u64, rows: u64, last: Option<u64>, values: u64) -> Result<()> {
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
