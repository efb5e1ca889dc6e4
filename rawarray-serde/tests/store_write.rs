//! `store::put_atomic`: whole `.ra` objects written to an object store (InMemory here; S3 in
//! tests/subset_s3.rs), read back by `StoreArrayReader` and compared with the arrays written.
#![cfg(feature = "object_store")]

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rawarray_serde::store::{put_atomic, UploadOptions, MIN_PART};
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
