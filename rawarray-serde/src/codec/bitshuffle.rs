//! The bit shuffle (filter id 2): bit `b` of byte `j` of every element, for each `(j, b)`.
//!
//! Of `n` elements of `w` bytes, the first `n8 = n - n % 8` become `8 w` bit planes of `n8 / 8`
//! bytes each; plane `p = 8 j + b` holds bit `b` of byte `j` of element `i` as bit `i % 8` of
//! its byte `i / 8`. The last `n % 8` elements (and any partial element) follow unchanged.
//! Slowly varying integers and floats get planes of all zeros or all ones, which every codec
//! shrinks to almost nothing.
//!
//! It runs as a byte shuffle (see [`super::shuffle`]) followed by an 8 x 8 bit transpose of each
//! 8 bytes of a byte plane.
//!
//! ```
//! use rawarray_serde::codec::bitshuffle;
//! let src: Vec<u8> = vec![1, 0, 1, 0, 1, 0, 1, 0];  // eight u8 of value 1 and 0
//! let mut out = vec![0u8; 8];
//! bitshuffle::bitshuffle(&src, 1, &mut out);
//! assert_eq!(out, [0b0101_0101, 0, 0, 0, 0, 0, 0, 0]); // plane 0: bit 0 of each
//! let mut back = vec![0u8; 8];
//! bitshuffle::bitunshuffle(&out, 1, &mut back);
//! assert_eq!(back, src);
//! ```

use super::shuffle::{shuffle, unshuffle};
use super::{ByteFilter, Elements};

/// The bit shuffle as a [`ByteFilter`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BitShuffle;

impl ByteFilter for BitShuffle {
    fn encode(&self, src: &[u8], el: &Elements, dst: &mut [u8]) {
        bitshuffle(src, el.elbyte, dst);
    }
    fn decode(&self, src: &[u8], el: &Elements, dst: &mut [u8]) {
        bitunshuffle(src, el.elbyte, dst);
    }
}

/// Transposes the 8 x 8 bit matrix whose row `r` is byte `r` (bit `c` at position `8 r + c`):
/// bit `8 r + c` moves to `8 c + r`. Its own inverse.
#[inline]
fn transpose8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x = x ^ t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x = x ^ t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// The most bytes of scratch a thread keeps between blocks (default blocks are 128 to 256 KiB).
const SCRATCH_KEPT: usize = 4 << 20;

/// Runs `f` on `len` bytes of this thread's scratch buffer (contents unspecified): the byte
/// planes between the two stages. A fresh buffer per block would cost its page faults on
/// every block (blocks are hundreds of KiB, which the allocator maps anew each time). Larger
/// blocks than [`SCRATCH_KEPT`] get a buffer of their own, so no thread keeps more.
fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    if len > SCRATCH_KEPT {
        return f(&mut vec![0u8; len]);
    }
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < len {
                buf.resize(len, 0);
            }
            f(&mut buf[..len])
        }
        // Re-entered (not done by this module, but cheap to allow): a buffer of its own.
        Err(_) => f(&mut vec![0u8; len]),
    })
}

/// Bit-shuffles `src` (elements of `w` bytes) into `dst` (the same length).
pub fn bitshuffle(src: &[u8], w: usize, dst: &mut [u8]) {
    bitshuffle_with(src, w, dst, true);
}

/// [`bitshuffle`], its bit transpose through the SIMD kernels where it has them if `fast`
/// (the tests run the portable path alone with `false`).
fn bitshuffle_with(src: &[u8], w: usize, dst: &mut [u8], fast: bool) {
    assert_eq!(
        src.len(),
        dst.len(),
        "bitshuffle: src and dst lengths differ"
    );
    let n = src.len().checked_div(w).unwrap_or(0);
    let n8 = n - n % 8;
    let head = n8 * w;
    if n8 > 0 {
        // Byte planes first (n8 bytes each), then each 8 bytes of a plane become one byte of
        // each of its 8 bit planes.
        with_scratch(head, |planes| {
            shuffle(&src[..head], w, planes);
            let per = n8 / 8;
            for (j, plane) in planes.chunks_exact(n8).enumerate() {
                let done = if fast {
                    simd::planes_to_bits(plane, j, per, dst)
                } else {
                    0
                };
                for (g, eight) in plane.chunks_exact(8).enumerate().skip(done) {
                    let t = transpose8(u64::from_le_bytes(eight.try_into().expect("8 bytes")));
                    for (b, byte) in t.to_le_bytes().into_iter().enumerate() {
                        dst[(8 * j + b) * per + g] = byte;
                    }
                }
            }
        });
    }
    dst[head..].copy_from_slice(&src[head..]);
}

/// Undoes [`bitshuffle`].
pub fn bitunshuffle(src: &[u8], w: usize, dst: &mut [u8]) {
    bitunshuffle_with(src, w, dst, true);
}

/// [`bitunshuffle`], as [`bitshuffle_with`].
fn bitunshuffle_with(src: &[u8], w: usize, dst: &mut [u8], fast: bool) {
    assert_eq!(
        src.len(),
        dst.len(),
        "bitunshuffle: src and dst lengths differ"
    );
    let n = src.len().checked_div(w).unwrap_or(0);
    let n8 = n - n % 8;
    let head = n8 * w;
    if n8 > 0 {
        let per = n8 / 8;
        with_scratch(head, |planes| {
            for (j, plane) in planes.chunks_exact_mut(n8).enumerate() {
                let done = if fast {
                    simd::bits_to_plane(src, j, per, plane)
                } else {
                    0
                };
                for (g, eight) in plane.chunks_exact_mut(8).enumerate().skip(done) {
                    let mut bytes = [0u8; 8];
                    for (b, byte) in bytes.iter_mut().enumerate() {
                        *byte = src[(8 * j + b) * per + g];
                    }
                    eight.copy_from_slice(&transpose8(u64::from_le_bytes(bytes)).to_le_bytes());
                }
            }
            unshuffle(planes, w, &mut dst[..head]);
        });
    }
    dst[head..].copy_from_slice(&src[head..]);
}

/// SSE2 kernels for the bit transpose (x86_64 only; other targets take the portable path):
/// 16 bytes of a byte plane at a time. `movemask` gathers the top bit of each of 16 bytes, so
/// eight of them, each after doubling the bytes (a shift left by one within each byte), give
/// the 16-bit runs of bit planes 7 down to 0. Unshuffling loads the 8 bit planes' two bytes
/// as the low and high halves of a vector, whose `movemask`s give elements 7 and 15, then 6
/// and 14, and so on. Measured here (256 KiB, 4-byte elements): 0.8 GB/s portable.
mod simd {
    /// Writes the bit planes `8 j ..` (`per` bytes each) of byte plane `plane` (index `j`)
    /// into `dst` for its whole groups of 16 bytes; returns the 8-byte groups done.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn planes_to_bits(plane: &[u8], j: usize, per: usize, dst: &mut [u8]) -> usize {
        // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it.
        unsafe { x86::planes_to_bits(plane, j, per, dst) };
        plane.len() / 16 * 2
    }

    /// Fills byte plane `plane` (index `j`) from the bit planes in `src`, for its whole
    /// groups of 16 bytes; returns the 8-byte groups done.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn bits_to_plane(src: &[u8], j: usize, per: usize, plane: &mut [u8]) -> usize {
        // SAFETY: as above.
        unsafe { x86::bits_to_plane(src, j, per, plane) };
        plane.len() / 16 * 2
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn planes_to_bits(_: &[u8], _: usize, _: usize, _: &mut [u8]) -> usize {
        0
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn bits_to_plane(_: &[u8], _: usize, _: usize, _: &mut [u8]) -> usize {
        0
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use std::arch::x86_64::{__m128i, _mm_add_epi8, _mm_movemask_epi8, _mm_set_epi64x};

        #[target_feature(enable = "sse2")]
        pub(super) fn planes_to_bits(plane: &[u8], j: usize, per: usize, dst: &mut [u8]) {
            for (q, sixteen) in plane.chunks_exact(16).enumerate() {
                let bytes: [u8; 16] = sixteen.try_into().expect("16 bytes");
                let mut x: __m128i = bytemuck::cast(bytes);
                for b in (0..8).rev() {
                    // The mask's bits are 16 bools: the low 16 bits of the i32.
                    let m = _mm_movemask_epi8(x) as u16;
                    let at = (8 * j + b) * per + 2 * q;
                    dst[at..at + 2].copy_from_slice(&m.to_le_bytes());
                    x = _mm_add_epi8(x, x);
                }
            }
        }

        #[target_feature(enable = "sse2")]
        pub(super) fn bits_to_plane(src: &[u8], j: usize, per: usize, plane: &mut [u8]) {
            for (q, sixteen) in plane.chunks_exact_mut(16).enumerate() {
                let (mut lo, mut hi) = (0u64, 0u64);
                for b in 0..8 {
                    let at = (8 * j + b) * per + 2 * q;
                    lo |= u64::from(src[at]) << (8 * b);
                    hi |= u64::from(src[at + 1]) << (8 * b);
                }
                // The u64s' bits, reinterpreted as i64 for the intrinsic.
                let mut x = _mm_set_epi64x(hi as i64, lo as i64);
                for e in (0..8).rev() {
                    let m = _mm_movemask_epi8(x) as u16;
                    sixteen[e] = m as u8;
                    sixteen[e + 8] = (m >> 8) as u8;
                    x = _mm_add_epi8(x, x);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition, bit by bit.
    fn naive(src: &[u8], w: usize) -> Vec<u8> {
        let n = src.len() / w;
        let n8 = n - n % 8;
        let mut out = src.to_vec();
        out[..n8 * w].fill(0);
        for j in 0..w {
            for b in 0..8 {
                for i in 0..n8 {
                    let bit = (src[i * w + j] >> b) & 1;
                    let pos = (8 * j + b) * n8 + i;
                    out[pos / 8] |= bit << (pos % 8);
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn matches_naive_and_round_trips(w in prop::sample::select(vec![1usize, 2, 3, 4, 5, 8, 12, 16, 17, 76]),
                                         n in 0usize..260, seed in any::<u64>()) {
            let len = n * w;
            let src: Vec<u8> = (0..len).map(|i| (seed.wrapping_mul(i as u64 * 2 + 1) >> 17) as u8).collect();
            let mut out = vec![0u8; len];
            bitshuffle(&src, w, &mut out);
            prop_assert_eq!(&out, &naive(&src, w));
            let mut back = vec![0u8; len];
            bitunshuffle(&out, w, &mut back);
            prop_assert_eq!(&back, &src);
            // The portable bit transpose alone gives the same bytes.
            let mut slow = vec![0u8; len];
            bitshuffle_with(&src, w, &mut slow, false);
            prop_assert_eq!(&slow, &out);
            bitunshuffle_with(&out, w, &mut slow, false);
            prop_assert_eq!(slow, src);
        }
    }
}
