//! Compressed record files (the chunked layout, flag bit 2): a `RecordWriter` with a codec
//! killed at random moments while a reader follows the file, write-then-read through every
//! reader for each codec, reopening and appending, and readers that open the file at each
//! moment of a flush that grows its last chunk. The truth is a formula of the record index.

// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

mod common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use rawarray_serde::codec::{Codec, SectionReader, Shuffle};
use rawarray_serde::{
    ArrayReader, Durability, Header, RawArray, RecordOptions, RecordReader, RecordWriter,
};

/// One record: 3 u32 values, a smooth function of the record index (so it compresses).
fn rec(i: u64) -> [u32; 3] {
    let i = i as u32;
    [i, i / 7, i.wrapping_mul(2_654_435_761) >> 28]
}

fn truth(n: u64) -> Vec<u32> {
    (0..n).flat_map(rec).collect()
}

/// The header at the start of `bytes` (chunked or not).
fn header_of(bytes: &[u8]) -> Header {
    Header::decode_any(bytes).unwrap()
}

/// Checks `path` through every reader: `n` records, equal to the truth.
fn check_all_readers(path: &Path, n: u64) {
    let want = truth(n);
    let r = RecordReader::<[u32; 3]>::open(path).unwrap();
    assert_eq!(r.len() as u64, n);
    for i in [0, n / 2, n.saturating_sub(1)] {
        if i < n {
            assert_eq!(r.get(i as usize).unwrap(), Some(rec(i)), "record {i}");
        }
    }
    let flat: Vec<u32> = r.slice(..).unwrap().iter().flatten().copied().collect();
    assert_eq!(flat, want, "RecordReader::slice");
    let a: RawArray<u32> = RawArray::read_file(path).unwrap();
    assert_eq!(a.dims(), [3, n]);
    assert_eq!(a.as_slice(), &want[..], "RawArray::read_file");
    let s: Vec<[u32; 3]> = rawarray_serde::from_file(path).unwrap();
    assert_eq!(s.len() as u64, n);
    assert_eq!(
        s.iter().flatten().copied().collect::<Vec<_>>(),
        want,
        "from_file"
    );
    if n > 2 {
        let ar = ArrayReader::open(path).unwrap();
        let sub: RawArray<u32> = ar.read_subset(&[1..3, 1..n - 1]).unwrap();
        let cut: Vec<u32> = (1..n - 1).flat_map(|i| rec(i)[1..3].to_vec()).collect();
        assert_eq!(sub.as_slice(), &cut[..], "ArrayReader::read_subset");
    }
}

#[test]
fn write_then_read_through_every_reader_for_each_codec() {
    let dir = tempfile::tempdir().unwrap();
    for (k, (codec, shuffle)) in [
        (Codec::None, Shuffle::None),
        (Codec::Lz4, Shuffle::Byte),
        (Codec::Zstd, Shuffle::Byte),
        (Codec::Zstd, Shuffle::Bit),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("r{k}.ra"));
        let opts = RecordOptions::new()
            .codec(codec)
            .shuffle(shuffle)
            .chunk_records(50)
            .buffer_bytes(700);
        let mut w: RecordWriter<[u32; 3]> = opts.create(&path).unwrap();
        let mut n = 0u64;
        // Flushes inside a chunk, on a chunk boundary, and across several chunks at once.
        for (step, batch) in [1u64, 20, 29, 50, 3, 170, 1, 1, 75].into_iter().enumerate() {
            let recs: Vec<[u32; 3]> = (n..n + batch).map(rec).collect();
            if step % 2 == 0 {
                w.append_slice(&recs).unwrap();
            } else {
                for r in &recs {
                    w.append(r).unwrap();
                }
            }
            n += batch;
            w.flush().unwrap();
            assert_eq!(w.flushed_len(), n);
            check_all_readers(&path, n);
        }
        let h = w.finish().unwrap();
        assert!(h.flags.is_chunked());
        check_all_readers(&path, n);
        // Reopened, it continues the partial last chunk.
        let mut w: RecordWriter<[u32; 3]> = RecordWriter::open(&path).unwrap();
        assert_eq!(w.len(), n);
        w.append_slice(&(n..n + 60).map(rec).collect::<Vec<_>>())
            .unwrap();
        n += 60;
        w.finish().unwrap();
        check_all_readers(&path, n);
        if codec != Codec::None {
            // The chunks' stored bytes (the config and a 64-entry index segment come on top).
            let bytes = fs::read(&path).unwrap();
            let h = header_of(&bytes);
            let s = SectionReader::open(&h, &bytes[..]).unwrap();
            let stored = s.chunk_map().unwrap().index().stored_bytes();
            assert!(
                stored < n * 12,
                "{codec:?}: {stored} bytes for {} raw",
                n * 12
            );
        }
    }
}

/// Without `chunk_records`, a chunk holds the records of the first flush (at most about
/// 1 MiB): a writer flushing at a steady pace fills one chunk per flush and writes no chunk
/// twice. Until then the file is a plain empty record file.
#[test]
fn the_first_flush_chooses_the_chunk_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steady.ra");
    let mut w: RecordWriter<[u32; 3]> = RecordOptions::new()
        .codec(Codec::Zstd)
        .create(&path)
        .unwrap();
    assert!(!header_of(&fs::read(&path).unwrap()).flags.is_chunked());
    check_all_readers(&path, 0);
    let mut n = 0;
    for _ in 0..20 {
        w.append_slice(&(n..n + 300).map(rec).collect::<Vec<_>>())
            .unwrap();
        n += 300;
        w.flush().unwrap();
    }
    w.finish().unwrap();
    check_all_readers(&path, n);
    let bytes = fs::read(&path).unwrap();
    let h = header_of(&bytes);
    let reader = SectionReader::open(&h, &bytes[..]).unwrap();
    assert_eq!(reader.chunk_map().unwrap().config().chunk, [3, 300]);
    // Every chunk written once: the stored chunks are all the section holds besides the
    // config and index.
    let index = reader.chunk_map().unwrap().index();
    let stored = index.stored_bytes();
    let cfg = reader.chunk_map().unwrap().config();
    let overhead = cfg.encoded_len() + 64 * cfg.entry_len();
    assert_eq!(h.size, overhead + stored, "no dead chunk versions");
    // Reopened with the codec while still empty, a plain file takes it.
    let empty = dir.path().join("empty.ra");
    RecordOptions::new()
        .codec(Codec::Lz4)
        .create::<[u32; 3]>(&empty)
        .unwrap()
        .finish()
        .unwrap();
    let mut w: RecordWriter<[u32; 3]> =
        RecordOptions::new().codec(Codec::Lz4).open(&empty).unwrap();
    w.append_slice(&(0..10).map(rec).collect::<Vec<_>>())
        .unwrap();
    w.finish().unwrap();
    assert!(header_of(&fs::read(&empty).unwrap()).flags.is_chunked());
    check_all_readers(&empty, 10);
}

#[test]
fn a_large_append_is_compressed_in_whole_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.ra");
    let mut w: RecordWriter<[u32; 3]> = RecordOptions::new()
        .codec(Codec::Lz4)
        .threads(2)
        .create(&path)
        .unwrap();
    // More than one default chunk (about 1 MiB of records) in one slice, straight through.
    let n = 200_000u64;
    w.append_slice(&(0..n).map(rec).collect::<Vec<_>>())
        .unwrap();
    w.finish().unwrap();
    check_all_readers(&path, n);
}

#[test]
fn open_refuses_compression_options_for_a_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.ra");
    let mut w: RecordWriter<u32> = RecordWriter::create(&path, serde_json::Value::Null).unwrap();
    w.append(&1).unwrap();
    w.finish().unwrap();
    let before = fs::read(&path).unwrap();
    let err = RecordOptions::new()
        .codec(Codec::Zstd)
        .open::<u32>(&path)
        .unwrap_err();
    assert!(err.to_string().contains("not compressed"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
}

/// The moments of a flush that grows a committed partial last chunk, rebuilt from the files
/// before and after it: (b) the new size with the old dims and the old entry, (c) the same
/// with the new entry, and a reader that read the old header before (b) and the index after
/// (c). Each reads exactly the records its dims give, with their values.
#[test]
fn every_moment_of_a_growing_last_chunk_reads_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.ra");
    let mut w: RecordWriter<[u32; 3]> = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(64)
        .create(&path)
        .unwrap();
    w.append_slice(&(0..10).map(rec).collect::<Vec<_>>())
        .unwrap();
    w.flush().unwrap();
    let before = fs::read(&path).unwrap();
    // A reader opened now keeps reading its 10 records while the chunk grows.
    let early = RecordReader::<[u32; 3]>::open(&path).unwrap();
    w.append_slice(&(10..30).map(rec).collect::<Vec<_>>())
        .unwrap();
    w.flush().unwrap();
    let after = fs::read(&path).unwrap();
    let (h0, h2) = (header_of(&before), header_of(&after));
    assert_eq!((h0.dims[1], h2.dims[1]), (10, 30));
    assert!(h2.size > h0.size);
    let hlen = h0.encoded_len();
    // Chunk 0's entry: the first of index segment 0, right after the config (2 dims).
    let cfg = SectionReader::open(&h0, &before[..])
        .unwrap()
        .chunk_map()
        .unwrap()
        .config()
        .clone();
    let entry = hlen + cfg.encoded_len() as usize..;
    let entry = entry.start..entry.start + cfg.entry_len() as usize;
    assert_ne!(
        before[entry.clone()],
        after[entry.clone()],
        "the entry moved"
    );
    let mut h1 = h0.clone();
    h1.size = h2.size;
    let read = |bytes: &[u8], name: &str| -> Vec<u32> {
        let p = dir.path().join(name);
        fs::write(&p, bytes).unwrap();
        RawArray::<u32>::read_file(&p).unwrap().into_vec()
    };
    // (b): new size, old dims, old entry.
    let mut b = after.clone();
    b[..hlen].copy_from_slice(&h1.encode());
    b[entry.clone()].copy_from_slice(&before[entry.clone()]);
    assert_eq!(read(&b, "b.ra"), truth(10));
    // (c): new size, old dims, new entry (a prefix of the new version).
    let mut c = after.clone();
    c[..hlen].copy_from_slice(&h1.encode());
    assert_eq!(read(&c, "c.ra"), truth(10));
    // A reader holding the header of before (b) reads the index after (c): the entry lies
    // past its size, and the size of the header now in the file is taken with its dims.
    let reader = SectionReader::open(&h0, &after[..]).unwrap();
    let mut out = vec![0u8; 10 * 12];
    reader.read_subset(&[0..3, 0..10], &mut out).unwrap();
    let got: Vec<u32> = out
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(got, truth(10), "an old header read before the entry moved");
    // The reader opened before the growth still reads its records (old versions stay).
    assert_eq!(early.len(), 10);
    assert_eq!(early.get(9).unwrap(), Some(rec(9)));
    assert_eq!(
        RawArray::<u32>::read_file(&path).unwrap().as_slice(),
        &truth(30)[..]
    );
    w.finish().unwrap();
}

const CHILD: &str = "RA_RECORDS_CHUNKED_CRASH_CHILD";

/// Records per flush when the file holds `n`.
fn batch(n: u64) -> u64 {
    1 + n.wrapping_mul(2_654_435_761) % 90
}

/// Records after which a child stops appending (and the parent starts a new file).
const CAP: u64 = 30_000;

/// The child role of the crash test: appends and flushes a compressed record file until
/// killed, writing the record count after each completed flush to a side file.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [path, side, codec, mode]: [&str; 4] =
        spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let codec = match codec {
        "lz4" => Codec::Lz4,
        "none" => Codec::None,
        _ => Codec::Zstd,
    };
    let durability = match mode {
        "fsync" => Durability::Fsync,
        _ => Durability::NoFsync,
    };
    let opts = RecordOptions::new()
        .durability(durability)
        .buffer_bytes(500)
        .params(serde_json::json!({"run": 1}));
    // Zstd files have chunks of 128 records; the others the default, chosen by the first
    // flush (the file is plain and empty until then, and reopened so it takes the codec).
    let opts = opts.codec(codec);
    let opts = if codec == Codec::Zstd {
        opts.chunk_records(128)
    } else {
        opts
    };
    let mut w: RecordWriter<[u32; 3]> = if Path::new(path).exists() {
        opts.open(path).unwrap()
    } else {
        opts.create(path).unwrap()
    };
    let report = common::crash::reporter(side);
    let mut n = w.len();
    report(n);
    loop {
        if n >= CAP {
            std::thread::sleep(Duration::from_secs(1));
            continue;
        }
        let b = batch(n);
        w.append_slice(&(n..n + b).map(rec).collect::<Vec<_>>())
            .unwrap();
        w.flush().unwrap();
        n += b;
        report(n);
    }
}

/// A compressed `RecordWriter` (in a child process) is SIGKILLed at random moments while a
/// reader thread opens the file again and again: every read is a prefix of the truth. After
/// each kill the header covers the last reported flush (or the one under way), every record
/// equals the truth through every reader, and the next child appends to the file.
#[cfg(unix)]
#[test]
fn killed_compressed_writers_lose_nothing_flushed() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::Instant;

    let (dir, path, side) = common::crash::scratch("crash.ra");
    let read_side = || common::crash::flushed(&side);
    let mut below = common::crash::seeded("crash test");
    // The follower: opens the file (when there is one) through RecordReader and read_file.
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let follower = {
        let (stop, reads, path) = (stop.clone(), reads.clone(), path.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                match RecordReader::<[u32; 3]>::open(&path) {
                    Ok(r) => {
                        let n = r.len() as u64;
                        match r.slice(..) {
                            Ok(got) => {
                                let flat: Vec<u32> = got.iter().flatten().copied().collect();
                                assert_eq!(flat, truth(n), "a reader saw other values");
                                reads.fetch_add(1, SeqCst);
                            }
                            // A writer killed between writing in place and committing leaves
                            // the file changed with no writer holding it: the read says so
                            // (the reader opens again), and never returns other values.
                            Err(e) => assert!(
                                matches!(e.kind(), rawarray_serde::ErrorKind::Changed { .. }),
                                "{e}"
                            ),
                        }
                    }
                    // Gone (replaced), or changed between its header read and its pin (a
                    // new writer reclaiming what a killed one left): refused, never misread.
                    Err(e) => assert!(
                        e.to_string().contains("No such file")
                            || matches!(e.kind(), rawarray_serde::ErrorKind::Changed { .. }),
                        "{e}"
                    ),
                }
                match RawArray::<u32>::read_file(&path) {
                    Ok(a) => assert_eq!(a.as_slice(), &truth(a.dims()[1])[..]),
                    // Replaced by a new file between the open and the read: gone, not wrong.
                    Err(e) => assert!(
                        !path.exists()
                            || e.to_string().contains("No such file")
                            || matches!(e.kind(), rawarray_serde::ErrorKind::Changed { .. }),
                        "{e}"
                    ),
                }
            }
        })
    };
    let (mut kills, mut appending_kills) = (0, 0);
    for round in 0..60 {
        let before = read_side();
        let codec = ["zstd", "lz4", "zstd", "none"][round % 4];
        let mode = if round % 3 == 2 { "fsync" } else { "nofsync" };
        let err_path = dir.path().join("child.err");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(
                CHILD,
                format!("{}\n{}\n{codec}\n{mode}", path.display(), side.display()),
            )
            .stdout(Stdio::null())
            .stderr(fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        let started = Instant::now();
        if round % 5 == 4 {
            std::thread::sleep(Duration::from_micros(below(15_000)));
        }
        while round % 5 != 4 && read_side() == before {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "child exited ({status}):\n{}",
                    fs::read_to_string(&err_path).unwrap()
                );
            }
            assert!(started.elapsed() < Duration::from_secs(60), "no progress");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(below(6000)));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status}");
        kills += 1;
        appending_kills += usize::from(round % 5 != 4);

        let flushed = read_side();
        if !path.exists() {
            assert_eq!(flushed, 0, "the file is gone after {flushed} records");
            continue;
        }
        let h = header_of(&fs::read(&path).unwrap());
        let n = h.dims[1];
        assert!(
            h.flags.is_chunked() || n == 0,
            "{n} records, not compressed"
        );
        assert!(
            n == flushed || n == flushed + batch(flushed),
            "header says {n}; last flush reported {flushed}"
        );
        check_all_readers(&path, n);
        let r = RecordReader::<[u32; 3]>::open(&path).unwrap();
        assert_eq!(r.trailer().unwrap().params["run"], 1);
        if n >= CAP {
            fs::remove_file(&path).unwrap();
            fs::remove_file(&side).unwrap();
        }
    }
    stop.store(true, SeqCst);
    follower.join().unwrap();
    eprintln!("{kills} kills, {} reads", reads.load(SeqCst));
    assert!(kills >= 50);
    assert!(appending_kills >= 40);
    assert!(reads.load(SeqCst) > 0);
}

/// Entry flag bit 1 (full extent) in hand-edited files: a raw chunk must then hold the whole
/// extent, unknown bits are refused naming the chunk, and a coded full-extent chunk decodes to
/// the prefix the dims give it.
#[test]
fn the_full_extent_flag_is_validated() {
    use rawarray_serde::codec::{self, ChunkOptions, Config, ENTRY_FULL};
    use rawarray_serde::ElType;
    // u8 [4, 6] in chunks [4, 4]: chunk 1 is clipped to 2 of its 4 columns (8 raw bytes).
    let h = Header::new(ElType::Uint, 1, vec![4, 6]).unwrap();
    let raw: Vec<u8> = (0..24).collect();
    // Version 1 (its 24-byte entries are edited below; a version 2 entry's CRC refuses it).
    let opts = ChunkOptions::new()
        .codec(Codec::None)
        .chunks(vec![4, 4])
        .layout_version(1);
    let (ch, section) = codec::encode(&h, &raw, &opts).unwrap();
    let mut file = ch.encode();
    file.extend_from_slice(&section);
    let flags_at = ch.encoded_len() + Config::encoded_len_v1(2) + 24 + 20;
    let read = |f: &[u8]| -> rawarray_serde::Result<Vec<u8>> { codec::decode_all(&ch, f) };
    assert_eq!(read(&file).unwrap(), raw);
    // Bit 1 on the clipped raw chunk: it holds 8 bytes, the full extent is 16.
    let mut bad = file.clone();
    bad[flags_at] |= ENTRY_FULL as u8;
    let err = read(&bad).unwrap_err().to_string();
    assert!(
        err.contains("chunk 1") && err.contains("16 stored bytes"),
        "{err}"
    );
    // An unknown bit.
    let mut bad = file.clone();
    bad[flags_at] |= 4;
    let err = read(&bad).unwrap_err().to_string();
    assert!(err.contains("chunk 1") && err.contains("flags"), "{err}");

    // A coded chunk stored at its full extent (columns 4..8, of which the dims keep 4..6),
    // in blocks of 4 bytes: the reader decodes the prefix, and a one-element read too.
    let full: Vec<u8> = (16..32).collect();
    let h8 = Header::new(ElType::Uint, 1, vec![4, 8]).unwrap();
    let raw8: Vec<u8> = (0..32).collect();
    let opts = ChunkOptions::new()
        .codec(Codec::Lz4)
        .shuffle(Shuffle::None)
        .block_bytes(4)
        .chunks(vec![4, 4])
        .layout_version(1);
    let (c8, section8) = codec::encode(&h8, &raw8, &opts).unwrap();
    assert_eq!(raw8[16..], full[..]);
    // The same section under dims [4, 6], chunk 1's entry flagged full extent.
    let mut c6 = c8.clone();
    c6.dims = vec![4, 6];
    let mut f6 = c6.encode();
    f6.extend_from_slice(&section8);
    let at = c6.encoded_len() + Config::encoded_len_v1(2) + 24 + 20;
    let err = read_as(&c6, &f6).unwrap_err().to_string();
    assert!(
        err.contains("chunk 1"),
        "without the flag the chunk is too long: {err}"
    );
    f6[at] |= ENTRY_FULL as u8;
    assert_eq!(read_as(&c6, &f6).unwrap(), raw[..24]);
    let mut one = [0u8; 1];
    codec::decode_subset(&c6, &f6[..], &[3..4, 5..6], &mut one).unwrap();
    assert_eq!(one[0], 23);
}

fn read_as(h: &Header, f: &[u8]) -> rawarray_serde::Result<Vec<u8>> {
    rawarray_serde::codec::decode_all(h, f)
}
