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

    let said = ra()
        .args(["compress", "--codec", "lz4-whole"])
        .arg(&path)
        .assert()
        .success()
        .stdout("")
        .get_output()
        .stderr
        .clone();
    let z = std::fs::read(&path).unwrap();
    assert_eq!(
        String::from_utf8(said).unwrap(),
        format!(
            "{}: compressed, {} bytes -> {} bytes\n",
            path.display(),
            original.len(),
            z.len()
        )
    );
    let h = Header::decode(&z).unwrap();
    assert!(h.is_compressed() && h.is_big_endian());
    assert!(z.len() < original.len() / 4);
    assert!(z.ends_with(b"{\"note\": 1}"));
    assert_eq!(RawArray::<f32>::from_bytes(&z).unwrap(), a);
    // Compressing a compressed file changes nothing, and says so.
    ra().args(["compress", "--codec", "lz4-whole"])
        .arg(&path)
        .assert()
        .success()
        .stderr(format!(
            "ra: note: {}: already compressed; left as it is\n",
            path.display()
        ));
    assert_eq!(std::fs::read(&path).unwrap(), z);
    assert_eq!(std::fs::read(&path).unwrap(), z);

    ra().arg("decompress").arg(&path).assert().success();
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // The reference compresses, and decompresses to itself.
    let m = dir.path().join("m_z.ra");
    ra().args(["compress", "--codec", "lz4-whole"])
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
    ra().args(["compress", "--codec", "lz4-whole"])
        .arg(&r)
        .assert()
        .success();
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

/// Every rewriting command says what it did in one line on stderr (stdout stays empty), and
/// `-q`, before or after the subcommand, silences it; a no-op and a compression that grows
/// the file are noted (the grown file is kept: it is what was asked for, and reversible).
#[test]
fn rewrites_say_what_they_did_and_q_silences_them() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.ra");
    copy_writable(&reference("mnist_8.ra"), &m);
    let said = |args: &[&dyn AsRef<std::ffi::OsStr>]| -> String {
        let mut cmd = ra();
        for a in args {
            cmd.arg(a);
        }
        let out = cmd
            .assert()
            .success()
            .stdout("")
            .get_output()
            .stderr
            .clone();
        String::from_utf8(out).unwrap()
    };
    let p = m.display();
    assert_eq!(
        said(&[&"decompress", &m]),
        format!("ra: note: {p}: not compressed; left as it is\n")
    );
    assert_eq!(said(&[&"-q", &"decompress", &m]), "");
    assert_eq!(said(&[&"decompress", &m, &"--quiet"]), "");
    let r = dir.path().join("r.ra");
    assert_eq!(
        said(&[&"reshape", &m, &"2352", &"-o", &r]),
        format!("{p} -> {}: dims [28, 28, 3] -> [2352]\n", r.display())
    );
    assert_eq!(said(&[&"reshape", &"-q", &r, &"28", &"84"]), "");
    let npy = dir.path().join("m.npy");
    assert_eq!(
        said(&[&"convert", &m, &npy]),
        format!(
            "{p} -> {}: {} bytes\n",
            npy.display(),
            std::fs::metadata(&npy).unwrap().len()
        )
    );
    let s = dir.path().join("s.ra");
    assert_eq!(
        said(&[&"slice", &m, &s, &":,:,0"]),
        format!("{p} -> {}: dims [28, 28, 1], plain\n", s.display())
    );
    // Incompressible bytes (a xorshift stream) grow by LZ4's framing: kept, and noted.
    let mut x = 0x9e3779b97f4a7c15u64;
    let noise: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let noisy = dir.path().join("noise.ra");
    RawArray::from_shape_vec(vec![65536], noise)
        .unwrap()
        .write_file(&noisy)
        .unwrap();
    let before = std::fs::metadata(&noisy).unwrap().len();
    let out = said(&[&"compress", &"--codec", &"lz4-whole", &noisy]);
    let after = std::fs::metadata(&noisy).unwrap().len();
    assert!(after > before);
    let n = noisy.display();
    assert_eq!(
        out,
        format!(
            "{n}: compressed, {before} bytes -> {after} bytes\n\
             ra: note: {n}: compression made the file larger ({} more bytes); kept as written \
             (ra decompress undoes it)\n",
            after - before
        )
    );
    assert!(Header::decode(&std::fs::read(&noisy).unwrap())
        .unwrap()
        .is_compressed());
}
