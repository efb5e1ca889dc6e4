//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod python;

/// The reference files written by the C, Julia and Python implementations.
pub fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference")
}

/// A reference file's path.
pub fn reference(name: &str) -> PathBuf {
    reference_dir().join(name)
}

/// Runs `python tests/python/<script> args...` in the tests' own Python environment
/// ([`python`]) and returns its stdout; panics with the script's output if it fails.
pub fn python(script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    python::run_script(&script, args)
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

/// A stream over `bytes` that hands out 1 to 7 bytes per read, in a cycle that starts at
/// `phase`: every partial read a real pipe or socket can make, at every offset.
pub struct Trickle<'a> {
    pub bytes: &'a [u8],
    pub phase: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.phase += 1;
        let n = (1 + self.phase % 7).min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}
