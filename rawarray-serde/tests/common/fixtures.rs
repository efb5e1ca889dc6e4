//! The reference files (written by the C, Julia and Python implementations, kept in the
//! repository's `tests/fixtures/reference/`) and hashes of bytes: shared by the library's,
//! the CLI's and the workspace's tests (included by path from each).

use std::path::{Path, PathBuf};

/// The folder of the reference files: found from the crate being tested upwards, so that
/// every crate of the workspace reads the one copy.
pub fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("tests/fixtures/reference"))
        .find(|d| d.is_dir())
        .expect("tests/fixtures/reference in the repository")
}

/// A reference file's path.
pub fn reference(name: &str) -> PathBuf {
    reference_dir().join(name)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex md5 of some bytes.
pub fn md5_hex(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex(&Md5::digest(bytes))
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
