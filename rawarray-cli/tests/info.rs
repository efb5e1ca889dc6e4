//! `ra info`: the header in words and as JSON, trailers, damaged and non-.ra files.

mod common;

use std::path::PathBuf;

use rawarray_serde::{RawArray, RecordOptions, RecordWriter, WriteOptions};
use serde_json::Value;

use common::*;

#[test]
fn info_json_matches_the_reference_table_field_by_field() {
    let paths: Vec<PathBuf> = TABLE.iter().map(|t| reference(t.0)).collect();
    let out = stdout_of(ra().arg("info").arg("--json").args(&paths));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), TABLE.len());
    for (line, &(name, flags, eltype, elbyte, size, dims, bytes)) in lines.iter().zip(TABLE) {
        let j: Value = serde_json::from_str(line).unwrap();
        assert!(j["file"].as_str().unwrap().ends_with(name), "{j}");
        assert_eq!(j["flags"], flags, "{name}");
        assert_eq!(j["eltype"], eltype, "{name}");
        assert_eq!(j["elbyte"], elbyte, "{name}");
        assert_eq!(j["size"], size, "{name}");
        assert_eq!(j["ndims"], dims.len(), "{name}");
        assert_eq!(j["dims"], serde_json::json!(dims), "{name}");
        assert_eq!(j["big_endian"], false, "{name}");
        assert_eq!(j["compressed"], flags & 2 != 0, "{name}");
        assert_eq!(
            j["trailer_bytes"], 0,
            "{name}: the README says none has trailing bytes"
        );
        let header_bytes = 48 + 8 * dims.len() as u64;
        assert_eq!(j["header_bytes"], header_bytes, "{name}");
        assert_eq!(header_bytes + size, bytes, "{name}: the table adds up");
        let dtype = match (eltype, elbyte) {
            (1, 1) => "|i1",
            (1, 4) => "<i4",
            (1, 8) => "<i8",
            (2, 1) => "|u1",
            (2, 4) => "<u4",
            (3, 2) => "<f2",
            (3, 4) => "<f4",
            (3, 8) => "<f8",
            (4, 8) => "<c8",
            (4, 16) => "<c16",
            other => panic!("{other:?} not in the table"),
        };
        assert_eq!(j["dtype"], dtype, "{name}");
    }
}

#[test]
fn info_json_reports_trailers_big_endian_and_missing_dtypes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("be.ra");
    let a = RawArray::from_vec(vec![half::bf16::from_f32(1.0); 3]);
    let mut bytes = Vec::new();
    a.write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    bytes.extend_from_slice(b"extra");
    std::fs::write(&path, &bytes).unwrap();
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["flags"], 1);
    assert_eq!(j["big_endian"], true);
    assert_eq!(j["eltype"], 5);
    assert_eq!(j["dtype"], Value::Null);
    assert_eq!(j["trailer_bytes"], 5);
    let text = stdout_of(ra().arg("info").arg(&path));
    assert!(text.contains("big-endian"), "{text}");
    assert!(text.contains("none (numpy has no bfloat16)"), "{text}");
    assert!(text.contains("trailer:     5 bytes"), "{text}");
}

#[test]
fn info_in_words() {
    let text = stdout_of(ra().arg("info").arg(reference("mnist_8_z.ra")));
    for want in [
        "uint8 (eltype 2, uint)",
        "numpy dtype: |u1",
        "elbyte:      1",
        "[28, 28, 3] (numpy shape (3, 28, 28)), 2352 elements",
        "486 bytes stored, 2352 plain",
        "little-endian",
        "LZ4 block",
        "header:      72 bytes",
        "trailer:     none",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
}

#[test]
fn info_reports_a_bad_file_and_still_prints_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ra");
    std::fs::write(
        &bad,
        b"not a rawarray file, but long enough for a header......",
    )
    .unwrap();
    let out = ra()
        .args(["info", "--json"])
        .arg(reference("test.ra"))
        .arg(&bad)
        .arg(reference("randu8.ra"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.ra") && err.contains("looks like text"),
        "{err}"
    );
}

#[test]
fn info_names_files_that_are_not_ra_by_what_they_look_like() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("m.npy");
    ra().arg("convert")
        .arg(reference("randf32.ra"))
        .arg(&npy)
        .assert()
        .success();
    let empty = dir.path().join("empty.ra");
    std::fs::write(&empty, b"").unwrap();
    let damaged = dir.path().join("damaged.ra");
    let mut bytes = std::fs::read(reference("randf32.ra")).unwrap();
    bytes[16] = 9; // eltype 9: a .ra file with a bad header is still called one
    std::fs::write(&damaged, &bytes).unwrap();
    for (path, want) in [
        (
            reference("mnist_8.png"),
            "not a .ra file: it looks like a PNG image; `ra convert",
        ),
        (
            npy.clone(),
            "not a .ra file: it looks like a numpy .npy file; `ra convert",
        ),
        (empty.clone(), "not a .ra file: the file is empty"),
        (damaged.clone(), "eltype"),
    ] {
        let out = ra()
            .arg("info")
            .arg(&path)
            .assert()
            .code(1)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{want:?} not in {err}");
    }
}

#[test]
fn info_shows_the_trailer_params_and_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ra");
    record_file(&path, 4);
    let text = stdout_of(ra().arg("info").arg(&path));
    for want in [
        "user(22 bytes) (eltype 0, user-defined)",
        "numpy dtype: [('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]",
        "trailer block version 1; params: {\"dt\":0.5,\"units\":\"s\"}; record schema: \
         [('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["eltype"], 0);
    assert_eq!(
        j["dtype"],
        "[('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]"
    );
    assert_eq!(j["trailer"]["params"]["dt"], 0.5);
    assert_eq!(
        j["trailer"]["numpy_descr"],
        serde_json::json!([["t", "<f8"], ["xyz", "<f4", [3]], ["id", "<u2"]])
    );
    assert_eq!(j["trailer_error"], Value::Null);
    let file_len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(j["trailer_bytes"], file_len - 56 - 4 * 22);
    // A damaged block is reported, and the array is still described.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["trailer"], Value::Null);
    assert!(
        j["trailer_error"].as_str().unwrap().contains("trailer"),
        "{j}"
    );
}

/// A writer that stops without finishing (as a killed one: its writes are in the file, its
/// last records never committed) leaves bytes between the data and the spare trailer;
/// `ra info` counts them and names the command that salvages what can be.
#[test]
fn info_reports_uncommitted_records_of_a_writer_that_did_not_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crashed.ra");
    let mut w: RecordWriter<Rec> = RecordOptions::new()
        .params(serde_json::json!({"dt": 0.5}))
        .buffer_bytes(64) // written out (uncommitted) every few records
        .create(&path)
        .unwrap();
    let all = recs(40);
    w.append_slice(&all[..10]).unwrap();
    w.flush().unwrap();
    w.append_slice(&all[10..]).unwrap();
    std::mem::forget(w); // no finish, no final flush: what a kill leaves
    let text = stdout_of(ra().arg("info").arg(&path));
    assert!(
        text.contains("[10] (numpy shape (10,)), 10 elements"),
        "{text}"
    );
    assert!(
        text.contains("bytes after the data are not committed"),
        "{text}"
    );
    assert!(
        text.contains(&format!("ra recover {}", path.display())),
        "{text}"
    );
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    let loose = j["uncommitted_bytes"].as_u64().unwrap();
    assert!(loose >= 30 * 22 - 64, "{j}"); // all but the last buffer went out
                                           // A finished file has none.
    let done = dir.path().join("done.ra");
    record_file(&done, 4);
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&done))).unwrap();
    assert_eq!(j["uncommitted_bytes"], 0);
}

/// `--json`'s `codec` says how the data section is stored: `null` for plain data, `lz4-whole`
/// for the C reference's block (`compressed` true, no chunks, shuffle or level).
#[test]
fn json_codec_of_plain_and_lz4_whole_files() {
    let j = |name: &str| -> serde_json::Value {
        serde_json::from_str(&stdout_of(
            ra().args(["info", "--json"]).arg(reference(name)),
        ))
        .unwrap()
    };
    let plain = j("mnist_8.ra");
    assert_eq!(plain["compressed"], false);
    assert_eq!(plain["codec"], serde_json::Value::Null);
    assert_eq!(plain["ratio"], serde_json::Value::Null);
    let z = j("mnist_8_z.ra");
    assert_eq!(z["compressed"], true);
    assert_eq!(z["codec"], "lz4-whole");
    for k in ["chunks", "shuffle", "level"] {
        assert_eq!(z[k], serde_json::Value::Null, "{k}");
    }
    let dims: u64 = z["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .product();
    let ratio = z["ratio"].as_f64().unwrap();
    assert!((ratio - dims as f64 / z["size"].as_f64().unwrap()).abs() < 1e-9);
}

/// The dims and chunks in the file's order (first fastest) beside numpy's (reversed), in words
/// and in JSON, for a chunked file of dims [80, 96, 16] (numpy shape (16, 96, 80)) in chunks
/// of [40, 96, 4].
#[test]
fn info_shows_dims_and_chunks_in_the_files_order_and_in_numpys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("field.ra");
    let a = RawArray::from_shape_vec(vec![80, 96, 16], vec![0.5f32; 80 * 96 * 16]).unwrap();
    a.write_file_with(
        &path,
        &WriteOptions::new()
            .codec(rawarray_serde::Codec::Zstd)
            .chunks(vec![40, 96, 4]),
    )
    .unwrap();
    let text = stdout_of(ra().arg("info").arg(&path));
    assert!(
        text.contains("dims:        [80, 96, 16] (numpy shape (16, 96, 80)), 122880 elements"),
        "{text}"
    );
    assert!(
        text.contains("chunks [40, 96, 4] (numpy (4, 96, 40))"),
        "{text}"
    );
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["dims"], serde_json::json!([80, 96, 16]));
    assert_eq!(j["numpy_shape"], serde_json::json!([16, 96, 80]));
    assert_eq!(j["chunks"], serde_json::json!([40, 96, 4]));
    assert_eq!(j["numpy_chunks"], serde_json::json!([4, 96, 40]));

    // A plain file has a numpy shape and no chunks; a scalar's shape is ().
    let plain = dir.path().join("plain.ra");
    RawArray::from_shape_vec(vec![3, 2], vec![1u8; 6])
        .unwrap()
        .write_file(&plain)
        .unwrap();
    let scalar = dir.path().join("scalar.ra");
    RawArray::scalar(7u8).write_file(&scalar).unwrap();
    let out = stdout_of(ra().args(["info", "--json"]).arg(&plain).arg(&scalar));
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["numpy_shape"], serde_json::json!([2, 3]));
    assert_eq!(lines[0]["numpy_chunks"], Value::Null);
    assert_eq!(lines[1]["numpy_shape"], serde_json::json!([]));
    let text = stdout_of(ra().arg("info").arg(&scalar));
    assert!(
        text.contains("dims:        [] (numpy shape ()), 1 element"),
        "{text}"
    );
}

/// Every key `ra info --json` prints is named in `ra info --help` and in the CLI guide, which
/// say the keys are stable.
#[test]
fn every_info_json_key_is_documented() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("field.ra");
    RawArray::from_shape_vec(vec![8, 4], vec![1u16; 32])
        .unwrap()
        .write_file_with(
            &path,
            &WriteOptions::new().codec(rawarray_serde::Codec::Lz4),
        )
        .unwrap();
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    let help = stdout_of(ra().args(["info", "--help"]));
    let guide = include_str!("../../doc/cli.md");
    for key in j.as_object().unwrap().keys() {
        let word = |text: &str| {
            text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == key)
        };
        assert!(word(&help), "{key} is not in ra info --help:\n{help}");
        assert!(word(guide), "{key} is not in doc/cli.md");
    }
}
