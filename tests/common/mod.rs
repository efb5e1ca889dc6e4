//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The reference files written by the C, Julia and Python implementations.
pub fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/reference")
}

/// A reference file's path.
pub fn reference(name: &str) -> PathBuf {
    reference_dir().join(name)
}

/// Runs `python3 tests/python/<script> args...` and returns its stdout; panics with its
/// stderr if it fails. Set RAWARRAY_SKIP_PYTHON=1 to skip (returns None) where Python and
/// numpy cannot be installed; CI installs them and runs these tests.
pub fn python(script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Option<String> {
    if std::env::var_os("RAWARRAY_SKIP_PYTHON").is_some_and(|v| v == "1") {
        eprintln!("skipping {script}: RAWARRAY_SKIP_PYTHON=1");
        return None;
    }
    let script_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let mut cmd = Command::new("python3");
    cmd.arg(&script_path);
    for a in args {
        cmd.arg(a);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {script}: {e} (install python3 and numpy, or set RAWARRAY_SKIP_PYTHON=1)"));
    assert!(
        out.status.success(),
        "python3 {script} failed:\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("utf-8 output"))
}

/// Lowercase hex md5 of some bytes.
pub fn md5_hex(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex(&Md5::digest(bytes))
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
