//! One state of a file per read: a reader that copies bytes through a descriptor it opened
//! (`File` with `mmap=False`, decoded chunks, `RaggedFile` rows) returns the bytes of the file
//! as it was when opened, or an error saying the file changed, never a mix of two files.
//!
//! A file rewritten in place (`cp new.ra p`: the same inode, truncated and written again) keeps
//! its descriptor valid, so a read that spans the rewrite would return some bytes of each. Each
//! read is therefore bracketed: the file's [`FileState`] (its length and its modification time
//! in nanoseconds) must be that of the open before the read and after it (the header read at
//! open was checked against that state then). Replacing the file by rename leaves the opened
//! inode as it was, and passes.
//!
//! Mapped views are live views of the file, as `np.memmap`'s are, and are not covered.
//!
//! The check is the binding's for now; [`one_state`] is the one place that makes it, so that
//! it can later call a helper of the library's readers.

use std::fs::File;
use std::path::Path;

use rawarray_serde::{Error, ErrorKind};

use crate::file::read_exact_at;

/// What a file's bytes were at one moment, by `fstat` of its descriptor: writing any byte of
/// it in place changes its modification time (in nanoseconds), and truncating or growing it
/// its length too. The change time is left out: it moves when the file is renamed over or
/// unlinked, which leaves its bytes, and the readers of them, alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileState {
    len: u64,
    modified: (i64, i64),
}

impl FileState {
    /// The state of the open `file` now.
    pub(crate) fn of(file: &File) -> std::io::Result<FileState> {
        let m = file.metadata()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(FileState {
                len: m.len(),
                modified: (m.mtime(), m.mtime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let ns = |t: std::io::Result<std::time::SystemTime>| {
                t.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or((0, 0), |d| {
                        (d.as_secs() as i64, i64::from(d.subsec_nanos()))
                    })
            };
            Ok(FileState {
                len: m.len(),
                modified: ns(m.modified()),
            })
        }
    }
}

/// Device and inode of an open file (zeros where the platform has none): with its length and
/// header, what tells whether a path still names the file a reader or writer opened.
pub(crate) fn file_id(file: &File) -> std::io::Result<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        file.metadata().map(|_| (0, 0))
    }
}

/// How many times an open is tried while the file keeps changing under it (a writer
/// appending records between two `fstat`s of an open that takes some tens of microseconds).
const OPEN_TRIES: usize = 10;

/// What a reader opened: the file's state then and its header's bytes.
#[derive(Clone, Debug)]
pub(crate) struct Opened {
    state: FileState,
    header: Vec<u8>,
}

impl Opened {
    /// Runs `open` (the library's reader reading the header, and whatever else it reads at
    /// open, through `file`) until the file is in one state before and after it, with the
    /// header `open` read (`header_of`, compared to the header bytes on disk then, decoded by
    /// `decode`), or that grew under one of the library's appending writers meanwhile. A file
    /// rewritten while it is opened is tried again, a few times, then an error says it keeps
    /// changing; an error of `open` on a file that did not change is returned as it is.
    pub(crate) fn open<T, H: PartialEq>(
        file: &File,
        path: &Path,
        mut open: impl FnMut() -> rawarray_serde::Result<T>,
        header_of: impl Fn(&T) -> (H, u64),
        decode: impl Fn(&[u8]) -> rawarray_serde::Result<H>,
    ) -> rawarray_serde::Result<(T, Opened)> {
        for _ in 0..OPEN_TRIES {
            let before = FileState::of(file)?;
            let value = match open() {
                Ok(v) => v,
                Err(_) if FileState::of(file)? != before && !writer_appending(file) => continue,
                Err(e) => return Err(e),
            };
            let (header, len) = header_of(&value);
            let mut bytes = vec![0u8; len as usize];
            let read = read_exact_at(file, &mut bytes, 0);
            let after = FileState::of(file)?;
            // Under an appending writer the header on disk may already be a later commit's; the
            // reads are then vouched for by the writer's lock (see `one_state`).
            let one = after == before && read.is_ok() && decode(&bytes).is_ok_and(|h| h == header);
            if one || writer_appending(file) {
                return Ok((
                    value,
                    Opened {
                        state: after,
                        header: bytes,
                    },
                ));
            }
            std::thread::yield_now();
        }
        Err(changed(
            path,
            &format!("while it was being opened, {OPEN_TRIES} times"),
        ))
    }

    /// The file's length and header bytes at open: with its device and inode, what tells
    /// whether a path still names the file opened, unchanged.
    pub(crate) fn identity(&self) -> (u64, &[u8]) {
        (self.state.len, &self.header)
    }

    /// Whether `file` is still in the state it was opened in: one `fstat`. Its header is not
    /// read again: a write in place moves the modification time, except within one tick of a
    /// file system that keeps it coarsely, where a write that keeps the length escapes the
    /// check when it keeps the header too, read or not (a rewrite of the data); reading it to
    /// catch the rarer one that changes it cost every read a syscall on each side.
    fn holds(&self, file: &File) -> bool {
        FileState::of(file).is_ok_and(|s| s == self.state)
    }
}

/// Whether one of the library's writers holds the file's exclusive lock (a `RecordWriter` or
/// `RaggedWriter` appending, or `recover`): those never change the bytes a header they
/// committed covers (they write after them, and commit with one header write), but for the
/// last chunk's index entry, rewritten with one `pwrite` to point at a longer version of that
/// chunk (doc/chunked.md 7.1, step (c)), whose torn copy fails its CRC and is read again by the
/// library's section reader; so a reader of an older header still reads one state of its
/// records. Programs that rewrite a file in
/// place (`cp`) take no lock. Asked only once a file has changed: the probe is a shared lock
/// taken and dropped at once, which a writer starting at that moment waits out.
fn writer_appending(file: &File) -> bool {
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(_) => false,
    }
}

/// Runs `read`, a read of bytes through `file`, and returns its result only if the file was in
/// the state `opened` before and after it, or only grew meanwhile under one of the library's
/// appending writers ([`writer_appending`]): else the error that the file changed (which also
/// stands in for whatever `read` met in a file being rewritten: a short read, a bad block).
pub(crate) fn one_state<T>(
    file: &File,
    path: &Path,
    opened: &Opened,
    read: impl FnOnce() -> rawarray_serde::Result<T>,
) -> rawarray_serde::Result<T> {
    let unchanged = || opened.holds(file) || writer_appending(file);
    if !unchanged() {
        return Err(changed(path, "since it was opened"));
    }
    let out = read();
    if !unchanged() {
        return Err(changed(path, "while it was being read"));
    }
    out
}

/// The error of a file that changed: what happened, and what to do.
fn changed(path: &Path, when: &str) -> Error {
    ErrorKind::Message(format!(
        "{}: the file changed {when} (it was written in place: its length, modification time \
         or header differ), so a read could mix two versions of it; open it again to read it \
         as it is now (files written by replacing them, as rawarray.write does, never change \
         under an open reader)",
        path.display()
    ))
    .into()
}
