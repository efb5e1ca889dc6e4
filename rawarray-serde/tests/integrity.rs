//! A damaged index is never read as zeros (doc/chunked.md section 4, "What a reader can tell").
//!
//! Version 2: every single-bit flip of every byte of the config and the index (entries and
//! their statistics) of three chunked files, zstd, lz4 and none, a plain array and a record
//! file, gives the original values or an error from every read path: whole reads of bytes,
//! typed arrays, `DynArray`, serde, `ArrayReader` boxes and `RecordReader` records; never zeros
//! or other values. Version 1 entries carry no CRC: a flip that points an entry past `size`
//! reads as zeros, as the format says, and the reader warns naming the chunk.

use rawarray_serde::codec::{Codec, Config, Shuffle};
use rawarray_serde::section::{Section, Warning};
use rawarray_serde::{
    ArrayReader, DynArray, ElType, Header, RawArray, RecordOptions, RecordReader, RecordWriter,
    WriteOptions,
};

/// A plain f32 array written chunked with `codec`, its bytes.
fn array_file(codec: Codec, version: u32) -> (Vec<u8>, Vec<f32>) {
    let values: Vec<f32> = (0..600).map(|i| (i as f32 * 0.01).sin()).collect();
    let a = RawArray::from_shape_vec(vec![20, 30], values.clone()).unwrap();
    let opts = WriteOptions::new()
        .codec(codec)
        .shuffle(Shuffle::Byte)
        .chunks(vec![20, 8])
        .layout_version(version);
    let mut file = Vec::new();
    a.write_to_with(&mut file, &opts).unwrap();
    (file, values)
}

/// A record file of `[u32; 3]` written by a compressed `RecordWriter`, flushed in pieces (its
/// last chunk re-entered by later flushes), its bytes.
fn record_file(codec: Codec) -> (Vec<u8>, Vec<[u32; 3]>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let records: Vec<[u32; 3]> = (0..50u32).map(|i| [i, i * 7, 1000 - i]).collect();
    let mut w: RecordWriter<[u32; 3]> = RecordOptions::new()
        .storage(WriteOptions::new().codec(codec).chunks(vec![16]))
        .create(&path)
        .unwrap();
    for (k, r) in records.iter().enumerate() {
        w.append(r).unwrap();
        if k % 11 == 10 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
    (std::fs::read(&path).unwrap(), records)
}

/// The config and index bytes of a chunked file: from the data section's start to the first
/// chunk's stored bytes.
fn index_span(file: &[u8]) -> std::ops::Range<usize> {
    let h = Header::decode_any(file).unwrap();
    let s = Section::open(&h, file).unwrap();
    let map = s.chunk_map().unwrap();
    let first = (0..map.grid().count())
        .filter_map(|n| map.chunk_range(n))
        .map(|r| r.start)
        .min()
        .unwrap();
    let base = h.encoded_len();
    base..base + first as usize
}

/// Every way to read the whole array as f32 values, each `Ok(values)` or an error.
fn read_f32_every_way(
    file: &[u8],
    dir: &std::path::Path,
) -> Vec<(&'static str, Result<Vec<f32>, String>)> {
    let err = |e: rawarray_serde::Error| e.to_string();
    let path = dir.join("f.ra");
    std::fs::write(&path, file).unwrap();
    let mut out = Vec::new();
    out.push((
        "section read_all",
        Header::decode_any(file)
            .and_then(|h| Section::open(&h, file)?.read_all())
            .map(|b| {
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect()
            })
            .map_err(err),
    ));
    out.push((
        "RawArray::from_bytes",
        RawArray::<f32>::from_bytes(file)
            .map(RawArray::into_vec)
            .map_err(err),
    ));
    out.push((
        "RawArray::read_file",
        RawArray::<f32>::read_file(&path)
            .map(RawArray::into_vec)
            .map_err(err),
    ));
    out.push((
        "DynArray::from_bytes",
        DynArray::from_bytes(file)
            .and_then(|d| d.to_typed::<f32>())
            .map(RawArray::into_vec)
            .map_err(err),
    ));
    out.push((
        "serde from_slice",
        rawarray_serde::from_slice::<Vec<Vec<f32>>>(file)
            .map(|v| v.concat())
            .map_err(err),
    ));
    // Boxes: one element of each chunk's first block, and a plane across every chunk.
    let boxes = ArrayReader::open(&path).and_then(|r| {
        let mut all = vec![0f32; 600];
        for j in 0..30u64 {
            let col: RawArray<f32> = r.read_subset(&[0..20, j..j + 1])?;
            all[(j * 20) as usize..(j * 20 + 20) as usize].copy_from_slice(col.as_slice());
        }
        Ok(all)
    });
    out.push(("ArrayReader columns", boxes.map_err(err)));
    out
}

fn assert_original_or_error(label: &str, got: Vec<(&str, Result<Vec<f32>, String>)>, want: &[f32]) {
    for (how, r) in got {
        if let Ok(v) = r {
            assert!(
                v.len() == want.len()
                    && v.iter().zip(want).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{label}: {how} returned values that are not the file's"
            );
        }
    }
}

#[test]
fn every_bit_flip_in_a_v2_index_is_the_original_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for codec in [Codec::Zstd, Codec::Lz4, Codec::None] {
        let (file, values) = array_file(codec, 2);
        let span = index_span(&file);
        let mut errors = 0;
        let mut flips = 0;
        for at in span.clone() {
            for bit in 0..8 {
                let mut bad = file.clone();
                bad[at] ^= 1 << bit;
                let got = read_f32_every_way(&bad, dir.path());
                errors += got.iter().filter(|(_, r)| r.is_err()).count();
                flips += 1;
                assert_original_or_error(&format!("{codec:?}: byte {at} bit {bit}"), got, &values);
            }
        }
        // Flips of unused segment slots' padding are errors too (their CRC): every flip in
        // the span errs in some path, most in all.
        assert!(
            errors > flips,
            "{codec:?}: {errors} errors in {flips} flips"
        );
    }
}

#[test]
fn every_bit_flip_in_a_v2_record_index_is_the_original_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for codec in [Codec::Zstd, Codec::Lz4, Codec::None] {
        let (file, records) = record_file(codec);
        let span = index_span(&file);
        for at in span {
            for bit in 0..8 {
                let mut bad = file.clone();
                bad[at] ^= 1 << bit;
                let path = dir.path().join("r.ra");
                std::fs::write(&path, &bad).unwrap();
                if let Ok(r) = RecordReader::<[u32; 3]>::open(&path) {
                    for (k, want) in records.iter().enumerate().take(r.len()) {
                        if let Ok(Some(got)) = r.get(k) {
                            assert_eq!(&got, want, "{codec:?}: byte {at} bit {bit}, record {k}");
                        }
                    }
                }
                if let Ok(a) = RawArray::<u32>::from_bytes(&bad) {
                    let flat: Vec<u32> = records.iter().flatten().copied().collect();
                    assert_eq!(
                        a.as_slice(),
                        &flat[..a.len().min(flat.len())],
                        "{codec:?}: byte {at} bit {bit}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_v1_entry_pointed_past_size_reads_as_zeros_with_a_warning_naming_it() {
    let (mut file, values) = array_file(Codec::Zstd, 1);
    let h = Header::decode_any(&file).unwrap();
    // Chunk 2's entry offset, its high byte set: past the committed size.
    let at = h.encoded_len() + Config::encoded_len_v1(2) + 2 * 24 + 7;
    file[at] = 0x40;
    let s = Section::open(&h, &file[..]).unwrap();
    assert_eq!(s.warnings(), [Warning::Uncommitted { chunk: 2 }]);
    let got = s.read_all().unwrap();
    let got: Vec<f32> = got
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert!(got[320..480].iter().all(|&v| v == 0.0));
    assert_eq!(got[..320], values[..320]);
    assert!(s.warnings()[0].to_string().contains("chunk 2"));
}

#[test]
fn the_same_flip_in_a_v2_entry_is_an_error_naming_the_chunk() {
    let (mut file, _) = array_file(Codec::Zstd, 2);
    let h = Header::decode_any(&file).unwrap();
    let s = Section::open(&h, &file[..]).unwrap();
    let map = s.chunk_map().unwrap();
    let at = h.encoded_len()
        + map.config().encoded_len() as usize
        + 2 * map.config().entry_len() as usize
        + 7;
    file[at] = 0x40;
    let err = Section::open(&h, &file[..]).unwrap_err().to_string();
    assert!(err.contains("chunk 2") && err.contains("damaged"), "{err}");
    assert_eq!(ElType::Float, h.eltype);
}
