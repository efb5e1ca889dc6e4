//! `StoreArrayReader` against S3: moto's S3 server (`pip install "moto[server]"`), started on
//! a loopback port by the test and stopped when it ends. Built with `--features s3_test`; the
//! server is `$RA_MOTO_SERVER` or `moto_server` on the `PATH`. Without one the test says so and
//! passes, unless `RA_REQUIRE_S3=1` (for CI, which installs it).
#![cfg(feature = "s3_test")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::{ObjectStore, PutPayload};
use rawarray_serde::{ArrayReader, DynArray, RawArray, Trailer};

/// The moto server, killed (by its pid) when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto() -> Option<Moto> {
    let exe = std::env::var("RA_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
    // A free loopback port: bound, read, released, then given to the server.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = match Command::new(&exe)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("RA_REQUIRE_S3").is_none_or(|v| v != "1"),
                "RA_REQUIRE_S3=1 but {exe} cannot be started: {e}"
            );
            eprintln!(
                "skipping the S3 test: cannot start {exe} ({e}); pip install \"moto[server]\""
            );
            return None;
        }
    };
    let server = Moto { child, port };
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "moto did not start in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(server)
}

/// Creates a bucket with a plain HTTP request (object_store has no call for it; moto accepts
/// unsigned requests).
fn create_bucket(port: u16, bucket: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn blocks_from_s3() {
    let Some(server) = moto() else {
        return;
    };
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
    // A missing object is NotFound.
    let err = rt
        .block_on(ArrayReader::open_store(store, "runs/missing.ra"))
        .unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("not found"),
        "{err}"
    );
}
