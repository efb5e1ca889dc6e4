//! `ArrayWriter` over a chunked file (issue 23, item 3): processes and threads write disjoint
//! chunk-aligned blocks, each compressed by its writer, and the result equals the array
//! written whole (its values, and each chunk's stored bytes, against the one-shot encoder); a
//! reader during the writes sees only zeros or written values; a SIGKILLed writer's block is
//! reported and the others' survive; what a writer killed before its commit appended is
//! ignored by readers and reclaimed; misaligned blocks and rewrites of committed chunks are
//! refused, naming the block and the grid. The truth is `value(i)` of the element's index.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

use std::fs;
use std::ops::Range;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rawarray_serde::codec::{self, ChunkOptions, ChunkWriter, Codec, SectionReader, Shuffle};
use rawarray_serde::{ArrayWriter, ErrorKind, Header, RawArray};

/// Set in a child process: `ROLE\nPATH\nBLOCK` (`BLOCK` = the z range `a..b`).
const CHILD: &str = "RAWARRAY_CHUNKED_WRITER_CHILD";

/// The array: x, y, z (first fastest), chunks of [X, Y, 2]: every chunk is a contiguous slab.
const X: u64 = 16;
const Y: u64 = 12;
const Z: u64 = 8;

/// A smooth, never-zero value of element `i` (column-major index), so a zero is unwritten.
fn value(i: u64) -> f32 {
    1.0 + (i as f32 * 0.01).sin().abs() + (i % 7) as f32
}

/// The values of the block `z` of an `[x, y, Z]` array.
fn block_values(x: u64, y: u64, z: &Range<u64>) -> Vec<f32> {
    (z.start * x * y..z.end * x * y).map(value).collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "gave up waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn parse_z(s: &str) -> Range<u64> {
    let (a, b) = s.split_once("..").unwrap();
    a.parse().unwrap()..b.parse().unwrap()
}

/// The child roles; does nothing unless the parent set `CHILD`.
///
/// - `block`: waits for `DIR/go`, opens the file (2 threads), writes z slab `BLOCK`, finishes.
/// - `slow`: opens the file (1 thread) and writes z slab `BLOCK` of random values: the file's
///   zstd level 22 takes seconds to compress it, the time to be killed in.
#[test]
fn chunked_writer_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [role, path, z]: [&str; 3] = spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let (path, z) = (Path::new(path), parse_z(z));
    match role {
        "block" => {
            let dir = path.parent().unwrap();
            wait_for("go", || dir.join("go").exists());
            let w = ArrayWriter::open_with_threads(path, 2).unwrap();
            let (x, y) = (w.header().dims[0], w.header().dims[1]);
            w.write_subset(&[0..x, 0..y, z.clone()], &block_values(x, y, &z))
                .unwrap();
            w.finish().unwrap();
        }
        "slow" => {
            let w = ArrayWriter::open_with_threads(path, 1).unwrap();
            let (x, y) = (w.header().dims[0], w.header().dims[1]);
            let mut s = 0x2545_f491_4f6c_dd1du64;
            let noise: Vec<f32> = (0..(z.end - z.start) * x * y)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    f32::from_bits(((s >> 41) as u32) | 0x3f80_0000)
                })
                .collect();
            w.write_subset(&[0..x, 0..y, z], &noise).unwrap();
            w.finish().unwrap();
        }
        _ => panic!("unknown role {role}"),
    }
}

fn spawn(role: &str, path: &Path, z: &Range<u64>) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "chunked_writer_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(
            CHILD,
            format!("{role}\n{}\n{}..{}", path.display(), z.start, z.end),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn whole(x: u64, y: u64, z: u64) -> Vec<f32> {
    (0..x * y * z).map(value).collect()
}

/// The file at `path` equals the array written whole with `opts`: the same values, and each
/// chunk decodes to the same bytes and is stored as the same bytes as the one-shot encoder's.
fn assert_equals_whole(path: &Path, opts: &ChunkOptions) {
    let a: RawArray<f32> = RawArray::read_file(path).unwrap();
    assert_eq!(a.dims(), [X, Y, Z]);
    assert_eq!(a.as_slice(), whole(X, Y, Z), "the values");

    let header = Header::new(rawarray_serde::ElType::Float, 4, vec![X, Y, Z]).unwrap();
    let raw: Vec<u8> = whole(X, Y, Z)
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let (h, section) = codec::encode(&header, &raw, opts).unwrap();
    let mut reference = h.encode();
    reference.extend_from_slice(&section);
    let ours = fs::read(path).unwrap();
    let our_header = Header::decode_any(&ours).unwrap();
    let theirs = SectionReader::open(&h, &reference[..]).unwrap();
    let mine = SectionReader::open(&our_header, &ours[..]).unwrap();
    let (tl, ml) = (theirs.chunk_map().unwrap(), mine.chunk_map().unwrap());
    assert_eq!(ml.config().chunk, tl.config().chunk);
    assert_eq!(ml.grid().count(), tl.grid().count());
    let base = our_header.encoded_len() as u64;
    let rbase = h.encoded_len() as u64;
    for n in 0..tl.grid().count() {
        let (mr, tr) = (ml.chunk_range(n).unwrap(), tl.chunk_range(n).unwrap());
        let mine_stored = &ours[(base + mr.start) as usize..(base + mr.end) as usize];
        let their_stored = &reference[(rbase + tr.start) as usize..(rbase + tr.end) as usize];
        let raw_len = tl.grid().raw_len(n) as usize;
        let (mut a, mut b) = (vec![0u8; raw_len], vec![0u8; raw_len]);
        ml.decode_chunk(n, mine_stored, &mut a).unwrap();
        tl.decode_chunk(n, their_stored, &mut b).unwrap();
        assert_eq!(a, b, "chunk {n} decodes alike");
        assert_eq!(mine_stored, their_stored, "chunk {n} is stored alike");
        assert_eq!(ml.index().entry(n).crc, tl.index().entry(n).crc);
    }
}

/// Reads `path` until `stop`, checking each element is 0 (not written yet) or its value.
fn read_until(path: &Path, stop: &AtomicBool) -> usize {
    let mut reads = 0;
    while !stop.load(Ordering::Relaxed) || reads == 0 {
        let a: RawArray<f32> = RawArray::read_file(path).unwrap();
        for (i, &v) in a.as_slice().iter().enumerate() {
            assert!(
                v == 0.0 || v == value(i as u64),
                "element {i} is {v}, neither 0 nor {}",
                value(i as u64)
            );
        }
        reads += 1;
    }
    reads
}

fn options(codec: Codec, shuffle: Shuffle) -> ChunkOptions {
    ChunkOptions::new()
        .codec(codec)
        .shuffle(shuffle)
        .chunks(vec![X, Y, 2])
        .block_bytes(512)
}

#[cfg(unix)]
#[test]
fn four_processes_write_disjoint_chunk_aligned_blocks_equal_to_the_array_written_whole() {
    for (codec, shuffle) in [(Codec::Zstd, Shuffle::Byte), (Codec::Lz4, Shuffle::None)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("field.ra");
        let opts = options(codec, shuffle);
        ArrayWriter::create_chunked::<f32>(&path, &[X, Y, Z], &opts)
            .unwrap()
            .finish()
            .unwrap();
        // Before any block: every chunk never written, zeros.
        let a: RawArray<f32> = RawArray::read_file(&path).unwrap();
        assert!(a.as_slice().iter().all(|&v| v == 0.0));
        let children: Vec<Child> = (0..4)
            .map(|p| spawn("block", &path, &(2 * p..2 * p + 2)))
            .collect();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| read_until(&path, &stop));
            fs::write(dir.path().join("go"), "").unwrap();
            for c in children {
                let out = c.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            stop.store(true, Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0);
        });
        assert_equals_whole(&path, &opts);
        assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
        assert!(!dir.path().join("field.ra.journal").exists());
    }
}

#[test]
fn threads_write_disjoint_chunk_aligned_blocks_equal_to_the_array_written_whole() {
    for (codec, shuffle) in [(Codec::Zstd, Shuffle::Byte), (Codec::Lz4, Shuffle::None)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("field.ra");
        let opts = options(codec, shuffle).threads(2);
        let w = ArrayWriter::create_chunked::<f32>(&path, &[X, Y, Z], &opts).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| read_until(&path, &stop));
            let writers: Vec<_> = (0..4u64)
                .map(|t| {
                    let (w, path) = (&w, &path);
                    s.spawn(move || {
                        // Two threads share the creator's writer; two open their own.
                        let own = (t >= 2).then(|| ArrayWriter::open(path).unwrap());
                        let w = own.as_ref().unwrap_or(w);
                        let z = 2 * t..2 * t + 2;
                        w.write_subset(&[0..X, 0..Y, z.clone()], &block_values(X, Y, &z))
                            .unwrap();
                        if let Some(own) = own {
                            own.finish().unwrap();
                        }
                    })
                })
                .collect();
            for t in writers {
                t.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0);
        });
        w.finish().unwrap();
        assert_equals_whole(&path, &opts);
    }
}

#[test]
fn misaligned_blocks_and_rewrites_of_committed_chunks_are_refused_naming_block_and_grid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grid.ra");
    // Chunks [4, 4] over [10, 6]: edge chunks 2 wide along dim 0 and dim 1.
    let opts = ChunkOptions::new().codec(Codec::Lz4).chunks(vec![4, 4]);
    let w = ArrayWriter::create_chunked::<u16>(&path, &[10, 6], &opts).unwrap();
    for bad in [vec![2..6, 0..4], vec![0..4, 0..3], vec![0..5, 0..4]] {
        let e = w
            .write_subset(
                &bad,
                &vec![1u16; ((bad[0].end - bad[0].start) * (bad[1].end - bad[1].start)) as usize],
            )
            .unwrap_err();
        let text = e.to_string();
        let block = format!(
            "block [{}..{}, {}..{})",
            bad[0].start, bad[0].end, bad[1].start, bad[1].end
        );
        assert!(text.contains(&block), "{text}");
        assert!(text.contains("chunks [4, 4] over dims [10, 6]"), "{text}");
    }
    // Ending at the dim is aligned: the edge chunks [8..10] and [4..6].
    w.write_subset(&[8..10, 4..6], &[5u16; 4]).unwrap();
    w.write_subset(&[0..8, 0..4], &[3u16; 32]).unwrap();
    // A block holding a committed chunk: refused, naming it, and nothing of it written.
    let e = w.write_subset(&[0..10, 4..6], &[9u16; 20]).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("block [0..10, 4..6)"), "{text}");
    assert!(
        text.contains("chunk 5 (grid coordinates [2, 1] of chunks [4, 4]) already committed"),
        "{text}"
    );
    // Refused before it was begun: nothing to report.
    assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
    w.finish().unwrap();
    let a: RawArray<u16> = RawArray::read_file(&path).unwrap();
    let want: Vec<u16> = (0..60u64)
        .map(|i| {
            let (x, y) = (i % 10, i / 10);
            match (x, y) {
                (0..8, 0..4) => 3,
                (8..10, 4..6) => 5,
                _ => 0,
            }
        })
        .collect();
    assert_eq!(a.as_slice(), want);
    // A plain file's writer, asked to open it as chunked, and the other way round, is told.
    let e = ArrayWriter::open_or_create::<u16>(&path, &[10, 6]).unwrap_err();
    assert!(e.to_string().contains("plain (not chunked)"), "{e}");
}

/// What a writer killed between appending its chunks and its commit leaves: chunk bytes,
/// entries and (here) nothing else past the committed size. Readers read those chunks as never
/// written; `ArrayWriter::recover` and the next writer reclaim them.
#[test]
fn a_dead_writers_appended_chunks_are_ignored_by_readers_and_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.ra");
    let opts = options(Codec::Zstd, Shuffle::Byte);
    ArrayWriter::create_chunked::<f32>(&path, &[X, Y, Z], &opts)
        .unwrap()
        .finish()
        .unwrap();
    let committed = Header::decode_any(&fs::read(&path).unwrap()).unwrap().size;
    {
        // Chunk 1 (z 2..4) appended and entered, never committed.
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut cw = ChunkWriter::open(&file).unwrap();
        let raw: Vec<u8> = block_values(X, Y, &(2..4))
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        cw.write_chunk(&file, 1, &raw).unwrap();
    }
    let bytes = fs::read(&path).unwrap();
    let h = Header::decode_any(&bytes).unwrap();
    assert_eq!(h.size, committed, "nothing committed");
    let section = SectionReader::open(&h, &bytes[..]).unwrap();
    assert_eq!(section.chunk_map().unwrap().index().uncommitted(), [1]);
    let a: RawArray<f32> = RawArray::read_file(&path).unwrap();
    assert!(a.as_slice().iter().all(|&v| v == 0.0));

    // recover validates the index and clears the dead entry; nothing else changes.
    let r = ArrayWriter::recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after), (Z, Z));
    let after = fs::read(&path).unwrap();
    let section = SectionReader::open(&h, &after[..]).unwrap();
    assert!(section
        .chunk_map()
        .unwrap()
        .index()
        .uncommitted()
        .is_empty());
    assert_eq!(after[..h.encoded_len()], bytes[..h.encoded_len()]);

    // The next writers append over the dead bytes: the file ends as one never killed.
    let w = ArrayWriter::open(&path).unwrap();
    for z in [0..2, 2..4, 4..6, 6..8] {
        w.write_subset(&[0..X, 0..Y, z.clone()], &block_values(X, Y, &z))
            .unwrap();
    }
    w.finish().unwrap();
    assert_equals_whole(&path, &opts);
    let clean = dir.path().join("clean.ra");
    let w = ArrayWriter::create_chunked::<f32>(&clean, &[X, Y, Z], &opts).unwrap();
    for z in [0..2, 2..4, 4..6, 6..8] {
        w.write_subset(&[0..X, 0..Y, z.clone()], &block_values(X, Y, &z))
            .unwrap();
    }
    w.finish().unwrap();
    assert_eq!(
        Header::decode_any(&fs::read(&path).unwrap()).unwrap().size,
        Header::decode_any(&fs::read(&clean).unwrap()).unwrap().size,
        "the dead writer's bytes were reused"
    );
}

#[cfg(unix)]
#[test]
fn a_sigkilled_writers_block_is_reported_and_the_others_survive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.ra");
    // Big enough chunks that zstd 22 takes its time on the slow writer's random values.
    let (x, y, z) = (256u64, 256u64, 24u64);
    let opts = ChunkOptions::new()
        .codec(Codec::Zstd)
        .level(22)
        .shuffle(Shuffle::Byte)
        .chunks(vec![x, y, 2]);
    ArrayWriter::create_chunked::<f32>(&path, &[x, y, z], &opts)
        .unwrap()
        .finish()
        .unwrap();
    let killed = 8..24;
    let mut slow = spawn("slow", &path, &killed);
    // Begun (its journal entry) and still compressing: killed before its commit.
    let begun = vec![vec![0..x, 0..y, killed.clone()]];
    wait_for("the slow block to begin", || {
        ArrayWriter::uncommitted_blocks(&path).unwrap() == begun
    });
    slow.kill().unwrap(); // SIGKILL
    assert!(!slow.wait().unwrap().success(), "killed, not finished");

    // The others write their blocks after the kill, over what it left: both survive. The
    // last to finish is told of the killed block.
    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[0..x, 0..y, 0..4], &block_values(x, y, &(0..4)))
        .unwrap();
    let other = spawn("block", &path, &(4..8));
    fs::write(dir.path().join("go"), "").unwrap();
    let out = other.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = w.finish().unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Uncommitted { blocks, .. } if *blocks == begun),
        "{e}"
    );

    assert_eq!(ArrayWriter::uncommitted_blocks(&path).unwrap(), begun);
    let e = ArrayWriter::recover(&path).unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "block [0..{x}, 0..{y}, 8..24) was never committed"
        )),
        "{e}"
    );
    let a: RawArray<f32> = RawArray::read_file(&path).unwrap();
    let plane = (x * y) as usize;
    assert_eq!(a.as_slice()[..8 * plane], whole(x, y, 8)[..]);
    assert!(a.as_slice()[8 * plane..].iter().all(|&v| v == 0.0));

    // Written again, the block is committed and the report goes.
    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[0..x, 0..y, killed.clone()], &block_values(x, y, &killed))
        .unwrap();
    w.finish().unwrap();
    assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
    let a: RawArray<f32> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.as_slice(), whole(x, y, z));
}

/// A journal entry `begin` of `ranges`, as doc/format.md section 8a lays it out.
fn begin_entry(id: u64, ranges: &[Range<u64>]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&id.to_le_bytes());
    for r in ranges {
        b.extend_from_slice(&r.start.to_le_bytes());
        b.extend_from_slice(&r.end.to_le_bytes());
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..4]);
    h.update(&b[8..]);
    let crc = h.finalize();
    b[4..8].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The journal of a chunked file stays the file's own as commits grow its size; a begun block
/// whose chunks are all committed (its writer died between its commit and its `end`) is not
/// reported, even by a writer that opened the file before that commit; one not committed is.
#[test]
fn a_begun_block_whose_chunks_are_all_committed_is_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.ra");
    let opts = options(Codec::Lz4, Shuffle::Byte);
    let first = ArrayWriter::create_chunked::<f32>(&path, &[X, Y, Z], &opts).unwrap();
    let second = ArrayWriter::open(&path).unwrap();
    let b = [0..X, 0..Y, 2..4];
    second
        .write_subset(&b, &block_values(X, Y, &(2..4)))
        .unwrap();
    second.finish().unwrap();
    let journal = dir.path().join("j.ra.journal");
    let mut j = fs::OpenOptions::new().append(true).open(&journal).unwrap();
    std::io::Write::write_all(&mut j, &begin_entry(0xdead, &b)).unwrap();
    assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
    // The first writer, opened when the size was smaller, finishes last: clean.
    first.finish().unwrap();
    assert!(!journal.exists());

    let w = ArrayWriter::open(&path).unwrap();
    let mut j = fs::OpenOptions::new().append(true).open(&journal).unwrap();
    let c = [0..X, 0..Y, 4..6];
    std::io::Write::write_all(&mut j, &begin_entry(0xbeef, &c)).unwrap();
    assert_eq!(
        ArrayWriter::uncommitted_blocks(&path).unwrap(),
        [c.to_vec()]
    );
    let e = w.finish().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Uncommitted { .. }), "{e}");
}
