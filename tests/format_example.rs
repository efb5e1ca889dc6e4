//! The worked examples of doc/format.md, byte for byte: each ```` ```hex NAME ```` block of the
//! spec is parsed from the spec itself, and the library must write exactly those bytes and read
//! them back as the values the spec says they hold. The spec cannot drift from the code.
//!
//! A block's lines are `OFFSET: HEX BYTES | note` (the offset, in hex, must be the count of
//! bytes before the line) or ``OFFSET: `text` `` for bytes given as text (the trailer's JSON).
//!
//! The second half pins the rules the spec settles where a reader written from it alone would
//! otherwise guess (issue #32, item 7): each test builds the rule's bytes by hand (CRCs by the
//! spec's definition, computed here) and checks that the library does what the spec says.

use std::collections::BTreeMap;

use rawarray_serde::{
    DynArray, ElType, Element, ErrorKind, Header, RaRecord, RawArray, RecordReader, RecordWriter,
    Trailer, WriteOptions,
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

#[test]
fn the_bool_array() {
    let spec = example("bool");
    let bools = RawArray::from_vec(vec![true, false, true]);
    assert_eq!(bools.to_bytes(), spec);
    assert_eq!(RawArray::<bool>::from_bytes(&spec).unwrap(), bools);
    let t = Trailer::from_file_bytes(&spec).unwrap().unwrap();
    assert_eq!(
        t.numpy_descr,
        Some(json!("|u1")),
        "the stored dtype (section 6.3)"
    );
    assert_eq!(
        serde_json::to_value(&t.schema).unwrap(),
        json!({"kind": "scalar", "eltype": "uint", "elbyte": 1, "logical": "bool"})
    );
    // A byte other than 0 or 1 is refused by a reader of bool (section 7), naming the element.
    let mut two = spec.clone();
    two[0x39] = 2;
    let err = RawArray::<bool>::from_bytes(&two).unwrap_err().to_string();
    assert!(err.contains('1') && err.contains('2'), "{err}");
    // Readers also accept the logical dtype |b1 for a bool scalar; any other dtype, or |b1 for
    // text, makes the trailer damaged.
    let with_descr = |schema: &str, descr: &str| {
        file(
            (0, 2, 1),
            &[3],
            &[1, 0, 1],
            &block(
                format!(
                    r#"{{"version":1,"params":null,"schema":{schema},"numpy_descr":"{descr}"}}"#
                )
                .as_bytes(),
                59,
            ),
        )
    };
    let bool_schema = r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"bool"}"#;
    let text_schema = r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"text"}"#;
    assert_eq!(with_descr(bool_schema, "|u1"), spec);
    let logical = Trailer::from_file_bytes(&with_descr(bool_schema, "|b1")).unwrap();
    assert_eq!(logical.unwrap().numpy_descr, Some(json!("|b1")));
    for (schema, descr) in [
        (bool_schema, "|i1"),
        (bool_schema, "<u2"),
        (text_schema, "|b1"),
    ] {
        assert_damaged(&with_descr(schema, descr), "numpy_descr");
    }
    assert!(Trailer::from_file_bytes(&with_descr(text_schema, "|u1")).is_ok());
}

// ---- The rules the spec settles, on bytes built by hand ----------------------------------------

/// CRC-32 as section 6.1 defines it (IEEE 802.3, reflected, as zlib's `crc32`), bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A header (section 2) of `(flags, eltype, elbyte)`, `size` and `dims`.
fn header(fee: (u64, u64, u64), size: u64, dims: &[u64]) -> Vec<u8> {
    let (flags, eltype, elbyte) = fee;
    let mut words = vec![
        u64::from_le_bytes(*b"rawarray"),
        flags,
        eltype,
        elbyte,
        size,
    ];
    words.push(dims.len() as u64);
    words.extend_from_slice(dims);
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A plain file: header for `data` (size = its length), the data, then `trailing`.
fn file(fee: (u64, u64, u64), dims: &[u64], data: &[u8], trailing: &[u8]) -> Vec<u8> {
    let mut out = header(fee, data.len() as u64, dims);
    out.extend_from_slice(data);
    out.extend_from_slice(trailing);
    out
}

/// A trailer block (section 6.1) framing `json` for the offset `at`.
fn block(json: &[u8], at: u64) -> Vec<u8> {
    let (len, at) = ((json.len() as u64).to_le_bytes(), at.to_le_bytes());
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

/// The file `a` writes with `opts`.
fn written<T: Element>(a: &RawArray<T>, opts: &WriteOptions) -> Vec<u8> {
    let mut out = Vec::new();
    a.write_to_with(&mut out, opts).unwrap();
    out
}

/// A `u8` file of `[1, 2]` whose trailer's JSON is `json`: the JSON rules of section 6.3.
fn with_json(json: &str) -> Vec<u8> {
    file((0, 2, 1), &[2], &[1, 2], &block(json.as_bytes(), 58))
}

/// The file's trailer is damaged (an error, never "no trailer"), with `why` in the message,
/// and its data still reads.
fn assert_damaged(file: &[u8], why: &str) {
    let err = Trailer::from_file_bytes(file).unwrap_err().to_string();
    assert!(err.contains(why), "expected {why:?} in: {err}");
    let d = DynArray::from_bytes(file).unwrap();
    assert!(d.trailer().is_none() && d.trailer_error().is_some());
}

/// Section 2, rule 7: `size` is compared with the plain length by the data section's layout;
/// a chunked section's `size` is its own length, larger or smaller. Rule 2 refuses bits 1 and
/// 2 together with the flags, before the eltype and elbyte are looked at.
#[test]
fn rule_7_size_by_the_layout_of_the_data_section() {
    let kind = |bytes: &[u8]| Header::decode_any(bytes).unwrap_err().into_kind();
    // Plain: exactly product(dims) x elbyte.
    assert!(matches!(
        kind(&header((0, 3, 4), 20, &[3, 2])),
        ErrorKind::SizeMismatch {
            size: 20,
            expected: 24
        }
    ));
    // One LZ4 block: at most 255 x size + 24 plain bytes (3 bytes: 789; 4 bytes: 1044).
    assert!(matches!(
        kind(&header((2, 2, 1), 3, &[1000])),
        ErrorKind::CompressionRatio {
            size: 3,
            plain: 1000
        }
    ));
    assert!(Header::decode_any(&header((2, 2, 1), 4, &[1000])).is_ok());
    // Chunked: no relation. A small array's section is larger than its data, a large zero
    // array's smaller; both read, and a reader that does not decode chunked sections refuses
    // bit 2 as unknown.
    let small = f32_array();
    let zeros = RawArray::from_shape_vec([1000, 100], vec![0u16; 100_000]).unwrap();
    let mut sections = Vec::new();
    for (bytes, plain) in [
        (written(&small, &WriteOptions::chunked()), 24u64),
        (written(&zeros, &WriteOptions::chunked()), 200_000),
    ] {
        let h = Header::decode_any(&bytes).unwrap();
        assert_eq!((h.flags.bits(), h.data_len()), (4, plain));
        assert_eq!(
            h.size,
            bytes.len() as u64 - 64,
            "size is the section's length"
        );
        assert!(matches!(
            Header::decode(&bytes).unwrap_err().into_kind(),
            ErrorKind::UnknownFlags { bits: 4 }
        ));
        sections.push(h.size);
    }
    assert!(sections[0] > 24 && sections[1] < 200_000, "{sections:?}");
    let read = DynArray::from_bytes(&written(&small, &WriteOptions::chunked()));
    assert_eq!(read.unwrap().data(), &f32_array().to_bytes()[64..]);
    // Bits 1 and 2 together: refused at the flags, before the elbyte 0 (rule 5) is seen.
    assert!(matches!(
        kind(&header((6, 3, 0), 24, &[3, 2])),
        ErrorKind::UnknownFlags { bits: 6 }
    ));
    // Rule 5 before rule 6: an elbyte the eltype does not have, with dims that would overflow.
    assert!(matches!(
        kind(&header((0, 3, 3), 0, &[1 << 63, 4])),
        ErrorKind::ImpossibleElbyte { elbyte: 3, .. }
    ));
}

/// Sections 2 and 10: the first checks, in order, for plain and ragged readers alike.
#[test]
fn the_first_header_checks_in_order() {
    use rawarray_serde::RaggedHeader;
    // The magic on the bytes there are: a short input that is no .ra file is refused as such,
    // a short one that is a prefix of the magic as a truncated header.
    for short in [&b"hello"[..], b"ra\x00"] {
        let plain = Header::decode(short).unwrap_err().into_kind();
        let ragged = RaggedHeader::decode(short).unwrap_err().into_kind();
        assert!(matches!(plain, ErrorKind::BadMagic { .. }), "{plain:?}");
        assert!(matches!(ragged, ErrorKind::BadMagic { .. }), "{ragged:?}");
    }
    for short in [&b"rawar"[..], b"rawarray\x08\x00"] {
        let plain = Header::decode(short).unwrap_err().into_kind();
        let ragged = RaggedHeader::decode(short).unwrap_err().into_kind();
        assert!(
            matches!(plain, ErrorKind::HeaderTruncated { .. }),
            "{plain:?}"
        );
        assert!(
            matches!(ragged, ErrorKind::HeaderTruncated { .. }),
            "{ragged:?}"
        );
    }
    // The elbyte (rule 5) before the byte count (rule 6), in a ragged header too (section 10).
    let ragged = header((8, 3, 3), 0, &[1 << 63, 4, 1]);
    assert!(matches!(
        RaggedHeader::decode(&ragged).unwrap_err().into_kind(),
        ErrorKind::ImpossibleElbyte { elbyte: 3, .. }
    ));
    let ragged = header((8, 3, 4), 0, &[1 << 63, 4, 1]);
    assert!(matches!(
        RaggedHeader::decode(&ragged).unwrap_err().into_kind(),
        ErrorKind::DataLenOverflow { .. }
    ));
}

/// Section 6.2: a tag counts only where all its 8 bytes lie at or after the data end, and a
/// block only where it starts there or later.
#[test]
fn a_trailer_tag_counts_only_after_the_data_end() {
    let none = |f: &[u8]| {
        assert_eq!(Trailer::from_file_bytes(f).unwrap(), None);
        assert!(DynArray::from_bytes(f).unwrap().trailer_error().is_none());
    };
    // Data that spells the tag, wholly or across the data end, is data.
    none(&file((0, 2, 1), &[8], b"RATRAILR", b""));
    let straddling = file((0, 2, 1), &[5], b"xxRAT", b"RAILR");
    assert_eq!(&straddling[straddling.len() - 8..], b"RATRAILR");
    none(&straddling);
    // A tag after the data with no room for its frames: damaged, backward and forward.
    assert_damaged(&file((0, 2, 1), &[3], b"abc", b"..RATRAILR"), "cut short");
    let mut short = b"RATRAILR".to_vec();
    short.extend_from_slice(&[0; 40]);
    assert_damaged(&file((0, 2, 1), &[3], b"abc", &short), "cut short");
    // A valid block whose first 16 bytes are the data: its tag ends the file, but the block
    // would start before the data end. Damaged, not a trailer.
    let b = block(br#"{"version":1}"#, 0);
    assert_damaged(
        &file((0, 2, 1), &[16], &b[..16], &b[16..]),
        "more than fit after the data",
    );
    // The same block wholly after the data, even past other trailing bytes: a (spare) trailer.
    let mut after = b"junk!".to_vec();
    after.extend_from_slice(&b);
    let t = Trailer::from_file_bytes(&file((0, 2, 1), &[3], b"abc", &after));
    assert_eq!(t.unwrap().unwrap().version, 1);
}

/// Section 6.3: which keys must be there, what their values may be, and the two cases a JSON
/// parser may let pass (a key twice, nesting past 256 levels).
#[test]
fn the_trailer_json_keys() {
    // Only `version` is required; the other keys of the table read as null when absent.
    let t = Trailer::from_file_bytes(&with_json(r#"{"version":1}"#));
    let t = t.unwrap().unwrap();
    assert_eq!(
        (t.version, &t.params, &t.schema, &t.numpy_descr),
        (1, &json!(null), &None, &None)
    );
    assert!(t.required.is_empty() && t.extra.is_empty());
    // Whitespace around the object is JSON; anything else after it is not.
    assert!(Trailer::from_file_bytes(&with_json(" {\"version\":1}\n")).is_ok());
    for (json, why) in [
        (r#"{"params":{"dt":0.5}}"#, "missing field `version`"),
        (r#"{"version":0}"#, "version 0"),
        (r#"{"version":4294967296}"#, "expected u32"),
        (r#"{"version":1.0}"#, "expected u32"),
        (r#"{"version":"1"}"#, "expected u32"),
        (r#"{"version":1,"required":null}"#, "expected a sequence"),
        (r#"{"version":1}x"#, "trailing characters"),
        (r#"[1]"#, "expected struct Trailer"),
        // A key twice, wherever it is: a known key, an unknown one, inside params, inside a
        // schema.
        (r#"{"version":1,"version":1}"#, "\"version\" twice"),
        (
            r#"{"version":1,"units":"m","units":"s"}"#,
            "\"units\" twice",
        ),
        (r#"{"version":1,"params":{"a":1,"a":2}}"#, "\"a\" twice"),
        (
            r#"{"version":1,"schema":{"kind":"scalar","eltype":"uint","elbyte":1,"elbyte":1}}"#,
            "\"elbyte\" twice",
        ),
        // A layout's keys are required, except `logical`, whose value is one of section 7's
        // markers, on the scalar section 7 gives it.
        (
            r#"{"version":1,"schema":{"kind":"record","fields":[{"name":"x","offset":0,"layout":{"kind":"scalar","eltype":"uint","elbyte":1}}]}}"#,
            "missing field `name`",
        ),
        (
            r#"{"version":1,"schema":{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"datetime"}}"#,
            "logical \"datetime\" is not one of bool, text, timestamp[UNIT], duration[UNIT], date",
        ),
        (
            r#"{"version":1,"schema":{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"date"}}"#,
            "logical \"date\" marks an int of 4 bytes",
        ),
        (
            r#"{"version":1,"schema":{"kind":"scalar","eltype":"int","elbyte":1,"logical":"bool"}}"#,
            "marks a uint of 1 byte",
        ),
    ] {
        assert_damaged(&with_json(json), why);
    }
    // Unknown keys inside a layout are ignored; a numpy_descr without a schema is not checked.
    let t = Trailer::from_file_bytes(&with_json(
        r#"{"version":1,"schema":{"kind":"scalar","eltype":"uint","elbyte":1,"unit":"K"},"numpy_descr":"|u1"}"#,
    ));
    assert_eq!(
        t.unwrap().unwrap().schema,
        Some(rawarray_serde::Layout::scalar(ElType::Uint, 1))
    );
    let t = Trailer::from_file_bytes(&with_json(r#"{"version":1,"numpy_descr":"<f8"}"#));
    assert_eq!(t.unwrap().unwrap().numpy_descr, Some(json!("<f8")));

    // Nesting: the document's object is level 1, so params of k nested lists nest 1 + k.
    let nested = |k: usize| format!("{}1{}", "[".repeat(k), "]".repeat(k));
    let at_limit = with_json(&format!(r#"{{"version":1,"params":{}}}"#, nested(255)));
    let read = Trailer::from_file_bytes(&at_limit).unwrap().unwrap();
    assert_eq!(read.params.to_string(), nested(255));
    assert_damaged(
        &with_json(&format!(r#"{{"version":1,"params":{}}}"#, nested(256))),
        "deeper than 256 levels",
    );
    // A writer refuses params that would nest the document deeper.
    let value = |k: usize| (0..k).fold(json!(1), |v, _| json!([v]));
    let err = Trailer::new(value(256)).unwrap_err().to_string();
    assert!(err.contains("256 levels"), "{err}");
    let t = Trailer::new(value(255)).unwrap();
    let back = Trailer::from_trailing_bytes(&t.encode_block(0)).unwrap();
    assert_eq!(back, Some(t));
}

/// A chain of `n` records (each one field) over an `f64`, or of `n` arrays of one `f64`.
fn chain(n: usize, record: bool) -> serde_json::Value {
    let mut l = json!({"kind": "scalar", "eltype": "float", "elbyte": 8});
    for k in 0..n {
        l = if record {
            json!({"kind": "record", "name": "", "fields": [{"name": format!("l{k}"), "offset": 0, "layout": l}]})
        } else {
            json!({"kind": "array", "len": 1, "item": l})
        };
    }
    l
}

/// Section 6.3: a layout nests at most 64 levels, an array and a record counting one each, and
/// the deepest valid schema (64 records, 194 JSON levels) reads back from a file.
#[test]
fn a_schema_nests_64_arrays_and_records() {
    // serde_json's own writer has no depth limit; its reader stops at 128, hence lifted.
    let json_of = |schema: serde_json::Value| {
        let mut out = br#"{"version":1,"params":null,"schema":"#.to_vec();
        out.extend(serde_json::to_vec(&schema).unwrap());
        out.push(b'}');
        out
    };
    for record in [true, false] {
        let f = |n: usize| {
            let json = json_of(chain(n, record));
            file((0, 0, 8), &[1], &[0; 8], &block(&json, 56 + 8))
        };
        let ok = f(64);
        let t = Trailer::from_file_bytes(&ok).unwrap().unwrap();
        let schema = t.schema.unwrap();
        // The file's header agrees with the record chain (eltype 0, elbyte 8); an array chain
        // over a float does not describe eltype 0 elements, which is checked apart (below).
        assert_eq!(
            schema.check_header(&Header::decode(&ok).unwrap()).is_ok(),
            record
        );
        assert_eq!(serde_json::to_value(&schema).unwrap(), chain(64, record));
        assert_damaged(&f(65), "nests too deep");
    }
    // 64 records take 3 x 64 + 2 = 194 JSON levels; the document limit is above it.
    let depth = |v: &serde_json::Value| -> usize {
        fn d(v: &serde_json::Value) -> usize {
            match v {
                serde_json::Value::Array(a) => 1 + a.iter().map(d).max().unwrap_or(0),
                serde_json::Value::Object(o) => 1 + o.values().map(d).max().unwrap_or(0),
                _ => 0,
            }
        }
        d(v)
    };
    assert_eq!(1 + depth(&chain(64, true)), 194);
}

/// A 4-byte user-defined record, to read files as records of.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct R4 {
    x: f32,
}

/// Section 6.3, "The schema and the header": a valid schema that does not describe the file's
/// elements leaves the trailer valid, is not used, and is refused by readers that need it.
#[test]
fn a_schema_that_does_not_describe_the_elements() {
    let dir = tempfile::tempdir().unwrap();
    let params = r#""params":{"keep":"me"}"#;
    for (i, (fee, schema, why)) in [
        // A scalar schema on an eltype 0 file.
        (
            (0, 0, 4),
            r#"{"kind":"scalar","eltype":"float","elbyte":4}"#,
            "does not describe elements of eltype 0",
        ),
        // A record of 8 bytes on elements of 4.
        (
            (0, 0, 4),
            r#"{"kind":"record","name":"","fields":[{"name":"x","offset":0,"layout":{"kind":"scalar","eltype":"float","elbyte":8}}]}"#,
            "of 8 bytes describes elements of elbyte 4",
        ),
        // A record on a float file.
        (
            (0, 3, 4),
            r#"{"kind":"record","name":"","fields":[{"name":"x","offset":0,"layout":{"kind":"scalar","eltype":"float","elbyte":4}}]}"#,
            "does not describe elements of eltype 3",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let json = format!(r#"{{"version":1,{params},"schema":{schema}}}"#);
        let data = [0, 0, 128, 63, 0, 0, 0, 64]; // 1.0f32, 2.0f32
        let bytes = file(fee, &[2], &data, &block(json.as_bytes(), 64));
        // The trailer is valid: its params read.
        let t = Trailer::from_file_bytes(&bytes).unwrap().unwrap();
        assert_eq!(t.params, json!({"keep": "me"}));
        let err = t
            .schema
            .unwrap()
            .check_header(&Header::decode(&bytes).unwrap())
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::BadSchema(m) if m.contains(why)),
            "{err}"
        );
        // The elements read by the header alone.
        assert_eq!(DynArray::from_bytes(&bytes).unwrap().data(), &data);
        // A reader of records by a type refuses the file.
        if fee.1 == 0 {
            let path = dir.path().join(format!("s{i}.ra"));
            std::fs::write(&path, &bytes).unwrap();
            assert!(RecordReader::<R4>::open(&path).is_err());
        }
    }
}

// ---- The chunked layout's points (doc/chunked.md), and ragged values (section 10.2) -------

/// Where the one chunk of a chunked file written with one index segment is entered: the
/// offset in the data section of its index entry, and the entry's length (chunked.md 5.1,
/// 5.4, 6.1, 6.2; statistics off).
fn only_entry(section: &[u8], ndims: usize) -> (usize, usize) {
    let u32_at = |i: usize| u32::from_le_bytes(section[i..i + 4].try_into().unwrap()) as usize;
    match &section[..8] {
        b"RACHUNK1" => (568 + 8 * ndims, 24),
        b"RACHUNK2" => {
            let f = u32_at(16);
            let s = u32_at(40 + 16 * ndims + 8 * f);
            assert_eq!(s, 0, "written without statistics");
            (48 + 16 * ndims + 8 * f + 1032, 32)
        }
        other => panic!("not a chunked section: {other:?}"),
    }
}

/// The file (one chunk of one block, the chunk last in the section) with that block's payload
/// replaced by `payload`: block table, entry and header made to agree, CRCs by the spec.
fn with_payload(file: &[u8], ndims: usize, payload: &[u8]) -> Vec<u8> {
    let data = 48 + 8 * ndims;
    let mut section = file[data..].to_vec();
    let (at, len) = only_entry(&section, ndims);
    let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) as usize;
    let chunk_at = word(&section, at);
    assert_eq!(
        chunk_at + word(&section, at + 8),
        section.len(),
        "the chunk is last"
    );
    assert_eq!(section[at + 20] & 1, 0, "the chunk is coded, not raw");
    let mut stored = (payload.len() as u64).to_le_bytes().to_vec();
    stored.extend_from_slice(&crc32(payload).to_le_bytes());
    stored.extend_from_slice(payload);
    section.truncate(chunk_at);
    section.extend_from_slice(&stored);
    section[at + 8..at + 16].copy_from_slice(&(stored.len() as u64).to_le_bytes());
    section[at + 16..at + 20].copy_from_slice(&crc32(&stored).to_le_bytes());
    if len == 32 {
        // Version 2: the entry's own CRC, of its first 24 bytes and the chunk number (0).
        let mut e = section[at..at + 24].to_vec();
        e.extend_from_slice(&0u64.to_le_bytes());
        section[at + 24..at + 28].copy_from_slice(&crc32(&e).to_le_bytes());
    }
    let mut out = file[..data].to_vec();
    out[32..40].copy_from_slice(&(section.len() as u64).to_le_bytes());
    out.extend_from_slice(&section);
    out
}

/// The payload of the one block of the file's one chunk.
fn only_payload(file: &[u8], ndims: usize) -> Vec<u8> {
    let section = &file[48 + 8 * ndims..];
    let (at, _) = only_entry(section, ndims);
    let word = |i: usize| u64::from_le_bytes(section[i..i + 8].try_into().unwrap()) as usize;
    let (chunk_at, len) = (word(at), word(at + 8));
    section[chunk_at + 12..chunk_at + len].to_vec()
}

/// Bit shuffle as chunked.md 5.2 states it, with bit 0 the least significant bit of a byte:
/// bit `i % 8` of byte `i / 8` of plane `8 j + b` is bit `b` of byte `j` of element `i`.
fn bitshuffle_by_the_spec(raw: &[u8], w: usize) -> Vec<u8> {
    let k = raw.len() / w;
    let k8 = k - k % 8;
    let mut out = vec![0u8; raw.len()];
    for i in 0..k8 {
        for j in 0..w {
            for b in 0..8 {
                let bit = (raw[i * w + j] >> b) & 1;
                out[(8 * j + b) * (k8 / 8) + i / 8] |= bit << (i % 8);
            }
        }
    }
    out[k8 * w..].copy_from_slice(&raw[k8 * w..]);
    out
}

/// chunked.md 5.2: the bit shuffle's bit order, in the library's filter and in a file.
#[test]
fn the_bit_shuffle_bit_order() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut bytes = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    for w in [1, 2, 3, 4, 8, 12, 16] {
        for k in (0..=40).chain([63, 64, 65, 255, 256, 1000, 4099]) {
            let raw = bytes(w * k);
            let mut got = vec![0u8; raw.len()];
            rawarray_serde::codec::bitshuffle::bitshuffle(&raw, w, &mut got);
            assert_eq!(got, bitshuffle_by_the_spec(&raw, w), "w {w}, k {k}");
        }
    }
    // One element of value 1 first, then zeros: bit 0 of element 0 is bit 0 (the least
    // significant) of plane 0's first byte.
    let mut one = vec![0u8; 16];
    one[0] = 1;
    assert_eq!(bitshuffle_by_the_spec(&one, 2)[0], 1);
    // In a file: a u16 chunk of 100 values (12 groups of 8 and 4 left), one block, lz4.
    let values: Vec<u16> = (0..100).map(|i| (i * i) as u16).collect();
    let a = RawArray::from_shape_vec([100], values.clone()).unwrap();
    let opts = WriteOptions::chunked()
        .codec(rawarray_serde::Codec::Lz4)
        .filters([rawarray_serde::codec::Filter::BitShuffle])
        .chunks(vec![100])
        .blocks(vec![100])
        .statistics(false);
    let bytes = written(&a, &opts);
    let filtered = lz4_flex::block::decompress(&only_payload(&bytes, 1), 200).unwrap();
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(filtered, bitshuffle_by_the_spec(&raw, 2));
}

/// chunked.md 5.3: a zstd block is one zstd frame whose content size may be absent; a reader
/// knows the block's size from the grid. Both layout versions.
#[test]
fn a_zstd_frame_without_its_content_size() {
    let values: Vec<u32> = (0..3000).map(|i| i / 7).collect();
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = RawArray::from_shape_vec([3000], values).unwrap();
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
        .unwrap();
    let frame = c.compress(&raw).unwrap();
    // The frame header descriptor: no Frame_Content_Size field (flag 0, not single-segment).
    assert_eq!(&frame[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    assert_eq!(frame[4] & 0xe0, 0, "descriptor {:#04x}", frame[4]);
    for opts in [
        WriteOptions::chunked().blocks(vec![3000]),
        WriteOptions::chunked()
            .layout_version(1)
            .block_bytes(12_000),
    ] {
        let opts = opts
            .codec(rawarray_serde::Codec::Zstd)
            .filters([])
            .chunks(vec![3000])
            .statistics(false);
        let bytes = written(&a, &opts);
        let payload = only_payload(&bytes, 1);
        assert_eq!(zstd::bulk::decompress(&payload, 12_000).unwrap(), raw);
        let patched = with_payload(&bytes, 1, &frame);
        assert_ne!(patched, bytes);
        let read = DynArray::from_bytes(&patched).unwrap();
        assert_eq!(read.data(), &raw[..], "{opts:?}");
        // The same frame one byte short of the block is refused, naming the block.
        let short = c.compress(&raw[..raw.len() - 4]).unwrap();
        let err = DynArray::from_bytes(&with_payload(&bytes, 1, &short));
        assert!(err.unwrap_err().to_string().contains("block 0"));
    }
}

/// A chunked file of `dims [0]` and elbyte `elbyte` whose version 1 config says `block_bytes`
/// (chunked.md 6.1): the config, built by hand, and an empty index segment.
fn v1_config_file(elbyte: u64, block_bytes: u64) -> Vec<u8> {
    let mut c = b"RACHUNK1".to_vec();
    for w in [0u32, 1, 0, 0] {
        c.extend_from_slice(&w.to_le_bytes()); // filter none, codec lz4, level 0, reserved
    }
    for w in [block_bytes, 0, 1, 1] {
        c.extend_from_slice(&w.to_le_bytes()); // block bytes, S0, ndims, chunk shape [1]
    }
    let crc = crc32(&c);
    c.extend_from_slice(&crc.to_le_bytes());
    c.extend_from_slice(&[0; 4]);
    c.extend_from_slice(&576u64.to_le_bytes()); // segment 0 right after the config
    c.extend_from_slice(&[0; 504]);
    assert_eq!(c.len(), 576);
    let mut out = header((4, 0, elbyte), c.len() as u64, &[0]);
    out.extend_from_slice(&c);
    out
}

/// chunked.md 6.1: version 1's block bytes are a positive multiple of elbyte, at most 2^30, or
/// elbyte itself where an element is larger than 2^30 bytes.
#[test]
fn version_1_block_bytes() {
    let big = (1u64 << 30) + 8;
    for (elbyte, block_bytes, ok) in [
        (1, 1 << 30, true),
        (1, (1 << 30) + 1, false),
        (4, 4, true),
        (4, 6, false),
        (4, 0, false),
        (3, 3 * ((1 << 30) / 3), true),
        (big, big, true),
        (big, 2 * big, false),
        (big, 1 << 30, false),
    ] {
        let read = DynArray::from_bytes(&v1_config_file(elbyte, block_bytes));
        match read {
            Ok(d) => assert!(ok && d.data().is_empty(), "{elbyte}, {block_bytes}"),
            Err(e) => assert!(
                !ok && e.to_string().contains("config block bytes"),
                "{elbyte}, {block_bytes}: {e}"
            ),
        }
    }
}

/// Section 10.2: compressed ragged values. The slot word, the values section's config of
/// `ndims - 1` dims, and `size < V`, which is no refusal here (it is for flags = 8).
#[test]
fn compressed_ragged_values() {
    use rawarray_serde::{Ragged, RaggedHeader};
    let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let rows = vec![
        vec![[0.5f32, 1.0, 2.0]; 1000],
        vec![],
        vec![[3.0, 4.0, 5.0]; 500],
    ];
    let r = Ragged::from_rows(rows.clone());
    let bytes = r.to_bytes_with(&WriteOptions::chunked()).unwrap();
    // Header: flags 12, dims [3, m, n], then the slot word opens the data section.
    assert_eq!(word(&bytes, 8), 12);
    assert_eq!(
        (
            word(&bytes, 40),
            word(&bytes, 48),
            word(&bytes, 56),
            word(&bytes, 64)
        ),
        (3, 3, 1500, 3)
    );
    let slots = word(&bytes, 72) as usize;
    assert_eq!(slots, 4, "written whole: n + 1 slots");
    let offsets: Vec<u64> = (0..4).map(|k| word(&bytes, 80 + 8 * k)).collect();
    assert_eq!(offsets, [0, 1000, 1000, 1500]);
    // The values section: a chunked section of dims [3, m], its config's ndims word 2.
    let values_at = 72 + 8 + 8 * slots;
    assert_eq!(&bytes[values_at..values_at + 8], b"RACHUNK2");
    assert_eq!(word(&bytes, values_at + 32), 2, "config ndims = ndims - 1");
    assert_eq!(word(&bytes, values_at + 40), 3, "chunks hold whole values");
    let (size, v) = (word(&bytes, 32), 3 * 4 * 1500);
    assert!(size < v, "size {size} < V {v}");
    let back = Ragged::<[f32; 3]>::from_bytes(&bytes).unwrap();
    assert_eq!(back.iter().map(<[_]>::to_vec).collect::<Vec<_>>(), rows);
    // slots <= n, and a slot count passing size, are refused naming slots.
    for bad in [3u64, size / 8] {
        let mut b = bytes.clone();
        b[72..80].copy_from_slice(&bad.to_le_bytes());
        let err = RaggedHeader::decode(&b).unwrap_err().to_string();
        assert!(err.contains(&format!("slots = {bad}")), "{err}");
    }
    // In a plain ragged file (flags = 8), size < V is refused.
    let mut plain = example("ragged-text");
    plain[32..40].copy_from_slice(&5u64.to_le_bytes());
    let err = RaggedHeader::decode(&plain).unwrap_err().to_string();
    assert!(err.contains("less than the 6 bytes"), "{err}");
}
