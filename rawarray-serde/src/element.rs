//! The element trait: how one value is laid out in a `.ra` data section.

use std::mem::MaybeUninit;

use half::{bf16, f16};
use num_complex::Complex;

use crate::eltype::{for_each_rust_scalar, ElType, LeBytes, ScalarType};
use crate::error::{ErrorKind, Result};
use crate::layout::Layout;

/// A value that can be an element of a `.ra` array: fixed size, packed little-endian, no padding.
///
/// Implemented for the integers (`i8`..`i128`, `u8`..`u128`), `f32`, `f64`, [`half::f16`],
/// [`half::bf16`], `bool` (a `u8` holding 0 or 1), `char` (a `u32` code point),
/// `Complex<f16>`, `Complex<f32>`, `Complex<f64>`, fixed arrays `[T; N]` of elements, and any
/// struct with `#[derive(RaRecord)]`.
///
/// [`ELTYPE`](Element::ELTYPE) and [`ELBYTE`](Element::ELBYTE) are the header fields of a file
/// holding an array of `Self`. A fixed array `[T; N]` is not a bigger element but one more
/// dimension: an array of `n` values `[f32; 3]` is a file of `f32` (eltype 3, elbyte 4) with dims
/// `[3, n]`, so numpy sees shape `(n, 3)`. [`PACKED_SIZE`](Element::PACKED_SIZE) is the bytes one
/// value occupies, which is what a record field of this type adds to its record.
///
/// ```
/// use rawarray_serde::{ElType, Element};
/// assert_eq!(<f32 as Element>::ELTYPE, ElType::Float);
/// assert_eq!(<[f32; 3] as Element>::ELBYTE, 4);
/// assert_eq!(<[f32; 3] as Element>::PACKED_SIZE, 12);
///
/// let mut bytes = [0u8; 4];
/// 1.5f32.write_le(&mut bytes);
/// assert_eq!(bytes, 1.5f32.to_le_bytes());
/// assert_eq!(f32::read_le(&bytes).unwrap(), 1.5);
/// ```
pub trait Element: Sized {
    /// The eltype of a file holding an array of these.
    const ELTYPE: ElType;
    /// The elbyte of a file holding an array of these: the scalar's size, or a record's packed size.
    const ELBYTE: usize;
    /// Bytes one value occupies, packed: `ELBYTE` times the product of [`Element::inner_dims`].
    const PACKED_SIZE: usize = Self::ELBYTE;

    /// Appends the dims one value contributes, first varying fastest: `[3]` for `[f32; 3]`,
    /// `[3, 2]` for `[[f32; 3]; 2]`, nothing for scalars and records.
    fn inner_dims(dims: &mut Vec<u64>) {
        let _ = dims;
    }

    /// Writes the value's packed little-endian bytes into `out`, which is `PACKED_SIZE` long.
    fn write_le(&self, out: &mut [u8]);

    /// Reads a value from its packed little-endian bytes (`PACKED_SIZE` of them).
    ///
    /// Fails only for bit patterns that are not a value (a `bool` byte other than 0 or 1).
    fn read_le(bytes: &[u8]) -> Result<Self>;

    /// Reverses the byte order of every scalar in one packed value, in place (big <-> little).
    fn swap_bytes(bytes: &mut [u8]);

    /// A description of the value's layout, for schemas and numpy dtypes.
    fn layout() -> Layout;

    /// The values' memory as their packed little-endian bytes, where the two are the same
    /// (plain-old-data on a little-endian machine). Enables one-copy writes.
    #[doc(hidden)]
    fn as_pod_bytes(values: &[Self]) -> Option<&[u8]> {
        let _ = values;
        None
    }

    /// Mutable counterpart of [`Element::as_pod_bytes`], for types where every bit pattern is a
    /// value. Enables one-copy reads.
    #[doc(hidden)]
    fn as_pod_bytes_mut(values: &mut [Self]) -> Option<&mut [u8]> {
        let _ = values;
        None
    }

    /// `len` zeroed values in one allocation, where `as_pod_bytes_mut` applies; an error
    /// ([`ErrorKind::TooLarge`]) if the memory cannot be had, since `len` often comes from a
    /// file.
    #[doc(hidden)]
    fn zeroed_pod_vec(len: usize) -> Option<Result<Vec<Self>>> {
        let _ = len;
        None
    }

    /// The values stored in `bytes`, without copying, where `as_pod_bytes_mut` applies and
    /// `bytes` is suitably aligned and sized.
    #[doc(hidden)]
    fn cast_pod_slice(bytes: &[u8]) -> Option<&[Self]> {
        let _ = bytes;
        None
    }
}

/// The `Element` impl of every scalar of the element-type table: its memory is its
/// little-endian bytes and every bit pattern is a value, so bulk reads and writes are a single
/// copy on little-endian machines.
macro_rules! scalar_element {
    ($t:ty, $v:ident) => {
        // The table's elbyte is the Rust type's size (a complex is two floats, no padding).
        const _: () = assert!(std::mem::size_of::<$t>() as u64 == ScalarType::$v.elbyte());

        impl Element for $t {
            const ELTYPE: ElType = ScalarType::$v.eltype();
            const ELBYTE: usize = std::mem::size_of::<$t>();

            #[inline]
            fn write_le(&self, out: &mut [u8]) {
                LeBytes::write_le(self, out);
            }

            #[inline]
            fn read_le(bytes: &[u8]) -> Result<Self> {
                Ok(<$t as LeBytes>::from_le(bytes).expect("caller passes PACKED_SIZE bytes"))
            }

            #[inline]
            fn swap_bytes(bytes: &mut [u8]) {
                // A complex swaps each half; every other scalar is one number.
                let width = Self::ELTYPE.swap_width(Self::ELBYTE as u64).unwrap_or(1) as usize;
                bytes.chunks_exact_mut(width).for_each(<[u8]>::reverse);
            }

            fn layout() -> Layout {
                Layout::scalar(Self::ELTYPE, Self::ELBYTE as u64)
            }

            pod_hooks!();
        }
    };
}

/// The one-copy hooks for a `bytemuck::Pod` type whose memory is its little-endian encoding.
macro_rules! pod_hooks {
    () => {
        fn as_pod_bytes(values: &[Self]) -> Option<&[u8]> {
            cfg!(target_endian = "little").then(|| bytemuck::cast_slice(values))
        }

        fn as_pod_bytes_mut(values: &mut [Self]) -> Option<&mut [u8]> {
            cfg!(target_endian = "little").then(|| bytemuck::cast_slice_mut(values))
        }

        fn zeroed_pod_vec(len: usize) -> Option<Result<Vec<Self>>> {
            cfg!(target_endian = "little").then(|| crate::memory::try_zeroed_vec(len))
        }

        fn cast_pod_slice(bytes: &[u8]) -> Option<&[Self]> {
            if cfg!(target_endian = "little") {
                bytemuck::try_cast_slice(bytes).ok()
            } else {
                None
            }
        }
    };
}

for_each_rust_scalar!(scalar_element);

impl Element for bool {
    const ELTYPE: ElType = ElType::Uint;
    const ELBYTE: usize = 1;

    fn write_le(&self, out: &mut [u8]) {
        out[0] = u8::from(*self);
    }

    fn read_le(bytes: &[u8]) -> Result<Self> {
        match bytes[0] {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ErrorKind::InvalidValue {
                what: "bool",
                index: 0,
                value: v.into(),
            }
            .into()),
        }
    }

    fn swap_bytes(_: &mut [u8]) {}

    // A u8 marked bool, so that numpy and Python read it back as bool, not as 0/1 numbers.
    fn layout() -> Layout {
        Layout::Scalar {
            eltype: ElType::Uint,
            elbyte: 1,
            logical: Some(crate::layout::Logical::Bool),
        }
    }

    // Writing is one copy (a bool's byte is 0 or 1); reading checks every byte.
    fn as_pod_bytes(values: &[Self]) -> Option<&[u8]> {
        Some(bytemuck::cast_slice(values))
    }
}

impl Element for char {
    const ELTYPE: ElType = ElType::Uint;
    const ELBYTE: usize = 4;

    fn write_le(&self, out: &mut [u8]) {
        out.copy_from_slice(&u32::from(*self).to_le_bytes());
    }

    fn read_le(bytes: &[u8]) -> Result<Self> {
        let v = u32::from_le_bytes(bytes.try_into().expect("caller passes 4 bytes"));
        char::from_u32(v).ok_or_else(|| {
            ErrorKind::InvalidValue {
                what: "char",
                index: 0,
                value: v.into(),
            }
            .into()
        })
    }

    fn swap_bytes(bytes: &mut [u8]) {
        bytes.reverse();
    }

    fn layout() -> Layout {
        u32::layout()
    }

    fn as_pod_bytes(values: &[Self]) -> Option<&[u8]> {
        cfg!(target_endian = "little").then(|| bytemuck::cast_slice(values))
    }
}

impl<T: Element, const N: usize> Element for [T; N] {
    const ELTYPE: ElType = T::ELTYPE;
    const ELBYTE: usize = T::ELBYTE;
    const PACKED_SIZE: usize = N * T::PACKED_SIZE;

    fn inner_dims(dims: &mut Vec<u64>) {
        T::inner_dims(dims);
        dims.push(N as u64);
    }

    fn write_le(&self, out: &mut [u8]) {
        for (v, slot) in self.iter().zip(out.chunks_exact_mut(T::PACKED_SIZE)) {
            v.write_le(slot);
        }
    }

    fn read_le(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != Self::PACKED_SIZE || T::PACKED_SIZE == 0 {
            return Err(ErrorKind::Message(format!(
                "[T; {N}] needs {} bytes, got {}",
                Self::PACKED_SIZE,
                bytes.len()
            ))
            .into());
        }
        // Items go straight into their slots: this is the inner loop of reading records.
        let mut items: [MaybeUninit<T>; N] = [const { MaybeUninit::uninit() }; N];
        for (i, chunk) in bytes.chunks_exact(T::PACKED_SIZE).enumerate() {
            match T::read_le(chunk) {
                Ok(v) => {
                    items[i].write(v);
                }
                Err(e) => {
                    for item in &mut items[..i] {
                        // SAFETY: the items before `i` were written by earlier iterations.
                        unsafe { item.assume_init_drop() };
                    }
                    return Err(e);
                }
            }
        }
        // SAFETY: the length check above makes exactly N chunks, and each wrote its item;
        // `[MaybeUninit<T>; N]` has the layout of `[T; N]` and drops nothing.
        Ok(unsafe { items.as_ptr().cast::<[T; N]>().read() })
    }

    fn swap_bytes(bytes: &mut [u8]) {
        if T::PACKED_SIZE > 0 {
            bytes
                .chunks_exact_mut(T::PACKED_SIZE)
                .for_each(T::swap_bytes);
        }
    }

    fn layout() -> Layout {
        Layout::Array {
            len: N as u64,
            item: Box::new(T::layout()),
        }
    }

    fn as_pod_bytes(values: &[Self]) -> Option<&[u8]> {
        T::as_pod_bytes(values.as_flattened())
    }

    fn as_pod_bytes_mut(values: &mut [Self]) -> Option<&mut [u8]> {
        T::as_pod_bytes_mut(values.as_flattened_mut())
    }

    fn zeroed_pod_vec(len: usize) -> Option<Result<Vec<Self>>> {
        if N == 0 || std::mem::size_of::<T>() == 0 {
            return None;
        }
        // Whether `T` has the hook at all, before a length that overflows is an error.
        let _: Result<Vec<T>> = T::zeroed_pod_vec(0)?;
        let Some(flat_len) = len.checked_mul(N) else {
            return Some(Err(ErrorKind::TooLarge { bytes: u64::MAX }.into()));
        };
        let flat = match T::zeroed_pod_vec(flat_len)? {
            Ok(flat) => flat.into_boxed_slice(),
            Err(e) => return Some(Err(e)),
        };
        if flat.len() != len * N {
            return None;
        }
        let flat = Box::into_raw(flat) as *mut T;
        // SAFETY: `flat` is a live boxed slice of exactly len * N initialised `T`s, allocated with
        // the layout of `[T; len * N]`, which is the layout of `[[T; N]; len]` (same alignment,
        // `[T; N]` has size N * size_of::<T>() and no padding). bytemuck's `cast_vec` cannot be
        // used because `T: Pod` is not a bound of this generic impl.
        let boxed: Box<[[T; N]]> =
            unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(flat as *mut [T; N], len)) };
        Some(Ok(boxed.into_vec()))
    }

    fn cast_pod_slice(bytes: &[u8]) -> Option<&[Self]> {
        if N == 0 {
            return None;
        }
        let (chunks, rest) = T::cast_pod_slice(bytes)?.as_chunks::<N>();
        rest.is_empty().then_some(chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_pod_vec_has_the_requested_length() {
        let v = <[f32; 3]>::zeroed_pod_vec(5).unwrap().unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[4], [0.0; 3]);
    }
}
