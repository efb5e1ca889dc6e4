//! Blosc2's `bytedelta` filter (`BLOSC_FILTER_BYTEDELTA`, filter id 35 in c-blosc2): byte-wise
//! differences within each byte stream of a byte-shuffled block.
//!
//! It runs after the byte shuffle ([`super::shuffle`]) of elements of `width` bytes: a block of
//! `len` bytes is then `width` streams (byte planes) of `n = len / width` bytes each, stream `j`
//! at bytes `j n .. (j + 1) n`, followed by `len % width` trailing bytes. Encoding replaces each
//! stream `s` by its differences modulo 256,
//!
//! ```text
//! out[j n]     = s[j n]
//! out[j n + i] = (s[j n + i] - s[j n + i - 1]) mod 256      for 1 <= i < n
//! ```
//!
//! and decoding is each stream's prefix sum modulo 256. Every stream restarts (its first byte is
//! kept as it is), so does every call (one call is one block), and the trailing `len % width`
//! bytes are copied unchanged. Width 0 copies the block unchanged; width 1 is one stream of all
//! `len` bytes. The transform is exact for any bytes.
//!
//! The config's parameter (doc/chunked.md 5.2) is 0 for every stream, this filter as Blosc2
//! has it, or a mask of the streams it works on ([`encode_planes`]: stream `j` for bit `j`):
//! after a byte shuffle of a smooth float field the low mantissa planes are noise, which a
//! delta cannot shrink, and the sign and exponent plane repeats row by row, which zstd finds
//! best in the plane itself; only the planes between gain. Undoing a delta is a pass over its
//! plane, so a mask also saves the passes over the others.
//!
//! # Compatibility with Blosc2
//!
//! [`encode`] (every stream) is byte for byte the output of c-blosc2's `bytedelta_forward`
//! (`plugins/filters/bytedelta/bytedelta.c`) with `meta` = `width` (1 to 255), and [`decode`]
//! of its `bytedelta_backward` (a mask is ours alone: Blosc2 has no such parameter): for
//! every block in c-blosc2 3.3.2 and later, for blocks of whole elements in every version since
//! 2.10.0 (see below). Blosc2 runs the filter on each block of a chunk (the pipeline's `bsize`
//! bytes, typically 32 KiB to a few MiB, the last block of a chunk shorter), after its SHUFFLE
//! filter, which leaves the trailing `bsize % typesize` bytes in place as [`super::shuffle`] does;
//! so Blosc2's SHUFFLE + BYTEDELTA of one block is [`shuffle`](super::shuffle::shuffle) then
//! [`encode`] here.
//!
//! The trailing `len % width` bytes of a block whose length is not a multiple of the width are
//! where c-blosc2 versions differ: 3.3.2 and later copy them unchanged, as here (its release
//! notes: bytedelta "silently corrupted the tail of any block whose length is not a multiple of
//! the typesize"); before 3.3.2 those output bytes were left unwritten (whatever the
//! destination buffer held), so such blocks from old writers are not reproducible by anyone.
//! Blocks of whole elements are the same in every version since 2.10.0. Filter id 34
//! (`BLOSC_FILTER_BYTEDELTA_BUGGY`, the only bytedelta of c-blosc2 2.8.0 to 2.9.3) restarted
//! each stream's scalar tail at zero after its SIMD part; it is not this filter. python-blosc2
//! drops BYTEDELTA from a pipeline whose typesize is 1 (c-blosc2 itself runs it as one stream).
//! `tests/codec_kernels.rs` checks all this against python-blosc2 (c-blosc2 3.6.1 inside), both
//! ways, widths 1 to 16, blocks with and without a partial element.
//!
//! ```
//! use rawarray_serde::codec::{bytedelta, shuffle};
//! // Four little-endian u16: 0x0100, 0x0102, 0x0105, 0x0201.
//! let src = [0x00, 0x01, 0x02, 0x01, 0x05, 0x01, 0x01, 0x02];
//! let mut planes = [0u8; 8];
//! shuffle::shuffle(&src, 2, &mut planes);
//! assert_eq!(planes, [0x00, 0x02, 0x05, 0x01, 0x01, 0x01, 0x01, 0x02]);
//! let mut out = [0u8; 8];
//! bytedelta::encode(&planes, 2, &mut out);
//! assert_eq!(out, [0x00, 0x02, 0x03, 0xFC, 0x01, 0x00, 0x00, 0x01]);
//! let mut back = [0u8; 8];
//! bytedelta::decode(&out, 2, &mut back);
//! assert_eq!(back, planes);
//! ```

/// Replaces each of the `width` streams of `src` by its byte-wise differences (first byte kept),
/// into `dst`; the trailing `src.len() % width` bytes are copied (see the [module docs](self)).
///
/// # Panics
///
/// If `dst.len() != src.len()` (a caller's bug, as in [`shuffle`](super::shuffle::shuffle)); never
/// for any content, width or length of `src`.
///
/// ```
/// use rawarray_serde::codec::bytedelta;
/// let mut out = [0u8; 7];
/// // Width 3: streams [10, 11], [20, 25], [30, 29]; one trailing byte.
/// bytedelta::encode(&[10, 11, 20, 25, 30, 29, 99], 3, &mut out);
/// assert_eq!(out, [10, 1, 20, 5, 30, 255, 99]);
/// ```
pub fn encode(src: &[u8], width: usize, dst: &mut [u8]) {
    encode_planes(src, width, ALL, dst);
}

/// Undoes [`encode`]: each stream's prefix sum modulo 256, into `dst`; the trailing
/// `src.len() % width` bytes are copied.
///
/// # Panics
///
/// If `dst.len() != src.len()`; never for any content, width or length of `src`.
///
/// ```
/// use rawarray_serde::codec::bytedelta;
/// let mut out = [0u8; 7];
/// bytedelta::decode(&[10, 1, 20, 5, 30, 255, 99], 3, &mut out);
/// assert_eq!(out, [10, 11, 20, 25, 30, 29, 99]);
/// ```
pub fn decode(src: &[u8], width: usize, dst: &mut [u8]) {
    decode_planes(src, width, ALL, dst);
}

/// Undoes two [`encode`]s in a row, in one pass: the same bytes as [`decode`] twice (each
/// stream's prefix sums of its prefix sums, modulo 256).
///
/// # Panics
///
/// If `dst.len() != src.len()`; never for any content, width or length of `src`.
///
/// ```
/// use rawarray_serde::codec::bytedelta;
/// let planes = [3u8, 5, 9, 200, 1, 0, 0, 250, 7];
/// let (mut once, mut twice, mut back) = ([0u8; 9], [0u8; 9], [0u8; 9]);
/// bytedelta::encode(&planes, 2, &mut once);
/// bytedelta::encode(&once, 2, &mut twice);
/// bytedelta::decode_twice(&twice, 2, &mut back);
/// assert_eq!(back, planes);
/// ```
pub fn decode_twice(src: &[u8], width: usize, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "bytedelta::decode_twice: src and dst lengths differ"
    );
    dst.copy_from_slice(src);
    undo_in_place(dst, width, |_| 2);
}

/// Every plane: the mask of Blosc2's `bytedelta` (parameter 0).
pub const ALL: u32 = 0;

/// Whether `mask` selects byte plane `plane`: every plane for [`ALL`] (0), else plane `j` for
/// bit `j` set (planes 32 and above never).
///
/// ```
/// use rawarray_serde::codec::bytedelta::{selects, ALL};
/// assert!(selects(ALL, 7));
/// assert!(selects(0b0100, 2) && !selects(0b0100, 3) && !selects(0b0100, 40));
/// ```
pub fn selects(mask: u32, plane: usize) -> bool {
    mask == ALL || (plane < 32 && mask >> plane & 1 == 1)
}

/// [`encode`] of the streams `mask` selects ([`selects`]); the others are copied unchanged.
/// With `mask` = [`ALL`] this is [`encode`], Blosc2's filter; otherwise the config's
/// `bytedelta:MASK` (doc/chunked.md 5.2).
///
/// # Panics
///
/// If `dst.len() != src.len()`; never for any content, width, mask or length of `src`.
///
/// ```
/// use rawarray_serde::codec::bytedelta;
/// let mut out = [0u8; 6];
/// // Width 2, only stream 1 ([1, 2, 4]) differenced; stream 0 ([7, 7, 9]) copied.
/// bytedelta::encode_planes(&[7, 7, 9, 1, 2, 4], 2, 0b10, &mut out);
/// assert_eq!(out, [7, 7, 9, 1, 1, 2]);
/// ```
pub fn encode_planes(src: &[u8], width: usize, mask: u32, dst: &mut [u8]) {
    for (j, (s, d)) in streams(src, width, dst, "encode").enumerate() {
        if !selects(mask, j) {
            d.copy_from_slice(s);
            continue;
        }
        d[0] = s[0];
        for ((o, &x), &prev) in d[1..].iter_mut().zip(&s[1..]).zip(s) {
            *o = x.wrapping_sub(prev);
        }
    }
}

/// Undoes [`encode_planes`] with the same `mask`.
///
/// # Panics
///
/// If `dst.len() != src.len()`; never for any content, width, mask or length of `src`.
///
/// ```
/// use rawarray_serde::codec::bytedelta;
/// let mut out = [0u8; 6];
/// bytedelta::decode_planes(&[7, 7, 9, 1, 1, 2], 2, 0b10, &mut out);
/// assert_eq!(out, [7, 7, 9, 1, 2, 4]);
/// ```
pub fn decode_planes(src: &[u8], width: usize, mask: u32, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "bytedelta::decode: src and dst lengths differ"
    );
    dst.copy_from_slice(src);
    undo_in_place(dst, width, |j| usize::from(selects(mask, j)));
}

/// Undoes `times(j)` bytedeltas on each stream `j` of the `width` streams of `buf`, in place
/// (trailing bytes untouched): the prefix sums, two at a time in one pass. The pipeline undoes
/// a run of bytedelta filters this way, with no pass over the streams none of them selects.
pub(crate) fn undo_in_place(buf: &mut [u8], width: usize, times: impl Fn(usize) -> usize) {
    // Each stream alone. Written without SIMD intrinsics a prefix sum of bytes runs at about
    // a byte per cycle however it is arranged (streams side by side, 8-byte SWAR and 16-byte
    // arrays measured no faster: the byte stores are the limit); 16 bytes at a time with SSE2
    // (the x86_64 baseline) it is several times faster, and the scalar loop finishes the tail.
    let n = buf.len().checked_div(width).unwrap_or(0);
    if n == 0 {
        return;
    }
    for (j, stream) in buf[..n * width].chunks_exact_mut(n).enumerate() {
        let mut left = times(j);
        while left >= 2 {
            let (done, mut first, mut second) = simd::prefix_sums_twice(stream);
            for x in &mut stream[done..] {
                first = first.wrapping_add(*x);
                second = second.wrapping_add(first);
                *x = second;
            }
            left -= 2;
        }
        if left == 1 {
            let (done, mut acc) = simd::prefix_sums(stream);
            for x in &mut stream[done..] {
                acc = acc.wrapping_add(*x);
                *x = acc;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use simd::x86::undo_vector_ssse3;

/// Prefix sums modulo 256 in place, 16 bytes at a time.
mod simd {
    /// [`prefix_sums`] applied twice in one pass: returns how many bytes it did and the last
    /// sums of the first and second passes.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn prefix_sums_twice(buf: &mut [u8]) -> (usize, u8, u8) {
        let n = buf.len() / 16 * 16;
        if n == 0 {
            return (0, 0, 0);
        }
        let first = if std::is_x86_feature_detected!("ssse3") {
            // SAFETY: the CPU has SSSE3 (checked just above), and `n <= buf.len()`.
            unsafe { x86::prefix_sums_twice_ssse3(buf, n) }
        } else {
            // SAFETY: SSE2 is in the x86_64 baseline, and `n <= buf.len()`.
            unsafe { x86::prefix_sums_twice(buf, n) }
        };
        (n, first, buf[n - 1])
    }

    /// Other targets: the caller's scalar loop does it all.
    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn prefix_sums_twice(_: &mut [u8]) -> (usize, u8, u8) {
        (0, 0, 0)
    }

    /// Replaces the whole 16-byte vectors of `buf` by their prefix sums (mod 256, from 0);
    /// returns how many bytes it did and the last sum (where the caller goes on).
    #[cfg(target_arch = "x86_64")]
    pub(super) fn prefix_sums(buf: &mut [u8]) -> (usize, u8) {
        let n = buf.len() / 16 * 16;
        if n == 0 {
            return (0, 0);
        }
        if std::is_x86_feature_detected!("ssse3") {
            // SAFETY: the CPU has SSSE3 (checked just above; SSE2 is in the baseline), and
            // `n <= buf.len()`.
            unsafe { x86::prefix_sums_ssse3(buf, n) };
        } else {
            // SAFETY: SSE2 is part of the x86_64 baseline (every x86_64 CPU has it), and
            // `n <= buf.len()`.
            unsafe { x86::prefix_sums(buf, n) };
        }
        (n, buf[n - 1])
    }

    /// Other targets: the caller's scalar loop does it all.
    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn prefix_sums(_: &mut [u8]) -> (usize, u8) {
        (0, 0)
    }

    #[cfg(target_arch = "x86_64")]
    pub(super) mod x86 {
        use std::arch::x86_64::{
            __m128i, _mm_add_epi8, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_set1_epi8,
            _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi8, _mm_shufflehi_epi16,
            _mm_slli_epi64, _mm_slli_si128, _mm_storeu_si128, _mm_unpackhi_epi64,
            _mm_unpackhi_epi8,
        };

        // The SSE2 kernels below are bound by x86's one shuffle port: every byte shift
        // (`pslldq`) and the three steps that broadcast a byte are shuffles, seven a vector a
        // pass. With SSSE3 (every x86_64 CPU since 2006 but the first) the shifts within each
        // 8 bytes are 64-bit shifts, which other ports run, and a broadcast is one `pshufb`:
        // two shuffles a vector a pass. Each kernel loads a vector before it stores the sums
        // at the same place, so it works in place.

        /// [`within`] with SSSE3: three 64-bit shifts sum each 8 bytes, one `pshufb` adds the
        /// low 8 bytes' total (byte 7) to each of the high 8.
        #[target_feature(enable = "ssse3")]
        fn within_ssse3(mut v: __m128i) -> __m128i {
            v = _mm_add_epi8(v, _mm_slli_epi64::<8>(v));
            v = _mm_add_epi8(v, _mm_slli_epi64::<16>(v));
            v = _mm_add_epi8(v, _mm_slli_epi64::<32>(v));
            // Bytes 0..8 from index 0x80 (a zero), bytes 8..16 from byte 7.
            let low_total = _mm_set_epi64x(0x0707_0707_0707_0707, -0x7f7f_7f7f_7f7f_7f80);
            _mm_add_epi8(v, _mm_shuffle_epi8(v, low_total))
        }

        /// Undoes `times` (at most `MOST`) bytedeltas on `v`, the next 16 bytes of a plane:
        /// `carry[k]` is pass `k`'s last sum in every byte (zero at the plane's start), updated
        /// for the next 16. The byte unshuffle's step when it undoes the deltas of the planes
        /// it loads ([`unshuffle_planes_undoing`](crate::codec::shuffle::unshuffle_planes_undoing)).
        #[inline]
        #[target_feature(enable = "ssse3")]
        pub(crate) fn undo_vector_ssse3<const MOST: usize>(
            mut v: __m128i,
            times: usize,
            carry: &mut [__m128i; MOST],
        ) -> __m128i {
            debug_assert!(times <= MOST, "{times} deltas with carries for {MOST}");
            for c in carry.iter_mut().take(times) {
                v = _mm_add_epi8(within_ssse3(v), *c);
                *c = last_ssse3(v);
            }
            v
        }

        /// Byte 15 of `v` in every byte, with SSSE3.
        #[target_feature(enable = "ssse3")]
        fn last_ssse3(v: __m128i) -> __m128i {
            _mm_shuffle_epi8(v, _mm_set1_epi8(15))
        }

        /// [`prefix_sums`] with SSSE3.
        ///
        /// # Safety
        /// The CPU has SSSE3; `n <= buf.len()`.
        #[target_feature(enable = "ssse3")]
        pub(super) unsafe fn prefix_sums_ssse3(buf: &mut [u8], n: usize) {
            let mut carry = _mm_setzero_si128();
            let mut i = 0;
            while i + 16 <= n {
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 readable bytes (unaligned load).
                let v = unsafe { _mm_loadu_si128(buf.as_ptr().add(i).cast::<__m128i>()) };
                let out = _mm_add_epi8(within_ssse3(v), carry);
                carry = last_ssse3(out);
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 writable bytes (unaligned store).
                unsafe { _mm_storeu_si128(buf.as_mut_ptr().add(i).cast::<__m128i>(), out) };
                i += 16;
            }
        }

        /// [`prefix_sums_twice`] with SSSE3.
        ///
        /// # Safety
        /// The CPU has SSSE3; `n <= buf.len()`.
        #[target_feature(enable = "ssse3")]
        pub(super) unsafe fn prefix_sums_twice_ssse3(buf: &mut [u8], n: usize) -> u8 {
            let (mut carry1, mut carry2) = (_mm_setzero_si128(), _mm_setzero_si128());
            let mut i = 0;
            while i + 16 <= n {
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 readable bytes (unaligned load).
                let v = unsafe { _mm_loadu_si128(buf.as_ptr().add(i).cast::<__m128i>()) };
                let first = _mm_add_epi8(within_ssse3(v), carry1);
                carry1 = last_ssse3(first);
                let second = _mm_add_epi8(within_ssse3(first), carry2);
                carry2 = last_ssse3(second);
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 writable bytes (unaligned store).
                unsafe { _mm_storeu_si128(buf.as_mut_ptr().add(i).cast::<__m128i>(), second) };
                i += 16;
            }
            _mm_cvtsi128_si32(carry1) as u8
        }

        /// The prefix sums within a vector (see [`prefix_sums`]).
        #[target_feature(enable = "sse2")]
        fn within(mut v: __m128i) -> __m128i {
            v = _mm_add_epi8(v, _mm_slli_si128::<1>(v));
            v = _mm_add_epi8(v, _mm_slli_si128::<2>(v));
            v = _mm_add_epi8(v, _mm_slli_si128::<4>(v));
            _mm_add_epi8(v, _mm_slli_si128::<8>(v))
        }

        /// Byte 15 of `v` in every byte: bytes 8..15 doubled into 16-bit lanes, lane 7 into
        /// lanes 4..7, then the high 64 bits into both halves.
        #[target_feature(enable = "sse2")]
        fn last(v: __m128i) -> __m128i {
            let hi = _mm_shufflehi_epi16::<0xFF>(_mm_unpackhi_epi8(v, v));
            _mm_unpackhi_epi64(hi, hi)
        }

        /// `buf[..n]` replaced by the prefix sums of its prefix sums, `n` a multiple of 16;
        /// returns the last prefix sum of the first pass.
        ///
        /// # Safety
        /// The CPU has SSE2; `n <= buf.len()`.
        #[target_feature(enable = "sse2")]
        pub(super) unsafe fn prefix_sums_twice(buf: &mut [u8], n: usize) -> u8 {
            let (mut carry1, mut carry2) = (_mm_setzero_si128(), _mm_setzero_si128());
            let mut i = 0;
            while i + 16 <= n {
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 readable bytes (unaligned load).
                let v = unsafe { _mm_loadu_si128(buf.as_ptr().add(i).cast::<__m128i>()) };
                let first = _mm_add_epi8(within(v), carry1);
                carry1 = last(first);
                let second = _mm_add_epi8(within(first), carry2);
                carry2 = last(second);
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 writable bytes (unaligned store).
                unsafe { _mm_storeu_si128(buf.as_mut_ptr().add(i).cast::<__m128i>(), second) };
                i += 16;
            }
            _mm_cvtsi128_si32(carry1) as u8
        }

        /// `buf[..n]` replaced by its prefix sums, `n` a multiple of 16. Within a vector
        /// the sums take four shifted adds (by 1, 2, 4 and 8 bytes: after step `k` each byte
        /// holds the sum of the `2^k` bytes ending at it); then the running sum of the vectors
        /// before it, its last byte broadcast, is added.
        ///
        /// # Safety
        /// The CPU has SSE2; `n <= buf.len()`.
        #[target_feature(enable = "sse2")]
        pub(super) unsafe fn prefix_sums(buf: &mut [u8], n: usize) {
            let mut carry = _mm_setzero_si128();
            let mut i = 0;
            while i + 16 <= n {
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 readable bytes (unaligned load).
                let mut v = unsafe { _mm_loadu_si128(buf.as_ptr().add(i).cast::<__m128i>()) };
                v = _mm_add_epi8(v, _mm_slli_si128::<1>(v));
                v = _mm_add_epi8(v, _mm_slli_si128::<2>(v));
                v = _mm_add_epi8(v, _mm_slli_si128::<4>(v));
                v = _mm_add_epi8(v, _mm_slli_si128::<8>(v));
                v = _mm_add_epi8(v, carry);
                // SAFETY: `i + 16 <= n <= buf.len()`: 16 writable bytes (unaligned store).
                unsafe { _mm_storeu_si128(buf.as_mut_ptr().add(i).cast::<__m128i>(), v) };
                // Byte 15 into every byte: bytes 8..15 doubled into 16-bit lanes, lane 7 into
                // lanes 4..7, then the high 64 bits into both halves.
                let hi = _mm_shufflehi_epi16::<0xFF>(_mm_unpackhi_epi8(v, v));
                carry = _mm_unpackhi_epi64(hi, hi);
                i += 16;
            }
        }
    }

    /// Both kernels of each kind (SSE2 and SSSE3) against the scalar sums: the dispatch above
    /// runs only one of them on a given CPU.
    #[cfg(all(test, target_arch = "x86_64"))]
    mod tests {
        #[test]
        fn every_kernel_gives_the_scalar_sums() {
            let s: Vec<u8> = (0..16 * 37).map(|i: u32| (i * 151 + i / 7) as u8).collect();
            let n = s.len();
            let (mut a, mut b) = (0u8, 0u8);
            let (mut once, mut twice) = (Vec::new(), Vec::new());
            for &x in &s {
                a = a.wrapping_add(x);
                b = b.wrapping_add(a);
                once.push(a);
                twice.push(b);
            }
            let x86 = |k: unsafe fn(&mut [u8], usize)| {
                let mut d = s.clone();
                // SAFETY: the caller checked the CPU's features; `n` is the buffer's length.
                unsafe { k(&mut d, n) };
                d
            };
            let x86_twice = |k: unsafe fn(&mut [u8], usize) -> u8| {
                let mut d = s.clone();
                // SAFETY: as above.
                let first = unsafe { k(&mut d, n) };
                (d, first)
            };
            // SSE2 is in the x86_64 baseline.
            assert_eq!(x86(crate::codec::bytedelta::simd::x86::prefix_sums), once);
            assert_eq!(
                x86_twice(crate::codec::bytedelta::simd::x86::prefix_sums_twice),
                (twice.clone(), a)
            );
            if std::is_x86_feature_detected!("ssse3") {
                assert_eq!(
                    x86(crate::codec::bytedelta::simd::x86::prefix_sums_ssse3),
                    once
                );
                assert_eq!(
                    x86_twice(crate::codec::bytedelta::simd::x86::prefix_sums_twice_ssse3),
                    (twice, a)
                );
            } else {
                println!("SKIPPED: the SSSE3 kernels (this CPU has no SSSE3)");
            }
        }
    }
}

/// The `width` byte streams of `src` (`src.len() / width` bytes each), each beside its place
/// in `dst`, once the trailing `src.len() % width` bytes are copied: what [`encode`] and
/// [`decode`] both walk. None when a stream would be empty.
fn streams<'a>(
    src: &'a [u8],
    width: usize,
    dst: &'a mut [u8],
    what: &str,
) -> impl Iterator<Item = (&'a [u8], &'a mut [u8])> {
    assert_eq!(
        src.len(),
        dst.len(),
        "bytedelta::{what}: src and dst lengths differ"
    );
    let n = src.len().checked_div(width).unwrap_or(0);
    let whole = n * width;
    dst[whole..].copy_from_slice(&src[whole..]);
    // `whole` is 0 when `n` is: no stream, and `max(1)` keeps the chunk size legal.
    src[..whole]
        .chunks_exact(n.max(1))
        .zip(dst[..whole].chunks_exact_mut(n.max(1)))
}

/// The `bytedelta` filter (id 4) as a [`ByteFilter`](super::ByteFilter): `elbyte` streams,
/// those of `mask` ([`ALL`] for Blosc2's filter).
#[derive(Clone, Copy, Debug, Default)]
pub struct ByteDelta {
    /// The byte planes it works on ([`selects`]).
    pub mask: u32,
}

impl super::ByteFilter for ByteDelta {
    fn encode(&self, src: &[u8], el: &super::Elements, dst: &mut [u8]) {
        encode_planes(src, el.elbyte, self.mask, dst);
    }
    fn decode(&self, src: &[u8], el: &super::Elements, dst: &mut [u8]) {
        decode_planes(src, el.elbyte, self.mask, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive reference, element by element as c-blosc2's scalar loop.
    fn naive(src: &[u8], width: usize, forward: bool) -> Vec<u8> {
        naive_planes(src, width, 0, forward)
    }

    /// The naive reference of the streams `mask` selects (bit `j`: stream `j`; 0: all),
    /// written from doc/chunked.md 5.2.
    fn naive_planes(src: &[u8], width: usize, mask: u32, forward: bool) -> Vec<u8> {
        let mut out = src.to_vec();
        if width == 0 {
            return out;
        }
        let n = src.len() / width;
        for j in 0..width {
            if mask != 0 && (j >= 32 || mask & (1 << j) == 0) {
                continue;
            }
            let mut prev = 0u8;
            for i in 0..n {
                let at = j * n + i;
                if forward {
                    out[at] = src[at].wrapping_sub(prev);
                    prev = src[at];
                } else {
                    prev = prev.wrapping_add(src[at]);
                    out[at] = prev;
                }
            }
        }
        out
    }

    fn enc(src: &[u8], w: usize) -> Vec<u8> {
        let mut out = vec![0xAA; src.len()];
        encode(src, w, &mut out);
        out
    }

    fn dec(src: &[u8], w: usize) -> Vec<u8> {
        let mut out = vec![0xAA; src.len()];
        decode(src, w, &mut out);
        out
    }

    #[test]
    fn hand_computed_bytes() {
        // Width 1: one stream.
        assert_eq!(enc(&[5, 7, 6, 6, 0], 1), [5, 2, 255, 0, 250]);
        assert_eq!(dec(&[5, 2, 255, 0, 250], 1), [5, 7, 6, 6, 0]);
        // Width 4, streams of 2 and three trailing bytes (copied, never differenced).
        assert_eq!(
            enc(&[1, 3, 10, 10, 200, 100, 0, 255, 7, 8, 9], 4),
            [1, 2, 10, 0, 200, 156, 0, 255, 7, 8, 9]
        );
        assert_eq!(
            dec(&[1, 2, 10, 0, 200, 156, 0, 255, 7, 8, 9], 4),
            [1, 3, 10, 10, 200, 100, 0, 255, 7, 8, 9]
        );
        // Streams restart: the second stream's first byte is kept, not differenced against
        // the first stream's last.
        assert_eq!(enc(&[1, 2, 3, 100, 101, 102], 2), [1, 1, 1, 100, 1, 1]);
    }

    #[test]
    fn shorter_than_one_element_or_width_zero_copies() {
        for w in [0usize, 1, 2, 4, 9, 300] {
            for len in 0..w.max(1) {
                let src: Vec<u8> = (0..len).map(|b| (b * 31 + 7) as u8).collect();
                assert_eq!(enc(&src, w), src, "w {w} len {len}");
                assert_eq!(dec(&src, w), src, "w {w} len {len}");
            }
        }
    }

    #[test]
    fn widths_1_to_20_with_and_without_tails() {
        let src: Vec<u8> = (0..2000u32).map(|i| (i * i % 253) as u8).collect();
        for w in 1..=20usize {
            for len in [w * 37, w * 37 + w - 1, 1999] {
                let s = &src[..len];
                assert_eq!(enc(s, w), naive(s, w, true), "w {w} len {len}");
                assert_eq!(dec(s, w), naive(s, w, false), "w {w} len {len}");
            }
        }
    }

    #[test]
    fn long_streams_cross_many_vectors() {
        // Streams of 16 k + r bytes (the 16-byte kernel, then the scalar tail), with every byte
        // value, so that carries between vectors and wrap-arounds are exercised.
        for w in [1usize, 2, 3, 4, 8] {
            for n in [15usize, 16, 17, 31, 32, 33, 255, 256, 4099] {
                let src: Vec<u8> = (0..n * w).map(|i| (i * 151 + i / 7) as u8).collect();
                assert_eq!(dec(&src, w), naive(&src, w, false), "w {w} n {n}");
                assert_eq!(dec(&enc(&src, w), w), src, "w {w} n {n}");
            }
        }
    }

    #[test]
    fn a_mask_selects_its_planes_by_hand() {
        // Width 4, streams of 3: only streams 1 and 3 (mask 0b1010) are differenced.
        let src = [1, 2, 4, 10, 20, 40, 7, 7, 7, 200, 100, 0];
        let mut out = [0u8; 12];
        encode_planes(&src, 4, 0b1010, &mut out);
        assert_eq!(out, [1, 2, 4, 10, 10, 20, 7, 7, 7, 200, 156, 156]);
        let mut back = [0u8; 12];
        decode_planes(&out, 4, 0b1010, &mut back);
        assert_eq!(back, src);
        // Planes past 31 are never selected by a mask; 0 selects them all.
        assert!(!selects(u32::MAX, 32) && selects(u32::MAX, 31) && selects(ALL, 1000));
    }

    #[test]
    fn undone_in_place_by_counts_per_plane() {
        // Plane j undone j times (0 to 3), across SIMD vectors and the scalar tail.
        let n = 16 * 5 + 3;
        let src: Vec<u8> = (0..4 * n).map(|i| (i * 97 + i / 5) as u8).collect();
        let mut buf = src.clone();
        undo_in_place(&mut buf, 4, |j| j);
        let mut want = src.clone();
        for j in 0..4 {
            for _ in 0..j {
                want = naive_planes(&want, 4, 1 << j, false);
            }
        }
        assert_eq!(buf, want);
    }

    proptest! {
        #[test]
        fn masked_planes_match_the_naive_reference(
            src in proptest::collection::vec(any::<u8>(), 0..700),
            w in prop_oneof![Just(2usize), Just(4), Just(8), 1usize..40],
            mask in any::<u32>(),
        ) {
            let mut out = vec![0xAA; src.len()];
            encode_planes(&src, w, mask, &mut out);
            prop_assert_eq!(&out, &naive_planes(&src, w, mask, true));
            let mut back = vec![0xAA; src.len()];
            decode_planes(&out, w, mask, &mut back);
            prop_assert_eq!(&back, &src);
            decode_planes(&src, w, mask, &mut back);
            prop_assert_eq!(back, naive_planes(&src, w, mask, false));
        }

        #[test]
        fn decode_twice_is_decode_twice(
            src in proptest::collection::vec(any::<u8>(), 0..700),
            w in prop_oneof![Just(1usize), Just(2), Just(4), Just(8), 0usize..40],
        ) {
            let mut out = vec![0xAA; src.len()];
            decode_twice(&src, w, &mut out);
            prop_assert_eq!(out, naive(&naive(&src, w, false), w, false));
        }

        #[test]
        fn matches_the_naive_reference(
            src in proptest::collection::vec(any::<u8>(), 0..700),
            w in prop_oneof![Just(1usize), Just(2), Just(4), Just(8), Just(16), 0usize..40],
        ) {
            prop_assert_eq!(enc(&src, w), naive(&src, w, true));
            prop_assert_eq!(dec(&src, w), naive(&src, w, false));
            prop_assert_eq!(dec(&enc(&src, w), w), src.clone());
            prop_assert_eq!(enc(&dec(&src, w), w), src);
        }
    }
}
