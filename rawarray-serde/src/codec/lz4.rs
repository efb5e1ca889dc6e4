//! The LZ4 codec (id 1): each block is one raw LZ4 block, without a size prefix.
//!
//! The format of flag bit 1's whole-section block and of the Python `lz4` package's
//! `lz4.block.compress(data, store_size=False)`; the block's decoded size is known from the
//! chunk grid, so none is stored. LZ4 has no levels here (`lz4_flex` has one); the config's
//! level is kept but not used.
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
        let n = lz4_flex::block::compress_into(src, &mut out[start..])
            .map_err(|e| crate::Error::msg(format!("LZ4 compression: {e}")))?;
        out.truncate(start + n);
        Ok(())
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
