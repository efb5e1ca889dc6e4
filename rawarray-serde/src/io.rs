//! Where a file's bytes come from: the one positioned-read trait [`ReadAt`] (a file, a byte
//! slice, a map; an object store reader fetches the same ranges), and [`PinnedFile`], a file
//! that knows the state it was opened in and refuses to mix it with another.
//!
//! Every reader that copies through an open file reads through a [`PinnedFile`] and takes its
//! state ([`ReadAt::state`]) before and after each read (inode, size and modification time to
//! the nanosecond, and the header): a read during which the
//! file changed is an error saying so, never rows of one version and rows of another, and a
//! read that finds the file is no longer the one opened (a header that is not the same file
//! grown, or a file cut below its data) is an error too. A file replaced by rename is not a
//! change: the open file is the old one. A file that grew as
//! the format's writers grow files (a record file's flush, a chunked file's commit: the same
//! header but a larger last dim or `size`) is still the file opened: committed bytes are never
//! written again. Caches of decoded bytes are dropped when the state changes between reads.
//!
//! ```
//! use rawarray_serde::io::{PinnedFile, ReadAt};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("a.ra");
//! rawarray_serde::to_file(&path, &vec![1u8, 2, 3]).unwrap();
//! let f = PinnedFile::open(&path).unwrap();
//! let mut b = [0u8; 3];
//! f.read_exact_at(&mut b, 56).unwrap();
//! assert_eq!(b, [1, 2, 3]);
//! // Rewritten in place to another array: the same inode, another header.
//! std::fs::write(&path, rawarray_serde::to_vec(&vec![9u16; 3]).unwrap()).unwrap();
//! assert!(f.state().is_err());
//! ```

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, Result};
use crate::header::Header;

/// Reads `buf.len()` bytes at `offset` of `source` until two reads agree, or the error that
/// its bytes kept changing: the rule and its reasons are [`crate::fileio`]'s `settled`, for
/// sources that are not a local file.
pub(crate) fn read_settled_at<S: ReadAt + ?Sized>(
    source: &S,
    buf: &mut [u8],
    offset: u64,
) -> io::Result<()> {
    let bytes = crate::fileio::settled(|| {
        let mut b = vec![0u8; buf.len()];
        source.read_exact_at(&mut b, offset)?;
        Ok(b)
    })?;
    buf.copy_from_slice(&bytes);
    Ok(())
}

/// A source of bytes read at an offset (a whole `.ra` file: offsets count from its first
/// byte). `&[u8]`, `Vec<u8>`, `File`, [`PinnedFile`] and memory maps are sources.
pub trait ReadAt: Sync {
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The source's length in bytes.
    fn source_len(&self) -> io::Result<u64>;
    /// The source's state now, for a reader to compare before and after a read; `None` for
    /// sources that cannot change (bytes in memory, a map, a pinned object). An error if it is
    /// no longer the source opened (a file rewritten in place to another header, or cut below
    /// its data).
    fn state(&self) -> Result<Option<FileState>> {
        Ok(None)
    }

    /// Whether a read that began in state `then` and ended in `now` read one state of the
    /// source: [`FileState::holds_in`], or (a file) the same length and header written under
    /// the lock one of this crate's writers holds, which only ever writes what no reader of
    /// `then` reads (a record file's last chunk entered again, doc/chunked.md 7.1).
    fn still_holds(&self, then: &FileState, now: &FileState) -> bool {
        then.holds_in(now)
    }

    /// Whether the bytes `range` can be read now. A local source reads anything it has (the
    /// default: `true`); a source over fetched pieces of a remote object (the object-store
    /// reader's) answers `false` for bytes not fetched yet, so that a reader can ask a
    /// [`Section`](crate::section::Section) which bytes a read needs
    /// ([`Section::box_fetches`](crate::section::Section::box_fetches)), fetch them its own
    /// way, and then read through the source.
    fn has(&self, range: std::ops::Range<u64>) -> bool {
        let _ = range;
        true
    }

    /// Whether a read of this source is a local copy (a file, a map, bytes in memory), which
    /// several threads may make at once to read faster: a plain section's large reads are then
    /// split across threads ([`Section::with_threads`](crate::section::Section::with_threads)).
    /// `false` (the default) for sources where a read is a request, an object store's, whose
    /// count matters more than the thread making it.
    fn is_local(&self) -> bool {
        false
    }

    /// The bytes `offset .. offset + len` borrowed from the source itself, where it holds them
    /// in memory (bytes, a map): a reader then decodes them where they are instead of copying
    /// them into a buffer of its own first (for a compressed chunk, an allocation, a fill and a
    /// copy of its stored bytes). `None`, the default, where they must be read (a file, an
    /// object) or are not all there.
    ///
    /// ```
    /// use rawarray_serde::io::ReadAt;
    /// let bytes = vec![1u8, 2, 3, 4];
    /// assert_eq!(bytes.borrow_at(1, 2), Some(&[2u8, 3][..]));
    /// assert_eq!(bytes.borrow_at(3, 2), None);
    /// ```
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let _ = (offset, len);
        None
    }
}

/// The threads a large plain read or write may use, asked once: `RAYON_NUM_THREADS` where it
/// is a number above 0 (the one setting of the library's own threads, which also sizes rayon's
/// pool, where compressed reads decode), else the machine's cores as std counts them (a
/// cgroup's quota included; std reads the cgroup's files at every call, hence once).
pub(crate) fn io_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            })
    })
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        crate::fileio::read_exact_at(self, buf, offset)
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn is_local(&self) -> bool {
        true
    }
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(buf.len())?))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let at = usize::try_from(offset).ok()?;
        self.get(at..at.checked_add(usize::try_from(len).ok()?)?)
    }
    fn is_local(&self) -> bool {
        true
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        self.as_slice().borrow_at(offset, len)
    }
    fn is_local(&self) -> bool {
        true
    }
}

impl ReadAt for memmap2::Mmap {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        (**self).borrow_at(offset, len)
    }
    fn is_local(&self) -> bool {
        true
    }
}

/// `ReadAt` through a pointer: every method asks the pointee.
macro_rules! read_at_through {
    ($($ptr:ty where $bound:path);+ $(;)?) => {$(
        impl<T: ReadAt + ?Sized + $bound> ReadAt for $ptr {
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                (**self).read_exact_at(buf, offset)
            }
            fn source_len(&self) -> io::Result<u64> {
                (**self).source_len()
            }
            fn state(&self) -> Result<Option<FileState>> {
                (**self).state()
            }
            fn still_holds(&self, then: &FileState, now: &FileState) -> bool {
                (**self).still_holds(then, now)
            }
            fn has(&self, range: std::ops::Range<u64>) -> bool {
                (**self).has(range)
            }
            fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
                (**self).borrow_at(offset, len)
            }
            fn is_local(&self) -> bool {
                (**self).is_local()
            }
        }
    )+};
}

read_at_through! {
    &T where Sync;
    std::sync::Arc<T> where Send;
}

/// What identifies one state of a file: its inode, length, modification time to the
/// nanosecond, and its header's bytes. (Not the change time: unlinking a file changes it, and
/// a file replaced by rename is still the state its readers opened.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileState {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    header: Vec<u8>,
}

impl FileState {
    /// The state of `file` now.
    pub fn of(file: &File) -> io::Result<FileState> {
        let meta = file.metadata()?;
        let header = crate::fileio::stable_header_bytes(file).unwrap_or_default();
        Ok(FileState::from_meta(&meta, header))
    }

    /// The state of a file whose `fstat` gave `meta`, with `header`: its header's bytes read
    /// after that `fstat`, until two reads agreed.
    pub(crate) fn from_meta(meta: &std::fs::Metadata, header: Vec<u8>) -> FileState {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            FileState {
                dev: meta.dev(),
                ino: meta.ino(),
                len: meta.len(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                header,
            }
        }
        #[cfg(not(unix))]
        {
            let ns = |t: io::Result<std::time::SystemTime>| {
                t.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128)
            };
            FileState {
                dev: 0,
                ino: 0,
                len: meta.len(),
                mtime_ns: ns(meta.modified()),
                header,
            }
        }
    }

    /// The file's length in this state.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Whether `now` is still the file of this state: the same inode, a header of the same
    /// file (perhaps grown: a larger `size` or last dim), the data this header describes all
    /// there, and not a write that kept both the length and the header (what a rewrite in
    /// place of the same array looks like: the format's writers always change one of them,
    /// appending past the data or committing a larger header).
    pub fn holds_in(&self, now: &FileState) -> bool {
        if now == self {
            return true;
        }
        if now.dev != self.dev || now.ino != self.ino {
            return false;
        }
        if now.len == self.len && now.header == self.header {
            return false;
        }
        match (
            Header::decode_any(&self.header),
            Header::decode_any(&now.header),
        ) {
            (Ok(then), Ok(h)) => {
                h.is_grown_from(&then)
                    && now.len >= (then.encoded_len() as u64).saturating_add(then.size)
            }
            // A ragged file's header (flag bit 3), which only its readers decode.
            _ => grown_ragged(&self.header, &now.header).is_some_and(|end| now.len >= end),
        }
    }

    /// Whether `now` is the same inode with the same length and header (written in place, if
    /// anything).
    pub fn same_place(&self, now: &FileState) -> bool {
        (now.dev, now.ino, now.len, &now.header) == (self.dev, self.ino, self.len, &self.header)
    }

    /// The error of a read during which the file went from this state to `now`.
    pub fn changed_to(&self, now: &FileState) -> crate::Error {
        ErrorKind::Changed {
            what: describe_change(self, now),
        }
        .into()
    }
}

/// A file and the state it was opened in (see the module docs).
#[derive(Debug)]
pub struct PinnedFile {
    file: File,
    path: PathBuf,
    state: FileState,
}

impl PinnedFile {
    /// Opens `path` for reading and records its state.
    pub fn open(path: impl AsRef<Path>) -> Result<PinnedFile> {
        let path = path.as_ref();
        crate::fileio::reading(path, |p| {
            let file = File::open(p)?;
            PinnedFile::new(file, p)
        })
    }

    /// Pins an open `file` (known as `path` in messages) in its state now.
    pub fn new(file: File, path: impl AsRef<Path>) -> Result<PinnedFile> {
        let state = FileState::of(&file)?;
        Ok(PinnedFile {
            file,
            path: path.as_ref().to_path_buf(),
            state,
        })
    }

    /// Pins an open `file` whose header the caller has read from it already (`header`: its
    /// bytes, as [`Header::encode`] gives them; a ragged header's may go on with its slot count
    /// word). The pinned state must be of that header, or of the same file grown since
    /// ([`Header::is_grown_from`]); else the file was rewritten in place between the caller's
    /// read of the header and the pin, and this is the error saying it changed: every read
    /// would then be checked against the new state yet laid out by the old header.
    ///
    /// ```
    /// use rawarray_serde::io::PinnedFile;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// rawarray_serde::to_file(&path, &vec![1u8, 2, 3]).unwrap();
    /// let header = rawarray_serde::Header::read_from_any(&mut std::fs::File::open(&path).unwrap()).unwrap();
    /// let file = std::fs::File::open(&path).unwrap();
    /// assert!(PinnedFile::pin_read(file.try_clone().unwrap(), &path, &header.encode()).is_ok());
    /// // Rewritten in place to another array before the pin.
    /// std::fs::write(&path, rawarray_serde::to_vec(&vec![9u16; 3]).unwrap()).unwrap();
    /// assert!(PinnedFile::pin_read(file, &path, &header.encode()).is_err());
    /// ```
    pub fn pin_read(file: File, path: impl AsRef<Path>, header: &[u8]) -> Result<PinnedFile> {
        let pinned = PinnedFile::new(file, path)?;
        let now = &pinned.state.header;
        let read = header.get(..header_len(header)).unwrap_or(header);
        let grown = || match (Header::decode_any(read), Header::decode_any(now)) {
            (Ok(then), Ok(h)) => h.is_grown_from(&then),
            // A ragged file's header (flag bit 3), grown by its writer's commit.
            _ => grown_ragged(read, now).is_some(),
        };
        if now.as_slice() == read || grown() {
            return Ok(pinned);
        }
        Err(crate::Error::from(ErrorKind::Changed {
            what: "its header is not the one it had".into(),
        })
        .in_file(&pinned.path))
    }

    /// Pins an open `file` whose header `header` a reader's [`snapshot`](crate::mapped::snapshot)
    /// just read, with the state that snapshot took (`state`): the state of the same moment as
    /// the header, so nothing is taken again; without one (the header kept changing), as
    /// [`PinnedFile::pin_read`].
    pub(crate) fn pin_snapshot(
        file: File,
        path: &Path,
        header: &Header,
        state: Option<FileState>,
    ) -> Result<PinnedFile> {
        match state {
            Some(state) => Ok(PinnedFile {
                file,
                path: path.to_path_buf(),
                state,
            }),
            None => PinnedFile::pin_read(file, path, &header.encode()),
        }
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The path it was opened as.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state it was opened in.
    pub fn opened_state(&self) -> &FileState {
        &self.state
    }
}

impl ReadAt for PinnedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        crate::fileio::read_exact_at(&self.file, buf, offset)
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn state(&self) -> Result<Option<FileState>> {
        // The header is read on every check, not only when the length or the modification
        // time moved: with one `fstat` alone, the in-place rewrite test (tests/rewrite_rounds.rs)
        // found a plain read mixing two versions under load.
        let now = FileState::of(&self.file)?;
        if self.still_holds(&self.state, &now) {
            return Ok(Some(now));
        }
        Err(self.state.changed_to(&now).in_file(&self.path))
    }
    fn still_holds(&self, then: &FileState, now: &FileState) -> bool {
        then.holds_in(now) || (then.same_place(now) && self.writer_holds_it())
    }
    fn is_local(&self) -> bool {
        true
    }
}

impl PinnedFile {
    /// Whether one of this crate's exclusive writers (a record or ragged writer, `recover`)
    /// holds the file now: a shared lock cannot be had. Taken and let go at once otherwise.
    fn writer_holds_it(&self) -> bool {
        match self.file.try_lock_shared() {
            Ok(()) => {
                let _ = self.file.unlock();
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        }
    }
}

/// Bytes of the header at the start of `bytes` by its ndims word (48 + 8 x ndims), as
/// [`FileState`] keeps it: without a ragged file's slot count word after the dims.
fn header_len(bytes: &[u8]) -> usize {
    let fixed = crate::header::FIXED_HEADER_LEN;
    bytes
        .get(fixed - 8..fixed)
        .map(crate::header::le_u64)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_mul(8)?.checked_add(fixed))
        .unwrap_or(bytes.len())
}

/// "its length went from 100 to 80 bytes" and the like, for the error.
fn describe_change(then: &FileState, now: &FileState) -> String {
    if then.len != now.len {
        format!("its length went from {} to {} bytes", then.len, now.len)
    } else if then.header != now.header {
        "its header is not the one it had".into()
    } else if then.ino != now.ino {
        "it is another file".into()
    } else {
        "it was written (its modification time changed)".into()
    }
}

/// A file's data section mapped into memory, read as the whole file's offsets (the header
/// before it is not mapped: reads of it fail). A map is a live view of the file, as numpy's
/// `memmap` is: it is never checked for changes.
#[derive(Debug)]
pub struct MappedSection {
    map: memmap2::Mmap,
    base: u64,
}

impl MappedSection {
    /// Maps the data section of `file`, whose header is `header`.
    ///
    /// # Safety
    ///
    /// memmap2's contract: the mapped bytes must be neither modified nor truncated away while
    /// the map lives (see [`crate::ArrayReader::open_mapped`] for what this crate promises).
    pub unsafe fn new(file: &File, header: &Header) -> Result<MappedSection> {
        // SAFETY: the caller upholds memmap2's contract (this fn's own).
        let map = unsafe { crate::fileio::map_data_section(file, header)? };
        Ok(MappedSection {
            map,
            base: header.encoded_len() as u64,
        })
    }

    /// The mapped data section.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}

impl ReadAt for MappedSection {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let at = offset
            .checked_sub(self.base)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        (*self.map).read_exact_at(buf, at)
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.base + self.map.len() as u64)
    }
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        (*self.map).borrow_at(offset.checked_sub(self.base)?, len)
    }
    fn is_local(&self) -> bool {
        true
    }
}

/// `len` bytes of a source from `offset`, as a `Read`: positioned reads, so readers sharing
/// the source across threads do not disturb each other.
pub struct ReadAtCursor<'a, S: ReadAt + ?Sized> {
    source: &'a S,
    offset: u64,
    left: u64,
}

impl<'a, S: ReadAt + ?Sized> ReadAtCursor<'a, S> {
    /// The bytes `offset .. offset + len` of `source`.
    pub fn new(source: &'a S, offset: u64, len: u64) -> ReadAtCursor<'a, S> {
        ReadAtCursor {
            source,
            offset,
            left: len,
        }
    }
}

impl<S: ReadAt + ?Sized> io::Read for ReadAtCursor<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = usize::try_from(self.left).map_or(buf.len(), |l| l.min(buf.len()));
        self.source.read_exact_at(&mut buf[..n], self.offset)?;
        self.offset += n as u64;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Whether the ragged header bytes `now` (as [`stable_header_bytes`](crate::fileio::stable_header_bytes) reads them: the dims, not
/// the slot count word) are those of `then`'s file grown by a writer's commit: the same flags,
/// element, value dims and ndims, and `size`, values and rows no smaller. Returns `then`'s data
/// end (which the file must still hold), or `None` for anything else.
fn grown_ragged(then: &[u8], now: &[u8]) -> Option<u64> {
    let words = |b: &[u8]| -> Option<Vec<u64>> {
        let w: Vec<u64> = b.chunks_exact(8).map(crate::header::le_u64).collect();
        let ok = b.len().is_multiple_of(8)
            && w.len() >= 8
            && w[0] == crate::header::MAGIC
            && w[1] & crate::header::RAGGED != 0
            && w[5] == w.len() as u64 - 6;
        ok.then_some(w)
    };
    let (t, n) = (words(then)?, words(now)?);
    let k = t.len();
    let same = n.len() == k && t[..4] == n[..4] && t[5] == n[5] && t[6..k - 2] == n[6..k - 2];
    let grown = n[4] >= t[4] && n[k - 2] >= t[k - 2] && n[k - 1] >= t[k - 1];
    (same && grown).then(|| (then.len() as u64).saturating_add(t[4]))
}

/// [`header_bytes`](crate::fileio::header_bytes) of a source that is not a local file (an
/// object in a store): the same bytes, by at most two reads within the source's length. Here,
/// not in `fileio`, which `io` imports: `fileio` takes no positioned-read trait.
pub(crate) fn header_bytes_of<S: ReadAt + ?Sized>(source: &S) -> io::Result<Vec<u8>> {
    let len = source.source_len()?;
    let read = |want: usize| -> io::Result<Vec<u8>> {
        let mut bytes = vec![0u8; (want as u64).min(len) as usize];
        source.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    };
    let mut bytes = read(crate::fileio::FIRST_HEADER_READ)?;
    if bytes.len() < crate::header::FIXED_HEADER_LEN {
        return Ok(bytes);
    }
    let ndims = crate::header::le_u64(&bytes[40..48]);
    let fixed = crate::header::FIXED_HEADER_LEN;
    let want = if ndims <= crate::header::MAX_NDIMS {
        fixed + 8 * ndims as usize
    } else {
        fixed
    };
    if want <= bytes.len() {
        bytes.truncate(want);
        return Ok(bytes);
    }
    read(want)
}

#[cfg(test)]
mod tests {
    use super::{read_settled_at, ReadAt};
    use crate::fileio::SETTLE_TRIES;
    use std::io;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A source whose 8 bytes are the count of reads made so far (a writer rewriting its
    /// header on every read), until `still_from` reads, after which they stay put.
    struct Rewritten {
        reads: AtomicU64,
        still_from: u64,
    }

    impl ReadAt for Rewritten {
        fn read_exact_at(&self, buf: &mut [u8], _offset: u64) -> io::Result<()> {
            let n = self.reads.fetch_add(1, Ordering::SeqCst);
            buf.copy_from_slice(&n.min(self.still_from).to_le_bytes());
            Ok(())
        }
        fn source_len(&self) -> io::Result<u64> {
            Ok(8)
        }
    }

    #[test]
    fn a_header_that_keeps_changing_is_an_error_not_its_last_read() {
        let src = Rewritten {
            reads: AtomicU64::new(0),
            still_from: u64::MAX,
        };
        let mut buf = [0u8; 8];
        let err = read_settled_at(&src, &mut buf, 0).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("header kept changing while it was read")
                && msg.contains("a writer is rewriting it"),
            "{msg}"
        );
        // Bounded: the first read and SETTLE_TRIES more, then the error.
        assert_eq!(src.reads.load(Ordering::SeqCst), SETTLE_TRIES as u64 + 1);
    }

    #[test]
    fn a_header_that_settles_is_read_as_the_two_reads_that_agree() {
        let src = Rewritten {
            reads: AtomicU64::new(0),
            still_from: 5,
        };
        let mut buf = [0u8; 8];
        read_settled_at(&src, &mut buf, 0).unwrap();
        assert_eq!(u64::from_le_bytes(buf), 5);
        // Reads 0..=5 differ from the one before; read 6 is the first to agree (with 5).
        assert_eq!(src.reads.load(Ordering::SeqCst), 7);
    }

    /// What a user sees: a function given a path names it before the error.
    #[test]
    fn the_error_names_the_file() {
        let src = Rewritten {
            reads: AtomicU64::new(0),
            still_from: u64::MAX,
        };
        let path = std::path::Path::new("some/dir/growing.ra");
        let err = crate::fileio::reading(path, |_| {
            let mut buf = [0u8; 8];
            read_settled_at(&src, &mut buf, 0)?;
            Ok(())
        })
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("some/dir/growing.ra: ")
                && msg.contains("its header kept changing while it was read"),
            "{msg}"
        );
    }
}
