//! The trailer's forward-compatible rule through `ra`: keys a later version wrote, which this
//! version does not know, are shown by `ra info --json` and kept by the commands that rewrite a
//! file (reshape, compress, decompress); a key the trailer requires and this version does not
//! know is reported by name.

mod common;

use common::*;
use rawarray_serde::{RawArray, Trailer};
use serde_json::json;

/// A `u16 [2, 3]` file whose trailer block holds `json`.
fn later_file(path: &std::path::Path, json: serde_json::Value) {
    let mut bytes = RawArray::from_vec((0..6u16).collect())
        .reshape(vec![2, 3])
        .unwrap()
        .to_bytes();
    let t = Trailer::from_json(json.to_string().as_bytes()).unwrap();
    bytes.extend(t.encode_block(bytes.len() as u64));
    std::fs::write(path, bytes).unwrap();
}

fn later() -> serde_json::Value {
    json!({
        "version": 4,
        "params": {"dt": 0.5},
        "schema": null,
        "numpy_descr": null,
        "required": ["params"],
        "zz_units": {"x": "m"},
    })
}

fn check_kept(path: &std::path::Path) {
    let t = Trailer::read_file(path).unwrap().unwrap();
    assert_eq!(t.version, 4);
    assert_eq!(t.params, json!({"dt": 0.5}));
    assert_eq!(t.required, ["params"]);
    assert_eq!(t.extra["zz_units"], json!({"x": "m"}));
}

#[test]
fn rewrites_keep_a_later_versions_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.ra");
    later_file(&path, later());
    let info: serde_json::Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(info["trailer"], later(), "{info}");
    assert_eq!(info["trailer_error"], serde_json::Value::Null);

    ra().arg("reshape")
        .arg(&path)
        .args(["3", "2"])
        .assert()
        .success();
    check_kept(&path);
    ra().arg("compress").arg(&path).assert().success();
    check_kept(&path);
    ra().arg("decompress").arg(&path).assert().success();
    check_kept(&path);
    let a: RawArray<u16> = RawArray::read_file(&path).unwrap();
    assert_eq!(
        (a.dims(), a.as_slice()),
        (&[3, 2][..], &[0, 1, 2, 3, 4, 5][..])
    );
}

#[test]
fn a_required_unknown_key_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("must.ra");
    let mut bytes = RawArray::from_vec(vec![1u8, 2]).to_bytes();
    let at = bytes.len() as u64;
    // Encoded by the library from the fields (`from_json` would refuse it, as it should).
    let mut t = Trailer::new(serde_json::Value::Null).unwrap();
    t.version = 3;
    t.required = vec!["chunk_index".into()];
    t.extra.insert("chunk_index".into(), json!([]));
    assert_eq!(
        t.to_json(),
        br#"{"version":3,"params":null,"schema":null,"numpy_descr":null,"required":["chunk_index"],"chunk_index":[]}"#
    );
    bytes.extend(t.encode_block(at));
    std::fs::write(&path, &bytes).unwrap();
    let info: serde_json::Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    let why = info["trailer_error"].as_str().unwrap_or_default();
    assert!(why.contains("\"chunk_index\""), "{info}");
}
