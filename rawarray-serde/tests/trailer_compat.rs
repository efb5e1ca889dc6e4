//! The trailer's forward-compatible rule (doc/format.md, "Forward compatibility"): a trailer of a
//! later version with keys this version does not know reads, params intact, and every rewrite
//! writes those keys back; a key named in `required` that this version does not know makes the
//! trailer refused, with an error naming the key.

use rawarray_serde::trailer::TRAILER_FRAME;
use rawarray_serde::{recover, DynArray, ErrorKind, RawArray, RecordReader, RecordWriter, Trailer};
use serde_json::{json, Value};

/// The JSON a later writer might store: a higher version, keys unknown here (at the top level,
/// out of serde_json's sorted order, and nested).
const LATER: &str = r#"{"version":9,"params":{"dt":0.25,"units":"m"},"schema":{"kind":"scalar","eltype":"uint","elbyte":4},"numpy_descr":"<u4","zz_future":{"chunks":[64,64],"codec":"zstd"},"aa_note":"kept"}"#;

/// A trailer block around `json` for offset `at`, framed by hand as the format says (so the
/// test does not lean on the encoder it checks).
fn block(json: &str, at: u64) -> Vec<u8> {
    let json = json.as_bytes();
    let len = json.len() as u64;
    let crc = crc32(&[&len.to_le_bytes(), &at.to_le_bytes(), json]).to_le_bytes();
    let mut out = Vec::new();
    out.extend_from_slice(b"RATRAILR");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&crc);
    out.extend_from_slice(json);
    out.extend_from_slice(&crc);
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b"RATRAILR");
    assert_eq!(out.len(), json.len() + 2 * TRAILER_FRAME);
    out
}

/// CRC-32 (IEEE, reflected, as zlib's), bit by bit: independent of the crate's crc32fast.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for b in parts.iter().flat_map(|p| p.iter()) {
        c ^= u32::from(*b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A u32 record file of `values` whose trailer block holds `json`.
fn file_with(path: &std::path::Path, values: &[u32], json: &str) {
    let mut bytes = RawArray::from_vec(values.to_vec()).to_bytes();
    let at = bytes.len() as u64;
    bytes.extend(block(json, at));
    std::fs::write(path, bytes).unwrap();
}

fn later_keys(t: &Trailer) {
    assert_eq!(t.version, 9);
    assert_eq!(t.params, json!({"dt": 0.25, "units": "m"}));
    assert_eq!(
        t.extra["zz_future"],
        json!({"chunks": [64, 64], "codec": "zstd"})
    );
    assert_eq!(t.extra["aa_note"], json!("kept"));
    assert_eq!(t.extra.len(), 2);
}

#[test]
fn a_later_version_with_unknown_keys_reads_with_its_params() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.ra");
    file_with(&path, &[1, 2, 3], LATER);
    later_keys(&Trailer::read_file(&path).unwrap().unwrap());
    later_keys(
        DynArray::read_file(&path)
            .unwrap()
            .trailer()
            .expect("the trailer reads"),
    );
    let r = RecordReader::<u32>::open(&path).unwrap();
    later_keys(r.trailer().unwrap());
    assert_eq!(*r.slice(..).unwrap(), [1, 2, 3]);
}

#[test]
fn unknown_keys_survive_every_library_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.ra");
    file_with(&path, &[1, 2, 3], LATER);

    // Appending records: the trailer is written again at each flush and at the end.
    let mut w = RecordWriter::<u32>::open(&path).unwrap();
    w.append_slice(&[4, 5]).unwrap();
    w.flush().unwrap();
    later_keys(&Trailer::read_file(&path).unwrap().unwrap());
    // The file as a writer killed during this flush leaves it: records, forward block and
    // spare copy written, the header update lost.
    let mut killed = std::fs::read(&path).unwrap();
    let old_header = RawArray::from_vec(vec![1u32, 2, 3]).to_bytes();
    killed[..56].copy_from_slice(&old_header[..56]);
    w.append(&6).unwrap();
    w.finish().unwrap();
    later_keys(&Trailer::read_file(&path).unwrap().unwrap());

    // recover extends the header over the flushed records and writes the trailer back.
    std::fs::write(&path, &killed).unwrap();
    let r = recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after), (3, 5));
    later_keys(&Trailer::read_file(&path).unwrap().unwrap());
    let all: RawArray<u32> = RawArray::read_file(&path).unwrap();
    assert_eq!(all.as_slice(), [1, 2, 3, 4, 5]);

    // A trailer set again through DynArray carries them too.
    let mut a = DynArray::read_file(&path).unwrap();
    let mut t = a.trailer().expect("the trailer reads").clone();
    t.params = json!({"dt": 0.25, "units": "m"});
    a.set_trailer(&t);
    a.write_file(&path).unwrap();
    later_keys(&Trailer::read_file(&path).unwrap().unwrap());
}

#[test]
fn a_required_key_this_version_does_not_know_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("must.ra");
    // Version 1 itself: the refusal is the `required` list's doing, not the version's.
    let json = r#"{"version":1,"params":{"dt":1},"schema":null,"numpy_descr":null,"required":["params","chunk_index"],"chunk_index":[0,12]}"#;
    file_with(&path, &[1, 2, 3], json);
    let named = |e: rawarray_serde::Error| {
        assert!(matches!(e.kind(), ErrorKind::Trailer(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("\"chunk_index\""), "{msg}");
        assert!(!msg.contains("\"params\" "), "{msg}");
    };
    named(Trailer::read_file(&path).unwrap_err());
    let a = DynArray::read_file(&path).unwrap();
    assert!(a.trailer().is_none());
    let why = a.trailer_error().expect("the refusal is kept");
    assert!(why.contains("\"chunk_index\""), "{why}");
    named(RecordReader::<u32>::open(&path).unwrap_err());
    // Nothing that would rewrite the trailer without understanding it goes ahead.
    let before = std::fs::read(&path).unwrap();
    assert!(RecordWriter::<u32>::open(&path).is_err());
    assert!(recover(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Known keys may be required: a later writer says the params must be understood.
    let ok =
        r#"{"version":2,"params":{"dt":1},"schema":null,"numpy_descr":null,"required":["params"]}"#;
    file_with(&path, &[1, 2, 3], ok);
    let t = Trailer::read_file(&path).unwrap().unwrap();
    assert_eq!(
        (t.version, t.required.clone()),
        (2, vec!["params".to_string()])
    );
    assert_eq!(t.to_json(), ok.as_bytes());
}

#[test]
fn a_trailer_of_this_version_is_written_as_before() {
    // No `required`, no unknown keys: the JSON has exactly the four keys of version 1.
    let t = Trailer::new(json!({"n": 1})).unwrap();
    assert_eq!(
        String::from_utf8(t.to_json()).unwrap(),
        r#"{"version":1,"params":{"n":1},"schema":null,"numpy_descr":null}"#
    );
    // A known key slipped into `extra` is not written twice.
    let mut dup = t.clone();
    dup.extra.insert("params".into(), Value::from(7));
    assert_eq!(dup.to_json(), t.to_json());
    // Version 0 was never written by anyone.
    let zero = r#"{"version":0,"params":null}"#;
    let mut bytes = RawArray::from_vec(vec![1u8]).to_bytes();
    let at = bytes.len() as u64;
    bytes.extend(block(zero, at));
    let err = Trailer::from_file_bytes(&bytes).unwrap_err();
    assert!(err.to_string().contains("version 0"), "{err}");
}
