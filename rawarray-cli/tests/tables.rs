//! `ra convert` between `.ra` record files and Parquet / Arrow IPC: byte-identical round trips,
//! columns refused by name, and pyarrow and DuckDB reading what we write (checked in Python,
//! against the values numpy reads from the `.ra` file).
#![cfg(feature = "arrow")]

mod common;
#[path = "../../rawarray-arrow/tests/support/times.rs"]
mod times;

use std::path::Path;
use std::sync::Arc;

use common::*;
use rawarray_serde::{bf16, Complex, Element, Flags, Header, Layout, RaRecord, RecordOptions};

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Inner {
    id: u16,
    w: [f64; 2],
}

/// Every scalar with a Rust type, complex, bool, fixed arrays, text bytes, a nested record.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Row {
    step: u64,
    a_i8: i8,
    a_i16: i16,
    a_i32: i32,
    a_i64: i64,
    a_i128: i128,
    a_u8: u8,
    a_u16: u16,
    a_u32: u32,
    a_u128: u128,
    a_f16: half::f16,
    a_f32: f32,
    a_f64: f64,
    a_bf16: bf16,
    a_c32: Complex<half::f16>,
    a_c64: Complex<f32>,
    a_c128: Complex<f64>,
    ok: bool,
    pos: [f32; 3],
    grid: [[i16; 2]; 3],
    name: [u8; 6],
    inner: Inner,
}

fn row(i: usize) -> Row {
    let k = i as i64;
    let mut name = *b"\0\0\0\0\0\0";
    let text = format!("n{i}");
    name[..text.len()].copy_from_slice(text.as_bytes());
    Row {
        step: (i / 4) as u64,
        a_i8: (k % 100 - 50) as i8,
        a_i16: (k * 301 - 9000) as i16,
        a_i32: (k * 99_991 - 1) as i32,
        a_i64: -k * 1_000_000_007,
        a_i128: i128::from(k) * -(1i128 << 100) + 3,
        a_u8: (i % 256) as u8,
        a_u16: (i * 257 % 65536) as u16,
        a_u32: (i as u32).wrapping_mul(2_654_435_761),
        a_u128: (i as u128) << 90 | 9,
        a_f16: half::f16::from_f32(i as f32 * 0.25),
        a_f32: i as f32 * 1.5,
        a_f64: k as f64 * -0.125,
        a_bf16: bf16::from_f32(i as f32 * 2.0 - 3.0),
        a_c32: Complex::new(half::f16::from_f32(i as f32), half::f16::from_f32(-0.5)),
        a_c64: Complex::new(i as f32, -(i as f32)),
        a_c128: Complex::new(0.5 * k as f64, 2.0),
        ok: i.is_multiple_of(3),
        pos: [i as f32, 0.5, -(i as f32)],
        grid: [[1, i as i16], [2, -(i as i16)], [3, 4]],
        name,
        inner: Inner {
            id: (i * 3) as u16,
            w: [i as f64, -1.0],
        },
    }
}

fn write_rows(path: &Path, n: usize, opts: &RecordOptions) {
    let rows: Vec<Row> = (0..n).map(row).collect();
    let mut w = opts.create::<Row>(path).unwrap();
    w.append_slice(&rows).unwrap();
    w.finish().unwrap();
}

/// The same file big-endian: each scalar of each record reversed by hand (complex numbers part
/// by part), the header flagged, the trailer kept.
fn big_endian_copy(le: &Path, be: &Path) {
    fn swap(layout: &Layout, b: &mut [u8]) {
        match layout {
            Layout::Scalar { eltype, elbyte, .. } => {
                let w = if *eltype == rawarray_serde::ElType::Complex {
                    elbyte / 2
                } else {
                    *elbyte
                };
                b[..*elbyte as usize]
                    .chunks_exact_mut(w as usize)
                    .for_each(<[u8]>::reverse);
            }
            Layout::Array { len, item } => {
                let s = item.size() as usize;
                (0..*len as usize).for_each(|i| swap(item, &mut b[i * s..]));
            }
            Layout::Record { fields, .. } => {
                for f in fields {
                    swap(&f.layout, &mut b[f.offset as usize..]);
                }
            }
        }
    }
    let mut bytes = std::fs::read(le).unwrap();
    let mut h = Header::decode(&bytes).unwrap();
    let start = h.encoded_len();
    let end = start + h.size as usize;
    for rec in bytes[start..end].chunks_exact_mut(Row::ELBYTE) {
        swap(&Row::layout(), rec);
    }
    h.flags = h.flags.with(Flags::BIG_ENDIAN, true);
    bytes[..start].copy_from_slice(&h.encode());
    std::fs::write(be, bytes).unwrap();
}

#[test]
fn parquet_and_arrow_round_trips_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.ra");
    write_rows(
        &run,
        50,
        &RecordOptions::new()
            .record_dims([5])
            .params(serde_json::json!({"dt": 0.5, "units": "s"})),
    );
    for (out, args) in [
        ("run.parquet", &[][..]),
        ("zstd.parquet", &["--zstd", "--batch-rows", "7"][..]),
        ("run.feather", &["--batch-rows", "10"][..]),
        ("run.arrow", &["--batch-rows", "7"][..]),
    ] {
        let out = dir.path().join(out);
        ra().arg("convert")
            .args(args)
            .arg(&run)
            .arg(&out)
            .assert()
            .success();
        let back = dir.path().join("back.ra");
        ra().arg("convert").arg(&out).arg(&back).assert().success();
        // The record dims come back from Parquet and from Arrow IPC alike: byte for byte.
        let (a, b) = (std::fs::read(&back).unwrap(), std::fs::read(&run).unwrap());
        assert_eq!(a, b, "{}", out.display());
        let j: serde_json::Value =
            serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&back))).unwrap();
        assert_eq!(j["dims"], serde_json::json!([5, 10]), "{}", out.display());
    }
}

#[test]
fn a_column_without_a_fixed_width_is_refused_by_name() {
    use arrow_array::{RecordBatch, StringArray, UInt32Array};
    use arrow_schema::{DataType, Field, Schema};
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("step", DataType::UInt32, false),
        Field::new("label", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(UInt32Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["a", "b"])),
        ],
    )
    .unwrap();
    let pq = dir.path().join("s.parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&pq).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = dir.path().join("s.ra");
    let err = fails_with_one_line(ra().arg("convert").arg(&pq).arg(&out));
    assert!(
        err.contains("column 'label': type Utf8 has no fixed width"),
        "{err}"
    );
    assert!(!out.exists());
    assert_eq!(listing(dir.path()), ["s.parquet"]);
}

#[test]
fn tables_are_read_and_written_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.ra");
    write_rows(&run, 3, &RecordOptions::new());
    ra().args(["convert", "-", "--to", "parquet", "-"])
        .write_stdin(std::fs::read(&run).unwrap())
        .assert()
        .code(2);
    let err = fails_with_one_line(
        ra().arg("convert")
            .arg(dir.path().join("none.parquet"))
            .arg(dir.path().join("x.ra")),
    );
    assert!(err.contains("none.parquet"), "{err}");
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn pyarrow_and_duckdb_read_the_values_numpy_reads() {
    let dir = tempfile::tempdir().unwrap();
    let params = serde_json::json!({"dt": 0.25, "run": "arrow"});
    let le = dir.path().join("le.ra");
    write_rows(&le, 29, &RecordOptions::new().params(params.clone()));
    let be = dir.path().join("be.ra");
    big_endian_copy(&le, &be);
    // A plain array and a file of fixed arrays: one column each.
    let plain = dir.path().join("plain.ra");
    rawarray_serde::RawArray::from_vec((0..100).map(|i| i as f32 * 0.5).collect())
        .write_file(&plain)
        .unwrap();
    let vecs = dir.path().join("vecs.ra");
    let mut w = rawarray_serde::RecordWriter::<[i32; 3]>::create(&vecs, ()).unwrap();
    for i in 0..10 {
        w.append(&[i, -i, 7]).unwrap();
    }
    w.finish().unwrap();
    let mut spec = Vec::new();
    for (path, layout, big_endian) in [
        (&le, Row::layout(), false),
        (&be, Row::layout(), true),
        (&plain, f32::layout(), false),
        (&vecs, <[i32; 3]>::layout(), false),
    ] {
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let parquet = dir.path().join(format!("{stem}.parquet"));
        let arrow = dir.path().join(format!("{stem}.arrow"));
        ra().arg("convert")
            .arg(path)
            .arg(&parquet)
            .args(["--batch-rows", "8"])
            .assert()
            .success();
        ra().arg("convert").arg(path).arg(&arrow).assert().success();
        spec.push(serde_json::json!({
            "ra": path,
            "parquet": parquet,
            "arrow": arrow,
            "descr": layout.numpy_descr_json(),
            "layout": layout,
            "big_endian": big_endian,
            "params": if path == &le || path == &be { params.clone() } else { serde_json::Value::Null },
        }));
    }
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, serde_json::to_vec(&spec).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/table_check.py");
    let out = python_env::run_script(&script, &[&spec_path]);
    assert_eq!(out.trim(), "checked 4");
}

#[test]
fn parquet_converts_to_chunked_records_with_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let (run, pq) = (dir.path().join("run.ra"), dir.path().join("run.parquet"));
    write_rows(&run, 500, &RecordOptions::new());
    ra().arg("convert").arg(&run).arg(&pq).assert().success();
    let z = dir.path().join("z.ra");
    ra().args(["convert", "--codec", "zstd", "--chunks", "128"])
        .arg(&pq)
        .arg(&z)
        .assert()
        .success();
    // The records are those written, stored chunked (flag bit 2), 128 a chunk.
    let back = rawarray_serde::RecordReader::<Row>::open(&z)
        .unwrap()
        .slice(..)
        .unwrap()
        .into_owned();
    assert_eq!(back, (0..500).map(row).collect::<Vec<_>>());
    let h = Header::read_from_any(&mut std::fs::File::open(&z).unwrap()).unwrap();
    assert_eq!(
        h.flags.bits() & 0b110,
        0b100,
        "chunked, not LZ4: {:?}",
        h.flags
    );
    // Per-chunk statistics, as the rows say: `step` is i / 4, so chunk n holds 32n..32n+31.
    let out = stdout_of(
        ra().args(["info", "--json", "--stats", "--per-chunk"])
            .arg(&z),
    );
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let chunks = j["stats"]["chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 4); // 500 records, 128 a chunk
    for (n, c) in chunks.iter().enumerate() {
        let step = c["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "step")
            .unwrap();
        let last = (128 * (n + 1)).min(500) - 1;
        assert_eq!(
            (step["min"].as_u64(), step["max"].as_u64()),
            (Some(32 * n as u64), Some(last as u64 / 4)),
            "chunk {n}: {step}"
        );
    }
    // lz4-whole and non-table inputs are refused by name, writing nothing (the .npy is not
    // read: its name decides).
    let refused = |args: &[&str], input: &Path, out: &Path| {
        let o = ra()
            .arg("convert")
            .args(args)
            .arg(input)
            .arg(out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "a usage error");
        assert!(!out.exists());
        String::from_utf8(o.stderr).unwrap()
    };
    let err = refused(
        &["--codec", "lz4-whole"],
        &pq,
        &dir.path().join("refused.ra"),
    );
    assert!(
        err.contains("--codec lz4-whole: records are written chunked"),
        "{err}"
    );
    let npy = dir.path().join("a.npy");
    std::fs::write(&npy, b"not read").unwrap();
    let err = refused(&["--codec", "zstd"], &npy, &dir.path().join("a.ra"));
    assert!(
        err.contains("compress a .ra converted from .npy with `ra compress`"),
        "{err}"
    );
}

/// The table of the Arrow tests' dates (rawarray-arrow/tests/dates.rs builds it there; its two
/// first rows here), through `ra convert` from Parquet: `ra cat` prints the instants, dates and
/// lengths the builder says, as ISO 8601 written out by hand.
#[test]
fn dates_and_times_convert_from_parquet_and_print_as_iso_8601() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, batch) = times::table(2);
    let pq = dir.path().join("times.parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&pq).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let ra_file = dir.path().join("times.ra");
    ra().arg("convert")
        .arg(&pq)
        .arg(&ra_file)
        .assert()
        .success();
    let json = stdout_of(ra().args(["cat", "--json"]).arg(&ra_file));
    assert_eq!(
        json,
        concat!(
            r#"{"index":[0],"value":{"step":0,"t":"2020-01-01T12:30:00.250000Z","tn":"1970-01-01T00:00:00.000000000Z","dt":"-5000ms","d":"2018-08-19"}}"#,
            "\n",
            r#"{"index":[1],"value":{"step":1,"t":"2020-01-01T12:30:01.250000Z","tn":"1969-12-31T23:59:58.999999993Z","dt":"-4750ms","d":"2018-08-20"}}"#,
            "\n"
        )
    );
    let text = stdout_of(ra().arg("cat").arg(&ra_file));
    assert!(
        text.starts_with("[0]\t{step: 0, t: 2020-01-01T12:30:00.250000Z, tn: 1970-01-01T00:00:00.000000000Z, dt: -5000ms, d: 2018-08-19}\n"),
        "{text}"
    );
    // And back to Parquet with the same types: the round trip gives the same file.
    let back = dir.path().join("back.parquet");
    let again = dir.path().join("again.ra");
    ra().arg("convert")
        .arg(&ra_file)
        .arg(&back)
        .assert()
        .success();
    ra().arg("convert")
        .arg(&back)
        .arg(&again)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&ra_file).unwrap()
    );
}
