//! A data section read from a stream (`Read`, no positioned reads): the same storage kinds
//! and decoders as [`Section`], for readers handed a pipe or a socket.
//!
//! A plain section is read into the values' memory as it arrives; a whole-section LZ4 block
//! is decoded as it is read ([`super::lz4`]) when the stream is known to hold it, and read
//! first otherwise (memory grows only as its bytes arrive); a chunked section is read whole,
//! then opened as a [`Section`] over those bytes.
//!
//! ```
//! use rawarray_serde::{section::stream, Header, RawArray, WriteOptions};
//! let a = RawArray::from_vec((0..1000u32).collect());
//! let mut bytes = Vec::new();
//! a.write_to_with(&mut bytes, &WriteOptions::new().compress(true)).unwrap();
//! let mut r = &bytes[..];
//! let header = Header::read_from_any(&mut r).unwrap();
//! let values: Vec<u32> = stream::read_values(&header, &mut r, None).unwrap();
//! assert_eq!(values, a.as_slice());
//! ```

use std::io::Read;

use super::{Section, Storage};
use crate::data;
use crate::element::Element;
use crate::error::Result;
use crate::header::Header;

/// Reads the data section that follows `header` in `r` as values of `T` (as many as the
/// header's elements hold), decoded in the file's byte order. `available`: the bytes known to
/// follow in `r`, if known.
pub fn read_values<T: Element, R: Read + ?Sized>(
    header: &Header,
    r: &mut R,
    available: Option<u64>,
) -> Result<Vec<T>> {
    let per = T::PACKED_SIZE.max(1) as u64;
    let n = data::to_usize(header.data_len() / per)?;
    let big_endian = header.is_big_endian();
    let known = available.is_some_and(|a| a >= header.size);
    match Storage::of(header) {
        Storage::Plain => data::read_plain_values(r, header, n, available),
        Storage::Lz4Whole if known => data::values_filled(n, big_endian, |dst| {
            // Decoded as it is read: the block and the values are never held at once.
            super::lz4::decode_into(r, header.size, dst)
        }),
        Storage::Lz4Whole => {
            // A stream of unknown length: the block is read first, so a header claiming a
            // huge array costs nothing until its bytes arrive.
            let packed = data::read_bytes(r, header.size, available)?;
            data::values_filled(n, big_endian, |dst| {
                super::lz4::decode_into(&mut &packed[..], header.size, dst)
            })
        }
        Storage::Chunked => {
            let bytes = data::read_bytes(r, header.size, available)?;
            let section = Section::open_at(header, &bytes[..], 0)?;
            data::values_filled(n, big_endian, |dst| section.read_all_into(dst))
        }
    }
}

/// Reads the data section that follows `header` in `r` as bytes in the file's byte order.
pub fn read_bytes<R: Read + ?Sized>(
    header: &Header,
    r: &mut R,
    available: Option<u64>,
) -> Result<Vec<u8>> {
    // Bytes are values of one byte: nothing to swap, the file's order kept.
    read_values::<u8, R>(header, r, available)
}
