//! Round trips of typed arrays for every element type and shape, through every reader and
//! writer, little- and big-endian, plain and compressed; plus bytes checked by hand.

use half::{bf16, f16};
use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{DynArray, ElType, Element, Header, RawArray, WriteOptions};

/// Writes `a` every way and reads it back every way; all must give `a`.
fn round_trip<T: Element + PartialEq + std::fmt::Debug + Clone>(a: &RawArray<T>) {
    let dir = tempfile::tempdir().unwrap();
    for opts in [
        WriteOptions::new(),
        WriteOptions::new().big_endian(true),
        WriteOptions::new().compress(true),
        WriteOptions::new().compress(true).big_endian(true),
    ] {
        let mut bytes = Vec::new();
        a.write_to_with(&mut bytes, &opts).unwrap();
        let h = Header::decode(&bytes).unwrap();
        assert_eq!(h.eltype, T::ELTYPE);
        assert_eq!(h.elbyte, T::ELBYTE as u64);
        assert_eq!(h.dims, a.file_dims());
        assert_eq!(h.is_big_endian(), opts.is_big_endian());
        assert_eq!(h.is_compressed(), opts.is_compressed());
        assert_eq!(&RawArray::<T>::from_bytes(&bytes).unwrap(), a, "{opts:?}");
        assert_eq!(
            &RawArray::<T>::read_from(&bytes[..]).unwrap(),
            a,
            "{opts:?}"
        );
        let path = dir.path().join("a.ra");
        a.write_file_with(&path, &opts).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(&RawArray::<T>::read_file(&path).unwrap(), a, "{opts:?}");
        // The dynamic reader normalises to little-endian plain bytes: the typed ones.
        let d = DynArray::from_bytes(&bytes).unwrap();
        assert_eq!(&d.to_typed::<T>().unwrap(), a);
        assert_eq!(d.to_bytes().unwrap(), a.to_bytes());
    }
}

/// Shapes: 0-d, 1-d, 2-d, 3-d and empty (a dim of 0), for `values` of at least 24.
fn shapes<T: Element + PartialEq + std::fmt::Debug + Clone>(values: Vec<T>) {
    assert!(values.len() >= 24);
    round_trip(&RawArray::scalar(values[0].clone()));
    round_trip(&RawArray::from_vec(values.clone()));
    round_trip(&RawArray::from_shape_vec(vec![4, 6], values[..24].to_vec()).unwrap());
    round_trip(&RawArray::from_shape_vec(vec![2, 3, 4], values[..24].to_vec()).unwrap());
    round_trip(&RawArray::<T>::from_shape_vec(vec![3, 0, 2], vec![]).unwrap());
    round_trip(&RawArray::<T>::from_vec(vec![]));
}

fn vals<T: Arbitrary + 'static>() -> impl Strategy<Value = Vec<T>> {
    prop::collection::vec(any::<T>(), 24..64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test] fn i8s(v in vals::<i8>()) { shapes(v) }
    #[test] fn i16s(v in vals::<i16>()) { shapes(v) }
    #[test] fn i32s(v in vals::<i32>()) { shapes(v) }
    #[test] fn i64s(v in vals::<i64>()) { shapes(v) }
    #[test] fn i128s(v in vals::<i128>()) { shapes(v) }
    #[test] fn u8s(v in vals::<u8>()) { shapes(v) }
    #[test] fn u16s(v in vals::<u16>()) { shapes(v) }
    #[test] fn u32s(v in vals::<u32>()) { shapes(v) }
    #[test] fn u64s(v in vals::<u64>()) { shapes(v) }
    #[test] fn u128s(v in vals::<u128>()) { shapes(v) }
    #[test] fn bools(v in vals::<bool>()) { shapes(v) }
    #[test] fn chars(v in vals::<char>()) { shapes(v) }
    // Floats by bits, so NaN payloads must survive too (compared by bits below).
    #[test] fn f32s(v in vals::<u32>()) { shapes(v.into_iter().map(|b| Bits(f32::from_bits(b))).collect()) }
    #[test] fn f64s(v in vals::<u64>()) { shapes(v.into_iter().map(|b| Bits(f64::from_bits(b))).collect()) }
    #[test] fn f16s(v in vals::<u16>()) { shapes(v.into_iter().map(f16::from_bits).map(Bits).collect()) }
    #[test] fn bf16s(v in vals::<u16>()) { shapes(v.into_iter().map(bf16::from_bits).map(Bits).collect()) }
    #[test] fn c32s(v in vals::<(f32, f32)>()) { shapes(v.into_iter().map(|(a, b)| Bits(Complex::new(a, b))).collect()) }
    #[test] fn c64s(v in vals::<(f64, f64)>()) { shapes(v.into_iter().map(|(a, b)| Bits(Complex::new(a, b))).collect()) }
    #[test] fn c16s(v in vals::<(u16, u16)>()) {
        shapes(v.into_iter().map(|(a, b)| Bits(Complex::new(f16::from_bits(a), f16::from_bits(b)))).collect());
    }
    #[test] fn points(v in prop::collection::vec(any::<[f32; 3]>(), 24..40)) {
        shapes(v.into_iter().map(|p| p.map(|x| if x.is_nan() { 0.0 } else { x })).collect());
    }
    #[test] fn nested_arrays(v in prop::collection::vec(any::<[[u16; 2]; 3]>(), 24..30)) { shapes(v) }
}

/// A float compared by its bits, so NaNs compare equal to themselves.
#[derive(Clone, Copy, Debug)]
struct Bits<T>(T);

impl<T: Element> PartialEq for Bits<T> {
    fn eq(&self, other: &Self) -> bool {
        let (mut a, mut b) = (vec![0; T::PACKED_SIZE], vec![0; T::PACKED_SIZE]);
        self.0.write_le(&mut a);
        other.0.write_le(&mut b);
        a == b
    }
}

impl<T: Element> Element for Bits<T> {
    const ELTYPE: ElType = T::ELTYPE;
    const ELBYTE: usize = T::ELBYTE;
    fn write_le(&self, out: &mut [u8]) {
        self.0.write_le(out);
    }
    fn read_le(bytes: &[u8]) -> rawarray_serde::Result<Self> {
        T::read_le(bytes).map(Bits)
    }
    fn swap_bytes(bytes: &mut [u8]) {
        T::swap_bytes(bytes);
    }
    fn layout() -> rawarray_serde::Layout {
        T::layout()
    }
}

/// The whole file of a 2-D u16 array, big-endian, built by hand.
#[test]
fn big_endian_bytes_built_by_hand() {
    let a = RawArray::from_shape_vec(vec![2, 2], vec![0x0102u16, 0x0304, 0x0506, 0x0708]).unwrap();
    let mut bytes = Vec::new();
    a.write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    let mut want = Vec::new();
    want.extend_from_slice(b"rawarray");
    for w in [1u64, 2, 2, 8, 2, 2, 2] {
        want.extend_from_slice(&w.to_le_bytes());
    }
    want.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(bytes, want);

    // Complex halves are swapped separately: re then im, each big-endian.
    let z = RawArray::scalar(Complex::new(1.0f32, -2.0));
    let mut bytes = Vec::new();
    z.write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    assert_eq!(&bytes[48..], &[0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0]);
}

/// A scalar f64 is a header with ndims 0 and 8 data bytes.
#[test]
fn scalar_bytes_built_by_hand() {
    let bytes = RawArray::scalar(-2.5f64).to_bytes();
    let mut want = Vec::new();
    for w in [0x7961727261776172u64, 0, 3, 8, 8, 0] {
        want.extend_from_slice(&w.to_le_bytes());
    }
    want.extend_from_slice(&(-2.5f64).to_le_bytes());
    assert_eq!(bytes, want);
}

#[test]
fn reshape_and_index_are_checked() {
    let a = RawArray::from_vec((0..24u32).collect());
    let b = a.clone().reshape(vec![2, 3, 4]).unwrap();
    assert_eq!(b.get(&[1, 2, 3]), Some(&(1 + 2 * 2 + 3 * 6)));
    assert_eq!(b.get(&[2, 0, 0]), None);
    assert_eq!(b.get(&[0, 0]), None);
    let e = a.reshape(vec![5, 5]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "24 elements do not fill dims [5, 5] (25 elements)"
    );
    assert!(RawArray::from_shape_vec(vec![u64::MAX, 2], vec![0u8]).is_err());
}

#[test]
fn point_cloud_is_dims_3_by_n() {
    let pts = vec![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let a = RawArray::from_vec(pts.clone());
    let bytes = a.to_bytes();
    let h = Header::decode(&bytes).unwrap();
    assert_eq!(
        (h.eltype, h.elbyte, h.dims.clone()),
        (ElType::Float, 4, vec![3, 2])
    );
    let flat = RawArray::<f32>::from_bytes(&bytes).unwrap();
    assert_eq!(flat.get(&[2, 1]), Some(&6.0));
    assert_eq!(
        RawArray::<[f32; 3]>::from_bytes(&bytes).unwrap().into_vec(),
        pts
    );
}

#[cfg(not(feature = "ndarray"))]
#[test]
#[ignore = "the ndarray feature is off: cargo test -p rawarray-serde --features ndarray runs it"]
fn ndarray_both_ways() {}

#[cfg(feature = "ndarray")]
#[test]
fn ndarray_both_ways() {
    let a = RawArray::from_shape_vec(vec![2, 3, 4], (0..24i32).collect()).unwrap();
    let moved = a.clone();
    let ptr = moved.as_slice().as_ptr();
    let nd = moved.into_ndarray().unwrap();
    assert_eq!(nd.shape(), &[2, 3, 4]);
    assert_eq!(nd.as_ptr(), ptr, "moved, not copied");
    assert_eq!(nd[[1, 2, 3]], *a.get(&[1, 2, 3]).unwrap());
    let back = RawArray::from_ndarray(nd);
    assert_eq!(back, a);
    assert_eq!(back.as_slice().as_ptr(), ptr, "moved back, not copied");

    // A C-order ndarray is copied into column-major order.
    let c = ndarray::Array::from_shape_vec((2, 3), vec![1, 2, 3, 4, 5, 6])
        .unwrap()
        .into_dyn();
    let r = RawArray::from_ndarray(c.clone());
    assert_eq!(r.as_slice(), &[1, 4, 2, 5, 3, 6]);
    for i in 0..2u64 {
        for j in 0..3u64 {
            assert_eq!(r.get(&[i, j]), Some(&c[[i as usize, j as usize]]));
        }
    }
    // A strided view.
    let s = c.slice(ndarray::s![.., ..;2]).to_owned().into_dyn();
    assert_eq!(RawArray::from_ndarray(s).as_slice(), &[1, 4, 3, 6]);
}
