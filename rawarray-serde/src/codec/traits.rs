//! The two traits of the codec chain: a [`ByteFilter`] turns a block's bytes into bytes of the
//! same length, a [`BlockCodec`] compresses a block's bytes. Each filter and codec is one file
//! implementing one of them; [`Pipeline`](super::Pipeline) runs the filters in order, then
//! the codec, for every block a reader or writer touches.

use crate::eltype::ElType;
use crate::error::Result;

/// What a filter or codec knows of the elements of the block it works on.
///
/// ```
/// use rawarray_serde::codec::Elements;
/// use rawarray_serde::ElType;
/// let el = Elements::new(ElType::Float, 4, false);
/// assert_eq!((el.elbyte, el.scalar_width()), (4, 4));
/// assert_eq!(Elements::new(ElType::Complex, 8, false).scalar_width(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Elements {
    /// The element type.
    pub eltype: ElType,
    /// Bytes per element.
    pub elbyte: usize,
    /// Whether the bytes are big-endian (the file's flag bit 0).
    pub big_endian: bool,
}

impl Elements {
    /// Elements of `eltype`/`elbyte` in the given byte order.
    pub fn new(eltype: ElType, elbyte: usize, big_endian: bool) -> Elements {
        Elements {
            eltype,
            elbyte,
            big_endian,
        }
    }

    /// Bytes of one scalar: elbyte, or half of it for complex numbers (two scalars each).
    pub fn scalar_width(&self) -> usize {
        if self.eltype == ElType::Complex {
            self.elbyte / 2
        } else {
            self.elbyte
        }
    }
}

/// A filter: bytes to bytes of the same length, element by element or plane by plane.
///
/// ```
/// use rawarray_serde::codec::{ByteFilter, Elements, Filter};
/// use rawarray_serde::ElType;
/// let f = Filter::Shuffle.implementation();
/// let el = Elements::new(ElType::Uint, 2, false);
/// let mut out = [0u8; 4];
/// f.encode(&[1, 2, 3, 4], &el, &mut out);
/// assert_eq!(out, [1, 3, 2, 4]);
/// ```
pub trait ByteFilter: Send + Sync {
    /// Filters `src` (whole elements) into `dst`, the same length.
    fn encode(&self, src: &[u8], el: &Elements, dst: &mut [u8]);
    /// Undoes [`ByteFilter::encode`] (for a lossy filter: gives back what it stored).
    fn decode(&self, src: &[u8], el: &Elements, dst: &mut [u8]);
}

/// A codec: one block's bytes to its stored bytes and back, with a known decoded size.
///
/// ```
/// use rawarray_serde::codec::{BlockCodec, Codec, Elements};
/// use rawarray_serde::ElType;
/// let c = Codec::Lz4.block_codec();
/// let el = Elements::new(ElType::Uint, 1, false);
/// let mut packed = Vec::new();
/// c.compress(&[0u8; 4096], &el, 0, &mut packed).unwrap();
/// let mut back = vec![1u8; 4096];
/// c.decompress(&packed, &el, &mut back).unwrap();
/// assert!(back.iter().all(|&b| b == 0));
/// ```
pub trait BlockCodec: Send + Sync {
    /// The most raw bytes one stored byte can decode to (a block claiming more is refused
    /// before it is decoded).
    fn max_ratio(&self) -> u64;
    /// Appends the compressed form of `src` (whole elements) to `out`.
    fn compress(&self, src: &[u8], el: &Elements, level: i32, out: &mut Vec<u8>) -> Result<()>;
    /// Writes the compressed form of `src` at the start of `dst` and returns its length, or
    /// `None` if it does not fit in `dst` (the writer then stores the chunk raw: doc/chunked.md
    /// 6.3). Writers compress straight into the section this way, with no buffer per block.
    /// The default goes through [`BlockCodec::compress`] and copies; a codec whose encoder
    /// writes into a slice overrides it.
    fn compress_into(
        &self,
        src: &[u8],
        el: &Elements,
        level: i32,
        dst: &mut [u8],
    ) -> Result<Option<usize>> {
        let mut v = Vec::new();
        self.compress(src, el, level, &mut v)?;
        Ok(dst.get_mut(..v.len()).map(|d| {
            d.copy_from_slice(&v);
            v.len()
        }))
    }
    /// Decompresses `src` into exactly `dst.len()` bytes; anything else is an error (in words).
    fn decompress(
        &self,
        src: &[u8],
        el: &Elements,
        dst: &mut [u8],
    ) -> std::result::Result<(), String>;
}
