//! The serde mapping, row by row: value -> exact bytes built by hand -> value, the errors of
//! every rejected row, and property round trips. Every row of the README's table is here.

use std::collections::VecDeque;

use half::{bf16, f16};
use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{
    from_reader, from_slice, to_vec, Category, ElType, ErrorKind, Header, RawArray,
};
use serde::{Deserialize, Serialize};

mod common;
use common::Trickle;

/// Reads `bytes` as a `T` through a stream handing out 1 to 7 bytes per read.
fn trickled<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> rawarray_serde::Result<T> {
    from_reader(Trickle {
        bytes,
        phase: bytes.len(),
    })
}

/// A file built by hand: header words, then data.
fn file(eltype: u64, elbyte: u64, dims: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out = b"rawarray".to_vec();
    let size = data.len() as u64;
    for w in [0, eltype, elbyte, size, dims.len() as u64]
        .iter()
        .chain(dims)
    {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// value -> exactly `want` -> value, through slices and readers.
fn loopback<T>(value: &T, want: &[u8])
where
    T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = to_vec(value).unwrap();
    assert_eq!(bytes, want, "bytes of {value:?}");
    assert_eq!(&from_slice::<T>(&bytes).unwrap(), value);
    assert_eq!(&from_reader::<T>(&bytes[..]).unwrap(), value);
    assert_eq!(&trickled::<T>(&bytes).unwrap(), value);
}

#[test]
fn lone_scalars_are_ndims_0() {
    loopback(&-3i8, &file(1, 1, &[], &[0xfd]));
    loopback(&-3i16, &file(1, 2, &[], &(-3i16).to_le_bytes()));
    loopback(&7i32, &file(1, 4, &[], &7i32.to_le_bytes()));
    loopback(&-7i64, &file(1, 8, &[], &(-7i64).to_le_bytes()));
    loopback(
        &(1i128 << 100),
        &file(1, 16, &[], &(1i128 << 100).to_le_bytes()),
    );
    loopback(&200u8, &file(2, 1, &[], &[200]));
    loopback(&60000u16, &file(2, 2, &[], &60000u16.to_le_bytes()));
    loopback(&7u32, &file(2, 4, &[], &7u32.to_le_bytes()));
    loopback(&7u64, &file(2, 8, &[], &7u64.to_le_bytes()));
    loopback(
        &(3u128 << 90),
        &file(2, 16, &[], &(3u128 << 90).to_le_bytes()),
    );
    loopback(&1.5f32, &file(3, 4, &[], &1.5f32.to_le_bytes()));
    loopback(&-0.25f64, &file(3, 8, &[], &(-0.25f64).to_le_bytes()));
}

#[test]
fn bool_char_and_half_floats() {
    // An array of bools is followed by the trailer that marks it bool (as RawArray<bool>).
    let mut bools = file(2, 1, &[3], &[1, 0, 1]);
    let marker = rawarray_serde::Trailer::for_element::<bool>(serde_json::Value::Null).unwrap();
    bools.extend_from_slice(&marker.encode_block(bools.len() as u64));
    loopback(&vec![true, false, true], &bools);
    loopback(
        &vec!['a', 'é', '🦀'],
        &file(
            2,
            4,
            &[3],
            &le(&['a' as u32, 'é' as u32, '🦀' as u32], u32::to_le_bytes),
        ),
    );
    let h = vec![f16::from_f32(1.5), f16::from_f32(-2.0)];
    loopback(&h, &file(3, 2, &[2], &le(&h, f16::to_le_bytes)));
    let b = vec![bf16::from_f32(1.5), bf16::from_f32(-2.0)];
    loopback(&b, &file(5, 2, &[2], &le(&b, bf16::to_le_bytes)));
    // A bool byte other than 0 or 1 is an error naming it.
    let e = from_slice::<Vec<bool>>(&file(2, 1, &[2], &[1, 7])).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::InvalidValue {
                what: "bool",
                index: 1,
                value: 7
            }
        ),
        "{e:?}"
    );
}

#[test]
fn complex_is_eltype_4_and_float_pairs_are_a_dim() {
    let z = vec![Complex::new(1.0f32, -1.0), Complex::new(2.0, 0.5)];
    let data: Vec<u8> = le(&[1.0f32, -1.0, 2.0, 0.5], f32::to_le_bytes);
    loopback(&z, &file(4, 8, &[2], &data));
    let z64 = vec![Complex::new(1.0f64, -1.0)];
    loopback(
        &z64,
        &file(4, 16, &[1], &le(&[1.0f64, -1.0], f64::to_le_bytes)),
    );
    let zh = vec![Complex::new(f16::ONE, f16::NEG_ONE)];
    loopback(
        &zh,
        &file(4, 4, &[1], &le(&[f16::ONE, f16::NEG_ONE], f16::to_le_bytes)),
    );
    // The same numbers as [f32; 2] and (f32, f32): a float file with a leading dim of 2.
    loopback(
        &vec![[1.0f32, -1.0], [2.0, 0.5]],
        &file(3, 4, &[2, 2], &data),
    );
    loopback(
        &vec![(1.0f32, -1.0f32), (2.0, 0.5)],
        &file(3, 4, &[2, 2], &data),
    );
    // Each reads the other's file: serde cannot tell them apart when reading, and both are exact.
    let as_pairs: Vec<[f32; 2]> = from_slice(&to_vec(&z).unwrap()).unwrap();
    assert_eq!(as_pairs, [[1.0, -1.0], [2.0, 0.5]]);
    // A complex scalar.
    loopback(
        &Complex::new(3.0f64, 4.0),
        &file(4, 16, &[], &le(&[3.0f64, 4.0], f64::to_le_bytes)),
    );
}

#[test]
fn sequences_are_dims() {
    let v = vec![1u16, 2, 3];
    let want = file(2, 2, &[3], &le(&v, u16::to_le_bytes));
    loopback(&v, &want);
    assert_eq!(to_vec(&v[..]).unwrap(), want, "&[T]");
    loopback(&[1u16, 2, 3], &want);
    loopback(&VecDeque::from(v.clone()), &want);
    loopback(&(1u16, 2u16, 3u16), &want);
}

#[test]
fn nested_sequences_innermost_first() {
    // Vec<[f32; 3]> of n is [3, n]: numpy sees (n, 3).
    let pts = vec![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let data = le(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], f32::to_le_bytes);
    loopback(&pts, &file(3, 4, &[3, 2], &data));
    loopback(
        &vec![vec![1.0f32, 2.0, 3.0], vec![4.0, 5.0, 6.0]],
        &file(3, 4, &[3, 2], &data),
    );
    loopback(
        &[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]],
        &file(3, 4, &[3, 2], &data),
    );
    let cube: Vec<Vec<Vec<i8>>> = vec![vec![vec![1, 2], vec![3, 4], vec![5, 6]]; 2];
    let flat: Vec<u8> = [1u8, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6].to_vec();
    loopback(&cube, &file(1, 1, &[2, 3, 2], &flat));
    // The typed array writer gives the same bytes.
    assert_eq!(
        to_vec(&pts).unwrap(),
        RawArray::from_vec(pts.clone()).to_bytes()
    );
}

#[test]
fn ragged_sequences_name_the_index_and_both_lengths() {
    // Rows of different lengths at the top level are a ragged file (tests/ragged.rs); ragged
    // below it is an error naming the index.
    let top = to_vec(&vec![vec![1u8, 2, 3], vec![4, 5, 6], vec![7, 8]]).unwrap();
    assert_eq!(top[8], 8, "flag bit 3: ragged");
    let e = to_vec(&vec![vec![vec![1u8, 2, 3], vec![4, 5, 6], vec![7, 8]]]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, field: None, found, expected: 3 }
            if index == &[0, 2] && found == "2"),
        "{e:?}"
    );
    assert_eq!(e.category(), Category::Usage);
    // The README's mapping table shows this message.
    assert_eq!(
        e.to_string(),
        "not rectangular: element [0, 2] has length 2, expected 3"
    );
    let e = to_vec(&vec![
        vec![vec![1u8, 2], vec![3, 4]],
        vec![vec![1, 2], vec![3]],
    ])
    .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, found, expected: 2, .. }
            if index == &[1, 1] && found == "1"),
        "{e:?}"
    );
    // Ragged inside the first element.
    let e = to_vec(&vec![vec![vec![1u8, 2], vec![3]]]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, found, expected: 2, .. }
            if index == &[0, 1] && found == "1"),
        "{e:?}"
    );
    // A ragged sequence found late leaves no file behind with to_file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ragged.ra");
    std::fs::write(&path, b"old content").unwrap();
    let mut v = vec![vec![vec![0u32; 4]]; 100_000];
    v[99_999][0].pop();
    assert!(rawarray_serde::to_file(&path, &v).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), b"old content");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn strings_and_bytes_are_uint8() {
    loopback(&"héllo".to_string(), &file(2, 1, &[6], "héllo".as_bytes()));
    let bytes = to_vec("abc").unwrap();
    let s: &str = from_slice(&bytes).unwrap();
    assert_eq!(s, "abc");
    assert_eq!(s.as_ptr(), bytes[56..].as_ptr(), "borrowed from the input");
    let buf = serde_bytes::ByteBuf::from(vec![0u8, 255, 7]);
    loopback(&buf, &file(2, 1, &[3], &[0, 255, 7]));
    let buf_file = to_vec(&buf).unwrap();
    let b: &serde_bytes::Bytes = from_slice(&buf_file).unwrap();
    assert_eq!(&b[..], &[0, 255, 7]);
    // Equal-length strings make a 2-D array.
    loopback(
        &vec!["ab".to_string(), "cd".to_string()],
        &file(2, 1, &[2, 2], b"abcd"),
    );
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

fn foo(i: u32) -> Foo {
    let mut info = [0u8; 12];
    info[..5].copy_from_slice(b"hello");
    info[11] = i as u8;
    Foo {
        info,
        index: i,
        v: std::array::from_fn(|k| k as f64 + f64::from(i) * 0.5),
    }
}

/// The seed's struct foo, laid out as C lays it out (12 + 4 + 64 bytes, no padding).
fn foo_bytes(f: &Foo) -> Vec<u8> {
    let mut b = f.info.to_vec();
    b.extend_from_slice(&f.index.to_le_bytes());
    for x in f.v {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b
}

#[test]
fn structs_are_packed_records() {
    let foos: Vec<Foo> = (0..3).map(foo).collect();
    let data: Vec<u8> = foos.iter().flat_map(foo_bytes).collect();
    assert_eq!(data.len(), 240);
    loopback(&foos, &file(0, 80, &[3], &data));
    loopback(&foos[1], &file(0, 80, &[], &foo_bytes(&foos[1])));

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Pair(u8, f32);
    loopback(&vec![Pair(1, 2.0)], &file(0, 5, &[1], &[1, 0, 0, 0, 0x40]));
    // A heterogeneous tuple is a record too.
    loopback(
        &vec![(7u32, 1.0f64), (8, 2.0)],
        &file(0, 12, &[2], &{
            let mut d = 7u32.to_le_bytes().to_vec();
            d.extend_from_slice(&1.0f64.to_le_bytes());
            d.extend_from_slice(&8u32.to_le_bytes());
            d.extend_from_slice(&2.0f64.to_le_bytes());
            d
        }),
    );
    // 2-D arrays of records.
    let grid = vec![
        vec![foo(0), foo(1)],
        vec![foo(2), foo(3)],
        vec![foo(4), foo(5)],
    ];
    let back: Vec<Vec<Foo>> = from_slice(&to_vec(&grid).unwrap()).unwrap();
    assert_eq!(back, grid);
    assert_eq!(
        Header::decode(&to_vec(&grid).unwrap()).unwrap().dims,
        [2, 3]
    );
}

#[test]
fn vec_fields_are_packed_inline_and_must_agree() {
    #[derive(Serialize, Debug)]
    struct Sample {
        id: u16,
        trace: Vec<f32>,
        name: String,
    }
    let s = |id, n: usize, name: &str| Sample {
        id,
        trace: vec![0.5; n],
        name: name.into(),
    };
    let bytes = to_vec(&vec![s(1, 2, "ab"), s(2, 2, "cd")]).unwrap();
    let mut one = 1u16.to_le_bytes().to_vec();
    one.extend_from_slice(&le(&[0.5f32, 0.5], f32::to_le_bytes));
    one.extend_from_slice(b"ab");
    let mut two = 2u16.to_le_bytes().to_vec();
    two.extend_from_slice(&le(&[0.5f32, 0.5], f32::to_le_bytes));
    two.extend_from_slice(b"cd");
    assert_eq!(bytes, file(0, 12, &[2], &[one, two].concat()));
    let e = to_vec(&vec![s(1, 2, "ab"), s(2, 3, "cd")]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, field: Some(f), found, expected: 2 }
            if index == &[1] && f == "trace" && found == "3"),
        "{e:?}"
    );
    let e = to_vec(&vec![s(1, 2, "ab"), s(2, 2, "xyz")]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, field: Some(f), found, expected: 2 }
            if index == &[1] && f == "name" && found == "3 bytes"),
        "{e:?}"
    );
}

#[test]
fn unit_enum_variants_are_u32_indices() {
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Phase {
        Solid,
        Liquid,
        Gas,
    }
    loopback(
        &vec![Phase::Gas, Phase::Solid],
        &file(2, 4, &[2], &le(&[2u32, 0], u32::to_le_bytes)),
    );
    assert!(from_slice::<Vec<Phase>>(&file(2, 4, &[1], &9u32.to_le_bytes())).is_err());
}

#[test]
fn unsupported_types_are_errors_naming_the_type() {
    #[derive(Serialize)]
    enum WithData {
        A(u8),
    }
    #[derive(Serialize)]
    struct Unit;
    let what = |r: rawarray_serde::Result<Vec<u8>>| {
        let e = r.unwrap_err();
        assert_eq!(e.category(), Category::Usage, "{e}");
        match e.into_kind() {
            ErrorKind::Unrepresentable { what } => what,
            other => panic!("not Unrepresentable: {other:?}"),
        }
    };
    assert_eq!(what(to_vec(&Some(1u8))), "Option (Some)");
    assert_eq!(what(to_vec(&vec![None::<u8>])), "Option (None)");
    let map: std::collections::BTreeMap<u8, u8> = [(1, 2)].into();
    assert_eq!(what(to_vec(&map)), "a map");
    assert_eq!(
        what(to_vec(&WithData::A(1))),
        "enum variant with data WithData::A"
    );
    assert_eq!(what(to_vec(&())), "unit `()`");
    assert_eq!(what(to_vec(&Unit)), "unit struct Unit");
}

#[test]
fn arrays_of_ra_files_nest() {
    let parts: Vec<RawArray<f32>> = (0..3)
        .map(|i| RawArray::from_shape_vec(vec![2, 2], vec![i as f32; 4]).unwrap())
        .collect();
    let bytes = to_vec(&parts).unwrap();
    let h = Header::decode(&bytes).unwrap();
    let one = parts[0].to_bytes();
    assert_eq!(
        (h.eltype, h.elbyte, h.dims.clone()),
        (ElType::User, one.len() as u64, vec![3])
    );
    // Each element is itself a valid .ra file.
    let data = &bytes[h.encoded_len()..];
    for (i, chunk) in data.chunks(one.len()).enumerate() {
        assert_eq!(RawArray::<f32>::from_bytes(chunk).unwrap(), parts[i]);
    }
    let back: Vec<RawArray<f32>> = from_slice(&bytes).unwrap();
    assert_eq!(back, parts);
    // A whole file read as a RawArray through serde.
    let whole: RawArray<f32> = from_slice(&one).unwrap();
    assert_eq!(whole, parts[0]);
    // Embedded files of different sizes are an error.
    let mixed = vec![parts[0].clone(), RawArray::from_vec(vec![1.0f32])];
    let e = to_vec(&mixed).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, .. } if index == &[1]),
        "{e:?}"
    );
}

#[test]
fn empty_sequences_of_plain_scalars_keep_their_type_others_are_uint8() {
    // A slice, Vec or VecDeque of plain scalars is written whole, so even an empty one says its
    // type, exactly as the typed writer does.
    let empty: Vec<f64> = vec![];
    let bytes = to_vec(&empty).unwrap();
    assert_eq!(bytes, file(3, 8, &[0], &[]));
    assert_eq!(bytes, RawArray::<f64>::from_vec(vec![]).to_bytes());
    assert_eq!(
        to_vec(&std::collections::VecDeque::<u16>::new()).unwrap(),
        file(2, 2, &[0], &[])
    );
    assert_eq!(from_slice::<Vec<f64>>(&bytes).unwrap(), empty);
    // Other empty sequences show no element to take the type from: an empty uint8 array.
    let no_foo: Vec<Foo> = vec![];
    let untyped = to_vec(&no_foo).unwrap();
    assert_eq!(untyped, file(2, 1, &[0], &[]));
    // Reading an empty array into any sequence type gives an empty sequence.
    assert_eq!(from_slice::<Vec<f64>>(&untyped).unwrap(), empty);
    assert_eq!(from_slice::<Vec<Foo>>(&untyped).unwrap(), vec![]);
    assert_eq!(from_slice::<Vec<Foo>>(&bytes).unwrap(), vec![]);
    // Empty rows inside the first element: no scalar was seen, uint8 again.
    let inner_empty: Vec<Vec<f32>> = vec![vec![], vec![]];
    assert_eq!(to_vec(&inner_empty).unwrap(), file(2, 1, &[0, 2], &[]));
    assert_eq!(
        from_slice::<Vec<Vec<f32>>>(&to_vec(&inner_empty).unwrap()).unwrap(),
        inner_empty
    );
}

#[test]
fn reading_is_strict() {
    let f32s = to_vec(&vec![1.0f32, 2.0]).unwrap();
    let e = from_slice::<Vec<f64>>(&f32s).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TypeMismatch {
            file_eltype: ElType::Float, file_elbyte: 4, requested, requested_elbyte: 8, ..
        } if requested == "f64"),
        "{e:?}"
    );
    assert_eq!(e.category(), Category::Data);
    let e = from_slice::<Vec<i32>>(&f32s).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TypeMismatch { requested, .. } if requested == "i32"),
        "{e:?}"
    );
    // Fixed-size arrays must match the dims.
    let e = from_slice::<[f32; 3]>(&f32s).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::DimsMismatch { found, .. } if found == &[2]),
        "{e:?}"
    );
    // A scalar cannot be read where dims remain.
    assert!(from_slice::<f32>(&f32s).is_err());
    // A record must consume exactly elbyte bytes: name, elbyte, consumed.
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Short {
        info: [u8; 12],
        index: u32,
    }
    let foos = to_vec(&vec![foo(1)]).unwrap();
    let e = from_slice::<Vec<Short>>(&foos).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::RecordSize { record, elbyte: 80, consumed: 16 }
            if record == "Short"),
        "{e:?}"
    );
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Long {
        foo: [[u8; 16]; 5],
        more: u8,
    }
    let e = from_slice::<Vec<Long>>(&foos).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::RecordSize { record, elbyte: 80, .. } if record == "Long"),
        "{e:?}"
    );
}

#[test]
fn deserialize_any_reads_every_primitive_eltype() {
    let v: serde_json::Value =
        from_slice(&to_vec(&vec![vec![1i16, -2], vec![3, 4]]).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!([[1, -2], [3, 4]]));
    let v: serde_json::Value =
        from_slice(&to_vec(&vec![Complex::new(1.0f32, 2.0)]).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!([[1.0, 2.0]]));
    let v: serde_json::Value =
        from_slice(&to_vec(&vec![f16::from_f32(0.5), f16::ONE]).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!([0.5, 1.0]));
    let v: serde_json::Value = from_slice(&to_vec(&vec![bf16::from_f32(-2.0)]).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!([-2.0]));
    let v: serde_json::Value = from_slice(&to_vec(&7u64).unwrap()).unwrap();
    assert_eq!(v, serde_json::json!(7));
    // User-defined elements come out as their bytes (serde_json::Value has no bytes; a
    // visitor that takes them sees them).
    struct AnyBytes(Vec<u8>);
    impl<'de> Deserialize<'de> for AnyBytes {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl serde::de::Visitor<'_> for V {
                type Value = AnyBytes;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E>(self, b: &[u8]) -> Result<AnyBytes, E> {
                    Ok(AnyBytes(b.to_vec()))
                }
            }
            d.deserialize_any(V)
        }
    }
    let v: Vec<AnyBytes> = from_slice(&to_vec(&vec![(1u8, 2u16), (3, 4)]).unwrap()).unwrap();
    assert_eq!(
        v.iter().map(|b| b.0.clone()).collect::<Vec<_>>(),
        [[1, 2, 0], [3, 4, 0]]
    );
    // The reference test.ra: 4 rows of 3 complex64.
    let bytes = std::fs::read(common::reference("test.ra")).unwrap();
    let rows: Vec<Vec<Complex<f32>>> = from_reader(&bytes[..]).unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r.len() == 3));
    assert_eq!(rows[1][0], Complex::new(3.0, -1.0 / 3.0));
}

#[test]
fn compressed_and_big_endian_files_read_through_serde() {
    let a = RawArray::from_shape_vec(vec![3, 2], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    for opts in [
        rawarray_serde::WriteOptions::new().compress(true),
        rawarray_serde::WriteOptions::new().big_endian(true),
    ] {
        let mut bytes = Vec::new();
        a.write_to_with(&mut bytes, &opts).unwrap();
        let v: Vec<[f64; 3]> = from_slice(&bytes).unwrap();
        assert_eq!(v, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(trickled::<Vec<[f64; 3]>>(&bytes).unwrap(), v);
    }
    let z = std::fs::read(common::reference("mnist_8_z.ra")).unwrap();
    let img: Vec<Vec<Vec<u8>>> = from_slice(&z).unwrap();
    assert_eq!((img.len(), img[0].len(), img[0][0].len()), (3, 28, 28));
}

/// For every element type, `to_vec(&vec)` is byte-identical to the typed writer, and reads back.
fn two_paths<T>(v: Vec<T>)
where
    T: rawarray_serde::Element
        + Serialize
        + serde::de::DeserializeOwned
        + PartialEq
        + std::fmt::Debug
        + Clone,
{
    let bytes = to_vec(&v).unwrap();
    if !v.is_empty() {
        assert_eq!(bytes, RawArray::from_vec(v.clone()).to_bytes());
    }
    assert_eq!(from_slice::<Vec<T>>(&bytes).unwrap(), v);
    assert_eq!(trickled::<Vec<T>>(&bytes).unwrap(), v);
    assert_eq!(
        from_slice::<Vec<T>>(&RawArray::from_vec(v.clone()).to_bytes()).unwrap(),
        v
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test] fn p_i8(v in prop::collection::vec(any::<i8>(), 0..50)) { two_paths(v) }
    #[test] fn p_i16(v in prop::collection::vec(any::<i16>(), 0..50)) { two_paths(v) }
    #[test] fn p_i32(v in prop::collection::vec(any::<i32>(), 0..50)) { two_paths(v) }
    #[test] fn p_i64(v in prop::collection::vec(any::<i64>(), 0..50)) { two_paths(v) }
    #[test] fn p_i128(v in prop::collection::vec(any::<i128>(), 0..50)) { two_paths(v) }
    #[test] fn p_u8(v in prop::collection::vec(any::<u8>(), 0..50)) { two_paths(v) }
    #[test] fn p_u16(v in prop::collection::vec(any::<u16>(), 0..50)) { two_paths(v) }
    #[test] fn p_u32(v in prop::collection::vec(any::<u32>(), 0..50)) { two_paths(v) }
    #[test] fn p_u64(v in prop::collection::vec(any::<u64>(), 0..50)) { two_paths(v) }
    #[test] fn p_u128(v in prop::collection::vec(any::<u128>(), 0..50)) { two_paths(v) }
    #[test] fn p_bool(v in prop::collection::vec(any::<bool>(), 0..50)) { two_paths(v) }
    #[test] fn p_char(v in prop::collection::vec(any::<char>(), 0..50)) { two_paths(v) }
    #[test] fn p_f32(v in prop::collection::vec(-1e30f32..1e30, 0..50)) { two_paths(v) }
    #[test] fn p_f64(v in prop::collection::vec(-1e300f64..1e300, 0..50)) { two_paths(v) }
    #[test] fn p_f16(v in prop::collection::vec(0u16..0x7c00, 0..50)) { two_paths(v.into_iter().map(f16::from_bits).collect()) }
    #[test] fn p_bf16(v in prop::collection::vec(0u16..0x7f80, 0..50)) { two_paths(v.into_iter().map(bf16::from_bits).collect()) }
    #[test] fn p_c32(v in prop::collection::vec((-1e30f32..1e30, -1e30f32..1e30), 0..50)) {
        two_paths(v.into_iter().map(|(a, b)| Complex::new(a, b)).collect());
    }
    #[test] fn p_c64(v in prop::collection::vec((-1e300f64..1e300, -1e300f64..1e300), 0..50)) {
        two_paths(v.into_iter().map(|(a, b)| Complex::new(a, b)).collect());
    }
    #[test] fn p_points(v in prop::collection::vec(any::<[i32; 3]>(), 1..50)) { two_paths(v) }

    #[test]
    fn p_2d_and_3d(n in 1usize..6, m in 1usize..6, k in 1usize..6, seed in any::<u32>()) {
        let v2: Vec<Vec<u32>> = (0..n).map(|i| (0..m).map(|j| seed ^ (i * 7 + j) as u32).collect()).collect();
        let b2 = to_vec(&v2).unwrap();
        prop_assert_eq!(&Header::decode(&b2).unwrap().dims, &vec![m as u64, n as u64]);
        prop_assert_eq!(trickled::<Vec<Vec<u32>>>(&b2).unwrap(), v2.clone());
        prop_assert_eq!(from_slice::<Vec<Vec<u32>>>(&b2).unwrap(), v2);
        let v3: Vec<Vec<Vec<f64>>> = (0..n).map(|i| (0..m).map(|j| (0..k).map(|l| (i + 10 * j + 100 * l) as f64).collect()).collect()).collect();
        let b3 = to_vec(&v3).unwrap();
        prop_assert_eq!(&Header::decode(&b3).unwrap().dims, &vec![k as u64, m as u64, n as u64]);
        prop_assert_eq!(trickled::<Vec<Vec<Vec<f64>>>>(&b3).unwrap(), v3.clone());
        prop_assert_eq!(from_slice::<Vec<Vec<Vec<f64>>>>(&b3).unwrap(), v3);
    }

    #[test]
    fn p_structs_and_strings(ids in prop::collection::vec(any::<u32>(), 1..20), s in "[a-z]{0,12}") {
        let foos: Vec<Foo> = ids.iter().map(|&i| foo(i)).collect();
        prop_assert_eq!(trickled::<Vec<Foo>>(&to_vec(&foos).unwrap()).unwrap(), foos.clone());
        prop_assert_eq!(from_slice::<Vec<Foo>>(&to_vec(&foos).unwrap()).unwrap(), foos);
        prop_assert_eq!(trickled::<String>(&to_vec(&s).unwrap()).unwrap(), s.clone());
        prop_assert_eq!(from_slice::<String>(&to_vec(&s).unwrap()).unwrap(), s);
    }
}
