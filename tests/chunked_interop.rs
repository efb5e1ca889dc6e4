//! The chunked layout against the reference implementations: our LZ4 blocks and zstd frames
//! decode with the Python `lz4.block` and `zstandard` packages and theirs through ours, and a
//! Python reader written from doc/chunked.md alone decodes our chunked files.
// ChunkOptions is kept one release as a deprecated name of WriteOptions; used here.
#![allow(deprecated)]

mod common;

use rawarray_serde::codec::{self, ChunkOptions, Codec, Shuffle};
use rawarray_serde::{ElType, Header};

/// The blocks are bytes: elements of one byte.
const BYTES: rawarray_serde::codec::Elements = rawarray_serde::codec::Elements {
    eltype: ElType::Uint,
    elbyte: 1,
    big_endian: false,
};

/// Buffers with structure (runs, ramps, noise) of several sizes, 0 and 1 byte included.
fn buffers() -> Vec<(String, Vec<u8>)> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut noise = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    };
    let mut out = vec![
        ("empty".to_string(), Vec::new()),
        ("one".to_string(), vec![42]),
    ];
    for &len in &[13usize, 1000, 65_536, 300_001] {
        out.push((
            format!("ramp{len}"),
            (0..len).map(|i| (i / 7) as u8).collect(),
        ));
        out.push((format!("noise{len}"), (0..len).map(|_| noise()).collect()));
        out.push((
            format!("floats{len}"),
            (0..len / 4)
                .flat_map(|i| ((i as f32) * 0.001).sin().to_le_bytes())
                .collect(),
        ));
    }
    out
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: interop skipped")]
fn our_blocks_decode_with_theirs_and_theirs_with_ours() {
    let dir = tempfile::tempdir().unwrap();
    let bufs = buffers();
    for (name, raw) in &bufs {
        let p = dir.path().join(name);
        std::fs::write(p.with_extension("raw"), raw).unwrap();
        for (codec, ext) in [(Codec::Lz4, "lz4"), (Codec::Zstd, "zst")] {
            let mut packed = Vec::new();
            codec
                .block_codec()
                .compress(raw, &BYTES, 3, &mut packed)
                .unwrap();
            std::fs::write(p.with_extension(ext), &packed).unwrap();
        }
    }
    let out = common::python("chunked_codecs.py", &[&"blocks", &dir.path()]);
    assert_eq!(out.trim(), format!("ok {}", bufs.len()));
    for (name, raw) in &bufs {
        let p = dir.path().join(name);
        for (codec, ext) in [(Codec::Lz4, "py.lz4"), (Codec::Zstd, "py.zst")] {
            let theirs = std::fs::read(p.with_extension(ext)).unwrap();
            let mut back = vec![0u8; raw.len()];
            codec
                .block_codec()
                .decompress(&theirs, &BYTES, &mut back)
                .unwrap();
            assert_eq!(&back, raw, "{name}.{ext}");
        }
    }
}

/// eltype, elbyte, dims, chunk shape, filter, codec.
type Case = (ElType, u64, &'static [u64], &'static [u64], Shuffle, Codec);

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: interop skipped")]
fn a_reader_written_from_the_spec_reads_our_files() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[Case] = &[
        (
            ElType::Float,
            4,
            &[50, 30, 7],
            &[16, 16, 3],
            Shuffle::Byte,
            Codec::Zstd,
        ),
        (ElType::Float, 8, &[1000], &[333], Shuffle::Bit, Codec::Lz4),
        (
            ElType::User,
            76,
            &[40, 3],
            &[40, 2],
            Shuffle::Byte,
            Codec::Zstd,
        ),
        (
            ElType::Uint,
            2,
            &[9, 9, 9, 2],
            &[4, 20, 3, 1],
            Shuffle::None,
            Codec::Lz4,
        ),
        (ElType::Int, 1, &[300], &[300], Shuffle::Bit, Codec::None),
    ];
    for (i, &(eltype, elbyte, dims, chunks, shuffle, codec)) in cases.iter().enumerate() {
        let header = Header::new(eltype, elbyte, dims.to_vec()).unwrap();
        let raw: Vec<u8> = (0..header.data_len())
            .map(|k| ((k / 5) as u8) ^ ((k % 3) as u8))
            .collect();
        // Version 1, which this reader (written from doc/chunked.md section 6) reads; version
        // 2 is read by hand from section 5 in rawarray-python/tests (`decode_by_hand`).
        let opts = ChunkOptions::new()
            .chunks(chunks.to_vec())
            .shuffle(shuffle)
            .codec(codec)
            .block_bytes(elbyte * 100)
            .layout_version(1);
        let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
        let mut file = h.encode();
        file.extend_from_slice(&section);
        let (ra, bin) = (
            dir.path().join(format!("{i}.ra")),
            dir.path().join(format!("{i}.bin")),
        );
        std::fs::write(&ra, &file).unwrap();
        std::fs::write(&bin, &raw).unwrap();
        let out = common::python("chunked_codecs.py", &[&"read", &ra, &bin]);
        assert!(out.starts_with("ok"), "{out}");
    }
}
