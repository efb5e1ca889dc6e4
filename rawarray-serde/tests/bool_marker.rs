//! The bool marker: `bool` is stored as a `u8` of 0 or 1, and the schema says so
//! (`"logical":"bool"` on a uint scalar of one byte), for plain arrays (a trailer whose schema
//! is the bool scalar) and for record fields. Checked against hand-built bytes and JSON.

use rawarray_serde::trailer::TRAILER_TAG;
use rawarray_serde::{
    DynArray, ElType, Element, ErrorKind, Field, Layout, Logical, RaRecord, RawArray, Trailer,
};

const MAGIC: u64 = 0x7961_7272_6177_6172;
const BOOL_JSON: &str = r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"bool"}"#;

fn header(eltype: u64, elbyte: u64, dims: &[u64], size: u64) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [MAGIC, 0, eltype, elbyte, size, dims.len() as u64] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    for d in dims {
        h.extend_from_slice(&d.to_le_bytes());
    }
    h
}

/// A trailer block framed by hand: tag, len, at, crc, JSON, crc, at, len, tag.
fn block(json: &str, at: u64) -> Vec<u8> {
    let len = json.len() as u64;
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(&at.to_le_bytes());
    h.update(json.as_bytes());
    let crc = h.finalize().to_le_bytes();
    let mut b = TRAILER_TAG.to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(&crc);
    b.extend_from_slice(json.as_bytes());
    b.extend_from_slice(&crc);
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&TRAILER_TAG);
    b
}

#[test]
fn a_bool_array_is_u8_with_a_bool_schema_in_its_trailer() {
    let a = RawArray::from_vec(vec![true, false, true, true]);
    let bytes = a.to_bytes();
    let mut want = header(2, 1, &[4], 4);
    want.extend_from_slice(&[1, 0, 1, 1]);
    let at = want.len() as u64;
    let json = format!(r#"{{"version":1,"params":null,"schema":{BOOL_JSON},"numpy_descr":"|u1"}}"#);
    want.extend_from_slice(&block(&json, at));
    assert_eq!(bytes, want);
    assert_eq!(RawArray::<bool>::from_bytes(&bytes).unwrap(), a);
    // Older readers see the numbers.
    assert_eq!(
        RawArray::<u8>::from_bytes(&bytes).unwrap().as_slice(),
        [1, 0, 1, 1]
    );
    // The dynamic array of it carries the same trailer, and so does its file.
    let d = DynArray::from_typed(&a);
    assert_eq!(d.to_bytes().unwrap(), want);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ra");
    a.write_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), want);
    let t = Trailer::read_file(&path).unwrap().unwrap();
    assert_eq!(t.schema, Some(bool::layout()));
    assert_eq!(RawArray::<bool>::read_file(&path).unwrap(), a);
}

#[test]
fn fixed_arrays_of_bool_keep_the_scalar_schema() {
    let a = RawArray::from_vec(vec![[true, false], [false, false]]);
    let bytes = a.to_bytes();
    let t = Trailer::from_file_bytes(&bytes).unwrap().unwrap();
    assert_eq!(t.schema, Some(bool::layout()));
    // The trailer's numpy_descr is the stored dtype, as readers that predate the marker compute it.
    assert_eq!(t.numpy_descr, Some(serde_json::json!("|u1")));
    assert_eq!(RawArray::<[bool; 2]>::from_bytes(&bytes).unwrap(), a);
}

#[test]
fn reading_bool_still_refuses_bytes_other_than_0_and_1() {
    let mut bytes = RawArray::from_vec(vec![true, false]).to_bytes();
    bytes[57] = 2;
    let err = RawArray::<bool>::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidValue { what: "bool", .. }),
        "{err}"
    );
}

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Flagged {
    ok: bool,
    x: f32,
    bits: [bool; 3],
}

#[test]
fn record_bool_fields_are_marked() {
    let l = Flagged::layout();
    let json = serde_json::to_string(&l).unwrap();
    assert_eq!(
        json,
        format!(
            r#"{{"kind":"record","name":"Flagged","fields":[{{"name":"ok","offset":0,"layout":{BOOL_JSON}}},{{"name":"x","offset":1,"layout":{{"kind":"scalar","eltype":"float","elbyte":4}}}},{{"name":"bits","offset":5,"layout":{{"kind":"array","len":3,"item":{BOOL_JSON}}}}}]}}"#
        )
    );
    assert_eq!(
        l.numpy_descr(),
        "[('ok', '|b1'), ('x', '<f4'), ('bits', '|b1', (3,))]"
    );
    assert_eq!(
        Layout::from_numpy_descr_json(&l.numpy_descr_json()).unwrap(),
        {
            let Layout::Record { fields, .. } = l.clone() else {
                unreachable!()
            };
            Layout::Record {
                name: String::new(),
                fields,
            }
        }
    );
    let recs = RawArray::from_vec(vec![Flagged {
        ok: true,
        x: 1.5,
        bits: [false, true, true],
    }]);
    let mut data = vec![1];
    data.extend_from_slice(&1.5f32.to_le_bytes());
    data.extend_from_slice(&[0, 1, 1]);
    let bytes = recs.to_bytes();
    assert_eq!(&bytes[..56], header(0, 8, &[1], 8));
    assert_eq!(&bytes[56..64], data);
    assert_eq!(RawArray::<Flagged>::from_bytes(&bytes).unwrap(), recs);
}

#[test]
fn the_marker_is_valid_only_on_one_byte_uints() {
    let marked = |eltype, elbyte| Layout::Scalar {
        eltype,
        elbyte,
        logical: Some(Logical::Bool),
    };
    assert_eq!(marked(ElType::Uint, 1).validate().unwrap(), 1);
    for (eltype, elbyte) in [(ElType::Int, 1), (ElType::Uint, 2), (ElType::Float, 4)] {
        let rec = Layout::Record {
            name: String::new(),
            fields: vec![Field {
                name: "flag".into(),
                offset: 0,
                layout: marked(eltype, elbyte),
            }],
        };
        let err = rec.validate().unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err.kind(), ErrorKind::BadSchema(_)), "{msg}");
        assert!(
            msg.contains("field 'flag'") && msg.contains("logical \"bool\""),
            "{msg}"
        );
    }
    // An unknown logical type is damage, not a silent number.
    let bad: Result<Layout, _> =
        serde_json::from_str(r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"boolean"}"#);
    assert!(bad.is_err());
    // A known one on the wrong scalar (a date is an int of 4 bytes) is refused by the checks.
    let date: Layout =
        serde_json::from_str(r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"date"}"#)
            .unwrap();
    let msg = date.validate().unwrap_err().to_string();
    assert!(
        msg.contains("logical \"date\" marks an int of 4 bytes"),
        "{msg}"
    );
}

#[test]
fn serde_writes_the_marker_when_every_byte_is_a_bool() {
    let v = vec![true, false, true, true];
    let typed = RawArray::from_vec(v.clone()).to_bytes();
    assert_eq!(rawarray_serde::to_vec(&v).unwrap(), typed);
    let mut streamed = Vec::new();
    let mut ser = rawarray_serde::Serializer::new(&mut streamed);
    serde::Serialize::serialize(&v, &mut ser).unwrap();
    ser.finish().unwrap();
    assert_eq!(streamed, typed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    rawarray_serde::to_file(&path, &v).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), typed);
    assert_eq!(rawarray_serde::from_file::<Vec<bool>>(&path).unwrap(), v);
    // Rows of bools: [bool; 2] elements are still all bools.
    let rows = vec![[true, false], [false, false]];
    assert_eq!(
        rawarray_serde::to_vec(&rows).unwrap(),
        RawArray::from_vec(rows).to_bytes()
    );
    // A u8 among them: no marker, the header and data alone.
    let mixed = vec![(true, 7u8), (false, 1)];
    let bytes = rawarray_serde::to_vec(&mixed).unwrap();
    assert_eq!(bytes.len(), 48 + 2 * 8 + 4);
    assert_eq!(Trailer::from_file_bytes(&bytes).unwrap(), None);
    // u8 numbers alone: no marker.
    let bytes = rawarray_serde::to_vec(&vec![1u8, 0]).unwrap();
    assert_eq!(Trailer::from_file_bytes(&bytes).unwrap(), None);
}

#[test]
fn a_chunked_bool_array_has_its_trailer_block_at_the_chunked_data_end() {
    use rawarray_serde::codec::Codec;
    use rawarray_serde::WriteOptions;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ra");
    let values: Vec<bool> = (0..1000).map(|i| i % 3 == 0).collect();
    RawArray::from_vec(values.clone())
        .write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd))
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    let ndims = word(40) as usize;
    let data_end = 48 + 8 * ndims + word(32) as usize;
    // The forward copy: the tag, then its JSON length, then `at`, its own offset.
    assert_eq!(bytes[data_end..data_end + 8], TRAILER_TAG);
    assert_eq!(word(data_end + 16), data_end as u64);
    let back: RawArray<bool> = RawArray::read_file(&path).unwrap();
    assert_eq!(back.as_slice(), values);
}
