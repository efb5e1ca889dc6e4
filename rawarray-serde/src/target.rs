//! What is at the destination of a write, and whether it may be replaced: symlinks are
//! followed, only regular files are written, hard links are not split, read-only files and
//! other owners' files are left alone unless the caller forces it.

use std::fs::{FileType, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Result};

/// Links followed before giving up, as Linux's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// The path a write to `path` lands on: symlinks followed (a dangling one too, to the file it
/// names), so that the link stays and the file it points to is replaced.
pub(crate) fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{}: more than {MAX_LINKS} levels of symbolic links",
        path.display()
    )))
}

/// Words for a file type that is not a regular file.
fn what(ft: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "FIFO";
        }
        if ft.is_char_device() {
            return "character device";
        }
        if ft.is_block_device() {
            return "block device";
        }
        if ft.is_socket() {
            return "socket";
        }
    }
    if ft.is_dir() {
        "folder"
    } else {
        "special file"
    }
}

/// The metadata of the file at `path` (symlinks followed), `None` if there is none; an error
/// naming it if it is not a regular file.
pub(crate) fn require_regular(path: &Path) -> Result<Option<Metadata>> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(m)),
        Ok(m) => Err(ErrorKind::NotRegularFile {
            path: path.to_path_buf(),
            what: what(m.file_type()),
        }
        .into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Refuses to replace the regular file `path` (metadata `meta`) when that would split its hard
/// links (unless they are kept by writing in place), or when the caller could not write it or
/// could not keep its owner (unless forced).
pub(crate) fn check_replaceable(
    path: &Path,
    meta: &Metadata,
    in_place: bool,
    force: bool,
) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 && !in_place {
            return Err(ErrorKind::HardLinked {
                path: path.to_path_buf(),
                links: meta.nlink(),
            }
            .into());
        }
        if force {
            return Ok(());
        }
        let protected = |why: String| {
            Err(ErrorKind::Protected {
                path: path.to_path_buf(),
                why,
            }
            .into())
        };
        // Root may write anything, so `access` says yes to root; no write bit for anyone is
        // what read-only means then.
        if meta.mode() & 0o222 == 0 || !may_write(path) {
            return protected(format!("read-only (mode {:o})", meta.mode() & 0o7777));
        }
        // A replacement belongs to whoever creates it; only root can give it to another owner.
        let me = euid();
        if meta.uid() != me && me != 0 && !in_place {
            return protected(format!(
                "owned by user {}: a replacement would belong to user {me}",
                meta.uid()
            ));
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = in_place;
        if meta.permissions().readonly() && !force {
            return Err(ErrorKind::Protected {
                path: path.to_path_buf(),
                why: "read-only".into(),
            }
            .into());
        }
        Ok(())
    }
}

/// `access(path, W_OK)`: whether this process's real ids may write the file.
#[cfg(unix)]
fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated string that lives across the call; `access` only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The effective user id.
#[cfg(unix)]
pub(crate) fn euid() -> u32 {
    // SAFETY: `geteuid` takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}
