//! `StoreArrayReader::read_subset_fields`: fields of records read from an object store. Where
//! each byte stream carries its CRC (records split in byte streams, by default) the reader
//! fetches each large chunk's block table, each block's head and then only the asked fields'
//! streams (doc/chunked.md 5.3), each checked; the fields equal those of the whole records;
//! a damaged stream it reads is an error naming it, one it does not read changes nothing; a
//! section without stream CRCs is read by whole blocks, one not stored as byte planes answers
//! `None`.
#![cfg(feature = "object_store")]
#![allow(clippy::single_range_in_vec_init)] // one-dim boxes are what they say

use std::ops::Range;
use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rawarray_serde::codec::{self, Codec};
use rawarray_serde::section::Section;
use rawarray_serde::{ElType, Header, StoreArrayReader, WriteOptions};

/// 40-byte records: a step (u64 at 0, 64 records a step), a smooth f64 (8), an id (u32 at 16),
/// noise (20..32) and a slowly growing f64 (32).
const ELBYTE: usize = 40;
const N: u64 = 60_000;

fn records(n: u64) -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = Vec::with_capacity(n as usize * ELBYTE);
    for i in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.extend_from_slice(&(i / 64).to_le_bytes());
        out.extend_from_slice(&((i as f64) * 0.001).sin().to_le_bytes());
        out.extend_from_slice(&((i % 64) as u32).to_le_bytes());
        out.extend_from_slice(&s.to_le_bytes()[..8]);
        out.extend_from_slice(&(s >> 17).to_le_bytes()[..4]);
        out.extend_from_slice(&(i as f64 * 1e-3 + 7.0).to_le_bytes());
    }
    out
}

/// The bytes of field `(o, w)` of each record of `raw` in `r`.
fn field_of(raw: &[u8], r: &Range<u64>, (o, w): (usize, usize)) -> Vec<u8> {
    raw.chunks_exact(ELBYTE)
        .skip(r.start as usize)
        .take((r.end - r.start) as usize)
        .flat_map(|e| e[o..o + w].to_vec())
        .collect()
}

/// The object's bytes: header and chunked section, chunks of `chunk` records.
fn object_of(raw: &[u8], chunk: u64, opts: WriteOptions) -> (Header, Vec<u8>) {
    let n = (raw.len() / ELBYTE) as u64;
    let h = Header::new(ElType::User, ELBYTE as u64, vec![n]).unwrap();
    let (h, section) = codec::encode(&h, raw, &opts.chunks(vec![chunk])).unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&section);
    (h, file)
}

/// `N` records in chunks of 8192 (the last one short): each chunk under 1 MiB stored.
fn object(raw: &[u8], opts: WriteOptions) -> (Header, Vec<u8>) {
    object_of(raw, 8192, opts)
}

async fn reader(bytes: Vec<u8>) -> StoreArrayReader {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = StorePath::from("runs/bodies.ra");
    store.put(&path, PutPayload::from(bytes)).await.unwrap();
    StoreArrayReader::open(store, path).await.unwrap()
}

/// Bytes a read fetched, on a reader that has read nothing else since open.
async fn fetched<T>(r: &StoreArrayReader, read: impl std::future::Future<Output = T>) -> (T, u64) {
    let before = r.io_stats().bytes;
    let got = read.await;
    (got, r.io_stats().bytes - before)
}

/// Where each stream of chunk `n`'s only block lies in `file`, and where its head starts:
/// the chunk starts with its block table (one entry, 12 bytes), then the payload.
fn streams_of_chunk(h: &Header, file: &[u8], n: usize) -> (usize, Vec<Range<usize>>) {
    let s = Section::open(h, file).unwrap();
    let e = s.chunk_map().unwrap().index().entries()[n];
    streams_in(file, h.encoded_len() + e.offset as usize + 12)
}

/// Where each stream of the payload at `payload_at` lies: its head of `ELBYTE` lengths and
/// `ELBYTE` CRCs (doc/chunked.md 5.3), then the streams in order.
fn streams_in(file: &[u8], payload_at: usize) -> (usize, Vec<Range<usize>>) {
    let word = |j: usize| {
        let at = payload_at + 4 * j;
        u32::from_le_bytes(file[at..at + 4].try_into().unwrap()) as usize
    };
    let mut at = payload_at + 8 * ELBYTE;
    let streams = (0..ELBYTE)
        .map(|j| {
            let r = at..at + word(j);
            at = r.end;
            r
        })
        .collect();
    (payload_at, streams)
}

#[tokio::test]
async fn fields_of_records_fetch_only_their_streams() {
    // Two chunks of 100,000 records (4 MB raw each, over 1.5 MiB stored): the step's streams
    // (0-7) and the growing f64's (32-39) are read; between them lie more than a mebibyte of
    // noise and smooth f64 streams, which a read of whole records fetches too.
    let raw = records(200_000);
    let (h, file) = object_of(&raw, 100_000, WriteOptions::chunked());
    let s = Section::open(&h, &file[..]).unwrap();
    let config = s.chunk_map().unwrap().config().clone();
    assert!(
        config.split && config.stream_crcs,
        "the defaults for records: {config:?}"
    );
    let stored = s.chunk_map().unwrap().index().entries()[0].len;
    assert!(stored > 3 << 19, "{stored}");
    let everything = [0..200_000];
    let fields = [(0usize, 8usize), (32, 8)];
    let r = reader(file.clone()).await;
    let (cols, got) = fetched(&r, r.read_subset_fields(&everything, &fields)).await;
    let cols = cols.unwrap().unwrap();
    for (col, &f) in cols.iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, &everything[0], f), "field {f:?}");
    }
    let requests = r.io_stats().reads;
    let r = reader(file.clone()).await;
    let (whole, all) = fetched(&r, r.read_subset_bytes(&everything)).await;
    assert_eq!(whole.unwrap().1, raw);
    println!("fields fetched {got} bytes in {requests} requests, whole records {all}");
    // At most what it must fetch (both chunks' block tables, each block's head and the two
    // fields' streams, some of which came with the open's first request) and the gaps under
    // 64 KiB that let runs share a request.
    let map = s.chunk_map().unwrap();
    let (mut wanted, mut blocks) = (0, 0);
    for n in 0..2 {
        let e = map.index().entries()[n];
        let g = map.block_grid(n as u64).unwrap();
        let tlen = g.table_len().unwrap();
        blocks += g.count();
        wanted += tlen + g.count() * 8 * ELBYTE as u64;
        let chunk_at = h.encoded_len() + e.offset as usize;
        let mut start = tlen as usize;
        for b in 0..g.count() as usize {
            let at = chunk_at + 12 * b;
            let end = u64::from_le_bytes(file[at..at + 8].try_into().unwrap()) as usize;
            let (_, streams) = streams_in(&file, chunk_at + start);
            wanted += (0..8)
                .chain(32..40)
                .map(|j| streams[j].len() as u64)
                .sum::<u64>();
            // A block's end counts from the payload, after the table.
            start = tlen as usize + end;
        }
    }
    assert!(
        got > 0 && got <= wanted + 64 * 1024 * (2 + 2 * blocks) && 4 * got < all,
        "fields fetched {got} bytes (tables, heads and their streams: {wanted}), the whole \
         records {all}"
    );
    assert!(
        requests <= 2 + 3 * blocks,
        "{requests} requests for {blocks} blocks"
    );

    // A bit flipped in a stream the fields do not read changes nothing; in one they read,
    // an error naming the stream; a length in a head changed, an error before its streams are
    // fetched (the lengths no longer add up).
    let e = map.index().entries()[1];
    let g = map.block_grid(1).unwrap();
    let payload_at = h.encoded_len() + e.offset as usize + g.table_len().unwrap() as usize;
    let (_, streams) = streams_in(&file, payload_at);
    let mut bad = file.clone();
    bad[streams[9].start + streams[9].len() / 2] ^= 0x10;
    let r = reader(bad).await;
    let cols = r
        .read_subset_fields(&everything, &fields)
        .await
        .unwrap()
        .unwrap();
    for (col, &f) in cols.iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, &everything[0], f), "field {f:?}");
    }
    let err = r
        .read_subset_fields(&everything, &[(8, 8)])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("split stream 9: CRC-32"), "{err}");
    let mut bad = file.clone();
    bad[payload_at + 4 * 3] ^= 1;
    let r = reader(bad).await;
    let err = r
        .read_subset_fields(&everything, &fields)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("add up to"), "{err}");

    // Blocks of 25,000 records (1 MB raw): the streams the fields skip in each block span a
    // few hundred KB, under the 1 MiB gap a read of whole records lets runs share a request
    // across, over the 64 KiB a read of fields does: they are not fetched.
    let opts = WriteOptions::chunked().blocks(vec![25_000]);
    let (h, file) = object_of(&raw, 100_000, opts);
    let s = Section::open(&h, &file[..]).unwrap();
    assert_eq!(s.chunk_map().unwrap().block_grid(0).unwrap().count(), 4);
    let r = reader(file.clone()).await;
    let (cols, got) = fetched(&r, r.read_subset_fields(&everything, &fields)).await;
    for (col, &f) in cols.unwrap().unwrap().iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, &everything[0], f), "field {f:?}");
    }
    let r = reader(file).await;
    let (_, all) = fetched(&r, r.read_subset_bytes(&everything)).await;
    println!("blocks of 25,000: fields fetched {got} bytes, whole records {all}");
    assert!(
        4 * got < all,
        "fields fetched {got} bytes, the whole records {all}"
    );
}

#[tokio::test]
async fn fields_of_records_in_small_chunks_equal_the_records() {
    // Chunks under 1 MiB stored are fetched whole, as a read of whole records fetches them;
    // only the fields' planes are decoded.
    let raw = records(N);
    let (_, file) = object(&raw, WriteOptions::chunked());
    let everything = [0..N];
    let fields = [(0usize, 8usize), (32, 8)];
    let r = reader(file.clone()).await;
    let (cols, got) = fetched(&r, r.read_subset_fields(&everything, &fields)).await;
    for (col, &f) in cols.unwrap().unwrap().iter().zip(&fields) {
        assert_eq!(col, &field_of(&raw, &everything[0], f), "field {f:?}");
    }
    let r = reader(file.clone()).await;
    let (_, all) = fetched(&r, r.read_subset_bytes(&everything)).await;
    assert_eq!(got, all, "the same requests");

    // Boxes that cross chunks, one record, the last (short) chunk; fields in any order, a
    // field twice, one byte of a field.
    let r = reader(file.clone()).await;
    for b in [0..1, 8000..8400, 16_383..16_385, 59_990..N, 123..40_123] {
        for asked in [
            vec![(16usize, 4usize), (0, 8)],
            vec![(8, 8), (8, 8)],
            vec![(33, 1)],
            vec![(20, 12), (0, 2)],
        ] {
            let cols = r
                .read_subset_fields(std::slice::from_ref(&b), &asked)
                .await
                .unwrap()
                .unwrap();
            for (col, &f) in cols.iter().zip(&asked) {
                assert_eq!(col, &field_of(&raw, &b, f), "{b:?} {f:?}");
            }
        }
    }
    // Fields outside the record are an error naming them, before any request.
    let before = r.io_stats();
    let err = r
        .read_subset_fields(&everything, &[(36, 8)])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("offset 36"), "{err}");
    assert_eq!(r.io_stats(), before);
}

#[tokio::test]
async fn a_damaged_stream_is_an_error_only_for_the_fields_that_read_it() {
    let raw = records(N);
    let (h, file) = object(&raw, WriteOptions::chunked());
    let (_, streams) = streams_of_chunk(&h, &file, 2);
    // A bit of stream 9 (the smooth f64's second byte) of chunk 2 flipped.
    let mut bad = file.clone();
    bad[streams[9].start + streams[9].len() / 2] ^= 0x10;
    let chunk2 = [8192 * 2..8192 * 3];
    let r = reader(bad).await;
    let cols = r
        .read_subset_fields(&chunk2, &[(0, 8), (32, 8)])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cols[0], field_of(&raw, &chunk2[0], (0, 8)));
    assert_eq!(cols[1], field_of(&raw, &chunk2[0], (32, 8)));
    let err = r
        .read_subset_fields(&chunk2, &[(8, 8)])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("split stream 9: CRC-32"), "{err}");
    let err = r.read_subset_bytes(&chunk2).await.unwrap_err().to_string();
    assert!(
        err.to_lowercase().contains("crc"),
        "a whole read checks the block: {err}"
    );

    // A length in the head changed: the lengths no longer add up, an error.
    let (payload_at, _) = streams_of_chunk(&h, &file, 1);
    let mut bad = file.clone();
    bad[payload_at + 4 * 3] ^= 1;
    let r = reader(bad).await;
    let err = r
        .read_subset_fields(&[8192..8200], &[(0, 8)])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("add up to"), "{err}");
}

#[tokio::test]
async fn without_stream_crcs_whole_blocks_and_without_planes_none() {
    let raw = records(N);
    let b = [5000..20_000];
    // Byte streams without their CRCs: the blocks the box crosses, whole, each checked.
    let (_, file) = object(&raw, WriteOptions::chunked().stream_crcs(false));
    let r = reader(file).await;
    let cols = r.read_subset_fields(&b, &[(16, 4)]).await.unwrap().unwrap();
    assert_eq!(cols[0], field_of(&raw, &b[0], (16, 4)));
    // After a whole read of chunks over 1 MiB stored: a read of fields of the same box reads
    // the stored blocks that read fetched (kept among the reader's pieces), with no request
    // of its own, and gives the records' fields.
    let raw = records(200_000);
    let (h, file) = object_of(&raw, 100_000, WriteOptions::chunked().stream_crcs(false));
    let s = Section::open(&h, &file[..]).unwrap();
    assert!(s.chunk_map().unwrap().index().entries()[0].len > 1 << 20);
    let r = reader(file).await;
    assert_eq!(
        r.read_subset_bytes(&b).await.unwrap().1,
        field_of(&raw, &b[0], (0, ELBYTE))
    );
    let before = r.io_stats();
    let cols = r
        .read_subset_fields(&b, &[(16, 4), (0, 8)])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.io_stats(), before);
    assert_eq!(cols[0], field_of(&raw, &b[0], (16, 4)));
    assert_eq!(cols[1], field_of(&raw, &b[0], (0, 8)));
    // One stream a block (and lz4 in one stream): not stored as byte planes.
    for opts in [
        WriteOptions::chunked().split(false),
        WriteOptions::chunked().codec(Codec::Lz4),
    ] {
        let (_, file) = object(&raw, opts);
        let r = reader(file).await;
        let before = r.io_stats();
        assert!(r
            .read_subset_fields(&b, &[(16, 4)])
            .await
            .unwrap()
            .is_none());
        assert_eq!(r.io_stats(), before, "no request for a read it cannot make");
    }
    // A plain object: None as well.
    let h = Header::new(
        ElType::User,
        ELBYTE as u64,
        vec![(raw.len() / ELBYTE) as u64],
    )
    .unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&raw);
    let r = reader(file).await;
    assert!(r
        .read_subset_fields(&b, &[(16, 4)])
        .await
        .unwrap()
        .is_none());
}

// One byte of a record object flipped, anywhere in its first chunk (most often in the block
// table and heads a fields read fetches first, or the header, config and index): a read of
// two fields through the store is the fields of the records written, or an error; never a
// panic, never other values, never a read that does not end.
#[tokio::test]
async fn a_flipped_byte_gives_the_fields_or_an_error() {
    let raw = records(120_000);
    let (h, file) = object_of(&raw, 60_000, WriteOptions::chunked());
    let s = Section::open(&h, &file[..]).unwrap();
    let e = s.chunk_map().unwrap().index().entries()[0];
    assert!(e.len > 1 << 20, "a chunk read in three rounds: {}", e.len);
    let chunk_at = h.encoded_len() + e.offset as usize;
    let everything = [0..120_000];
    let fields = [(0usize, 8usize), (32, 8)];
    let want: Vec<Vec<u8>> = fields
        .iter()
        .map(|&f| field_of(&raw, &everything[0], f))
        .collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let (mut same, mut errors) = (0, 0);
    for k in 0..160 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = match k % 4 {
            // The header, config and index.
            0 => (x as usize) % chunk_at,
            // The first chunk's block table and its first block's head.
            1 | 2 => chunk_at + (x as usize) % 2048,
            // Anywhere in the chunk.
            _ => chunk_at + (x as usize) % e.len as usize,
        };
        let mut bad = file.clone();
        bad[at] ^= 1 << (x >> 60 & 7);
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = StorePath::from("bad.ra");
        store.put(&path, PutPayload::from(bad)).await.unwrap();
        let Ok(r) = StoreArrayReader::open(store, path).await else {
            errors += 1;
            continue;
        };
        match r.read_subset_fields(&everything, &fields).await {
            Ok(Some(cols)) => {
                assert_eq!(cols, want, "byte {at} flipped: other values");
                same += 1;
            }
            Ok(None) => panic!("byte {at} flipped: a split file no longer reads fields alone"),
            Err(_) => errors += 1,
        }
    }
    // Both happen: flips found (header, index, tables, heads, the fields' streams) and flips
    // that change nothing these fields read.
    assert!(
        same > 0 && errors > 0,
        "{same} reads equal, {errors} errors"
    );
}
