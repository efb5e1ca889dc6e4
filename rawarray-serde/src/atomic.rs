//! Writing a file so that a failure never costs what was at the path before.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written atomically: the bytes go to a temporary file in the destination's
/// folder, and [`AtomicFile::commit`] syncs it and renames it over the destination. Dropped
/// without a commit (an error, a panic), the temporary file is removed and the destination
/// keeps its old content, or stays absent.
///
/// A new file gets the permissions an ordinary `File::create` would (0o666 less the umask); a
/// replaced file keeps its own. This is what `RawArray::write_file` uses; it is public for
/// tools that write other formats (`.npy`, `.png`) with the same guarantee.
///
/// ```
/// use std::io::Write;
/// use rawarray_serde::AtomicFile;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("notes.txt");
/// let mut f = AtomicFile::create(&path).unwrap();
/// f.file().write_all(b"hello").unwrap();
/// assert!(!path.exists()); // nothing at the destination until the commit
/// f.commit().unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// ```
#[derive(Debug)]
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
    dir: PathBuf,
    replaces: bool,
}

impl AtomicFile {
    /// Starts writing `path`: creates the temporary file beside it.
    pub fn create(path: impl AsRef<Path>) -> io::Result<AtomicFile> {
        let path = path.as_ref();
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // tempfile creates 0o600 files; ask for what File::create gives (the umask applies).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir)?;
        // Keep the permissions of the file being replaced.
        let existing = std::fs::metadata(path).ok();
        if let Some(meta) = &existing {
            tmp.as_file().set_permissions(meta.permissions())?;
        }
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            replaces: existing.is_some(),
        })
    }

    /// The temporary file, to write to (or to copy into with `std::io::copy`, which lets the
    /// kernel copy between files).
    pub fn file(&mut self) -> &mut File {
        self.tmp.as_file_mut()
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a file was at the destination when this one was started.
    pub fn replaces_existing(&self) -> bool {
        self.replaces
    }

    /// Syncs the temporary file, renames it over the destination and syncs the folder.
    pub fn commit(self) -> io::Result<()> {
        self.tmp.as_file().sync_all()?;
        self.tmp.persist(&self.path).map_err(|e| e.error)?;
        sync_dir(&self.dir);
        Ok(())
    }

    /// Like [`AtomicFile::commit`] when a file is being replaced; a new file is renamed into
    /// place without syncing, as `cp` does. Either way nothing that was on disk can be lost:
    /// a power cut right after a relaxed commit may lose only the new file.
    ///
    /// ```
    /// use std::io::Write;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("new.npy");
    /// let mut f = rawarray_serde::AtomicFile::create(&path).unwrap();
    /// assert!(!f.replaces_existing());
    /// f.file().write_all(b"data").unwrap();
    /// f.commit_relaxed().unwrap();
    /// assert_eq!(std::fs::read(&path).unwrap(), b"data");
    /// ```
    pub fn commit_relaxed(self) -> io::Result<()> {
        if self.replaces {
            return self.commit();
        }
        self.tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Writes a file through `write`, atomically (see [`AtomicFile`]). The writer is buffered and
/// flushed explicitly, never by its drop, so every write error, a full disk included, is
/// returned; on any error the destination is untouched.
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.csv");
/// rawarray_serde::write_atomic(&path, |w| w.write_all(b"1,2\n")).unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"1,2\n");
///
/// let failed: std::io::Result<()> = rawarray_serde::write_atomic(&path, |w| {
///     w.write_all(b"half written")?;
///     Err(std::io::Error::other("conversion failed"))
/// });
/// assert!(failed.is_err());
/// assert_eq!(std::fs::read(&path).unwrap(), b"1,2\n"); // the old content survives
/// ```
pub fn write_atomic<F, E>(path: impl AsRef<Path>, write: F) -> Result<(), E>
where
    F: FnOnce(&mut dyn Write) -> Result<(), E>,
    E: From<io::Error>,
{
    let mut out = AtomicFile::create(path)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, out.file());
        write(&mut w)?;
        w.flush()?;
    }
    out.commit()?;
    Ok(())
}

/// Makes a rename durable; best effort, as not every platform can open a folder.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

impl AtomicFile {
    /// Renames the temporary file over the destination and returns it open (synced first if
    /// `sync`), for writers that go on appending to the file they created.
    pub(crate) fn commit_open(self, sync: bool) -> io::Result<File> {
        if sync {
            self.tmp.as_file().sync_all()?;
        }
        let file = self.tmp.persist(&self.path).map_err(|e| e.error)?;
        if sync {
            sync_dir(&self.dir);
        }
        Ok(file)
    }
}

/// Creates a file atomically and keeps it open: `write` fills a temporary file in the same
/// folder, which is synced (if `sync`) and renamed over `path`. Readers that had the old file
/// open keep reading the old file; nobody ever sees a half-written new one.
pub(crate) fn create_atomic<F>(path: &Path, sync: bool, write: F) -> crate::Result<File>
where
    F: FnOnce(&File) -> crate::Result<()>,
{
    let mut atomic = AtomicFile::create(path)?;
    write(atomic.file())?;
    Ok(atomic.commit_open(sync)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut f = AtomicFile::create(&path).unwrap();
        f.file().write_all(b"partial").unwrap();
        drop(f);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_get_ordinary_permissions_and_replaced_files_keep_theirs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        File::create(&plain).unwrap();
        let new = dir.path().join("new");
        write_atomic(&new, |w| w.write_all(b"x")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&new), mode(&plain));

        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&new, |w| w.write_all(b"y")).unwrap();
        assert_eq!(mode(&new), 0o640);
    }
}
