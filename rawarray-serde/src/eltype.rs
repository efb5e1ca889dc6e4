//! The element-type table: every scalar a `.ra` file can hold, written once.
//!
//! Each row names a scalar's Rust type, its header `eltype` and `elbyte`, its numpy dtype and
//! its label (numpy's name for it: `float32`, `complex64`). Everything else derives from the
//! rows: [`ScalarType`] and [`ScalarValue`], [`ElType::valid_elbytes`], the numpy names of
//! [`crate::numpy`], the [`Element`](crate::Element) impls of the plain scalars, the serializer's
//! and deserializer's scalar steps, the one-copy paths for `Vec`s and arrays of scalars, and
//! the `ra` tool's printing. Adding an element type is adding a row here; an exhaustive `match`
//! on [`ScalarType`] or [`ScalarValue`] elsewhere then fails to compile until it handles it,
//! and the crate's `tests/scalar_table.rs` runs every row through every path.
//!
//! The table also lists the sizes the format allows that Rust has no type for (`float128`,
//! `complex256`): their values are raw bytes.
//!
//! This module depends on nothing else in the crate. The table, as the README shows it:
//!
#![doc = include_str!("../doc/element-types.md")]

use std::fmt;

use half::{bf16, f16};
use num_complex::Complex;

/// The element type code of the header (`eltype`).
///
/// ```
/// use rawarray_serde::ElType;
/// assert_eq!(ElType::from_code(4).unwrap(), ElType::Complex);
/// assert_eq!(ElType::Complex.code(), 4);
/// assert!(ElType::Float.is_valid_elbyte(4));
/// assert!(!ElType::Float.is_valid_elbyte(3));
/// ```
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum ElType {
    /// 0: a user-defined or composite element (a packed record, an embedded `.ra` file).
    User = 0,
    /// 1: a two's complement signed integer.
    Int = 1,
    /// 2: an unsigned integer (also `bool`, `char` and the bytes of strings).
    Uint = 2,
    /// 3: an IEEE 754 float.
    Float = 3,
    /// 4: a complex number, a pair of IEEE floats (real, imaginary).
    Complex = 4,
    /// 5: a bfloat16 (brain float).
    BFloat16 = 5,
}

/// The table. Each rust row: `Variant: RustType => (eltype, elbyte, numpy dtype, label)`; each
/// raw row (a size the format allows and Rust has no type for): `Variant: [u8; elbyte] => (..)`.
/// `$cb` is called with both lists and the extra tokens `$arg`.
macro_rules! scalar_table {
    ($cb:ident $(, $arg:tt)*) => {
        $cb! {
            ($($arg)*)
            rust [
                I8: i8 => (Int, 1, Some("|i1"), "int8"),
                I16: i16 => (Int, 2, Some("<i2"), "int16"),
                I32: i32 => (Int, 4, Some("<i4"), "int32"),
                I64: i64 => (Int, 8, Some("<i8"), "int64"),
                I128: i128 => (Int, 16, None, "int128"),
                U8: u8 => (Uint, 1, Some("|u1"), "uint8"),
                U16: u16 => (Uint, 2, Some("<u2"), "uint16"),
                U32: u32 => (Uint, 4, Some("<u4"), "uint32"),
                U64: u64 => (Uint, 8, Some("<u8"), "uint64"),
                U128: u128 => (Uint, 16, None, "uint128"),
                F16: f16 => (Float, 2, Some("<f2"), "float16"),
                F32: f32 => (Float, 4, Some("<f4"), "float32"),
                F64: f64 => (Float, 8, Some("<f8"), "float64"),
                BF16: bf16 => (BFloat16, 2, None, "bfloat16"),
                Complex32: Complex<f16> => (Complex, 4, None, "complex32"),
                Complex64: Complex<f32> => (Complex, 8, Some("<c8"), "complex64"),
                Complex128: Complex<f64> => (Complex, 16, Some("<c16"), "complex128"),
            ]
            raw [
                // numpy's `longdouble` is not IEEE binary128, so numpy has no name for these.
                F128: [u8; 16] => (Float, 16, None, "float128"),
                Complex256: [u8; 32] => (Complex, 32, None, "complex256"),
            ]
        }
    };
}

/// Calls `$m!(RustType, Variant)` for every scalar with a Rust type (the table's rust rows).
macro_rules! for_each_rust_scalar {
    ($m:ident) => {
        $crate::eltype::scalar_table! { for_each_rust_scalar, @, $m }
    };
    ((@ $m:ident) rust [$($v:ident: $t:ty => $info:tt),* $(,)?] raw [$($raw:tt)*]) => {
        $( $m!($t, $v); )*
    };
}

pub(crate) use {for_each_rust_scalar, scalar_table};

macro_rules! define_scalar_types {
    (
        ()
        rust [$($v:ident: $t:ty => ($e:ident, $b:literal, $np:expr, $label:literal)),* $(,)?]
        raw [$($rv:ident: $rt:ty => ($re:ident, $rb:literal, $rnp:expr, $rlabel:literal)),* $(,)?]
    ) => {
        /// One row of the element-type table: a scalar a `.ra` file can hold.
        ///
        /// ```
        /// use rawarray_serde::{ElType};
        /// use rawarray_serde::eltype::ScalarType;
        /// let t = ScalarType::of(ElType::Complex, 8).unwrap();
        /// assert_eq!(t, ScalarType::Complex64);
        /// assert_eq!((t.label(), t.numpy(), t.elbyte()), ("complex64", Some("<c8"), 8));
        /// assert_eq!(ScalarType::of(ElType::User, 8), None);
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ScalarType {
            $(
                #[doc = concat!($label, ".")]
                $v,
            )*
            $(
                #[doc = concat!($rlabel, ": no Rust type; its values are raw bytes.")]
                $rv,
            )*
        }

        impl ScalarType {
            /// Every row of the table, in order: the Rust types, then the raw sizes.
            pub const ALL: &'static [ScalarType] = &[$(ScalarType::$v,)* $(ScalarType::$rv,)*];

            /// The header's eltype.
            pub const fn eltype(self) -> ElType {
                match self {
                    $(ScalarType::$v => ElType::$e,)*
                    $(ScalarType::$rv => ElType::$re,)*
                }
            }

            /// The header's elbyte: bytes per value.
            pub const fn elbyte(self) -> u64 {
                match self {
                    $(ScalarType::$v => $b,)*
                    $(ScalarType::$rv => $rb,)*
                }
            }

            /// The numpy dtype of the little-endian value (`"<f4"`), or `None` where numpy has
            /// no such type (bfloat16, 128-bit integers and floats, complex of f16 or f128).
            pub const fn numpy(self) -> Option<&'static str> {
                match self {
                    $(ScalarType::$v => $np,)*
                    $(ScalarType::$rv => $rnp,)*
                }
            }

            /// Its name as numpy would call it: `int8`, `float32`, `complex64`, `bfloat16`.
            pub const fn label(self) -> &'static str {
                match self {
                    $(ScalarType::$v => $label,)*
                    $(ScalarType::$rv => $rlabel,)*
                }
            }

            /// The Rust type, as written in Rust (`"Complex<f32>"`); `None` for the raw sizes.
            pub fn rust_type(self) -> Option<String> {
                match self {
                    $(ScalarType::$v => Some(stringify!($t).replace(' ', "")),)*
                    $(ScalarType::$rv => None,)*
                }
            }

            /// Whether Rust has a type for it (`false` for the raw sizes, read as bytes).
            pub const fn has_rust_type(self) -> bool {
                match self {
                    $(ScalarType::$v => true,)*
                    $(ScalarType::$rv => false,)*
                }
            }

            /// The row for a header's eltype and elbyte; `None` for user-defined elements and
            /// sizes the format does not allow.
            pub const fn of(eltype: ElType, elbyte: u64) -> Option<ScalarType> {
                let mut i = 0;
                while i < Self::ALL.len() {
                    let t = Self::ALL[i];
                    if t.eltype() as u8 == eltype as u8 && t.elbyte() == elbyte {
                        return Some(t);
                    }
                    i += 1;
                }
                None
            }

            /// The value stored in `le`, its little-endian bytes; `None` unless `le` is
            /// exactly [`elbyte`](ScalarType::elbyte) bytes.
            ///
            /// ```
            /// use rawarray_serde::eltype::ScalarType;
            /// use rawarray_serde::eltype::ScalarValue;
            /// let v = ScalarType::I16.read_le(&(-2i16).to_le_bytes()).unwrap();
            /// assert_eq!(v, ScalarValue::I16(-2));
            /// assert_eq!(ScalarType::I16.read_le(&[0; 3]), None);
            /// ```
            pub fn read_le(self, le: &[u8]) -> Option<ScalarValue> {
                Some(match self {
                    $(ScalarType::$v => ScalarValue::$v(<$t as LeBytes>::from_le(le)?),)*
                    $(ScalarType::$rv => ScalarValue::$rv(le.try_into().ok()?),)*
                })
            }
        }

        /// One scalar value, as [`ScalarType::read_le`] decodes it.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum ScalarValue {
            $(
                #[doc = concat!("A ", $label, ".")]
                $v($t),
            )*
            $(
                #[doc = concat!("A ", $rlabel, ", as its little-endian bytes.")]
                $rv($rt),
            )*
        }

        impl ScalarValue {
            /// Its row of the table.
            pub const fn scalar_type(&self) -> ScalarType {
                match self {
                    $(ScalarValue::$v(_) => ScalarType::$v,)*
                    $(ScalarValue::$rv(_) => ScalarType::$rv,)*
                }
            }
        }

        // The sizes each eltype allows, in table order, for `ElType::valid_elbytes`.
        const ALLOWED: [&[u64]; 6] = [
            &[],
            allowed!(Int; $(($e, $b))* $(($re, $rb))*),
            allowed!(Uint; $(($e, $b))* $(($re, $rb))*),
            allowed!(Float; $(($e, $b))* $(($re, $rb))*),
            allowed!(Complex; $(($e, $b))* $(($re, $rb))*),
            allowed!(BFloat16; $(($e, $b))* $(($re, $rb))*),
        ];
    };
}

/// The elbytes of the rows of one eltype, as a `&'static [u64]`, built at compile time.
macro_rules! allowed {
    ($want:ident; $(($e:ident, $b:literal))*) => {{
        const ROWS: &[(ElType, u64)] = &[$((ElType::$e, $b)),*];
        const N: usize = {
            let mut n = 0;
            let mut i = 0;
            while i < ROWS.len() {
                if ROWS[i].0 as u8 == ElType::$want as u8 {
                    n += 1;
                }
                i += 1;
            }
            n
        };
        const SIZES: [u64; N] = {
            let mut out = [0; N];
            let (mut n, mut i) = (0, 0);
            while i < ROWS.len() {
                if ROWS[i].0 as u8 == ElType::$want as u8 {
                    out[n] = ROWS[i].1;
                    n += 1;
                }
                i += 1;
            }
            out
        };
        &SIZES
    }};
}

scalar_table!(define_scalar_types);

/// A Rust scalar of the table to and from exactly its little-endian bytes.
pub(crate) trait LeBytes: Sized {
    /// The value in `le`; `None` unless `le` is exactly the value's size.
    fn from_le(le: &[u8]) -> Option<Self>;
    /// Writes the value's bytes into `out`, which is exactly its size.
    fn write_le(&self, out: &mut [u8]);
}

macro_rules! le_bytes_plain {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            #[inline]
            fn from_le(le: &[u8]) -> Option<Self> {
                Some(<$t>::from_le_bytes(le.try_into().ok()?))
            }
            #[inline]
            fn write_le(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
le_bytes_plain!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, f16, bf16, f32, f64);

impl<T: LeBytes> LeBytes for Complex<T> {
    #[inline]
    fn from_le(le: &[u8]) -> Option<Self> {
        if !le.len().is_multiple_of(2) {
            return None;
        }
        let (re, im) = le.split_at(le.len() / 2);
        Some(Complex::new(T::from_le(re)?, T::from_le(im)?))
    }
    #[inline]
    fn write_le(&self, out: &mut [u8]) {
        let (re, im) = out.split_at_mut(out.len() / 2);
        self.re.write_le(re);
        self.im.write_le(im);
    }
}

impl ElType {
    /// Every element type, in code order.
    pub const ALL: [ElType; 6] = [
        ElType::User,
        ElType::Int,
        ElType::Uint,
        ElType::Float,
        ElType::Complex,
        ElType::BFloat16,
    ];

    /// The numeric code written in the header.
    pub fn code(self) -> u64 {
        self as u64
    }

    /// The element sizes the format allows for this type (the table's rows of this eltype);
    /// `None` for [`ElType::User`] (any size but 0).
    ///
    /// ```
    /// use rawarray_serde::ElType;
    /// assert_eq!(ElType::Complex.valid_elbytes(), Some(&[4u64, 8, 16, 32][..]));
    /// ```
    pub fn valid_elbytes(self) -> Option<&'static [u64]> {
        match self {
            ElType::User => None,
            _ => Some(ALLOWED[self as usize]),
        }
    }

    /// Whether `elbyte` is a size this type can have.
    pub fn is_valid_elbyte(self, elbyte: u64) -> bool {
        match self.valid_elbytes() {
            None => elbyte > 0,
            Some(sizes) => sizes.contains(&elbyte),
        }
    }

    /// The type in words: `"float"`, `"complex"`, ...
    pub fn name(self) -> &'static str {
        match self {
            ElType::User => "user-defined",
            ElType::Int => "int",
            ElType::Uint => "uint",
            ElType::Float => "float",
            ElType::Complex => "complex",
            ElType::BFloat16 => "bfloat16",
        }
    }

    /// The byte width of the scalars that byte order applies to: `elbyte`, or half of it for complex.
    /// `None` for user-defined elements, whose inner layout the header does not describe.
    pub fn swap_width(self, elbyte: u64) -> Option<u64> {
        match self {
            ElType::User => None,
            ElType::Complex => Some(elbyte / 2),
            _ => Some(elbyte),
        }
    }
}

impl fmt::Display for ElType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A short name for an element type and size, as numpy would call it: `float32`, `complex64`,
/// `uint8`, `bfloat16`, `user(80 bytes)`; the table's label, or words for what is not in it.
///
/// ```
/// use rawarray_serde::{ElType};
/// use rawarray_serde::eltype::type_label;
/// assert_eq!(type_label(ElType::Complex, 8), "complex64");
/// assert_eq!(type_label(ElType::User, 80), "user(80 bytes)");
/// ```
pub fn type_label(eltype: ElType, elbyte: u64) -> String {
    match ScalarType::of(eltype, elbyte) {
        Some(t) => t.label().to_string(),
        None if eltype == ElType::User => format!("user({elbyte} bytes)"),
        None => format!("{} of {elbyte} bytes", eltype.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_unique_and_sized_as_their_rust_type() {
        for (i, a) in ScalarType::ALL.iter().enumerate() {
            for b in &ScalarType::ALL[i + 1..] {
                assert_ne!(
                    (a.eltype(), a.elbyte()),
                    (b.eltype(), b.elbyte()),
                    "{a:?} {b:?}"
                );
                assert_ne!(a.label(), b.label());
            }
            assert_eq!(ScalarType::of(a.eltype(), a.elbyte()), Some(*a));
            let zero = vec![0u8; a.elbyte() as usize];
            assert_eq!(a.read_le(&zero).unwrap().scalar_type(), *a);
        }
        assert_eq!(ElType::Int.valid_elbytes(), Some(&[1u64, 2, 4, 8, 16][..]));
        assert_eq!(ElType::Float.valid_elbytes(), Some(&[2u64, 4, 8, 16][..]));
        assert_eq!(ElType::BFloat16.valid_elbytes(), Some(&[2u64][..]));
    }
}
