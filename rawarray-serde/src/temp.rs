//! The temporary file an [`AtomicFile`](crate::AtomicFile) writes. On Linux it has no name
//! while it is written (`O_TMPFILE`): a writer killed at any moment before its commit leaves
//! nothing behind. It gets a name (`linkat`) just before the rename over the destination. Where
//! the file system cannot make unnamed files, it is a named file `.NAME.ra-tmp-XXXXXX`, removed
//! on every error, recognisable if a killed process leaves it.

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A temporary file in the destination's folder.
#[derive(Debug)]
pub(crate) enum Temp {
    /// `O_TMPFILE`: nameless until [`Temp::persist`].
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Unnamed {
        file: File,
        dir: PathBuf,
        prefix: String,
    },
    /// A named file, removed when dropped.
    Named(tempfile::NamedTempFile),
}

impl Temp {
    /// A new empty file in `dir`, with the permissions `File::create` gives (0o666 less the
    /// umask); named `PREFIX` + random characters if it must have a name.
    pub fn create(dir: &Path, prefix: &str) -> io::Result<Temp> {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let unnamed = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .mode(0o666)
                .custom_flags(libc::O_TMPFILE)
                .open(dir);
            // File systems without O_TMPFILE say EOPNOTSUPP (or EISDIR on old kernels): use a
            // name. Other errors (no such folder, no permission) are the same either way.
            if let Ok(file) = unnamed {
                return Ok(Temp::Unnamed {
                    file,
                    dir: dir.to_path_buf(),
                    prefix: prefix.to_string(),
                });
            }
        }
        named_builder(prefix).tempfile_in(dir).map(Temp::Named)
    }

    /// Whether the file has no name yet (`O_TMPFILE`): no other process can open it by one.
    pub fn is_unnamed(&self) -> bool {
        matches!(self, Temp::Unnamed { .. })
    }

    /// The file.
    pub fn file(&self) -> &File {
        match self {
            Temp::Unnamed { file, .. } => file,
            Temp::Named(t) => t.as_file(),
        }
    }

    /// The file, to write to.
    pub fn file_mut(&mut self) -> &mut File {
        match self {
            Temp::Unnamed { file, .. } => file,
            Temp::Named(t) => t.as_file_mut(),
        }
    }

    /// Another handle on the file, reading from its start (writing is over).
    pub fn reopen(&self) -> io::Result<File> {
        let mut f = self.file().try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        Ok(f)
    }

    /// Renames the file over `target` and returns it. An unnamed file is first linked under a
    /// temporary name in its folder (a rename cannot take an unnamed file); if the link or the
    /// rename fails, nothing is left. Unless `clobber`, a file at `target` is never replaced:
    /// the error is then `AlreadyExists`.
    pub fn persist(self, target: &Path, clobber: bool) -> io::Result<File> {
        fn put<F>(t: tempfile::NamedTempFile<F>, target: &Path, clobber: bool) -> io::Result<F> {
            if clobber {
                t.persist(target)
            } else {
                t.persist_noclobber(target)
            }
            .map_err(|e| e.error)
        }
        match self {
            Temp::Named(t) => put(t, target, clobber),
            Temp::Unnamed { file, dir, prefix } => {
                let linked = named_builder(&prefix).make_in(&dir, |name| link(&file, name));
                match linked {
                    Ok(named) => {
                        put(named, target, clobber)?;
                        Ok(file)
                    }
                    // No way to name it (no /proc, no CAP_DAC_READ_SEARCH): copy it.
                    Err(_) => {
                        let mut copy = named_builder(&prefix).tempfile_in(&dir)?;
                        io::copy(&mut Temp::unnamed_reader(&file)?, copy.as_file_mut())?;
                        copy.as_file()
                            .set_permissions(file.metadata()?.permissions())?;
                        copy.as_file().sync_all()?;
                        put(copy, target, clobber)
                    }
                }
            }
        }
    }

    fn unnamed_reader(file: &File) -> io::Result<File> {
        let mut f = file.try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        Ok(f)
    }
}

pub(crate) fn named_builder(prefix: &str) -> tempfile::Builder<'_, 'static> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    // tempfile creates 0o600 files; ask for what File::create gives (the umask applies).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder
}

/// Gives the unnamed `file` the name `name`: `linkat` of the descriptor itself (which needs
/// `CAP_DAC_READ_SEARCH`), else of its `/proc/self/fd` entry (which needs `/proc`).
#[cfg(target_os = "linux")]
fn link(file: &File, name: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let to = CString::new(name.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `file`, alive for the call; `c""` and `to` are
    // NUL-terminated strings that outlive it; linkat only reads them.
    let linked = unsafe {
        libc::linkat(
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    if linked == 0 {
        return Ok(());
    }
    let proc = CString::new(format!("/proc/self/fd/{fd}")).map_err(io::Error::other)?;
    // SAFETY: as above: both paths are NUL-terminated strings alive for the call.
    let linked = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if linked == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn link(_: &File, _: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn an_unpersisted_file_leaves_nothing_and_a_persisted_one_replaces_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        std::fs::write(&target, b"old").unwrap();
        let mut t = Temp::create(dir.path(), ".t.ra-tmp-").unwrap();
        t.file_mut().write_all(b"new").unwrap();
        let listing = || std::fs::read_dir(dir.path()).unwrap().count();
        if matches!(t, Temp::Named(_)) {
            eprintln!("this file system has no O_TMPFILE: the temporary file has a name");
        } else {
            assert_eq!(listing(), 1, "no name while it is written");
        }
        let mut back = String::new();
        t.reopen().unwrap().read_to_string(&mut back).unwrap();
        assert_eq!(back, "new");
        t.persist(&target, true).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(listing(), 1);
        drop(Temp::create(dir.path(), ".t.ra-tmp-").unwrap());
        assert_eq!(listing(), 1);
    }
}
