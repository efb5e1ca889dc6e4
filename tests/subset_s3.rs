//! `StoreArrayReader` against S3: moto's S3 server, started on a loopback port by the test and
//! stopped when it ends (tests/common/servers.rs: `$RA_MOTO_SERVER`, or the pinned moto
//! installed from PyPI under target/ the first time). Built with `--features s3_test`.
#![cfg(feature = "s3_test")]

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rawarray_serde::{ArrayReader, DynArray, RawArray, Trailer};

mod common;
use common::servers::{create_bucket, moto};

#[test]
fn blocks_from_s3() {
    let server = moto();
    create_bucket(server.port, "rawarray");
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", server.port))
            .with_allow_http(true)
            .with_bucket_name("rawarray")
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .build()
            .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dims = vec![64u64, 32, 40];
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims, (0..n).map(|i| i as f32 * 0.5).collect()).unwrap();
    let mut d = DynArray::from_typed(&a);
    d.set_trailer(&Trailer::new(serde_json::json!({"dt": 0.25})).unwrap());
    rt.block_on(store.put(
        &"runs/field.ra".into(),
        PutPayload::from(d.to_bytes().unwrap()),
    ))
    .unwrap();

    let r = rt
        .block_on(ArrayReader::open_store(store.clone(), "runs/field.ra"))
        .unwrap();
    assert_eq!(r.io_stats().reads, 2, "open: the header and the trailer");
    assert_eq!(r.trailer().unwrap().params["dt"], 0.25);
    let whole = a.as_slice();
    let plane: RawArray<f32> = rt.block_on(r.read_subset(&[0..64, 0..32, 9..10])).unwrap();
    assert_eq!(plane.as_slice(), &whole[9 * 64 * 32..10 * 64 * 32]);
    let slab: RawArray<f32> = rt.block_on(r.read_subset(&[3..5, 0..32, 0..40])).unwrap();
    let want: Vec<f32> = (0..32 * 40)
        .flat_map(|k| [whole[k * 64 + 3], whole[k * 64 + 4]])
        .collect();
    assert_eq!(slab.as_slice(), &want[..]);
    assert_eq!(r.io_stats().reads, 4, "one request per block");
    let all: RawArray<f32> = rt.block_on(r.read_all()).unwrap();
    assert_eq!(all, a);
    // Overwritten after open (other bytes, so another ETag): the pinned reader refuses it.
    let other = RawArray::from_shape_vec(
        a.dims().to_vec(),
        a.as_slice().iter().map(|v| v + 1.0).collect(),
    )
    .unwrap();
    rt.block_on(store.put(&"runs/field.ra".into(), PutPayload::from(other.to_bytes())))
        .unwrap();
    let err = rt
        .block_on(r.read_subset::<f32>(&[0..64, 0..32, 9..10]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("object runs/field.ra changed since it was opened"),
        "{err}"
    );
    // A missing object is NotFound.
    let err = rt
        .block_on(ArrayReader::open_store(store, "runs/missing.ra"))
        .unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("not found"),
        "{err}"
    );
}
