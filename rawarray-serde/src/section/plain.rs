//! Reads of a plain section: its bytes copied from the source, large reads on several threads.
//!
//! A plain read is the kernel copying the page cache into the caller's buffer (or a map's
//! pages, or fetched pieces, into it), and one core copies at only part of what the machine's
//! memory moves: a 256 MiB read from the page cache on two cores took 0.017 s split across two
//! threads against 0.031 s on one (doc/benchmarks.md, "Plain reads on two threads"). So a read
//! of [`PARALLEL_MIN`] bytes or more, made of runs of at least [`RUN_MIN`] bytes, is cut into
//! pieces of about [`PIECE`] bytes read on the section's threads; anything smaller, or runs so
//! short that a piece would be a list of tiny reads, stays one loop on the caller's thread.
//! The bytes read are the same either way: only which thread copies which piece changes.

use std::ops::Range;

use rayon::prelude::*;

use super::chunked::in_pool;
use crate::error::Result;
use crate::io::ReadAt;

/// The smallest read split across threads: below it, starting threads costs more than a
/// second core gains (a thread starts in tens of microseconds; 32 MiB copies in about 4 ms).
pub(crate) const PARALLEL_MIN: u64 = 32 << 20;
/// The shortest run a split read takes: shorter runs stay on one thread, where their pieces
/// would otherwise list one entry per run.
pub(crate) const RUN_MIN: u64 = 64 << 10;
/// About how many bytes one task reads: small enough for two threads to share the work evenly,
/// large enough that each `pread` moves megabytes.
pub(crate) const PIECE: usize = 4 << 20;

/// Reads the runs `runs` (byte ranges of the source, each `run_len` long) one after another
/// into `out`, which holds exactly their bytes, on `threads` threads (0: rayon's global pool)
/// when the read is large (see the module docs).
pub(crate) fn read_runs<T: ReadAt + ?Sized>(
    source: &T,
    runs: impl Iterator<Item = Range<u64>>,
    run_len: u64,
    out: &mut [u8],
    threads: usize,
) -> Result<()> {
    let total = out.len() as u64;
    if total < PARALLEL_MIN || run_len < RUN_MIN || threads == 1 {
        let mut at = 0usize;
        for run in runs {
            let len = (run.end - run.start) as usize;
            source.read_exact_at(&mut out[at..at + len], run.start)?;
            at += len;
        }
        return Ok(());
    }
    // At most total / RUN_MIN runs (4,096 for 256 MiB), each cut into pieces of PIECE bytes.
    let mut pieces: Vec<(u64, &mut [u8])> = Vec::with_capacity((total / PIECE as u64) as usize + 1);
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
    in_pool(threads, || {
        pieces
            .into_par_iter()
            .try_for_each(|(at, piece)| source.read_exact_at(piece, at))
    })??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Bytes in memory that count the reads made of them and on how many threads.
    struct Counted {
        bytes: Vec<u8>,
        reads: AtomicUsize,
        threads: Mutex<std::collections::HashSet<std::thread::ThreadId>>,
    }

    impl ReadAt for Counted {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.threads
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            let at = offset as usize;
            buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
            Ok(())
        }
        fn source_len(&self) -> std::io::Result<u64> {
            Ok(self.bytes.len() as u64)
        }
    }

    fn counted(len: usize) -> Counted {
        Counted {
            // Not periodic in any piece or run length: a piece read into the wrong place shows.
            bytes: (0..len as u64)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            reads: AtomicUsize::new(0),
            threads: Mutex::new(Default::default()),
        }
    }

    #[test]
    fn a_large_read_is_split_in_pieces_and_equals_the_bytes() {
        let len = (PARALLEL_MIN as usize) + 12_345;
        let src = counted(len + 100);
        let mut out = vec![0u8; len];
        read_runs(
            &src,
            std::iter::once(100..100 + len as u64),
            len as u64,
            &mut out,
            2,
        )
        .unwrap();
        assert_eq!(out, src.bytes[100..100 + len]);
        // 32 MiB + 12,345 bytes in 4 MiB pieces: 9 reads, on the pool's threads.
        assert_eq!(src.reads.load(Ordering::Relaxed), 9);
        assert!(!src
            .threads
            .lock()
            .unwrap()
            .contains(&std::thread::current().id()));
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
        read_runs(&src, runs.clone(), run, &mut out, 2).unwrap();
        let want: Vec<u8> = runs
            .flat_map(|r| src.bytes[r.start as usize..r.end as usize].to_vec())
            .collect();
        assert_eq!(out, want);
        assert_eq!(src.reads.load(Ordering::Relaxed), n as usize);
    }

    #[test]
    fn small_reads_and_short_runs_stay_on_one_thread() {
        let src = counted(40 << 20);
        let mut out = vec![0u8; 1 << 20];
        read_runs(&src, std::iter::once(0..1 << 20), 1 << 20, &mut out, 2).unwrap();
        assert_eq!(out, src.bytes[..1 << 20]);
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
        assert_eq!(
            *src.threads.lock().unwrap(),
            [std::thread::current().id()].into_iter().collect()
        );
    }

    #[test]
    fn a_failed_piece_fails_the_read() {
        struct Short(Counted);
        impl ReadAt for Short {
            fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
                if offset >= (20 << 20) {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                self.0.read_exact_at(buf, offset)
            }
            fn source_len(&self) -> std::io::Result<u64> {
                self.0.source_len()
            }
        }
        let src = Short(counted(40 << 20));
        let mut out = vec![0u8; 40 << 20];
        let e = read_runs(&src, std::iter::once(0..40 << 20), 40 << 20, &mut out, 2).unwrap_err();
        assert!(e.to_string().contains("end of file"), "{e}");
    }
}
