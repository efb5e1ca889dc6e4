//! Every row of the element-type table through every path that stores scalars: the typed
//! arrays (both byte orders, LZ4), serde (`to_vec`, `from_slice`, `from_reader`, a lone
//! scalar, `deserialize_any`), the dynamic reader, `ScalarType::read_le`, `Element::layout`
//! and the numpy names.
//!
//! The `match` below is exhaustive on purpose: a row added to the table does not compile here
//! until it is given sample values, and then it is checked on every path.

use std::fmt::Debug;

use rawarray_serde::eltype::{ScalarType, ScalarValue};
use rawarray_serde::{
    bf16, f16, numpy, Complex, DynArray, ElType, Element, Header, Layout, RawArray, WriteOptions,
};
use serde::{de::DeserializeOwned, de::IgnoredAny, Serialize};

/// Hand-computed little-endian bytes of `values`, by the Rust type's own `to_le_bytes`.
fn le_bytes<T: Copy>(values: &[T], one: fn(T) -> Vec<u8>) -> Vec<u8> {
    values.iter().flat_map(|&v| one(v)).collect()
}

fn check<T>(t: ScalarType, values: &[T], one: fn(T) -> Vec<u8>, wrap: fn(T) -> ScalarValue)
where
    T: Element + Serialize + DeserializeOwned + PartialEq + Debug + Copy,
{
    let row = format!("{t:?} ({})", t.label());
    assert!(t.has_rust_type(), "{row}");
    let data = le_bytes(values, one);
    assert_eq!(data.len() as u64, values.len() as u64 * t.elbyte(), "{row}");
    // The Element impl is the row.
    assert_eq!(
        (T::ELTYPE, T::ELBYTE as u64),
        (t.eltype(), t.elbyte()),
        "{row}"
    );
    assert_eq!(T::layout(), Layout::scalar(t.eltype(), t.elbyte()), "{row}");
    let expected_header = Header::new(t.eltype(), t.elbyte(), vec![values.len() as u64]).unwrap();
    let mut file = expected_header.encode();
    file.extend_from_slice(&data);

    // Typed arrays: the bytes written are the header and the hand-computed data.
    let a = RawArray::from_vec(values.to_vec());
    assert_eq!(a.to_bytes(), file, "{row}: RawArray::to_bytes");
    assert_eq!(
        RawArray::<T>::from_bytes(&file).unwrap().as_slice(),
        values,
        "{row}"
    );
    for opts in [
        WriteOptions::new().big_endian(true),
        WriteOptions::new().compress(true),
        WriteOptions::new().big_endian(true).compress(true),
    ] {
        let mut other = Vec::new();
        a.write_to_with(&mut other, &opts).unwrap();
        let back = RawArray::<T>::from_bytes(&other).unwrap();
        assert_eq!(back.as_slice(), values, "{row}: {opts:?}");
        // The dynamic reader hands out the little-endian bytes, whatever the file's order.
        let d = DynArray::from_bytes(&other).unwrap();
        assert_eq!(d.data(), &data[..], "{row}: DynArray {opts:?}");
    }

    // serde: the same file, and back through a slice and a stream.
    assert_eq!(
        rawarray_serde::to_vec(&values.to_vec()).unwrap(),
        file,
        "{row}: to_vec"
    );
    let back: Vec<T> = rawarray_serde::from_slice(&file).unwrap();
    assert_eq!(back, values, "{row}: from_slice");
    let back: Vec<T> = rawarray_serde::from_reader(&file[..]).unwrap();
    assert_eq!(back, values, "{row}: from_reader");
    let lone = rawarray_serde::to_vec(&values[0]).unwrap();
    let h = Header::decode(&lone).unwrap();
    assert_eq!(
        (h.eltype, h.elbyte, h.dims.len()),
        (t.eltype(), t.elbyte(), 0),
        "{row}"
    );
    assert_eq!(
        rawarray_serde::from_slice::<T>(&lone).unwrap(),
        values[0],
        "{row}"
    );
    // A self-describing read knows every row with a Rust type.
    rawarray_serde::from_slice::<IgnoredAny>(&file).unwrap();

    // The table's decoder reads the same values.
    for (v, b) in values.iter().zip(data.chunks_exact(t.elbyte() as usize)) {
        assert_eq!(t.read_le(b), Some(wrap(*v)), "{row}: read_le");
        assert_eq!(wrap(*v).scalar_type(), t);
    }
    check_names(t);
}

/// A row Rust has no type for: files of it are valid, read as raw bytes.
fn check_raw(t: ScalarType) {
    assert!(!t.has_rust_type());
    let h = Header::new(t.eltype(), t.elbyte(), vec![2]).unwrap();
    let mut file = h.encode();
    file.extend((0..2 * t.elbyte()).map(|i| i as u8));
    let d = DynArray::from_bytes(&file).unwrap();
    assert_eq!(d.data(), &file[h.encoded_len()..]);
    let v = t.read_le(&d.data()[..t.elbyte() as usize]).unwrap();
    assert_eq!(v.scalar_type(), t);
    // serde has no value to give.
    assert!(rawarray_serde::from_slice::<IgnoredAny>(&file).is_err());
    check_names(t);
}

fn check_names(t: ScalarType) {
    assert!(t.eltype().is_valid_elbyte(t.elbyte()), "{t:?}");
    assert_eq!(ScalarType::of(t.eltype(), t.elbyte()), Some(t));
    assert_eq!(
        rawarray_serde::eltype::type_label(t.eltype(), t.elbyte()),
        t.label()
    );
    assert_eq!(numpy::dtype(t.eltype(), t.elbyte()), t.numpy());
    if let Some(d) = t.numpy() {
        assert_eq!(numpy::parse_dtype(d), Some((t.eltype(), t.elbyte(), false)));
    }
}

#[test]
fn every_row_of_the_table_on_every_path() {
    use ScalarType as S;
    use ScalarValue as V;
    for &t in ScalarType::ALL {
        match t {
            S::I8 => check(
                t,
                &[i8::MIN, -1, 0, 7, i8::MAX],
                |v| v.to_le_bytes().into(),
                V::I8,
            ),
            S::I16 => check(t, &[i16::MIN, -2, 300], |v| v.to_le_bytes().into(), V::I16),
            S::I32 => check(
                t,
                &[i32::MIN, -3, 70000],
                |v| v.to_le_bytes().into(),
                V::I32,
            ),
            S::I64 => check(
                t,
                &[i64::MIN, -4, 1 << 40],
                |v| v.to_le_bytes().into(),
                V::I64,
            ),
            S::I128 => check(
                t,
                &[i128::MIN, -5, 1 << 100],
                |v| v.to_le_bytes().into(),
                V::I128,
            ),
            S::U8 => check(t, &[0u8, 1, 255], |v| v.to_le_bytes().into(), V::U8),
            S::U16 => check(
                t,
                &[0u16, 258, u16::MAX],
                |v| v.to_le_bytes().into(),
                V::U16,
            ),
            S::U32 => check(
                t,
                &[0u32, 1 << 20, u32::MAX],
                |v| v.to_le_bytes().into(),
                V::U32,
            ),
            S::U64 => check(
                t,
                &[0u64, 1 << 50, u64::MAX],
                |v| v.to_le_bytes().into(),
                V::U64,
            ),
            S::U128 => check(
                t,
                &[0u128, 1 << 90, u128::MAX],
                |v| v.to_le_bytes().into(),
                V::U128,
            ),
            S::F16 => check(
                t,
                &[f16::from_f32(-1.5), f16::MAX, f16::INFINITY],
                |v| v.to_le_bytes().into(),
                V::F16,
            ),
            S::F32 => check(
                t,
                &[-1.5f32, f32::MIN_POSITIVE, 3e38],
                |v| v.to_le_bytes().into(),
                V::F32,
            ),
            S::F64 => check(
                t,
                &[-1.5f64, 1e-300, f64::INFINITY],
                |v| v.to_le_bytes().into(),
                V::F64,
            ),
            S::BF16 => check(
                t,
                &[bf16::from_f32(-2.5), bf16::MAX, bf16::from_f32(1e30)],
                |v| v.to_le_bytes().into(),
                V::BF16,
            ),
            S::Complex32 => check(
                t,
                &[Complex::new(f16::from_f32(1.0), f16::from_f32(-2.0))],
                |v| [v.re.to_le_bytes(), v.im.to_le_bytes()].concat(),
                V::Complex32,
            ),
            S::Complex64 => check(
                t,
                &[Complex::new(1.0f32, -2.0), Complex::new(0.5, 1e30)],
                |v| [v.re.to_le_bytes(), v.im.to_le_bytes()].concat(),
                V::Complex64,
            ),
            S::Complex128 => check(
                t,
                &[Complex::new(1.0f64, -2.0), Complex::new(-0.0, 1e300)],
                |v| [v.re.to_le_bytes(), v.im.to_le_bytes()].concat(),
                V::Complex128,
            ),
            S::F128 | S::Complex256 => check_raw(t),
        }
    }
}

/// The allowed sizes of each eltype are exactly the table's rows of that eltype.
#[test]
fn valid_elbytes_are_the_rows() {
    for eltype in ElType::ALL {
        let rows: Vec<u64> = ScalarType::ALL
            .iter()
            .filter(|t| t.eltype() == eltype)
            .map(|t| t.elbyte())
            .collect();
        match eltype.valid_elbytes() {
            None => assert_eq!(eltype, ElType::User),
            Some(sizes) => assert_eq!(sizes, rows, "{eltype}"),
        }
    }
}
