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

use super::{ByteFilter, Elements};

/// Elements moved per step of the fixed-width paths: a tile of `TILE x W` bytes is read once
/// and written as `W` runs of `TILE` bytes, which the compiler turns into vector shuffles.
const TILE: usize = 16;

/// The byte shuffle as a [`ByteFilter`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ByteShuffle;

impl ByteFilter for ByteShuffle {
    fn encode(&self, src: &[u8], el: &Elements, dst: &mut [u8]) {
        shuffle(src, el.elbyte, dst);
    }
    fn decode(&self, src: &[u8], el: &Elements, dst: &mut [u8]) {
        unshuffle(src, el.elbyte, dst);
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
    // The SIMD path takes whole tiles of 16 elements; the portable one the rest.
    let done = simd::shuffle(src, w, n, dst);
    match w {
        2 => shuffle_fixed::<2>(src, n, done, dst),
        4 => shuffle_fixed::<4>(src, n, done, dst),
        8 => shuffle_fixed::<8>(src, n, done, dst),
        16 => shuffle_fixed::<16>(src, n, done, dst),
        _ => shuffle_generic(src, w, n, done, dst),
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
    // The planes' slices on the stack for the widths of numbers (every read of a block
    // calls this), in a vector for wider records.
    let mut stack: [&[u8]; 16] = [&[]; 16];
    let heap: Vec<&[u8]>;
    let planes: &[&[u8]] = if w <= stack.len() {
        for (slot, plane) in stack.iter_mut().zip(src.chunks_exact(n)) {
            *slot = plane;
        }
        &stack[..w]
    } else {
        heap = src[..n * w].chunks_exact(n).collect();
        &heap
    };
    unshuffle_planes(planes, &mut dst[..n * w]);
    dst[n * w..].copy_from_slice(&src[n * w..]);
}

/// Undoes [`shuffle`] from planes that need not be next to each other: `planes[j]` is byte `j`
/// of each of the `n` elements of `dst` (`w = planes.len()` bytes each, `dst.len() = n w`).
/// What a reader of a block stored as byte streams uses, so that a stream stored as it is
/// is read where it lies, not copied first.
///
/// ```
/// use rawarray_serde::codec::shuffle;
/// let mut out = [0u8; 6];
/// shuffle::unshuffle_planes(&[&[1, 3, 5], &[2, 4, 6]], &mut out);
/// assert_eq!(out, [1, 2, 3, 4, 5, 6]);
/// ```
///
/// # Panics
/// If `dst` is not `n w` bytes with every plane `n` bytes (a caller's error: a reader checks
/// the stored streams' lengths before it gets here).
pub fn unshuffle_planes(planes: &[&[u8]], dst: &mut [u8]) {
    let w = planes.len();
    let n = dst.len().checked_div(w).unwrap_or(0);
    assert!(
        n * w == dst.len() && planes.iter().all(|p| p.len() == n),
        "unshuffle_planes: {w} planes of {:?} bytes into {} bytes",
        planes.iter().map(|p| p.len()).collect::<Vec<_>>(),
        dst.len()
    );
    if w == 1 {
        dst.copy_from_slice(planes[0]);
        return;
    }
    let done = simd::unshuffle(planes, n, dst);
    match w {
        2 => unshuffle_fixed::<2>(planes, n, done, dst),
        4 => unshuffle_fixed::<4>(planes, n, done, dst),
        8 => unshuffle_fixed::<8>(planes, n, done, dst),
        16 => unshuffle_fixed::<16>(planes, n, done, dst),
        _ => unshuffle_generic(planes, n, done, dst),
    }
}

/// The most bytedeltas a plane can carry into [`unshuffle_planes_undoing`] (a pipeline that
/// puts more on a plane has them undone in place first).
pub(crate) const FUSED_DELTAS: usize = 2;

/// The most byte planes (bytes of an element) [`unshuffle_planes_undoing`] takes.
pub(crate) const FUSED_PLANES: usize = 4;

/// Whether this machine has a kernel for [`unshuffle_planes_undoing`] of planes carrying
/// `times[j]` bytedeltas each (one count a plane): x86_64 with SSSE3, elements of 2 or 4 bytes
/// ([`FUSED_PLANES`] at most), at most [`FUSED_DELTAS`] a plane. Where it has none, a reader
/// undoes the deltas in place first. Measured on 1 MiB of planes, every plane with one or two
/// deltas: 0.78x to 0.90x of the two passes' time at 2 and 4 bytes, 1.05x to 1.17x at 8 and
/// 16 (the kernel's vectors and their sums no longer fit the 16 vector registers), so wider
/// elements take the two passes.
pub(crate) fn unshuffles_undoing(times: &[usize]) -> bool {
    cfg!(target_arch = "x86_64")
        && matches!(times.len(), 2 | 4)
        && times.iter().all(|&t| t <= FUSED_DELTAS)
        && simd::has_ssse3()
}

/// [`unshuffle_planes`] of planes that still carry their bytedeltas, plane `j` `times[j]` of
/// them: each 16 bytes of a plane are summed as the unshuffle loads them, which saves the
/// deltas' own pass over the planes (a store and a load of each byte).
///
/// # Panics
/// Unless [`unshuffles_undoing`] (the caller chooses between this and undoing in place) and
/// the lengths are as [`unshuffle_planes`] takes them.
pub(crate) fn unshuffle_planes_undoing(planes: &[&[u8]], times: &[usize], dst: &mut [u8]) {
    let w = planes.len();
    assert!(
        w == times.len() && unshuffles_undoing(times),
        "unshuffle_planes_undoing: no kernel for {w} planes with {times:?} deltas"
    );
    let n = dst.len() / w;
    assert!(
        n * w == dst.len() && planes.iter().all(|p| p.len() == n),
        "unshuffle_planes_undoing: {w} planes of {:?} bytes into {} bytes",
        planes.iter().map(|p| p.len()).collect::<Vec<_>>(),
        dst.len()
    );
    let sums = simd::unshuffle_undoing(planes, times, n, dst);
    // The last `n % 16` elements: each plane's sums go on from where its vectors ended.
    let done = n / 16 * 16;
    for (j, ((plane, &t), mut sums)) in planes.iter().zip(times).zip(sums).enumerate() {
        for (i, &x) in plane[done..].iter().enumerate() {
            let mut v = x;
            for s in sums.iter_mut().take(t) {
                *s = s.wrapping_add(v);
                v = *s;
            }
            dst[(done + i) * w + j] = v;
        }
    }
}

/// The portable byte shuffle of elements `from..n` (those before were done by [`simd`]).
fn shuffle_fixed<const W: usize>(src: &[u8], n: usize, from: usize, dst: &mut [u8]) {
    let tiles = n / TILE;
    for t in from / TILE..tiles {
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
    for i in (tiles * TILE).max(from)..n {
        for j in 0..W {
            dst[j * n + i] = src[i * W + j];
        }
    }
}

/// The portable byte unshuffle of elements `from..n` (those before were done by [`simd`]).
fn unshuffle_fixed<const W: usize>(planes: &[&[u8]], n: usize, from: usize, dst: &mut [u8]) {
    let tiles = n / TILE;
    for t in from / TILE..tiles {
        let i0 = t * TILE;
        let mut block = [[0u8; W]; TILE];
        for j in 0..W {
            let run: &[u8] = &planes[j][i0..i0 + TILE];
            for (k, el) in block.iter_mut().enumerate() {
                el[j] = run[k];
            }
        }
        for (k, el) in block.iter().enumerate() {
            dst[(i0 + k) * W..(i0 + k + 1) * W].copy_from_slice(el);
        }
    }
    for i in (tiles * TILE).max(from)..n {
        for j in 0..W {
            dst[i * W + j] = planes[j][i];
        }
    }
}

/// SSE2 kernels for elements of 2, 4, 8 and 16 bytes, and of any width from 5 as 16 x 16 byte
/// transposes (x86_64 only; other targets take the portable path). A tile of 16 elements is
/// `W` vectors of 16 bytes; one step interleaves vectors `i` and `i + W / 2` into `2 i` (low
/// halves) and `2 i + 1` (high halves). Four steps make vector `j` hold byte `j` of the 16
/// elements (the shuffle), and `log2 W` steps from the planes give the elements back (the
/// unshuffle): checked for many widths against the definition by the tests below, as is the
/// portable path on its own. Measured here (256 KiB blocks, 4-byte elements): 1.9 GB/s
/// portable, well above 10 GB/s with SSE2. One kernel also needs SSSE3, detected at run time:
/// the unshuffle that undoes bytedeltas as it loads the planes (`unshuffle_undoing`).
mod simd {
    use crate::codec::shuffle::{FUSED_DELTAS, FUSED_PLANES};

    /// Shuffles the whole tiles of `n` elements of `w` bytes; returns how many elements it did
    /// (0 where it has no kernel).
    #[cfg(target_arch = "x86_64")]
    pub(super) fn shuffle(src: &[u8], w: usize, n: usize, dst: &mut [u8]) -> usize {
        // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it, so calling
        // functions compiled for it cannot execute an instruction the CPU lacks.
        unsafe {
            match w {
                2 => x86::shuffle::<2>(src, n, dst),
                4 => x86::shuffle::<4>(src, n, dst),
                8 => x86::shuffle::<8>(src, n, dst),
                16 => x86::shuffle::<16>(src, n, dst),
                // Narrower widths gain little from 16 x 16 transposes of mostly unused columns.
                5.. => return x86::shuffle_any(src, w, n, dst),
                _ => return 0,
            }
        }
        n / 16 * 16
    }

    /// Undoes [`shuffle`] for the whole tiles (plane `j` is `planes[j]`); returns how many
    /// elements it did.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn unshuffle(planes: &[&[u8]], n: usize, dst: &mut [u8]) -> usize {
        // SAFETY: as in `shuffle`: SSE2 is part of the x86_64 baseline.
        unsafe {
            match planes.len() {
                2 => x86::unshuffle::<2, 1>(planes, n, dst),
                4 => x86::unshuffle::<4, 2>(planes, n, dst),
                8 => x86::unshuffle::<8, 3>(planes, n, dst),
                16 => x86::unshuffle::<16, 4>(planes, n, dst),
                5.. => return x86::unshuffle_any(planes, n, dst),
                _ => return 0,
            }
        }
        n / 16 * 16
    }

    /// Whether the CPU has SSSE3 (every x86_64 CPU since 2006 but the first), which the
    /// kernel that undoes bytedeltas as it unshuffles needs.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn has_ssse3() -> bool {
        std::is_x86_feature_detected!("ssse3")
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn has_ssse3() -> bool {
        false
    }

    /// [`unshuffle`] of the whole tiles of `w` planes (2 or 4) carrying `times[j]` (at
    /// most [`FUSED_DELTAS`]) bytedeltas each, undone as they are loaded; returns each plane's
    /// last sums of its passes (planes past `w`: zeros), where the caller's tail goes on. The
    /// caller checked [`unshuffles_undoing`](super::unshuffles_undoing).
    #[cfg(target_arch = "x86_64")]
    pub(super) fn unshuffle_undoing(
        planes: &[&[u8]],
        times: &[usize],
        n: usize,
        dst: &mut [u8],
    ) -> [[u8; FUSED_DELTAS]; FUSED_PLANES] {
        assert!(has_ssse3(), "unshuffle_undoing without SSSE3");
        // SAFETY: the CPU has SSSE3 (asserted just above; SSE2 is in the x86_64 baseline).
        unsafe {
            match planes.len() {
                2 => x86::unshuffle_undoing::<2, 1>(planes, times, n, dst),
                4 => x86::unshuffle_undoing::<4, 2>(planes, times, n, dst),
                w => unreachable!("unshuffle_undoing of {w} planes"),
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn unshuffle_undoing(
        _: &[&[u8]],
        _: &[usize],
        _: usize,
        _: &mut [u8],
    ) -> [[u8; FUSED_DELTAS]; FUSED_PLANES] {
        unreachable!("unshuffle_undoing is x86_64 only")
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn shuffle(_: &[u8], _: usize, _: usize, _: &mut [u8]) -> usize {
        0
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn unshuffle(_: &[&[u8]], _: usize, _: &mut [u8]) -> usize {
        0
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use crate::codec::shuffle::{FUSED_DELTAS, FUSED_PLANES};
        use std::arch::x86_64::{__m128i, _mm_setzero_si128, _mm_unpackhi_epi8, _mm_unpacklo_epi8};

        /// One interleaving step over the `W` vectors of a tile.
        #[inline]
        #[target_feature(enable = "sse2")]
        fn step<const W: usize>(r: [__m128i; W]) -> [__m128i; W] {
            let mut out = r;
            let h = W / 2;
            for i in 0..h {
                out[2 * i] = _mm_unpacklo_epi8(r[i], r[i + h]);
                out[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + h]);
            }
            out
        }

        /// 16 bytes of `b` at `at` as a vector (bounds checked: a slice index).
        #[inline]
        #[target_feature(enable = "sse2")]
        fn load(b: &[u8], at: usize) -> __m128i {
            let bytes: [u8; 16] = b[at..at + 16].try_into().expect("16 bytes");
            bytemuck::cast(bytes)
        }

        #[inline]
        #[target_feature(enable = "sse2")]
        fn store(b: &mut [u8], at: usize, v: __m128i) {
            b[at..at + 16].copy_from_slice(&bytemuck::cast::<__m128i, [u8; 16]>(v));
        }

        #[target_feature(enable = "sse2")]
        pub(super) fn shuffle<const W: usize>(src: &[u8], n: usize, dst: &mut [u8]) {
            for t in 0..n / 16 {
                let mut r = [_mm_setzero_si128(); W];
                for (i, v) in r.iter_mut().enumerate() {
                    *v = load(src, 16 * (W * t + i));
                }
                for _ in 0..4 {
                    r = step(r);
                }
                for (j, v) in r.into_iter().enumerate() {
                    store(dst, j * n + 16 * t, v);
                }
            }
        }

        /// The byte columns `c0 .. c0 + 16` of elements of `w` bytes, for each tile: the column
        /// groups of 16, the last one overlapping the one before when `w` is not a multiple
        /// of 16 (its columns are written twice, with the same bytes), one group if `w < 16`.
        fn column_groups(w: usize) -> impl Iterator<Item = usize> {
            let last = w.saturating_sub(16);
            (0..w.div_ceil(16)).map(move |g| (16 * g).min(last))
        }

        /// The byte shuffle of elements of any width `w >= 5`, in 16 x 16 byte transposes
        /// (the `W = 16` steps): rows are 16 elements, columns 16 of their bytes. Returns the
        /// elements done: whole tiles whose 16-byte loads stay inside `src` (with `w < 16` a
        /// row reads past its element).
        #[target_feature(enable = "sse2")]
        pub(super) fn shuffle_any(src: &[u8], w: usize, n: usize, dst: &mut [u8]) -> usize {
            let mut tiles = n / 16;
            while tiles > 0 && (16 * tiles - 1) * w + 16 > src.len() {
                tiles -= 1;
            }
            for t in 0..tiles {
                for c0 in column_groups(w) {
                    let mut r = [_mm_setzero_si128(); 16];
                    for (k, v) in r.iter_mut().enumerate() {
                        *v = load(src, (16 * t + k) * w + c0);
                    }
                    for _ in 0..4 {
                        r = step(r);
                    }
                    for (j, v) in r.into_iter().enumerate().take(w - c0) {
                        store(dst, (c0 + j) * n + 16 * t, v);
                    }
                }
            }
            16 * tiles
        }

        /// Undoes [`shuffle_any`] for all whole tiles (each load is 16 bytes of a plane, inside
        /// it).
        #[target_feature(enable = "sse2")]
        pub(super) fn unshuffle_any(planes: &[&[u8]], n: usize, dst: &mut [u8]) -> usize {
            let w = planes.len();
            for t in 0..n / 16 {
                for c0 in column_groups(w) {
                    let cols = (w - c0).min(16);
                    let mut r = [_mm_setzero_si128(); 16];
                    for (j, v) in r.iter_mut().enumerate().take(cols) {
                        *v = load(planes[c0 + j], 16 * t);
                    }
                    for _ in 0..4 {
                        r = step(r);
                    }
                    for (k, v) in r.into_iter().enumerate() {
                        let at = (16 * t + k) * w + c0;
                        if at + 16 <= dst.len() {
                            // With `w < 16` the store runs into the next element's bytes
                            // (or those the portable path writes after the tiles), which are
                            // written after this one: whole stores, not short copies.
                            store(dst, at, v);
                        } else {
                            let bytes = bytemuck::cast::<__m128i, [u8; 16]>(v);
                            dst[at..at + cols].copy_from_slice(&bytes[..cols]);
                        }
                    }
                }
            }
            n / 16 * 16
        }

        /// [`unshuffle`] undoing `times[j]` (at most [`FUSED_DELTAS`]) bytedeltas of plane `j`
        /// as it loads it; returns each plane's last sums of its passes.
        #[target_feature(enable = "ssse3")]
        pub(super) fn unshuffle_undoing<const W: usize, const STEPS: usize>(
            planes: &[&[u8]],
            times: &[usize],
            n: usize,
            dst: &mut [u8],
        ) -> [[u8; FUSED_DELTAS]; FUSED_PLANES] {
            use crate::codec::bytedelta::undo_vector_ssse3;
            let planes: [&[u8]; W] = std::array::from_fn(|j| &planes[j][..n]);
            let times: [usize; W] = std::array::from_fn(|j| times[j]);
            let mut carry = [[_mm_setzero_si128(); FUSED_DELTAS]; W];
            for t in 0..n / 16 {
                let mut r = [_mm_setzero_si128(); W];
                for (j, v) in r.iter_mut().enumerate() {
                    *v = load(planes[j], 16 * t);
                    if times[j] > 0 {
                        *v = undo_vector_ssse3(*v, times[j], &mut carry[j]);
                    }
                }
                for _ in 0..STEPS {
                    r = step(r);
                }
                for (i, v) in r.into_iter().enumerate() {
                    store(dst, 16 * (W * t + i), v);
                }
            }
            // Every byte of a carry is the same sum: byte 0 of each.
            let mut sums = [[0u8; FUSED_DELTAS]; FUSED_PLANES];
            for (s, c) in sums.iter_mut().zip(carry) {
                *s = c.map(|v| bytemuck::cast::<__m128i, [u8; 16]>(v)[0]);
            }
            sums
        }

        /// `STEPS` is log2 `W`.
        #[target_feature(enable = "sse2")]
        pub(super) fn unshuffle<const W: usize, const STEPS: usize>(
            planes: &[&[u8]],
            n: usize,
            dst: &mut [u8],
        ) {
            let planes: [&[u8]; W] = std::array::from_fn(|j| &planes[j][..n]);
            for t in 0..n / 16 {
                let mut r = [_mm_setzero_si128(); W];
                for (j, v) in r.iter_mut().enumerate() {
                    *v = load(planes[j], 16 * t);
                }
                for _ in 0..STEPS {
                    r = step(r);
                }
                for (i, v) in r.into_iter().enumerate() {
                    store(dst, 16 * (W * t + i), v);
                }
            }
        }
    }
}

/// The portable byte shuffle of elements `from..n` of any width.
fn shuffle_generic(src: &[u8], w: usize, n: usize, from: usize, dst: &mut [u8]) {
    // `chunks_exact_mut(0)` panics: no elements, nothing to move.
    if n == 0 {
        return;
    }
    for (j, plane) in dst[..n * w].chunks_exact_mut(n).enumerate() {
        for (slot, el) in plane[from..]
            .iter_mut()
            .zip(src[from * w..].chunks_exact(w))
        {
            *slot = el[j];
        }
    }
}

/// The portable byte unshuffle of elements `from..n` of any width.
fn unshuffle_generic(planes: &[&[u8]], n: usize, from: usize, dst: &mut [u8]) {
    let w = planes.len();
    if n == 0 {
        return;
    }
    for (j, plane) in planes.iter().enumerate() {
        for (&b, el) in plane[from..n]
            .iter()
            .zip(dst[from * w..].chunks_exact_mut(w))
        {
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
        fn matches_naive_and_round_trips(w in prop::sample::select(vec![1usize, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 31, 32, 33, 76]),
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

        /// Planes in buffers of their own, as a reader of byte streams passes them (some in the
        /// stored block, some in scratch), give the elements back.
        #[test]
        fn planes_apart_match_naive(w in prop::sample::select(vec![1usize, 2, 3, 4, 5, 8, 12, 16, 17, 40]),
                                    n in 0usize..100, seed in any::<u64>()) {
            let src: Vec<u8> = (0..n * w).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 13) as u8).collect();
            let shuffled = naive(&src, w);
            let owned: Vec<Vec<u8>> = (0..w).map(|j| shuffled[j * n..(j + 1) * n].to_vec()).collect();
            let planes: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            let mut back = vec![0u8; n * w];
            unshuffle_planes(&planes, &mut back);
            prop_assert_eq!(back, src);
        }

        /// Planes that still carry up to two bytedeltas each give, through the kernel that
        /// undoes them as it loads them, what undoing the deltas with the definition and then
        /// unshuffling gives, across whole 16-byte vectors and the tail. x86_64 only (the
        /// kernel's target), where every CPU this runs on has SSSE3: asserted, not skipped.
        #[cfg(target_arch = "x86_64")]
        #[test]
        fn undoing_while_unshuffling_matches_undoing_first(
            w in prop::sample::select(vec![2usize, 4]),
            n in 0usize..120,
            times in prop::collection::vec(0usize..=FUSED_DELTAS, 4),
            seed in any::<u64>(),
        ) {
            let times = &times[..w];
            prop_assert!(unshuffles_undoing(times), "no SSSE3 kernel on this x86_64 CPU");
            let src: Vec<u8> = (0..n * w).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 13) as u8).collect();
            let owned: Vec<Vec<u8>> = (0..w).map(|j| src[j * n..(j + 1) * n].to_vec()).collect();
            let planes: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            // The definition: each delta a running sum mod 256, from 0.
            let mut expected = Vec::new();
            for (p, &t) in owned.iter().zip(times) {
                let mut p = p.clone();
                for _ in 0..t {
                    let mut acc = 0u8;
                    for x in &mut p {
                        acc = acc.wrapping_add(*x);
                        *x = acc;
                    }
                }
                expected.extend(p);
            }
            let want: Vec<u8> = (0..n * w).map(|k| expected[(k % w) * n + k / w]).collect();
            let mut back = vec![0u8; n * w];
            unshuffle_planes_undoing(&planes, times, &mut back);
            prop_assert_eq!(back, want);
        }

        /// The portable kernels alone (on x86_64 the SIMD ones take every whole tile).
        #[test]
        fn the_portable_path_alone_matches_naive(w in prop::sample::select(vec![2usize, 3, 4, 8, 12, 16, 76]),
                                                 n in 0usize..200, seed in any::<u64>()) {
            let src: Vec<u8> = (0..n * w).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 13) as u8).collect();
            let (mut out, mut back) = (vec![0u8; n * w], vec![0u8; n * w]);
            match w {
                2 => shuffle_fixed::<2>(&src, n, 0, &mut out),
                4 => shuffle_fixed::<4>(&src, n, 0, &mut out),
                8 => shuffle_fixed::<8>(&src, n, 0, &mut out),
                16 => shuffle_fixed::<16>(&src, n, 0, &mut out),
                _ => shuffle_generic(&src, w, n, 0, &mut out),
            }
            prop_assert_eq!(&out, &naive(&src, w));
            let planes: Vec<&[u8]> = (0..w).map(|j| &out[j * n..(j + 1) * n]).collect();
            match w {
                2 => unshuffle_fixed::<2>(&planes, n, 0, &mut back),
                4 => unshuffle_fixed::<4>(&planes, n, 0, &mut back),
                8 => unshuffle_fixed::<8>(&planes, n, 0, &mut back),
                16 => unshuffle_fixed::<16>(&planes, n, 0, &mut back),
                _ => unshuffle_generic(&planes, n, 0, &mut back),
            }
            prop_assert_eq!(back, src);
        }
    }
}
