//! Unsigned words read from and written to bytes in a file's byte order: the shared plumbing of
//! the element-wise kernels ([`super::delta`], [`super::bitround`], [`super::pco`]).
//!
//! [`map`] runs a per-element function over whole elements, through `bytemuck` casts when both
//! buffers are aligned for the word (then the loop is over `T`, which the compiler vectorises,
//! byte swaps included) and through fixed-size byte chunks otherwise. The trailing
//! `len % size_of::<T>()` bytes are copied unchanged.

use bytemuck::Pod;

/// An unsigned integer of 1 to 16 bytes, converted from and to either byte order.
pub(crate) trait Word: Pod + Eq + Ord + Default + std::fmt::Debug {
    /// Its size in bytes.
    const BYTES: usize;
    /// Zero.
    const ZERO: Self;
    /// `self + other`, wrapping.
    fn wadd(self, other: Self) -> Self;
    /// `self - other`, wrapping.
    fn wsub(self, other: Self) -> Self;
    /// The number whose bytes in memory (native order) are `raw`'s bytes, read in the given
    /// order: the value of a word stored in a file of that order. Its own inverse.
    fn swap_if(self, big_endian: bool) -> Self;
    /// Reads `bytes` (exactly `BYTES` of them) in the given order.
    fn read(bytes: &[u8], big_endian: bool) -> Self;
    /// Writes the word into `bytes` (exactly `BYTES` of them) in the given order.
    fn write(self, bytes: &mut [u8], big_endian: bool);
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const ZERO: Self = 0;
            #[inline(always)]
            fn wadd(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn wsub(self, other: Self) -> Self {
                self.wrapping_sub(other)
            }
            #[inline(always)]
            fn swap_if(self, big_endian: bool) -> Self {
                if big_endian {
                    <$t>::from_be(self)
                } else {
                    <$t>::from_le(self)
                }
            }
            #[inline(always)]
            fn read(bytes: &[u8], big_endian: bool) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                if big_endian {
                    <$t>::from_be_bytes(raw)
                } else {
                    <$t>::from_le_bytes(raw)
                }
            }
            #[inline(always)]
            fn write(self, bytes: &mut [u8], big_endian: bool) {
                bytes.copy_from_slice(&if big_endian {
                    self.to_be_bytes()
                } else {
                    self.to_le_bytes()
                });
            }
        }
    };
}

word!(u8);
word!(u16);
word!(u32);
word!(u64);
word!(u128);

/// Writes `f(x)` into `dst` for each whole element `x` of `src` (words of `T` in the given byte
/// order), and copies the trailing partial element. `src` and `dst` have the same length.
#[inline(always)]
pub(crate) fn map<T: Word>(
    src: &[u8],
    big_endian: bool,
    dst: &mut [u8],
    mut f: impl FnMut(T) -> T,
) {
    debug_assert_eq!(src.len(), dst.len());
    let whole = src.len() / T::BYTES * T::BYTES;
    let (src, src_tail) = src.split_at(whole);
    let (dst, dst_tail) = dst.split_at_mut(whole);
    dst_tail.copy_from_slice(src_tail);
    if let (Ok(s), Ok(d)) = (
        bytemuck::try_cast_slice::<u8, T>(src),
        bytemuck::try_cast_slice_mut::<u8, T>(dst),
    ) {
        for (o, &x) in d.iter_mut().zip(s) {
            *o = f(x.swap_if(big_endian)).swap_if(big_endian);
        }
    } else {
        for (o, x) in dst
            .chunks_exact_mut(T::BYTES)
            .zip(src.chunks_exact(T::BYTES))
        {
            f(T::read(x, big_endian)).write(o, big_endian);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_follow_the_byte_order() {
        assert_eq!(u32::read(&[1, 2, 3, 4], false), 0x0403_0201);
        assert_eq!(u32::read(&[1, 2, 3, 4], true), 0x0102_0304);
        let mut b = [0u8; 2];
        0x0102u16.write(&mut b, true);
        assert_eq!(b, [1, 2]);
        0x0102u16.write(&mut b, false);
        assert_eq!(b, [2, 1]);
        assert_eq!(
            u16::from_ne_bytes([1, 2]).swap_if(true),
            u16::read(&[1, 2], true)
        );
        assert_eq!(
            u16::from_ne_bytes([1, 2]).swap_if(false),
            u16::read(&[1, 2], false)
        );
    }

    #[test]
    fn map_takes_both_paths_alike_and_copies_the_tail() {
        let src: Vec<u8> = (0..43u8).collect();
        for offset in 0..4 {
            for big in [false, true] {
                // Offset 0: both buffers aligned, the cast path; 1..3 misalign the source:
                // the chunked path.
                let mut buf = [0u32; 16];
                let mut out = [0u32; 16];
                let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut buf);
                let out: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
                buf[offset..offset + 39].copy_from_slice(&src[..39]);
                map::<u32>(&buf[offset..offset + 39], big, &mut out[..39], |x: u32| {
                    x.wrapping_mul(3)
                });
                for i in 0..9 {
                    let x = u32::read(&src[4 * i..4 * i + 4], big).wrapping_mul(3);
                    assert_eq!(u32::read(&out[4 * i..4 * i + 4], big), x, "{offset} {big}");
                }
                assert_eq!(out[36..39], src[36..39]);
            }
        }
    }
}
