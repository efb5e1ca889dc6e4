//! Record files: writers killed at random moments, appending and reopening, mapped reads of
//! records and n-d snapshots, the trailer, `recover`, a reader racing a writer. The truth is
//! hand-built bytes (headers, trailer blocks with a CRC computed here bit by bit) and formulas
//! of the record index.

mod common;

use std::borrow::Cow;
use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use rawarray_serde::{
    recover, recover_with, Category, Durability, DynArray, ElType, Element, ErrorKind, Field,
    Layout, RawArray, RecordOptions, RecordReader, RecordWriter, RecoverOptions, Trailer,
    WriteOptions,
};
use serde_json::{json, Value};

/// A 20-byte record with a hand-written `Element` impl, packed field by field (no one-copy path).
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    index: u64,
    x: f64,
    tag: [u8; 4],
}

impl Element for Sample {
    const ELTYPE: ElType = ElType::User;
    const ELBYTE: usize = 20;

    fn write_le(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.index.to_le_bytes());
        out[8..16].copy_from_slice(&self.x.to_le_bytes());
        out[16..].copy_from_slice(&self.tag);
    }

    fn read_le(b: &[u8]) -> rawarray_serde::Result<Sample> {
        Ok(Sample {
            index: u64::from_le_bytes(b[..8].try_into().unwrap()),
            x: f64::from_le_bytes(b[8..16].try_into().unwrap()),
            tag: b[16..20].try_into().unwrap(),
        })
    }

    fn swap_bytes(b: &mut [u8]) {
        b[..8].reverse();
        b[8..16].reverse();
    }

    fn layout() -> Layout {
        record_layout("Sample", "tag")
    }
}

/// Another 20-byte record, with another field name: same header, different schema.
#[derive(Clone, Debug, PartialEq)]
struct Other(Sample);

impl Element for Other {
    const ELTYPE: ElType = ElType::User;
    const ELBYTE: usize = 20;
    fn write_le(&self, out: &mut [u8]) {
        self.0.write_le(out);
    }
    fn read_le(b: &[u8]) -> rawarray_serde::Result<Other> {
        Sample::read_le(b).map(Other)
    }
    fn swap_bytes(b: &mut [u8]) {
        Sample::swap_bytes(b);
    }
    fn layout() -> Layout {
        record_layout("Other", "label")
    }
}

fn record_layout(name: &str, last: &str) -> Layout {
    let field = |name: &str, offset, layout| Field {
        name: name.into(),
        offset,
        layout,
    };
    Layout::Record {
        name: name.into(),
        fields: vec![
            field("index", 0, u64::layout()),
            field("x", 8, f64::layout()),
            field(last, 16, <[u8; 4]>::layout()),
        ],
    }
}

/// The schema and dtype of `Sample` as JSON, written out by hand.
fn sample_trailer_json(params: Value) -> Value {
    json!({
        "version": 1,
        "params": params,
        "schema": {"kind": "record", "name": "Sample", "fields": [
            {"name": "index", "offset": 0, "layout": {"kind": "scalar", "eltype": "uint", "elbyte": 8}},
            {"name": "x", "offset": 8, "layout": {"kind": "scalar", "eltype": "float", "elbyte": 8}},
            {"name": "tag", "offset": 16, "layout": {"kind": "array", "len": 4,
                "item": {"kind": "scalar", "eltype": "uint", "elbyte": 1}}},
        ]},
        "numpy_descr": [["index", "<u8"], ["x", "<f8"], ["tag", "|u1", [4]]],
    })
}

fn sample(i: u64) -> Sample {
    Sample {
        index: i,
        x: i as f64 * 0.5 - 3.0,
        tag: (i as u32).wrapping_mul(2_654_435_761).to_le_bytes(),
    }
}

/// Records `range` as a C program would write them: u64, f64, 4 bytes, little-endian, packed.
fn samples_bytes(range: std::ops::Range<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity((range.end - range.start) as usize * 20);
    for i in range {
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&(i as f64 * 0.5 - 3.0).to_le_bytes());
        out.extend_from_slice(&(i as u32).wrapping_mul(2_654_435_761).to_le_bytes());
    }
    out
}

/// A little-endian uncompressed header, word by word.
fn header_bytes(eltype: u64, elbyte: u64, dims: &[u64]) -> Vec<u8> {
    let size = elbyte * dims.iter().product::<u64>();
    let mut out = b"rawarray".to_vec();
    for word in [0, eltype, elbyte, size, dims.len() as u64]
        .into_iter()
        .chain(dims.iter().copied())
    {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out
}

/// CRC-32 (IEEE, reflected, as zlib.crc32), bit by bit: independent of the crate's checksum.
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

/// A trailer block as the docs lay it out: tag, len, at, crc | JSON | crc, at, len, tag.
fn block_bytes(json: &[u8], at: u64) -> Vec<u8> {
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

/// Parses the block starting at `start` by hand, checking both frames and the CRC; returns
/// its `at` field, its JSON as a value, and its length.
fn parse_block(bytes: &[u8], start: usize) -> (u64, Value, usize) {
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    assert_eq!(&bytes[start..start + 8], b"RATRAILR", "head tag at {start}");
    let (len, at) = (word(start + 8) as usize, word(start + 16));
    let json = &bytes[start + 28..start + 28 + len];
    let block = block_bytes(json, at);
    assert_eq!(
        &bytes[start..start + block.len()],
        &block[..],
        "block at {start}"
    );
    (at, serde_json::from_slice(json).unwrap(), block.len())
}

fn params() -> Value {
    json!({"dt": 0.25, "model": "crash test", "units": {"x": "m"}})
}

fn fast() -> RecordOptions {
    RecordOptions::new().durability(Durability::NoFsync)
}

#[test]
fn append_reopen_and_append_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut w = RecordWriter::<Sample>::create(&path, params()).unwrap();
    for i in 0..10 {
        w.append(&sample(i)).unwrap();
    }
    w.flush().unwrap();
    let more: Vec<Sample> = (10..25).map(sample).collect();
    w.append_slice(&more).unwrap();
    assert_eq!((w.len(), w.flushed_len()), (25, 10));
    assert_eq!(w.finish().unwrap().dims, [25]);

    let bytes = fs::read(&path).unwrap();
    let data_end = 56 + 25 * 20;
    assert_eq!(&bytes[..56], &header_bytes(0, 20, &[25])[..]);
    assert_eq!(&bytes[56..data_end], &samples_bytes(0..25)[..]);
    let (at, trailer, len) = parse_block(&bytes, data_end);
    assert_eq!(
        (at, trailer),
        (data_end as u64, sample_trailer_json(params()))
    );
    assert_eq!(
        bytes.len(),
        data_end + len,
        "finish leaves nothing after the trailer"
    );

    // Reopen, keep the parameters, append; dropping the writer finishes it.
    let mut w = RecordWriter::<Sample>::open(&path).unwrap();
    assert_eq!(w.len(), 25);
    assert_eq!(w.trailer().params, params());
    let more: Vec<Sample> = (25..40).map(sample).collect();
    w.append_array(&RawArray::from_vec(more)).unwrap();
    drop(w);
    let bytes = fs::read(&path).unwrap();
    let data_end = 56 + 40 * 20;
    assert_eq!(&bytes[..56], &header_bytes(0, 20, &[40])[..]);
    assert_eq!(&bytes[56..data_end], &samples_bytes(0..40)[..]);
    let (at, trailer, len) = parse_block(&bytes, data_end);
    assert_eq!(
        (at, trailer),
        (data_end as u64, sample_trailer_json(params()))
    );
    assert_eq!(bytes.len(), data_end + len);

    // Reopen with new parameters: they replace the old ones, records stay.
    let w: RecordWriter<Sample> = RecordOptions::new()
        .params(json!({"resumed": true}))
        .open(&path)
        .unwrap();
    w.finish().unwrap();
    let r = RecordReader::<Sample>::open(&path).unwrap();
    assert_eq!(r.len(), 40);
    assert_eq!(r.trailer().unwrap().params, json!({"resumed": true}));
    assert_eq!(r.get(39).unwrap(), Some(sample(39)));
}

#[test]
fn while_writing_the_trailer_is_at_the_data_end_and_at_the_end_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut w: RecordWriter<Sample> = fast().params(params()).create(&path).unwrap();
    let (mut n, mut spare_before, mut moves) = (0, 0, 0);
    for batch in [1u64, 7, 300, 5000, 2] {
        let recs: Vec<Sample> = (n..n + batch).map(sample).collect();
        w.append_slice(&recs).unwrap();
        w.flush().unwrap();
        n += batch;
        let bytes = fs::read(&path).unwrap();
        let data_end = 56 + 20 * n as usize;
        assert_eq!(&bytes[..56], &header_bytes(0, 20, &[n])[..]);
        assert_eq!(&bytes[56..data_end], &samples_bytes(0..n)[..]);
        let (at, fwd, len) = parse_block(&bytes, data_end);
        assert_eq!(
            (at, &fwd),
            (data_end as u64, &sample_trailer_json(params()))
        );
        // The spare copy ends the file, beyond the forward one; when it moves, it leaves free
        // space of 1/8 of the data, at least 64 KiB.
        let spare = bytes.len() - len;
        assert!(spare >= data_end + len, "spare at {spare}");
        if spare != spare_before {
            let slack = (20 * n as usize / 8).max(64 << 10);
            assert!(spare >= data_end + len + slack, "spare at {spare}");
            assert_eq!(spare % 4096, 0);
            (spare_before, moves) = (spare, moves + 1);
        }
        let (at, spare_json, _) = parse_block(&bytes, spare);
        assert_eq!((at, spare_json), (0, fwd));
        // And every reader reads exactly the records.
        let back: RawArray<Sample> = RawArray::read_file(&path).unwrap();
        assert_eq!(back.len() as u64, n);
    }
    assert_eq!(
        moves, 2,
        "the first flush and the 100 KB one move the spare"
    );
}

#[test]
fn reopening_with_another_layout_names_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut w = RecordWriter::<Sample>::create(&path, Value::Null).unwrap();
    w.append(&sample(0)).unwrap();
    w.finish().unwrap();

    let err = RecordWriter::<f64>::open(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("user(20 bytes)") && msg.contains("elbyte 8"),
        "{msg}"
    );

    let err = RecordWriter::<Other>::open(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::SchemaMismatch { at, .. } if at == "field 2"),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("'tag'") && msg.contains("'label'"), "{msg}");

    let err = fast().record_dims([4]).open::<Sample>(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::DimsMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("[4]"), "{err}");

    // A field of f64 [4, 3] per step reopened as [3, 4] or as single values.
    let field = dir.path().join("f.ra");
    let mut w: RecordWriter<f64> = fast().record_dims([4, 3]).create(&field).unwrap();
    w.append_slice(&[1.0; 12]).unwrap();
    w.finish().unwrap();
    for dims in [vec![3, 4], vec![]] {
        let err = fast().record_dims(dims).open::<f64>(&field).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("found [4, 3, 1]"), "{msg}");
    }

    // Compressed files cannot be appended to or mapped.
    let z = dir.path().join("z.ra");
    RawArray::from_vec(vec![1.0f64; 100])
        .write_file_with(&z, &WriteOptions::new().compress(true))
        .unwrap();
    let err = RecordWriter::<f64>::open(&z).unwrap_err();
    assert_eq!(err.category(), Category::Usage);
    assert!(err.to_string().contains("stored as lz4-whole"), "{err}");
    assert!(RecordReader::<f64>::open(&z).is_err());

    // A scalar has no record count.
    let s = dir.path().join("scalar.ra");
    RawArray::scalar(1.0f64).write_file(&s).unwrap();
    let err = RecordWriter::<f64>::open(&s).unwrap_err();
    assert!(err.to_string().contains("record count"), "{err}");
}

/// Value at (x, y) of the snapshot of step k.
fn field(x: u64, y: u64, k: u64) -> f64 {
    (k * 1000 + y * 10 + x) as f64 * 0.5
}

#[test]
fn snapshots_grow_the_last_dim() {
    let (nx, ny) = (5u64, 3u64);
    let snapshot = |k: u64| -> Vec<f64> {
        (0..ny)
            .flat_map(|y| (0..nx).map(move |x| field(x, y, k)))
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("field.ra");
    let mut w: RecordWriter<f64> = fast().record_dims([nx, ny]).create(&path).unwrap();
    for k in 0..7 {
        let a = RawArray::from_shape_vec(vec![nx, ny], snapshot(k)).unwrap();
        w.append_array(&a).unwrap();
        if k % 2 == 1 {
            w.flush().unwrap();
        }
    }
    let two = RawArray::from_shape_vec(vec![nx, ny, 2], [snapshot(7), snapshot(8)].concat());
    w.append_array(&two.unwrap()).unwrap();
    assert!(
        w.append_slice(&[0.0; 14]).is_err(),
        "14 values are no whole record"
    );
    assert!(w.append(&0.0).is_err(), "one value is no whole record");
    let wrong = RawArray::from_shape_vec(vec![ny, nx], snapshot(0)).unwrap();
    assert!(matches!(
        w.append_array(&wrong).unwrap_err().kind(),
        ErrorKind::DimsMismatch { .. }
    ));
    w.finish().unwrap();

    let mut expected = header_bytes(3, 8, &[nx, ny, 9]);
    for k in 0..9 {
        expected.extend(snapshot(k).iter().flat_map(|v| v.to_le_bytes()));
    }
    let bytes = fs::read(&path).unwrap();
    assert_eq!(&bytes[..expected.len()], &expected[..]);

    let r = RecordReader::<f64>::open(&path).unwrap();
    assert_eq!(
        (r.len(), r.record_dims(), r.record_len()),
        (9, &[nx, ny][..], 15)
    );
    let step4 = r.slice(4..=4).unwrap();
    assert!(
        matches!(step4, Cow::Borrowed(_)),
        "f64 after a 72-byte header is aligned"
    );
    assert_eq!(step4[(2 + nx) as usize], field(2, 1, 4)); // x = 2, y = 1
    assert_eq!(
        *r.slice(2..5).unwrap(),
        [snapshot(2), snapshot(3), snapshot(4)].concat()
    );
    assert_eq!(r.iter().len(), 9);
    let a: RawArray<f64> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.dims(), [nx, ny, 9]);
    assert_eq!(a.get(&[2, 1, 6]), Some(&field(2, 1, 6)));
}

#[test]
fn mapped_views_borrow_when_aligned_and_decode_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let value = |i: u64| (u128::from(i) << 64) | u128::from(i * 3 + 1);

    // u128: the data starts 56 bytes into the file (1 dim) or 64 (2 dims).
    for (dims, header_len) in [(vec![40u64], 56usize), (vec![1, 40], 64)] {
        let path = dir.path().join(format!("u128_{}.ra", dims.len()));
        let a = RawArray::from_shape_vec(dims.clone(), (0..40).map(value).collect()).unwrap();
        a.write_file(&path).unwrap();
        let r = RecordReader::<u128>::open(&path).unwrap();
        let s = r.slice(5..9).unwrap();
        assert_eq!(*s, [value(5), value(6), value(7), value(8)]);
        let aligned = header_len % std::mem::align_of::<u128>() == 0;
        assert_eq!(matches!(s, Cow::Borrowed(_)), aligned, "dims {dims:?}");
    }

    // Points: [f64; 3] records over an f64 [3, n] file, borrowed.
    let path = dir.path().join("points.ra");
    let pts: Vec<[f64; 3]> = (0..10)
        .map(|i| [f64::from(i), -f64::from(i), 0.5])
        .collect();
    RawArray::from_vec(pts).write_file(&path).unwrap();
    let r = RecordReader::<[f64; 3]>::open(&path).unwrap();
    assert!(matches!(
        r.slice(7..=7).unwrap(),
        Cow::Borrowed([[7.0, -7.0, 0.5]])
    ));

    // Big-endian data is decoded.
    let path = dir.path().join("be.ra");
    let v: Vec<f64> = (0..10).map(|i| f64::from(i) * 1.5).collect();
    RawArray::from_vec(v)
        .write_file_with(&path, &WriteOptions::new().big_endian(true))
        .unwrap();
    let r = RecordReader::<f64>::open(&path).unwrap();
    assert!(matches!(r.slice(3..5).unwrap(), Cow::Owned(v) if v == [4.5, 6.0]));

    // bool is checked on every access; a bad byte is an error naming its index in the file.
    let path = dir.path().join("bool.ra");
    let mut bytes = header_bytes(2, 1, &[6]);
    bytes.extend([1, 0, 1, 1, 2, 0]);
    fs::write(&path, &bytes).unwrap();
    let r = RecordReader::<bool>::open(&path).unwrap();
    assert_eq!(*r.slice(..4).unwrap(), [true, false, true, true]);
    match r.get(4).unwrap_err().kind() {
        ErrorKind::InvalidValue { index, value, .. } => assert_eq!((*index, *value), (4, 2)),
        other => panic!("{other:?}"),
    }

    // Bounds, and a file with no records.
    assert!(matches!(
        r.slice(6..=6).unwrap_err().kind(),
        ErrorKind::OutOfBounds {
            start: 6,
            end: 7,
            len: 6
        }
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = r.slice(3..2);
    assert!(reversed.is_err());
    let path = dir.path().join("empty.ra");
    RecordWriter::<Sample>::create(&path, Value::Null)
        .unwrap()
        .finish()
        .unwrap();
    let r = RecordReader::<Sample>::open(&path).unwrap();
    assert!(r.is_empty() && r.slice(..).unwrap().is_empty() && r.data().unwrap().is_empty());
    assert!(
        RecordReader::<f64>::open(&path).is_err(),
        "wrong element type"
    );
}

#[test]
fn trailer_survives_rewrites_and_plain_files_get_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut w = RecordWriter::<Sample>::create(&path, params()).unwrap();
    w.append_slice(&(0..5).map(sample).collect::<Vec<_>>())
        .unwrap();
    w.finish().unwrap();
    let original = fs::read(&path).unwrap();
    let expected = Trailer::for_element::<Sample>(params()).unwrap();
    assert_eq!(Trailer::read_file(&path).unwrap(), Some(expected.clone()));
    assert_eq!(
        Trailer::from_file_bytes(&original).unwrap(),
        Some(expected.clone())
    );
    assert_eq!(expected.params_as::<Value>().unwrap(), params());

    // DynArray keeps the trailing bytes, so a rewrite keeps the trailer, byte for byte.
    let d = DynArray::read_file(&path).unwrap();
    assert_eq!(d.trailer(), Some(&expected));
    d.write_file(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap(), original);
    // Compressed, the block is found from the end of the file.
    let z = dir.path().join("z.ra");
    d.write_file_with(&z, &WriteOptions::new().compress(true))
        .unwrap();
    assert_eq!(Trailer::read_file(&z).unwrap(), Some(expected.clone()));

    // Appending keeps it.
    let mut w = RecordWriter::<Sample>::open(&path).unwrap();
    w.append(&sample(5)).unwrap();
    w.finish().unwrap();
    assert_eq!(Trailer::read_file(&path).unwrap(), Some(expected));

    // A plain file has none; appending to it adds one with the schema.
    let plain = dir.path().join("plain.ra");
    RawArray::from_vec((0..3).map(sample).collect())
        .write_file(&plain)
        .unwrap();
    assert_eq!(Trailer::read_file(&plain).unwrap(), None);
    let mut w = RecordWriter::<Sample>::open(&plain).unwrap();
    w.append(&sample(3)).unwrap();
    w.finish().unwrap();
    let bytes = fs::read(&plain).unwrap();
    assert_eq!(&bytes[56..56 + 80], &samples_bytes(0..4)[..]);
    let (_, json, _) = parse_block(&bytes, 56 + 80);
    assert_eq!(json, sample_trailer_json(Value::Null));
}

#[test]
fn recover_extends_over_a_flush_whose_header_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let json = Trailer::for_element::<Sample>(params()).unwrap().to_json();
    // The header says 3 records; 4 more and their forward block were written before the kill.
    let mut file = header_bytes(0, 20, &[3]);
    file.extend(samples_bytes(0..7));
    file.extend(block_bytes(&json, 56 + 140));
    file.extend([0u8; 100]);
    file.extend(block_bytes(&json, 0));
    fs::write(&path, &file).unwrap();

    let r = recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after, r.trailer), (3, 7, true));
    assert_eq!(r.bytes_removed, 100 + block_bytes(&json, 0).len() as u64);
    let mut expected = header_bytes(0, 20, &[7]);
    expected.extend(samples_bytes(0..7));
    expected.extend(block_bytes(&json, 56 + 140));
    assert_eq!(fs::read(&path).unwrap(), expected);
    // Recovering a settled file changes nothing.
    let again = recover(&path).unwrap();
    assert_eq!((again.records_after, again.bytes_removed), (7, 0));
    assert_eq!(fs::read(&path).unwrap(), expected);
}

#[test]
fn recover_never_takes_the_spare_copy_for_the_end_of_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let json = Trailer::for_element::<Sample>(params()).unwrap().to_json();
    // A torn flush: half a record, zeros, and the spare copy exactly on a record boundary.
    let mut file = header_bytes(0, 20, &[2]);
    file.extend(samples_bytes(0..2));
    file.extend(&samples_bytes(2..3)[..10]);
    file.extend([0u8; 50]); // records 2, 3 and 4 span these 60 bytes
    file.extend(block_bytes(&json, 0));
    fs::write(&path, &file).unwrap();

    let r = recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after, r.trailer), (2, 2, true));
    let mut expected = header_bytes(0, 20, &[2]);
    expected.extend(samples_bytes(0..2));
    expected.extend(block_bytes(&json, 56 + 40));
    assert_eq!(fs::read(&path).unwrap(), expected);
}

#[test]
fn recover_without_a_trailer_takes_whole_records_only_when_forced_and_refuses_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut file = header_bytes(0, 20, &[1]);
    file.extend(samples_bytes(0..3));
    file.extend([9u8; 7]);
    fs::write(&path, &file).unwrap();
    // Unforced: 47 bytes that no trailer vouches for are left alone, and named.
    let err = recover(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ForeignTrailing { bytes: 47, looks_like, .. }
            if looks_like.starts_with("bytes 0100000000000000")),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), file, "nothing written");
    let r = recover_with(&path, &RecoverOptions::new().force(true)).unwrap();
    assert_eq!(
        (r.records_before, r.records_after, r.trailer),
        (1, 3, false)
    );
    let back: RawArray<Sample> = RawArray::read_file(&path).unwrap();
    assert_eq!(back.into_vec(), (0..3).map(sample).collect::<Vec<_>>());

    // Only a damaged trailer: complete records cannot be told from torn ones.
    let json = Trailer::new(Value::Null).unwrap().to_json();
    let mut file = header_bytes(0, 20, &[1]);
    file.extend(samples_bytes(0..1));
    let mut block = block_bytes(&json, 0);
    block[30] ^= 0xff;
    file.extend(block);
    fs::write(&path, &file).unwrap();
    let err = recover(&path).unwrap_err();
    assert!(err.to_string().contains("CRC mismatch"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), file, "nothing written");
}

#[test]
fn a_reader_racing_a_writer_sees_valid_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.ra");
    // A small buffer: records are also written out between flushes, moving the spare copy.
    let mut w: RecordWriter<Sample> = fast()
        .params(params())
        .buffer_bytes(4096)
        .create(&path)
        .unwrap();
    // Every 40 flushes the writer waits for the reader to open the file once more, so that
    // the two overlap however the threads are scheduled.
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = opened.clone();
    let writer = std::thread::spawn(move || {
        let mut n = 0;
        for j in 0..400u64 {
            let batch = 1 + j * 7 % 400;
            w.append_slice(&(n..n + batch).map(sample).collect::<Vec<_>>())
                .unwrap();
            w.flush().unwrap();
            n += batch;
            if j % 40 == 39 {
                let (before, since) = (seen.load(SeqCst), std::time::Instant::now());
                while seen.load(SeqCst) == before && since.elapsed() < Duration::from_secs(10) {
                    std::thread::yield_now();
                }
            }
        }
        w.finish().unwrap();
        n
    });
    let (mut opens, mut last) = (0, 0);
    loop {
        let done = writer.is_finished();
        let r = RecordReader::<Sample>::open(&path).unwrap();
        assert!(r.len() >= last, "records went from {last} to {}", r.len());
        last = r.len();
        assert_eq!(*r.data().unwrap(), samples_bytes(0..last as u64)[..]);
        assert_eq!(r.trailer().expect("a trailer").params, params());
        opens += 1;
        opened.store(opens, SeqCst);
        if done {
            break;
        }
    }
    let total = writer.join().unwrap();
    assert_eq!(last as u64, total);
    assert!(opens >= 10, "only {opens} opens raced the writer");
}

#[test]
fn appending_to_a_big_endian_file_keeps_its_byte_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("be.ra");
    RawArray::from_vec(vec![1.5f64, 2.5])
        .write_file_with(&path, &WriteOptions::new().big_endian(true))
        .unwrap();
    let mut w = RecordWriter::<f64>::open(&path).unwrap();
    w.append_slice(&vec![3.5; 10_000]).unwrap(); // 80 KB: still packed, never copied raw
    w.finish().unwrap();
    let bytes = fs::read(&path).unwrap();
    assert_eq!(
        u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
        1,
        "flags"
    );
    assert_eq!(&bytes[56..64], &1.5f64.to_be_bytes());
    assert_eq!(
        &bytes[56 + 8 * 10_001..56 + 8 * 10_002],
        &3.5f64.to_be_bytes()
    );
    let r = RecordReader::<f64>::open(&path).unwrap();
    assert_eq!((r.len(), r.get(10_001).unwrap()), (10_002, Some(3.5)));
}

#[test]
fn creating_over_a_mapped_file_leaves_its_readers_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut w = RecordWriter::<Sample>::create(&path, Value::Null).unwrap();
    w.append_slice(&(0..5).map(sample).collect::<Vec<_>>())
        .unwrap();
    w.finish().unwrap();
    let old = RecordReader::<Sample>::open(&path).unwrap();
    let mut w = RecordWriter::<Sample>::create(&path, Value::Null).unwrap();
    w.append(&sample(100)).unwrap();
    w.finish().unwrap();
    assert_eq!(*old.data().unwrap(), samples_bytes(0..5)[..]);
    let new = RecordReader::<Sample>::open(&path).unwrap();
    assert_eq!(*new.data().unwrap(), samples_bytes(100..101)[..]);
}

/// New files get the permissions `File::create` gives, not a temporary file's 0o600.
#[cfg(unix)]
#[test]
fn new_files_have_the_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |name: &str| {
        fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
    };
    fs::File::create(dir.path().join("plain")).unwrap();
    RecordWriter::<f64>::create(dir.path().join("records.ra"), Value::Null)
        .unwrap()
        .finish()
        .unwrap();
    RawArray::from_vec(vec![1u8])
        .write_file(dir.path().join("array.ra"))
        .unwrap();
    assert_eq!(mode("records.ra"), mode("plain"));
    assert_eq!(mode("array.ra"), mode("plain"));
}

#[test]
fn past_the_buffer_size_records_are_written_but_not_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let mut w: RecordWriter<Sample> = fast().buffer_bytes(1000).create(&path).unwrap();
    w.append_slice(&(0..120).map(sample).collect::<Vec<_>>())
        .unwrap();
    // 50 records fill the 1000-byte buffer: 100 are written, 20 wait, none are committed.
    assert_eq!((w.flushed_len(), w.len()), (0, 120));
    let bytes = fs::read(&path).unwrap();
    assert_eq!(&bytes[..56], &header_bytes(0, 20, &[0])[..]);
    assert_eq!(&bytes[56..56 + 2000], &samples_bytes(0..100)[..]);
    assert_eq!(RecordReader::<Sample>::open(&path).unwrap().len(), 0);
    assert_eq!(
        Trailer::read_file(&path).unwrap().unwrap().params,
        Value::Null
    );
    w.flush().unwrap();
    assert_eq!(RecordReader::<Sample>::open(&path).unwrap().len(), 120);

    // Plain-old-data slices of 64 KiB or more skip the buffer; the file is the same.
    let path = dir.path().join("f.ra");
    let mut w: RecordWriter<f64> = fast().create(&path).unwrap();
    let values: Vec<f64> = (0..20_000).map(f64::from).collect();
    w.append_slice(&values[..10]).unwrap();
    w.append_slice(&values[10..19_000]).unwrap();
    w.append_slice(&values[19_000..]).unwrap();
    w.finish().unwrap();
    let mut expected = header_bytes(3, 8, &[20_000]);
    expected.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    assert_eq!(&fs::read(&path).unwrap()[..expected.len()], &expected[..]);
}

const CHILD: &str = "RA_RECORDS_CRASH_CHILD";

/// Records per flush when the file holds `n`: the parent recomputes it to know what a kill
/// between a flush and its report may have added.
fn batch(n: u64) -> u64 {
    1 + n.wrapping_mul(2_654_435_761) % 300
}

/// Records after which a child stops appending (and the parent starts a new file).
const CAP: u64 = 40_000;

/// The child role of the crash test: appends and flushes until killed, writing the record
/// count after each completed flush to a side file. Does nothing unless the parent set CHILD.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [path, side, mode]: [&str; 3] = spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let durability = match mode {
        "fsync" => Durability::Fsync,
        _ => Durability::NoFsync,
    };
    // In "spill" rounds records are written out before their flush, 1500 bytes at a time.
    let buffer = if mode == "spill" { 1500 } else { 1 << 20 };
    let opts = RecordOptions::new()
        .params(params())
        .durability(durability)
        .buffer_bytes(buffer);
    let mut w: RecordWriter<Sample> = if Path::new(path).exists() {
        opts.open(path).unwrap()
    } else {
        opts.create(path).unwrap()
    };
    let report = common::crash::reporter(side);
    // What it found on opening is committed too (a previous child may have been killed
    // between a flush and its report).
    let mut n = w.len();
    report(n);
    loop {
        if n >= CAP {
            std::thread::sleep(Duration::from_secs(1));
            continue;
        }
        let b = batch(n);
        w.append_slice(&(n..n + b).map(sample).collect::<Vec<_>>())
            .unwrap();
        w.flush().unwrap();
        n += b;
        report(n);
    }
}

#[cfg(unix)]
#[test]
fn killed_writers_leave_valid_files() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    use std::time::Instant;

    let (dir, path, side) = common::crash::scratch("crash.ra");
    let read_side = || common::crash::flushed(&side);
    let mut below = common::crash::seeded("crash test");
    let (mut kills, mut appending_kills, mut recovered) = (0, 0, 0);
    for round in 0..70 {
        let before = read_side();
        let mode = ["nofsync", "spill", "nofsync", "fsync"][round % 4];
        let err_path = dir.path().join("child.err");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(
                CHILD,
                format!("{}\n{}\n{mode}", path.display(), side.display()),
            )
            .stdout(Stdio::null())
            .stderr(fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        // Wait until it is flushing, then kill it at a random moment; every fifth round, kill
        // it at any moment from its start (creating, reopening and settling the file).
        let started = Instant::now();
        if round % 5 == 4 {
            std::thread::sleep(Duration::from_micros(below(15_000)));
        }
        while round % 5 != 4 && read_side() == before {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "child exited ({status}):\n{}",
                    fs::read_to_string(&err_path).unwrap()
                );
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no progress");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(below(4000)));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status}");
        kills += 1;
        appending_kills += usize::from(round % 5 != 4);

        let flushed = read_side();
        let n = check_crashed_file(&path, flushed);
        if round % 2 == 0 && path.exists() {
            let r = recover(&path).unwrap();
            assert_eq!(r.records_before, n);
            assert!(r.trailer);
            assert!(
                r.records_after == n || r.records_after == flushed + batch(flushed),
                "recovered {} records, flushed {flushed}",
                r.records_after
            );
            recovered += r.records_after - n;
            assert_eq!(check_crashed_file(&path, flushed), r.records_after);
            // Settled: the forward block ends the file.
            let bytes = fs::read(&path).unwrap();
            let data_end = 56 + 20 * r.records_after as usize;
            let (at, _, len) = parse_block(&bytes, data_end);
            assert_eq!((at, bytes.len()), (data_end as u64, data_end + len));
        }
        if n >= CAP {
            fs::remove_file(&path).unwrap();
            fs::remove_file(&side).unwrap();
        }
    }
    eprintln!("{kills} kills, {recovered} records recovered from lost header updates");
    assert!(kills >= 50);
    assert!(appending_kills >= 50);
}

/// Checks a file after its writer was killed, `flushed` records being the last count the child
/// reported: a valid header for exactly that many records or the next flush's, those records
/// byte for byte, and the trailer. Returns the header's record count.
fn check_crashed_file(path: &Path, flushed: u64) -> u64 {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert_eq!(flushed, 0, "the file is gone after {flushed} records");
            return 0;
        }
        Err(e) => panic!("{e}"),
    };
    let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    let n = word(6);
    assert_eq!(&bytes[..56], &header_bytes(0, 20, &[n])[..], "header");
    let next = flushed + batch(flushed);
    assert!(
        n == flushed || n == next,
        "header says {n}; last flush reported {flushed}"
    );
    let data_end = 56 + 20 * n as usize;
    assert_eq!(&bytes[56..data_end], &samples_bytes(0..n)[..], "records");
    let trailer = Trailer::from_file_bytes(&bytes)
        .unwrap()
        .expect("a trailer");
    assert_eq!(
        serde_json::to_value(&trailer).unwrap(),
        sample_trailer_json(params())
    );
    let r = RecordReader::<Sample>::open(path).unwrap();
    assert_eq!(r.len() as u64, n);
    if n > 0 {
        assert_eq!(r.get(n as usize - 1).unwrap(), Some(sample(n - 1)));
    }
    n
}

/// A writer whose element is known only at run time (as the Python package's is) writes the
/// same file as the typed writer, byte for byte, under the same lock, and refuses bytes that
/// are not whole records and files of another layout.
#[test]
fn a_dyn_record_writer_writes_what_the_typed_writer_writes() {
    use rawarray_serde::ElementSpec;
    #[derive(rawarray_serde::RaRecord, Clone, Debug, PartialEq)]
    struct Rec {
        t: f64,
        xyz: [f32; 3],
        id: u16,
    }
    let recs: Vec<Rec> = (0..50u16)
        .map(|i| Rec {
            t: f64::from(i) * 0.5,
            xyz: [f32::from(i), -1.0, 2.5],
            id: i * 3,
        })
        .collect();
    // The records packed by hand: t, then xyz, then id, little-endian, no padding (22 bytes).
    let mut packed = Vec::new();
    for r in &recs {
        packed.extend_from_slice(&r.t.to_le_bytes());
        for x in r.xyz {
            packed.extend_from_slice(&x.to_le_bytes());
        }
        packed.extend_from_slice(&r.id.to_le_bytes());
    }
    assert_eq!(packed.len(), 50 * 22);

    let dir = tempfile::tempdir().unwrap();
    let (typed, dynamic) = (dir.path().join("typed.ra"), dir.path().join("dyn.ra"));
    let opts = RecordOptions::new().params(json!({"dt": 0.5}));
    let mut w: RecordWriter<Rec> = opts.create(&typed).unwrap();
    w.append_slice(&recs[..20]).unwrap();
    w.flush().unwrap();
    w.append_slice(&recs[20..]).unwrap();
    w.finish().unwrap();

    let spec = ElementSpec::from_layout(Rec::layout()).unwrap();
    assert_eq!(spec, ElementSpec::of::<Rec>());
    let mut d = opts.create_dyn(&dynamic, &spec).unwrap();
    assert_eq!(d.record_bytes(), 22);
    // A second writer of either kind is refused while this one lives.
    let locked = RecordOptions::new().open_dyn(&dynamic, &spec).unwrap_err();
    assert!(
        matches!(locked.kind(), ErrorKind::Locked { .. }),
        "{locked}"
    );
    let ragged = d.append_bytes(&packed[..21]).unwrap_err();
    assert_eq!(ragged.category(), Category::Usage);
    d.append_bytes(&packed[..20 * 22]).unwrap();
    d.flush().unwrap();
    assert_eq!(RecordReader::<Rec>::open(&dynamic).unwrap().len(), 20);
    d.append_bytes(&packed[20 * 22..]).unwrap();
    assert_eq!((d.len(), d.flushed_len()), (50, 20));
    d.finish().unwrap();
    assert_eq!(fs::read(&typed).unwrap(), fs::read(&dynamic).unwrap());

    // Reopened to append; another layout is refused, naming both schemas.
    let mut d = RecordOptions::new().open_dyn(&dynamic, &spec).unwrap();
    d.append_bytes(&packed[..22]).unwrap();
    d.finish().unwrap();
    let r = RecordReader::<Rec>::open(&dynamic).unwrap();
    assert_eq!(r.len(), 51);
    assert_eq!(r.get(50).unwrap(), Some(recs[0].clone()));
    assert_eq!(r.trailer().unwrap().params, json!({"dt": 0.5}));
    let other = ElementSpec::of::<[u8; 22]>();
    assert!(RecordOptions::new().open_dyn(&dynamic, &other).is_err());
}

/// A run-time writer cannot swap a big-endian file's values: it is refused before anything is
/// written, so the file (its params, its tail) is byte-identical afterwards.
#[test]
fn open_dyn_refuses_a_big_endian_file_without_touching_it() {
    use rawarray_serde::ElementSpec;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("be.ra");
    let mut bytes = Vec::new();
    RawArray::from_vec(vec![1.0f64, 2.0, 3.0])
        .write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    fs::write(&path, &bytes).unwrap();
    let err = RecordOptions::new()
        .params(json!({"new": 1}))
        .open_dyn(&path, &ElementSpec::of::<f64>())
        .unwrap_err();
    assert_eq!(err.category(), Category::Usage, "{err}");
    assert!(err.to_string().contains("big-endian"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

/// Writes records `range` with `append_with`, packing each field into the writer's buffer.
fn append_with_samples(
    w: &mut rawarray_serde::DynRecordWriter,
    range: std::ops::Range<u64>,
) -> rawarray_serde::Result<()> {
    let packed = samples_bytes(range.clone());
    w.append_with(range.end - range.start, |dst| {
        assert_eq!(dst.len(), packed.len(), "the slice is count records");
        dst.copy_from_slice(&packed);
        Ok(())
    })
}

/// `append_with` writes the file `append_bytes` writes for the same records, byte for byte:
/// small appends (buffered), appends of 64 KiB or more (written at once), a buffer small enough
/// to be written out between flushes, plain and compressed, mixed with `append_bytes`. The
/// truth for a plain file is its bytes built by hand: header, records, trailer block.
#[test]
fn append_with_writes_what_append_bytes_writes() {
    use rawarray_serde::{codec::Codec, ElementSpec};
    let spec = ElementSpec::of::<Sample>();
    // Records of 20 bytes: 3300 of them (66,000 bytes) are over the 64 KiB of a direct write.
    let batches = [0..7, 7..300, 300..3600, 3600..3601, 3601..5000, 5000..5003];
    let dir = tempfile::tempdir().unwrap();
    for compressed in [false, true] {
        for buffer in [8 << 20, 4096] {
            let opts = fast().params(params()).buffer_bytes(buffer);
            let opts = if compressed {
                opts.codec(Codec::Zstd)
            } else {
                opts
            };
            let case = format!("compressed {compressed}, buffer {buffer}");
            let (by_bytes, by_with) = (dir.path().join("bytes.ra"), dir.path().join("with.ra"));
            let mut b = opts.create_dyn(&by_bytes, &spec).unwrap();
            let mut w = opts.create_dyn(&by_with, &spec).unwrap();
            for (k, range) in batches.iter().enumerate() {
                b.append_bytes(&samples_bytes(range.clone())).unwrap();
                if k == 4 {
                    // Mixed with append_bytes in one writer.
                    w.append_bytes(&samples_bytes(range.clone())).unwrap();
                } else {
                    append_with_samples(&mut w, range.clone()).unwrap();
                }
                assert_eq!((w.len(), w.flushed_len()), (range.end, b.flushed_len()));
                if k % 2 == 1 {
                    b.flush().unwrap();
                    w.flush().unwrap();
                    let same = fs::read(&by_bytes).unwrap() == fs::read(&by_with).unwrap();
                    assert!(same, "{case}: the files differ after batch {k}");
                }
            }
            b.finish().unwrap();
            w.finish().unwrap();
            let bytes = fs::read(&by_with).unwrap();
            assert!(
                bytes == fs::read(&by_bytes).unwrap(),
                "{case}: the files differ"
            );
            if compressed {
                let r = RecordReader::<Sample>::open(&by_with).unwrap();
                let want: Vec<Sample> = (0..5003).map(sample).collect();
                assert_eq!(r.slice(..).unwrap().to_vec(), want, "{case}");
            } else {
                let mut want = header_bytes(0, 20, &[5003]);
                want.extend(samples_bytes(0..5003));
                assert!(bytes[..want.len()] == want[..], "{case}: not the records");
                let (at, _, len) = parse_block(&bytes, want.len());
                assert_eq!((at, want.len() + len), (want.len() as u64, bytes.len()));
            }
        }
    }
}

/// A `fill` that fails (half-way through its slice) or panics appends nothing, whether its
/// records would be buffered or written at once: the count, the file and later appends are
/// as if it had never been called. So is a count whose bytes overflow or cannot be allocated.
#[test]
fn a_failed_append_with_appends_nothing() {
    use rawarray_serde::{codec::Codec, ElementSpec};
    let spec = ElementSpec::of::<Sample>();
    let dir = tempfile::tempdir().unwrap();
    for compressed in [false, true] {
        // 10 records are buffered; 4000 (80,000 bytes) would be written at once.
        for count in [10u64, 4000] {
            let case = format!("compressed {compressed}, {count} records");
            let opts = if compressed {
                fast().codec(Codec::Zstd)
            } else {
                fast()
            };
            let (good, failed) = (dir.path().join("good.ra"), dir.path().join("failed.ra"));
            // The same appends and flushes without the failures.
            let mut g = opts.create_dyn(&good, &spec).unwrap();
            g.append_bytes(&samples_bytes(0..100)).unwrap();
            g.flush().unwrap();
            g.append_bytes(&samples_bytes(100..120)).unwrap();
            g.append_bytes(&samples_bytes(120..150)).unwrap();
            g.finish().unwrap();

            let mut w = opts.create_dyn(&failed, &spec).unwrap();
            append_with_samples(&mut w, 0..100).unwrap();
            w.flush().unwrap();
            append_with_samples(&mut w, 100..120).unwrap();
            let err = w
                .append_with(count, |dst| {
                    let half = dst.len() / 2;
                    dst[..half].fill(0xAB);
                    Err(std::io::Error::other("the step's values are not ready").into())
                })
                .unwrap_err();
            assert!(err.to_string().contains("not ready"), "{case}: {err}");
            assert_eq!((w.len(), w.flushed_len()), (120, 100), "{case}");
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.append_with(count, |dst| {
                    dst.fill(0xCD);
                    panic!("a fill that panics");
                })
            }));
            assert!(panicked.is_err(), "{case}");
            assert_eq!(w.len(), 120, "{case}");
            for huge in [u64::MAX, 1 << 58] {
                let err = w.append_with(huge, |_| panic!("not called")).unwrap_err();
                assert!(
                    matches!(err.kind(), ErrorKind::TooLarge { .. }),
                    "{case}: {err}"
                );
            }
            assert_eq!(w.len(), 120, "{case}");
            // The failures committed nothing: readers see the first flush.
            assert_eq!(RecordReader::<Sample>::open(&failed).unwrap().len(), 100);
            append_with_samples(&mut w, 120..150).unwrap();
            w.finish().unwrap();
            let bytes = fs::read(&failed).unwrap();
            assert!(
                bytes == fs::read(&good).unwrap(),
                "{case}: the files differ"
            );
            let r = RecordReader::<Sample>::open(&failed).unwrap();
            let want: Vec<Sample> = (0..150).map(sample).collect();
            assert_eq!(r.slice(..).unwrap().to_vec(), want, "{case}");
            if !compressed {
                let mut want = header_bytes(0, 20, &[150]);
                want.extend(samples_bytes(0..150));
                assert!(bytes[..want.len()] == want[..], "{case}: not the records");
            }
        }
    }
}
