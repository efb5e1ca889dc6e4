//! The `.ra` header: layout, validation, encoding.
//!
//! Everything this crate knows about the header's layout lives in this module, once (the
//! element types are in [`crate::eltype`]):
//!
//! | offset | field    | meaning |
//! |--------|----------|---------|
//! | 0      | magic    | [`MAGIC`], the ASCII bytes `rawarray` |
//! | 8      | flags    | bit 0 big-endian data, bit 1 LZ4-compressed data, bit 2 chunked data ([`Flags`]) |
//! | 16     | eltype   | [`ElType`] code |
//! | 24     | elbyte   | bytes per element |
//! | 32     | size     | bytes of data (compressed length when bit 1 is set) |
//! | 40     | ndims    | number of dimensions, 0 for a scalar |
//! | 48     | dims     | `ndims` little-endian `u64`s, first dimension varies fastest |

use std::io::Read;

use crate::eltype::{type_label, ElType};
use crate::error::{ErrorKind, Result};

/// The first eight bytes of every `.ra` file: `b"rawarray"` read as a little-endian `u64`.
pub const MAGIC: u64 = u64::from_le_bytes(crate::sniff::RA_SIGNATURE);

/// Flag bit 3: the file is a ragged array (doc/format.md section 10). Plain-array readers
/// refuse it (it is not in [`Flags::KNOWN`]); the ragged readers decode its header.
pub const RAGGED: u64 = 8;

/// Bytes of the fixed part of the header (magic .. ndims), before the dims.
pub const FIXED_HEADER_LEN: usize = 48;

/// The most dims a header may have. The format sets no limit, but no reader needs more (numpy
/// allows 64), and the bound keeps every copy of a hostile header's dims, in a value or an
/// error message, within 8 KiB: a 1 MB header of 2^17 dims is refused before its dims are read.
pub const MAX_NDIMS: u64 = 1024;

/// The largest plain data section an LZ4 block may hold (`LZ4_MAX_INPUT_SIZE` of the C library),
/// so that every compressed file we write can be read by the C reference.
pub const LZ4_MAX_INPUT: u64 = 0x7E00_0000;

/// Largest factor by which one LZ4 block can expand: each extra length byte adds 255 bytes.
/// A compressed section of `n` bytes never decompresses to more than `255 * n + 24` bytes,
/// so a header claiming more is rejected before anything is allocated.
const LZ4_MAX_RATIO: u64 = 255;

/// The header's flag word.
///
/// ```
/// use rawarray_serde::Flags;
/// let f = Flags::BIG_ENDIAN | Flags::COMPRESSED;
/// assert!(f.is_big_endian() && f.is_compressed());
/// assert_eq!(f.bits(), 3);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(u64);

impl Flags {
    /// No flag set: little-endian, uncompressed.
    pub const NONE: Flags = Flags(0);
    /// Bit 0: the data section is big-endian.
    pub const BIG_ENDIAN: Flags = Flags(1);
    /// Bit 1: the data section is one raw LZ4 block (as the C reference writes it).
    pub const COMPRESSED: Flags = Flags(2);
    /// Bit 2: the data section is in the chunked layout ([`crate::codec`]). Only readers that
    /// go through the codec layer accept it: [`Header::decode`] and [`Header::read_from`]
    /// refuse it, [`Header::decode_any`] and [`Header::read_from_any`] accept it.
    pub const CHUNKED: Flags = Flags(4);
    /// All bits this crate understands in an array's header. Bit 3 (8, a ragged array) is
    /// read only by [`Ragged`](crate::Ragged) and its readers: every reader of plain arrays
    /// refuses it, as a reader that does not know it must.
    pub const KNOWN: Flags = Flags(7);

    /// Flags from raw bits, rejecting bits this crate does not know.
    ///
    /// ```
    /// use rawarray_serde::Flags;
    /// assert!(Flags::from_bits(2).unwrap().is_compressed());
    /// assert!(Flags::from_bits(8).is_err());
    /// ```
    pub fn from_bits(bits: u64) -> Result<Flags> {
        let unknown = bits & !Flags::KNOWN.0;
        if unknown == RAGGED {
            return Err(ErrorKind::RaggedFile.into());
        }
        if unknown != 0 {
            return Err(ErrorKind::UnknownFlags { bits: unknown }.into());
        }
        Ok(Flags(bits))
    }

    /// The raw bits.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Whether the data section is big-endian.
    pub fn is_big_endian(self) -> bool {
        self.0 & Flags::BIG_ENDIAN.0 != 0
    }

    /// Whether the data section is LZ4-compressed.
    pub fn is_compressed(self) -> bool {
        self.0 & Flags::COMPRESSED.0 != 0
    }

    /// Whether the data section is in the chunked layout (bit 2).
    pub fn is_chunked(self) -> bool {
        self.0 & Flags::CHUNKED.0 != 0
    }

    /// These flags with `other`'s bits set (`on`) or cleared.
    #[must_use]
    pub fn with(self, other: Flags, on: bool) -> Flags {
        if on {
            Flags(self.0 | other.0)
        } else {
            Flags(self.0 & !other.0)
        }
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// Reading the header's eltype code.
impl ElType {
    /// The element type with this code, or an error naming the code.
    pub fn from_code(code: u64) -> Result<ElType> {
        ElType::ALL
            .get(usize::try_from(code).unwrap_or(usize::MAX))
            .copied()
            .ok_or_else(|| ErrorKind::UnknownElType { code }.into())
    }
}

/// A decoded and validated `.ra` header.
///
/// Every `Header` this crate hands out has passed [`Header::validate`]: a known eltype, an
/// elbyte possible for it, at most [`MAX_NDIMS`] dims whose byte count fits in a `u64`, and
/// (uncompressed) a `size` equal to that byte count.
///
/// ```
/// use rawarray_serde::{ElType, Header};
/// let h = Header::new(ElType::Float, 4, vec![3, 2]).unwrap();
/// assert_eq!(h.size, 24);
/// let bytes = h.encode();
/// assert_eq!(bytes.len(), 48 + 2 * 8);
/// assert_eq!(&bytes[..8], b"rawarray");
/// assert_eq!(Header::decode(&bytes).unwrap(), h);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// Byte order and compression of the data section.
    pub flags: Flags,
    /// The element type.
    pub eltype: ElType,
    /// Bytes per element.
    pub elbyte: u64,
    /// Bytes of the data section as stored (compressed length when compressed).
    pub size: u64,
    /// Dimensions, first varies fastest; empty for a scalar.
    pub dims: Vec<u64>,
}

impl Header {
    /// A little-endian, uncompressed header for `dims` elements of `eltype`/`elbyte`, validated.
    pub fn new(eltype: ElType, elbyte: u64, dims: Vec<u64>) -> Result<Header> {
        // The element before the byte count, in the order readers check them (rule 5 before 6).
        check_elbyte(eltype, elbyte)?;
        let size = data_len(elbyte, &dims)?;
        let h = Header {
            flags: Flags::NONE,
            eltype,
            elbyte,
            size,
            dims,
        };
        h.validate()?;
        Ok(h)
    }

    /// Checks the rules every header must satisfy (see the type's docs).
    pub fn validate(&self) -> Result<()> {
        Flags::from_bits(self.flags.bits())?;
        if self.dims.len() as u64 > MAX_NDIMS {
            return Err(ErrorKind::TooManyDims {
                ndims: self.dims.len() as u64,
                max: MAX_NDIMS,
            }
            .into());
        }
        check_elbyte(self.eltype, self.elbyte)?;
        let plain = data_len(self.elbyte, &self.dims)?;
        if self.flags.is_chunked() {
            // The chunked section's own bounds (config, index, chunks) are checked by
            // `codec::` before anything in it is used; here only the flag combination.
            if self.flags.is_compressed() {
                return Err(ErrorKind::UnknownFlags {
                    bits: Flags::COMPRESSED.0 | Flags::CHUNKED.0,
                }
                .into());
            }
        } else if self.flags.is_compressed() {
            let bound = self.size.saturating_mul(LZ4_MAX_RATIO).saturating_add(24);
            if plain > bound {
                return Err(ErrorKind::CompressionRatio {
                    size: self.size,
                    plain,
                }
                .into());
            }
        } else if self.size != plain {
            return Err(ErrorKind::SizeMismatch {
                size: self.size,
                expected: plain,
            }
            .into());
        }
        Ok(())
    }

    /// Whether this header is `then`'s file grown as the format's writers grow files: the same
    /// flags, type and leading dims, a last dim and `size` no smaller (a record file's flush, a
    /// chunked file's commit). Committed bytes of such a file are never written again, so a
    /// reader of `then` may read on.
    ///
    /// ```
    /// use rawarray_serde::{ElType, Header};
    /// let then = Header::new(ElType::Float, 4, vec![3, 10]).unwrap();
    /// let now = Header::new(ElType::Float, 4, vec![3, 12]).unwrap();
    /// assert!(now.is_grown_from(&then) && !then.is_grown_from(&now));
    /// ```
    pub fn is_grown_from(&self, then: &Header) -> bool {
        let n = then.dims.len();
        self.flags == then.flags
            && self.eltype == then.eltype
            && self.elbyte == then.elbyte
            && self.dims.len() == n
            && n > 0
            && self.dims[..n - 1] == then.dims[..n - 1]
            && self.dims[n - 1] >= then.dims[n - 1]
            && self.size >= then.size
    }

    /// Bytes the encoded header occupies: 48 + 8 x ndims.
    pub fn encoded_len(&self) -> usize {
        FIXED_HEADER_LEN + 8 * self.dims.len()
    }

    /// Number of elements: the product of the dims (1 for a scalar).
    pub fn num_elements(&self) -> u64 {
        // Validated headers cannot overflow: elbyte >= 1 and product x elbyte fits.
        self.dims.iter().product()
    }

    /// Bytes of the data once decompressed: number of elements x elbyte.
    pub fn data_len(&self) -> u64 {
        self.num_elements() * self.elbyte
    }

    /// The same header with `records` along its last dim (a record file's record count) and
    /// the plain data length to match. Fails on a scalar (no dim to count along) or an
    /// overflow. Every writer and repair that changes a record count goes through here.
    pub(crate) fn set_records(&mut self, records: u64) -> Result<()> {
        let Some((_, lead)) = self.dims.split_last() else {
            return Err(crate::Error::unsupported(
                "the file is a scalar (no dims): it has no record count",
            ));
        };
        let record_bytes = data_len(self.elbyte, lead)?;
        let size = record_bytes.checked_mul(records).ok_or_else(|| {
            let mut dims = lead.to_vec();
            dims.push(records);
            ErrorKind::DataLenOverflow {
                elbyte: self.elbyte,
                dims,
            }
        })?;
        *self.dims.last_mut().expect("split_last found it") = records;
        self.size = size;
        Ok(())
    }

    /// The record count: the last dim (`None` for a scalar).
    pub(crate) fn records(&self) -> Option<u64> {
        self.dims.last().copied()
    }

    /// Whether the data section is big-endian.
    pub fn is_big_endian(&self) -> bool {
        self.flags.is_big_endian()
    }

    /// Whether the data section is LZ4-compressed.
    pub fn is_compressed(&self) -> bool {
        self.flags.is_compressed()
    }

    /// The numpy dtype of the (little-endian) elements; see [`numpy::dtype`](crate::numpy::dtype).
    pub fn numpy_dtype(&self) -> Option<&'static str> {
        crate::numpy::dtype(self.eltype, self.elbyte)
    }

    /// The element type in words (`complex64`), see [`type_label`].
    pub fn type_label(&self) -> String {
        type_label(self.eltype, self.elbyte)
    }

    /// The header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out);
        out
    }

    /// Appends the header's bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        for word in [
            MAGIC,
            self.flags.bits(),
            self.eltype.code(),
            self.elbyte,
            self.size,
            self.dims.len() as u64,
        ]
        .into_iter()
        .chain(self.dims.iter().copied())
        {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    /// Decodes and validates the header at the start of `bytes` (trailing data is not looked at).
    ///
    /// The dims are checked to fit in `bytes` before anything is allocated for them.
    pub fn decode(bytes: &[u8]) -> Result<Header> {
        Header::decode_layouts(bytes, false)
    }

    /// [`Header::decode`] that also accepts a chunked data section (flag bit 2), for readers
    /// that hand the section to [`crate::codec`].
    ///
    /// ```
    /// use rawarray_serde::{ElType, Flags, Header};
    /// let mut h = Header::new(ElType::Float, 4, vec![3]).unwrap();
    /// h.flags = Flags::CHUNKED;
    /// assert!(Header::decode(&h.encode()).is_err());
    /// assert_eq!(Header::decode_any(&h.encode()).unwrap(), h);
    /// ```
    pub fn decode_any(bytes: &[u8]) -> Result<Header> {
        Header::decode_layouts(bytes, true)
    }

    fn decode_layouts(bytes: &[u8], chunked: bool) -> Result<Header> {
        let words = Fixed::parse(magic_and_fixed(bytes)?, chunked)?;
        let dims_len = words.dims_bytes(bytes.len() as u64 - FIXED_HEADER_LEN as u64)?;
        let dims = bytes[FIXED_HEADER_LEN..FIXED_HEADER_LEN + dims_len]
            .chunks_exact(8)
            .map(le_u64)
            .collect();
        words.finish(dims)
    }

    /// Reads and validates a header from a stream, leaving it at the first data byte.
    ///
    /// The stream's length is unknown, so the dims are read in bounded chunks: a header that
    /// claims 2^40 dims costs at most the bytes actually present.
    pub fn read_from<R: Read + ?Sized>(r: &mut R) -> Result<Header> {
        Header::read_layouts(r, false)
    }

    /// [`Header::read_from`] that also accepts a chunked data section (flag bit 2).
    pub fn read_from_any<R: Read + ?Sized>(r: &mut R) -> Result<Header> {
        Header::read_layouts(r, true)
    }

    fn read_layouts<R: Read + ?Sized>(r: &mut R, chunked: bool) -> Result<Header> {
        let mut fixed = [0u8; FIXED_HEADER_LEN];
        let got = read_full(r, &mut fixed)?;
        check_magic(&fixed[..got])?;
        if got < FIXED_HEADER_LEN {
            return Err(ErrorKind::HeaderTruncated {
                needed: FIXED_HEADER_LEN as u64,
                found: got as u64,
            }
            .into());
        }
        let words = Fixed::parse(&fixed, chunked)?;
        let mut dims = Vec::with_capacity(words.ndims.min(64) as usize);
        let mut buf = [0u8; 8 * 64];
        let mut left = words.ndims;
        while left > 0 {
            let take = left.min(64) as usize;
            let got = read_full(r, &mut buf[..take * 8])?;
            dims.extend(buf[..got - got % 8].chunks_exact(8).map(le_u64));
            if got < take * 8 {
                return Err(ErrorKind::HeaderTruncated {
                    needed: (FIXED_HEADER_LEN as u64).saturating_add(words.ndims.saturating_mul(8)),
                    found: (FIXED_HEADER_LEN + dims.len() * 8 + got % 8) as u64,
                }
                .into());
            }
            left -= take as u64;
        }
        words.finish(dims)
    }

    /// Checks that an input of `input_len` bytes holds this header and its whole data section.
    pub fn check_input_len(&self, input_len: u64) -> Result<()> {
        let have = input_len.saturating_sub(self.encoded_len() as u64);
        if have < self.size {
            return Err(ErrorKind::Truncated {
                expected: self.size,
                found: have,
            }
            .into());
        }
        Ok(())
    }
}

/// An error unless `elbyte` is one `eltype` has (doc/format.md section 2, rule 5).
fn check_elbyte(eltype: ElType, elbyte: u64) -> Result<()> {
    if elbyte == 0 {
        return Err(ErrorKind::ZeroElbyte { eltype }.into());
    }
    if !eltype.is_valid_elbyte(elbyte) {
        return Err(ErrorKind::ImpossibleElbyte { eltype, elbyte }.into());
    }
    Ok(())
}

/// An error unless `head`, the first bytes of an input (any number of them), starts with the
/// magic or is a prefix of it: an input that is not `.ra` is refused as such, with what it looks
/// like ([`crate::sniff`]), even when it is shorter than a header.
pub(crate) fn check_magic(head: &[u8]) -> Result<()> {
    let magic = MAGIC.to_le_bytes();
    let n = head.len().min(magic.len());
    if head[..n] == magic[..n] {
        return Ok(());
    }
    let mut word = [0u8; 8];
    word[..n].copy_from_slice(&head[..n]);
    Err(ErrorKind::BadMagic {
        found: u64::from_le_bytes(word),
        looks_like: crate::sniff::sniff(head),
    }
    .into())
}

/// The six fixed words, parsed but not yet joined with the dims.
struct Fixed {
    flags: Flags,
    eltype: ElType,
    elbyte: u64,
    size: u64,
    ndims: u64,
}

impl Fixed {
    /// `chunked`: whether the caller reads a chunked section (flag bit 2) through the codec
    /// layer; other callers see bit 2 as unknown, with any other unknown bits.
    fn parse(b: &[u8; FIXED_HEADER_LEN], chunked: bool) -> Result<Fixed> {
        let w = |i: usize| le_u64(&b[i * 8..i * 8 + 8]);
        check_magic(b)?;
        if w(1) & !(Flags::KNOWN.0 | RAGGED) == 0 && w(1) & RAGGED != 0 {
            // A ragged file, whatever its values' storage: what it is, not which bits.
            return Err(ErrorKind::RaggedFile.into());
        }
        if !chunked && w(1) & Flags::CHUNKED.0 != 0 {
            return Err(ErrorKind::UnknownFlags {
                bits: w(1) & !(Flags::BIG_ENDIAN.0 | Flags::COMPRESSED.0),
            }
            .into());
        }
        let flags = Flags::from_bits(w(1))?;
        if flags.is_chunked() && flags.is_compressed() {
            // Refused with the other flag checks, before the eltype and dims are looked at
            // (doc/format.md section 2, rule 2): the two layouts of the data section exclude
            // each other.
            return Err(ErrorKind::UnknownFlags {
                bits: Flags::COMPRESSED.0 | Flags::CHUNKED.0,
            }
            .into());
        }
        let fixed = Fixed {
            flags,
            eltype: ElType::from_code(w(2))?,
            elbyte: w(3),
            size: w(4),
            ndims: w(5),
        };
        if fixed.ndims > MAX_NDIMS {
            return Err(ErrorKind::TooManyDims {
                ndims: fixed.ndims,
                max: MAX_NDIMS,
            }
            .into());
        }
        Ok(fixed)
    }

    /// Bytes the dims take, checked against the `available` bytes after the fixed part.
    fn dims_bytes(&self, available: u64) -> Result<usize> {
        let needed = self.ndims.checked_mul(8).filter(|&n| n <= available);
        needed.map(|n| n as usize).ok_or_else(|| {
            ErrorKind::HeaderTruncated {
                needed: (FIXED_HEADER_LEN as u64).saturating_add(self.ndims.saturating_mul(8)),
                found: FIXED_HEADER_LEN as u64 + available,
            }
            .into()
        })
    }

    fn finish(self, dims: Vec<u64>) -> Result<Header> {
        let h = Header {
            flags: self.flags,
            eltype: self.eltype,
            elbyte: self.elbyte,
            size: self.size,
            dims,
        };
        h.validate()?;
        Ok(h)
    }
}

/// The product of `dims` times `elbyte` (the number of elements for `elbyte` 1), or `None` if
/// it overflows a `u64`: every count and byte length derived from dims goes through here.
pub(crate) fn checked_product(elbyte: u64, dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(elbyte, |acc, &d| acc.checked_mul(d))
}

/// product(dims) x elbyte, or an error if it overflows a `u64`.
pub(crate) fn data_len(elbyte: u64, dims: &[u64]) -> Result<u64> {
    checked_product(elbyte, dims).ok_or_else(|| {
        ErrorKind::DataLenOverflow {
            elbyte,
            dims: dims.to_vec(),
        }
        .into()
    })
}

/// The fixed part of the header at the start of `bytes`, its magic checked first (on what
/// there is: an input that is no `.ra` file is refused as such, even when shorter than a
/// header; doc/format.md section 10), or the error naming the bytes it needs.
pub(crate) fn magic_and_fixed(bytes: &[u8]) -> Result<&[u8; FIXED_HEADER_LEN]> {
    check_magic(bytes)?;
    bytes
        .get(..FIXED_HEADER_LEN)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            ErrorKind::HeaderTruncated {
                needed: FIXED_HEADER_LEN as u64,
                found: bytes.len() as u64,
            }
            .into()
        })
}

pub(crate) fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
pub(crate) fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
