//! `StoreArrayReader` against S3: moto's S3 server, started on a loopback port by the test and
//! stopped when it ends. Built with `--features s3_test`. The server is `$RA_MOTO_SERVER`, or
//! else the test installs the pinned moto (`MOTO`) from PyPI into a virtual environment under
//! target/ the first time, as the numpy tests provision theirs; it fails with one line if that
//! cannot be done.
#![cfg(feature = "s3_test")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
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

/// The moto release the test installs.
const MOTO: &str = "moto[server]==5.2.5";

/// The `moto_server` program: `$RA_MOTO_SERVER`, or the one installed under target/.
fn moto_server() -> Result<PathBuf, String> {
    if let Some(exe) = std::env::var_os("RA_MOTO_SERVER") {
        return Ok(PathBuf::from(exe));
    }
    let env = Path::new(env!("CARGO_TARGET_TMPDIR")).join("moto-env");
    let exe = env.join("bin/moto_server");
    let stamp = env.join("installed");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == MOTO) && exe.is_file() {
        return Ok(exe);
    }
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{cmd:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ));
        }
        Ok(())
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&env))?;
    run(Command::new(env.join("bin/pip")).args(["install", "--quiet", MOTO]))?;
    std::fs::write(&stamp, MOTO).map_err(|e| e.to_string())?;
    Ok(exe)
}

fn moto() -> Moto {
    let exe = moto_server().unwrap_or_else(|why| {
        panic!("the S3 test needs moto's server: {why}; set RA_MOTO_SERVER to a moto_server, or allow python3 -m venv and PyPI")
    });
    // A free loopback port: bound, read, released, then given to the server.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&exe)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
    let server = Moto { child, port };
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "moto did not start in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
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
