//! Temporary local copies of inputs that are not files to read in place: standard input, a
//! pipe, an object-store URL. Each is made once per name and kept open until the command ends.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::fail::{Failure, Result};

/// Standard input, copied to a temporary file the first time a command names `-`, and each
/// pipe named as an input (`/dev/stdin`, `<(...)`, a FIFO), with the names they are read by.
/// On Linux the files are anonymous (unlinked from the start: nothing is left behind however
/// `ra` ends, and the space is freed when the process goes), read by their `/proc/self/fd/N`
/// names; elsewhere they are named temporary files, deleted by [`remove_stdin_copy`] when the
/// command ends (a killed `ra` leaves them).
static COPIES: Mutex<Vec<Copy>> = Mutex::new(Vec::new());

/// One copy.
pub struct Copy {
    /// What was copied, as the command line names it: `-`, or the pipe's name.
    pub source: PathBuf,
    /// Kept open: on Linux the file lives as long as this.
    pub file: File,
    pub path: PathBuf,
    /// The named file to delete (not on Linux).
    pub named: Option<tempfile::TempPath>,
}

/// Deletes the named copies of standard input and of pipes, if any were made (nothing to do
/// on Linux).
pub fn remove_stdin_copy() {
    let copies = std::mem::take(
        &mut *COPIES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for Copy { file, named, .. } in copies {
        drop(file);
        if let Some(named) = named {
            let _ = named.close();
        }
    }
}

/// The copy of `source` made earlier in this command, if any: the name to open it by.
pub fn find(source: &Path) -> Option<PathBuf> {
    COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|c| c.source == source)
        .map(|c| c.path.clone())
}

/// Keeps `copy` until the command ends.
pub fn keep(copy: Copy) {
    COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(copy);
}

/// An anonymous temporary file (Linux), opened afresh by its `/proc/self/fd/N` name.
#[cfg(target_os = "linux")]
pub fn new_temp() -> io::Result<(File, Option<tempfile::TempPath>)> {
    Ok((tempfile::tempfile()?, None))
}

/// A named temporary file where there is no `/proc/self/fd`.
#[cfg(not(target_os = "linux"))]
pub fn new_temp() -> io::Result<(File, Option<tempfile::TempPath>)> {
    let (file, path) = tempfile::Builder::new()
        .prefix(".ra-stdin-")
        .tempfile()?
        .into_parts();
    Ok((file, Some(path)))
}

/// A temporary local file standing for `source` (an object-store URL's copy, see
/// `remote.rs`), kept open until the command ends and named as `source` in messages; returns
/// the name to open it by.
pub fn keep_copy(source: &Path, file: File, named: Option<tempfile::TempPath>) -> Result<PathBuf> {
    let path = reopenable(&file, named.as_deref(), source)?;
    crate::names::name_copy(&path, source);
    keep(Copy {
        source: source.to_path_buf(),
        file,
        path: path.clone(),
        named,
    });
    Ok(path)
}

/// The name to open the copy by: its own, or on Linux `/proc/self/fd/N` (each open has its own
/// offset).
pub fn reopenable(file: &File, named: Option<&Path>, name: &Path) -> Result<PathBuf> {
    if let Some(p) = named {
        return Ok(p.to_path_buf());
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if File::open(&path).is_ok() {
            return Ok(path);
        }
    }
    let _ = file;
    Err(Failure::file(
        name,
        "cannot reopen the temporary copy of standard input (is /proc mounted?)",
    ))
}
