//! `StoreArrayReader` over a chunked object: header, config and index in at most two
//! requests, then only the stored bytes of the chunks a block intersects, coalesced.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]
#![cfg(feature = "object_store")]

use std::ops::Range;
use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use proptest::prelude::*;
use rawarray_serde::codec::{self, ChunkOptions, Codec, Layout, SectionReader, Shuffle};
use rawarray_serde::{ElType, ErrorKind, Header, RawArray, StoreArrayReader};

const DIMS: [u64; 3] = [64, 64, 32];
const CHUNK: [u64; 3] = [16, 16, 8];

/// Floats that compress a little: a smooth field with noise in the low mantissa bits.
fn field() -> Vec<f32> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..DIMS.iter().product::<u64>())
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (i as f32 * 0.001).sin() + (x % 1000) as f32 * 1e-4
        })
        .collect()
}

/// The object's bytes (header and section, no trailer), its header and its layout.
fn object(
    dims: &[u64],
    chunk: &[u64],
    raw: &[u8],
    eltype: ElType,
    elbyte: u64,
) -> (Vec<u8>, Layout) {
    let header = Header::new(eltype, elbyte, dims.to_vec()).unwrap();
    let opts = ChunkOptions::new()
        .codec(Codec::Zstd)
        .shuffle(Shuffle::Byte)
        .chunks(chunk.to_vec());
    let (h, section) = codec::encode(&header, raw, &opts).unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&section);
    let layout = SectionReader::open(&h, &file[..])
        .unwrap()
        .chunk_map()
        .unwrap()
        .clone();
    (file, layout)
}

async fn put(bytes: Vec<u8>) -> (Arc<dyn ObjectStore>, StorePath) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = StorePath::from("data/field.ra");
    store.put(&path, PutPayload::from(bytes)).await.unwrap();
    (store, path)
}

/// The value at `(i, j, k)` of the column-major field.
fn at(v: &[f32], i: u64, j: u64, k: u64) -> f32 {
    v[(i + DIMS[0] * (j + DIMS[1] * k)) as usize]
}

fn stored_len(layout: &Layout, n: u64) -> u64 {
    layout.chunk_range(n).map_or(0, |r| r.end - r.start)
}

#[tokio::test]
async fn one_element_and_one_plane_fetch_only_their_chunks() {
    let v = field();
    let raw: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let (file, layout) = object(&DIMS, &CHUNK, &raw, ElType::Float, 4);
    assert!(
        file.len() > 256 << 10,
        "the chunks lie past the first 64 KiB"
    );
    let (store, path) = put(file).await;
    let r = StoreArrayReader::open(store, path).await.unwrap();
    // Header, config and index: the first request holds them all.
    let open = r.io_stats();
    assert_eq!(open.reads, 1);
    assert_eq!(open.bytes, 64 << 10);

    // One element: one request, for its chunk's stored bytes exactly.
    let one: RawArray<f32> = r.read_subset(&[37..38, 5..6, 20..21]).await.unwrap();
    assert_eq!(one.as_slice(), &[at(&v, 37, 5, 20)]);
    let n = 2 + 4 * (4 * 2); // chunk (2, 0, 2)
    let s = r.io_stats();
    assert_eq!(s.reads - open.reads, 1);
    assert_eq!(s.bytes - open.bytes, stored_len(&layout, n));

    // The plane k = 9: the 16 chunks at chunk index 1 along the last dim, stored one after
    // the other, so one request of exactly their bytes.
    let plane: RawArray<f32> = r.read_subset(&[0..64, 0..64, 9..10]).await.unwrap();
    for (idx, x) in plane.as_slice().iter().enumerate() {
        let (i, j) = (idx as u64 % 64, idx as u64 / 64);
        assert_eq!(*x, at(&v, i, j, 9));
    }
    let plane_chunks: u64 = (16..32).map(|n| stored_len(&layout, n)).sum();
    let t = r.io_stats();
    assert_eq!(t.reads - s.reads, 1);
    assert_eq!(t.bytes - s.bytes, plane_chunks);

    // The plane i = 9 across the first dim: 16 chunks, each three chunks apart (far less
    // than 1 MiB): one request spanning those not fetched before (the 4 of them in the plane
    // k = 9 are in the reader's shared cache), the bytes between them included.
    let side: RawArray<f32> = r.read_subset(&[9..10, 0..64, 0..32]).await.unwrap();
    for (idx, x) in side.as_slice().iter().enumerate() {
        let (j, k) = (idx as u64 % 64, idx as u64 / 64);
        assert_eq!(*x, at(&v, 9, j, k));
    }
    let side_chunks: Vec<u64> = (0..64).step_by(4).collect();
    let fresh: u64 = side_chunks
        .iter()
        .filter(|n| !(16..32).contains(*n))
        .map(|&n| stored_len(&layout, n))
        .sum();
    let first = layout.chunk_range(0).unwrap().start;
    let last = layout.chunk_range(60).unwrap().end;
    let u = r.io_stats();
    assert_eq!(u.reads - t.reads, 1);
    assert!(
        u.bytes - t.bytes >= fresh && u.bytes - t.bytes < last - first,
        "{} bytes for {fresh} bytes of chunks not held, in a span of {}",
        u.bytes - t.bytes,
        last - first
    );

    // The same plane again: every byte is held (decoded blocks and fetched pieces): no request.
    let again: RawArray<f32> = r.read_subset(&[9..10, 0..64, 0..32]).await.unwrap();
    assert_eq!(again.as_slice(), side.as_slice());
    assert_eq!(r.io_stats(), u);

    // The whole array equals what was written.
    let all: RawArray<f32> = r.read_all().await.unwrap();
    assert_eq!(all.as_slice(), &v[..]);
}

#[tokio::test]
async fn an_index_past_the_first_64_kib_costs_one_more_request() {
    // 5000 chunks of one byte: an index of 120,000 bytes.
    let raw: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let (file, layout) = object(&[5000], &[1], &raw, ElType::Uint, 1);
    let (store, path) = put(file).await;
    let r = StoreArrayReader::open(store, path).await.unwrap();
    assert_eq!(r.io_stats().reads, 2);
    let before = r.io_stats();
    let got: RawArray<u8> = r
        .read_subset(std::slice::from_ref(&(4321..4324)))
        .await
        .unwrap();
    assert_eq!(got.as_slice(), &raw[4321..4324]);
    let after = r.io_stats();
    assert_eq!(after.reads - before.reads, 1);
    let expect: u64 = (4321..4324).map(|n| stored_len(&layout, n)).sum();
    assert_eq!(after.bytes - before.bytes, expect);
}

#[tokio::test]
async fn a_flipped_bit_in_a_fetched_chunk_names_it() {
    let v = field();
    let raw: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let (mut file, layout) = object(&DIMS, &CHUNK, &raw, ElType::Float, 4);
    let h = Header::decode_any(&file).unwrap();
    let chunk: Range<u64> = layout.chunk_range(5).unwrap();
    file[h.encoded_len() + chunk.start as usize + 40] ^= 4;
    let (store, path) = put(file).await;
    let r = StoreArrayReader::open(store, path).await.unwrap();
    let err = r
        .read_subset::<f32>(&[20..21, 20..21, 0..1])
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ChunkCorrupt { chunk: 5, .. }),
        "{err}"
    );
    // Another chunk reads.
    let ok: RawArray<f32> = r.read_subset(&[0..1, 0..1, 0..1]).await.unwrap();
    assert_eq!(ok.as_slice(), &[v[0]]);
}

/// The subset cut from a full column-major buffer, element by element.
fn cut(full: &[u8], dims: &[u64], elbyte: u64, ranges: &[Range<u64>]) -> Vec<u8> {
    let n: u64 = ranges.iter().map(|r| r.end - r.start).product();
    let mut out = Vec::new();
    for i in 0..n {
        let (mut rest, mut off, mut stride) = (i, 0u64, 1u64);
        for (k, r) in ranges.iter().enumerate() {
            let len = r.end - r.start;
            off += (r.start + rest % len) * stride;
            rest /= len;
            stride *= dims[k];
        }
        let o = (off * elbyte) as usize;
        out.extend_from_slice(&full[o..o + elbyte as usize]);
    }
    out
}

type Case = (Vec<u64>, Vec<u64>, Vec<(u64, u64)>, u8);

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(1u64..12, 1..=3).prop_flat_map(|d| {
        (
            Just(d.clone()),
            d.iter().map(|&n| 1..n + 2).collect::<Vec<_>>(),
            d.iter().map(|&n| (0..n, 0..n)).collect::<Vec<_>>(),
            any::<u8>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn store_subsets_equal_the_cut_and_fetch_only_touched_chunks((dims, chunk, sub, seed) in case()) {
        let n: u64 = dims.iter().product();
        let raw: Vec<u8> = (0..n * 2).map(|i| (i / 7) as u8 ^ seed).collect();
        let (file, layout) = object(&dims, &chunk, &raw, ElType::Int, 2);
        let ranges: Vec<Range<u64>> = sub.iter().map(|&(a, b)| a.min(b)..a.max(b) + 1).collect();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (got, requests, bytes) = rt.block_on(async {
            let (store, path) = put(file).await;
            let r = StoreArrayReader::open(store, path).await.unwrap();
            let before = r.io_stats();
            let (_, got) = r.read_subset_bytes(&ranges).await.unwrap();
            let after = r.io_stats();
            (got, after.reads - before.reads, after.bytes - before.bytes)
        });
        prop_assert_eq!(&got, &cut(&raw, &dims, 2, &ranges));
        let touched: Vec<u64> = layout.grid().touched(&ranges).collect();
        prop_assert!(requests <= touched.len() as u64);
        let stored: u64 = touched.iter().map(|&c| stored_len(&layout, c)).sum();
        let (lo, hi) = touched
            .iter()
            .filter_map(|&c| layout.chunk_range(c))
            .fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.start), hi.max(r.end)));
        // At most the touched chunks' bytes and the gaps between them (none when the first
        // 64 KiB fetched at open held them).
        prop_assert!(bytes <= hi.saturating_sub(lo).max(stored));
    }
}

/// A chunk of many blocks larger than 1 MiB stored: one element costs its block (one request
/// of about 64 KiB: the block table came with the first 64 KiB at open), not the chunk; a neighbouring element of the same block
/// costs nothing more, and one of another block only that block.
#[tokio::test]
async fn an_element_of_a_large_chunk_fetches_its_block_table_and_one_block() {
    let dims = [256u64, 256, 16];
    let n: u64 = dims.iter().product();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    // Noise of 4 bits a byte: each block compresses about 2:1 (not stored raw, which would
    // need the whole chunk for its CRC), so the chunk is about 2 MiB stored.
    let raw: Vec<u8> = (0..n * 4)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 16) as u8
        })
        .collect();
    let header = Header::new(ElType::Float, 4, dims.to_vec()).unwrap();
    let opts = rawarray_serde::WriteOptions::new()
        .codec(Codec::Zstd)
        .chunks(dims.to_vec())
        .blocks(vec![64, 64, 4]);
    let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&section);
    let layout = SectionReader::open(&h, &file[..])
        .unwrap()
        .chunk_map()
        .unwrap()
        .clone();
    let chunk = stored_len(&layout, 0);
    assert!(chunk > 3 << 19, "{chunk}");
    let (store, path) = put(file).await;
    let r = StoreArrayReader::open(store, path).await.unwrap();
    let open = r.io_stats();

    let value = |i: u64, j: u64, k: u64| {
        let at = ((i + 256 * (j + 256 * k)) * 4) as usize;
        f32::from_le_bytes(raw[at..at + 4].try_into().unwrap())
    };
    let one: RawArray<f32> = r.read_subset(&[100..101, 7..8, 5..6]).await.unwrap();
    assert_eq!(one.as_slice()[0].to_bits(), value(100, 7, 5).to_bits());
    let s = r.io_stats();
    assert!(layout.chunk_range(0).unwrap().start + 64 * 4 * 16 < 64 << 10);
    assert_eq!(s.reads - open.reads, 1, "the block alone");
    // 64 x 64 x 4 floats a block: 64 KiB raw, about half that stored.
    assert!(
        s.bytes - open.bytes < 200 << 10,
        "{} bytes",
        s.bytes - open.bytes
    );

    let near: RawArray<f32> = r.read_subset(&[101..103, 8..9, 6..7]).await.unwrap();
    assert_eq!(near.as_slice()[1].to_bits(), value(102, 8, 6).to_bits());
    assert_eq!(r.io_stats(), s, "the same block: nothing fetched");

    let other: RawArray<f32> = r.read_subset(&[200..201, 7..8, 5..6]).await.unwrap();
    assert_eq!(other.as_slice()[0].to_bits(), value(200, 7, 5).to_bits());
    let t = r.io_stats();
    assert_eq!(
        t.reads - s.reads,
        1,
        "another block: one request, the table is held"
    );

    let all: RawArray<f32> = r.read_all().await.unwrap();
    let bits: Vec<u8> = all
        .as_slice()
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert!(bits == raw);
}
