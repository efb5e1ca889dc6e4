//! The `ra` tool on object-store URLs against real servers on loopback: moto's S3 and Azure's
//! emulator Azurite (tests/common/servers.rs starts them). Built with `--features s3_test`,
//! as tests/subset_s3.rs; it runs the `ra` binary the workspace build made beside this test
//! (`cargo build -p rawarray-cli` first when running it alone).
//!
//! Three files are uploaded to each store: a plain f32 3-d field, the same field chunked (zstd,
//! one 2-d chunk of 64 x 64 per quarter plane) and a record file. Every command that takes a
//! URL runs on them, and each result is checked against independent truth: numpy's own
//! reading of the bytes (tests/python/cloud_ra.py) for `.npy` files, the values' formula and
//! the Rust reader on the local originals for the rest. On S3, moto's request log shows which
//! bytes `ra slice` fetched for one plane of the chunked object: only that plane's chunks (and
//! the header, index and trailer at the ends). A bad key is refused without its value ever
//! appearing in the message.
#![cfg(feature = "s3_test")]

use std::ffi::OsStr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use md5::{Digest, Md5};
use object_store::{ObjectStoreExt, PutPayload};
use rawarray_serde::store::{StorageOptions, StoreUrl};
use rawarray_serde::{
    ArrayReader, DynArray, RaRecord, RawArray, RecordReader, RecordWriter, Trailer, WriteOptions,
};
use serde_json::{json, Value};

mod common;
use common::servers::{self, Server};

/// Command-line arguments of mixed kinds (text, paths) as one list.
macro_rules! args {
    ($($x:expr),* $(,)?) => {
        [$(std::ffi::OsStr::new(&$x).to_os_string()),*]
    };
}

/// The field's dims (the file's order: first fastest); numpy's shape is them reversed.
const DIMS: [u64; 3] = [128, 128, 20];
/// The chunked copy's chunks: a quarter of a plane each, so a plane is 4 chunks.
const CHUNKS: [u64; 3] = [64, 64, 1];
/// The plane `ra slice` cuts (last dim), away from both ends of the object.
const PLANE: u64 = 10;
/// The records.
const RECORDS: u32 = 1000;

/// Value `k` (column-major position) of the field: scattered, so that zstd keeps most bytes
/// and the chunked object is large enough for a plane's chunks to lie far from its ends.
fn value(k: u64) -> f32 {
    ((k.wrapping_mul(2_654_435_761) % 1_000_003) as f32) * 0.001 - 500.0
}

fn field() -> RawArray<f32> {
    let n: u64 = DIMS.iter().product();
    RawArray::from_shape_vec(DIMS.to_vec(), (0..n).map(value).collect()).unwrap()
}

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Sample {
    step: u32,
    energy: f64,
    id: u16,
}

fn sample(i: u32) -> Sample {
    Sample {
        step: i,
        energy: f64::from(i) * 0.25 - 7.0,
        id: (i % 7) as u16,
    }
}

/// The local originals, in `dir`: `field.ra`, `field_z.ra`, `records.ra`.
fn originals(dir: &Path) {
    let mut d = DynArray::from_typed(&field());
    d.set_trailer(&Trailer::new(json!({"dx": 0.5})).unwrap());
    d.write_file(dir.join("field.ra")).unwrap();
    d.write_file_with(
        dir.join("field_z.ra"),
        &WriteOptions::chunked().chunks(CHUNKS.to_vec()),
    )
    .unwrap();
    let mut w = RecordWriter::<Sample>::create(dir.join("records.ra"), json!({"dt": 0.5})).unwrap();
    for i in 0..RECORDS {
        w.append(&sample(i)).unwrap();
    }
    w.finish().unwrap();
}

/// The `ra` binary beside this test's folder.
fn ra_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let ra = exe.parent().unwrap().parent().unwrap().join("ra");
    assert!(
        ra.is_file(),
        "the ra binary is not built: run cargo build -p rawarray-cli (cargo test --workspace builds it)"
    );
    ra
}

/// A store the tests write to and `ra` reads: URLs under `root`, the environment `ra` is
/// given, the options the test's own requests use.
struct Place {
    root: String,
    env: Vec<(String, String)>,
    options: StorageOptions,
    rt: tokio::runtime::Runtime,
}

impl Place {
    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.root)
    }

    fn open(&self, name: &str) -> StoreUrl {
        StoreUrl::parse(&self.url(name), &self.options).unwrap()
    }

    fn put(&self, name: &str, bytes: Vec<u8>) {
        let u = self.open(name);
        self.rt
            .block_on(u.store.put(&u.path, PutPayload::from(bytes)))
            .unwrap();
    }

    fn get(&self, name: &str) -> Vec<u8> {
        let u = self.open(name);
        let got = self.rt.block_on(u.store.get(&u.path)).unwrap();
        self.rt.block_on(got.bytes()).unwrap().to_vec()
    }

    /// `ra ARGS` with this store's environment (and nothing of the test's own `AWS_*` or
    /// `AZURE_*`).
    fn ra<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        ra_with(&self.env, args)
    }

    /// `ra ARGS`, which must succeed; its standard output.
    fn ok<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        let out = self.ra(args);
        assert!(
            out.status.success(),
            "ra {:?} failed ({}): {}",
            args.iter().map(AsRef::as_ref).collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

fn ra_with<S: AsRef<OsStr>>(env: &[(String, String)], args: &[S]) -> Output {
    let mut cmd = Command::new(ra_binary());
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") || k.starts_with("AZURE") || k.starts_with("GOOGLE_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap()
}

fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The data section of the plain local field (header: 48 bytes and 8 per dim).
fn plain_data(dir: &Path) -> Vec<u8> {
    let bytes = std::fs::read(dir.join("field.ra")).unwrap();
    let n = DIMS.iter().product::<u64>() as usize * 4;
    let start = 48 + 8 * DIMS.len();
    bytes[start..start + n].to_vec()
}

/// Checks `values` (column-major) against the field's formula at the box `ranges`.
fn assert_box(values: &[f32], ranges: &[Range<u64>; 3]) {
    let mut want = Vec::new();
    for z in ranges[2].clone() {
        for y in ranges[1].clone() {
            for x in ranges[0].clone() {
                want.push(value(x + DIMS[0] * (y + DIMS[1] * z)));
            }
        }
    }
    assert_eq!(values.len(), want.len());
    assert!(values == want, "the values differ from the field's");
}

/// Every command on the three files in `place`; `dir` holds the originals.
fn exercise(place: &Place, dir: &Path) {
    for name in ["field.ra", "field_z.ra", "records.ra"] {
        place.put(name, std::fs::read(dir.join(name)).unwrap());
    }
    let field_url = place.url("field.ra");
    let z_url = place.url("field_z.ra");
    let rec_url = place.url("records.ra");

    // ra info: the header, chunk layout and trailer, as the Rust reader reads the originals.
    for (url, local) in [
        (&field_url, "field.ra"),
        (&z_url, "field_z.ra"),
        (&rec_url, "records.ra"),
    ] {
        let info: Value = serde_json::from_str(&place.ok(&args!["info", "--json", url])).unwrap();
        let r = ArrayReader::open(dir.join(local)).unwrap();
        assert_eq!(info["file"], json!(url));
        assert_eq!(info["dims"], json!(r.header().dims), "{url}");
        let chunks = r.section().chunk_map().map(|m| m.grid().chunk().to_vec());
        assert_eq!(info["chunks"], json!(chunks), "{url}");
        assert_eq!(
            info["trailer"]["params"],
            r.trailer().unwrap().params,
            "{url}"
        );
    }
    let info: Value = serde_json::from_str(&place.ok(&args!["info", "--json", &z_url])).unwrap();
    assert_eq!(
        (&info["codec"], &info["chunks"]),
        (&json!("zstd"), &json!(CHUNKS))
    );

    // ra cat: every value of the plain field, and the first of the chunked one, in file order.
    let all = [0..DIMS[0], 0..DIMS[1], 0..DIMS[2]];
    for (url, head) in [(&field_url, None), (&z_url, Some(5000u64))] {
        let mut args = vec!["cat".to_string()];
        if let Some(h) = head {
            args.extend(["--head".into(), h.to_string()]);
        }
        args.push(url.clone());
        let text = place.ok(&args);
        let mut k = 0u64;
        for line in text.lines() {
            let (index, v) = line.split_once('\t').unwrap();
            let (x, y, z) = (
                k % DIMS[0],
                (k / DIMS[0]) % DIMS[1],
                k / (DIMS[0] * DIMS[1]),
            );
            assert_eq!(index, format!("[{x}, {y}, {z}]"), "{url} line {k}");
            assert_eq!(v.parse::<f32>().unwrap(), value(k), "{url} line {k}");
            k += 1;
        }
        assert_eq!(k, head.unwrap_or(DIMS.iter().product()), "{url}");
    }
    let text = place.ok(&args!["cat", "--json", &rec_url]);
    let got: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want = RecordReader::<Sample>::open(dir.join("records.ra"))
        .unwrap()
        .slice(..)
        .unwrap()
        .to_vec();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g["index"], json!([i]));
        assert_eq!(
            g["value"],
            json!({"step": w.step, "energy": w.energy, "id": w.id})
        );
    }

    // ra slice: one plane of each, and a box of the plain field.
    let out = tempfile::tempdir().unwrap();
    for url in [&field_url, &z_url] {
        let plane = out.path().join("plane.ra");
        place.ok(&args!["slice", url, plane, format!(":,:,{PLANE}"),]);
        let r = ArrayReader::open(&plane).unwrap();
        assert_eq!(r.header().dims, [DIMS[0], DIMS[1], 1]);
        assert_box(
            r.read_all::<f32>().unwrap().as_slice(),
            &[0..DIMS[0], 0..DIMS[1], PLANE..PLANE + 1],
        );
    }
    let cut = out.path().join("box.ra");
    place.ok(&args!["slice", field_url, cut, "5:70,100:,3:7",]);
    assert_box(
        ArrayReader::open(&cut)
            .unwrap()
            .read_all::<f32>()
            .unwrap()
            .as_slice(),
        &[5..70, 100..DIMS[1], 3..7],
    );

    // ra convert URL x.npy: what numpy loads is numpy's view of the original's bytes.
    let npy = out.path().join("x.npy");
    place.ok(&args!["convert", field_url, npy,]);
    common::python("cloud_ra.py", &[&"same", &npy, &dir.join("field.ra")]);
    // ra convert y.npy URL (a write): the object is numpy's array.
    let y = out.path().join("y.npy");
    common::python("cloud_ra.py", &[&"write-npy", &y]);
    let y_url = place.url("from_npy.ra");
    place.ok(&args!["convert", y, y_url]);
    let back = out.path().join("from_npy.ra");
    std::fs::write(&back, place.get("from_npy.ra")).unwrap();
    common::python("cloud_ra.py", &[&"same", &y, &back]);

    // ra diff URL local: the chunked object equals the plain original; a changed value is
    // found at its index.
    let diff = place.ra(&args!["diff", z_url, dir.join("field.ra"),]);
    assert_eq!(
        (diff.status.code(), diff.stdout.as_slice()),
        (Some(0), &b""[..]),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    let mut changed = field();
    let at = 3 + DIMS[0] * (4 + DIMS[1] * 5);
    changed.as_mut_slice()[at as usize] = 1.25;
    let changed_path = out.path().join("changed.ra");
    changed.write_file(&changed_path).unwrap();
    let diff = place.ra(&args!["diff", field_url, changed_path,]);
    let text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("[3, 4, 5]\t"))
        .unwrap_or_else(|| panic!("no line for [3, 4, 5]: {text}"));
    let fields: Vec<&str> = line.split('\t').collect();
    assert_eq!(fields.len(), 3, "{line}");
    assert_eq!(
        (
            fields[1].parse::<f32>().unwrap(),
            fields[2].parse::<f32>().unwrap()
        ),
        (value(at), 1.25)
    );

    // ra checksum --data: the object's bytes and its data (decoded: the plain field's data).
    let data_md5 = md5_hex(&plain_data(dir));
    for (url, local) in [(&field_url, "field.ra"), (&z_url, "field_z.ra")] {
        let sums = place.ok(&args!["checksum", "--data", url]);
        let file_md5 = md5_hex(&std::fs::read(dir.join(local)).unwrap());
        assert_eq!(
            sums,
            format!("{file_md5}  {url}\nMD5-DATA ({url}) = {data_md5}\n")
        );
    }

    // ra verify: the objects are whole; one with a flipped byte in a chunk is not.
    for url in [&field_url, &z_url, &rec_url] {
        assert_eq!(place.ok(&args!["verify", url]), format!("{url}: OK\n"));
    }
    let z_local = dir.join("field_z.ra");
    let r = ArrayReader::open(&z_local).unwrap();
    let map = r.section().chunk_map().unwrap();
    let data_at = r.header().encoded_len() as u64;
    let victim = (0..map.grid().count())
        .find(|&n| map.grid().origin(n)[2] == 15)
        .unwrap();
    let hit = data_at + map.chunk_range(victim).unwrap().start + 100;
    let mut bad = std::fs::read(&z_local).unwrap();
    bad[hit as usize] ^= 0x55;
    place.put("bad_z.ra", bad);
    let bad_url = place.url("bad_z.ra");
    let v = place.ra(&args!["verify", &bad_url]);
    let text = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with(&format!("{bad_url}: FAILED"))
            && text.contains(&format!("chunk {victim}")),
        "{text}"
    );

    // ra compress IN URL: the object is chunked as asked and holds the field.
    let comp_url = place.url("comp.ra");
    place.ok(&args![
        "compress",
        dir.join("field.ra"),
        "-o",
        comp_url,
        "--chunks",
        "32,32,4",
    ]);
    let comp = out.path().join("comp.ra");
    std::fs::write(&comp, place.get("comp.ra")).unwrap();
    let r = ArrayReader::open(&comp).unwrap();
    assert_eq!(r.section().chunk_map().unwrap().grid().chunk(), [32, 32, 4]);
    assert_box(r.read_all::<f32>().unwrap().as_slice(), &all);
    // ra compress URL (in place): the object is replaced by its chunked copy.
    place.put("copy.ra", std::fs::read(dir.join("field.ra")).unwrap());
    place.ok(&args!["compress", &place.url("copy.ra")]);
    let copy = out.path().join("copy.ra");
    std::fs::write(&copy, place.get("copy.ra")).unwrap();
    let r = ArrayReader::open(&copy).unwrap();
    assert!(r.section().chunk_map().is_some());
    assert_box(r.read_all::<f32>().unwrap().as_slice(), &all);

    // ra decompress URL -o out.ra: the plain file, the original's bytes.
    let plain = out.path().join("plain.ra");
    place.ok(&args!["decompress", z_url, "-o", plain,]);
    let r = ArrayReader::open(&plain).unwrap();
    assert_eq!(r.header().flags.bits(), 0, "plain, little-endian");
    assert_box(r.read_all::<f32>().unwrap().as_slice(), &all);
    assert_eq!(r.trailer().unwrap().params, json!({"dx": 0.5}));
}

/// The byte ranges of the GETs moto logged for `object` since line `from` of its log.
fn gets_since(log: &Path, from: usize, object: &str) -> Vec<Range<u64>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .skip(from)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["method"] == "GET" && e["url"].as_str().unwrap().ends_with(object))
        .map(|e| {
            let range = e["headers"]
                .as_object()
                .unwrap()
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("range"))
                .map(|(_, v)| v.as_str().unwrap().to_string())
                .unwrap_or_else(|| panic!("a GET of the whole of {object}: {e}"));
            let (a, b) = range
                .strip_prefix("bytes=")
                .and_then(|r| r.split_once('-'))
                .unwrap_or_else(|| panic!("range {range}"));
            a.parse().unwrap()..b.parse::<u64>().unwrap() + 1
        })
        .collect()
}

fn log_lines(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count()
}

/// `ra slice` of one plane of the chunked object fetches that plane's chunks and no byte of
/// any other chunk: what moto logged.
fn slice_fetches_one_plane(place: &Place, dir: &Path, log: &Path) {
    let z_local = dir.join("field_z.ra");
    let len = std::fs::metadata(&z_local).unwrap().len();
    let r = ArrayReader::open(&z_local).unwrap();
    let map = r.section().chunk_map().unwrap();
    let data_at = r.header().encoded_len() as u64;
    let chunks: Vec<(u64, Range<u64>)> = (0..map.grid().count())
        .map(|n| {
            let c = map.chunk_range(n).unwrap();
            (n, data_at + c.start..data_at + c.end)
        })
        .collect();
    let (mine, others): (Vec<_>, Vec<_>) = chunks
        .iter()
        .partition(|(n, _)| map.grid().origin(*n)[2] == PLANE);
    assert_eq!(mine.len(), 4, "a plane is 4 chunks");
    let plane_bytes: u64 = mine.iter().map(|(_, c)| c.end - c.start).sum();

    let out = tempfile::tempdir().unwrap();
    let before = log_lines(log);
    place.ok(&args![
        "slice",
        place.url("field_z.ra"),
        out.path().join("plane.ra"),
        format!(":,:,{PLANE}"),
    ]);
    let gets = gets_since(log, before, "/runs/field_z.ra");
    let overlap = |a: &Range<u64>, b: &Range<u64>| a.start < b.end && b.start < a.end;
    // The opening requests: the first 64 KiB (header, config, index) and the last (trailer).
    let (ends, middle): (Vec<_>, Vec<_>) = gets.iter().partition(|g| g.start == 0 || g.end == len);
    assert!(ends.len() <= 2, "opening took {ends:?}");
    for (n, c) in &others {
        // Chunks at the ends of the object come with the opening requests; none in between.
        if ends.iter().any(|g| overlap(g, c)) {
            continue;
        }
        assert!(
            !middle.iter().any(|g| overlap(g, c)),
            "chunk {n} (plane {}) was fetched: {gets:?}",
            map.grid().origin(*n)[2]
        );
    }
    for (n, c) in &mine {
        assert!(
            gets.iter().any(|g| g.start <= c.start && c.end <= g.end),
            "chunk {n} of the plane was not fetched whole: {gets:?}"
        );
    }
    let middle_bytes: u64 = middle.iter().map(|g| g.end - g.start).sum();
    assert_eq!(middle_bytes, plane_bytes, "{gets:?}");
    assert!(
        middle.len() <= mine.len(),
        "{} requests for {} chunks: {gets:?}",
        middle.len(),
        mine.len()
    );
    let fetched: u64 = gets.iter().map(|g| g.end - g.start).sum();
    assert!(
        fetched * 4 < len,
        "{fetched} bytes fetched of an object of {len}"
    );
    eprintln!(
        "ra slice of plane {PLANE}: {} GETs, {fetched} of {len} bytes ({} for the plane's 4 chunks)",
        gets.len(),
        plane_bytes
    );
}

fn s3_env(server: &Server, key: &str, secret: &str) -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT", server.endpoint()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", key.into()),
        ("AWS_SECRET_ACCESS_KEY", secret.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A failed command's standard error: names the URL, never the secret.
fn assert_secret_kept(out: &Output, url: &str, secret: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(url), "{err}");
    assert!(!err.contains(secret), "the secret is printed: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
    eprintln!("refused: {}", err.trim_end());
}

#[test]
fn ra_on_s3_urls() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("requests.jsonl");
    let on = Path::new("true");
    let server = servers::moto_with(&[
        ("MOTO_ENABLE_RECORDING", on),
        ("MOTO_RECORDER_FILEPATH", log.as_path()),
    ]);
    servers::create_bucket(server.port, "rawarray");
    let dir = tempfile::tempdir().unwrap();
    originals(dir.path());
    let place = Place {
        root: "s3://rawarray/runs".into(),
        env: s3_env(&server, "test", "test"),
        options: StorageOptions::from([
            ("endpoint_url".to_string(), server.endpoint()),
            ("key".to_string(), "test".to_string()),
            ("secret".to_string(), "test".to_string()),
            ("region_name".to_string(), "us-east-1".to_string()),
            ("allow_http".to_string(), "true".to_string()),
        ]),
        rt: runtime(),
    };
    exercise(&place, dir.path());
    slice_fetches_one_plane(&place, dir.path(), &log);

    // A server that checks keys (moto with its IAM authentication on from the first request):
    // a key it does not know is refused, and the secret given with it is in no message.
    let strict = servers::moto_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", Path::new("0"))]);
    let secret = "Sup3rS3cretValue+never/printed";
    let env = s3_env(&strict, "AKIAEXAMPLENOTAKEY00", secret);
    let url = "s3://rawarray/runs/field.ra";
    assert_secret_kept(&ra_with(&env, &["info", url]), url, secret);
    let npy = dir.path().join("y.npy");
    common::python("cloud_ra.py", &[&"write-npy", &npy]);
    assert_secret_kept(&ra_with(&env, &args!["convert", npy, url]), url, secret);
}

#[test]
fn ra_on_azure_urls() {
    let data = tempfile::tempdir().unwrap();
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-env/azurite");
    let server = servers::azurite(&home, data.path());
    common::python(
        "cloud_ra.py",
        &[&"az-container", &server.endpoint(), &"rawarray"],
    );
    // object_store's emulator mode finds Azurite here (its own requests in this test too).
    let endpoint = server.endpoint();
    std::env::set_var("AZURITE_BLOB_STORAGE_URL", &endpoint);
    let emulator = |extra: &[(&str, &str)]| -> Vec<(String, String)> {
        [
            ("AZURE_STORAGE_USE_EMULATOR", "true"),
            ("AZURITE_BLOB_STORAGE_URL", endpoint.as_str()),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    originals(dir.path());
    let place = Place {
        root: "az://rawarray/runs".into(),
        env: emulator(&[]),
        options: StorageOptions::from([("use_emulator".to_string(), "true".to_string())]),
        rt: runtime(),
    };
    exercise(&place, dir.path());

    // Azurite checks every request's SharedKey signature: a wrong account key is refused, and
    // the key is in no message.
    let secret = "bm90LXRoZS1rZXktMDEyMzQ1Njc4OWFiY2RlZg==";
    let env = emulator(&[("AZURE_STORAGE_ACCOUNT_KEY", secret)]);
    let url = "az://rawarray/runs/field.ra";
    assert_secret_kept(&ra_with(&env, &["info", url]), url, secret);
    assert_secret_kept(&ra_with(&env, &["cat", url]), url, secret);
}
