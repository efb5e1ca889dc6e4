//! Delta coding of integer elements: each element minus the one before it.
//!
//! A block of `len` bytes holds `n = len / width` elements of `width` bytes followed by
//! `len % width` trailing bytes. Each element is read as an unsigned integer of `8 * width` bits
//! in the file's byte order (`big_endian`), `x[0], x[1], ..., x[n-1]`. Encoding writes, in the
//! same byte order and the same places,
//!
//! ```text
//! y[0] = x[0]
//! y[i] = (x[i] - x[i-1]) mod 2^(8 width)      for 1 <= i < n
//! ```
//!
//! and decoding is the prefix sum `x[0] = y[0]`, `x[i] = (x[i-1] + y[i]) mod 2^(8 width)`. The
//! trailing `len % width` bytes are copied unchanged both ways. The arithmetic is modular, so
//! every bit pattern round-trips exactly: signed integers (two's complement) and floats (their
//! bit patterns) are delta'd as the unsigned integers of the same bits. Each call is one block
//! and restarts: the first element of a block is stored as it is.
//!
//! Widths 1, 2, 4, 8 and 16 run as native integer arithmetic. Any other width `w >= 1` (a
//! 3-byte integer, a 12-byte record) is the same modular arithmetic on `8 w`-bit integers, done
//! byte by byte with borrows and carries from the least significant byte (byte 0 in little
//! endian, byte `w - 1` in big endian); width 0 copies the block unchanged.
//!
//! ```
//! use rawarray_serde::codec::delta;
//! // Three little-endian u16: 1000, 1003, 998.
//! let src = [0xE8, 0x03, 0xEB, 0x03, 0xE6, 0x03];
//! let mut enc = [0u8; 6];
//! delta::encode(&src, 2, false, &mut enc);
//! assert_eq!(enc, [0xE8, 0x03, 3, 0, 0xFB, 0xFF]); // 1000, +3, -5 (mod 2^16)
//! let mut dec = [0u8; 6];
//! delta::decode(&enc, 2, false, &mut dec);
//! assert_eq!(dec, src);
//! ```

use super::words::{self, Word};

/// Delta-encodes the elements of `src` (unsigned integers of `width` bytes in the given byte
/// order) into `dst`: `dst[0] = src[0]`, `dst[i] = src[i] - src[i-1]` (wrapping); the trailing
/// `src.len() % width` bytes are copied (see the [module docs](self)).
///
/// # Panics
///
/// If `dst.len() != src.len()` (a caller's bug, as in [`shuffle`](super::shuffle::shuffle)); never
/// for any content, width or length of `src`.
///
/// ```
/// use rawarray_serde::codec::delta;
/// let src = 0x0102_0304u32.to_be_bytes();            // one big-endian u32: kept as is
/// let mut out = [0u8; 6];
/// let mut with_tail = src.to_vec();
/// with_tail.extend_from_slice(&[9, 9]);               // two trailing bytes: copied
/// delta::encode(&with_tail, 4, true, &mut out);
/// assert_eq!(out, [1, 2, 3, 4, 9, 9]);
/// ```
pub fn encode(src: &[u8], width: usize, big_endian: bool, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "delta::encode: src and dst lengths differ"
    );
    match width {
        1 => encode_words::<u8>(src, big_endian, dst),
        2 => encode_words::<u16>(src, big_endian, dst),
        4 => encode_words::<u32>(src, big_endian, dst),
        8 => encode_words::<u64>(src, big_endian, dst),
        16 => encode_words::<u128>(src, big_endian, dst),
        0 => dst.copy_from_slice(src),
        _ => bytewise(src, width, big_endian, dst, Op::Encode),
    }
}

/// Undoes [`encode`]: the prefix sum (wrapping) of the elements of `src` into `dst`; the
/// trailing `src.len() % width` bytes are copied.
///
/// # Panics
///
/// If `dst.len() != src.len()`; never for any content, width or length of `src`.
///
/// ```
/// use rawarray_serde::codec::delta;
/// let enc = [5u8, 1, 1, 0xFF];                         // u8: 5, +1, +1, -1
/// let mut out = [0u8; 4];
/// delta::decode(&enc, 1, false, &mut out);
/// assert_eq!(out, [5, 6, 7, 6]);
/// ```
pub fn decode(src: &[u8], width: usize, big_endian: bool, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "delta::decode: src and dst lengths differ"
    );
    match width {
        1 => decode_bytes(src, dst),
        2 => decode_words::<u16, 8>(src, big_endian, dst),
        4 => decode_words::<u32, 4>(src, big_endian, dst),
        8 => decode_words::<u64, 2>(src, big_endian, dst),
        16 => decode_words::<u128, 1>(src, big_endian, dst),
        0 => dst.copy_from_slice(src),
        _ => bytewise(src, width, big_endian, dst, Op::Decode),
    }
}

fn encode_words<T: Word>(src: &[u8], big_endian: bool, dst: &mut [u8]) {
    let mut prev = T::ZERO;
    words::map::<T>(src, big_endian, dst, |x| {
        let d = x.wsub(prev);
        prev = x;
        d
    });
}

/// The prefix sum, `L` elements at a time: within a group, log2(L) shifted adds (which the
/// compiler turns into vector shifts and adds), then the running total of the groups before.
/// Only that total is carried from group to group, so the adds of a group run in parallel.
/// Measured on 128 KiB blocks: u64 and u128 (`L = 1`: whole-word loads) twice as fast as
/// [`words::map`], u16 and u32 somewhat faster; bytes no faster in groups of 16
/// ([`decode_bytes`]).
fn decode_words<T: Word, const L: usize>(src: &[u8], big_endian: bool, dst: &mut [u8])
where
    [T; L]: bytemuck::Pod,
{
    let step = L * T::BYTES;
    let grouped = src.len() / step * step;
    let mut acc = T::ZERO;
    for (s, d) in src[..grouped]
        .chunks_exact(step)
        .zip(dst[..grouped].chunks_exact_mut(step))
    {
        let mut x: [T; L] = bytemuck::pod_read_unaligned(s);
        for v in &mut x {
            *v = v.swap_if(big_endian);
        }
        let mut shift = 1;
        while shift < L {
            let y = x;
            for k in shift..L {
                x[k] = x[k].wadd(y[k - shift]);
            }
            shift <<= 1;
        }
        for v in &mut x {
            *v = v.wadd(acc);
        }
        acc = x[L - 1];
        for v in &mut x {
            *v = v.swap_if(big_endian);
        }
        d.copy_from_slice(bytemuck::bytes_of(&x));
    }
    words::map::<T>(&src[grouped..], big_endian, &mut dst[grouped..], |d| {
        acc = acc.wadd(d);
        acc
    });
}

/// The prefix sum of bytes: the plain loop, about a byte per cycle.
fn decode_bytes(src: &[u8], dst: &mut [u8]) {
    let mut acc = 0u8;
    for (o, &x) in dst.iter_mut().zip(src) {
        acc = acc.wrapping_add(x);
        *o = acc;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Encode,
    Decode,
}

/// Any width: `8 width`-bit modular arithmetic, byte by byte from the least significant byte.
fn bytewise(src: &[u8], width: usize, big_endian: bool, dst: &mut [u8], op: Op) {
    let whole = src.len() / width * width;
    dst[whole..].copy_from_slice(&src[whole..]);
    // The byte positions of an element, least significant first.
    let order = |k: usize| if big_endian { width - 1 - k } else { k };
    for i in (0..whole).step_by(width) {
        let mut carry = 0u16;
        for k in 0..width {
            let at = i + order(k);
            // Encode subtracts the previous input element, decode adds the previous output.
            let prev = match (i, op) {
                (0, _) => 0,
                (_, Op::Encode) => src[at - width],
                (_, Op::Decode) => dst[at - width],
            };
            let x = u16::from(src[at]);
            let (byte, next) = match op {
                Op::Encode => {
                    let sub = u16::from(prev) + carry;
                    ((x.wrapping_sub(sub)) as u8, u16::from(x < sub))
                }
                Op::Decode => {
                    let sum = x + u16::from(prev) + carry;
                    (sum as u8, sum >> 8)
                }
            };
            dst[at] = byte;
            carry = next;
        }
    }
}

/// The `delta` filter (id 3) as a [`ByteFilter`](super::ByteFilter): scalars of the element's
/// width (half an element for complex numbers), in the file's byte order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Delta;

impl super::ByteFilter for Delta {
    fn encode(&self, src: &[u8], el: &super::Elements, dst: &mut [u8]) {
        encode(src, el.scalar_width(), el.big_endian, dst);
    }
    fn decode(&self, src: &[u8], el: &super::Elements, dst: &mut [u8]) {
        decode(src, el.scalar_width(), el.big_endian, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive reference: each element read as a u128 (widths up to 16), most significant
    /// byte first.
    fn read_int(b: &[u8], big: bool) -> u128 {
        let mut v = 0u128;
        for k in 0..b.len() {
            let byte = if big { b[k] } else { b[b.len() - 1 - k] };
            v = (v << 8) | u128::from(byte);
        }
        v
    }

    fn write_int(mut v: u128, b: &mut [u8], big: bool) {
        let w = b.len();
        for k in 0..w {
            let at = if big { w - 1 - k } else { k };
            b[at] = v as u8;
            v >>= 8;
        }
    }

    fn modulus_mask(w: usize) -> u128 {
        if w >= 16 {
            u128::MAX
        } else {
            (1u128 << (8 * w)) - 1
        }
    }

    fn naive_encode(src: &[u8], w: usize, big: bool) -> Vec<u8> {
        let mut out = src.to_vec();
        if w == 0 {
            return out;
        }
        let n = src.len() / w;
        let mask = modulus_mask(w);
        for i in (1..n).rev() {
            let x = read_int(&src[i * w..(i + 1) * w], big);
            let p = read_int(&src[(i - 1) * w..i * w], big);
            write_int(x.wrapping_sub(p) & mask, &mut out[i * w..(i + 1) * w], big);
        }
        out
    }

    fn naive_decode(src: &[u8], w: usize, big: bool) -> Vec<u8> {
        let mut out = src.to_vec();
        if w == 0 {
            return out;
        }
        let n = src.len() / w;
        let mask = modulus_mask(w);
        let mut acc = 0u128;
        for i in 0..n {
            acc = acc.wrapping_add(read_int(&src[i * w..(i + 1) * w], big)) & mask;
            write_int(acc, &mut out[i * w..(i + 1) * w], big);
        }
        out
    }

    fn enc(src: &[u8], w: usize, big: bool) -> Vec<u8> {
        let mut out = vec![0xAA; src.len()];
        encode(src, w, big, &mut out);
        out
    }

    fn dec(src: &[u8], w: usize, big: bool) -> Vec<u8> {
        let mut out = vec![0xAA; src.len()];
        decode(src, w, big, &mut out);
        out
    }

    #[test]
    fn hand_computed_bytes() {
        // u8: 10, 7, 200, 3 -> 10, -3, +193, -197 (mod 256).
        assert_eq!(enc(&[10, 7, 200, 3], 1, false), [10, 253, 193, 59]);
        // Little-endian u16: 0x00FF, 0x0100 (+1, borrowing across the byte), 0x0000 (-0x100).
        assert_eq!(
            enc(&[0xFF, 0x00, 0x00, 0x01, 0x00, 0x00], 2, false),
            [0xFF, 0x00, 0x01, 0x00, 0x00, 0xFF]
        );
        // The same values big-endian: the bytes of each element reversed.
        assert_eq!(
            enc(&[0x00, 0xFF, 0x01, 0x00, 0x00, 0x00], 2, true),
            [0x00, 0xFF, 0x00, 0x01, 0xFF, 0x00]
        );
        // u32 LE: 1, 0 -> 1, 0xFFFFFFFF; a 3-byte tail is copied.
        assert_eq!(
            enc(&[1, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9], 4, false),
            [1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 7, 8, 9]
        );
        // f32 bit patterns: 1.0 (0x3F800000) then 2.0 (0x40000000): +0x00800000.
        let floats: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(enc(&floats, 4, false), [0, 0, 0x80, 0x3F, 0, 0, 0x80, 0x00]);
        // u64 BE: 5, 3 -> 5, -2.
        let mut b = vec![0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 3];
        let mut want = b.clone();
        want[8..].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]);
        assert_eq!(enc(&b, 8, true), want);
        // u128 LE: 0, 1 -> 0, 1; then 0 -> -1: all ones.
        b = vec![0; 48];
        b[16] = 1;
        let mut want = vec![0u8; 48];
        want[16] = 1;
        want[32..].fill(0xFF);
        assert_eq!(enc(&b, 16, false), want);
        // A 3-byte width, little endian: 0x0000FF, 0x010000 (+0x00FF01), big endian likewise.
        assert_eq!(
            enc(&[0xFF, 0, 0, 0, 0, 1], 3, false),
            [0xFF, 0, 0, 0x01, 0xFF, 0x00]
        );
        assert_eq!(
            enc(&[0, 0, 0xFF, 1, 0, 0], 3, true),
            [0, 0, 0xFF, 0x00, 0xFF, 0x01]
        );
        // Decode is the prefix sum.
        assert_eq!(dec(&[10, 253, 193, 59], 1, false), [10, 7, 200, 3]);
        assert_eq!(
            dec(&[0xFF, 0, 0, 0x01, 0xFF, 0x00], 3, false),
            [0xFF, 0, 0, 0, 0, 1]
        );
    }

    #[test]
    fn degenerate_lengths_and_widths_copy() {
        for w in [0usize, 1, 2, 3, 4, 8, 16, 17, 100] {
            for len in 0..w.max(1) {
                let src: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
                // Fewer bytes than one element, or width 0: nothing to subtract.
                assert_eq!(enc(&src, w, false), src, "w {w} len {len}");
                assert_eq!(dec(&src, w, true), src, "w {w} len {len}");
            }
        }
        // One element is kept as it is.
        assert_eq!(enc(&[1, 2, 3, 4], 4, true), [1, 2, 3, 4]);
    }

    #[test]
    fn a_new_call_restarts() {
        let src: Vec<u8> = (0..64u8).collect();
        let whole = enc(&src, 4, false);
        let halves = [enc(&src[..32], 4, false), enc(&src[32..], 4, false)].concat();
        assert_eq!(halves[..32], whole[..32]);
        assert_eq!(
            halves[32..36],
            src[32..36],
            "the second block's first element is kept"
        );
        assert_ne!(halves, whole);
    }

    #[test]
    fn unaligned_buffers_give_the_same_bytes() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7919 % 251) as u8).collect();
        for w in [2usize, 4, 8, 16] {
            for big in [false, true] {
                let want = naive_encode(&data[..999], w, big);
                for off in 0..3 {
                    let mut src = vec![0u8; 1003];
                    src[off..off + 999].copy_from_slice(&data[..999]);
                    let mut dst = vec![0u8; 1003];
                    encode(
                        &src[off..off + 999],
                        w,
                        big,
                        &mut dst[3 - off..3 - off + 999],
                    );
                    assert_eq!(dst[3 - off..3 - off + 999], want[..], "w {w} off {off}");
                }
            }
        }
    }

    fn widths() -> impl Strategy<Value = usize> {
        prop_oneof![
            Just(1usize),
            Just(2),
            Just(4),
            Just(8),
            Just(16),
            0usize..24
        ]
    }

    proptest! {
        #[test]
        fn matches_the_naive_reference(
            src in proptest::collection::vec(any::<u8>(), 0..600),
            w in widths(),
            big in any::<bool>(),
        ) {
            // Widths over 16 have no u128 reference: they run the byte-wise path, which the
            // next test holds to the native one on widths 1 to 16, and must round-trip.
            if w <= 16 {
                prop_assert_eq!(enc(&src, w, big), naive_encode(&src, w, big));
                prop_assert_eq!(dec(&src, w, big), naive_decode(&src, w, big));
            }
            prop_assert_eq!(dec(&enc(&src, w, big), w, big), src.clone());
            prop_assert_eq!(enc(&dec(&src, w, big), w, big), src);
        }

        #[test]
        fn the_bytewise_path_equals_the_native_one(
            src in proptest::collection::vec(any::<u8>(), 0..600),
            w in prop_oneof![Just(1usize), Just(2), Just(4), Just(8), Just(16)],
            big in any::<bool>(),
        ) {
            let mut a = vec![0u8; src.len()];
            bytewise(&src, w, big, &mut a, Op::Encode);
            prop_assert_eq!(&a, &enc(&src, w, big));
            bytewise(&src, w, big, &mut a, Op::Decode);
            prop_assert_eq!(&a, &dec(&src, w, big));
        }
    }
}
