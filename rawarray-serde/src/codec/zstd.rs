//! The zstd codec (id 2): each block is one zstd frame, compressed at the config's level.
//!
//! Frames carry their content size, so the Python `zstandard` package and the `zstd` tool
//! decode them alone; ours decode frames from either. A frame that would decode to more than
//! the block's size (known from the chunk grid) is an error, never a larger allocation.
//! Compression and decompression contexts are kept per thread.
//!
//! ```
//! use rawarray_serde::codec::{zstd::Zstd, BlockCodec, Elements};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Uint, 1, false);
//! let mut packed = Vec::new();
//! Zstd.compress(&[7u8; 1000], &el, 3, &mut packed).unwrap();
//! assert_eq!(&packed[..4], &[0x28, 0xb5, 0x2f, 0xfd]); // the zstd frame magic
//! let mut back = vec![0u8; 1000];
//! Zstd.decompress(&packed, &el, &mut back).unwrap();
//! assert_eq!(back, [7u8; 1000]);
//! ```

use std::cell::RefCell;

use super::{BlockCodec, Elements};
use crate::error::{Error, Result};

/// zstd frames.
#[derive(Clone, Copy, Debug, Default)]
pub struct Zstd;

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// The levels zstd accepts.
pub fn level_range() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

/// `src` compressed at `level` into `dst` (at least `compress_bound` long) by this thread's
/// compressor; the frame's length.
fn compress_to(src: &[u8], level: i32, dst: &mut [u8]) -> Result<usize> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().is_none_or(|(l, _)| *l != level) {
            let comp = zstd::bulk::Compressor::new(level)
                .map_err(|e| Error::msg(format!("zstd level {level}: {e}")))?;
            *c = Some((level, comp));
        }
        let (_, comp) = c.as_mut().expect("set above");
        comp.compress_to_buffer(src, dst)
            .map_err(|e| Error::msg(format!("zstd compression: {e}")))
    })
}

impl BlockCodec for Zstd {
    fn max_ratio(&self) -> u64 {
        // An RLE block of 128 KiB costs 4 bytes, plus the frame header: no real frame
        // expands more than this, so a block claiming more is refused before it is decoded.
        1 << 16
    }
    fn compress(&self, src: &[u8], _el: &Elements, level: i32, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        out.resize(start + zstd::zstd_safe::compress_bound(src.len()), 0);
        let n = compress_to(src, level, &mut out[start..])?;
        out.truncate(start + n);
        Ok(())
    }
    fn compress_into(
        &self,
        src: &[u8],
        el: &Elements,
        level: i32,
        dst: &mut [u8],
    ) -> Result<Option<usize>> {
        if dst.len() >= zstd::zstd_safe::compress_bound(src.len()) {
            return compress_to(src, level, dst).map(Some);
        }
        // Less room than the worst case: a frame that did not fit is an error zstd does not
        // tell apart from others, so the frame is made aside and kept if it fits.
        let mut v = Vec::new();
        self.compress(src, el, level, &mut v)?;
        Ok(dst.get_mut(..v.len()).map(|d| {
            d.copy_from_slice(&v);
            v.len()
        }))
    }
    fn decompress(
        &self,
        src: &[u8],
        _el: &Elements,
        dst: &mut [u8],
    ) -> std::result::Result<(), String> {
        DECOMPRESSOR.with(|d| {
            let mut d = d.borrow_mut();
            if d.is_none() {
                *d = Some(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?);
            }
            let dec = d.as_mut().expect("set above");
            let got = dec
                .decompress_to_buffer(src, dst)
                .map_err(|e| format!("zstd: {e}"))?;
            if got != dst.len() {
                return Err(format!(
                    "zstd frame decodes to {got} bytes, expected {}",
                    dst.len()
                ));
            }
            Ok(())
        })
    }
}
