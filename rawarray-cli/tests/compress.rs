//! `ra compress` / `ra decompress`: byte order, trailers, in place and to `-o`.

mod common;

use rawarray_serde::{Header, RawArray, Trailer, WriteOptions};

use common::*;

#[test]
fn decompress_of_the_compressed_reference_is_the_plain_one_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.ra");
    ra().arg("decompress")
        .arg(reference("mnist_8_z.ra"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(reference("mnist_8.ra")).unwrap()
    );
}

#[test]
fn compress_in_place_and_back_keeps_byte_order_and_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ra");
    let a = RawArray::from_shape_vec(vec![50, 20], (0..1000).map(|i| (i % 7) as f32).collect())
        .unwrap();
    let mut original = Vec::new();
    a.write_to_with(&mut original, &WriteOptions::new().big_endian(true))
        .unwrap();
    original.extend_from_slice(b"{\"note\": 1}");
    std::fs::write(&path, &original).unwrap();

    ra().arg("compress")
        .arg(&path)
        .assert()
        .success()
        .stdout("")
        .stderr("");
    let z = std::fs::read(&path).unwrap();
    let h = Header::decode(&z).unwrap();
    assert!(h.is_compressed() && h.is_big_endian());
    assert!(z.len() < original.len() / 4);
    assert!(z.ends_with(b"{\"note\": 1}"));
    assert_eq!(RawArray::<f32>::from_bytes(&z).unwrap(), a);
    // Compressing a compressed file changes nothing.
    ra().arg("compress").arg(&path).assert().success();
    assert_eq!(std::fs::read(&path).unwrap(), z);

    ra().arg("decompress").arg(&path).assert().success();
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // The reference compresses, and decompresses to itself.
    let m = dir.path().join("m_z.ra");
    ra().arg("compress")
        .arg(reference("mnist_8.ra"))
        .arg("-o")
        .arg(&m)
        .assert()
        .success();
    assert!(Header::decode(&std::fs::read(&m).unwrap())
        .unwrap()
        .is_compressed());
    ra().arg("decompress").arg(&m).assert().success();
    assert_eq!(
        std::fs::read(&m).unwrap(),
        std::fs::read(reference("mnist_8.ra")).unwrap()
    );
}

#[test]
fn rewrites_place_the_trailer_where_record_readers_look() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ra");
    record_file(&path, 4);
    // Two dims instead of one: the header grows by 8 bytes, the block moves with the data end.
    let r = dir.path().join("r.ra");
    ra().args(["reshape", "-o"])
        .arg(&r)
        .arg(&path)
        .args(["2", "2"])
        .assert()
        .success();
    let reshaped = std::fs::read(&r).unwrap();
    assert_eq!(reshaped.len(), std::fs::read(&path).unwrap().len() + 8);
    assert_eq!(Trailer::read_file(&r).unwrap().unwrap().params["dt"], 0.5);
    let out = stdout_of(ra().arg("recover").arg(&r));
    assert!(
        out.ends_with(": 2 records (unchanged); trailer kept; 0 bytes removed\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(&r).unwrap(),
        reshaped,
        "recover found nothing to repair"
    );
    // Compressed, the block is still found; decompressed, the file is what it was.
    ra().arg("compress").arg(&r).assert().success();
    assert!(Header::decode(&std::fs::read(&r).unwrap())
        .unwrap()
        .is_compressed());
    assert_eq!(
        Trailer::read_file(&r).unwrap().unwrap().params["units"],
        "s"
    );
    ra().arg("decompress").arg(&r).assert().success();
    assert_eq!(std::fs::read(&r).unwrap(), reshaped);
}
