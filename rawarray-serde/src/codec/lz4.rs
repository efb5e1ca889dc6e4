//! The LZ4 codec (id 1): each block is one raw LZ4 block, without a size prefix.
//!
//! The format of flag bit 1's whole-section block and of the Python `lz4` package's
//! `lz4.block.compress(data, store_size=False)`; the block's decoded size is known from the
//! chunk grid, so none is stored. LZ4 has no levels here (`lz4_flex` has one); the config's
//! level is kept but not used.
//!
//! Blocks are compressed by `lz4_flex` (pure Rust), or with the feature `lz4-c` by C liblz4's
//! `LZ4_compress_default`; both write the same format at the same effort (acceleration 1), and
//! on the benchmark's f32 arrays `lz4_flex` is the faster of the two by 4-7% (doc/benchmarks.md,
//! "LZ4 encoders" and the quiet run of 2026-12-05), which is why the default build uses it;
//! `lz4-c` is for comparisons, and `set_encoder` (with it) chooses between them at run time.
//! Either way blocks are decoded by `lz4_flex`'s bounds-checked decoder (`safe-decode`): a
//! hostile block is an error, never a read outside the buffers.
//!
//! ```
//! use rawarray_serde::codec::{lz4::Lz4, BlockCodec, Elements};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Uint, 1, false);
//! let mut packed = Vec::new();
//! Lz4.compress(&[7u8; 1000], &el, 0, &mut packed).unwrap();
//! assert!(packed.len() < 100);
//! let mut back = vec![0u8; 1000];
//! Lz4.decompress(&packed, &el, &mut back).unwrap();
//! assert_eq!(back, [7u8; 1000]);
//! ```

use super::{BlockCodec, Elements};
use crate::error::Result;

/// LZ4 raw blocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lz4;

/// The encoders the `lz4` codec can compress with (feature `lz4-c`).
#[cfg(feature = "lz4-c")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoder {
    /// `lz4_flex::block::compress_into`.
    Flex,
    /// C liblz4's `LZ4_compress_default` (chosen when the feature `lz4-c` is on).
    C,
}

#[cfg(feature = "lz4-c")]
static ENCODER_IS_FLEX: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Chooses the encoder of every `lz4` block compressed from now on, in this process (feature
/// `lz4-c`; without it, blocks are compressed by `lz4_flex`). Both write the same blocks; this
/// is for comparing them (`cargo bench --bench compress --features lz4-c`).
///
/// ```
/// # #[cfg(feature = "lz4-c")] {
/// use rawarray_serde::codec::lz4::{encoder, set_encoder, Encoder};
/// assert_eq!(encoder(), Encoder::C);
/// set_encoder(Encoder::Flex);
/// assert_eq!(encoder(), Encoder::Flex);
/// set_encoder(Encoder::C);
/// # }
/// ```
#[cfg(feature = "lz4-c")]
pub fn set_encoder(e: Encoder) {
    ENCODER_IS_FLEX.store(e == Encoder::Flex, std::sync::atomic::Ordering::Relaxed);
}

/// The encoder `lz4` blocks are compressed with (feature `lz4-c`).
#[cfg(feature = "lz4-c")]
pub fn encoder() -> Encoder {
    if ENCODER_IS_FLEX.load(std::sync::atomic::Ordering::Relaxed) {
        Encoder::Flex
    } else {
        Encoder::C
    }
}

/// `src` compressed into `dst` (at least `lz4_flex`'s bound long); the compressed length.
fn compress_block(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    #[cfg(feature = "lz4-c")]
    if encoder() == Encoder::C {
        // liblz4 takes an i32 length; blocks are at most MAX_BLOCK_BYTES (far below 2 GiB), and
        // lz4_flex's bound is at least LZ4_compressBound, so the output fits.
        return ::lz4::block::compress_to_buffer(src, None, false, dst)
            .map_err(|e| crate::Error::msg(format!("LZ4 compression (liblz4): {e}")));
    }
    lz4_flex::block::compress_into(src, dst)
        .map_err(|e| crate::Error::msg(format!("LZ4 compression: {e}")))
}

impl BlockCodec for Lz4 {
    fn max_ratio(&self) -> u64 {
        // Each extra length byte of a match adds at most 255 bytes of output.
        255
    }
    fn compress(&self, src: &[u8], _el: &Elements, _level: i32, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        out.resize(
            start + lz4_flex::block::get_maximum_output_size(src.len()),
            0,
        );
        let n = compress_block(src, &mut out[start..])?;
        out.truncate(start + n);
        Ok(())
    }
    fn compress_into(
        &self,
        src: &[u8],
        _el: &Elements,
        _level: i32,
        dst: &mut [u8],
    ) -> Result<Option<usize>> {
        let bound = lz4_flex::block::get_maximum_output_size(src.len());
        if dst.len() >= bound {
            return compress_block(src, dst).map(Some);
        }
        // Less room than the worst case (the encoders refuse to start then): only near the
        // end of a chunk that barely compresses. Compressed aside, kept if it fits.
        let mut v = vec![0u8; bound];
        let n = compress_block(src, &mut v)?;
        Ok(dst.get_mut(..n).map(|d| {
            d.copy_from_slice(&v[..n]);
            n
        }))
    }
    fn decompress(
        &self,
        src: &[u8],
        _el: &Elements,
        dst: &mut [u8],
    ) -> std::result::Result<(), String> {
        let got = lz4_flex::block::decompress_into(src, dst).map_err(|e| format!("LZ4: {e}"))?;
        if got != dst.len() {
            return Err(format!(
                "LZ4 block decodes to {got} bytes, expected {}",
                dst.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eltype::ElType;

    // With less room than the encoder's worst case, a block is still written when it fits, the
    // same bytes as `compress`, and refused (`None`) when it does not.
    #[test]
    fn compress_into_a_tight_slice() {
        let el = Elements::new(ElType::Uint, 1, false);
        let src: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let mut want = Vec::new();
        Lz4.compress(&src, &el, 0, &mut want).unwrap();
        let mut dst = vec![0u8; want.len()];
        assert_eq!(
            Lz4.compress_into(&src, &el, 0, &mut dst).unwrap(),
            Some(want.len())
        );
        assert_eq!(dst, want);
        let mut short = vec![0u8; want.len() - 1];
        assert_eq!(Lz4.compress_into(&src, &el, 0, &mut short).unwrap(), None);
    }
}
