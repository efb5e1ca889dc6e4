//! Large writes into a new file on two threads, one of them copying through a memory map.
//!
//! A `write` of a large buffer is one core copying it into the page cache while it holds the
//! file's lock (ext4 and XFS let one buffered write into a file run at a time), so a plain
//! 256 MiB array took as long to write through this library as through HDF5 or a bare `write`.
//! Pages of a shared file mapping are filled without that lock, so a second thread copying
//! part of the buffer into a map of the file while the first `write`s the rest takes the time
//! down to about 0.7x of one `write` (doc/benchmarks.md, "Plain reads and writes on two
//! threads"). Writing a new file through a map is how LLVM's lld writes its output: a new file
//! sized first, mapped, filled by several threads, then renamed into place.
//!
//! A write fault into a map cannot return an error: where a `write` would fail, the process
//! gets a `SIGBUS` instead. So the map is used only where the failures a `write` reports in
//! normal operation cannot reach it:
//! - the file is this library's own new temporary file and has no name (`O_TMPFILE`), so no
//!   other process can open it to cut it short under the map (only one of the same user or
//!   root, through `/proc/PID/fd`); a temporary file that had to be named is written by
//!   `write` alone;
//! - its blocks are reserved with `fallocate` before anything is mapped, so a full disk or a
//!   quota is that call's error, and the write falls back to `write`, which reports it;
//! - it lives on ext4 or XFS, where the reserved blocks are all a write fault needs (a
//!   copy-on-write file system such as btrfs allocates again at the fault, so it takes
//!   `write`; so does tmpfs, where the map was slower).
//!
//! What is left is a file system failing under the write: an aborted journal, a shutdown, an
//! I/O error that remounts it read-only. A `write` would then return an error; a fault on the
//! map ends the process. Either way the temporary file is never renamed, so the file at the
//! destination keeps its old content. Writes smaller than [`MAP_MIN`], a machine with one
//! core, and every platform but Linux write as before.

use std::fs::File;
use std::io::{self, Write};

/// The smallest write split across two threads: below it the setup (a `fallocate`, an `mmap`,
/// starting a thread) is a larger share than a second core saves.
pub(crate) const MAP_MIN: usize = 64 << 20;

/// A writer of a new, empty file that `write_atomic` (atomic.rs) puts under
/// its buffer: each `write_all` of [`MAP_MIN`] bytes or more, into a file with no name, is
/// split between a `write` and a map (see the module docs); everything else, and every write
/// where a map cannot be used, is the file's own `write`. The file's cursor ends where a
/// `write` would have left it either way.
pub(crate) struct MapWrites<'a> {
    file: &'a File,
    mappable: bool,
}

impl<'a> MapWrites<'a> {
    /// Writes to `file`, which this crate created; `unnamed`: it has no name (`O_TMPFILE`),
    /// the only kind of file it maps.
    pub(crate) fn new(file: &'a File, unnamed: bool) -> MapWrites<'a> {
        MapWrites {
            file,
            mappable: unnamed,
        }
    }
}

impl Write for MapWrites<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.mappable && buf.len() >= MAP_MIN && split_write(self.file, buf)? != Split::Declined
        {
            return Ok(());
        }
        self.file.write_all(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.file.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How [`split_write`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    /// Nothing written: a map cannot be used here, or would not help.
    Declined,
    /// Written: a `write` of the head beside a map of the tail.
    Mapped,
    /// Written, all by `write`: the map was refused after the blocks were reserved.
    Written,
}

/// Writes `buf` into `file` (a new file with no name) at its cursor, on two threads, and moves
/// the cursor past it, or declines (nothing written).
///
/// The calling thread `write`s the first [`WRITE_SHARE`] of the bytes while a second thread
/// copies the rest into a map of the file: a `write` fills the page cache faster than page
/// faults do (one thread: 0.043 s for 256 MiB against 0.064 through a map), and the two do not
/// wait for each other, since faults on a map do not take the lock a `write` holds. Measured on
/// ext4 with two cores, 256 MiB, best of 15: one `write` 0.043 s, two threads each mapping a
/// half 0.036, a `write` of half beside a map of half 0.032, of 5/8 beside 3/8 0.029.
#[cfg(target_os = "linux")]
fn split_write(file: &File, buf: &[u8]) -> io::Result<Split> {
    use std::io::{Seek, SeekFrom};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    if crate::io::io_threads() < 2 || !reserved_blocks_suffice(file) {
        return Ok(Split::Declined);
    }
    let mut cursor = file;
    let pos = cursor.stream_position()?;
    let (Some(end), Ok(off), Ok(len)) = (
        pos.checked_add(buf.len() as u64),
        libc::off_t::try_from(pos),
        libc::off_t::try_from(buf.len()),
    ) else {
        return Ok(Split::Declined);
    };
    // SAFETY: sysconf(2) has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as u64,
        _ => return Ok(Split::Declined),
    };
    // The map starts on a page boundary, so the two threads never share a page.
    let split = (pos + buf.len() as u64 / WRITE_SHARE.1 * WRITE_SHARE.0) / page * page;
    if split <= pos || split >= end {
        return Ok(Split::Declined);
    }
    // SAFETY: fallocate(2) on an open descriptor with no pointers; its failure is only read.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, off, len) } != 0 {
        // A full disk, a quota, a file system without it: `write` reports what applies. Blocks
        // it reserved before failing are written over by that `write`, from `pos`.
        return Ok(Split::Declined);
    }
    let (head, tail) = buf.split_at((split - pos) as usize);
    // A test refuses the map as `mmap` would, to see the fallback (asked on this thread).
    #[cfg(test)]
    let refused = tests::REFUSE_MAP.with(std::cell::Cell::get);
    #[cfg(not(test))]
    let refused = false;
    let mapped = std::thread::scope(|s| -> io::Result<bool> {
        let copier = std::thread::Builder::new()
            .name("rawarray-mapwrite".into())
            .spawn_scoped(s, || !refused && copy_into_map(file, split, tail));
        let written = file.write_all_at(head, pos);
        // A thread that could not start, or a map refused: the tail is written here.
        let mapped = copier.is_ok_and(|h| h.join().unwrap_or(false));
        written?;
        Ok(mapped)
    })?;
    if !mapped {
        file.write_all_at(tail, split)?;
    }
    cursor.seek(SeekFrom::Start(end))?;
    Ok(if mapped {
        Split::Mapped
    } else {
        Split::Written
    })
}

#[cfg(not(target_os = "linux"))]
fn split_write(_file: &File, _buf: &[u8]) -> io::Result<Split> {
    Ok(Split::Declined)
}

/// The share of a large write the calling thread `write`s, as (numerator, denominator); the
/// rest is copied through a map (see [`split_write`]).
#[cfg(target_os = "linux")]
const WRITE_SHARE: (u64, u64) = (5, 8);

/// Copies `bytes` into `file` at `at` (a page boundary, inside the file) through a map;
/// `false` if the map was refused (nothing written).
#[cfg(target_os = "linux")]
fn copy_into_map(file: &File, at: u64, bytes: &[u8]) -> bool {
    // SAFETY: a shared map of `at .. at + bytes.len()`, inside the file: the caller's
    // fallocate set its length to at least that end. The file is this crate's new temporary
    // file with no name (the caller's `mappable`), which no other process can open by a name
    // to cut it short under the map; its blocks are reserved on a file system where that is
    // all a write fault needs, so no fault of the copy below can meet a full disk. The module
    // docs say what can still fail (a file system failing under the write). The map is
    // unmapped when it drops, at the end of this function.
    let Ok(mut map) = (unsafe {
        memmap2::MmapOptions::new()
            .offset(at)
            .len(bytes.len())
            .map_mut(file)
    }) else {
        return false;
    };
    map.copy_from_slice(bytes);
    true
}

/// Whether `file`'s file system needs nothing at a write fault but the blocks `fallocate`
/// reserved, and is one where the map was faster: ext4 and XFS. (tmpfs would be safe too, but
/// its `fallocate` zeroes every page first, and the map was 1.15x slower there than `write`.)
#[cfg(target_os = "linux")]
fn reserved_blocks_suffice(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    let mut s = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: fstatfs(2) fills the struct it is given a pointer to, on success.
    if unsafe { libc::fstatfs(file.as_raw_fd(), s.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstatfs succeeded, so it filled the struct (which was zeroed anyway).
    let kind = unsafe { s.assume_init() }.f_type;
    [libc::EXT4_SUPER_MAGIC, libc::XFS_SUPER_MAGIC].contains(&kind)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Read;

    thread_local! {
        /// Set by a test on the thread that calls `split_write`: its map is refused, as `mmap`
        /// would refuse it, so that the fallback to `write` is seen.
        pub(super) static REFUSE_MAP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Bytes no shift of a page or a share maps onto themselves.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len as u64)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect()
    }

    /// Whether this machine and the file system of the folder the tests write in take the map
    /// (ext4 or XFS, two cores or more); said on the test's output when not.
    fn map_expected(dir: &std::path::Path) -> bool {
        use std::os::fd::AsRawFd;
        let probe = File::create(dir.join("probe")).unwrap();
        let threads = crate::io::io_threads();
        let mut s = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
        // SAFETY: fstatvfs(2) fills the struct it is given a pointer to, on success.
        let free = if unsafe { libc::fstatvfs(probe.as_raw_fd(), s.as_mut_ptr()) } == 0 {
            // SAFETY: filled by the call above (and zeroed before).
            let s = unsafe { s.assume_init() };
            #[allow(clippy::unnecessary_cast)] // u64 here, narrower on other targets
            let free = s.f_bavail as u64 * s.f_frsize as u64;
            free
        } else {
            0
        };
        // Room for the file twice over: fallocate on a fuller disk declines, rightly.
        let fs = reserved_blocks_suffice(&probe);
        let yes = threads >= 2 && fs && free >= 4 * MAP_MIN as u64;
        if !yes {
            eprintln!(
                "the map is not tried here ({threads} threads, {} on ext4 or XFS: {fs}, {free} \
                 bytes free): only the ordinary write was checked",
                dir.display()
            );
        }
        yes
    }

    #[test]
    fn a_split_write_lands_after_what_came_before_and_the_cursor_follows() {
        let dir = tempfile::tempdir().unwrap();
        let expected = map_expected(dir.path());
        let path = dir.path().join("x");
        let file = File::create_new(&path).unwrap();
        // A header of 72 bytes: the split is not at the file's start.
        let head = pattern(72);
        let body: Vec<u8> = pattern(MAP_MIN + 4099).into_iter().rev().collect();
        let mut w = MapWrites::new(&file, true);
        w.write_all(&head).unwrap();
        let how = split_write(&file, &body).unwrap();
        assert_eq!(
            how,
            if expected {
                Split::Mapped
            } else {
                Split::Declined
            }
        );
        if how == Split::Declined {
            w.write_all(&body).unwrap();
        }
        w.write_all(b"trailer").unwrap();
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        let n = body.len();
        assert_eq!(back.len(), 72 + n + 7);
        assert_eq!(back[..72], head);
        assert_eq!(back[72..72 + n], body);
        assert_eq!(&back[72 + n..], b"trailer");
    }

    #[test]
    fn a_refused_map_leaves_the_tail_to_write_and_the_cursor_follows() {
        let dir = tempfile::tempdir().unwrap();
        let expected = map_expected(dir.path());
        let path = dir.path().join("w");
        let file = File::create_new(&path).unwrap();
        let body = pattern(MAP_MIN + 777);
        let mut w = MapWrites::new(&file, true);
        w.write_all(b"0123456789").unwrap();
        REFUSE_MAP.with(|r| r.set(true));
        let how = split_write(&file, &body);
        REFUSE_MAP.with(|r| r.set(false));
        let how = how.unwrap();
        assert_eq!(
            how,
            if expected {
                Split::Written
            } else {
                Split::Declined
            }
        );
        if how == Split::Declined {
            w.write_all(&body).unwrap();
        }
        w.write_all(b"end").unwrap();
        let back = std::fs::read(&path).unwrap();
        assert_eq!(back.len(), 10 + body.len() + 3);
        assert_eq!(&back[..10], b"0123456789");
        assert_eq!(back[10..10 + body.len()], body);
        assert_eq!(&back[10 + body.len()..], b"end");
    }
}
