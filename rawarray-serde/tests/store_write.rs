//! `store::put_atomic`: whole `.ra` objects written to an object store (InMemory here; S3 in
//! tests/subset_s3.rs), read back by `StoreArrayReader` and compared with the arrays written.
#![cfg(feature = "object_store")]

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as StorePath;
use object_store::{MultipartId, ObjectStore, ObjectStoreExt, PutPayload};
use rawarray_serde::section::write::{write_section_to, PlainBytes};
use rawarray_serde::store::{put_atomic, put_atomic_to, UploadOptions, MIN_PART};
use rawarray_serde::{RawArray, StoreArrayReader, WriteOptions};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn noise(n: usize) -> Vec<u32> {
    let mut x = 0x9e37_79b9u32;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 3 == 0 {
                x
            } else {
                i as u32
            }
        })
        .collect()
}

#[test]
fn empty_small_and_multipart_arrays_read_back_equal() {
    let rt = rt();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    // 0 elements, a few, and 12 MiB (three parts of 5 MiB: two full, one short).
    for (name, n) in [
        ("empty.ra", 0usize),
        ("small.ra", 1000),
        ("big.ra", 3 << 20),
    ] {
        for storage in ["none", "lz4-whole", "zstd"] {
            let a = RawArray::from_shape_vec(vec![n as u64], noise(n)).unwrap();
            let path = StorePath::from(format!("{storage}/{name}"));
            let opts = WriteOptions::for_name(storage).unwrap();
            put_atomic(
                rt.handle(),
                &store,
                &path,
                &UploadOptions::new().part_size(MIN_PART),
                |w| a.write_to_with(w, &opts),
            )
            .unwrap();
            let bytes =
                rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
            let mut local = Vec::new();
            a.write_to_with(&mut local, &opts).unwrap();
            assert_eq!(
                &bytes[..],
                &local[..],
                "{path}: the object is the file's bytes"
            );
            let r = rt
                .block_on(StoreArrayReader::open(store.clone(), path.clone()))
                .unwrap();
            let back: RawArray<u32> = rt.block_on(r.read_all()).unwrap();
            assert_eq!(back, a, "{path}");
        }
    }
}

#[test]
fn a_failed_write_leaves_the_previous_object() {
    let rt = rt();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = StorePath::from("run/a.ra");
    let old = RawArray::from_shape_vec(vec![3], vec![1u8, 2, 3]).unwrap();
    rt.block_on(store.put(&path, PutPayload::from(old.to_bytes())))
        .unwrap();
    // 11 MiB written (two parts sent), then the writer fails.
    let err = put_atomic(
        rt.handle(),
        &store,
        &path,
        &UploadOptions::new().part_size(MIN_PART),
        |w| {
            w.write_all(&vec![7u8; 11 << 20])?;
            Err(std::io::Error::other("the simulation diverged").into())
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("diverged"), "{err}");
    let now = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
    assert_eq!(&now[..], &old.to_bytes()[..]);
    // And nowhere else: the store holds the one object.
    let listed: Vec<_> = rt.block_on(async {
        use futures::TryStreamExt;
        store.list(None).try_collect::<Vec<_>>().await.unwrap()
    });
    assert_eq!(listed.len(), 1);
}

#[test]
fn an_update_refuses_an_object_changed_since_it_was_read() {
    let rt = rt();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = StorePath::from("a.ra");
    let v1 = RawArray::from_shape_vec(vec![2], vec![1.0f64, 2.0]).unwrap();
    let put1 = rt
        .block_on(store.put(&path, PutPayload::from(v1.to_bytes())))
        .unwrap();
    // Another writer replaces it.
    let v2 = RawArray::from_shape_vec(vec![2], vec![5.0f64, 6.0]).unwrap();
    let put2 = rt
        .block_on(store.put(&path, PutPayload::from(v2.to_bytes())))
        .unwrap();
    let v3 = RawArray::from_shape_vec(vec![2], vec![9.0f64, 9.0]).unwrap();
    for part in [16 << 20, MIN_PART] {
        let stale = UploadOptions::new()
            .part_size(part)
            .if_match(put1.e_tag.clone(), None);
        let err = put_atomic(rt.handle(), &store, &path, &stale, |w| v3.write_to(w)).unwrap_err();
        assert!(
            err.to_string().contains("changed since it was read"),
            "{err}"
        );
        let now = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
        assert_eq!(&now[..], &v2.to_bytes()[..]);
    }
    // Multipart (6 MiB), against the ETag it has now: replaced.
    let big = RawArray::from_shape_vec(vec![6 << 20], vec![3u8; 6 << 20]).unwrap();
    let fresh = UploadOptions::new()
        .part_size(MIN_PART)
        .if_match(put2.e_tag.clone(), None);
    put_atomic(rt.handle(), &store, &path, &fresh, |w| big.write_to(w)).unwrap();
    let now = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
    assert_eq!(&now[..], &big.to_bytes()[..]);
}

/// Many writers of one object (`StoreArrayWriter`), on a store without server-side part copies
/// (the finish streams the blocks): the object reads as the array, its bytes after the head
/// equal a whole write's chunks, and every failure leaves nothing at the path.
#[test]
fn many_writers_make_one_object_and_refuse_what_is_incomplete() {
    use rawarray_serde::codec::Codec;
    use rawarray_serde::store::StoreArrayWriter;
    use rawarray_serde::{ElType, Header};
    let rt = rt();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = StorePath::from("runs/many.ra");
    let dims = vec![30u64, 20, 12];
    let n = 30 * 20 * 12;
    let values = noise(n);
    let a = RawArray::from_shape_vec(dims.clone(), values.clone()).unwrap();
    let header = Header::new(ElType::Uint, 4, dims.clone()).unwrap();
    let opts = WriteOptions::new()
        .codec(Codec::Zstd)
        .chunks(vec![30, 20, 4]);
    let client = StoreArrayWriter::new(store.clone(), path.clone(), header.clone(), &opts).unwrap();
    let worker = |session: &str| {
        StoreArrayWriter::resume(store.clone(), path.clone(), header.clone(), &opts, session)
            .unwrap()
    };
    // The block of dim 2 at z..z+4: its values, little-endian, column-major.
    let block = |z: u64| -> Vec<u8> {
        let plane = 30 * 20;
        values[z as usize * plane..(z as usize + 4) * plane]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    };
    let exists = |rt: &tokio::runtime::Runtime| rt.block_on(store.head(&path)).is_ok();
    let full = |r: std::ops::Range<u64>| vec![0..30, 0..20, r];

    // A misaligned block is refused before anything is uploaded.
    let e = worker(client.session())
        .write_block(rt.handle(), &full(2..6), &block(2))
        .unwrap_err();
    assert!(e.to_string().contains("aligned to the chunk grid"), "{e}");
    // Two of three blocks: the finish names the missing chunk and writes nothing.
    worker(client.session())
        .write_block(rt.handle(), &full(8..12), &block(8))
        .unwrap();
    worker(client.session())
        .write_block(rt.handle(), &full(0..4), &block(0))
        .unwrap();
    let e = client.finish(rt.handle()).unwrap_err().to_string();
    assert!(e.contains("1 of 3 chunks were never written"), "{e}");
    assert!(
        e.ends_with("The first missing: block [0..30, 0..20, 4..8)"),
        "{e}"
    );
    assert!(!exists(&rt));
    // A writer of other settings in the same session: its block is refused by name.
    let other = StoreArrayWriter::resume(
        store.clone(),
        path.clone(),
        header.clone(),
        &WriteOptions::new()
            .codec(Codec::Lz4)
            .chunks(vec![30, 20, 4]),
        client.session(),
    )
    .unwrap();
    other
        .write_block(rt.handle(), &full(4..8), &block(4))
        .unwrap();
    let e = client.finish(rt.handle()).unwrap_err().to_string();
    assert!(e.contains("written with other settings"), "{e}");
    assert!(!exists(&rt));
    // The block written again by a writer of the same settings (a task run twice) replaces it.
    worker(client.session())
        .write_block(rt.handle(), &full(4..8), &block(4))
        .unwrap();
    let done = client.finish(rt.handle()).unwrap();
    assert_eq!((done.blocks, done.chunks, done.copied), (3, 3, 0));
    assert_eq!(done.streamed, done.bytes);
    let r = rt
        .block_on(StoreArrayReader::open(store.clone(), path.clone()))
        .unwrap();
    assert_eq!(r.object_len(), done.bytes);
    let back: RawArray<u32> = rt.block_on(r.read_all()).unwrap();
    assert_eq!(back, a);
    // The chunks' bytes are those of a whole write with the same settings, in the same order.
    let mut whole = Vec::new();
    a.write_to_with(&mut whole, &opts).unwrap();
    let object = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
    assert_eq!(object.len(), whole.len());
    assert_eq!(object[..], whole[..]);
    // The blocks are gone.
    let left: Vec<_> = rt
        .block_on(futures_list(&store, &client.session_prefix()))
        .into_iter()
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // A session given up: abort removes its blocks, and the object written before stays.
    let s2 = StoreArrayWriter::new(store.clone(), path.clone(), header.clone(), &opts).unwrap();
    worker(s2.session())
        .write_block(rt.handle(), &full(0..4), &block(0))
        .unwrap();
    assert_eq!(s2.abort(rt.handle()).unwrap(), 1);
    assert!(rt
        .block_on(futures_list(&store, &s2.session_prefix()))
        .is_empty());
    let again: RawArray<u32> = rt
        .block_on(async {
            StoreArrayReader::open(store.clone(), path.clone())
                .await
                .unwrap()
                .read_all()
                .await
        })
        .unwrap();
    assert_eq!(again, a);
}

async fn futures_list(store: &Arc<dyn ObjectStore>, prefix: &StorePath) -> Vec<StorePath> {
    use futures::TryStreamExt;
    store
        .list(Some(prefix))
        .map_ok(|m| m.location)
        .try_collect()
        .await
        .unwrap()
}

/// A numbered multipart store that records the order in which parts arrive; completed
/// uploads land in its InMemory store. (InMemory's own numbered parts cannot arrive out of
/// order in object_store 0.13.2: its `put_part` grows the part list only when the index is at
/// most its length, and indexes past the end panic; apache/arrow-rs-object-store#682, fixed by
/// #683 after 0.13.2.)
#[derive(Debug, Default)]
struct Recorder {
    mem: InMemory,
    order: std::sync::Mutex<Vec<usize>>,
    uploads: std::sync::Mutex<
        std::collections::HashMap<String, std::collections::BTreeMap<usize, bytes::Bytes>>,
    >,
    next: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl MultipartStore for Recorder {
    async fn create_multipart(&self, _path: &StorePath) -> object_store::Result<MultipartId> {
        let id = self
            .next
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .to_string();
        self.uploads
            .lock()
            .unwrap()
            .insert(id.clone(), Default::default());
        Ok(id)
    }
    async fn put_part(
        &self,
        _path: &StorePath,
        id: &MultipartId,
        part_idx: usize,
        data: PutPayload,
    ) -> object_store::Result<PartId> {
        self.order.lock().unwrap().push(part_idx);
        let bytes: bytes::Bytes = data.into();
        self.uploads
            .lock()
            .unwrap()
            .get_mut(id)
            .expect("upload")
            .insert(part_idx, bytes);
        Ok(PartId {
            content_id: part_idx.to_string(),
        })
    }
    async fn complete_multipart(
        &self,
        path: &StorePath,
        id: &MultipartId,
        parts: Vec<PartId>,
    ) -> object_store::Result<object_store::PutResult> {
        let up = self.uploads.lock().unwrap().remove(id).expect("upload");
        let mut all = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            assert_eq!(p.content_id, i.to_string(), "parts in order");
            all.extend_from_slice(&up[&i]);
        }
        assert_eq!(up.len(), parts.len(), "every part named");
        self.mem.put(path, all.into()).await
    }
    async fn abort_multipart(
        &self,
        _path: &StorePath,
        id: &MultipartId,
    ) -> object_store::Result<()> {
        self.uploads.lock().unwrap().remove(id);
        Ok(())
    }
}

/// The object store and the numbered API of one `Recorder` (a clone of `InMemory` shares its
/// storage: reads and single puts see the parts' completed objects).
fn recorder() -> (Arc<Recorder>, Arc<dyn ObjectStore>, Arc<dyn MultipartStore>) {
    let r = Arc::new(Recorder::default());
    let store: Arc<dyn ObjectStore> = Arc::new(r.mem.clone());
    let numbered: Arc<dyn MultipartStore> = r.clone();
    (r, store, numbered)
}

#[test]
fn a_chunked_upload_sends_its_chunks_as_they_are_encoded_and_its_head_last() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (rec, store, numbered) = recorder();
    // Incompressible enough to need several 5 MiB parts: 24 MiB of u32.
    let a = RawArray::from_shape_vec(vec![1 << 11, 3 << 10], noise(6 << 20)).unwrap();
    for name in ["lz4", "zstd"] {
        let opts = WriteOptions::for_name(name).unwrap().threads(2);
        let path = StorePath::from(format!("head-last/{name}.ra"));
        rec.order.lock().unwrap().clear();
        let header = a.header();
        let raw = a.to_bytes();
        let plain = &raw[header.encoded_len()..];
        put_atomic_to(
            rt.handle(),
            &store,
            Some(&numbered),
            &path,
            &UploadOptions::new().part_size(MIN_PART),
            // Both ways in: the section writer, and an array's own write.
            |w| match name {
                "lz4" => {
                    write_section_to(w, &header, &opts, None, &PlainBytes::new(plain)).map(|_| ())
                }
                _ => a.write_to_sink(w, &opts),
            },
        )
        .unwrap();
        let order = rec.order.lock().unwrap().clone();
        assert!(order.len() >= 3, "{name}: several parts: {order:?}");
        // Parts of chunks went up while the rest were encoded, and the first part (header,
        // config, index) only once every chunk was: it is sent last. The parts sent just before
        // it (the short last part, and a full one filled by the same write) run on the
        // runtime's two workers at once, so they may arrive in any order with it.
        let head_at = order.iter().position(|&i| i == 0).expect("part 0");
        assert!(
            order[0] != 0 && head_at + 3 >= order.len(),
            "{name}: the first part goes up last: {order:?}"
        );
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..order.len()).collect::<Vec<_>>(), "{name}");
        // The object is byte for byte the file a local write makes.
        let bytes = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
        let mut local = Vec::new();
        a.write_to_with(&mut local, &opts).unwrap();
        assert_eq!(
            &bytes[..],
            &local[..],
            "{name}: the object is the file's bytes"
        );
        let back: RawArray<u32> = RawArray::from_bytes(&bytes).unwrap();
        assert_eq!(back, a, "{name}");
    }
}

#[test]
fn a_head_last_upload_of_a_small_array_is_one_put_and_a_failure_leaves_the_old_object() {
    let rt = rt();
    let (rec, store, numbered) = recorder();
    let path = StorePath::from("head-last/small.ra");
    let small = RawArray::from_shape_vec(vec![100, 10], noise(1000)).unwrap();
    let opts = WriteOptions::for_name("zstd").unwrap();
    let header = small.header();
    let raw = small.to_bytes();
    let plain = &raw[header.encoded_len()..];
    let up = UploadOptions::new().part_size(MIN_PART);
    put_atomic_to(rt.handle(), &store, Some(&numbered), &path, &up, |w| {
        write_section_to(w, &header, &opts, None, &PlainBytes::new(plain)).map(|_| ())
    })
    .unwrap();
    assert!(
        rec.order.lock().unwrap().is_empty(),
        "one request, no parts"
    );
    let before = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
    let mut local = Vec::new();
    small.write_to_with(&mut local, &opts).unwrap();
    assert_eq!(&before[..], &local[..]);
    // A write that fails after parts went up, and one that reserves a head and never gives
    // it: the object stays the one before, and no upload is left.
    let big = RawArray::from_shape_vec(vec![1 << 11, 3 << 10], noise(6 << 20)).unwrap();
    let (bh, braw) = (big.header(), big.to_bytes());
    let bplain = &braw[bh.encoded_len()..];
    let err = put_atomic_to(rt.handle(), &store, Some(&numbered), &path, &up, |w| {
        write_section_to(w, &bh, &opts, None, &PlainBytes::new(bplain))?;
        Err(std::io::Error::other("the writer gave up").into())
    })
    .unwrap_err();
    assert!(err.to_string().contains("gave up"), "{err}");
    assert!(
        rec.next.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "a multipart upload had begun"
    );
    let err = put_atomic_to(rt.handle(), &store, Some(&numbered), &path, &up, |w| {
        assert!(w.reserve_head(100));
        w.write_all(&vec![7u8; 12 << 20])?;
        Ok(())
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("head of 100 bytes was reserved and never given"),
        "{err}"
    );
    let after = rt.block_on(async { store.get(&path).await.unwrap().bytes().await.unwrap() });
    assert_eq!(before, after, "the object before the failed writes");
    let left = rt.block_on(async {
        let mut n = 0;
        let mut l = store.list(None);
        while let Some(m) = futures::StreamExt::next(&mut l).await {
            m.unwrap();
            n += 1;
        }
        n
    });
    assert_eq!(left, 1, "only the object is in the store");
    assert!(rec.uploads.lock().unwrap().is_empty(), "no upload is left");
}
