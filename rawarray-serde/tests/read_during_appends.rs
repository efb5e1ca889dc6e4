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
    ArrayReader, DynArray, ErrorKind, RawArray, RecordOptions, RecordReader, RecordWriter, Result,
    WriteOptions,
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

/// A writer appending to a plain record file writes the new records over the old trailer, then
/// its new trailer, then the header that commits them. A reader opening between the first and
/// the last step sees the old header over a trailer whose first frame is gone (a record shorter
/// than the trailer leaves its last frame): the trailer is damaged under a header that did not
/// change. (This crate's own writers first append a spare trailer past the records, so their
/// readers meet this only with a stale length; a writer that does not is waited for.) The open
/// waits a few milliseconds for the commit instead of refusing the file for its trailer. The
/// states are built by hand from two real files: `before` (3 records) and `after` (4).
#[test]
fn an_open_between_an_append_and_its_commit_waits_for_the_commit() {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("before.ra"), dir.path().join("after.ra"));
    for (path, n) in [(&before, 3u64), (&after, 4)] {
        let mut w = RecordWriter::<u64>::create(path, serde_json::json!({"run": 7})).unwrap();
        for k in 0..n {
            w.append(&value(k)).unwrap();
        }
        w.finish().unwrap();
    }
    let (before, after) = (
        std::fs::read(before).unwrap(),
        std::fs::read(after).unwrap(),
    );
    let header_len = rawarray_serde::Header::decode_any(&before)
        .unwrap()
        .encoded_len();
    let data_end = header_len + 3 * 8;
    // The torn state: the old header and records, the fourth record over the first 8 bytes of
    // the old trailer (its tag), the rest of the old trailer as it was.
    let mut torn = before.clone();
    torn[data_end..data_end + 8].copy_from_slice(&after[data_end..data_end + 8]);
    assert_eq!(
        torn.len(),
        before.len(),
        "a record is shorter than the trailer"
    );
    let values: Vec<u64> = (0..4).map(value).collect();
    // A round counts when the commit came within the open's waits (~4 ms; a loaded machine may
    // start the committing thread later): such an open must wait for it.
    let (mut counted, mut round) = (0, 0);
    while counted < 10 {
        assert!(
            round < 400,
            "only {counted} of {round} rounds committed within 4 ms"
        );
        let path = dir.path().join(format!("live{round}.ra"));
        std::fs::write(&path, &torn).unwrap();
        let committed = std::sync::Arc::new(Mutex::new(None));
        let commit = {
            let (path, after, committed) = (path.clone(), after.clone(), committed.clone());
            std::thread::spawn(move || {
                use std::os::unix::fs::FileExt;
                std::thread::sleep(Duration::from_millis(1));
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                // As the writer does: the body (new trailer) first, the header last.
                f.write_all_at(&after[header_len..], header_len as u64)
                    .unwrap();
                f.write_all_at(&after[..header_len], 0).unwrap();
                *committed.lock().unwrap() = Some(Instant::now());
            })
        };
        let start = Instant::now();
        // Both openers take their header through one snapshot: half the rounds each.
        let got = if round % 2 == 0 {
            RecordReader::<u64>::open(&path).and_then(|r| r.slice(..).map(|s| s.to_vec()))
        } else {
            ArrayReader::open(&path).and_then(|r| r.read_all::<u64>().map(RawArray::into_vec))
        };
        commit.join().unwrap();
        let at = committed.lock().unwrap().expect("committed");
        round += 1;
        if at.duration_since(start) > Duration::from_millis(4) {
            continue;
        }
        counted += 1;
        let got = got.unwrap_or_else(|e| panic!("round {round}: an open during a commit: {e}"));
        // 4 records once committed; 3 if the open fell between the body and the header (the
        // old header over the new body and its whole new trailer: a state of its own).
        assert!(
            got[..] == values[..] || got[..] == values[..3],
            "round {round}: {got:?}"
        );
    }
}

/// A file's bytes whose one byte `at` reads flipped for the first `torn` reads that cover it:
/// an index entry copied half before and half after a writer's `pwrite` of it (doc/chunked.md
/// 7.1, step (c)), which fails its CRC.
struct TornEntry {
    bytes: Vec<u8>,
    at: usize,
    torn: std::sync::atomic::AtomicUsize,
}

impl rawarray_serde::io::ReadAt for TornEntry {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = offset as usize;
        let src = self
            .bytes
            .get(start..start + buf.len())
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        let covers = (start..start + buf.len()).contains(&self.at);
        if covers
            && self
                .torn
                .fetch_update(SeqCst, SeqCst, |t| t.checked_sub(1))
                .is_ok()
        {
            buf[self.at - start] ^= 0x40;
        }
        Ok(())
    }
    fn source_len(&self) -> std::io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
}

// An index entry torn by one read (its CRC fails) is read again at open and found whole: the
// file opens and reads as written. Torn on every read, it is damage: an error naming the
// entry, never values.
#[test]
fn an_entry_torn_by_a_concurrent_read_is_read_again() {
    use rawarray_serde::section::Section;
    use rawarray_serde::Header;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.ra");
    let mut w: RecordWriter<u64> = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(1000)
        .create(&path)
        .unwrap();
    for k in 0..5500 {
        w.append(&value(k)).unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let h = Header::decode_any(&bytes).unwrap();
    let s = Section::open(&h, &bytes[..]).unwrap();
    let map = s.chunk_map().unwrap();
    // The last chunk's entry (chunk 5, partial): its offset's second byte.
    let at = h.encoded_len()
        + map.config().encoded_len() as usize
        + 5 * map.config().entry_len() as usize
        + 1;
    let want: Vec<u8> = (0..5500).flat_map(|k| value(k).to_le_bytes()).collect();
    for (torn, opens) in [(1, true), (2, true), (usize::MAX, false)] {
        let source = TornEntry {
            bytes: bytes.clone(),
            at,
            torn: torn.into(),
        };
        match Section::open(&h, &source) {
            Ok(s) => {
                assert!(opens, "torn on every read, yet opened");
                let mut got = vec![0u8; want.len()];
                s.read_box(std::slice::from_ref(&(0..5500)), &mut got)
                    .unwrap();
                assert_eq!(got, want, "torn {torn} times");
            }
            Err(e) => {
                assert!(!opens, "torn {torn} times: {e}");
                assert!(e.to_string().contains("index entry of chunk 5"), "{e}");
            }
        }
    }
}
