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

/// Where a whole file's bytes go: in order (any `Write`, through [`InOrder`]), or an output
/// that can take the file's first bytes last. An object-store upload numbers its parts, so it
/// can send the chunks of a chunked section as they are encoded and the header, config and
/// index (which name every chunk's stored length) last, instead of holding the section until
/// it is whole.
pub trait Sink: Write {
    /// Asks that the next `len` bytes be a head given later by [`Sink::fill_head`], the bytes
    /// after it written now. `false` (the default): this output takes bytes in order only, and
    /// nothing was reserved.
    fn reserve_head(&mut self, len: u64) -> bool {
        let _ = len;
        false
    }

    /// The bytes of the head [`Sink::reserve_head`] reserved: exactly its length.
    fn fill_head(&mut self, head: &[u8]) -> Result<()> {
        let _ = head;
        Err(crate::Error::msg("this output reserved no head"))
    }
}

/// Any `Write` as a [`Sink`] that takes bytes in order.
///
/// ```
/// use rawarray_serde::section::write::{write_section_to, InOrder, PlainBytes};
/// use rawarray_serde::{ElType, Header, WriteOptions};
/// let header = Header::new(ElType::Uint, 1, vec![3]).unwrap();
/// let mut file = Vec::new();
/// write_section_to(&mut InOrder(&mut file), &header, &WriteOptions::new(), None, &PlainBytes::new(&[1, 2, 3])).unwrap();
/// assert_eq!(&file[file.len() - 3..], &[1, 2, 3]);
/// ```
pub struct InOrder<'a>(pub &'a mut dyn Write);

impl Write for InOrder<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Sink for InOrder<'_> {}

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
    write_section_to(&mut InOrder(w), header, opts, schema, plain)
}

/// [`write_section`] into a [`Sink`]: a chunked section goes out chunk by chunk as it is
/// encoded when the sink takes the head last ([`codec::encode_streamed`](crate::codec::encode_streamed)),
/// else whole after its header.
pub fn write_section_to(
    w: &mut dyn Sink,
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
            let raw = plain.all()?;
            let head_len = h.encoded_len() as u64
                + crate::codec::section_head_len(&plain_header, opts, schema)?;
            if w.reserve_head(head_len) {
                let (chunked, head) =
                    crate::codec::encode_streamed(&plain_header, &raw, opts, schema, &mut |b| {
                        Ok(w.write_all(b)?)
                    })?;
                h = chunked;
                w.fill_head(&[h.encode(), head].concat())?;
            } else {
                let (chunked, section) =
                    crate::codec::encode_with(&plain_header, &raw, opts, schema)?;
                h = chunked;
                w.write_all(&h.encode())?;
                w.write_all(&section)?;
            }
        }
    }
    Ok(h)
}
