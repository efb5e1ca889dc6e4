//! A tiny file never costs a gigabyte (doc/chunked.md section 8): the bytes a read decodes are
//! bounded by what it reads, returns and the blocks it touches, and its memory stays within a
//! 256 MiB address-space cap, however large the blocks and chunks the file claims.
//!
//! Each hostile file is read whole, by box and by one element in a child process (this test
//! binary again, running only the ignored `child_read` test) under `ulimit -v 262144`; the
//! child prints the section's counters, which the parent checks against the bound
//! `R x 255 + O + B x b` (R stored bytes read, O bytes returned, B blocks decoded, b the largest
//! raw block).
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rawarray_serde::codec::{Blocks, Codec, Config, Entry, ENTRY_FULL};
use rawarray_serde::section::Section;
use rawarray_serde::{ArrayWriter, ElType, Flags, Header, WriteOptions};

const CHILD: &str = "RAWARRAY_READ_COST_CHILD";

/// The child's address-space cap, KiB: 256 MiB.
const CAP_KIB: u64 = 256 << 10;

/// A version 1 chunked file of `u8` dims `dims`, chunk shape `chunk`, blocks of
/// `block_bytes`, zstd: `chunks` lists (chunk number, stored raw length, full extent), each
/// stored as one zstd frame of zeros per block.
fn v1_file(
    dir: &Path,
    name: &str,
    dims: Vec<u64>,
    chunk: Vec<u64>,
    block_bytes: u64,
    chunks: &[(u64, u64, bool)],
) -> PathBuf {
    let n = dims.len();
    let mut h = Header::new(ElType::Uint, 1, dims).unwrap();
    let s0 = chunks.iter().map(|c| c.0 + 1).max().unwrap_or(1);
    let config = Config {
        version: 1,
        codec: Codec::Zstd,
        level: 3,
        filters: vec![],
        blocks: Blocks::Bytes(block_bytes),
        chunk,
        s0,
        segments: Config::first_segment(1, n, 0, 0),
        stats: None,
        split: false,
        stream_crcs: false,
    };
    let mut section = config.encode();
    let index_at = section.len();
    section.resize(index_at + 24 * s0 as usize, 0);
    let mut frames: std::collections::HashMap<u64, Vec<u8>> = std::collections::HashMap::new();
    for &(c, raw, full) in chunks {
        let blocks = raw.div_ceil(block_bytes);
        let len = block_bytes.min(raw);
        let frame = frames
            .entry(len)
            .or_insert_with(|| zeros_frame(len))
            .clone();
        let mut stored = Vec::new();
        let mut end = 0u64;
        for _ in 0..blocks {
            end += frame.len() as u64;
            stored.extend_from_slice(&end.to_le_bytes());
            stored.extend_from_slice(&crc32fast::hash(&frame).to_le_bytes());
        }
        for _ in 0..blocks {
            stored.extend_from_slice(&frame);
        }
        let e = Entry {
            offset: section.len() as u64,
            len: stored.len() as u64,
            crc: crc32fast::hash(&stored),
            flags: if full { ENTRY_FULL } else { 0 },
        };
        section[index_at + 24 * c as usize..][..24].copy_from_slice(&e.encode());
        section.extend_from_slice(&stored);
    }
    h.flags = Flags::CHUNKED;
    h.size = section.len() as u64;
    let path = dir.join(name);
    let mut bytes = h.encode();
    bytes.extend_from_slice(&section);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// One zstd frame (with its content size) of `len` zero bytes, made a MiB at a time.
fn zeros_frame(len: u64) -> Vec<u8> {
    use std::io::Write;
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.set_pledged_src_size(Some(len)).unwrap();
    e.include_contentsize(true).unwrap();
    let mib = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(1 << 20);
        e.write_all(&mib[..n as usize]).unwrap();
        left -= n;
    }
    e.finish().unwrap()
}

/// Runs the child on `path` under the cap; returns its counters: (stored bytes read, bytes
/// returned, blocks decoded, raw bytes decoded).
fn read_capped(path: &Path, how: &str) -> (u64, u64, u64, u64) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args(["child_read", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD, format!("{how}={}", path.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{how} of {} under a 256 MiB cap failed: {:?}\nstdout: {stdout}\nstderr: {}",
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("counters ").map(|(_, rest)| rest.trim()))
        .unwrap_or_else(|| panic!("no counters in {stdout}"));
    let v: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    (v[0], v[1], v[2], v[3])
}

/// The child: reads the file as `how` says and prints the section's counters.
#[test]
#[ignore = "run by the memory-capped tests of this file, in a child process"]
fn child_read() {
    let spec = std::env::var(CHILD).expect("set by the parent test");
    let (how, path) = spec.split_once('=').unwrap();
    let file = std::fs::File::open(path).unwrap();
    let h = Header::read_stable_any(&file).unwrap();
    let s = Section::open(&h, &file).unwrap();
    let returned = match how {
        "whole" => s.read_all().unwrap().len() as u64,
        "first" => {
            let ranges: Vec<_> = h.dims.iter().map(|_| 0..1).collect();
            let mut one = vec![0u8; h.elbyte as usize];
            s.read_box(&ranges, &mut one).unwrap();
            assert!(one.iter().all(|&b| b == 0));
            one.len() as u64
        }
        other => panic!("no read {other}"),
    };
    let st = s.stats();
    println!(
        "counters {} {returned} {} {}",
        st.compressed_bytes, st.blocks_decoded, st.decoded_bytes
    );
}

/// The bound of doc/chunked.md section 8 with `b` the largest raw block.
fn check_bound(what: &str, (read, returned, blocks, decoded): (u64, u64, u64, u64), b: u64) {
    let bound = read * 255 + returned + blocks * b;
    assert!(
        decoded <= bound,
        "{what}: decoded {decoded} bytes, bound {bound} ({read} read, {returned} returned, {blocks} blocks of at most {b})"
    );
}

/// A 33 KB file of one element: its one chunk stored at its full extent of 2^30 elements along
/// the last dim in one 2^30-byte zstd block. Whole and one-element reads stay under the cap and
/// within the bound (the block is decoded as a stream, only as far as the element).
#[test]
fn a_full_extent_chunk_of_a_gigabyte_costs_one_element_of_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = v1_file(
        dir.path(),
        "one.ra",
        vec![1],
        vec![1 << 30],
        1 << 30,
        &[(0, 1 << 30, true)],
    );
    assert!(std::fs::metadata(&path).unwrap().len() < 100_000);
    for how in ["whole", "first"] {
        let c = read_capped(&path, how);
        assert_eq!(c.1, 1);
        check_bound(how, c, 1 << 30);
    }
}

/// 64 elements in 64 chunks, each stored at its full extent of 2^28 elements along the last
/// dim in one 2^28-byte block: a small file that used to take 45 s and 2.1 GiB to read.
#[test]
fn sixty_four_huge_chunks_of_one_element_each() {
    let dir = tempfile::tempdir().unwrap();
    let chunks: Vec<(u64, u64, bool)> = (0..64).map(|c| (c, 1 << 28, true)).collect();
    let path = v1_file(
        dir.path(),
        "many.ra",
        vec![64, 1],
        vec![1, 1 << 28],
        1 << 28,
        &chunks,
    );
    assert!(std::fs::metadata(&path).unwrap().len() < 4 << 20);
    let c = read_capped(&path, "whole");
    assert_eq!(c.1, 64);
    check_bound("whole", c, 1 << 28);
}

/// A header claiming 2^26 chunks, none written: a whole read returns the zeros it asked for
/// without visiting what is not there, and its memory is the output's.
#[test]
fn millions_of_chunks_never_written_cost_only_their_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let path = v1_file(dir.path(), "sparse.ra", vec![1 << 26], vec![1], 1, &[]);
    let c = read_capped(&path, "whole");
    assert_eq!((c.0, c.1, c.2), (0, 1 << 26, 0));
}

/// An `ArrayWriter` of 2^50 one-byte chunks is refused before it allocates its index, naming
/// the setting.
#[test]
fn an_array_writer_of_2_50_chunks_is_refused_before_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let err = ArrayWriter::options()
        .array::<u8>(&[1 << 50])
        .storage(WriteOptions::new().codec(Codec::Lz4).chunks(vec![1]))
        .create(dir.path().join("huge.ra"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("chunks") && err.contains("at most"), "{err}");
    assert!(!dir.path().join("huge.ra").exists());
}
