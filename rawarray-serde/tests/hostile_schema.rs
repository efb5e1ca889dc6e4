//! Hostile record schemas in trailers (issue 14, case 6) through every reader of the library:
//! each is damaged metadata (`ErrorKind::Trailer` naming the schema, or `BadSchema` from
//! `Layout::validate_for`), never a panic, a hang or a large allocation, and the data itself
//! still reads as bytes. The files are hand-built: header words, data, and a trailer block framed
//! and CRC'd here from JSON written out by hand.

use std::fs;

use rawarray_serde::{
    recover, DynArray, ErrorKind, Layout, RecordOptions, RecordReader, RecordWriter, Trailer,
};
use serde_json::{json, Value};

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn block(json: &[u8], at: u64) -> Vec<u8> {
    let len = (json.len() as u64).to_le_bytes();
    let at = at.to_le_bytes();
    let crc = crc32(&[&len[..], &at, json].concat()).to_le_bytes();
    [
        &b"RATRAILR"[..],
        &len,
        &at,
        &crc,
        json,
        &crc,
        &at,
        &len,
        b"RATRAILR",
    ]
    .concat()
}

fn scalar(eltype: &str, elbyte: u64) -> Value {
    json!({"kind": "scalar", "eltype": eltype, "elbyte": elbyte})
}

fn array(len: u64, item: Value) -> Value {
    json!({"kind": "array", "len": len, "item": item})
}

fn record(fields: &[(&str, u64, Value)]) -> Value {
    let fields: Vec<Value> = fields
        .iter()
        .map(|(n, o, l)| json!({"name": n, "offset": o, "layout": l}))
        .collect();
    json!({"kind": "record", "name": "Hostile", "fields": fields})
}

/// Schemas that are no valid layout of anything, as reported and worse.
fn invalid() -> Vec<(&'static str, Value)> {
    // One level past what a layout may nest (MAX_LAYOUT_DEPTH arrays and records).
    let mut deep = scalar("uint", 1);
    for _ in 0..=rawarray_serde::layout::MAX_LAYOUT_DEPTH {
        deep = array(1, deep);
    }
    vec![
        (
            "offset past the element",
            record(&[("t", 0, scalar("float", 8)), ("x", 30, scalar("float", 4))]),
        ),
        (
            "scalar of 64 bytes",
            record(&[("big", 0, scalar("uint", 64))]),
        ),
        (
            "float of 3 bytes",
            record(&[("odd", 0, scalar("float", 3))]),
        ),
        ("user scalar", scalar("user", 20)),
        (
            "2^40 zero-size items",
            record(&[("many", 0, array(1 << 40, array(0, scalar("uint", 1))))]),
        ),
        ("array of 0", array(0, scalar("uint", 1))),
        (
            "2^63 x 2^63 bytes",
            array(1 << 63, array(1 << 63, scalar("uint", 1))),
        ),
        ("record of no fields", record(&[])),
        ("nested past MAX_LAYOUT_DEPTH", deep),
        (
            "overlapping fields",
            record(&[("a", 0, scalar("float", 8)), ("b", 4, scalar("float", 8))]),
        ),
        (
            "two fields of one name",
            record(&[("a", 0, scalar("float", 8)), ("a", 8, scalar("float", 8))]),
        ),
        (
            "a quote in a name",
            record(&[("a'b", 0, scalar("float", 8))]),
        ),
    ]
}

/// `[20-byte user elements] x n`, bytes `0, 1, 2, ...`, then a block with `schema` (and
/// `numpy_descr` if given).
fn file_with(schema: Value, numpy_descr: Option<Value>, n: u64) -> (Vec<u8>, Vec<u8>) {
    let words = [u64::from_le_bytes(*b"rawarray"), 0, 0, 20, 20 * n, 1, n];
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let data: Vec<u8> = (0..20 * n).map(|i| i as u8).collect();
    bytes.extend_from_slice(&data);
    let mut trailer = json!({"version": 1, "params": {"keep": "me"}, "schema": schema});
    if let Some(d) = numpy_descr {
        trailer["numpy_descr"] = d;
    }
    let at = bytes.len() as u64;
    bytes.extend(block(&serde_json::to_vec(&trailer).unwrap(), at));
    (bytes, data)
}

/// A 20-byte user-defined record, to open the files as records of.
#[derive(rawarray_serde::RaRecord, Clone, Copy, Debug, PartialEq)]
struct R20 {
    bytes: [u8; 20],
}

fn is_damaged_schema(e: &rawarray_serde::Error) -> bool {
    matches!(e.kind(), ErrorKind::Trailer(why) if why.contains("damaged metadata: record schema"))
}

#[test]
fn invalid_schemas_are_damaged_metadata_in_every_reader_and_the_data_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, schema)) in invalid().into_iter().enumerate() {
        let (bytes, data) = file_with(schema, None, 2);
        let path = dir.path().join(format!("h{i}.ra"));
        fs::write(&path, &bytes).unwrap();
        let bad = |e: rawarray_serde::Error| assert!(is_damaged_schema(&e), "{what}: {e}");
        bad(Trailer::from_file_bytes(&bytes).unwrap_err());
        bad(Trailer::read_file(&path).unwrap_err());
        let d = DynArray::read_file(&path).unwrap();
        assert_eq!(d.data(), &data[..], "{what}: the data reads as bytes");
        assert_eq!(d.trailer(), None, "{what}");
        let why = d.trailer_error().unwrap_or_default();
        assert!(
            why.contains("damaged metadata: record schema"),
            "{what}: {why}"
        );
        bad(RecordReader::<R20>::open(&path).unwrap_err());
        bad(recover(&path).unwrap_err());
        bad(RecordOptions::new().open::<R20>(&path).unwrap_err());
        assert_eq!(fs::read(&path).unwrap(), bytes, "{what}: nothing written");
    }
}

#[test]
fn valid_schemas_that_do_not_fit_the_elements_are_named_by_validate_for() {
    // A schema of 24 bytes over 20-byte elements: a valid layout of something else.
    let wide = record(&[
        ("a", 0, scalar("float", 8)),
        ("b", 8, scalar("float", 8)),
        ("c", 16, scalar("float", 8)),
    ]);
    let (bytes, _) = file_with(wide, None, 2);
    let t = Trailer::from_file_bytes(&bytes).unwrap().unwrap();
    let schema: &Layout = t.schema.as_ref().unwrap();
    assert_eq!(schema.validate().unwrap(), 24);
    let e = schema.validate_for(20).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::BadSchema(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "damaged metadata: record schema of 24 bytes describes elements of elbyte 20"
    );
}

#[test]
fn a_numpy_descr_that_contradicts_the_schema_is_damaged() {
    let schema = record(&[
        ("t", 0, scalar("float", 8)),
        ("x", 8, array(3, scalar("float", 4))),
    ]);
    let good = json!([["t", "<f8"], ["x", "<f4", [3]]]);
    let (bytes, _) = file_with(schema.clone(), Some(good), 1);
    assert!(Trailer::from_file_bytes(&bytes).unwrap().is_some());
    let lying = json!([["t", "<f8"], ["x", "<f8", [3]]]);
    let (bytes, _) = file_with(schema, Some(lying), 1);
    let e = Trailer::from_file_bytes(&bytes).unwrap_err();
    assert!(is_damaged_schema(&e), "{e}");
}

#[test]
fn every_layout_the_crate_writes_is_valid() {
    #[derive(rawarray_serde::RaRecord, Clone, Copy, Debug, PartialEq)]
    struct Body {
        id: u32,
        alive: bool,
        pos: [f64; 3],
        tag: [[u8; 2]; 3],
        z: num_complex::Complex<f32>,
    }
    use rawarray_serde::Element;
    for l in [
        Body::layout(),
        <[f64; 3]>::layout(),
        <half::bf16>::layout(),
        <char>::layout(),
    ] {
        l.validate().unwrap();
    }
    Body::layout().validate_for(Body::ELBYTE as u64).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ra");
    let mut w = RecordWriter::<Body>::create(&path, Value::Null).unwrap();
    w.append(&Body {
        id: 1,
        alive: true,
        pos: [1.0, 2.0, 3.0],
        tag: [[1, 2]; 3],
        z: num_complex::Complex::new(1.0, -1.0),
    })
    .unwrap();
    w.finish().unwrap();
    let t = Trailer::read_file(&path).unwrap().unwrap();
    assert_eq!(t.schema, Some(Body::layout()));
}
