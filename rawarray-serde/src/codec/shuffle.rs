//! The byte shuffle (filter id 1): byte `j` of every element, for each `j` in turn.
//!
//! `n` elements of `w` bytes become `w` planes of `n` bytes: `out[j * n + i] = in[i * w + j]`.
//! Bytes of equal significance sit together, so a codec sees long runs of similar exponents
//! and sign bytes. A record (eltype 0) is shuffled as a whole, `w` = elbyte: measured on
//! 76-byte records, that shrinks them best. A trailing partial element (never produced by the
//! chunked layout, whose blocks hold whole elements) is copied unchanged.
//!
//! ```
//! use rawarray_serde::codec::shuffle;
//! let src = [1u8, 2, 3, 4, 5, 6];           // three u16s
//! let mut out = [0u8; 6];
//! shuffle::shuffle(&src, 2, &mut out);
//! assert_eq!(out, [1, 3, 5, 2, 4, 6]);
//! let mut back = [0u8; 6];
//! shuffle::unshuffle(&out, 2, &mut back);
//! assert_eq!(back, src);
//! ```

use super::Filter;

/// Elements moved per step of the fixed-width paths: a tile of `TILE x W` bytes is read once
/// and written as `W` runs of `TILE` bytes, which the compiler turns into vector shuffles.
const TILE: usize = 16;

/// The byte shuffle as a [`Filter`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ByteShuffle;

impl Filter for ByteShuffle {
    fn id(&self) -> u32 {
        1
    }
    fn encode(&self, src: &[u8], elbyte: usize, dst: &mut [u8]) {
        shuffle(src, elbyte, dst);
    }
    fn decode(&self, src: &[u8], elbyte: usize, dst: &mut [u8]) {
        unshuffle(src, elbyte, dst);
    }
}

/// Shuffles `src` (elements of `w` bytes) into `dst` (the same length).
pub fn shuffle(src: &[u8], w: usize, dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len(), "shuffle: src and dst lengths differ");
    let n = src.len().checked_div(w).unwrap_or(0);
    if w <= 1 || n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    match w {
        2 => shuffle_fixed::<2>(src, n, dst),
        4 => shuffle_fixed::<4>(src, n, dst),
        8 => shuffle_fixed::<8>(src, n, dst),
        16 => shuffle_fixed::<16>(src, n, dst),
        _ => shuffle_generic(src, w, n, dst),
    }
    dst[n * w..].copy_from_slice(&src[n * w..]);
}

/// Undoes [`shuffle`].
pub fn unshuffle(src: &[u8], w: usize, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "unshuffle: src and dst lengths differ"
    );
    let n = src.len().checked_div(w).unwrap_or(0);
    if w <= 1 || n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    match w {
        2 => unshuffle_fixed::<2>(src, n, dst),
        4 => unshuffle_fixed::<4>(src, n, dst),
        8 => unshuffle_fixed::<8>(src, n, dst),
        16 => unshuffle_fixed::<16>(src, n, dst),
        _ => unshuffle_generic(src, w, n, dst),
    }
    dst[n * w..].copy_from_slice(&src[n * w..]);
}

fn shuffle_fixed<const W: usize>(src: &[u8], n: usize, dst: &mut [u8]) {
    let tiles = n / TILE;
    for t in 0..tiles {
        let i0 = t * TILE;
        let block = &src[i0 * W..(i0 + TILE) * W];
        for j in 0..W {
            let mut run = [0u8; TILE];
            for (k, slot) in run.iter_mut().enumerate() {
                *slot = block[k * W + j];
            }
            dst[j * n + i0..j * n + i0 + TILE].copy_from_slice(&run);
        }
    }
    for i in tiles * TILE..n {
        for j in 0..W {
            dst[j * n + i] = src[i * W + j];
        }
    }
}

fn unshuffle_fixed<const W: usize>(src: &[u8], n: usize, dst: &mut [u8]) {
    let tiles = n / TILE;
    for t in 0..tiles {
        let i0 = t * TILE;
        let mut block = [[0u8; W]; TILE];
        for j in 0..W {
            let run: &[u8] = &src[j * n + i0..j * n + i0 + TILE];
            for (k, el) in block.iter_mut().enumerate() {
                el[j] = run[k];
            }
        }
        for (k, el) in block.iter().enumerate() {
            dst[(i0 + k) * W..(i0 + k + 1) * W].copy_from_slice(el);
        }
    }
    for i in tiles * TILE..n {
        for j in 0..W {
            dst[i * W + j] = src[j * n + i];
        }
    }
}

fn shuffle_generic(src: &[u8], w: usize, n: usize, dst: &mut [u8]) {
    for (j, plane) in dst[..n * w].chunks_exact_mut(n).enumerate() {
        for (slot, el) in plane.iter_mut().zip(src.chunks_exact(w)) {
            *slot = el[j];
        }
    }
}

fn unshuffle_generic(src: &[u8], w: usize, n: usize, dst: &mut [u8]) {
    for (j, plane) in src[..n * w].chunks_exact(n).enumerate() {
        for (&b, el) in plane.iter().zip(dst.chunks_exact_mut(w)) {
            el[j] = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(src: &[u8], w: usize) -> Vec<u8> {
        let n = src.len() / w;
        let mut out = src.to_vec();
        for i in 0..n {
            for j in 0..w {
                out[j * n + i] = src[i * w + j];
            }
        }
        out
    }

    proptest! {
        #[test]
        fn matches_naive_and_round_trips(w in prop::sample::select(vec![1usize, 2, 3, 4, 8, 12, 16, 76]),
                                         n in 0usize..200, extra in 0usize..3, seed in any::<u64>()) {
            let len = n * w + if w > 1 { extra.min(w - 1) } else { 0 };
            let src: Vec<u8> = (0..len).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 13) as u8).collect();
            let mut out = vec![0u8; len];
            shuffle(&src, w, &mut out);
            prop_assert_eq!(&out, &naive(&src, w));
            let mut back = vec![0u8; len];
            unshuffle(&out, w, &mut back);
            prop_assert_eq!(back, src);
        }
    }
}
