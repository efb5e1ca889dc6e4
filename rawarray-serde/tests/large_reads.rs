//! A 64 GiB (sparse) file read whole through every whole-file reader is an error naming the
//! file, within a 1 GiB address-space cap: never a panic, never an abort on allocation.
//!
//! Each read runs in a child process (this test binary again, running only the ignored
//! `child_read` test) under `ulimit -v`, so that an abort fails the parent test instead of
//! killing the test run, and a read that tried to hold 64 GiB would be refused by the kernel.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rawarray_serde::{ArrayReader, DynArray, ErrorKind, Header, RawArray};

/// Set in the child: which reader to run, then `=`, then the file.
const CHILD: &str = "RAWARRAY_LARGE_READ_CHILD";

/// The address-space cap of the child, in KiB (1 GiB).
const CAP_KIB: u64 = 1 << 20;

/// A file whose header says 16 Gi `f32` (64 GiB of data), all of it there as a hole.
fn sparse_64_gib(dir: &Path) -> PathBuf {
    let path = dir.join("big.ra");
    let header = Header::new(rawarray_serde::ElType::Float, 4, vec![16 << 30]).unwrap();
    assert_eq!(header.size, 64 << 30);
    std::fs::write(&path, header.encode()).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(header.encoded_len() as u64 + header.size)
        .unwrap();
    path
}

/// Runs `reader` on `path` in a child under the memory cap; returns what it printed.
fn read_capped(reader: &str, path: &Path) -> String {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args(["child_read", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD, format!("{reader}={}", path.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{reader} of a 64 GiB file under a 1 GiB cap failed: {:?}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("read refused:"), "{stdout}");
    stdout
}

/// The child: reads the file whole with one reader and checks the error. Run by the tests
/// below, in a process of its own under the memory cap.
#[test]
#[ignore = "run by the memory-capped tests of this file, in a child process"]
fn child_read() {
    let spec = std::env::var(CHILD).expect("set by the parent test");
    let (reader, path) = spec.split_once('=').unwrap();
    let err = match reader {
        "RawArray::read_file" => RawArray::<f32>::read_file(path).unwrap_err(),
        "DynArray::read_file" => DynArray::read_file(path).unwrap_err(),
        "ArrayReader::read_all" => ArrayReader::open(path)
            .unwrap()
            .read_all::<f32>()
            .unwrap_err(),
        "from_file" => rawarray_serde::from_file::<Vec<f32>>(path).unwrap_err(),
        other => panic!("no reader {other}"),
    };
    assert!(
        matches!(err.kind(), ErrorKind::TooLarge { .. }),
        "{reader}: {err:?}"
    );
    assert_eq!(err.path(), Some(Path::new(path)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("{path}: ")), "{msg}");
    println!("read refused: {msg}");
}

#[test]
fn a_64_gib_file_read_whole_is_an_error_within_a_1_gib_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = sparse_64_gib(dir.path());
    for reader in [
        "RawArray::read_file",
        "DynArray::read_file",
        "ArrayReader::read_all",
        "from_file",
    ] {
        let said = read_capped(reader, &path);
        assert!(
            said.contains("68719476736 bytes do not fit in memory"),
            "{said}"
        );
    }
}
