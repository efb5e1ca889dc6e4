//! Fields decoded alone (`Section::read_box_fields`, `ArrayReader::read_subset_fields`): a
//! section whose blocks are byte planes stored as byte streams gives each field's bytes of
//! every element of a box equal to those bytes of the whole elements `read_box` gives, for
//! pipelines with and without `bytedelta`, edge chunks and blocks, blocks gathered from their
//! chunk, chunks stored raw, and boxes anywhere; a section that is not stored so answers
//! `None`; a damaged block is an error, never other bytes.
#![allow(clippy::single_range_in_vec_init)] // one-dim boxes are what they say
use proptest::prelude::*;
use rawarray_serde::codec::{self, Codec, Filter};
use rawarray_serde::section::Section;
use rawarray_serde::{ElType, Header, WriteOptions};
use std::ops::Range;

/// 23-byte elements: a counter (u64 at 0), a smooth f64 (8), a small i16 (16), three bytes of
/// noise (18), a constant u16 (21).
const ELBYTE: usize = 23;
const FIELDS: [(usize, usize); 5] = [(0, 8), (8, 8), (16, 2), (18, 3), (21, 2)];

fn elements(n: usize, seed: u64, noisy: bool) -> Vec<u8> {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut out = Vec::with_capacity(n * ELBYTE);
    for i in 0..n {
        let mut e = [0u8; ELBYTE];
        e[0..8].copy_from_slice(&(i as u64).to_le_bytes());
        e[8..16].copy_from_slice(&((i as f64) * 0.01).sin().to_le_bytes());
        e[16..18].copy_from_slice(&((i % 97) as i16 - 40).to_le_bytes());
        e[18..21].copy_from_slice(&next().to_le_bytes()[..3]);
        e[21..23].copy_from_slice(&7u16.to_le_bytes());
        if noisy {
            // Every byte noise: chunks that do not shrink are stored raw.
            e.iter_mut().for_each(|b| *b = next() as u8);
        }
        out.extend_from_slice(&e);
    }
    out
}

/// The bytes of field `(o, w)` of each element of `whole` (elements of `ELBYTE` bytes).
fn field_of(whole: &[u8], (o, w): (usize, usize)) -> Vec<u8> {
    whole
        .chunks_exact(ELBYTE)
        .flat_map(|e| e[o..o + w].to_vec())
        .collect()
}

fn file_of(dims: &[u64], raw: &[u8], opts: &WriteOptions) -> (Header, Vec<u8>) {
    let h = Header::new(ElType::User, ELBYTE as u64, dims.to_vec()).unwrap();
    let (h, section) = codec::encode(&h, raw, opts).unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&section);
    (h, file)
}

fn check(dims: &[u64], opts: &WriteOptions, noisy: bool, boxes: &[Vec<Range<u64>>]) {
    let n: u64 = dims.iter().product();
    let raw = elements(n as usize, n ^ 0x9e37, noisy);
    let (h, file) = file_of(dims, &raw, opts);
    let s = Section::open(&h, &file[..]).unwrap();
    for ranges in boxes {
        let count: u64 = ranges.iter().map(|r| r.end - r.start).product();
        let mut whole = vec![0u8; count as usize * ELBYTE];
        s.read_box(ranges, &mut whole).unwrap();
        // Fields alone, in any order, a field twice, and one field alone.
        let asked: Vec<(usize, usize)> = vec![
            FIELDS[4], FIELDS[0], FIELDS[3], FIELDS[1], FIELDS[2], FIELDS[0],
        ];
        let cols = s
            .read_box_fields(ranges, &asked)
            .unwrap()
            .expect("a split file decodes fields alone");
        for (col, &f) in cols.iter().zip(&asked) {
            assert_eq!(
                col,
                &field_of(&whole, f),
                "dims {dims:?} box {ranges:?} field {f:?}"
            );
        }
        let one = s.read_box_fields(ranges, &[(18, 3)]).unwrap().unwrap();
        assert_eq!(one[0], field_of(&whole, (18, 3)));
    }
}

fn split_opts(filters: Vec<Filter>) -> WriteOptions {
    WriteOptions::chunked()
        .codec(Codec::Zstd)
        .filters(filters)
        .split(true)
}

#[test]
fn fields_equal_those_of_whole_elements() {
    let dims = [13u64, 40];
    let boxes = vec![
        vec![0..13, 0..40],
        vec![3..9, 5..6],
        vec![12..13, 17..39],
        vec![0..1, 0..1],
        vec![4..4, 0..40],
    ];
    for filters in [
        vec![Filter::Shuffle],
        vec![Filter::Shuffle, Filter::ByteDelta],
        vec![Filter::Shuffle, Filter::ByteDelta, Filter::ByteDelta],
        // Masks: planes 0, 3, 18 and 20 twice (fields 18..21 cross selected and unselected
        // planes), plane 1 once more, the rest never.
        vec![
            Filter::Shuffle,
            Filter::ByteDeltaPlanes(1 | 1 << 3 | 1 << 18 | 1 << 20),
            Filter::ByteDeltaPlanes(1 | 1 << 3 | 1 << 18 | 1 << 20),
            Filter::ByteDeltaPlanes(2),
        ],
    ] {
        for noisy in [false, true] {
            // Edge chunks and edge blocks; blocks that are runs of their chunk and blocks that
            // are gathered from it.
            for (chunks, blocks) in [
                (vec![13, 8], vec![13, 3]),
                (vec![5, 7], vec![2, 3]),
                (vec![13, 40], vec![13, 40]),
            ] {
                for crcs in [true, false] {
                    let opts = split_opts(filters.clone())
                        .stream_crcs(crcs)
                        .chunks(chunks.clone())
                        .blocks(blocks.clone());
                    check(&dims, &opts, noisy, &boxes);
                }
            }
        }
    }
    // A record file's default chunks, one dim.
    check(
        &[5000],
        &split_opts(vec![Filter::Shuffle]),
        false,
        &[vec![0..5000], vec![1234..4321]],
    );
}

#[test]
fn sections_not_stored_as_planes_answer_none() {
    let raw = elements(300, 1, false);
    for opts in [
        WriteOptions::chunked().codec(Codec::Zstd).split(false),
        WriteOptions::chunked().codec(Codec::Lz4),
        WriteOptions::chunked()
            .codec(Codec::Zstd)
            .filters(vec![Filter::BitShuffle])
            .split(true),
    ] {
        let (h, file) = file_of(&[300], &raw, &opts);
        let s = Section::open(&h, &file[..]).unwrap();
        assert!(
            s.read_box_fields(&[0..300], &[(0, 8)]).unwrap().is_none(),
            "{opts:?}"
        );
    }
    // Plain elements are read whole.
    let h = Header::new(ElType::User, ELBYTE as u64, vec![300]).unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&raw);
    let s = Section::open(&h, &file[..]).unwrap();
    assert!(s.read_box_fields(&[0..300], &[(0, 8)]).unwrap().is_none());
    // A field outside the element is an error naming it.
    let (h, file) = file_of(&[300], &raw, &split_opts(vec![Filter::Shuffle]));
    let s = Section::open(&h, &file[..]).unwrap();
    let e = s
        .read_box_fields(&[0..300], &[(20, 4)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("offset 20") && e.contains("23 bytes"), "{e}");
    assert!(s.read_box_fields(&[0..300], &[(0, 0)]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// One byte of the data section flipped: the fields read are the file's, or an error.
    #[test]
    fn a_flipped_byte_gives_the_fields_or_an_error(at in 0.0f64..1.0, bit in 0u8..8, crcs: bool) {
        let raw = elements(4000, 3, false);
        let opts = split_opts(vec![Filter::Shuffle, Filter::ByteDelta])
            .stream_crcs(crcs)
            .chunks(vec![1000])
            .blocks(vec![250]);
        let (h, mut file) = file_of(&[4000], &raw, &opts);
        let start = h.encoded_len();
        let i = start + ((file.len() - start) as f64 * at) as usize;
        let i = i.min(file.len() - 1);
        file[i] ^= 1 << bit;
        let Ok(s) = Section::open(&h, &file[..]) else { return Ok(()) };
        let all = [(0usize, 8usize), (8, 8), (21, 2)];
        if let Ok(Some(cols)) = s.read_box_fields(&[0..4000], &all) {
            for (col, &f) in cols.iter().zip(&all) {
                prop_assert_eq!(col, &field_of(&raw, f), "byte {} bit {}", i, bit);
            }
        }
    }
}

/// Where each stream of a split payload with stream CRCs at `payload_at` in `file` lies, read
/// from its head as doc/chunked.md 5.3 lays it out (23 lengths, then 23 CRCs, then streams).
fn stream_ranges(file: &[u8], payload_at: usize) -> Vec<Range<usize>> {
    let word = |i: usize| {
        u32::from_le_bytes(
            file[payload_at + 4 * i..payload_at + 4 * i + 4]
                .try_into()
                .unwrap(),
        ) as usize
    };
    let mut at = payload_at + 8 * ELBYTE;
    (0..ELBYTE)
        .map(|j| {
            let r = at..at + word(j);
            at = r.end;
            r
        })
        .collect()
}

// With a CRC per stream, a read of some fields reads the head and their streams only (the
// I/O counters count fewer stored bytes than a whole read), a flipped bit in a stream it does
// not read leaves its fields right (while a whole read of the damaged block is an error), and
// a flipped bit in a stream it reads is an error naming the stream; the head's lengths and
// CRCs are where doc/chunked.md 5.3 puts them (CRC-32 of each stream's stored bytes).
#[test]
fn stream_crcs_let_a_read_of_fields_read_only_their_streams() {
    let n = 6000u64;
    let raw = elements(n as usize, 11, false);
    let opts = split_opts(vec![Filter::Shuffle])
        .chunks(vec![n])
        .blocks(vec![n]);
    let (h, file) = file_of(&[n], &raw, &opts);
    let s = Section::open(&h, &file[..]).unwrap();
    let config = s.chunk_map().unwrap().config().clone();
    assert!(config.split && config.stream_crcs, "{config:?}");
    // The one chunk is the last thing in the section; its block table (one entry of 12 bytes)
    // starts it, then the payload runs to the end of the file.
    let e = s.chunk_map().unwrap().index().entries()[0];
    let chunk_at = h.encoded_len() + e.offset as usize;
    let payload_at = chunk_at + 12;
    assert_eq!(chunk_at + e.len as usize, file.len());
    let streams = stream_ranges(&file, payload_at);
    assert_eq!(streams.last().unwrap().end, file.len(), "lengths add up");
    for (j, r) in streams.iter().enumerate() {
        let at = payload_at + 4 * (ELBYTE + j);
        let crc = u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        assert_eq!(crc, crc32fast::hash(&file[r.clone()]), "stream {j}");
    }

    let fields = [(0usize, 8usize), (21, 2)];
    let before = s.stats().compressed_bytes;
    let cols = s.read_box_fields(&[0..n], &fields).unwrap().unwrap();
    let read = s.stats().compressed_bytes - before;
    let wanted: usize = (0..8).chain(21..23).map(|j| streams[j].len()).sum();
    assert_eq!(
        read as usize,
        12 + 8 * ELBYTE + wanted,
        "the table, the head, ten streams"
    );
    assert!(read < e.len / 2, "{read} of {}", e.len);
    for (col, &f) in cols.iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, f));
    }

    // A bit flipped in stream 10 (a byte of the f64): not read by these fields.
    let mut bad = file.clone();
    bad[streams[10].start + streams[10].len() / 2] ^= 4;
    let s = Section::open(&h, &bad[..]).unwrap();
    let cols = s.read_box_fields(&[0..n], &fields).unwrap().unwrap();
    for (col, &f) in cols.iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, f), "the fields' streams are whole");
    }
    let mut whole = vec![0u8; raw.len()];
    let err = s.read_box(&[0..n], &mut whole).unwrap_err().to_string();
    assert!(err.to_lowercase().contains("crc"), "{err}");
    let err = s
        .read_box_fields(&[0..n], &[(8, 8)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("split stream 10: CRC-32"), "{err}");
    // A stream's length changed: the lengths no longer add up, an error.
    let mut bad = file.clone();
    bad[payload_at] ^= 1;
    let s = Section::open(&h, &bad[..]).unwrap();
    let err = s.read_box_fields(&[0..n], &fields).unwrap_err().to_string();
    assert!(err.contains("add up to"), "{err}");
    // Two lengths changed so that they still add up (stream 1 one byte longer, stream 2 one
    // shorter): the streams read from the moved bytes do not match their CRCs, so a read of
    // them is an error naming one; a read of fields whose streams did not move is right.
    let len_at = |j: usize| payload_at + 4 * j;
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let mut bad = file.clone();
    let (l1, l2) = (word(&bad, len_at(1)), word(&bad, len_at(2)));
    bad[len_at(1)..len_at(1) + 4].copy_from_slice(&(l1 + 1).to_le_bytes());
    bad[len_at(2)..len_at(2) + 4].copy_from_slice(&(l2 - 1).to_le_bytes());
    let s = Section::open(&h, &bad[..]).unwrap();
    let err = s
        .read_box_fields(&[0..n], &[(0, 8)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("CRC-32"), "{err}");
    let cols = s
        .read_box_fields(&[0..n], &[(8, 8), (21, 2)])
        .unwrap()
        .unwrap();
    assert_eq!(cols[0], field_of(&raw, (8, 8)));
    assert_eq!(cols[1], field_of(&raw, (21, 2)));
    // Stored lz4 the same way (every other test here is zstd).
    let lz = split_opts(vec![Filter::Shuffle])
        .codec(Codec::Lz4)
        .split(true)
        .stream_crcs(true)
        .chunks(vec![n])
        .blocks(vec![n]);
    let (h, file) = file_of(&[n], &raw, &lz);
    let s = Section::open(&h, &file[..]).unwrap();
    let cols = s.read_box_fields(&[0..n], &fields).unwrap().unwrap();
    for (col, &f) in cols.iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, f), "lz4");
    }
}

// A stream CRC that disagrees with its stream while every other checksum is right (the block's
// and the chunk's fixed up, as a writer with a bug would leave them): a whole read gives the
// elements, a read of that stream's field is an error naming the stream, and `Section::verify`
// finds it (as `ra verify` does: rawarray-cli's `stream_crcs_are_kept_by_slice_and_checked_by_verify`).
#[test]
fn verify_checks_each_stream_crc() {
    let n = 3000u64;
    let raw = elements(n as usize, 5, false);
    let opts = split_opts(vec![Filter::Shuffle])
        .statistics(false)
        .chunks(vec![n])
        .blocks(vec![n]);
    let (h, file) = file_of(&[n], &raw, &opts);
    let s = Section::open(&h, &file[..]).unwrap();
    assert_eq!(s.verify().unwrap(), 1);
    let map = s.chunk_map().unwrap();
    let e = map.index().entries()[0];
    let section = h.encoded_len();
    let chunk_at = section + e.offset as usize;
    let entry_at = section + map.config().encoded_len() as usize;
    let payload_at = chunk_at + 12;
    let mut bad = file.clone();
    // crc[3], then the block's CRC (table entry 0: end u64, crc u32), then the entry's.
    bad[payload_at + 4 * (ELBYTE + 3)] ^= 0x55;
    let block_crc = crc32fast::hash(&bad[payload_at..chunk_at + e.len as usize]);
    bad[chunk_at + 8..chunk_at + 12].copy_from_slice(&block_crc.to_le_bytes());
    let stored_crc = crc32fast::hash(&bad[chunk_at..chunk_at + e.len as usize]);
    bad[entry_at + 16..entry_at + 20].copy_from_slice(&stored_crc.to_le_bytes());
    let mut covered = bad[entry_at..entry_at + 24].to_vec();
    covered.extend_from_slice(&0u64.to_le_bytes());
    bad[entry_at + 24..entry_at + 28].copy_from_slice(&crc32fast::hash(&covered).to_le_bytes());
    let s = Section::open(&h, &bad[..]).unwrap();
    let mut whole = vec![0u8; raw.len()];
    s.read_box(&[0..n], &mut whole).unwrap();
    assert_eq!(whole, raw, "the block's bytes are the writer's");
    let err = s
        .read_box_fields(&[0..n], &[(0, 8)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("split stream 3: CRC-32"), "{err}");
    assert_eq!(
        s.read_box_fields(&[0..n], &[(8, 8)]).unwrap().unwrap()[0],
        field_of(&raw, (8, 8))
    );
    let err = s.verify().unwrap_err().to_string();
    assert!(err.contains("block 0: split stream 3: CRC-32"), "{err}");
}
