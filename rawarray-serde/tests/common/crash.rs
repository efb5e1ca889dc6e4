//! The scaffolding of the killed-writer tests (records, ragged rows, compressed or not, and the
//! statistics of queries): a child process appends and reports what it has flushed in a side
//! file, one 8-byte `pwrite` a kill cannot tear; the parent kills it at moments drawn from a
//! seeded generator whose seed is printed, so a failure can be run again.

use std::fs;
use std::path::{Path, PathBuf};

/// A scratch folder (kept while the value lives), the file the writers append to (`name` in
/// it) and the side file their reports go to.
pub fn scratch(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (path, side) = (dir.path().join(name), dir.path().join("flushed"));
    (dir, path, side)
}

/// What the side file says was flushed: 0 before the first report.
pub fn flushed(side: &Path) -> u64 {
    match fs::read(side) {
        Ok(b) if b.len() == 8 => u64::from_le_bytes(b.try_into().unwrap()),
        _ => 0,
    }
}

/// A generator of numbers below its argument (xorshift), seeded from `RA_CRASH_SEED` if set,
/// else from the clock; the seed is printed after `what`, so that a failing run can be run
/// again with it.
pub fn seeded(what: &str) -> impl FnMut(u64) -> u64 {
    let seed = match std::env::var("RA_CRASH_SEED") {
        Ok(s) => s.parse().expect("RA_CRASH_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    eprintln!("{what} seed {seed}");
    let mut rng = seed | 1;
    move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    }
}

/// The child's side: says that `n` are flushed, in one 8-byte `pwrite` at offset 0.
pub fn reporter(side: impl AsRef<Path>) -> impl Fn(u64) {
    let side = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(side.as_ref())
        .unwrap();
    move |n: u64| {
        #[cfg(unix)]
        std::os::unix::fs::FileExt::write_all_at(&side, &n.to_le_bytes(), 0).unwrap();
        #[cfg(not(unix))]
        let _ = (&side, n);
    }
}
