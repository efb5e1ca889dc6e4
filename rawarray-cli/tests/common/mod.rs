//! Helpers shared by the CLI's tests (one test file per subcommand): the `ra` binary run as a
//! user runs it (assert_cmd), the reference files, and numpy, which checks our `.npy` files
//! and writes the ones we read (tests/python/npy_check.py, run in the tests' own Python
//! environment: the workspace's `tests/common/python.rs`).
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use assert_cmd::Command;
use half::f16;
use md5::{Digest, Md5};
use num_complex::Complex;
use predicates::prelude::*;
use rawarray_serde::{
    DynArray, ElType, Element, Header, RaRecord, RawArray, RecordOptions, RecordWriter, Trailer,
    WriteOptions,
};
use serde_json::Value;

// The reference files and hashes, written once for every crate's tests.
#[path = "../../../rawarray-serde/tests/common/fixtures.rs"]
mod fixtures;
#[allow(unused_imports)] // not every test file uses every helper
pub use fixtures::*;

pub fn ra() -> Command {
    Command::cargo_bin("ra").expect("the ra binary is built")
}

pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// Runs the command, expects exit 1 and exactly one line on stderr, and returns that line.
pub fn fails_with_one_line(cmd: &mut Command) -> String {
    let out = cmd.assert().code(1).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "stderr: {err:?}");
    assert!(err.starts_with("ra: "), "{err:?}");
    err
}

/// Copies a (read-only) reference file to a writable file.
pub fn copy_writable(from: &Path, to: &Path) {
    std::fs::write(to, std::fs::read(from).unwrap()).unwrap();
}

/// Files in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[path = "../../../tests/common/python.rs"]
#[allow(dead_code)]
pub mod python_env;

/// `python tests/python/npy_check.py args...` in the tests' Python environment: its stdout, or
/// a panic with its output when a check fails.
pub fn python(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/npy_check.py");
    python_env::run_script(&script, args)
}

pub fn data_of(path: &Path) -> (Header, Vec<u8>) {
    let d = DynArray::read_file(path).unwrap();
    (d.header().clone(), d.data().to_vec())
}

/// tests/python/npy_check.py's REC: `[('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]`.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
pub struct Rec {
    pub t: f64,
    pub xyz: [f32; 3],
    pub id: u16,
}

pub fn rec(k: u64) -> Rec {
    Rec {
        t: k as f64 * 0.5,
        xyz: [k as f32, k as f32 + 0.25, -(k as f32)],
        id: (k * 7 + 1) as u16,
    }
}

pub fn recs(n: u64) -> Vec<Rec> {
    (0..n).map(rec).collect()
}

/// A record file of `n` records of one `Rec` each, with params.
pub fn record_file(path: &Path, n: u64) {
    let mut w =
        RecordWriter::<Rec>::create(path, serde_json::json!({"dt": 0.5, "units": "s"})).unwrap();
    for r in recs(n) {
        w.append(&r).unwrap();
    }
    w.finish().unwrap();
}
