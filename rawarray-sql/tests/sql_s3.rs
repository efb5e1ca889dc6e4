//! `ra sql` (the `ra-sql` binary `ra sql` runs) and `RaTableProvider::open_url` on `s3://`
//! URLs against moto's S3 server on loopback (started by the root workspace's scaffold,
//! tests/common/servers.rs, which installs moto into a virtual environment under target/):
//! a record file and an array file are written locally and uploaded, and the same query on
//! the URL and on the local file prints the same rows, equal to the numbers computed by hand
//! from the values written; so do two ragged files (text, and numbers with chunked values). A
//! filter on a chunked object fetches the chunks it reads, not the object; a missing object,
//! one that is no `.ra` file and refused credentials are errors naming the URL, never
//! printing the secret.
//!
//! Built with `--features s3_test` (it needs python3 and PyPI, or `RA_MOTO_SERVER`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Float64Type, Int64Type, UInt32Type};
use datafusion::prelude::SessionContext;
use rawarray_serde::store::{StorageOptions, StoreUrl, UploadOptions};
use rawarray_serde::{
    Codec, RaRecord, Ragged, RawArray, RecordOptions, RecordWriter, WriteOptions,
};
use rawarray_sql::RaTableProvider;

#[path = "../../tests/common/servers.rs"]
#[allow(dead_code)]
mod servers;

#[derive(RaRecord, Clone)]
struct Body {
    seq: u32,
    id: u32,
    step: u32,
    energy: f64,
    /// Random bits, which no codec compresses: the objects are larger than what a store
    /// reader fetches at open (64 KiB), so that a query's own fetches show.
    noise: u64,
}

/// splitmix64's output for `i`.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Energies are multiples of 1/4 below 2^10: every sum is exact, in any order.
fn body(i: u32) -> Body {
    let noise = mix(u64::from(i));
    Body {
        seq: i,
        id: i % 7,
        step: i / 700,
        energy: (noise % 1001) as f64 * 0.25 - 100.0,
        noise,
    }
}

/// 100 steps of 700 records; the chunked copy has 10 chunks of 7000.
const BODIES: u32 = 70_000;
const CHUNK_RECORDS: u64 = 7000;
/// The array: FIELD_DIMS[0] values a step (fastest), FIELD_DIMS[1] steps.
const FIELD_DIMS: [u64; 2] = [40, 25];

fn field_value(k: u64) -> f32 {
    ((k * 13) % 257) as f32 - 100.0
}

/// Writes the originals: a plain record file, the same records chunked (zstd, CHUNK_RECORDS
/// a chunk), an array, a ragged file. Their bytes, by name.
fn originals(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let mut w =
        RecordWriter::<Body>::create(dir.join("run.ra"), serde_json::json!({"dt": 0.5})).unwrap();
    for i in 0..BODIES {
        w.append(&body(i)).unwrap();
    }
    w.finish().unwrap();
    let mut w = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(CHUNK_RECORDS)
        .create::<Body>(dir.join("run_z.ra"))
        .unwrap();
    for i in 0..BODIES {
        w.append(&body(i)).unwrap();
    }
    w.finish().unwrap();
    let n = FIELD_DIMS.iter().product::<u64>();
    RawArray::from_shape_vec(FIELD_DIMS.to_vec(), (0..n).map(field_value).collect())
        .unwrap()
        .write_file(dir.join("field.ra"))
        .unwrap();
    Ragged::from_strs(text_rows())
        .write_file(dir.join("text.ra"))
        .unwrap();
    Ragged::from_rows(number_rows())
        .write_file_with(
            dir.join("rows_z.ra"),
            &WriteOptions::chunked().codec(Codec::Zstd),
        )
        .unwrap();
    ["run.ra", "run_z.ra", "field.ra", "text.ra", "rows_z.ra"]
        .into_iter()
        .map(|name| (name, std::fs::read(dir.join(name)).unwrap()))
        .collect()
}

/// Ragged text: 40000 rows of 16 to 80 hex digits, about 2 MiB (the store source's blocks are
/// 1 MiB).
fn text_rows() -> Vec<String> {
    (0..40_000u64)
        .map(|k| format!("{:016x}", mix(k)).repeat(1 + (k % 5) as usize))
        .collect()
}

/// Ragged numbers: 20000 rows of 0 to 8 values, stored chunked (zstd).
fn number_rows() -> Vec<Vec<u32>> {
    (0..20_000u64)
        .map(|k| (0..k % 9).map(|j| mix(k * 16 + j) as u32).collect())
        .collect()
}

/// The cells of the table `ra sql` printed, as text.
fn printed_cells(env: &[(String, String)], query: &str) -> Vec<Vec<String>> {
    let out = ra_sql(env, query);
    assert!(
        out.status.success(),
        "ra sql {query:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn s3_env(server: &servers::Server, key: &str, secret: &str) -> Vec<(String, String)> {
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

/// `ra sql QUERY` with `env` (and nothing of the test's own `AWS_*`, `AZURE*`, `GOOGLE_*`).
fn ra_sql(env: &[(String, String)], query: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ra-sql"));
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") || k.starts_with("AZURE") || k.starts_with("GOOGLE_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg(query)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap()
}

/// The rows of the table `ra sql` printed, each cell as a number.
fn printed_rows(env: &[(String, String)], query: &str) -> Vec<Vec<f64>> {
    let out = ra_sql(env, query);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ra sql {query:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().parse::<f64>().unwrap_or_else(|_| panic!("{text}")))
                .collect()
        })
        .collect()
}

/// step -> (count, sum of id, max energy) of the records with step >= 95 and energy > 0.
fn bodies_by_hand() -> Vec<Vec<f64>> {
    let mut out: BTreeMap<u32, (f64, f64, f64)> = BTreeMap::new();
    for b in (0..BODIES)
        .map(body)
        .filter(|b| b.step >= 95 && b.energy > 0.0)
    {
        let e = out.entry(b.step).or_insert((0.0, 0.0, f64::MIN));
        e.0 += 1.0;
        e.1 += f64::from(b.id);
        e.2 = e.2.max(b.energy);
    }
    out.into_iter()
        .map(|(step, (n, ids, top))| vec![f64::from(step), n, ids, top])
        .collect()
}

const BODIES_SQL: &str = "SELECT step, count(*) AS n, sum(id) AS ids, max(energy) AS top \
                          FROM 'TABLE' WHERE step >= 95 AND energy > 0 GROUP BY step ORDER BY step";

/// (count, sum, min, max) of the array's values above 50, and the sum of its first step's
/// (the first FIELD_DIMS[0] values, the file's order).
fn field_by_hand() -> Vec<Vec<f64>> {
    let n = FIELD_DIMS.iter().product::<u64>();
    let above: Vec<f64> = (0..n)
        .map(|k| f64::from(field_value(k)))
        .filter(|&v| v > 50.0)
        .collect();
    vec![vec![
        above.len() as f64,
        above.iter().sum(),
        above.iter().copied().fold(f64::MAX, f64::min),
        above.iter().copied().fold(f64::MIN, f64::max),
    ]]
}

fn field_sql() -> String {
    // Quoted: `values` is an SQL keyword.
    let v = format!("\"{}\"", rawarray_arrow::VALUES_COLUMN);
    format!(
        "SELECT count(*), sum(CAST({v} AS DOUBLE)), min({v}), max({v}) FROM 'TABLE' WHERE {v} > 50"
    )
}

#[test]
fn ra_sql_reads_s3_urls_as_it_reads_local_files() {
    let server = servers::moto();
    servers::create_bucket(server.port, "rawarray");
    let dir = tempfile::tempdir().unwrap();
    let options = StorageOptions::from([
        ("endpoint_url".to_string(), server.endpoint()),
        ("key".to_string(), "test".to_string()),
        ("secret".to_string(), "test".to_string()),
        ("region_name".to_string(), "us-east-1".to_string()),
        ("allow_http".to_string(), "true".to_string()),
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let url = |name: &str| format!("s3://rawarray/runs/{name}");
    let mut sizes = BTreeMap::new();
    for (name, bytes) in originals(dir.path()) {
        sizes.insert(name, bytes.len() as u64);
        let u = StoreUrl::parse(&url(name), &options).unwrap();
        u.put_atomic(rt.handle(), &UploadOptions::new(), |w| {
            Ok(w.write_all(&bytes)?)
        })
        .unwrap();
    }
    let env = s3_env(&server, "test", "test");

    // The same rows from the URL as from the local file, and the hand's numbers.
    for (name, sql, want) in [
        ("run.ra", BODIES_SQL.to_string(), bodies_by_hand()),
        ("run_z.ra", BODIES_SQL.to_string(), bodies_by_hand()),
        ("field.ra", field_sql(), field_by_hand()),
    ] {
        let local = printed_rows(
            &env,
            &sql.replace("TABLE", &dir.path().join(name).display().to_string()),
        );
        let remote = printed_rows(&env, &sql.replace("TABLE", &url(name)));
        assert!(!want.is_empty());
        assert_eq!(local, want, "{name}, local");
        assert_eq!(remote, want, "{name}, {}", url(name));
    }
    // A join of the URL with the local copy: every record meets itself.
    let join = format!(
        "SELECT count(*) FROM '{}' a JOIN '{}' b ON a.seq = b.seq AND a.noise = b.noise",
        url("run.ra"),
        dir.path().join("run.ra").display()
    );
    assert_eq!(printed_rows(&env, &join), [[f64::from(BODIES)]]);

    // Ragged objects: text rows (plain values) and rows of numbers (chunked values).
    let text = text_rows();
    let want_text = vec![vec![
        text.len().to_string(),
        text.iter().min().unwrap().clone(),
        text.iter().max().unwrap().clone(),
        text.iter()
            .filter(|t| t.as_str() >= "8")
            .count()
            .to_string(),
    ]];
    let numbers = number_rows();
    let want_numbers = vec![vec![
        numbers.len().to_string(),
        numbers.iter().map(Vec::len).sum::<usize>().to_string(),
        numbers
            .iter()
            .filter_map(|r| r.first())
            .max()
            .unwrap()
            .to_string(),
    ]];
    for (name, sql, want) in [
        (
            "text.ra",
            "SELECT count(*), min(\"values\"), max(\"values\"), \
             sum(CASE WHEN \"values\" >= '8' THEN 1 ELSE 0 END) FROM 'TABLE'",
            want_text,
        ),
        (
            "rows_z.ra",
            "SELECT count(*), sum(cardinality(\"values\")), max(\"values\"[1]) FROM 'TABLE'",
            want_numbers,
        ),
    ] {
        let local = printed_cells(
            &env,
            &sql.replace("TABLE", &dir.path().join(name).display().to_string()),
        );
        let remote = printed_cells(&env, &sql.replace("TABLE", &url(name)));
        assert_eq!(local, want, "{name}, local");
        assert_eq!(remote, want, "{name}, {}", url(name));
    }

    // Through the library: a filter on the chunked object fetches the one chunk its statistics
    // allow (steps 55..=57 are records 38500..40600, in the chunk of records 35000..42000),
    // not the object.
    let provider = RaTableProvider::open_url(&url("run_z.ra"), &options).unwrap();
    let opened = provider.table().io_stats().unwrap();
    // The stores' runtime runs, its threads named as tests/sql.rs expects (where a query of
    // local files must have started none).
    #[cfg(target_os = "linux")]
    {
        let names: Vec<String> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_string())
            .collect();
        assert!(names.iter().any(|n| n == "ra-sql-store"), "{names:?}");
    }
    let ctx = SessionContext::new();
    ctx.register_table("runs", std::sync::Arc::new(provider.clone()))
        .unwrap();
    let batches = rt
        .block_on(async {
            ctx.sql("SELECT count(*) AS n, sum(energy) AS e FROM runs WHERE step BETWEEN 55 AND 57")
                .await?
                .collect()
                .await
        })
        .unwrap();
    let picked: Vec<Body> = (0..BODIES)
        .map(body)
        .filter(|b| (55..=57).contains(&b.step))
        .collect();
    assert_eq!(
        batches[0].column(0).as_primitive::<Int64Type>().value(0),
        picked.len() as i64
    );
    assert_eq!(
        batches[0].column(1).as_primitive::<Float64Type>().value(0),
        picked.iter().map(|b| b.energy).sum::<f64>()
    );
    let stats = provider.table().io_stats().unwrap();
    let fetched = stats.bytes - opened.bytes;
    eprintln!(
        "run_z.ra: {} requests at open ({} bytes), {} for the query ({fetched} of {} bytes)",
        opened.reads,
        opened.bytes,
        stats.reads - opened.reads,
        sizes["run_z.ra"]
    );
    assert_eq!(
        stats.reads - opened.reads,
        1,
        "one request, for the one chunk"
    );
    assert!(fetched > 0);
    assert!(
        fetched * 5 < sizes["run_z.ra"],
        "{fetched} bytes fetched of {}",
        sizes["run_z.ra"]
    );

    // A query of one field of records in a chunk of more than 1 MiB stored, stored as byte
    // streams with their CRCs (the records' default): the chunk's block table, its blocks'
    // heads and the streams up to the energy's are fetched, not the noise's that follow them.
    let records = 300_000u32;
    let mut w = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(u64::from(records))
        .create::<Body>(dir.path().join("run_big.ra"))
        .unwrap();
    for i in 0..records {
        w.append(&body(i)).unwrap();
    }
    w.finish().unwrap();
    let big = std::fs::read(dir.path().join("run_big.ra")).unwrap();
    let u = StoreUrl::parse(&url("run_big.ra"), &options).unwrap();
    u.put_atomic(rt.handle(), &UploadOptions::new(), |w| {
        Ok(w.write_all(&big)?)
    })
    .unwrap();
    let provider = RaTableProvider::open_url(&url("run_big.ra"), &options).unwrap();
    let opened = provider.table().io_stats().unwrap();
    ctx.register_table("big", std::sync::Arc::new(provider.clone()))
        .unwrap();
    let batches = rt
        .block_on(async {
            ctx.sql("SELECT sum(energy) FROM big")
                .await?
                .collect()
                .await
        })
        .unwrap();
    assert_eq!(
        batches[0].column(0).as_primitive::<Float64Type>().value(0),
        (0..records).map(|i| body(i).energy).sum::<f64>()
    );
    let stats = provider.table().io_stats().unwrap();
    let fetched = stats.bytes - opened.bytes;
    eprintln!(
        "run_big.ra: {} requests for sum(energy), {fetched} of {} bytes",
        stats.reads - opened.reads,
        big.len()
    );
    assert!(
        fetched * 4 < big.len() as u64,
        "{fetched} bytes fetched of {}",
        big.len()
    );

    // A LIMIT stops the reading: the first chunk at most, by one request.
    let provider = RaTableProvider::open_url(&url("run_z.ra"), &options).unwrap();
    let opened = provider.table().io_stats().unwrap();
    ctx.register_table("first", std::sync::Arc::new(provider.clone()))
        .unwrap();
    let batches = rt
        .block_on(async {
            ctx.sql("SELECT seq FROM first LIMIT 3")
                .await?
                .collect()
                .await
        })
        .unwrap();
    let seqs: Vec<u32> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<UInt32Type>().values().to_vec())
        .collect();
    assert_eq!(seqs, [0, 1, 2]);
    let stats = provider.table().io_stats().unwrap();
    assert!(
        stats.reads - opened.reads <= 1,
        "{stats:?} after {opened:?}"
    );
    assert!(
        stats.bytes - opened.bytes <= fetched + 4096,
        "{stats:?} after {opened:?}"
    );

    // A missing object, an object that is no `.ra` file: errors naming the URL, exit status
    // 1, no panic.
    let u = StoreUrl::parse(&url("junk.ra"), &options).unwrap();
    u.put_atomic(rt.handle(), &UploadOptions::new(), |w| {
        Ok(w.write_all(b"not a rawarray file at all")?)
    })
    .unwrap();
    for (name, needle) in [("missing.ra", "not found"), ("junk.ra", "magic")] {
        let out = ra_sql(&env, &format!("SELECT count(*) FROM '{}'", url(name)));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&url(name)), "{err}");
        assert!(err.to_lowercase().contains(needle), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
        eprintln!("refused: {}", err.trim_end());
    }

    // A server that checks keys: a key it does not know is refused, naming the URL, and the
    // secret given with it is in no message.
    let strict = servers::moto_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", Path::new("0"))]);
    let secret = "Sup3rS3cretValue+never/printed";
    let out = ra_sql(
        &s3_env(&strict, "AKIAEXAMPLENOTAKEY00", secret),
        &format!("SELECT count(*) FROM '{}'", url("run.ra")),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&url("run.ra")), "{err}");
    assert!(!err.contains(secret), "the secret is printed: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(secret));
    eprintln!("refused: {}", err.trim_end());
}
