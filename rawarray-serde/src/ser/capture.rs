//! Small serializers that take the bytes out of values serde hands over opaquely: the bits of
//! `half`'s floats and the bytes of an embedded `.ra` file.

use serde::ser::{self, Serialize};

use crate::error::{Error, Result};

/// Takes the `u16` bits out of half's `f16`/`bf16` newtypes.
pub(super) struct BitsCapture;

/// Appends the bytes of an embedded `.ra` file.
pub(super) struct BytesCapture<'a>(pub(super) &'a mut Vec<u8>);

macro_rules! refuse {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<Self::Ok> {
            Err(Error::unrepresentable(concat!("a half float or embedded file that serializes through ", stringify!($method))))
        }
    )*};
}

macro_rules! capture_impl {
    ($name:ty, $ok:ty, $($keep:tt)*) => {
        impl ser::Serializer for $name {
            type Ok = $ok;
            type Error = Error;
            type SerializeSeq = ser::Impossible<$ok, Error>;
            type SerializeTuple = ser::Impossible<$ok, Error>;
            type SerializeTupleStruct = ser::Impossible<$ok, Error>;
            type SerializeTupleVariant = ser::Impossible<$ok, Error>;
            type SerializeMap = ser::Impossible<$ok, Error>;
            type SerializeStruct = ser::Impossible<$ok, Error>;
            type SerializeStructVariant = ser::Impossible<$ok, Error>;
            $($keep)*
            refuse! {
                serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
                serialize_i64(i64), serialize_u8(u8), serialize_u32(u32), serialize_u64(u64),
                serialize_f32(f32), serialize_f64(f64), serialize_char(char), serialize_str(&str),
                serialize_none(), serialize_unit(), serialize_unit_struct(&'static str),
                serialize_unit_variant(&'static str, u32, &'static str),
            }
            fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<$ok> {
                Err(Error::unrepresentable("a half float or embedded file that serializes as a Some"))
            }
            fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<$ok> {
                Err(Error::unrepresentable("a half float or embedded file that serializes as a newtype"))
            }
            fn serialize_newtype_variant<T: ?Sized + Serialize>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<$ok> {
                Err(Error::unrepresentable("a half float or embedded file that serializes as a variant"))
            }
            fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> { Err(Error::unrepresentable("a half float or embedded file that serializes as a seq")) }
            fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> { Err(Error::unrepresentable("a half float or embedded file that serializes as a tuple")) }
            fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct> { Err(Error::unrepresentable("a half float or embedded file that serializes as a tuple struct")) }
            fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant> { Err(Error::unrepresentable("a half float or embedded file that serializes as a variant")) }
            fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> { Err(Error::unrepresentable("a half float or embedded file that serializes as a map")) }
            fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> { Err(Error::unrepresentable("a half float or embedded file that serializes as a struct")) }
            fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant> { Err(Error::unrepresentable("a half float or embedded file that serializes as a variant")) }
        }
    };
}

capture_impl! {
    BitsCapture, u16,
    fn serialize_u16(self, v: u16) -> Result<u16> { Ok(v) }
    fn serialize_bytes(self, _: &[u8]) -> Result<u16> { Err(Error::unrepresentable("a half float or embedded file that serializes as a bytes")) }
}

capture_impl! {
    BytesCapture<'_>, (),
    fn serialize_u16(self, _: u16) -> Result<()> { Err(Error::unrepresentable("a half float or embedded file that serializes as a u16")) }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> { self.0.extend_from_slice(v); Ok(()) }
}
