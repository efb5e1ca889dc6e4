//! One writer at a time: the exclusive advisory lock every writer of an existing file holds
//! while it writes (`RecordWriter`, `recover`, a replacement by rename).
//!
//! The lock is `flock` on Unix (`LockFileEx` on Windows), through `File::try_lock`. It belongs
//! to the open file description, so two handles opened separately conflict even in one
//! process, and it goes away with the last handle, so a killed writer leaves no stale lock.
//! It is advisory: programs that do not ask for it are not stopped, and readers never ask.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{ErrorKind, Result};

/// Times `open_locked` reopens a path whose file was replaced between its open and its lock.
const REOPEN_TRIES: usize = 16;

/// How long a lock that is held is tried again before the file is refused as another
/// writer's. A handle closed a moment ago can keep its lock for a few milliseconds: a process
/// that forks (any thread of ours spawning a program, or another program) gives the child a
/// copy of every open file description until the child's `exec` closes it, and the lock
/// belongs to the description. A real writer holds its lock for as long as it writes, so it is
/// still refused, a fraction of a second later.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Tries `lock` until it succeeds or [`LOCK_GRACE`] has passed; a file still held then is
/// [`ErrorKind::Locked`], naming `path`.
fn try_locking(
    path: &Path,
    mut lock: impl FnMut() -> std::result::Result<(), std::fs::TryLockError>,
) -> Result<()> {
    let start = std::time::Instant::now();
    loop {
        match lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_GRACE => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ErrorKind::Locked {
                    path: path.to_path_buf(),
                }
                .into())
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
    }
}

/// Takes `file`'s exclusive lock, waiting at most [`LOCK_GRACE`]: a file another writer
/// holds is [`ErrorKind::Locked`], naming `path`.
pub(crate) fn lock_exclusive(file: &File, path: &Path) -> Result<()> {
    try_locking(path, || file.try_lock())
}

/// Takes `file`'s shared lock, waiting at most [`LOCK_GRACE`]: the lock of writers of
/// disjoint blocks ([`ArrayWriter`](crate::ArrayWriter)), which any number hold at once and
/// which keeps the exclusive writers out. A file an exclusive writer holds is
/// [`ErrorKind::Locked`].
pub(crate) fn lock_shared(file: &File, path: &Path) -> Result<()> {
    try_locking(path, || file.try_lock_shared())
}

/// Opens the regular file at `path` for reading and writing and takes its shared lock (see
/// [`lock_shared`]), reopening it if it was replaced in between, as [`open_locked`] does.
pub(crate) fn open_locked_shared(path: &Path) -> Result<File> {
    for _ in 0..REOPEN_TRIES {
        crate::target::require_regular(path)?;
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        lock_shared(&file, path)?;
        if is_at_path(&file, path)? {
            return Ok(file);
        }
    }
    Err(ErrorKind::Locked {
        path: path.to_path_buf(),
    }
    .into())
}

/// Opens the regular file at `path` for reading and writing and takes its exclusive lock.
///
/// A rename over `path` between the open and the lock would leave us holding the lock of a
/// file nobody will see again, so the locked file must still be the one at `path`; if not, it
/// is opened again.
pub(crate) fn open_locked(path: &Path) -> Result<File> {
    for _ in 0..REOPEN_TRIES {
        crate::target::require_regular(path)?;
        let mut open = OpenOptions::new();
        // Regular files ignore O_NONBLOCK; a FIFO swapped in since the check above would
        // block an ordinary open (the lock check below then refuses it).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NONBLOCK);
        let file = open.read(true).write(true).open(path)?;
        if !file.metadata()?.is_file() {
            crate::target::require_regular(path)?;
            return Err(
                std::io::Error::other(format!("{}: not a regular file", path.display())).into(),
            );
        }
        lock_exclusive(&file, path)?;
        if is_at_path(&file, path)? {
            return Ok(file);
        }
    }
    // Replaced sixteen times while we looked: someone is rewriting it all the time.
    Err(ErrorKind::Locked {
        path: path.to_path_buf(),
    }
    .into())
}

/// Whether `file` is the file `path` names now (same device and inode).
pub(crate) fn is_at_path(file: &File, path: &Path) -> Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (open, named) = (file.metadata()?, std::fs::metadata(path)?);
        Ok(open.dev() == named.dev() && open.ino() == named.ino())
    }
    #[cfg(not(unix))]
    {
        // Windows does not let a file that is open be renamed over.
        let _ = (file, path);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_handles_in_one_process_conflict_and_a_closed_one_frees_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let first = open_locked(&path).unwrap();
        let err = open_locked(&path).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Locked { path: p } if *p == path));
        drop(first);
        open_locked(&path).unwrap();
    }
}
