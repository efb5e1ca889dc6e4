//! Every whole read of a file a writer is appending to, compressed, returns a prefix of what
//! the writer wrote, or the error that the file changed: never zeros or another value. A writer
//! commits its header with one `pwrite`, which a concurrent `read` can tear (the old `size`
//! with the new dims), and a flush that grows the last chunk moves its entry past the old
//! `size` (doc/chunked.md 7.1): a reader that takes its header from one copy of the file, or
//! that does not read the header again for a moved entry, reads zeros. The truth is the
//! writer's own values, `value(k)` for record `k`, computed here.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use rawarray_serde::codec::Codec;
use rawarray_serde::ragged::{RaggedOptions, RaggedWriter};
use rawarray_serde::{
    ArrayReader, DynArray, ErrorKind, RawArray, RecordOptions, RecordReader, Result, WriteOptions,
};

fn value(k: u64) -> u64 {
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

fn row(k: u64) -> Vec<u64> {
    (0..k % 7).map(|i| value(k) ^ i).collect()
}

/// A named whole read, returning how many records it read.
type Reader = (&'static str, Box<dyn Fn() -> Result<u64> + Send>);

/// Checks that `got` holds the first records the writer wrote, and returns how many.
fn prefix(got: &[u64], path: &str) -> u64 {
    for (k, &v) in got.iter().enumerate() {
        assert_eq!(v, value(k as u64), "{path}: record {k} of {}", got.len());
    }
    got.len() as u64
}

/// Runs `read` in a loop on `threads` threads while `write` appends; a "changed" error is read
/// again, any other error or a wrong value fails. Returns the successful reads.
fn during(write: impl FnOnce(), readers: Vec<Reader>) -> u64 {
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = readers
        .into_iter()
        .map(|(name, read)| {
            let (done, reads) = (done.clone(), reads.clone());
            std::thread::spawn(move || {
                let mut seen = 0;
                while !done.load(SeqCst) {
                    match read() {
                        Ok(n) => {
                            assert!(n >= seen, "{name}: {n} records after {seen}");
                            seen = n;
                            reads.fetch_add(1, SeqCst);
                        }
                        Err(e) if matches!(e.kind(), ErrorKind::Changed { .. }) => {}
                        Err(e) => panic!("{name}: {e}"),
                    }
                }
            })
        })
        .collect();
    write();
    done.store(true, SeqCst);
    for h in handles {
        h.join().unwrap();
    }
    reads.load(SeqCst)
}

#[test]
fn whole_reads_of_compressed_records_being_appended_are_prefixes() {
    let mut total = 0;
    for round in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.ra");
        let opts = RecordOptions::new().storage(
            WriteOptions::new()
                .codec(Codec::Zstd)
                .chunks(vec![97])
                .statistics(round % 2 == 0),
        );
        let mut w = opts.create::<u64>(&path).unwrap();
        // The first records, so every reader opens a record file.
        w.append(&value(0)).unwrap();
        w.flush().unwrap();
        let p = |path: &Path| path.to_path_buf();
        let readers: Vec<Reader> = vec![
            ("from_file", {
                let path = p(&path);
                Box::new(move || {
                    Ok(prefix(
                        &rawarray_serde::from_file::<Vec<u64>>(&path)?,
                        "from_file",
                    ))
                })
            }),
            ("RawArray::read_file", {
                let path = p(&path);
                Box::new(move || {
                    let a = RawArray::<u64>::read_file(&path)?;
                    Ok(prefix(a.as_slice(), "RawArray::read_file"))
                })
            }),
            ("DynArray::read_file", {
                let path = p(&path);
                Box::new(move || {
                    let (_, data, _) = DynArray::read_file(&path)?.into_parts();
                    let v: Vec<u64> = data
                        .chunks_exact(8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                        .collect();
                    Ok(prefix(&v, "DynArray::read_file"))
                })
            }),
            ("ArrayReader::read_all", {
                let path = p(&path);
                Box::new(move || {
                    let a = ArrayReader::open(&path)?.read_all::<u64>()?;
                    Ok(prefix(a.as_slice(), "ArrayReader::read_all"))
                })
            }),
            ("RecordReader", {
                let path = p(&path);
                Box::new(move || {
                    let r = RecordReader::<u64>::open(&path)?;
                    let n = r.len();
                    let v: Vec<u64> = (0..n)
                        .map(|k| r.get(k).map(Option::unwrap))
                        .collect::<Result<_>>()?;
                    Ok(prefix(&v, "RecordReader"))
                })
            }),
        ];
        total += during(
            || {
                for k in 1..4000 {
                    w.append(&value(k)).unwrap();
                    if k % 13 == 0 {
                        w.flush().unwrap();
                    }
                }
                w.finish().unwrap();
            },
            readers,
        );
    }
    eprintln!("{total} reads");
    assert!(total > 0);
}

#[test]
fn whole_reads_of_compressed_ragged_rows_being_appended_are_prefixes() {
    let mut total = 0;
    for _ in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.ra");
        let opts =
            RaggedOptions::new().storage(WriteOptions::new().codec(Codec::Zstd).chunks(vec![29]));
        let mut w = RaggedWriter::<u64>::create_with(&path, &opts).unwrap();
        let check = |rows: &[Vec<u64>], name: &str| {
            for (k, r) in rows.iter().enumerate() {
                assert_eq!(r, &row(k as u64), "{name}: row {k} of {}", rows.len());
            }
            rows.len() as u64
        };
        let readers: Vec<Reader> = vec![
            ("from_file", {
                let path = path.clone();
                Box::new(move || {
                    Ok(check(
                        &rawarray_serde::from_file::<Vec<Vec<u64>>>(&path)?,
                        "from_file",
                    ))
                })
            }),
            ("Ragged::read_file", {
                let path = path.clone();
                Box::new(move || {
                    let r = rawarray_serde::Ragged::<u64>::read_file(&path)?;
                    let rows: Vec<Vec<u64>> = r.iter().map(<[u64]>::to_vec).collect();
                    Ok(check(&rows, "Ragged::read_file"))
                })
            }),
        ];
        total += during(
            || {
                for k in 0..3000 {
                    w.append_row(&row(k)).unwrap();
                    if k % 11 == 0 {
                        w.flush().unwrap();
                    }
                }
                w.finish().unwrap();
            },
            readers,
        );
    }
    eprintln!("{total} reads");
    assert!(total > 0);
}
