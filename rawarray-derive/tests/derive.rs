//! `#[derive(RaRecord)]`: sizes and offsets, bytes against the C layout built by hand, headers,
//! round trips of every field kind, the one-copy path for `Pod` records, schemas and numpy
//! dtypes.

use half::{bf16, f16};
use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{ElType, Element, ErrorKind, Field, Layout, RaRecord, RawArray, WriteOptions};

/// The C struct `struct foo { char info[12]; uint32_t index; double v[8]; }`.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

/// The same fields as `Foo`, as plain old data with C layout: the one-copy path.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct PodFoo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

/// The inherent constants work in const context where `Element` is not imported.
mod without_the_trait {
    use rawarray_serde::RaRecord;

    #[derive(RaRecord)]
    #[allow(dead_code)]
    struct Foo {
        info: [u8; 12],
        index: u32,
        v: [f64; 8],
    }

    const _: () = assert!(Foo::ELBYTE == 80);
    const _: () = assert!(Foo::OFFSETS[0] == 0 && Foo::OFFSETS[1] == 12 && Foo::OFFSETS[2] == 16);
    const _: [u8; Foo::ELBYTE] = [0; 80];
}

fn foo(i: u32) -> Foo {
    let mut info = [0u8; 12];
    info[..5].copy_from_slice(b"rec  ");
    info[4] = b'0' + (i % 10) as u8;
    Foo {
        info,
        index: 1000 + i,
        v: std::array::from_fn(|k| f64::from(i) * 0.5 - k as f64 * 1.25),
    }
}

fn pod_foo(i: u32) -> PodFoo {
    let Foo { info, index, v } = foo(i);
    PodFoo { info, index, v }
}

/// One record laid out by hand as the C compiler lays out `struct foo` on a little-endian
/// machine: 12 chars at 0, a uint32 at 12, 8 doubles at 16 (aligned, so no padding), 80 bytes.
fn c_struct_bytes(f: &Foo) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&f.info);
    out.extend_from_slice(&f.index.to_le_bytes());
    for x in f.v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    assert_eq!(out.len(), 80);
    out
}

/// The header of a little-endian uncompressed file, built field by field.
fn header_bytes(eltype: u64, elbyte: u64, dims: &[u64]) -> Vec<u8> {
    let size = elbyte * dims.iter().product::<u64>();
    let mut out = b"rawarray".to_vec();
    for word in [0, eltype, elbyte, size, dims.len() as u64] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for d in dims {
        out.extend_from_slice(&d.to_le_bytes());
    }
    out
}

#[test]
fn foo_sizes_and_offsets() {
    assert_eq!(Foo::ELBYTE, 80);
    assert_eq!(Foo::OFFSETS, [0, 12, 16]);
    assert_eq!(<Foo as Element>::ELTYPE, ElType::User);
    assert_eq!(<Foo as Element>::ELBYTE, 80);
    assert_eq!(<Foo as Element>::PACKED_SIZE, 80);
    let mut dims = Vec::new();
    Foo::inner_dims(&mut dims);
    assert!(dims.is_empty(), "a record adds no dims");
}

#[test]
fn one_record_is_the_c_struct() {
    let f = foo(7);
    let mut packed = [0u8; 80];
    f.write_le(&mut packed);
    assert_eq!(packed.to_vec(), c_struct_bytes(&f));
    assert_eq!(Foo::read_le(&c_struct_bytes(&f)).unwrap(), f);
}

#[test]
fn file_of_foo_has_the_hand_built_header_and_records() {
    let records: Vec<Foo> = (0..3).map(foo).collect();
    let mut expected = header_bytes(0, 80, &[3]);
    for r in &records {
        expected.extend(c_struct_bytes(r));
    }
    let bytes = RawArray::from_vec(records.clone()).to_bytes();
    assert_eq!(bytes, expected);
    // And a file built by hand reads back as the records.
    let back: RawArray<Foo> = RawArray::from_bytes(&expected).unwrap();
    assert_eq!(back.dims(), &[3]);
    assert_eq!(back.into_vec(), records);
}

#[test]
fn foo_file_round_trips_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foo.ra");
    let a = RawArray::from_vec((0..10).map(foo).collect());
    a.write_file(&path).unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(&on_disk[..56], &header_bytes(0, 80, &[10])[..]);
    assert_eq!(
        &on_disk[56 + 80 * 4..56 + 80 * 5],
        &c_struct_bytes(&foo(4))[..]
    );
    assert_eq!(RawArray::<Foo>::read_file(&path).unwrap(), a);
}

#[test]
fn big_endian_records_reverse_each_scalar() {
    let records: Vec<Foo> = (0..2).map(foo).collect();
    let mut expected_data = Vec::new();
    for r in &records {
        expected_data.extend_from_slice(&r.info);
        expected_data.extend_from_slice(&r.index.to_be_bytes());
        for x in r.v {
            expected_data.extend_from_slice(&x.to_be_bytes());
        }
    }
    let a = RawArray::from_vec(records);
    let mut bytes = Vec::new();
    a.write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    assert_eq!(
        u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
        1,
        "flags"
    );
    assert_eq!(&bytes[56..], &expected_data[..]);
    assert_eq!(RawArray::<Foo>::from_bytes(&bytes).unwrap(), a);
    assert_eq!(RawArray::<Foo>::read_from(&bytes[..]).unwrap(), a);
}

#[test]
fn pod_record_takes_the_one_copy_path_with_the_same_bytes() {
    let pods: Vec<PodFoo> = (0..4).map(pod_foo).collect();
    let plain: Vec<Foo> = (0..4).map(foo).collect();
    assert!(PodFoo::as_pod_bytes(&pods).is_some());
    assert!(PodFoo::zeroed_pod_vec(2).is_some());
    assert!(Foo::as_pod_bytes(&plain).is_none());
    assert!(Foo::zeroed_pod_vec(2).is_none());
    // The one-copy view is the packed bytes, and a whole file is byte-identical.
    assert_eq!(
        PodFoo::as_pod_bytes(&pods[1..2]).unwrap(),
        &c_struct_bytes(&plain[1])[..]
    );
    let pod_file = RawArray::from_vec(pods.clone()).to_bytes();
    assert_eq!(pod_file, RawArray::from_vec(plain).to_bytes());
    assert_eq!(
        RawArray::<PodFoo>::from_bytes(&pod_file)
            .unwrap()
            .into_vec(),
        pods
    );
    let mut be = Vec::new();
    RawArray::from_vec(pods.clone())
        .write_to_with(&mut be, &WriteOptions::new().big_endian(true))
        .unwrap();
    assert_eq!(
        RawArray::<PodFoo>::read_from(&be[..]).unwrap().into_vec(),
        pods
    );
}

/// `repr(packed)`: fields are unaligned, so the generated code copies them instead of borrowing.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, packed)]
struct Packed {
    tag: u8,
    value: u32,
    scale: f64,
}

#[test]
fn packed_pod_record_is_one_copy_and_matches_hand_bytes() {
    assert_eq!(Packed::OFFSETS, [0, 1, 5]);
    let p = Packed {
        tag: 9,
        value: 0x0102_0304,
        scale: -2.5,
    };
    let mut expected = vec![9, 4, 3, 2, 1];
    expected.extend_from_slice(&(-2.5f64).to_le_bytes());
    let mut packed = [0u8; 13];
    p.write_le(&mut packed);
    assert_eq!(packed.to_vec(), expected);
    assert_eq!(Packed::as_pod_bytes(&[p]).unwrap(), &expected[..]);
    let a = RawArray::from_vec(vec![p; 3]);
    assert_eq!(RawArray::<Packed>::from_bytes(&a.to_bytes()).unwrap(), a);
}

/// `NoUninit` but not `Pod` (a `bool` has invalid bit patterns): one-copy writes only.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::NoUninit)]
#[repr(C)]
struct Switch {
    on: bool,
    level: u8,
}

#[test]
fn no_uninit_record_writes_in_one_copy_and_checks_on_read() {
    let s = [
        Switch { on: true, level: 3 },
        Switch {
            on: false,
            level: 200,
        },
    ];
    assert_eq!(Switch::as_pod_bytes(&s).unwrap(), &[1, 3, 0, 200]);
    assert!(Switch::zeroed_pod_vec(1).is_none());
    let mut bytes = RawArray::from_vec(s.to_vec()).to_bytes();
    assert_eq!(
        RawArray::<Switch>::from_bytes(&bytes).unwrap().as_slice(),
        &s
    );
    // A bool byte of 2 in the second record is rejected, naming the record.
    bytes[56 + 2] = 2;
    let err = RawArray::<Switch>::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::InvalidValue {
                what: "bool",
                index: 1,
                value: 2
            }
        ),
        "{err}"
    );
}

#[test]
fn read_le_rejects_a_slice_of_the_wrong_length() {
    let err = Foo::read_le(&[0u8; 79]).unwrap_err();
    assert!(err.to_string().contains("80"), "{err}");
}

#[test]
fn reading_another_record_type_is_a_type_mismatch() {
    let bytes = RawArray::from_vec(vec![foo(1)]).to_bytes();
    let err = RawArray::<Packed>::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
        "{err}"
    );
}

// ---- schemas and numpy dtypes --------------------------------------------------------------

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Track {
    #[ra(rename = "track_id")]
    id: u16,
    start: Point,
    path: [Point; 2],
    r#type: i8,
}

#[test]
fn foo_numpy_descr() {
    assert_eq!(
        Foo::layout().numpy_descr(),
        "[('info', '|u1', (12,)), ('index', '<u4'), ('v', '<f8', (8,))]"
    );
}

#[test]
fn layout_has_renamed_fields_offsets_and_nested_records() {
    let point = |name: &str| Layout::Record {
        name: name.into(),
        fields: ["x", "y", "z"]
            .iter()
            .enumerate()
            .map(|(i, n)| Field {
                name: n.to_string(),
                offset: 4 * i as u64,
                layout: Layout::scalar(ElType::Float, 4),
            })
            .collect(),
    };
    let expected = Layout::Record {
        name: "Track".into(),
        fields: vec![
            Field {
                name: "track_id".into(),
                offset: 0,
                layout: Layout::scalar(ElType::Uint, 2),
            },
            Field {
                name: "start".into(),
                offset: 2,
                layout: point("Point"),
            },
            Field {
                name: "path".into(),
                offset: 14,
                layout: Layout::Array {
                    len: 2,
                    item: Box::new(point("Point")),
                },
            },
            Field {
                name: "type".into(),
                offset: 38,
                layout: Layout::scalar(ElType::Int, 1),
            },
        ],
    };
    assert_eq!(Track::layout(), expected);
    assert_eq!(Track::ELBYTE, 39);
    assert_eq!(Track::layout().size(), 39);
}

#[test]
fn nested_record_numpy_descr() {
    let p = "[('x', '<f4'), ('y', '<f4'), ('z', '<f4')]";
    assert_eq!(
        Track::layout().numpy_descr(),
        format!("[('track_id', '<u2'), ('start', {p}), ('path', {p}, (2,)), ('type', '|i1')]")
    );
}

/// A tuple struct: fields are named by their index.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Rgb(u8, u8, #[ra(rename = "blue")] u8);

#[test]
fn tuple_struct_fields_are_named_by_index() {
    assert_eq!(
        Rgb::layout().numpy_descr(),
        "[('0', '|u1'), ('1', '|u1'), ('blue', '|u1')]"
    );
    let mut out = [0u8; 3];
    Rgb(1, 2, 3).write_le(&mut out);
    assert_eq!(out, [1, 2, 3]);
}

/// A generic record: an element whenever its fields are.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Pair<T> {
    first: T,
    second: T,
}

const _: () = assert!(Pair::<f64>::ELBYTE == 16);
const _: () = assert!(Pair::<Point>::OFFSETS[1] == 12);

#[test]
fn generic_record_sizes_follow_the_parameter() {
    assert_eq!(Pair::<u8>::ELBYTE, 2);
    assert_eq!(Pair::<[u16; 3]>::OFFSETS, [0, 6]);
    assert_eq!(
        Pair::<Complex<f32>>::layout().numpy_descr(),
        "[('first', '<c8'), ('second', '<c8')]"
    );
    // Generic records always pack field by field.
    assert!(Pair::<u32>::as_pod_bytes(&[]).is_none());
}

// ---- arrays of records ----------------------------------------------------------------------

#[test]
fn two_d_array_of_records() {
    let points: Vec<Point> = (0..6)
        .map(|i| Point {
            x: i as f32,
            y: -(i as f32),
            z: 0.5,
        })
        .collect();
    let a = RawArray::from_shape_vec(vec![3, 2], points).unwrap();
    let bytes = a.to_bytes();
    assert_eq!(&bytes[..64], &header_bytes(0, 12, &[3, 2])[..]);
    // Column-major: [1, 1] is value 1 + 3 * 1, the fifth record in the file.
    assert_eq!(a.get(&[1, 1]).unwrap().x, 4.0);
    assert_eq!(&bytes[64 + 4 * 12..64 + 4 * 12 + 4], &4.0f32.to_le_bytes());
    let back: RawArray<Point> = RawArray::from_bytes(&bytes).unwrap();
    assert_eq!(back, a);
}

#[test]
fn fixed_array_of_records_adds_a_dim() {
    let a = RawArray::from_vec(vec![
        [Point {
            x: 1.0,
            y: 2.0,
            z: 3.0
        }; 2];
        5
    ]);
    let h = a.header();
    assert_eq!(
        (h.eltype, h.elbyte, h.dims.clone()),
        (ElType::User, 12, vec![2, 5])
    );
    assert_eq!(RawArray::from_bytes(&a.to_bytes()).unwrap(), a);
}

// ---- round trips of every field kind ---------------------------------------------------------

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Scalars {
    a: i8,
    b: i16,
    c: i32,
    d: i64,
    e: i128,
    f: u8,
    g: u16,
    h: u32,
    i: u64,
    j: u128,
    k: f32,
    l: f64,
}

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Everything {
    flag: bool,
    letter: char,
    half: f16,
    brain: bf16,
    z: Complex<f32>,
    zz: [Complex<f64>; 2],
    scalars: Scalars,
    grid: [[u16; 2]; 3],
    points: [Point; 2],
    color: Rgb,
    pair: Pair<i32>,
}

fn finite32() -> impl Strategy<Value = f32> {
    -1e6f32..1e6
}

fn finite64() -> impl Strategy<Value = f64> {
    prop_oneof![-1e300f64..1e300, Just(0.0), Just(-0.0), Just(f64::INFINITY)]
}

fn point() -> impl Strategy<Value = Point> {
    (finite32(), finite32(), finite32()).prop_map(|(x, y, z)| Point { x, y, z })
}

fn scalars() -> impl Strategy<Value = Scalars> {
    (
        (
            any::<i8>(),
            any::<i16>(),
            any::<i32>(),
            any::<i64>(),
            any::<i128>(),
        ),
        (
            any::<u8>(),
            any::<u16>(),
            any::<u32>(),
            any::<u64>(),
            any::<u128>(),
        ),
        (finite32(), finite64()),
    )
        .prop_map(|((a, b, c, d, e), (f, g, h, i, j), (k, l))| Scalars {
            a,
            b,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            k,
            l,
        })
}

fn everything() -> impl Strategy<Value = Everything> {
    (
        (any::<bool>(), any::<char>(), -6e4f32..6e4, finite32()),
        (finite32(), finite32(), prop::array::uniform4(finite64())),
        scalars(),
        prop::array::uniform3(any::<[u16; 2]>()),
        prop::array::uniform2(point()),
        any::<[u8; 3]>(),
        any::<[i32; 2]>(),
    )
        .prop_map(
            |((flag, letter, h, b), (re, im, zz), scalars, grid, points, rgb, pair)| Everything {
                flag,
                letter,
                half: f16::from_f32(h),
                brain: bf16::from_f32(b),
                z: Complex::new(re, im),
                zz: [Complex::new(zz[0], zz[1]), Complex::new(zz[2], zz[3])],
                scalars,
                grid,
                points,
                color: Rgb(rgb[0], rgb[1], rgb[2]),
                pair: Pair {
                    first: pair[0],
                    second: pair[1],
                },
            },
        )
}

#[test]
fn everything_packs_without_padding() {
    // 1 + 4 + 2 + 2 + 8 + 32 + (1+2+4+8+16+1+2+4+8+16+4+8) + 12 + 24 + 3 + 8
    assert_eq!(Scalars::ELBYTE, 74);
    assert_eq!(Everything::ELBYTE, 170);
    assert_eq!(Everything::OFFSETS[4], 9, "z after bool, char, f16, bf16");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn records_of_every_field_kind_round_trip(
        values in prop::collection::vec(everything(), 0..6),
        big_endian in any::<bool>(),
        compress in any::<bool>(),
    ) {
        let n = values.len() as u64;
        let a = RawArray::from_vec(values);
        let opts = WriteOptions::new().big_endian(big_endian).compress(compress);
        let mut bytes = Vec::new();
        a.write_to_with(&mut bytes, &opts).unwrap();
        prop_assert_eq!(&bytes[..56], &{
            let mut h = header_bytes(0, 170, &[n]);
            h[8..16].copy_from_slice(&(u64::from(big_endian) | u64::from(compress) << 1).to_le_bytes());
            if compress {
                h[32..40].copy_from_slice(&(bytes.len() as u64 - 56).to_le_bytes());
            }
            h
        }[..]);
        prop_assert_eq!(RawArray::<Everything>::from_bytes(&bytes).unwrap(), a.clone());
        prop_assert_eq!(RawArray::<Everything>::read_from(&bytes[..]).unwrap(), a);
    }

    #[test]
    fn one_record_swaps_back_to_itself(value in everything()) {
        let mut le = vec![0u8; Everything::ELBYTE];
        value.write_le(&mut le);
        let mut swapped = le.clone();
        Everything::swap_bytes(&mut swapped);
        // Multi-byte scalars change, the bool and u8 bytes stay where they were.
        prop_assert_eq!(swapped[0], le[0]);
        prop_assert_eq!(&swapped[1..5], &{ let mut c = le[1..5].to_vec(); c.reverse(); c }[..]);
        Everything::swap_bytes(&mut swapped);
        prop_assert_eq!(&swapped, &le);
        prop_assert_eq!(Everything::read_le(&le).unwrap(), value);
    }

    #[test]
    fn pod_and_packed_paths_agree(
        seeds in prop::collection::vec(any::<u32>(), 0..8),
        rows in 1u64..3,
    ) {
        let n = seeds.len() as u64 / rows * rows;
        let seeds = &seeds[..n as usize];
        let dims = vec![rows, n / rows];
        let plain = RawArray::from_shape_vec(dims.clone(), seeds.iter().map(|&s| foo(s)).collect()).unwrap();
        let pod = RawArray::from_shape_vec(dims, seeds.iter().map(|&s| pod_foo(s)).collect()).unwrap();
        let bytes = plain.to_bytes();
        prop_assert_eq!(&pod.to_bytes(), &bytes);
        prop_assert_eq!(RawArray::<PodFoo>::from_bytes(&bytes).unwrap(), pod);
        prop_assert_eq!(RawArray::<Foo>::from_bytes(&bytes).unwrap(), plain);
    }
}

#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct PodPoint {
    x: f32,
    y: f32,
}

/// A `Pod` record of `Pod` records is still one copy.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Segment {
    ends: [PodPoint; 2],
    id: u32,
    weight: f32,
}

#[test]
fn nested_pod_records_are_one_copy() {
    let s = Segment {
        ends: [PodPoint { x: 1.0, y: 2.0 }, PodPoint { x: 3.0, y: 4.0 }],
        id: 5,
        weight: 0.25,
    };
    let mut expected = Vec::new();
    for x in [1.0f32, 2.0, 3.0, 4.0] {
        expected.extend_from_slice(&x.to_le_bytes());
    }
    expected.extend_from_slice(&5u32.to_le_bytes());
    expected.extend_from_slice(&0.25f32.to_le_bytes());
    assert_eq!(Segment::as_pod_bytes(&[s]).unwrap(), &expected[..]);
    let mut bytes = RawArray::from_vec(vec![s; 2]).to_bytes();
    assert_eq!(&bytes[56..80], &expected[..]);
    let back = RawArray::<Segment>::from_bytes(&bytes).unwrap();
    assert_eq!(back.as_slice(), &[s, s]);
    bytes[56] ^= 0x80;
    assert_ne!(
        RawArray::<Segment>::from_bytes(&bytes).unwrap().as_slice()[0],
        s
    );
}

// ---- fixed arrays of records: items read before an invalid one are dropped once --------------

static DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[derive(RaRecord, Debug)]
struct Counted {
    valid: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        DROPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn array_read_error_drops_the_items_already_read() {
    let err = <[Counted; 4]>::read_le(&[1, 0, 7, 1]).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::InvalidValue {
                what: "bool",
                value: 7,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(DROPS.load(std::sync::atomic::Ordering::SeqCst), 2);
    let ok = <[Counted; 2]>::read_le(&[1, 0]).unwrap();
    assert!(ok[0].valid && !ok[1].valid);
    drop(ok);
    assert_eq!(DROPS.load(std::sync::atomic::Ordering::SeqCst), 4);
}

// ---- names the derive must not misread ---------------------------------------------------------

/// A record of the user's own named like a standard type.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Path {
    stops: [u16; 2],
}

/// Constants named like the parameters of `Element`'s methods: a binding of the generated code
/// with such a name would not compile here (bindings cannot shadow constants).
mod misleading {
    #![allow(non_upper_case_globals)]
    use super::Path;
    use rawarray_serde::RaRecord;

    const bytes: usize = 3;
    const len: usize = 2;
    const out: usize = 1;
    const values: usize = 1;

    #[derive(RaRecord, Clone, Debug, PartialEq)]
    pub struct Odd {
        pub path: Path,
        pub tail: [u8; bytes],
        pub more: [i8; len],
        pub last: [[u8; out]; values],
    }
}

/// A const-generic record.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Route<const N: usize> {
    path: Path,
    legs: [f32; N],
}

#[test]
fn records_with_misleading_names() {
    let o = misleading::Odd {
        path: Path { stops: [1, 2] },
        tail: [7, 8, 9],
        more: [-1, 1],
        last: [[5]],
    };
    let mut out = [0u8; 10];
    o.write_le(&mut out);
    assert_eq!(out, [1, 0, 2, 0, 7, 8, 9, 0xff, 1, 5]);
    assert_eq!(misleading::Odd::read_le(&out).unwrap(), o);
    assert!(misleading::Odd::as_pod_bytes(&[]).is_none());
}

#[test]
fn const_generic_record() {
    assert_eq!(Route::<2>::OFFSETS, [0, 4]);
    assert_eq!(Route::<5>::ELBYTE, 4 + 20);
    let r = Route {
        path: Path { stops: [1, 2] },
        legs: [0.5, 1.5],
    };
    let mut out = [0u8; 12];
    r.write_le(&mut out);
    let mut expected = vec![1, 0, 2, 0];
    expected.extend_from_slice(&0.5f32.to_le_bytes());
    expected.extend_from_slice(&1.5f32.to_le_bytes());
    assert_eq!(out.to_vec(), expected);
    assert_eq!(Route::<2>::read_le(&out).unwrap(), r);
}
