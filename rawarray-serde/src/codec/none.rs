//! The identity codec (id 0): bytes stored as they are.
//!
//! A chunk written with codec `none` is stored raw (entry flag [`ENTRY_RAW`](super::ENTRY_RAW)):
//! a filter alone does not shrink anything, so it is never applied without a codec.

use super::{BlockCodec, Elements};
use crate::error::Result;

/// The codec that copies.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCodec;

impl BlockCodec for NoCodec {
    fn max_ratio(&self) -> u64 {
        1
    }
    fn compress(&self, src: &[u8], _el: &Elements, _level: i32, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(src);
        Ok(())
    }
    fn decompress(
        &self,
        src: &[u8],
        _el: &Elements,
        dst: &mut [u8],
    ) -> std::result::Result<(), String> {
        if src.len() != dst.len() {
            return Err(format!(
                "stored block of {} bytes, expected {}",
                src.len(),
                dst.len()
            ));
        }
        dst.copy_from_slice(src);
        Ok(())
    }
}
