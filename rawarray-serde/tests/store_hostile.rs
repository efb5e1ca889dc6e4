//! `StoreArrayReader` against a server that cannot be trusted: bodies shorter than asked,
//! bodies that never end, an object replaced between open and read, and a store without
//! ETags. Each is an error naming the object and what is wrong, never a panic, never the new
//! object's bytes, and never more memory than the block asked for.
#![cfg(feature = "object_store")]

mod common;

#[global_allocator]
static ALLOC: common::counting::Counting = common::counting::Counting;

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::memory::InMemory;
use object_store::path::Path as StorePath;
use object_store::{
    GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use rawarray_serde::{DynArray, RawArray, StoreArrayReader, Trailer, WriteOptions};

/// Requests whose range starts at or after this are misanswered; `OFF` never.
const OFF: u64 = u64::MAX;

/// The most bytes an endless body may be read past the range asked before the test calls it
/// a reader that would read forever (and stops it, so the machine keeps its memory).
const ENDLESS_LIMIT: u64 = 8 << 20;

static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// An in-memory store that lies as told: short bodies (half the bytes asked), endless bodies
/// (the bytes asked, then zeros forever), preconditions ignored, ETags withheld.
#[derive(Debug)]
struct Hostile {
    inner: InMemory,
    short_from: AtomicU64,
    endless_from: AtomicU64,
    obeys_preconditions: AtomicBool,
    gives_etags: AtomicBool,
    requests: AtomicU64,
}

impl Hostile {
    fn new() -> Arc<Hostile> {
        Arc::new(Hostile {
            inner: InMemory::new(),
            short_from: AtomicU64::new(OFF),
            endless_from: AtomicU64::new(OFF),
            obeys_preconditions: AtomicBool::new(true),
            gives_etags: AtomicBool::new(true),
            requests: AtomicU64::new(0),
        })
    }
}

impl fmt::Display for Hostile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hostile({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for Hostile {
    async fn put_opts(
        &self,
        location: &StorePath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &StorePath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &StorePath,
        mut options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if !self.obeys_preconditions.load(Ordering::SeqCst) {
            options.if_match = None;
            options.if_unmodified_since = None;
            options.version = None;
        }
        let got = self.inner.get_opts(location, options).await?;
        let mut meta = got.meta.clone();
        if !self.gives_etags.load(Ordering::SeqCst) {
            meta.e_tag = None;
        }
        let (range, attributes) = (got.range.clone(), got.attributes.clone());
        let asked = range.end - range.start;
        let body = got.into_stream();
        let body: BoxStream<'static, object_store::Result<Bytes>> = if range.start
            >= self.short_from.load(Ordering::SeqCst)
        {
            // Half the bytes, however the store chunks them.
            let mut left = asked / 2;
            body.map(move |chunk| {
                chunk.map(|mut c| {
                    let n = left.min(c.len() as u64);
                    left -= n;
                    c.truncate(n as usize);
                    c
                })
            })
            .filter(|c| std::future::ready(!matches!(c, Ok(c) if c.is_empty())))
            .boxed()
        } else if range.start >= self.endless_from.load(Ordering::SeqCst) {
            let mut past = 0u64;
            let zeros = stream::repeat_with(move || {
                past += ZEROS.len() as u64;
                assert!(
                        past <= ENDLESS_LIMIT,
                        "the reader took {past} bytes past the {asked} it asked: an endless body would exhaust its memory"
                    );
                Ok(Bytes::from_static(&ZEROS))
            });
            body.chain(zeros).boxed()
        } else {
            body
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(body),
            meta,
            range,
            attributes,
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<StorePath>>,
    ) -> BoxStream<'static, object_store::Result<StorePath>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&StorePath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&StorePath>,
    ) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &StorePath,
        to: &StorePath,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// A `[64, 32, 40]` f32 array (320 KiB of data) with a trailer, as file bytes.
fn cube() -> (RawArray<f32>, Vec<u8>) {
    let dims = vec![64u64, 32, 40];
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims, (0..n).map(|i| i as f32).collect()).unwrap();
    let mut d = DynArray::from_typed(&a);
    d.set_trailer(&Trailer::new(serde_json::json!({"dt": 0.5})).unwrap());
    let bytes = d.to_bytes().unwrap();
    (a, bytes)
}

/// The blocks read in each test: one run (a plane), many runs (a slab of 4-byte runs 256
/// bytes apart, the reads that panicked in `get_ranges`), and the whole array.
fn blocks() -> [[Range<u64>; 3]; 3] {
    [
        [0..64, 0..32, 7..8],
        [5..6, 0..32, 0..40],
        [0..64, 0..32, 0..40],
    ]
}

/// The block `ranges` of `a`, cut out by hand.
fn cut(a: &RawArray<f32>, ranges: &[Range<u64>; 3]) -> Vec<f32> {
    let d = a.dims();
    let mut out = Vec::new();
    for k in ranges[2].clone() {
        for j in ranges[1].clone() {
            for i in ranges[0].clone() {
                out.push(a.as_slice()[(i + d[0] * (j + d[1] * k)) as usize]);
            }
        }
    }
    out
}

fn put(rt: &tokio::runtime::Runtime, store: &Hostile, path: &str, bytes: &[u8]) {
    rt.block_on(store.put(&StorePath::from(path), PutPayload::from(bytes.to_vec())))
        .unwrap();
}

fn assert_names(err: &rawarray_serde::Error, parts: &[&str]) {
    let msg = err.to_string();
    for part in parts {
        assert!(msg.contains(part), "{part:?} not in {msg:?}");
    }
}

#[test]
fn short_bodies_are_errors_naming_the_range() {
    let rt = runtime();
    let (_, bytes) = cube();
    let store = Hostile::new();
    put(&rt, &store, "short.ra", &bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "short.ra"))
        .unwrap();
    store.short_from.store(0, Ordering::SeqCst);
    let header_len = r.header().encoded_len() as u64;
    for block in blocks() {
        let err = rt.block_on(r.read_subset::<f32>(&block)).unwrap_err();
        let plan = r.plan(&block).unwrap();
        let first = plan.runs().next().unwrap();
        // The first request spans the block's runs: from the first run's start on.
        assert_names(
            &err,
            &[
                "object short.ra: the store answered",
                &format!("for bytes {}..", header_len + first.start),
            ],
        );
        let err = rt.block_on(r.read_subset_bytes(&block)).unwrap_err();
        assert_names(&err, &["object short.ra", "bytes"]);
    }
    // The one-run plane: exactly half of its 8192 bytes, and how many were asked.
    let err = rt.block_on(r.read_subset::<f32>(&blocks()[0])).unwrap_err();
    let start = header_len + 7 * 64 * 32 * 4;
    assert_eq!(
        err.to_string(),
        format!(
            "object short.ra: the store answered 4096 bytes for bytes {start}..{} (8192 asked)",
            start + 8192
        )
    );

    // At open: the header's request, and the trailer's.
    let err = rt
        .block_on(StoreArrayReader::open(store.clone(), "short.ra"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "object short.ra: the store answered 32768 bytes for bytes 0..65536 (65536 asked)"
    );
    store.short_from.store(1, Ordering::SeqCst);
    let err = rt
        .block_on(StoreArrayReader::open(store.clone(), "short.ra"))
        .unwrap_err();
    let len = bytes.len() as u64;
    assert_names(
        &err,
        &["object short.ra: the store answered", &format!("..{len} (")],
    );
}

#[test]
fn endless_bodies_are_errors_in_bounded_memory() {
    let rt = runtime();
    let (a, bytes) = cube();
    let store = Hostile::new();
    put(&rt, &store, "endless.ra", &bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "endless.ra"))
        .unwrap();
    store.endless_from.store(0, Ordering::SeqCst);
    for block in blocks() {
        let plan = r.plan(&block).unwrap();
        let peak = common::counting::peak(|| {
            let err = rt.block_on(r.read_subset::<f32>(&block)).unwrap_err();
            assert_names(&err, &["object endless.ra: the store answered more than"]);
        });
        // The block's own buffer, and a little: never the body past the range asked.
        assert!(
            peak as u64 <= plan.bytes() + (256 << 10),
            "{peak} bytes held for a block of {}",
            plan.bytes()
        );
    }
    // The bytes the reader kept are the ones it asked for; the body just went on.
    store.endless_from.store(OFF, Ordering::SeqCst);
    let all: RawArray<f32> = rt.block_on(r.read_all()).unwrap();
    assert_eq!(all, a);

    // At open: the first request, and the trailer's.
    for from in [0, 1] {
        store.endless_from.store(from, Ordering::SeqCst);
        let peak = common::counting::peak(|| {
            let err = rt
                .block_on(StoreArrayReader::open(store.clone(), "endless.ra"))
                .unwrap_err();
            assert_names(&err, &["object endless.ra: the store answered more than"]);
        });
        assert!(peak <= 512 << 10, "{peak} bytes held by open");
    }
}

/// Opens `a`'s file, replaces it by a file of the same size holding other values, and reads.
fn replaced(store: Arc<Hostile>) -> Vec<rawarray_serde::Error> {
    let rt = runtime();
    let (_, bytes) = cube();
    put(&rt, &store, "replaced.ra", &bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "replaced.ra"))
        .unwrap();
    // Other values in the same shape: every block of it differs from the one opened.
    let other = RawArray::from_shape_vec(
        vec![64, 32, 40],
        (0..64 * 32 * 40).map(|i| -(i as f32) - 1.0).collect(),
    )
    .unwrap();
    let mut d = DynArray::from_typed(&other);
    d.set_trailer(&Trailer::new(serde_json::json!({"dt": 0.5})).unwrap());
    let new = d.to_bytes().unwrap();
    assert_eq!(new.len(), bytes.len());
    // A store's clock may tick coarsely: let it tick.
    std::thread::sleep(std::time::Duration::from_millis(5));
    put(&rt, &store, "replaced.ra", &new);
    blocks()
        .iter()
        .map(|block| rt.block_on(r.read_subset::<f32>(block)).unwrap_err())
        .collect()
}

#[test]
fn a_replaced_object_is_an_error_naming_it() {
    // The store refuses the pinned request (If-Match).
    for err in replaced(Hostile::new()) {
        assert_names(
            &err,
            &[
                "object replaced.ra changed since it was opened",
                "the store refused the pinned request",
            ],
        );
    }
    // The store ignores If-Match but answers with the new ETag.
    let store = Hostile::new();
    store.obeys_preconditions.store(false, Ordering::SeqCst);
    for err in replaced(store) {
        assert_names(
            &err,
            &["object replaced.ra changed since it was opened (ETag "],
        );
    }
    // A store without ETags: its time tells.
    let store = Hostile::new();
    store.gives_etags.store(false, Ordering::SeqCst);
    for err in replaced(store.clone()) {
        assert_names(
            &err,
            &[
                "object replaced.ra changed since it was opened",
                "the store refused the pinned request",
            ],
        );
    }
    store.obeys_preconditions.store(false, Ordering::SeqCst);
    for err in replaced(store) {
        assert_names(
            &err,
            &["object replaced.ra changed since it was opened (modified "],
        );
    }
    // Deleted: not found, naming it.
    let rt = runtime();
    let store = Hostile::new();
    let (_, bytes) = cube();
    put(&rt, &store, "gone.ra", &bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "gone.ra"))
        .unwrap();
    rt.block_on(store.delete(&StorePath::from("gone.ra")))
        .unwrap();
    let err = rt.block_on(r.read_all::<f32>()).unwrap_err();
    assert_names(&err, &["gone.ra"]);
}

#[test]
fn a_compressed_section_is_checked_the_same() {
    let rt = runtime();
    let (a, _) = cube();
    let mut bytes = Vec::new();
    a.write_to_with(&mut bytes, &WriteOptions::new().compress(true))
        .unwrap();
    let store = Hostile::new();
    put(&rt, &store, "packed.ra", &bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "packed.ra"))
        .unwrap();
    assert!(r.header().is_compressed());
    let section = r.header().encoded_len() as u64..bytes.len() as u64;
    store.short_from.store(0, Ordering::SeqCst);
    let err = rt.block_on(r.read_all::<f32>()).unwrap_err();
    assert_names(
        &err,
        &[
            "object packed.ra: the store answered",
            &format!("for bytes {section:?}"),
        ],
    );
    store.short_from.store(OFF, Ordering::SeqCst);
    store.endless_from.store(0, Ordering::SeqCst);
    let err = rt.block_on(r.read_all::<f32>()).unwrap_err();
    assert_names(&err, &["object packed.ra: the store answered more than"]);
    store.endless_from.store(OFF, Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(5));
    put(&rt, &store, "packed.ra", &bytes);
    let err = rt.block_on(r.read_all::<f32>()).unwrap_err();
    assert_names(&err, &["object packed.ra changed since it was opened"]);
}

#[test]
fn a_store_without_etags_still_reads() {
    let rt = runtime();
    let (a, bytes) = cube();
    let store = Hostile::new();
    store.gives_etags.store(false, Ordering::SeqCst);
    put(&rt, &store, "plain.ra", &bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "plain.ra"))
        .unwrap();
    assert_eq!(r.trailer().unwrap().params["dt"], 0.5);
    for block in blocks() {
        let got: RawArray<f32> = rt.block_on(r.read_subset(&block)).unwrap();
        assert_eq!(got.as_slice(), cut(&a, &block));
    }
}

#[test]
fn near_runs_share_a_request_and_far_ones_do_not() {
    let rt = runtime();
    // [1024, 4, 300] u8, block [8..16, 0..4, 0..300]: 1200 runs of 8 bytes, 1 KiB apart, every
    // gap under 1 MiB, so the block is one request.
    let dims = vec![1024u64, 4, 300];
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims, (0..n).map(|i| (i % 251) as u8).collect()).unwrap();
    let store = Hostile::new();
    put(&rt, &store, "near.ra", &a.to_bytes());
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "near.ra"))
        .unwrap();
    let before = (store.requests.load(Ordering::SeqCst), r.io_stats());
    let block = [8..16, 0..4, 0..300];
    let got: RawArray<u8> = rt.block_on(r.read_subset(&block)).unwrap();
    let d = a.dims();
    let want: Vec<u8> = (0..300u64)
        .flat_map(|k| (0..4u64).flat_map(move |j| (8..16u64).map(move |i| (i, j, k))))
        .map(|(i, j, k)| a.as_slice()[(i + d[0] * (j + d[1] * k)) as usize])
        .collect();
    assert_eq!(got.as_slice(), want);
    let after = (store.requests.load(Ordering::SeqCst), r.io_stats());
    assert_eq!(
        after.0 - before.0,
        1,
        "1200 runs, gaps of 1016 bytes: one request"
    );
    // From the first run's start to the last run's end.
    let span = (299 * 4 * 1024 + 3 * 1024 + 16) - 8;
    assert_eq!(after.1.bytes - before.1.bytes, span);

    // Runs 1 MiB + 8 bytes apart: one request each, the bytes of the runs only.
    let dims = vec![(1 << 20) + 16, 3];
    let n: u64 = dims.iter().product();
    let b = RawArray::from_shape_vec(dims, (0..n).map(|i| (i % 253) as u8).collect()).unwrap();
    put(&rt, &store, "far.ra", &b.to_bytes());
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), "far.ra"))
        .unwrap();
    let before = (store.requests.load(Ordering::SeqCst), r.io_stats());
    let got: RawArray<u8> = rt.block_on(r.read_subset(&[0..8, 0..3])).unwrap();
    let stride = (1 << 20) + 16;
    let want: Vec<u8> = (0..3u64)
        .flat_map(|j| (0..8u64).map(move |i| ((i + stride * j) % 253) as u8))
        .collect();
    assert_eq!(got.as_slice(), want);
    let after = (store.requests.load(Ordering::SeqCst), r.io_stats());
    assert_eq!(after.0 - before.0, 3);
    assert_eq!(after.1.bytes - before.1.bytes, 24);
}
