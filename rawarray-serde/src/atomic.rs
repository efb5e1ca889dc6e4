//! Writing a file so that a failure never costs what was at the path before.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Result};
use crate::lock::{is_at_path, lock_exclusive};
use crate::target;
use crate::temp::Temp;

/// How an [`AtomicFile`] treats the file it replaces.
///
/// By default it refuses a file it should not replace: one with other hard links (the
/// replacement would split them), one the caller may not write, or one owned by another user
/// (whose owner a replacement could not keep). Symlinks are always followed and anything but a
/// regular file is always refused.
///
/// ```
/// use rawarray_serde::atomic::AtomicOptions;
/// let opts = AtomicOptions::new().force(true).hard_links_in_place(true);
/// assert_ne!(opts, AtomicOptions::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicOptions {
    force: bool,
    in_place: bool,
}

impl AtomicOptions {
    /// The default: refuse hard-linked, read-only and other owners' files.
    pub fn new() -> AtomicOptions {
        AtomicOptions::default()
    }

    /// Replace a read-only file, or another user's file, all the same (as `mv -f` would).
    /// The replacement's setuid and setgid bits are still dropped unless its owner is kept.
    #[must_use]
    pub fn force(mut self, on: bool) -> AtomicOptions {
        self.force = on;
        self
    }

    /// Write a file with several hard links in place, at commit, so that every link sees the
    /// new content. That write is not atomic: a crash during it leaves the file half written,
    /// and a reader that mapped the old content may be cut short (`SIGBUS`) if it shrinks.
    #[must_use]
    pub fn hard_links_in_place(mut self, on: bool) -> AtomicOptions {
        self.in_place = on;
        self
    }
}

/// A file being written atomically: the bytes go to a temporary file in the destination's
/// folder, and [`AtomicFile::commit`] syncs it and renames it over the destination. Dropped
/// without a commit (an error, a panic), the temporary file is removed and the destination
/// keeps its old content, or stays absent.
///
/// The destination is respected: a symlink is followed (the file it points to is replaced and
/// the link stays); anything but a regular file (a FIFO, a device) is refused
/// ([`ErrorKind::NotRegularFile`]), and so, unless
/// [`AtomicOptions`] say otherwise, are a file with other hard links, a file the caller may
/// not write and another user's file. While it is being written, the existing file's exclusive
/// lock is held (see [`RecordWriter`](crate::RecordWriter)): a file another writer is
/// appending to is not replaced under it ([`ErrorKind::Locked`]).
///
/// A new file gets the permissions an ordinary `File::create` would (0o666 less the umask); a
/// replaced file keeps its own, and its owner and group where the process may set them; its
/// setuid and setgid bits are kept only with its owner. On Linux the temporary file has no
/// name until the commit (`O_TMPFILE`, then `linkat`), so a writer killed before it leaves
/// nothing; elsewhere, or on file systems without `O_TMPFILE`, it is named
/// `.NAME.ra-tmp-XXXXXX`, so that one left by a killed process is recognisable. Errors name the
/// destination, never the temporary file.
///
/// This is what `RawArray::write_file` uses; it is public for tools that write other formats
/// (`.npy`, `.png`) with the same guarantee.
///
/// ```
/// use std::io::Write;
/// use rawarray_serde::atomic::AtomicFile;
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
    tmp: Temp,
    /// The destination as the caller named it, for errors.
    path: PathBuf,
    /// The destination with symlinks followed: what is replaced.
    target: PathBuf,
    dir: PathBuf,
    /// The file being replaced, locked, and its metadata.
    existing: Option<(File, Metadata)>,
    in_place: bool,
}

impl AtomicFile {
    /// Starts writing `path` with the default [`AtomicOptions`]: creates the temporary file
    /// beside the file it will replace.
    pub fn create(path: impl AsRef<Path>) -> Result<AtomicFile> {
        AtomicFile::create_with(path, &AtomicOptions::new())
    }

    /// Starts writing `path` as `opts` say.
    pub fn create_with(path: impl AsRef<Path>, opts: &AtomicOptions) -> Result<AtomicFile> {
        let path = path.as_ref();
        let target = target::resolve(path).map_err(|e| named(path, e))?;
        let existing = match target::require_regular(&target).map_err(|e| rename(e, path))? {
            Some(meta) => {
                target::check_replaceable(path, &meta, opts.in_place, opts.force)?;
                Some((lock_existing(path, &target)?, meta))
            }
            None => None,
        };
        let in_place = existing
            .as_ref()
            .is_some_and(|(_, m)| links(m) > 1 && opts.in_place);
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = Temp::create(&dir, &format!(".{name}.ra-tmp-")).map_err(|e| named(path, e))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_path_buf(),
            target,
            dir,
            existing,
            in_place,
        })
    }

    /// The temporary file, to write to (or to copy into with `std::io::copy`, which lets the
    /// kernel copy between files).
    pub fn file(&mut self) -> &mut File {
        self.tmp.file_mut()
    }

    /// Whether the temporary file has no name (`O_TMPFILE`), so that no other process can
    /// open it by one while it is written.
    pub(crate) fn is_unnamed(&self) -> bool {
        self.tmp.is_unnamed()
    }

    /// The destination path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a file was at the destination when this one was started.
    pub fn replaces_existing(&self) -> bool {
        self.existing.is_some()
    }

    /// Syncs the temporary file, renames it over the destination and syncs the folder (or,
    /// for a hard-linked file with [`AtomicOptions::hard_links_in_place`], copies it into the
    /// destination and syncs that).
    pub fn commit(self) -> Result<()> {
        self.finish(true).map(drop)
    }

    /// Like [`AtomicFile::commit`] when a file is being replaced; a new file is renamed into
    /// place without syncing, as `cp` does. Either way nothing that was on disk can be lost:
    /// a power cut right after a relaxed commit may lose only the new file.
    ///
    /// ```
    /// use std::io::Write;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("new.npy");
    /// let mut f = rawarray_serde::atomic::AtomicFile::create(&path).unwrap();
    /// assert!(!f.replaces_existing());
    /// f.file().write_all(b"data").unwrap();
    /// f.commit_relaxed().unwrap();
    /// assert_eq!(std::fs::read(&path).unwrap(), b"data");
    /// ```
    pub fn commit_relaxed(self) -> Result<()> {
        let sync = self.replaces_existing();
        self.finish(sync).map(drop)
    }

    /// Renames the temporary file over the destination (synced first if `sync`) and returns
    /// it open and locked, for writers that go on appending to the file they created.
    pub(crate) fn commit_open(self, sync: bool) -> Result<File> {
        lock_exclusive(self.tmp.file(), &self.path)?;
        if self.in_place {
            return Err(crate::Error::unsupported(
                "a record file cannot be created in place of a hard-linked file",
            ));
        }
        self.finish(sync)
    }

    /// For [`ArrayWriterOptions::create`](crate::ArrayWriterOptions::create): a new file (the
    /// path was free when this one was started) is put in place only if the path is still free,
    /// so that of several creators racing for one new path exactly one wins and the others are
    /// told [`ErrorKind::Locked`]; a file that was there is replaced under its exclusive lock,
    /// which the losers of that race cannot take either. The file comes out holding a
    /// shared lock, taken before it appears at the path: the lock block writers share, which
    /// no creator or exclusive writer can take from under it (turning an exclusive lock into
    /// a shared one lets it go for a moment, in which another creator could replace the file).
    pub(crate) fn commit_open_shared(self, sync: bool) -> Result<File> {
        self.tmp
            .file()
            .try_lock_shared()
            .map_err(|_| ErrorKind::Locked {
                path: self.path.clone(),
            })?;
        if self.in_place {
            return Err(crate::Error::unsupported(
                "an array written in blocks cannot be created in place of a hard-linked file",
            ));
        }
        let path = self.path.clone();
        let clobber = self.existing.is_some();
        self.finish_with(sync, clobber).map_err(|e| match e.kind() {
            ErrorKind::Io(io) if !clobber && io.kind() == io::ErrorKind::AlreadyExists => {
                ErrorKind::Locked { path }.into()
            }
            _ => e,
        })
    }

    /// Puts the new content in place; returns the temporary file's handle.
    fn finish(self, sync: bool) -> Result<File> {
        self.finish_with(sync, true)
    }

    /// [`AtomicFile::finish`]; a file at the destination is replaced only if `clobber`.
    fn finish_with(self, sync: bool, clobber: bool) -> Result<File> {
        let path = self.path.clone();
        if self.in_place {
            return self.copy_in_place();
        }
        if let Some((_, meta)) = &self.existing {
            keep_owner_and_mode(self.tmp.file(), meta).map_err(|e| named(&path, e))?;
        }
        if sync {
            self.tmp.file().sync_all().map_err(|e| named(&path, e))?;
        }
        // The existing file stays locked until it has been replaced.
        let AtomicFile {
            tmp,
            target,
            dir,
            existing,
            ..
        } = self;
        let file = tmp.persist(&target, clobber).map_err(|e| named(&path, e))?;
        if sync {
            sync_dir(&dir);
        }
        drop(existing);
        Ok(file)
    }

    /// Copies the temporary file into the (hard-linked) destination, which keeps its inode.
    fn copy_in_place(self) -> Result<File> {
        let named = |e| named(&self.path, e);
        let mut from = self.tmp.reopen().map_err(named)?;
        let mut to = OpenOptions::new()
            .write(true)
            .open(&self.target)
            .map_err(named)?;
        let len = io::copy(&mut from, &mut to).map_err(named)?;
        to.set_len(len).map_err(named)?;
        to.sync_all().map_err(named)?;
        Ok(to)
    }
}

/// The exclusive lock of the file at `target`, to be held until it is replaced. Opened without
/// blocking (a FIFO swapped in since it was checked would block an ordinary open) and checked
/// again once open.
fn lock_existing(path: &Path, target: &Path) -> Result<File> {
    let mut open = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NONBLOCK);
    // Locking needs no access mode in particular: a write-only file is locked through a
    // write-only handle.
    let file = open
        .read(true)
        .open(target)
        .or_else(|_| open.read(false).write(true).open(target))
        .map_err(|e| named(path, e))?;
    lock_exclusive(&file, path)?;
    if !file.metadata().map_err(|e| named(path, e))?.is_file()
        || !is_at_path(&file, target).map_err(|e| rename(e, path))?
    {
        // Replaced between the check and the lock: by another writer, as far as we can tell.
        return Err(ErrorKind::Locked {
            path: path.to_path_buf(),
        }
        .into());
    }
    Ok(file)
}

fn links(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::nlink(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        1
    }
}

/// Gives the replacement the replaced file's owner, group and mode where the process may.
/// Setuid and setgid bits are kept only if the owner and group are: they must never pass to
/// another owner (root replacing a user's setuid file must not make a root setuid file).
fn keep_owner_and_mode(tmp: &File, meta: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let kept = std::os::unix::fs::fchown(tmp, Some(meta.uid()), Some(meta.gid())).is_ok()
            || (meta.uid() == target::euid()
                && std::os::unix::fs::fchown(tmp, None, Some(meta.gid())).is_ok());
        let mode = if kept {
            meta.mode() & 0o7777
        } else {
            meta.mode() & 0o1777
        };
        // After chown, which clears the setuid bits.
        tmp.set_permissions(std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        tmp.set_permissions(meta.permissions())
    }
}

/// An I/O error about `path`: the destination, never the temporary file, with the OS's words.
fn named(path: &Path, e: io::Error) -> crate::Error {
    io::Error::new(e.kind(), format!("{}: {}", path.display(), os_words(&e))).into()
}

/// The operating system's words for an error, without the paths `tempfile` wraps around them
/// (those name the temporary file): the code of the first OS error in its chain of sources.
fn os_words(e: &io::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|i| i as _);
    let mut code = e.raw_os_error();
    while let (None, Some(s)) = (code, source) {
        code = s
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error);
        source = s.source();
    }
    match code {
        Some(c) => io::Error::from_raw_os_error(c).to_string(),
        None if e.get_ref().is_some() => io::Error::from(e.kind()).to_string(),
        None => e.to_string(),
    }
}

/// An error about the resolved target, reported for the path the caller gave.
fn rename(e: crate::Error, path: &Path) -> crate::Error {
    match e.into_kind() {
        ErrorKind::NotRegularFile { what, .. } => ErrorKind::NotRegularFile {
            path: path.to_path_buf(),
            what,
        }
        .into(),
        ErrorKind::Io(e) => named(path, e),
        kind => kind.into(),
    }
}

/// Writes a file through `write`, atomically (see [`AtomicFile`]). The writer is buffered and
/// flushed explicitly, never by its drop, so every write error, a full disk included, is
/// returned; on any error the destination is untouched. One exception: a single write of
/// 64 MiB or more into the (nameless) temporary file on ext4 or XFS, on a machine with two
/// cores or more, is made on two threads, a second thread copying part of it through a map
/// of the file; if the file system itself fails during that copy (an aborted journal, a
/// shutdown), the process ends with `SIGBUS` instead of an error. A full disk or a quota is
/// still an error, and the destination keeps its old content either way.
///
/// It commits as [`AtomicFile::commit_relaxed`] does: a file it replaces is synced before the
/// rename, so a power cut leaves the old content or the new one, never a loss; a new file is
/// renamed into place without a sync, as `cp`, `numpy.save` and HDF5 write, since a power cut
/// can then lose only what this call wrote (nothing that was on disk before). To make a new
/// file durable as well, open it and call [`File::sync_all`] after the write.
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.csv");
/// rawarray_serde::atomic::write_atomic(&path, |w| w.write_all(b"1,2\n")).unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"1,2\n");
///
/// let failed: std::io::Result<()> = rawarray_serde::atomic::write_atomic(&path, |w| {
///     w.write_all(b"half written")?;
///     Err(std::io::Error::other("conversion failed"))
/// });
/// assert!(failed.is_err());
/// assert_eq!(std::fs::read(&path).unwrap(), b"1,2\n"); // the old content survives
/// ```
pub fn write_atomic<F, E>(path: impl AsRef<Path>, write: F) -> Result<(), E>
where
    F: FnOnce(&mut dyn Write) -> Result<(), E>,
    E: From<io::Error> + From<crate::Error>,
{
    let mut out = AtomicFile::create(path)?;
    {
        let unnamed = out.is_unnamed();
        let mut w = BufWriter::with_capacity(
            1 << 20,
            crate::mapwrite::MapWrites::new(out.file(), unnamed),
        );
        write(&mut w)?;
        w.flush()?;
    }
    out.commit_relaxed()?;
    Ok(())
}

/// Makes a rename durable; best effort, as not every platform can open a folder.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Creates a file atomically and keeps it open and locked: `write` fills a temporary file in
/// the same folder, which is synced (if `sync`) and renamed over `path`. Readers that had the
/// old file open keep reading the old file; nobody ever sees a half-written new one. A file at
/// `path` that another writer holds is not replaced.
pub(crate) fn create_atomic<F>(path: &Path, sync: bool, write: F) -> crate::Result<File>
where
    F: FnOnce(&File) -> crate::Result<()>,
{
    let mut atomic = AtomicFile::create(path)?;
    write(atomic.file())?;
    atomic.commit_open(sync)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of 64 MiB and more between two small writes, as a whole-array write makes it: on
    /// ext4 or XFS with two cores its temporary file (nameless) is written 5/8 by `write` and
    /// 3/8 through a map (mapwrite.rs, whose tests check that the map is taken), elsewhere by
    /// `write`; the bytes are the same.
    #[test]
    fn write_atomic_writes_a_large_buffer_between_small_ones_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.ra");
        let body: Vec<u8> = (0..(crate::mapwrite::MAP_MIN + 12_345) as u64)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        write_atomic(&path, |w| -> io::Result<()> {
            w.write_all(b"head")?;
            w.write_all(&body)?;
            w.write_all(b"tail")
        })
        .unwrap();
        let back = std::fs::read(&path).unwrap();
        assert_eq!(back.len(), 4 + body.len() + 4);
        assert_eq!(&back[..4], b"head");
        assert_eq!(back[4..4 + body.len()], body);
        assert_eq!(&back[4 + body.len()..], b"tail");
    }

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
