//! Bit rounding (lossy): IEEE floats rounded to `keepbits` explicit mantissa bits, round to
//! nearest, ties to even, as numcodecs' `BitRound` codec, so that the dropped low bits are zeros
//! that a later filter and codec shrink to almost nothing.
//!
//! A float of `N` bits has a sign bit, exponent bits and `m` mantissa bits ([`FloatFormat`]:
//! f16 `m = 10`, bfloat16 `m = 7`, f32 `m = 23`, f64 `m = 52`). Each whole element of the block
//! (in the file's byte order, `big_endian`) is read as an `N`-bit unsigned integer `u`; with
//! `s = m - keepbits` bits to drop, `sign = u & 2^(N-1)`, `mag = u - sign` and `inf` the bits of
//! infinity (exponent all ones, mantissa zero):
//!
//! ```text
//! if keepbits >= m or mag >= inf:  out = u                        (identity; inf and NaN)
//! else:
//!     r = (mag + ((mag >> s) & 1) + 2^(s-1) - 1) & !(2^s - 1)     (nearest, ties to even)
//!     if r >= inf:  r = mag & !(2^s - 1)                          (never round to infinity)
//!     out = sign | r
//! ```
//!
//! The rounding is on the magnitude's bits, so a carry out of the mantissa moves the value to
//! the next binade (or a subnormal to the smallest normal), which is the correctly rounded
//! result. A tie goes to the neighbour whose lowest kept bit (bit `s`) is 0: for `keepbits >= 1`
//! that is the even kept mantissa, IEEE's ties-to-even; for `keepbits = 0` the lowest kept bit
//! is the exponent's lowest bit, so a tie between two powers of two goes to the one with the
//! even biased exponent (f32: 1.5 to 2.0, 3.0 to 2.0; a tie between 0 and the smallest normal
//! goes to 0), as numcodecs does. The sign is kept, so `-0.0` stays `-0.0` and nothing changes sign. The trailing
//! `len % (N / 8)` bytes of a block are copied unchanged. Decoding is the identity ([`decode`]):
//! the rounded floats are ordinary floats.
//!
//! # Error
//!
//! For every finite `x` and its result `r` (`N_min` is the smallest positive normal number of
//! the format, 2^-14 for f16, 2^-126 for bfloat16 and f32, 2^-1022 for f64):
//!
//! ```text
//! |r - x| <= 2^-(keepbits+1) * max(|x|, N_min)
//! ```
//!
//! - Normal `x` (`|x| >= N_min`): relative error `|r - x| / |x| <= 2^-(keepbits+1)`
//!   ([`max_relative_error`]), half a unit in the last kept place of `x`'s binade, and strictly
//!   less than it. This holds for the values that are truncated instead of rounded up to
//!   infinity as well (those within half a kept unit of the binade's top, `2^(emax+1)`): their
//!   error, up to `2^(emax-keepbits) - 2^(emax-m)`, is at most `(2^-keepbits - 2^-m) /
//!   (2 - 2^-m) < 2^-(keepbits+1)` relative to `x >= 2^emax (2 - 2^-keepbits)`.
//! - Subnormal `x`: absolute error `<= 2^-(keepbits+1) * N_min`, half the kept spacing of the
//!   subnormal range, `2^(emin-keepbits)`; relative to `x` it is unbounded (a subnormal can
//!   round to zero).
//! - `keepbits >= m`: no error; infinities and NaNs (payload and sign included) are unchanged.
//!
//! # Compared with numcodecs
//!
//! numcodecs' `BitRound.encode` computes `b += ((b >> maskbits) & 1) + (1 << (maskbits-1)) - 1;
//! b &= mask` on the signed integer view of the floats (two's complement wrapping, the same bits
//! as the unsigned arithmetic above on the magnitude, since the sum never reaches the sign bit
//! for finite inputs), so for every finite input whose numcodecs result is finite, the result
//! here is bit for bit numcodecs'. They differ only where numcodecs overflows: finite values
//! rounding up to the all-ones exponent (numcodecs: infinity; here: truncated, still finite) and
//! NaN or infinity inputs (numcodecs: rounded bits, a NaN can become an infinity or `±0`; here:
//! unchanged). numcodecs has no bfloat16; the same arithmetic with `m = 7` is used.
//!
//! Complex numbers are pairs of floats of one format: round them as floats (`re, im` each with
//! the same `keepbits`, the bound holding for each part).
//!
//! ```
//! use rawarray_serde::codec::bitround::{self, FloatFormat};
//! let x = [1.0f32 + 3.0 * f32::EPSILON, std::f32::consts::PI];
//! let src: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut out = vec![0u8; src.len()];
//! bitround::encode(&src, FloatFormat::F32, 8, false, &mut out);
//! let r: Vec<f32> = out.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
//! assert_eq!(r, [1.0, 3.140625]);                          // pi to 8 mantissa bits
//! let bound = bitround::max_relative_error(FloatFormat::F32, 8);
//! assert!(((r[1] - x[1]) / x[1]).abs() as f64 <= bound);
//! ```

use super::words;

/// The floating-point formats bit rounding knows: their widths and mantissa bits.
///
/// ```
/// use rawarray_serde::codec::bitround::FloatFormat;
/// assert_eq!(FloatFormat::BF16.mantissa_bits(), 7);
/// assert_eq!(FloatFormat::F64.bytes(), 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatFormat {
    /// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits.
    F16,
    /// bfloat16: 1 sign, 8 exponent, 7 mantissa bits (the top half of an f32).
    BF16,
    /// IEEE binary32: 1 sign, 8 exponent, 23 mantissa bits.
    F32,
    /// IEEE binary64: 1 sign, 11 exponent, 52 mantissa bits.
    F64,
}

impl FloatFormat {
    /// The explicit mantissa bits: 10, 7, 23, 52.
    ///
    /// ```
    /// use rawarray_serde::codec::bitround::FloatFormat;
    /// assert_eq!(FloatFormat::F32.mantissa_bits(), 23);
    /// ```
    pub fn mantissa_bits(self) -> u32 {
        match self {
            FloatFormat::F16 => 10,
            FloatFormat::BF16 => 7,
            FloatFormat::F32 => 23,
            FloatFormat::F64 => 52,
        }
    }

    /// Bytes per float: 2, 2, 4, 8.
    ///
    /// ```
    /// use rawarray_serde::codec::bitround::FloatFormat;
    /// assert_eq!(FloatFormat::F16.bytes(), 2);
    /// ```
    pub fn bytes(self) -> usize {
        match self {
            FloatFormat::F16 | FloatFormat::BF16 => 2,
            FloatFormat::F32 => 4,
            FloatFormat::F64 => 8,
        }
    }

    /// The smallest positive normal number, `N_min` of the error bound: 2^-14, 2^-126,
    /// 2^-126, 2^-1022.
    ///
    /// ```
    /// use rawarray_serde::codec::bitround::FloatFormat;
    /// assert_eq!(FloatFormat::F32.min_positive_normal(), f32::MIN_POSITIVE as f64);
    /// ```
    pub fn min_positive_normal(self) -> f64 {
        match self {
            FloatFormat::F16 => 2f64.powi(-14),
            FloatFormat::BF16 | FloatFormat::F32 => f64::from(f32::MIN_POSITIVE),
            FloatFormat::F64 => f64::MIN_POSITIVE,
        }
    }
}

/// Rounds each float of `src` (in the given byte order) to `keepbits` mantissa bits into `dst`;
/// the trailing partial element is copied (see the [module docs](self) for the exact rule and
/// error). `keepbits >= format.mantissa_bits()` copies `src`.
///
/// # Panics
///
/// If `dst.len() != src.len()` (a caller's bug, as in [`shuffle`](super::shuffle::shuffle)); never
/// for any content or length of `src`, or any `keepbits`.
///
/// ```
/// use rawarray_serde::codec::bitround::{self, FloatFormat};
/// // Big-endian f64 1.5 to 0 mantissa bits: a tie, to the even exponent: 2.0.
/// let mut out = [0u8; 8];
/// bitround::encode(&1.5f64.to_be_bytes(), FloatFormat::F64, 0, true, &mut out);
/// assert_eq!(f64::from_be_bytes(out), 2.0);
/// ```
pub fn encode(src: &[u8], format: FloatFormat, keepbits: u32, big_endian: bool, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "bitround::encode: src and dst lengths differ"
    );
    let m = format.mantissa_bits();
    if keepbits >= m {
        dst.copy_from_slice(src);
        return;
    }
    let drop = m - keepbits;
    match format {
        FloatFormat::F16 | FloatFormat::BF16 => round16(src, m, drop, big_endian, dst),
        FloatFormat::F32 => round32(src, m, drop, big_endian, dst),
        FloatFormat::F64 => round64(src, m, drop, big_endian, dst),
    }
}

/// The inverse of [`encode`], which is the identity: rounded floats are plain floats. Copies
/// `src` into `dst`, for a codec chain's symmetry.
///
/// # Panics
///
/// If `dst.len() != src.len()`.
///
/// ```
/// use rawarray_serde::codec::bitround;
/// let mut out = [0u8; 3];
/// bitround::decode(&[1, 2, 3], &mut out);
/// assert_eq!(out, [1, 2, 3]);
/// ```
pub fn decode(src: &[u8], dst: &mut [u8]) {
    dst.copy_from_slice(src);
}

/// The largest relative error `|r - x| / |x|` of a normal `x` rounded to `keepbits` mantissa
/// bits: `2^-(keepbits+1)`, or 0 where `keepbits >= format.mantissa_bits()` (see the
/// [module docs](self): subnormals have the absolute bound `max_relative_error * N_min`).
///
/// ```
/// use rawarray_serde::codec::bitround::{max_relative_error, FloatFormat};
/// assert_eq!(max_relative_error(FloatFormat::F32, 9), 1.0 / 1024.0);
/// assert_eq!(max_relative_error(FloatFormat::F16, 10), 0.0);
/// ```
pub fn max_relative_error(format: FloatFormat, keepbits: u32) -> f64 {
    if keepbits >= format.mantissa_bits() {
        0.0
    } else {
        // keepbits < 52 here: an exact power of two.
        0.5f64.powi(keepbits as i32 + 1)
    }
}

/// The module docs' rule on words of `$t`, for `m` mantissa bits of which `drop` (1 to `m`)
/// are dropped. A branch-free body over whole words, which the compiler vectorises.
macro_rules! rounder {
    ($name:ident, $t:ty) => {
        fn $name(src: &[u8], m: u32, drop: u32, big_endian: bool, dst: &mut [u8]) {
            let sign: $t = 1 << (<$t>::BITS - 1);
            // Exponent all ones, mantissa zero: infinity's magnitude.
            let inf: $t = (sign - 1) & !((1 << m) - 1);
            let low: $t = (1 << drop) - 1;
            let half_minus_one: $t = (1 << (drop - 1)) - 1;
            words::map::<$t>(src, big_endian, dst, |u| {
                let mag = u & !sign;
                // No overflow: mag < inf < 2^(N-1) - 2^m, and the add is under 2^(m-1).
                let up = (mag + ((mag >> drop) & 1) + half_minus_one) & !low;
                let r = if up >= inf { mag & !low } else { up };
                if mag >= inf {
                    u
                } else {
                    (u & sign) | r
                }
            });
        }
    };
}

rounder!(round16, u16);
rounder!(round32, u32);
rounder!(round64, u64);

/// The float format of elements `el`, if they are floats this filter takes: float16, 32, 64,
/// bfloat16, and complex numbers of those (rounded part by part).
pub fn format_of(eltype: crate::ElType, elbyte: u64) -> Option<FloatFormat> {
    use crate::ElType;
    match (eltype, elbyte) {
        (ElType::Float, 2) | (ElType::Complex, 4) => Some(FloatFormat::F16),
        (ElType::Float, 4) | (ElType::Complex, 8) => Some(FloatFormat::F32),
        (ElType::Float, 8) | (ElType::Complex, 16) => Some(FloatFormat::F64),
        (ElType::BFloat16, 2) => Some(FloatFormat::BF16),
        _ => None,
    }
}

/// The `bitround` filter (id 5) as a [`ByteFilter`](super::ByteFilter): keeps `keepbits`
/// mantissa bits of each float. The config decoder and the write options check the elements
/// and `keepbits` first; a block of elements this filter does not take is copied.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitRound {
    /// Mantissa bits kept.
    pub keepbits: u32,
}

impl super::ByteFilter for BitRound {
    fn encode(&self, src: &[u8], el: &super::Elements, dst: &mut [u8]) {
        match format_of(el.eltype, el.elbyte as u64) {
            Some(f) => encode(src, f, self.keepbits, el.big_endian, dst),
            None => dst.copy_from_slice(src),
        }
    }
    fn decode(&self, src: &[u8], _el: &super::Elements, dst: &mut [u8]) {
        decode(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};
    use proptest::prelude::*;

    const FORMATS: [FloatFormat; 4] = [
        FloatFormat::F16,
        FloatFormat::BF16,
        FloatFormat::F32,
        FloatFormat::F64,
    ];

    fn nbits(f: FloatFormat) -> u32 {
        8 * f.bytes() as u32
    }

    /// Rounds one float given as its bits (little-endian through the public function).
    fn round_bits(f: FloatFormat, bits: u64, keepbits: u32) -> u64 {
        let w = f.bytes();
        let src = &bits.to_le_bytes()[..w];
        let mut out = [0u8; 8];
        encode(src, f, keepbits, false, &mut out[..w]);
        u64::from_le_bytes(out)
    }

    /// The float's value as an f64 (exact for all four formats).
    fn value(f: FloatFormat, bits: u64) -> f64 {
        match f {
            FloatFormat::F16 => f16::from_bits(bits as u16).to_f64(),
            FloatFormat::BF16 => bf16::from_bits(bits as u16).to_f64(),
            FloatFormat::F32 => f64::from(f32::from_bits(bits as u32)),
            FloatFormat::F64 => f64::from_bits(bits),
        }
    }

    /// The bits of an f64 that the format holds exactly.
    fn bits_of(f: FloatFormat, v: f64) -> u64 {
        let b = match f {
            FloatFormat::F16 => u64::from(f16::from_f64(v).to_bits()),
            FloatFormat::BF16 => u64::from(bf16::from_f64(v).to_bits()),
            FloatFormat::F32 => u64::from((v as f32).to_bits()),
            FloatFormat::F64 => v.to_bits(),
        };
        assert_eq!(value(f, b), v, "{v} is not exact in {f:?}");
        b
    }

    fn pow2(p: i32) -> f64 {
        if p >= -1022 {
            f64::from_bits(((p + 1023) as u64) << 52)
        } else {
            f64::from_bits(1u64 << (p + 1074))
        }
    }

    fn max_finite(f: FloatFormat) -> f64 {
        match f {
            FloatFormat::F16 => f16::MAX.to_f64(),
            FloatFormat::BF16 => bf16::MAX.to_f64(),
            FloatFormat::F32 => f64::from(f32::MAX),
            FloatFormat::F64 => f64::MAX,
        }
    }

    /// The reference, in values rather than bits: `x` scaled by its binade's kept quantum is
    /// rounded half to even by `f64::round_ties_even` (for keepbits 0, a tie goes to the power
    /// of two with the even biased exponent), scaled back, and truncated instead where that
    /// passes the format's largest finite value. Non-finite inputs are unchanged.
    fn reference(f: FloatFormat, bits: u64, keepbits: u32) -> u64 {
        let x = value(f, bits);
        let m = f.mantissa_bits();
        if !x.is_finite() || keepbits >= m {
            return bits;
        }
        if x == 0.0 {
            return bits;
        }
        let emin = match f {
            FloatFormat::F16 => -14,
            FloatFormat::BF16 | FloatFormat::F32 => -126,
            FloatFormat::F64 => -1022,
        };
        // x's binade, 2^e <= |x| < 2^(e+1), or the subnormal range's scale.
        let e = ((((x.to_bits() >> 52) & 0x7FF) as i32) - 1023).max(emin);
        let q = pow2(e - keepbits as i32);
        let y = x / q;
        let bias = 1 - emin;
        let mut r = if keepbits == 0 && y.abs().fract() == 0.5 {
            // Below: 2^e (biased exponent e + bias), or 0 for a subnormal x (exponent 0).
            let below = if x.abs() < pow2(emin) { 0 } else { e + bias };
            if below % 2 == 0 {
                y.trunc()
            } else {
                y.trunc() + y.signum()
            }
        } else {
            y.round_ties_even()
        } * q;
        if r.abs() > max_finite(f) {
            r = y.trunc() * q;
        }
        // A tiny negative value rounding to zero keeps its sign.
        if r == 0.0 {
            r = 0.0f64.copysign(x);
        }
        bits_of(f, r)
    }

    /// numcodecs' arithmetic, as `BitRound.encode` does it on the signed integer view.
    fn numcodecs(f: FloatFormat, bits: u64, keepbits: u32) -> u64 {
        let n = nbits(f);
        let maskbits = f.mantissa_bits() - keepbits;
        // Sign-extend the N-bit pattern to i64, compute as numpy does in intN (wrapping).
        let b = ((bits << (64 - n)) as i64) >> (64 - n);
        let all_set: i64 = -1;
        let mask = (all_set >> maskbits) << maskbits;
        let half_quantum1: i64 = (1 << (maskbits - 1)) - 1;
        let b = b.wrapping_add(((b >> maskbits) & 1) + half_quantum1);
        let b = b & mask;
        (b as u64) & (u64::MAX >> (64 - n))
    }

    /// Checks the module docs' bound exactly, in integer units of `x`'s binade.
    fn check_bound(f: FloatFormat, x: u64, r: u64, keepbits: u32) -> Result<(), String> {
        let m = f.mantissa_bits();
        let n = nbits(f);
        let exp_of = |b: u64| (b >> m) & ((1u64 << (n - 1 - m)) - 1);
        let all_ones = (1u64 << (n - 1 - m)) - 1;
        let (ex, er) = (exp_of(x), exp_of(r));
        if ex == all_ones {
            return if x == r {
                Ok(())
            } else {
                Err(format!("non-finite {x:#x} changed to {r:#x}"))
            };
        }
        if er == all_ones {
            return Err(format!("finite {x:#x} became non-finite {r:#x}"));
        }
        if (x >> (n - 1)) != (r >> (n - 1)) {
            return Err(format!("sign of {x:#x} changed: {r:#x}"));
        }
        let sig = |b: u64, e: u64| {
            let man = b & ((1u64 << m) - 1);
            u128::from(if e == 0 { man } else { man | (1 << m) })
        };
        let scale = |e: u64| e.max(1);
        let (sx, sr) = (scale(ex), scale(er));
        if sr < sx || sr > sx + 1 {
            return Err(format!("{x:#x} moved binade to {r:#x}"));
        }
        let xv = sig(x, ex);
        let rv = sig(r, er) << (sr - sx);
        let d = xv.abs_diff(rv);
        if d << (keepbits + 1) > xv.max(1u128 << m) {
            return Err(format!(
                "{x:#x} -> {r:#x}: error {d} units > 2^-{} of max(x, N_min)",
                keepbits + 1
            ));
        }
        if keepbits >= m && x != r {
            return Err(format!("keepbits {keepbits} >= {m} changed {x:#x}"));
        }
        Ok(())
    }

    /// Adversarial bit patterns of a format: zeros, subnormals, the normal range's ends,
    /// infinities, NaNs with payloads, ties and near-ties around each keepbits.
    fn adversarial(f: FloatFormat, keepbits: u32) -> Vec<u64> {
        let m = f.mantissa_bits();
        let n = nbits(f);
        let sign = 1u64 << (n - 1);
        let inf = (sign - 1) & !((1u64 << m) - 1);
        let man = (1u64 << m) - 1;
        let mut v = vec![
            0,
            1,
            2,
            3,
            man, // largest subnormal
            man - 1,
            1 << m,         // smallest normal
            (1 << m) | man, // top of the first binade
            inf - 1,        // largest finite
            inf - 2,
            inf - (1 << (m / 2)),
            inf,                  // infinity
            inf | 1,              // signalling NaN, payload 1
            inf | (1 << (m - 1)), // quiet NaN
            inf | man,            // all-ones NaN
            inf | 0x5,
        ];
        if keepbits < m {
            let s = m - keepbits;
            let half = 1u64 << (s - 1);
            for base in [1u64 << m, 5u64 << m, inf - (1 << m), 0] {
                for kept in [0u64, 1, 2, 3] {
                    let b = base | ((kept << s) & man);
                    v.extend([b | half, (b | half) - 1, b | half | 1, b | (half - 1)]);
                    v.push(b | man);
                }
            }
        }
        let with_sign: Vec<u64> = v.iter().map(|b| b | sign).collect();
        v.extend(with_sign);
        v.retain(|&b| b < (1u64 << (n - 1)) << 1 || n == 64);
        v
    }

    #[test]
    fn hand_computed_f32() {
        let r = |x: f32, k: u32| {
            f32::from_bits(round_bits(FloatFormat::F32, u64::from(x.to_bits()), k) as u32)
        };
        let e = f32::EPSILON; // 2^-23
                              // Dropping 2 bits (keepbits 21): 1 + 3e rounds up to 1 + 4e.
        assert_eq!(r(1.0 + 3.0 * e, 21), 1.0 + 4.0 * e);
        // Ties: 1 + 2e to 1 (kept lsb 0), 1 + 6e to 1 + 8e (kept lsb 1).
        assert_eq!(r(1.0 + 2.0 * e, 21), 1.0);
        assert_eq!(r(1.0 + 6.0 * e, 21), 1.0 + 8.0 * e);
        // Just under a tie rounds down, just over rounds up.
        assert_eq!(r(1.0 + 5.0 * e, 21), 1.0 + 4.0 * e);
        assert_eq!(r(1.0 + 7.0 * e, 21), 1.0 + 8.0 * e);
        // keepbits 0: 1.5 (odd exponent, tie) to 2, 3.0 (even exponent, tie) to 2, 1.25 to 1.
        assert_eq!(r(1.5, 0), 2.0);
        assert_eq!(r(3.0, 0), 2.0);
        assert_eq!(r(1.25, 0), 1.0);
        assert_eq!(r(-1.75, 0), -2.0);
        // A carry out of the mantissa: 1.99999 to 2.
        assert_eq!(r(2.0 - e, 5), 2.0);
        // The sign stays: -0.0 stays negative zero.
        assert_eq!(r(-0.0, 3).to_bits(), (-0.0f32).to_bits());
        // The largest finite value would round up to infinity: truncated instead.
        assert_eq!(r(f32::MAX, 10).to_bits(), 0x7F7F_E000);
        assert_eq!(r(-f32::MAX, 0).to_bits(), 0xFF00_0000);
        // Subnormals round within their spacing; the largest rounds up to the smallest normal.
        let big_sub = f32::from_bits(0x007F_FFFF);
        assert_eq!(r(big_sub, 4), f32::MIN_POSITIVE);
        assert_eq!(r(f32::from_bits(1), 0), 0.0);
        // Identity at 23 and beyond.
        assert_eq!(r(std::f32::consts::PI, 23), std::f32::consts::PI);
        assert_eq!(r(std::f32::consts::PI, 99), std::f32::consts::PI);
    }

    #[test]
    fn hand_computed_other_formats() {
        // f16: 1 + 2^-10 * 0b11 to keepbits 8: drop 2 bits 11 -> round up to 1 + 2^-8.
        let b = round_bits(FloatFormat::F16, 0x3C03, 8);
        assert_eq!(b, 0x3C04);
        // f16 keepbits 0, ties: 3072 (0x6A00, biased exponent 26, even) down to 2048, 6144
        // (exponent 27, odd) up to 8192; half the smallest normal (0x0200) down to 0.
        assert_eq!(round_bits(FloatFormat::F16, 0x6A00, 0), 0x6800);
        assert_eq!(round_bits(FloatFormat::F16, 0x6E00, 0), 0x7000);
        assert_eq!(round_bits(FloatFormat::F16, 0x0200, 0), 0);
        assert_eq!(round_bits(FloatFormat::F16, 0x8201, 0), 0x8400);
        // f16 max finite 65504 (0x7BFF) to 3 bits: truncated, not infinity.
        assert_eq!(round_bits(FloatFormat::F16, 0x7BFF, 3), 0x7B80);
        // bf16 pi (0x4049 = 3.140625) to 2 bits: 0b1001001 -> 0b10 01001: dropped 01001 < half.
        assert_eq!(round_bits(FloatFormat::BF16, 0x4049, 2), 0x4040);
        // f64 NaN payloads and -inf unchanged.
        for nan in [
            0x7FF0_0000_0000_0001u64,
            0xFFF8_0000_DEAD_BEEF,
            0xFFF0_0000_0000_0000,
        ] {
            assert_eq!(round_bits(FloatFormat::F64, nan, 0), nan);
        }
        // Big endian: the same values, the bytes reversed.
        let x = 0.1f64;
        let mut le = [0u8; 8];
        let mut be = [0u8; 8];
        encode(&x.to_le_bytes(), FloatFormat::F64, 12, false, &mut le);
        encode(&x.to_be_bytes(), FloatFormat::F64, 12, true, &mut be);
        assert_eq!(f64::from_le_bytes(le), f64::from_be_bytes(be));
        // 0.1 = 1.6 * 2^-4, and 0.6 * 2^12 = 2457.6 rounds to 2458: (1 + 2458/4096) / 16.
        assert_eq!(f64::from_le_bytes(le), (1.0 + 2458.0 / 4096.0) / 16.0);
        assert_eq!(f64::from_le_bytes(le), 0.100006103515625);
    }

    #[test]
    fn trailing_bytes_and_short_blocks_are_copied() {
        let src = [0x00, 0x00, 0xC0, 0x3F, 0xAB, 0xCD]; // f32 1.5, then two stray bytes
        let mut out = [0u8; 6];
        encode(&src, FloatFormat::F32, 0, false, &mut out);
        assert_eq!(out, [0x00, 0x00, 0x00, 0x40, 0xAB, 0xCD]);
        let mut one = [0u8; 1];
        encode(&[0x77], FloatFormat::F64, 0, true, &mut one);
        assert_eq!(one, [0x77]);
        encode(&[], FloatFormat::F16, 0, true, &mut []);
    }

    #[test]
    fn adversarial_values_keep_the_bound_and_match_the_reference() {
        for f in FORMATS {
            for keepbits in 0..=f.mantissa_bits() + 1 {
                for x in adversarial(f, keepbits) {
                    let r = round_bits(f, x, keepbits);
                    check_bound(f, x, r, keepbits)
                        .unwrap_or_else(|e| panic!("{f:?} keepbits {keepbits}: {e}"));
                    assert_eq!(
                        r,
                        reference(f, x, keepbits),
                        "{f:?} keepbits {keepbits} x {x:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_bound_is_tight() {
        // A tie rounding up near the bottom of a binade: half a unit, relative more than half
        // the bound.
        for f in FORMATS {
            for k in 0..f.mantissa_bits() {
                let s = f.mantissa_bits() - k;
                let x = bits_of(f, 1.0) | (1 << (s - 1)) | (1 << s); // kept lsb 1: rounds up
                let r = round_bits(f, x, k);
                let (xv, rv) = (value(f, x), value(f, r));
                let rel = (rv - xv).abs() / xv;
                let bound = max_relative_error(f, k);
                assert!(
                    rel <= bound && rel >= bound / (1.0 + bound) / 2.0,
                    "{f:?} {k} {rel}"
                );
            }
        }
    }

    #[test]
    fn equals_numcodecs_where_numcodecs_stays_finite() {
        for f in FORMATS {
            let n = nbits(f);
            let m = f.mantissa_bits();
            let exp_all = ((1u64 << (n - 1)) - 1) & !((1u64 << m) - 1);
            for keepbits in 0..m {
                for x in adversarial(f, keepbits) {
                    if x & exp_all == exp_all {
                        continue; // numcodecs rounds NaN and infinity bits
                    }
                    let theirs = numcodecs(f, x, keepbits);
                    if theirs & exp_all == exp_all {
                        continue; // numcodecs overflowed to infinity
                    }
                    assert_eq!(
                        round_bits(f, x, keepbits),
                        theirs,
                        "{f:?} {keepbits} {x:#x}"
                    );
                }
            }
        }
    }

    fn any_bits(f: FloatFormat) -> BoxedStrategy<u64> {
        let n = nbits(f);
        prop_oneof![
            // Uniform bit patterns: mostly huge and tiny magnitudes, NaNs.
            any::<u64>().prop_map(move |b| if n == 64 { b } else { b & ((1 << n) - 1) }),
            // Values of ordinary size.
            (-1e4f64..1e4).prop_map(move |v| match f {
                FloatFormat::F16 => u64::from(f16::from_f64(v).to_bits()),
                FloatFormat::BF16 => u64::from(bf16::from_f64(v).to_bits()),
                FloatFormat::F32 => u64::from((v as f32).to_bits()),
                FloatFormat::F64 => v.to_bits(),
            }),
        ]
        .boxed()
    }

    proptest! {
        #[test]
        fn random_values_keep_the_bound_and_match_both_references(
            (fi, xs) in (0usize..4).prop_flat_map(|fi| {
                (Just(fi), proptest::collection::vec(any_bits(FORMATS[fi]), 1..64))
            }),
            keepbits in 0u32..60,
        ) {
            let f = FORMATS[fi];
            let m = f.mantissa_bits();
            let n = nbits(f);
            let exp_all = ((1u64 << (n - 1)) - 1) & !((1u64 << m) - 1);
            for &x in &xs {
                let r = round_bits(f, x, keepbits);
                prop_assert!(check_bound(f, x, r, keepbits).is_ok(), "{:?}", check_bound(f, x, r, keepbits));
                prop_assert_eq!(r, reference(f, x, keepbits));
                // Rounding again changes nothing.
                prop_assert_eq!(round_bits(f, r, keepbits), r);
                if keepbits < m && x & exp_all != exp_all {
                    let theirs = numcodecs(f, x, keepbits);
                    if theirs & exp_all != exp_all {
                        prop_assert_eq!(r, theirs);
                    }
                }
            }
        }

        #[test]
        fn blocks_in_either_byte_order_round_each_element(
            fi in 0usize..4,
            raw in proptest::collection::vec(any::<u8>(), 0..200),
            keepbits in 0u32..25,
            big in any::<bool>(),
        ) {
            let f = FORMATS[fi];
            let w = f.bytes();
            let mut out = vec![0u8; raw.len()];
            encode(&raw, f, keepbits, big, &mut out);
            let whole = raw.len() / w * w;
            prop_assert_eq!(&out[whole..], &raw[whole..]);
            for (x, r) in raw[..whole].chunks(w).zip(out.chunks(w)) {
                let mut xb = x.to_vec();
                let mut rb = r.to_vec();
                if big {
                    xb.reverse();
                    rb.reverse();
                }
                xb.resize(8, 0);
                rb.resize(8, 0);
                let xv = u64::from_le_bytes(xb.try_into().unwrap());
                let rv = u64::from_le_bytes(rb.try_into().unwrap());
                prop_assert_eq!(rv, round_bits(f, xv, keepbits));
            }
        }
    }
}
