//! Large inputs are refused by their header, within a memory cap, and never abort; every error
//! about a missing, truncated or foreign file names it.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rawarray_serde::{ElType, Header, RawArray, WriteOptions};

use common::*;

/// A file whose header says `bytes` of `f32` data, all of it there as a hole.
fn sparse(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let path = dir.join(name);
    let header = Header::new(ElType::Float, 4, vec![bytes / 4]).unwrap();
    std::fs::write(&path, header.encode()).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(header.encoded_len() as u64 + header.size)
        .unwrap();
    path
}

/// Runs `ra args...` with its address space capped at `kib` KiB.
fn ra_capped(kib: u64, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(assert_cmd::cargo::cargo_bin("ra"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().unwrap()
}

#[test]
fn compress_refuses_a_data_section_larger_than_one_lz4_block_before_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("three.ra", 3u64 << 30), ("big.ra", 64 << 30)] {
        let path = sparse(dir.path(), name, bytes);
        let len = std::fs::metadata(&path).unwrap().len();
        let started = std::time::Instant::now();
        let out = ra_capped(1 << 20, &[&"compress", &"--codec", &"lz4-whole", &path]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert_eq!(
            stderr,
            format!(
                "ra: {}: {bytes} data bytes do not fit one LZ4 block (--codec lz4-whole holds \
                 at most 2113929216 bytes); nothing was read or written\n",
                path.display()
            )
        );
        // Refused from the header: reading 3 GiB of holes alone takes seconds.
        assert!(
            started.elapsed().as_secs() < 2,
            "{name}: {:?}",
            started.elapsed()
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        assert_eq!(
            listing(dir.path()).len(),
            if name == "big.ra" { 2 } else { 1 }
        );
    }
    // The default codec (chunked, encoded in memory) is refused by a fallible allocation,
    // one line, the file left as it was.
    let big = dir.path().join("big.ra");
    let out = ra_capped(1 << 20, &[&"compress", &big]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "ra: {}: 68719476736 data bytes do not fit in memory\n",
            big.display()
        )
    );
    assert_eq!(std::fs::metadata(&big).unwrap().len(), (64 << 30) + 56);
}

#[test]
fn codec_is_a_closed_list() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ra");
    RawArray::from_vec(vec![1.0f32; 100])
        .write_file(&path)
        .unwrap();
    let out = ra()
        .args(["compress", "--codec", "gzip"])
        .arg(&path)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(
        err.contains("[possible values: none, lz4, zstd, pco, huffman, lz4-whole]"),
        "{err}"
    );
    ra().args(["compress", "--codec", "lz4-whole"])
        .arg(&path)
        .assert()
        .success();
    assert!(Header::decode(&std::fs::read(&path).unwrap())
        .unwrap()
        .is_compressed());
}

#[test]
fn decompress_streams_the_block_within_a_memory_cap_below_the_data_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.ra");
    let out = dir.path().join("plain.ra");
    // 256 MiB of plain data that compresses to about 1 MiB: decoded whole, it could not be
    // held under a 128 MiB cap.
    let n = 64 << 20;
    let a = RawArray::from_vec((0..n).map(|i| (i / 4096) as u32).collect::<Vec<u32>>());
    a.write_file_with(&path, &WriteOptions::new().compress(true))
        .unwrap();
    let res = ra_capped(128 << 10, &[&"decompress", &path, &"-o", &out]);
    assert!(res.status.success(), "{res:?}");
    let back = RawArray::<u32>::read_file(&out).unwrap();
    assert_eq!(back, a);
}

#[test]
fn info_names_a_missing_a_truncated_and_an_hdf5_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.ra");
    let err = fails_with_one_line(ra().arg("info").arg(&missing));
    assert!(
        err.contains(&format!("{}: ", missing.display())) && err.contains("No such file"),
        "{err}"
    );

    let cut = dir.path().join("cut.ra");
    let bytes = RawArray::from_vec((0..100).map(|i| i as f32).collect()).to_bytes();
    std::fs::write(&cut, &bytes[..56 + 150]).unwrap();
    let out = ra()
        .arg("info")
        .arg(&cut)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!("{}: ", cut.display()))
            && err.contains("expected 400 data bytes, found 150"),
        "{err}"
    );

    let h5 = dir.path().join("data.h5");
    let mut head = b"\x89HDF\r\n\x1a\n".to_vec();
    head.resize(96, 0);
    std::fs::write(&h5, &head).unwrap();
    let err = fails_with_one_line(ra().arg("info").arg(&h5));
    assert!(
        err.contains(&format!("{}: ", h5.display())) && err.contains("HDF5"),
        "{err}"
    );
    // The library's own error says it too, for every tool built on it.
    let lib = rawarray_serde::DynArray::read_file(&h5)
        .unwrap_err()
        .to_string();
    assert!(lib.contains("HDF5") && lib.contains("data.h5"), "{lib}");
}

/// A password in a URL is a credential: no message shows it. Nothing listens on port 9 of
/// loopback, so every command fails at its first request, naming the URL with `***` for the
/// password.
#[test]
fn a_password_in_a_url_is_never_printed() {
    let url = "http://reader:hunter2@127.0.0.1:9/run/field.ra";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plane.ra");
    for args in [
        vec!["info", url],
        vec!["cat", url],
        vec!["slice", url, out.to_str().unwrap(), "0"],
        vec!["checksum", "--data", url],
    ] {
        let o = ra().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(
            !err.contains("hunter2"),
            "{args:?} printed the password: {err}"
        );
        assert!(
            err.contains("http://reader:***@127.0.0.1:9/run/field.ra"),
            "{args:?} does not name the URL: {err}"
        );
    }
}
