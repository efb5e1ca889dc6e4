//! Reads of a plain section: its bytes copied from the source, large local reads on several
//! threads.
//!
//! A plain read from a file is the kernel copying the page cache into the caller's buffer, and
//! one core copies at only part of what the machine's memory moves: a 256 MiB file read from
//! the page cache into a buffer already used took 0.030 to 0.036 s with one `pread` and 0.017
//! to 0.019 s with two threads each reading a half (doc/benchmarks.md, "Plain reads and writes
//! on two threads"). So a read of [`PARALLEL_MIN`] bytes or more, made of runs of at least
//! [`RUN_MIN`] bytes, from a local source ([`ReadAt::is_local`]: a file, a map, bytes in
//! memory) is cut into pieces of about [`PIECE`] bytes, shared in order between the caller's
//! thread and threads started for the read (scoped, so none outlives it). Smaller reads, short
//! runs, and sources where a read is a request (an object store's, where the count of
//! requests matters more than the thread making them) stay one loop on the caller's thread.
//! So does every read that fails: a failed piece, or a thread that could not start, makes the
//! whole read again in one loop, so an error names the same bytes, and is the same error, as it
//! was before reads were split.

use std::io;
use std::ops::Range;

use crate::io::ReadAt;

/// The smallest read split across threads: below it, starting threads costs more than a
/// second core gains (a thread starts in tens of microseconds; 32 MiB copies in about 4 ms).
pub(crate) const PARALLEL_MIN: u64 = 32 << 20;
/// The shortest run a split read takes: shorter runs stay on one thread, where their pieces
/// would otherwise list one entry per run.
pub(crate) const RUN_MIN: u64 = 64 << 10;
/// About how many bytes one piece is: large enough that each `pread` moves megabytes.
pub(crate) const PIECE: usize = 4 << 20;
/// The most threads a read is split across: copies from memory stop scaling after a few
/// cores.
const MAX_THREADS: usize = 4;

/// Reads the runs `runs` (byte ranges of the source, each `run_len` long) one after another
/// into `out`, which holds exactly their bytes. A large read from a local source is shared
/// between `threads` threads, at most 4, the caller's among them (0: `RAYON_NUM_THREADS` or
/// one a core; 1: the caller's alone); see the module docs.
pub(crate) fn read_runs<T, R>(
    source: &T,
    runs: R,
    run_len: u64,
    out: &mut [u8],
    threads: usize,
) -> io::Result<()>
where
    T: ReadAt + ?Sized,
    R: Iterator<Item = Range<u64>> + Clone,
{
    // The cheap tests first: most reads are small, and the count of cores is a few system
    // calls the first time (std reads the cgroup's quota).
    if (out.len() as u64) < PARALLEL_MIN || run_len < RUN_MIN || !source.is_local() {
        return read_in_order(source, runs, out);
    }
    let threads = match threads {
        0 => crate::io::io_threads(),
        n => n,
    }
    .min(MAX_THREADS);
    if threads < 2 {
        return read_in_order(source, runs, out);
    }
    if !read_split(source, runs.clone(), out, threads) {
        return read_in_order(source, runs, out);
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes at `offset` of `source`, as [`ReadAt::read_exact_at`]
/// does, but a read of 32 MiB or more from a local source ([`ReadAt::is_local`]: a file, a
/// map, bytes in memory) is cut in pieces of about 4 MiB read on up to 4 threads, the
/// caller's among them (`threads`: 0 for `RAYON_NUM_THREADS` or one a core, 1 for the
/// caller's alone). The bytes are those one read gives, and so is any error: a read that
/// fails in pieces is made again in one, whose error it returns. What a plain section's
/// reads use, for a caller reading a file's bytes itself (Python's `mmap=False` reads).
///
/// ```
/// use rawarray_serde::section::read_exact_at_split;
///
/// let bytes: Vec<u8> = (0..100u8).collect();
/// let mut buf = [0u8; 10];
/// read_exact_at_split(&bytes, &mut buf, 20, 0)?;
/// assert_eq!(buf[0], 20);
/// assert!(read_exact_at_split(&bytes, &mut buf, 95, 0).is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read_exact_at_split<T: ReadAt + ?Sized>(
    source: &T,
    buf: &mut [u8],
    offset: u64,
    threads: usize,
) -> io::Result<()> {
    let len = buf.len() as u64;
    let end = offset.checked_add(len).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a read of {len} bytes at {offset} ends past 2^64"),
        )
    })?;
    read_runs(source, std::iter::once(offset..end), len, buf, threads)
}

/// The runs read one after another on this thread.
fn read_in_order<T: ReadAt + ?Sized>(
    source: &T,
    runs: impl Iterator<Item = Range<u64>>,
    out: &mut [u8],
) -> io::Result<()> {
    let mut at = 0usize;
    for run in runs {
        let len = (run.end - run.start) as usize;
        source.read_exact_at(&mut out[at..at + len], run.start)?;
        at += len;
    }
    Ok(())
}

/// The runs cut in pieces and read on `threads` threads; `false` if any piece failed or a
/// thread could not start (the caller then reads it all again in order).
fn read_split<T: ReadAt + ?Sized>(
    source: &T,
    runs: impl Iterator<Item = Range<u64>>,
    out: &mut [u8],
    threads: usize,
) -> bool {
    // At most total / RUN_MIN runs (4,096 for 256 MiB), each cut into pieces of PIECE bytes.
    let mut pieces: Vec<(u64, &mut [u8])> = Vec::new();
    let mut rest = out;
    for run in runs {
        let mut at = run.start;
        let mut left = run.end - run.start;
        while left > 0 {
            let n = left.min(PIECE as u64) as usize;
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(n);
            pieces.push((at, piece));
            rest = tail;
            at += n as u64;
            left -= n as u64;
        }
    }
    debug_assert!(rest.is_empty(), "the runs hold exactly the output's bytes");
    // Contiguous shares of (almost) equal counts of pieces, the first for this thread.
    let per = pieces.len().div_ceil(threads);
    let mut shares: Vec<Vec<(u64, &mut [u8])>> = Vec::with_capacity(threads);
    let mut pieces = pieces.into_iter();
    loop {
        let share: Vec<_> = pieces.by_ref().take(per).collect();
        if share.is_empty() {
            break;
        }
        shares.push(share);
    }
    let read_share = |share: Vec<(u64, &mut [u8])>| {
        share
            .into_iter()
            .all(|(at, piece)| source.read_exact_at(piece, at).is_ok())
    };
    std::thread::scope(|s| {
        let mut shares = shares.into_iter();
        let mine = shares.next();
        let started: Vec<_> = shares
            .map(|share| {
                std::thread::Builder::new()
                    .name("rawarray-read".into())
                    .spawn_scoped(s, move || read_share(share))
            })
            .collect();
        let mine_ok = mine.is_none_or(read_share);
        // Every started thread is joined here, whatever the others did (a panic in one is a
        // failed share, not a panic of the scope).
        let theirs: Vec<bool> = started
            .into_iter()
            .map(|t| t.is_ok_and(|h| h.join().unwrap_or(false)))
            .collect();
        mine_ok && theirs.into_iter().all(|ok| ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::thread::ThreadId;

    /// Bytes in memory that count the reads made of them and the threads that made them;
    /// `local` says what [`ReadAt::is_local`] answers, `cut` where the source ends for reads.
    struct Counted {
        bytes: Vec<u8>,
        reads: AtomicUsize,
        threads: Mutex<HashSet<ThreadId>>,
        local: bool,
        cut: usize,
    }

    impl ReadAt for Counted {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.threads
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            let at = offset as usize;
            if at + buf.len() > self.cut {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "bytes {at}..{} past the end at {}",
                        at + buf.len(),
                        self.cut
                    ),
                ));
            }
            buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
            Ok(())
        }
        fn source_len(&self) -> std::io::Result<u64> {
            Ok(self.cut as u64)
        }
        fn is_local(&self) -> bool {
            self.local
        }
    }

    fn counted(len: usize) -> Counted {
        Counted {
            // Not periodic in any piece or run length: a piece read into the wrong place shows.
            bytes: (0..len as u64)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            reads: AtomicUsize::new(0),
            threads: Mutex::new(HashSet::new()),
            local: true,
            cut: len,
        }
    }

    fn threads_of(src: &Counted) -> HashSet<ThreadId> {
        src.threads.lock().unwrap().clone()
    }

    #[test]
    fn a_large_read_is_split_in_pieces_between_this_thread_and_another() {
        let len = (PARALLEL_MIN as usize) + 12_345;
        let src = counted(len + 100);
        let mut out = vec![0u8; len];
        let run = 100..100 + len as u64;
        read_runs(&src, std::iter::once(run), len as u64, &mut out, 2).unwrap();
        assert_eq!(out, src.bytes[100..100 + len]);
        // 32 MiB + 12,345 bytes in 4 MiB pieces: 9 reads, 5 on this thread and 4 on another.
        assert_eq!(src.reads.load(Ordering::Relaxed), 9);
        let threads = threads_of(&src);
        assert_eq!(threads.len(), 2);
        assert!(threads.contains(&std::thread::current().id()));
    }

    #[test]
    fn runs_with_gaps_land_in_order() {
        // 130 runs of 260 KiB, 300 KiB apart: 33.8 MB, each run one piece.
        let run = 260u64 << 10;
        let step = 300u64 << 10;
        let n = 130u64;
        let src = counted((n * step) as usize);
        let runs = (0..n).map(|k| k * step..k * step + run);
        let mut out = vec![0u8; (n * run) as usize];
        read_runs(&src, runs.clone(), run, &mut out, 3).unwrap();
        let want: Vec<u8> = runs
            .flat_map(|r| src.bytes[r.start as usize..r.end as usize].to_vec())
            .collect();
        assert_eq!(out, want);
        assert_eq!(src.reads.load(Ordering::Relaxed), n as usize);
        assert_eq!(threads_of(&src).len(), 3);
    }

    #[test]
    fn small_reads_short_runs_one_thread_and_remote_sources_stay_on_this_thread() {
        let here: HashSet<ThreadId> = [std::thread::current().id()].into_iter().collect();
        let src = counted(40 << 20);
        let mut out = vec![0u8; 1 << 20];
        read_runs(&src, std::iter::once(0..1 << 20), 1 << 20, &mut out, 2).unwrap();
        assert_eq!(out, src.bytes[..1 << 20]);
        assert_eq!(threads_of(&src), here);
        // 36 MiB in runs of 32 KiB, 36 KiB apart: one read a run, all on this thread.
        let run = 32u64 << 10;
        let runs = (0..1152u64).map(|k| k * (36 << 10)..k * (36 << 10) + run);
        let mut out = vec![0u8; 1152 * run as usize];
        let src = counted(1152 * (36 << 10));
        read_runs(&src, runs.clone(), run, &mut out, 2).unwrap();
        let want: Vec<u8> = runs
            .flat_map(|r| src.bytes[r.start as usize..r.end as usize].to_vec())
            .collect();
        assert_eq!(out, want);
        assert_eq!(src.reads.load(Ordering::Relaxed), 1152);
        assert_eq!(threads_of(&src), here);
        // 40 MiB in one read: with one thread asked for, and from a source that is not local.
        for (local, threads) in [(true, 1), (false, 2), (false, 0)] {
            let mut src = counted(40 << 20);
            src.local = local;
            let mut out = vec![0u8; 40 << 20];
            read_runs(
                &src,
                std::iter::once(0..40 << 20),
                40 << 20,
                &mut out,
                threads,
            )
            .unwrap();
            assert_eq!(out, src.bytes);
            assert_eq!(
                src.reads.load(Ordering::Relaxed),
                1,
                "local {local}, threads {threads}"
            );
            assert_eq!(threads_of(&src), here);
        }
    }

    #[test]
    fn a_failed_piece_fails_the_read_with_the_error_of_one_read_in_order() {
        // A source that ends at 30 MiB, read as 40 MiB: pieces past the end fail, and then the
        // read is made again in order, whose error names the whole run.
        let mut src = counted(40 << 20);
        src.cut = 30 << 20;
        let mut out = vec![0u8; 40 << 20];
        let split = read_runs(&src, std::iter::once(0..40 << 20), 40 << 20, &mut out, 2);
        let in_order = read_runs(&src, std::iter::once(0..40 << 20), 40 << 20, &mut out, 1);
        let e = split.unwrap_err().to_string();
        assert_eq!(e, in_order.unwrap_err().to_string());
        assert!(
            e.contains("bytes 0..41943040 past the end at 31457280"),
            "{e}"
        );
        // The split: this thread's five pieces, the other's first three (the third fails and
        // ends its share); then one read in order, and the one read of the call with one thread.
        assert_eq!(src.reads.load(Ordering::Relaxed), 5 + 3 + 1 + 1);
    }
}
