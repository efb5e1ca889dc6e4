//! Every file written by the reference implementations is read, and our writer reproduces them.

mod common;

use common::{md5_hex, reference, reference_dir, TABLE};
use half::f16;
use num_complex::Complex;
use rawarray_serde::{DynArray, ElType, Flags, Header, RawArray, WriteOptions};

#[test]
fn md5_sums_match_checksums_file() {
    let sums = std::fs::read_to_string(reference("CHECKSUMS.md5")).unwrap();
    let mut checked = 0;
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let (sum, name) = line.split_once("  ").expect("md5sum line");
        let bytes = std::fs::read(reference(name.trim())).unwrap();
        assert_eq!(md5_hex(&bytes), sum, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 14);
}

#[test]
fn every_reference_header_matches_the_readme() {
    for &(name, flags, eltype, elbyte, size, dims, file_bytes) in TABLE {
        let bytes = std::fs::read(reference(name)).unwrap();
        assert_eq!(bytes.len() as u64, file_bytes, "{name}");
        let h = Header::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(h.flags.bits(), flags, "{name}");
        assert_eq!(h.eltype.code(), eltype, "{name}");
        assert_eq!(h.elbyte, elbyte, "{name}");
        assert_eq!(h.size, size, "{name}");
        assert_eq!(h.dims, dims, "{name}");
        assert_eq!(
            h.encoded_len() as u64 + size,
            file_bytes,
            "{name}: no trailing bytes"
        );

        // The dynamic reader reads every one, by path, stream and slice alike.
        let by_path = DynArray::read_file(reference(name)).unwrap();
        let by_stream = DynArray::read_from(&bytes[..]).unwrap();
        let by_slice = DynArray::from_bytes(&bytes).unwrap();
        assert_eq!(by_path, by_slice, "{name}");
        assert_eq!(by_stream, by_slice, "{name}");
        assert_eq!(by_slice.data().len() as u64, h.data_len(), "{name}");
        assert!(by_slice.trailer_bytes().is_empty(), "{name}");
    }
}

#[test]
fn test_ra_holds_k_minus_i_over_k() {
    let a: RawArray<Complex<f32>> = RawArray::read_file(reference("test.ra")).unwrap();
    assert_eq!(a.dims(), &[3, 4]);
    assert_eq!(a.len(), 12);
    for (k, z) in a.as_slice().iter().enumerate() {
        let k = k as f32;
        assert_eq!(z.re, k);
        assert_eq!(z.im, -1.0 / k, "element {k}");
    }
    assert_eq!(a.as_slice()[0].im, f32::NEG_INFINITY);
    assert_eq!(a.as_slice()[2], Complex::new(2.0, -0.5));
    // Column-major: element [1, 2] is number 1 + 3 * 2 = 7.
    assert_eq!(a.get(&[1, 2]), Some(&Complex::new(7.0, -1.0 / 7.0)));
}

#[test]
fn writing_test_ra_values_reproduces_the_reference_file() {
    let values: Vec<Complex<f32>> = (0..12)
        .map(|k| Complex::new(k as f32, -1.0 / k as f32))
        .collect();
    let a = RawArray::from_shape_vec(vec![3, 4], values).unwrap();
    let bytes = a.to_bytes();
    assert_eq!(md5_hex(&bytes), "1dd9f98a0d57ec3c4d8ad50343bd20cd");
    assert_eq!(bytes, std::fs::read(reference("test.ra")).unwrap());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.ra");
    a.write_file(&path).unwrap();
    assert_eq!(
        md5_hex(&std::fs::read(&path).unwrap()),
        "1dd9f98a0d57ec3c4d8ad50343bd20cd"
    );
}

#[test]
fn mnist_z_decompresses_to_mnist_data() {
    let plain = DynArray::read_file(reference("mnist_8.ra")).unwrap();
    let z = DynArray::read_file(reference("mnist_8_z.ra")).unwrap();
    assert_eq!(z.data(), plain.data());
    assert_eq!(
        z.header(),
        plain.header(),
        "decompressed header is the plain one"
    );

    let typed: RawArray<u8> = RawArray::read_file(reference("mnist_8_z.ra")).unwrap();
    assert_eq!(typed.as_slice(), plain.data());
    assert_eq!(typed.dims(), &[28, 28, 3]);
}

#[test]
fn compressed_mnist_we_write_decompresses_to_the_same_bytes() {
    let plain: RawArray<u8> = RawArray::read_file(reference("mnist_8.ra")).unwrap();
    let mut bytes = Vec::new();
    plain
        .write_to_with(&mut bytes, &WriteOptions::new().compress(true))
        .unwrap();
    let h = Header::decode(&bytes).unwrap();
    assert_eq!(h.flags, Flags::COMPRESSED);
    assert!(h.size < 2352, "compressed: {} bytes", h.size);
    assert_eq!(bytes.len() as u64, h.encoded_len() as u64 + h.size);
    // An LZ4 block decoder other than ours reads it (Python's lz4 checks it too, in numpy_interop.rs).
    let block = &bytes[h.encoded_len()..];
    let out = lz4_flex::block::decompress(block, 2352).unwrap();
    assert_eq!(out, plain.as_slice());
    let back: RawArray<u8> = RawArray::from_bytes(&bytes).unwrap();
    assert_eq!(back, plain);
}

#[test]
fn typed_reads_of_every_random_file() {
    fn check<T: rawarray_serde::Element + std::fmt::Debug>(name: &str) -> RawArray<T> {
        let by_path: RawArray<T> = RawArray::read_file(reference(name)).unwrap();
        let bytes = std::fs::read(reference(name)).unwrap();
        let by_slice: RawArray<T> = RawArray::from_bytes(&bytes).unwrap();
        let by_stream: RawArray<T> = RawArray::read_from(&bytes[..]).unwrap();
        assert_eq!(by_path.as_slice().len(), by_slice.len());
        let h = Header::decode(&bytes).unwrap();
        // Bytes back through our writer are the reference bytes.
        assert_eq!(by_slice.to_bytes(), bytes, "{name}");
        assert_eq!(by_stream.dims(), &h.dims[..]);
        by_path
    }
    check::<i64>("rand100.ra");
    check::<Complex<f32>>("randc32.ra");
    check::<Complex<f64>>("randc64.ra");
    check::<f32>("randf32.ra");
    check::<f64>("randf64.ra");
    check::<i32>("randi32.ra");
    check::<i8>("randi8.ra");
    check::<u32>("randu32.ra");
    check::<u8>("randu8.ra");
    let f = check::<f16>("randf16.ra");
    // numpy reads the first value of randf16.ra as 0.6816 (see numpy_interop.rs for all of them).
    assert!((f.as_slice()[0].to_f32() - 0.6816).abs() < 1e-3);
    let r = check::<i64>("rand100.ra");
    assert_eq!(&r.as_slice()[..4], &[50, 39, 23, 55]);
}

#[test]
fn reading_into_the_wrong_type_names_both() {
    let err = RawArray::<f32>::read_file(reference("test.ra")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: file holds complex64 (eltype 4, elbyte 8); asked for f32 (eltype 3, elbyte 4)",
            reference("test.ra").display()
        )
    );
    // Same size, other eltype.
    let err = RawArray::<u64>::read_file(reference("rand100.ra")).unwrap_err();
    assert!(
        err.to_string()
            .contains("file holds int64 (eltype 1, elbyte 8)"),
        "{err}"
    );
    // A complex64 file is not an f32 file with a leading dim of 2.
    let err = RawArray::<[f32; 2]>::read_file(reference("test.ra")).unwrap_err();
    assert!(matches!(
        err.kind(),
        rawarray_serde::ErrorKind::TypeMismatch { .. }
    ));
}

#[test]
fn reference_dir_has_only_the_files_we_know() {
    let mut names: Vec<String> = std::fs::read_dir(reference_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ra"))
        .collect();
    names.sort();
    let mut known: Vec<&str> = TABLE.iter().map(|t| t.0).collect();
    known.sort();
    assert_eq!(names, known, "a new reference file needs a row in TABLE");
    assert_eq!(ElType::from_code(TABLE[0].2).unwrap(), ElType::Complex);
}
