//! Writing a whole data section in the storage [`WriteOptions`] select: the one place every
//! whole-array writer (`RawArray`, `DynArray`, serde's `to_*`, `Ragged::write_file`, `ra
//! compress`) turns plain bytes into a header and a stored section.
//!
//! ```
//! use rawarray_serde::section::write::{write_section, PlainBytes};
//! use rawarray_serde::{codec::Codec, ElType, Header, RawArray, WriteOptions};
//! let header = Header::new(ElType::Uint, 2, vec![1000]).unwrap();
//! let plain: Vec<u8> = (0..1000u16).flat_map(|i| (i / 10).to_le_bytes()).collect();
//! let mut file = Vec::new();
//! let h = write_section(&mut file, &header, &WriteOptions::new().codec(Codec::Lz4), None, &PlainBytes::new(&plain)).unwrap();
//! assert!(h.flags.is_chunked() && file.len() < 2000);
//! let back: RawArray<u16> = RawArray::from_bytes(&file).unwrap();
//! assert_eq!(back.get(&[999]), Some(&99));
//! ```

use std::borrow::Cow;
use std::io::Write;

use super::Storage;
use crate::error::Result;
use crate::header::Header;
use crate::layout::Layout;
use crate::options::WriteOptions;

/// Writes the plain bytes of a section piece by piece into the writer it is given.
type WritePieces<'a> = dyn Fn(&mut dyn Write) -> Result<()> + 'a;

/// The plain bytes of a data section, in the file's byte order: whole in memory, or written
/// piece by piece where packing them whole would cost a copy of the array.
pub struct PlainBytes<'a> {
    bytes: Option<&'a [u8]>,
    len: u64,
    pieces: Option<&'a WritePieces<'a>>,
    whole: Option<&'a dyn Fn() -> Result<Vec<u8>>>,
}

impl<'a> PlainBytes<'a> {
    /// Bytes in memory.
    pub fn new(bytes: &'a [u8]) -> PlainBytes<'a> {
        PlainBytes {
            bytes: Some(bytes),
            len: bytes.len() as u64,
            pieces: None,
            whole: None,
        }
    }

    /// `len` bytes that `pieces` writes out (a plain section is streamed) and `whole` packs
    /// into one buffer (a codec needs them all).
    pub fn packed(
        len: u64,
        pieces: &'a dyn Fn(&mut dyn Write) -> Result<()>,
        whole: &'a dyn Fn() -> Result<Vec<u8>>,
    ) -> PlainBytes<'a> {
        PlainBytes {
            bytes: None,
            len,
            pieces: Some(pieces),
            whole: Some(whole),
        }
    }

    fn all(&self) -> Result<Cow<'a, [u8]>> {
        match (self.bytes, self.whole) {
            (Some(b), _) => Ok(Cow::Borrowed(b)),
            (None, Some(f)) => Ok(Cow::Owned(f()?)),
            (None, None) => Ok(Cow::Borrowed(&[])),
        }
    }

    fn write_plain(&self, w: &mut dyn Write) -> Result<()> {
        match (self.bytes, self.pieces) {
            (Some(b), _) => Ok(w.write_all(b)?),
            (None, Some(f)) => f(w),
            (None, None) => Ok(()),
        }
    }
}

/// Writes `header`'s data section, its plain bytes `plain`, into `w` after its header, stored
/// as `opts` select (`schema`: a record file's, for its statistics). Returns the header written
/// (its flags and `size` those of the storage), which a trailer after the section follows.
pub fn write_section(
    w: &mut dyn Write,
    header: &Header,
    opts: &WriteOptions,
    schema: Option<&Layout>,
    plain: &PlainBytes<'_>,
) -> Result<Header> {
    let mut h = header.clone();
    h.flags = opts.flags()?;
    match opts.storage() {
        Storage::Plain => {
            h.size = plain.len;
            w.write_all(&h.encode())?;
            plain.write_plain(w)?;
        }
        Storage::Lz4Whole => {
            let packed = crate::data::compress(&plain.all()?)?;
            h.size = packed.len() as u64;
            w.write_all(&h.encode())?;
            w.write_all(&packed)?;
        }
        Storage::Chunked => {
            let mut plain_header = h.clone();
            plain_header.flags = plain_header
                .flags
                .with(crate::header::Flags::CHUNKED, false);
            plain_header.size = plain.len;
            let (chunked, section) =
                crate::codec::encode_with(&plain_header, &plain.all()?, opts, schema)?;
            h = chunked;
            w.write_all(&h.encode())?;
            w.write_all(&section)?;
        }
    }
    Ok(h)
}
