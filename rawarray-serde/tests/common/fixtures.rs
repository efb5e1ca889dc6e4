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

/// One row of the table in `tests/fixtures/reference/README.md`: name, flags, eltype, elbyte,
/// size, dims, file bytes.
pub type Row = (&'static str, u64, u64, u64, u64, &'static [u64], u64);

/// The table of `tests/fixtures/reference/README.md`, as the tests check the files against it.
pub const TABLE: &[Row] = &[
    ("test.ra", 0, 4, 8, 96, &[3, 4], 160),
    ("mnist_8.ra", 0, 2, 1, 2352, &[28, 28, 3], 2424),
    ("mnist_8_z.ra", 2, 2, 1, 486, &[28, 28, 3], 558),
    ("rand100.ra", 0, 1, 8, 512, &[8, 8], 576),
    ("randc32.ra", 0, 4, 8, 128, &[4, 4], 192),
    ("randc64.ra", 0, 4, 16, 256, &[4, 4], 320),
    ("randf16.ra", 0, 3, 2, 32, &[4, 4], 96),
    ("randf32.ra", 0, 3, 4, 64, &[4, 4], 128),
    ("randf64.ra", 0, 3, 8, 128, &[4, 4], 192),
    ("randi32.ra", 0, 1, 4, 64, &[4, 4], 128),
    ("randi8.ra", 0, 1, 1, 16, &[4, 4], 80),
    ("randu32.ra", 0, 2, 4, 64, &[4, 4], 128),
    ("randu8.ra", 0, 2, 1, 16, &[4, 4], 80),
];
