//! The worked examples of doc/format.md, byte for byte: each ```` ```hex NAME ```` block of the
//! spec is parsed from the spec itself, and the library must write exactly those bytes and read
//! them back as the values the spec says they hold. The spec cannot drift from the code.
//!
//! A block's lines are `OFFSET: HEX BYTES | note` (the offset, in hex, must be the count of
//! bytes before the line) or ``OFFSET: `text` `` for bytes given as text (the trailer's JSON).

use std::collections::BTreeMap;

use rawarray_serde::{
    DynArray, ElType, Header, RaRecord, RawArray, RecordReader, RecordWriter, Trailer, WriteOptions,
};
use serde_json::json;

/// The spec's hex blocks, by name.
fn examples() -> BTreeMap<String, Vec<u8>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/doc/format.md");
    let spec = std::fs::read_to_string(path).expect("doc/format.md is there");
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<u8>)> = None;
    for (n, line) in spec.lines().enumerate() {
        let at = || format!("doc/format.md:{}: {line:?}", n + 1);
        if let Some(name) = line.strip_prefix("```hex ") {
            assert!(current.is_none(), "{}: a block inside a block", at());
            current = Some((name.trim().to_string(), Vec::new()));
            continue;
        }
        let Some((name, bytes)) = current.as_mut() else {
            continue;
        };
        if line.trim() == "```" {
            let done = std::mem::take(bytes);
            assert!(
                out.insert(name.clone(), done).is_none(),
                "{}: two blocks named {name}",
                at()
            );
            current = None;
            continue;
        }
        let (offset, rest) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("{}: no offset", at()));
        let offset = usize::from_str_radix(offset.trim(), 16)
            .unwrap_or_else(|e| panic!("{}: offset: {e}", at()));
        assert_eq!(
            offset,
            bytes.len(),
            "{}: the offset is not the bytes before",
            at()
        );
        let rest = rest.trim_start();
        if let Some(text) = rest.strip_prefix('`') {
            let end = text
                .rfind('`')
                .unwrap_or_else(|| panic!("{}: unclosed `", at()));
            bytes.extend_from_slice(&text.as_bytes()[..end]);
        } else {
            let hex = rest.split('|').next().unwrap_or_default();
            for word in hex.split_whitespace() {
                assert_eq!(word.len(), 2, "{}: {word:?} is not one byte", at());
                let b = u8::from_str_radix(word, 16)
                    .unwrap_or_else(|e| panic!("{}: {word:?}: {e}", at()));
                bytes.push(b);
            }
        }
    }
    assert!(
        current.is_none(),
        "doc/format.md: a ```hex block is not closed"
    );
    out
}

fn example(name: &str) -> Vec<u8> {
    examples()
        .remove(name)
        .unwrap_or_else(|| panic!("doc/format.md has no ```hex {name} block"))
}

/// The spec's f32 array: numpy shape (2, 3), dims [3, 2], values 1 to 6.
fn f32_array() -> RawArray<f32> {
    RawArray::from_shape_vec([3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap()
}

#[test]
fn the_f32_array_with_a_trailer() {
    let spec = example("f32-3x2");
    let mut written = DynArray::from_typed(&f32_array());
    written.set_trailer(&Trailer::for_element::<f32>(json!({"units": "m"})).unwrap());
    assert_eq!(written.to_bytes().unwrap(), spec);

    let read = RawArray::<f32>::from_bytes(&spec).unwrap();
    assert_eq!(read, f32_array());
    assert_eq!(read.get(&[2, 0]), Some(&3.0)); // the first dim varies fastest
    let h = Header::decode(&spec).unwrap();
    assert_eq!(
        (h.eltype, h.elbyte, h.size, h.dims),
        (ElType::Float, 4, 24, vec![3, 2])
    );
    let t = Trailer::from_file_bytes(&spec).unwrap().unwrap();
    assert_eq!(t.params, json!({"units": "m"}));
    assert_eq!(t.numpy_descr, Some(json!("<f4")));
}

#[test]
fn the_f32_array_as_one_lz4_block() {
    let spec = example("f32-3x2-lz4");
    let mut written = Vec::new();
    f32_array()
        .write_to_with(&mut written, &WriteOptions::new().compress(true))
        .unwrap();
    assert_eq!(written, spec);
    assert_eq!(RawArray::<f32>::from_bytes(&spec).unwrap(), f32_array());
    // The block is a raw LZ4 block as lz4_flex (and the C library) decode it, no frame.
    let block = &spec[64..];
    let plain = lz4_flex::block::decompress(block, 24).unwrap();
    assert_eq!(plain, &example("f32-3x2")[64..88]);
}

/// The spec's record: 4 + 2 bytes, packed, no padding.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Sample {
    t: f32,
    id: u16,
}

#[test]
fn the_record_file() {
    let spec = example("records");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples.ra");
    let mut w = RecordWriter::<Sample>::create(&path, json!({"dt": 0.5})).unwrap();
    w.append(&Sample { t: 0.5, id: 1 }).unwrap();
    w.flush().unwrap();
    // While it is written: the spare copy (at = 0) at the offset the spec computes, 69632.
    let growing = std::fs::read(&path).unwrap();
    let block = spec.len() - 68;
    assert_eq!(growing.len(), 69632 + block);
    assert_eq!(&growing[69632 + 16..69632 + 24], &0u64.to_le_bytes());
    assert_eq!(
        Trailer::from_trailing_bytes(&growing[69632..]).unwrap(),
        Trailer::from_file_bytes(&spec).unwrap()
    );
    w.append(&Sample { t: 1.0, id: 2 }).unwrap();
    w.finish().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), spec);

    let from_spec = dir.path().join("from_spec.ra");
    std::fs::write(&from_spec, &spec).unwrap();
    let r = RecordReader::<Sample>::open(&from_spec).unwrap();
    assert_eq!(
        r.slice(..).unwrap().to_vec(),
        [Sample { t: 0.5, id: 1 }, Sample { t: 1.0, id: 2 }]
    );
    assert_eq!(r.trailer().unwrap().params, json!({"dt": 0.5}));
}

#[test]
fn the_ragged_text_file() {
    use rawarray_serde::{Ragged, RaggedHeader};
    let spec = example("ragged-text");
    assert_eq!(
        Ragged::from_strs(["hé", "", "abc"]).to_bytes().unwrap(),
        spec
    );
    let read = Ragged::<u8>::from_bytes(&spec).unwrap();
    assert!(read.is_text());
    assert_eq!(read.to_strings().unwrap(), ["hé", "", "abc"]);
    assert_eq!(read.offsets(), [0, 3, 3, 6]);
    let h = RaggedHeader::decode(&spec).unwrap();
    assert_eq!(
        (h.values, h.rows, h.slots(), h.values_at()),
        (6, 3, 4, 0x60)
    );
    // Readers of plain arrays refuse it at the flag word.
    assert!(DynArray::from_bytes(&spec).is_err());
}
