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
