//! Where a conversion writes: a file replaced atomically (the library's `AtomicFile`), or the
//! spool of standard output, an anonymous temporary file (unlinked from the start, so nothing
//! is left behind however `ra` ends: Ctrl-C, kill, a panic).

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rawarray_serde::atomic::AtomicFile;

/// The spool of standard output, once [`make_spool`] has made it.
static SPOOL: Mutex<Option<File>> = Mutex::new(None);

/// The name converters are given for the spool (and errors name): not a file.
pub const SPOOL_NAME: &str = "<stdout>";

/// Makes the spool, an unlinked temporary file; returns the name to write it by.
pub fn make_spool() -> std::io::Result<PathBuf> {
    let file = tempfile::tempfile()?;
    *SPOOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(file);
    Ok(PathBuf::from(SPOOL_NAME))
}

/// The spool, rewound, for copying to standard output.
pub fn take_spool() -> std::io::Result<Option<File>> {
    let spool = SPOOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match spool {
        Some(mut f) => {
            f.seek(SeekFrom::Start(0))?;
            Ok(Some(f))
        }
        None => Ok(None),
    }
}

/// A file being written: nothing is seen at its name until [`OutFile::commit`].
pub enum OutFile {
    /// A file, through a temporary one renamed over it.
    Atomic(Box<AtomicFile>),
    /// The spool of standard output.
    Spool(File),
}

impl OutFile {
    /// Starts writing `path` (the spool if `path` is [`SPOOL_NAME`] and it was made).
    pub fn create(path: &Path) -> rawarray_serde::Result<OutFile> {
        if path.as_os_str() == SPOOL_NAME {
            let spool = SPOOL
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(f) = spool.as_ref() {
                return Ok(OutFile::Spool(f.try_clone()?));
            }
        }
        Ok(OutFile::Atomic(Box::new(AtomicFile::create(path)?)))
    }

    /// The file to write.
    pub fn file(&mut self) -> &mut File {
        match self {
            OutFile::Atomic(a) => a.file(),
            OutFile::Spool(f) => f,
        }
    }

    /// Makes the file what its name shows (synced, as the library's `commit`).
    pub fn commit(self) -> rawarray_serde::Result<()> {
        match self {
            OutFile::Atomic(a) => a.commit(),
            OutFile::Spool(_) => Ok(()),
        }
    }

    /// As [`OutFile::commit`], without syncing a new file (the library's `commit_relaxed`).
    pub fn commit_relaxed(self) -> rawarray_serde::Result<()> {
        match self {
            OutFile::Atomic(a) => a.commit_relaxed(),
            OutFile::Spool(_) => Ok(()),
        }
    }
}

/// The library's `write_atomic`, writing the spool for [`SPOOL_NAME`].
pub fn write_atomic<F, E>(path: &Path, write: F) -> Result<(), E>
where
    F: FnOnce(&mut dyn Write) -> Result<(), E>,
    E: From<std::io::Error> + From<rawarray_serde::Error>,
{
    let mut out = OutFile::create(path)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, out.file());
        write(&mut w)?;
        w.flush()?;
    }
    out.commit()?;
    Ok(())
}
