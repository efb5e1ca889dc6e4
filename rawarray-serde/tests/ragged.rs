//! Ragged files (flag bit 3): round trips of every element type with rows of length 0, 1 and
//! many; hand-built bytes as the truth for the layout; hostile headers and offsets refused
//! naming the row; the writer's commits, growth, lock, and a reader racing it; writers killed
//! at random moments.

// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

mod common;

use std::borrow::Cow;
use std::fs;
use std::path::Path;
use std::time::Duration;

use rawarray_serde::ragged::DynRagged;
use rawarray_serde::{
    bf16, f16, Complex, DynArray, Element, ErrorKind, Ragged, RaggedHeader, RaggedOptions,
    RaggedReader, RaggedWriter, RawArray, ReadMode, WriteOptions,
};

#[derive(rawarray_serde::RaRecord, Clone, Copy, Debug, PartialEq)]
struct Hit {
    t: f64,
    id: u16,
}

/// Rows of length 0, 1 and many (and 0 again), from `f(i)` for the i-th value.
fn shaped<T: Clone>(f: impl Fn(usize) -> T) -> Vec<Vec<T>> {
    let mut i = 0;
    [0usize, 1, 17, 0, 3]
        .iter()
        .map(|&len| {
            (0..len)
                .map(|_| {
                    i += 1;
                    f(i)
                })
                .collect()
        })
        .collect()
}

fn round_trip<T: Element + Clone + PartialEq + std::fmt::Debug>(rows: Vec<Vec<T>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let r = Ragged::from_rows(&rows);
    r.write_file(&path).unwrap();
    let back = Ragged::<T>::read_file(&path).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.iter().map(<[T]>::to_vec).collect::<Vec<_>>(), rows);
    let mapped = RaggedReader::<T>::open(&path).unwrap();
    assert_eq!(mapped.rows(), rows.len());
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(&*mapped.row(k).unwrap(), &row[..], "row {k}");
    }
    assert!(mapped.row(rows.len()).is_err());
    // The same rows through the writer, flushed twice.
    let wpath = dir.path().join("w.ra");
    let mut w = RaggedWriter::<T>::create(&wpath).unwrap();
    for (k, row) in rows.iter().enumerate() {
        w.append_row(row).unwrap();
        if k == 1 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
    assert_eq!(Ragged::<T>::read_file(&wpath).unwrap(), r);
}

#[test]
fn every_element_type_round_trips_with_rows_of_0_1_and_many() {
    round_trip(shaped(|i| i as i8));
    round_trip(shaped(|i| i as i16 * -300));
    round_trip(shaped(|i| i as i32 * -70_000));
    round_trip(shaped(|i| i as i64 * -(1 << 40)));
    round_trip(shaped(|i| i as i128 * -(1 << 100)));
    round_trip(shaped(|i| i as u8));
    round_trip(shaped(|i| i as u16 * 300));
    round_trip(shaped(|i| i as u32 * 70_000));
    round_trip(shaped(|i| i as u64 * (1 << 40)));
    round_trip(shaped(|i| i as u128 * (1 << 100)));
    round_trip(shaped(|i| f16::from_f32(i as f32 / 4.0)));
    round_trip(shaped(|i| bf16::from_f32(i as f32 / 4.0)));
    round_trip(shaped(|i| i as f32 / 3.0));
    round_trip(shaped(|i| i as f64 / 3.0));
    round_trip(shaped(|i| Complex::new(i as f32, -(i as f32))));
    round_trip(shaped(|i| Complex::new(i as f64, 0.5)));
    round_trip(shaped(|i| i % 3 == 0));
    round_trip(shaped(|i| char::from_u32(0x3b1 + i as u32).unwrap()));
    round_trip(shaped(|i| [i as f32, 0.0, -(i as f32)]));
    round_trip(shaped(|i| Hit {
        t: i as f64,
        id: i as u16,
    }));
}

#[test]
fn only_empty_rows_and_no_rows_round_trip() {
    round_trip::<f32>(vec![vec![]; 5]);
    round_trip::<f32>(vec![]);
    round_trip::<Hit>(vec![vec![], vec![]]);
    let none = Ragged::<u16>::new().to_bytes().unwrap();
    let h = RaggedHeader::decode(&none).unwrap();
    assert_eq!((h.rows, h.values, h.size), (0, 0, 8));
}

/// Header words, offsets and values of a ragged file, built by hand.
fn ragged_bytes(eltype: u64, elbyte: u64, size: u64, dims: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out = b"rawarray".to_vec();
    for w in [8, eltype, elbyte, size, dims.len() as u64]
        .into_iter()
        .chain(dims.iter().copied())
    {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn the_layout_is_offsets_then_values_as_built_by_hand() {
    let r = Ragged::from_rows([vec![7u16, 8], vec![], vec![9]]);
    let bytes = r.to_bytes().unwrap();
    let mut data = words(&[0, 2, 2, 3]);
    data.extend([7u8, 0, 8, 0, 9, 0]);
    let expected = ragged_bytes(2, 2, 32 + 6, &[3, 3], &data);
    assert_eq!(&bytes[..expected.len()], &expected[..]);
    // A hand-built file without a trailer, with free offsets slots, reads the same.
    let mut data = words(&[0, 2, 2, 3, 0xdead, 0xbeef]);
    data.extend([7u8, 0, 8, 0, 9, 0]);
    let spare = ragged_bytes(2, 2, 48 + 6, &[3, 3], &data);
    let back = Ragged::<u16>::from_bytes(&spare).unwrap();
    assert_eq!(back.iter().collect::<Vec<_>>(), [&[7u16, 8][..], &[], &[9]]);
}

#[test]
fn plain_readers_refuse_a_ragged_file_and_the_ragged_reader_a_plain_one() {
    let bytes = Ragged::from_rows([vec![1.0f32]]).to_bytes().unwrap();
    let err = DynArray::from_bytes(&bytes).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::RaggedFile), "{err}");
    assert!(err.to_string().contains("a reader of ragged rows"), "{err}");
    // Chunked ragged values (flag bits 3 and 2) are a ragged file too, to every array reader.
    let chunked = Ragged::from_rows([vec![1.0f32; 100]])
        .to_bytes_with(&WriteOptions::new().codec(rawarray_serde::Codec::Zstd))
        .unwrap();
    assert_eq!(u64::from_le_bytes(chunked[8..16].try_into().unwrap()), 12);
    for err in [
        DynArray::from_bytes(&chunked).unwrap_err(),
        rawarray_serde::Header::decode_any(&chunked).unwrap_err(),
    ] {
        assert!(matches!(err.kind(), ErrorKind::RaggedFile), "{err}");
    }
    // Bit 3 with a bit no reader knows is not a ragged file: its unknown bits are named.
    let mut odd = bytes.clone();
    odd[8] |= 0x10;
    let err = DynArray::from_bytes(&odd).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::UnknownFlags { bits: 0x18 }),
        "{err}"
    );
    let plain = RawArray::from_vec(vec![1.0f32]).to_bytes();
    let err = Ragged::<f32>::from_bytes(&plain).unwrap_err();
    assert!(err.to_string().contains("bit 3 (ragged) is clear"), "{err}");
    let err = Ragged::<f64>::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TypeMismatch { .. }),
        "{err}"
    );
}

fn refused(bytes: &[u8], words_in_message: &[&str]) {
    let err = Ragged::<u8>::from_bytes(bytes).unwrap_err();
    for w in words_in_message {
        assert!(err.to_string().contains(w), "{err} lacks {w:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.ra");
    fs::write(&path, bytes).unwrap();
    // The file reader (which reads the values straight into place) refuses it alike.
    let err = Ragged::<u8>::read_file(&path).unwrap_err();
    for w in words_in_message {
        assert!(err.to_string().contains(w), "read_file: {err} lacks {w:?}");
    }
    // The mapped readers check the first and last offsets on opening, naming the same row,
    // and the offsets of every row they touch; the positioned reader makes the same checks.
    for mode in [ReadMode::Mapped, ReadMode::Positioned] {
        match DynRagged::from_open_file(fs::File::open(&path).unwrap(), &path, mode) {
            Ok(d) => {
                let all: Result<Vec<_>, _> = (0..d.rows()).map(|k| d.row_bytes(k)).collect();
                assert!(all.is_err() || d.longest_row().is_err(), "{mode:?}");
                assert!(d.check().is_err(), "{mode:?}");
            }
            Err(err) => {
                for w in words_in_message {
                    assert!(
                        err.to_string().contains(w),
                        "open {mode:?}: {err} lacks {w:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn positioned_reads_copy_the_rows_the_map_borrows() {
    use rawarray_serde::codec::{ChunkOptions, Codec};
    let dir = tempfile::tempdir().unwrap();
    let rows = shaped(|i| i as u32 * 3);
    let plain = dir.path().join("p.ra");
    let chunked = dir.path().join("c.ra");
    Ragged::from_rows(&rows).write_file(&plain).unwrap();
    Ragged::from_rows(&rows)
        .write_file_with(
            &chunked,
            &ChunkOptions::new().codec(Codec::Zstd).chunks(vec![4]),
        )
        .unwrap();
    for path in [&plain, &chunked] {
        let d =
            DynRagged::from_open_file(fs::File::open(path).unwrap(), path, ReadMode::Positioned)
                .unwrap();
        assert_eq!(d.mode(), ReadMode::Positioned);
        assert_eq!(d.values_section().is_some(), path == &chunked);
        // The truth: each row's values by hand, little-endian.
        for (k, row) in rows.iter().enumerate() {
            let want: Vec<u8> = row.iter().flat_map(|v| v.to_le_bytes()).collect();
            let got = d.row_bytes(k as u64).unwrap();
            assert!(matches!(got, Cow::Owned(_)));
            assert_eq!(&*got, &want[..], "{} row {k}", path.display());
        }
        let offsets: Vec<u64> = d
            .offsets_bytes()
            .unwrap()
            .chunks(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect();
        assert_eq!(offsets, [0, 0, 1, 18, 18, 21]);
        let all: Vec<u8> = rows
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(&*d.values_bytes().unwrap(), &all[..]);
        assert_eq!(d.longest_row().unwrap(), 17);
        d.check().unwrap();
        assert!(d.row_bytes(5).is_err());
    }
    // A file cut under a positioned reader: an error, never a signal.
    let d = DynRagged::from_open_file(
        fs::File::open(&plain).unwrap(),
        &plain,
        ReadMode::Positioned,
    )
    .unwrap();
    let len = fs::metadata(&plain).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&plain)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    assert!(d.row_bytes(4).is_err());
}

#[test]
fn hostile_offsets_are_errors_naming_the_row() {
    let file = |offsets: &[u64], values: &[u8]| {
        let mut data = words(offsets);
        data.extend_from_slice(values);
        let size = data.len() as u64;
        ragged_bytes(
            2,
            1,
            size,
            &[values.len() as u64, offsets.len() as u64 - 1],
            &data,
        )
    };
    refused(&file(&[1, 2, 3], b"abc"), &["row 0 starts at value 1"]);
    refused(
        &file(&[0, 3, 2, 3], b"abc"),
        &["row 1 ends at value 2", "before"],
    );
    refused(
        &file(&[0, 1, 9, 3], b"abc"),
        &["row 1 ends at value 9", "past the 3 values"],
    );
    refused(
        &file(&[0, 1, 2], b"abc"),
        &["row 1 ends at value 2", "holds 3 values"],
    );
    refused(
        &file(&[0, u64::MAX, 3], b"abc"),
        &["row 0 ends at value 18446744073709551615"],
    );
    // Huge counts in the header: refused from the header alone, before any allocation.
    let huge_rows = ragged_bytes(2, 1, 16, &[0, 1 << 60], &words(&[0, 0]));
    refused(&huge_rows, &["fewer than rows + 1"]);
    let huge_values = ragged_bytes(2, 1, 16, &[u64::MAX, 1], &words(&[0, 0]));
    refused(&huge_values, &["less than the"]);
    let ragged_region = ragged_bytes(2, 1, 13, &[3, 1], &file(&[0, 3], b"abc")[64..]);
    refused(&ragged_region, &["not a whole number of u64s"]);
    // A size near 2^64: the data end saturates, refused as truncated (it once overflowed).
    for size in [u64::MAX - 4, u64::MAX - 60] {
        refused(
            &ragged_bytes(2, 1, size, &[3, 1], &file(&[0, 3], b"abc")[64..]),
            &["truncated"],
        );
    }
    let short = file(&[0, 3], b"abc");
    refused(&short[..short.len() - 1], &["truncated"]);
    let one_dim = ragged_bytes(2, 1, 8, &[0], &words(&[0]));
    refused(&one_dim, &["ndims = 1"]);
    let mut big_endian = file(&[0, 3], b"abc");
    big_endian[8] = 9;
    refused(&big_endian, &["flags = 9"]);
}

#[test]
fn text_is_marked_and_checked_as_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ra");
    let strs = ["Grüße", "", "日本語", "a", "😀 emoji"];
    Ragged::from_strs(strs).write_file(&path).unwrap();
    let back = Ragged::<u8>::read_file(&path).unwrap();
    assert!(back.is_text());
    assert_eq!(back.to_strings().unwrap(), strs);
    assert_eq!(back.row(2).unwrap(), "日本語".as_bytes());
    let d = DynRagged::open(&path).unwrap();
    assert_eq!(d.row_str(4).unwrap(), "😀 emoji");
    // A byte that is no UTF-8 in row 3 of a file marked as text.
    let mut bytes = fs::read(&path).unwrap();
    let h = RaggedHeader::decode(&bytes).unwrap();
    let row3 = h.values_at() as usize + "Grüße".len() + "日本語".len();
    bytes[row3] = 0xff;
    let err = Ragged::<u8>::from_bytes(&bytes).unwrap_err();
    assert!(err.to_string().contains("row 3 is not UTF-8"), "{err}");
    // Unmarked bytes are bytes.
    let blobs = Ragged::from_rows([vec![0xffu8, 0], vec![]]);
    assert!(!Ragged::<u8>::from_bytes(&blobs.to_bytes().unwrap())
        .unwrap()
        .is_text());
}

#[test]
fn chunked_values_follow_the_plain_offsets_as_built_by_hand() {
    use rawarray_serde::codec::{ChunkOptions, Codec, Shuffle};
    let r = Ragged::from_rows([vec![7u16, 8], vec![], vec![9]]);
    let opts = ChunkOptions::new()
        .codec(Codec::None)
        .shuffle(Shuffle::None)
        .chunks(vec![2])
        .block_bytes(4)
        .layout_version(1);
    let bytes = r.to_bytes_with(&opts).unwrap();
    // The values' chunked section (doc/chunked.md) for u16 dims [3], chunks of 2: the config
    // (576 bytes), the index (2 entries), the chunks stored raw.
    let mut section = b"RACHUNK1".to_vec();
    section.extend([0u8; 16]); // filter 0, codec 0, level 0, reserved
    section.extend(words(&[4, 2, 1, 2])); // block bytes, S0, ndims, chunk shape
    section.extend(0x312f_5619u32.to_le_bytes()); // CRC-32 of the 56 bytes before
    section.extend([0u8; 4]);
    section.extend(words(&[576]));
    section.extend([0u8; 63 * 8]);
    section.extend(words(&[624, 4]));
    section.extend(0x744a_6dadu32.to_le_bytes());
    section.extend(1u32.to_le_bytes()); // stored raw
    section.extend(words(&[628, 2]));
    section.extend(0x901b_a9b6u32.to_le_bytes());
    section.extend(1u32.to_le_bytes());
    section.extend([7u8, 0, 8, 0, 9, 0]);
    assert_eq!(section.len(), 630);
    // Header (flags 12: ragged, chunked), the slot count word, 4 offsets, the section.
    let mut data = words(&[4, 0, 2, 2, 3]);
    data.extend(&section);
    let mut expected = b"rawarray".to_vec();
    expected.extend(words(&[12, 2, 2, 8 + 32 + 630, 2, 3, 3]));
    expected.extend(&data);
    assert!(bytes[..expected.len()] == expected[..], "the bytes differ");
    let h = RaggedHeader::decode(&bytes).unwrap();
    assert!(h.chunked);
    assert_eq!((h.slots(), h.offsets_at(), h.values_at()), (4, 72, 104));
    // The trailer follows, as for any file.
    assert_eq!(&bytes[expected.len()..expected.len() + 8], b"RATRAILR");
    assert_eq!(Ragged::<u16>::from_bytes(&bytes).unwrap(), r);
}

#[test]
fn chunked_values_round_trip_through_every_reader() {
    use rawarray_serde::codec::{ChunkOptions, Codec, Shuffle};
    let dir = tempfile::tempdir().unwrap();
    let rows = shaped(|i| i as f64 * 0.5);
    let r = Ragged::from_rows(&rows);
    for (codec, shuffle) in [
        (Codec::Zstd, Shuffle::Byte),
        (Codec::Lz4, Shuffle::Bit),
        (Codec::None, Shuffle::None),
    ] {
        // Chunks of 4 values: rows span chunks, and a row reads only the ones it touches.
        let opts = ChunkOptions::new()
            .codec(codec)
            .shuffle(shuffle)
            .chunks(vec![4]);
        let path = dir.path().join(format!("{}.ra", codec.name()));
        r.write_file_with(&path, &opts).unwrap();
        assert_eq!(Ragged::<f64>::read_file(&path).unwrap(), r);
        let reader = RaggedReader::<f64>::open(&path).unwrap();
        let d = DynRagged::open(&path).unwrap();
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(&*reader.row(k).unwrap(), &row[..], "{codec:?} row {k}");
            let bytes: Vec<u8> = row.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(&*d.row_bytes(k as u64).unwrap(), &bytes[..]);
        }
        assert_eq!(d.longest_row().unwrap(), 17);
        // A slice of a chunked file is plain.
        let mut sliced = Vec::new();
        d.write_rows(1..3, &mut sliced).unwrap();
        assert!(!RaggedHeader::decode(&sliced).unwrap().chunked);
        assert_eq!(
            Ragged::<f64>::from_bytes(&sliced).unwrap(),
            Ragged::from_rows(&rows[1..3])
        );
        let back: Vec<Vec<f64>> = rawarray_serde::from_file(&path).unwrap();
        assert_eq!(back, rows);
        // A file written whole is appended to in its layout (tests/ragged_chunked.rs has
        // the rest); recover finds nothing to change in it.
        let r0 = rawarray_serde::recover(&path).unwrap();
        assert!(!r0.changed(), "{r0:?}");
        let mut w = RaggedWriter::<f64>::open(&path).unwrap();
        w.append_row(&[7.5, 8.5]).unwrap();
        w.finish().unwrap();
        let mut more = rows.clone();
        more.push(vec![7.5, 8.5]);
        assert_eq!(
            Ragged::<f64>::read_file(&path).unwrap(),
            Ragged::from_rows(&more)
        );
        assert!(
            RaggedHeader::decode(&fs::read(&path).unwrap())
                .unwrap()
                .chunked
        );
    }
    // Text, records, fixed arrays, no rows, only empty rows.
    let text = Ragged::from_strs(["Grüße", "", "日本語"]);
    let bytes = text.to_bytes_with(&ChunkOptions::new()).unwrap();
    let back = Ragged::<u8>::from_bytes(&bytes).unwrap();
    assert_eq!(back.to_strings().unwrap(), ["Grüße", "", "日本語"]);
    let hits = Ragged::from_rows(shaped(|i| Hit {
        t: i as f64,
        id: i as u16,
    }));
    let bytes = hits.to_bytes_with(&ChunkOptions::new()).unwrap();
    assert_eq!(Ragged::<Hit>::from_bytes(&bytes).unwrap(), hits);
    let xyz = Ragged::from_rows(shaped(|i| [i as f32, 1.0, -1.0]));
    let bytes = xyz.to_bytes_with(&ChunkOptions::new()).unwrap();
    assert_eq!(Ragged::<[f32; 3]>::from_bytes(&bytes).unwrap(), xyz);
    let path = dir.path().join("xyz.ra");
    fs::write(&path, &bytes).unwrap();
    assert_eq!(
        &*RaggedReader::<[f32; 3]>::open(&path)
            .unwrap()
            .row(2)
            .unwrap(),
        xyz.row(2).unwrap()
    );
    for empty in [Ragged::<u32>::new(), Ragged::from_rows([[0u32; 0]; 3])] {
        let bytes = empty.to_bytes_with(&ChunkOptions::new()).unwrap();
        assert_eq!(Ragged::<u32>::from_bytes(&bytes).unwrap(), empty);
    }
}

#[test]
fn a_hostile_slot_count_word_is_refused_naming_it() {
    use rawarray_serde::codec::ChunkOptions;
    let r = Ragged::from_rows([vec![1u32, 2], vec![3]]);
    let good = r.to_bytes_with(&ChunkOptions::new()).unwrap();
    let at_word = 64;
    for (word, says) in [
        (2u64, "fewer offsets than rows + 1"),
        (u64::MAX, "pass size"),
        (1 << 40, "pass size"),
    ] {
        let mut bytes = good.clone();
        bytes[at_word..at_word + 8].copy_from_slice(&word.to_le_bytes());
        let err = Ragged::<u32>::from_bytes(&bytes).unwrap_err();
        assert!(err.to_string().contains(says), "{word}: {err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.ra");
        fs::write(&path, &bytes).unwrap();
        assert!(RaggedReader::<u32>::open(&path).is_err());
    }
    // A header cut before its slot count word.
    let err = RaggedHeader::decode(&good[..64]).unwrap_err();
    assert!(err.to_string().contains("72"), "{err}");
    // A chunked section claiming more values than the file holds reads as an error or as
    // zeros, never past the file: here the index entry of chunk 0 is cut off.
    let mut cut = good.clone();
    cut.truncate(good.len() - 200);
    assert!(Ragged::<u32>::from_bytes(&cut).is_err());
}

/// `["é", "z"]` hand-built with the trailer JSON given.
fn text_file_with_trailer(json: &str) -> Vec<u8> {
    let mut data = words(&[0, 2, 3]);
    data.extend("éz".as_bytes());
    let mut bytes = ragged_bytes(2, 1, 24 + 3, &[3, 2], &data);
    let at = bytes.len() as u64;
    let t = rawarray_serde::Trailer::from_json(json.as_bytes()).unwrap();
    bytes.extend(t.encode_block(at));
    bytes
}

#[test]
fn the_text_marker_is_the_value_layouts_logical_text() {
    let bytes = Ragged::from_strs(["é", "z"]).to_bytes().unwrap();
    let marked = r#"{"version":1,"params":null,"schema":{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"text"},"numpy_descr":"|u1"}"#;
    assert_eq!(bytes, text_file_with_trailer(marked));
    let back = Ragged::<u8>::from_bytes(&bytes).unwrap();
    assert_eq!(back.to_strings().unwrap(), ["é", "z"]);
    // The unreleased top-level key is not read: the rows are bytes.
    let old = r#"{"version":1,"params":null,"schema":{"kind":"scalar","eltype":"uint","elbyte":1},"numpy_descr":"|u1","logical":"text"}"#;
    assert!(!Ragged::<u8>::from_bytes(&text_file_with_trailer(old))
        .unwrap()
        .is_text());
    // The marker on anything but a one-byte uint is a bad schema, naming it.
    let on_u16 = r#"{"version":1,"params":null,"schema":{"kind":"scalar","eltype":"uint","elbyte":2,"logical":"text"}}"#;
    let err = rawarray_serde::Trailer::from_json(on_u16.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("logical \"text\""), "{err}");
}

#[test]
fn the_writer_grows_its_offsets_region_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.ra");
    let row = |k: u64| (0..k % 5).map(|i| k * 10 + i).collect::<Vec<u64>>();
    let mut w = RaggedWriter::<u64>::create(&path).unwrap();
    for k in 0..3000 {
        w.append_row(&row(k)).unwrap();
        if k % 97 == 0 {
            w.flush().unwrap();
        }
    }
    assert_eq!(w.rows(), 3000);
    // Another writer is kept out while this one lives.
    assert!(matches!(
        RaggedWriter::<u64>::open(&path).unwrap_err().kind(),
        ErrorKind::Locked { .. }
    ));
    w.finish().unwrap();
    let r = Ragged::<u64>::read_file(&path).unwrap();
    assert_eq!(r.rows(), 3000);
    for k in 0..3000u64 {
        assert_eq!(r.row(k as usize).unwrap(), &row(k)[..]);
    }
    // Open again, append, and the old rows stay.
    let mut w = RaggedWriter::<u64>::open(&path).unwrap();
    w.append_row(&[1, 2]).unwrap();
    w.finish().unwrap();
    let r = Ragged::<u64>::read_file(&path).unwrap();
    assert_eq!((r.rows(), r.row(3000).unwrap()), (3001, &[1u64, 2][..]));
    assert_eq!(r.row(2999).unwrap(), &row(2999)[..]);
}

#[test]
fn the_mapped_reader_borrows_aligned_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ra");
    Ragged::from_rows([vec![1.0f64, 2.0], vec![3.0]])
        .write_file(&path)
        .unwrap();
    let r = RaggedReader::<f64>::open(&path).unwrap();
    assert!(matches!(r.row(1).unwrap(), Cow::Borrowed(&[3.0])));
}

/// A reader opened while a writer appends sees a prefix of the rows, each whole.
#[test]
fn a_reader_during_appends_sees_a_consistent_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.ra");
    let row = |k: u32| vec![k; (k % 11) as usize];
    let mut w = RaggedWriter::<u32>::create(&path).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = 0;
            // Until the writer is done and this reader has seen rows (a loaded machine may
            // not schedule it before the end): the finished file no longer changes.
            while !done.load(std::sync::atomic::Ordering::SeqCst) || seen == 0 {
                let r = RaggedReader::<u32>::open(&path).unwrap();
                assert!(
                    r.rows() >= seen,
                    "rows went back from {seen} to {}",
                    r.rows()
                );
                seen = r.rows();
                for k in 0..r.rows() {
                    assert_eq!(&*r.row(k).unwrap(), &row(k as u32)[..], "row {k}");
                }
            }
            seen
        })
    };
    for k in 0..4000 {
        w.append_row(&row(k)).unwrap();
        if k % 13 == 0 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(reader.join().unwrap() > 0);
}

const CHILD: &str = "RA_RAGGED_CRASH_CHILD";

fn crash_row(k: u64) -> Vec<u64> {
    (0..k % 9).map(|i| k << 8 | i).collect()
}

/// Rows per flush when the file holds `n`.
fn batch(n: u64) -> u64 {
    1 + n.wrapping_mul(2_654_435_761) % 40
}

/// The child role of the crash test: appends and flushes until killed, reporting the row
/// count after each flush in a side file.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [path, side]: [&str; 2] = spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let mut w = if Path::new(path).exists() {
        RaggedWriter::<u64>::open(path).unwrap()
    } else {
        RaggedWriter::<u64>::create_with(path, &RaggedOptions::new()).unwrap()
    };
    let report = common::crash::reporter(side);
    let mut n = w.rows();
    report(n);
    loop {
        for k in n..n + batch(n) {
            w.append_row(&crash_row(k)).unwrap();
        }
        w.flush().unwrap();
        n = w.rows();
        report(n);
        if n > 20_000 {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// A file whose last flush lost its header write: rows `[1, 2]`, `[3]` committed, then
/// `[4, 5, 6]`, `[]`, `[7]`, `[]` flushed with the old header put back. Returns the file's
/// bytes as the flush left them.
fn lost_header_write(path: &Path) -> Vec<u8> {
    // The writer writes beside `path` and is forgotten (a killed writer: no finish; its
    // lock stays with its leaked handle), and `path` gets a copy of what it left.
    let writing = path.with_extension("writing");
    let mut w = RaggedWriter::<u16>::create(&writing).unwrap();
    w.append_row(&[1, 2]).unwrap();
    w.append_row(&[3]).unwrap();
    w.flush().unwrap();
    let committed = fs::read(&writing).unwrap()[..64].to_vec();
    for row in [&[4u16, 5, 6][..], &[], &[7], &[]] {
        w.append_row(row).unwrap();
    }
    w.flush().unwrap();
    std::mem::forget(w);
    let mut bytes = fs::read(&writing).unwrap();
    bytes[..64].copy_from_slice(&committed);
    fs::write(path, &bytes).unwrap();
    bytes
}

#[test]
fn recover_extends_the_header_over_a_flush_whose_header_write_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lost.ra");
    let bytes = lost_header_write(&path);
    // By hand: 512 slots; offsets 0, 2, 3 committed, then 6, 6, 7, 7 in the free slots; the
    // values 1 2 3 then 4 5 6 7 (u16) from 64 + 8 x 512 = 4160; the forward block after them.
    assert_eq!(&bytes[32..40], &(8 * 512 + 2 * 3u64).to_le_bytes()); // size, committed
    assert_eq!(&bytes[48..64], &words(&[3, 2])[..]); // m = 3, n = 2
    assert_eq!(&bytes[64..64 + 7 * 8], &words(&[0, 2, 3, 6, 6, 7, 7])[..]);
    assert_eq!(&bytes[4160..4174], &words16(&[1, 2, 3, 4, 5, 6, 7])[..]);
    assert_eq!(&bytes[4174..4182], b"RATRAILR");
    assert_eq!(&bytes[4182 + 8..4182 + 16], &4174u64.to_le_bytes()); // at: a forward copy
    assert_eq!(Ragged::<u16>::read_file(&path).unwrap().rows(), 2);

    let r = rawarray_serde::recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after, r.trailer), (2, 6, true));
    let after = fs::read(&path).unwrap();
    assert_eq!(&after[32..40], &(8 * 512 + 2 * 7u64).to_le_bytes());
    assert_eq!(&after[48..64], &words(&[7, 6])[..]);
    assert_eq!(after.len() as u64, bytes.len() as u64 - r.bytes_removed);
    assert!(
        after[64..4174] == bytes[64..4174],
        "offsets and values kept"
    );
    let back = Ragged::<u16>::read_file(&path).unwrap();
    assert_eq!(
        back.iter().collect::<Vec<_>>(),
        [&[1u16, 2][..], &[3], &[4, 5, 6], &[], &[7], &[]]
    );
    // Recovering again changes nothing.
    let again = rawarray_serde::recover(&path).unwrap();
    assert_eq!((again.records_after, again.bytes_removed), (6, 0));
    assert_eq!(fs::read(&path).unwrap(), after);
}

#[test]
fn recover_of_a_torn_ragged_flush_keeps_the_committed_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.ra");
    let bytes = lost_header_write(&path);
    // The forward block was never written (torn before it): only the committed rows remain.
    let mut torn = bytes[..4174].to_vec();
    torn.extend(b"garbage!");
    fs::write(&path, &torn).unwrap();
    let err = rawarray_serde::recover(&path).unwrap_err();
    assert!(err.to_string().contains("no trailer block"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), torn);
    // With the spare copy at the end (as a writer leaves it), the trailer is kept.
    let writing = dir.path().join("spare.ra");
    let mut w = RaggedWriter::<u16>::create(&writing).unwrap();
    w.append_row(&[1, 2]).unwrap();
    w.flush().unwrap();
    std::mem::forget(w);
    let mut bytes = fs::read(&writing).unwrap();
    let h = RaggedHeader::decode(&bytes).unwrap();
    let end = h.data_end() as usize;
    bytes[end..end + 8].copy_from_slice(b"torn....");
    fs::write(&path, &bytes).unwrap();
    let r = rawarray_serde::recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after, r.trailer), (1, 1, true));
    assert_eq!(
        Ragged::<u16>::read_file(&path).unwrap().row(0),
        Some(&[1u16, 2][..])
    );
}

#[test]
fn a_reopened_writer_zeroes_the_free_slots_a_dead_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale.ra");
    lost_header_write(&path);
    RaggedWriter::<u16>::open(&path).unwrap().finish().unwrap();
    let bytes = fs::read(&path).unwrap();
    // offsets 0, 2, 3 kept; the four slots the lost flush wrote are zero again.
    assert_eq!(&bytes[64..64 + 7 * 8], &words(&[0, 2, 3, 0, 0, 0, 0])[..]);
    assert_eq!(Ragged::<u16>::read_file(&path).unwrap().rows(), 2);
    let r = rawarray_serde::recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after), (2, 2));
}

fn words16(w: &[u16]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(unix)]
#[test]
fn killed_writers_lose_no_committed_row() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};

    let (dir, path, side) = common::crash::scratch("crash.ra");
    let read_side = || common::crash::flushed(&side);
    let mut below = common::crash::seeded("crash test");
    let (mut kills, mut most) = (0, 0);
    for round in 0..40 {
        let before = read_side();
        let err_path = dir.path().join("child.err");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, format!("{}\n{}", path.display(), side.display()))
            .stdout(Stdio::null())
            .stderr(fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
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
        std::thread::sleep(Duration::from_micros(below(5000)));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status}");
        kills += 1;
        let flushed = read_side();
        if !path.exists() {
            assert_eq!(flushed, 0);
            continue;
        }
        let r = Ragged::<u64>::read_file(&path).unwrap();
        let n = r.rows() as u64;
        assert!(
            n == flushed || n == flushed + batch(flushed),
            "file holds {n} rows; the last flush reported {flushed}"
        );
        for k in 0..n {
            assert_eq!(r.row(k as usize).unwrap(), &crash_row(k)[..], "row {k}");
        }
        // recover takes back a whole flush whose header write the kill lost, or changes
        // nothing; never a row that was not written.
        let rec = rawarray_serde::recover(&path).unwrap();
        assert_eq!(rec.records_before, n);
        let r = Ragged::<u64>::read_file(&path).unwrap();
        let n = r.rows() as u64;
        assert!(
            rec.records_after == n && (n == rec.records_before || n == flushed + batch(flushed)),
            "recover: {rec:?}, {n} rows; the last flush reported {flushed}"
        );
        for k in 0..n {
            assert_eq!(r.row(k as usize).unwrap(), &crash_row(k)[..], "row {k}");
        }
        most = most.max(n);
        if n > 20_000 {
            fs::remove_file(&path).unwrap();
            fs::remove_file(&side).unwrap();
        }
    }
    eprintln!("{kills} kills, up to {most} rows");
    assert_eq!(kills, 40);
    // The offsets region (512 slots at first) was regrown under the kills.
    assert!(most > 2048, "only {most} rows");
}

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct Particle {
    x: f32,
    id: u16,
}

#[test]
fn serde_writes_ragged_sequences_as_ragged_files_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let rows = vec![vec![1.5f32, 2.5], vec![], vec![3.5, 4.5, 5.5]];
    let bytes = rawarray_serde::to_vec(&rows).unwrap();
    // The same file as the typed Ragged writes.
    assert_eq!(bytes, Ragged::from_rows(&rows).to_bytes().unwrap());
    assert_eq!(
        rawarray_serde::from_slice::<Vec<Vec<f32>>>(&bytes).unwrap(),
        rows
    );
    assert_eq!(
        rawarray_serde::from_reader::<Vec<Vec<f32>>>(&bytes[..]).unwrap(),
        rows
    );
    let path = dir.path().join("v.ra");
    rawarray_serde::to_file(&path, &rows).unwrap();
    assert_eq!(fs::read(&path).unwrap(), bytes);
    assert_eq!(
        rawarray_serde::from_file::<Vec<Vec<f32>>>(&path).unwrap(),
        rows
    );

    // Rectangular input stays a rectangular array.
    let square = rawarray_serde::to_vec(&vec![vec![1u16, 2], vec![3, 4]]).unwrap();
    assert_eq!(
        rawarray_serde::Header::decode(&square).unwrap().dims,
        [2, 2]
    );
}

#[test]
fn serde_strings_are_text_and_blobs_are_bytes() {
    let strs = vec![
        "Grüße".to_string(),
        String::new(),
        "日本語のテキスト".into(),
        "a".into(),
    ];
    let bytes = rawarray_serde::to_vec(&strs).unwrap();
    assert_eq!(bytes, Ragged::from_strs(&strs).to_bytes().unwrap());
    assert!(Ragged::<u8>::from_bytes(&bytes).unwrap().is_text());
    assert_eq!(
        rawarray_serde::from_slice::<Vec<String>>(&bytes).unwrap(),
        strs
    );

    let blobs: Vec<Vec<u8>> = vec![vec![0xff, 0x00, 0xfe], vec![], vec![0x80]];
    let bytes = rawarray_serde::to_vec(&blobs).unwrap();
    let r = Ragged::<u8>::from_bytes(&bytes).unwrap();
    assert!(!r.is_text());
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        [&[0xffu8, 0, 0xfe][..], &[], &[0x80]]
    );
    assert_eq!(
        rawarray_serde::from_slice::<Vec<Vec<u8>>>(&bytes).unwrap(),
        blobs
    );
}

#[test]
fn serde_rows_of_records_round_trip() {
    let p = |i: u16| Particle {
        x: f32::from(i) / 2.0,
        id: i,
    };
    let rows = vec![vec![p(1), p(2)], vec![p(3)], vec![], vec![p(4), p(5), p(6)]];
    let bytes = rawarray_serde::to_vec(&rows).unwrap();
    let h = RaggedHeader::decode(&bytes).unwrap();
    assert_eq!((h.elbyte, h.values, h.rows), (6, 6, 4));
    assert_eq!(
        rawarray_serde::from_slice::<Vec<Vec<Particle>>>(&bytes).unwrap(),
        rows
    );
    // Rows that are themselves ragged stay an error (one level of raggedness only).
    let err = rawarray_serde::to_vec(&vec![vec![vec![1u8], vec![2, 3]], vec![]]).unwrap_err();
    assert!(err.to_string().contains("not rectangular"), "{err}");
}

#[test]
fn read_file_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.ra");
    let err = Ragged::<f32>::read_file(&missing).unwrap_err();
    assert_eq!(err.path(), Some(missing.as_path()), "{err}");
    // A file cut short: its truncation is named with its path.
    let cut = dir.path().join("cut.ra");
    let bytes = Ragged::from_rows([vec![1.0f32; 40], vec![2.0; 3]])
        .to_bytes()
        .unwrap();
    fs::write(&cut, &bytes[..bytes.len() - 30]).unwrap();
    let err = Ragged::<f32>::read_file(&cut).unwrap_err();
    assert!(err.to_string().contains("cut.ra"), "{err}");
}
