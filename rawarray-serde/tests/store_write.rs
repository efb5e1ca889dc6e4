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
