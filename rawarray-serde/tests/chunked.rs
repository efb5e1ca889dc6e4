//! The chunked layout (flag bit 2): round trips over dims, element types, chunk shapes,
//! filters and codecs; subsets against the block cut from a full read, touching only the
//! chunks they intersect; hostile configs, indexes and chunks.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

use std::ops::Range;

use proptest::prelude::*;
use rawarray_serde::codec::{
    self, index::ENTRY_LEN, ChunkOptions, Codec, Config, Entry, SectionReader, Shuffle,
};
use rawarray_serde::{DynArray, ElType, ErrorKind, Flags, Header, RawArray, WriteOptions};

/// (eltype, elbyte) pairs: every scalar width, complex, records, an embedded-file-sized record.
const TYPES: &[(ElType, u64)] = &[
    (ElType::Int, 1),
    (ElType::Int, 16),
    (ElType::Uint, 2),
    (ElType::Uint, 8),
    (ElType::Float, 2),
    (ElType::Float, 4),
    (ElType::Float, 8),
    (ElType::Complex, 8),
    (ElType::Complex, 16),
    (ElType::BFloat16, 2),
    (ElType::User, 3),
    (ElType::User, 76),
    (ElType::User, 120),
];

const SHUFFLES: [Shuffle; 3] = [Shuffle::None, Shuffle::Byte, Shuffle::Bit];
const CODECS: [Codec; 3] = [Codec::None, Codec::Lz4, Codec::Zstd];

/// Bytes that compress somewhat: a slow ramp with noise in the low bits.
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 3 == 0 {
                (x & 3) as u8
            } else {
                (i / 97) as u8
            }
        })
        .collect()
}

/// The subset cut from a full column-major buffer, element by element.
fn cut(full: &[u8], dims: &[u64], elbyte: u64, ranges: &[Range<u64>]) -> Vec<u8> {
    let n: u64 = ranges.iter().map(|r| r.end - r.start).product();
    let mut out = Vec::new();
    for i in 0..n {
        let mut rest = i;
        let mut off = 0u64;
        let mut stride = 1u64;
        for (k, r) in ranges.iter().enumerate() {
            let len = r.end - r.start;
            let idx = r.start + rest % len;
            rest /= len;
            off += idx * stride;
            stride *= dims[k];
        }
        let o = (off * elbyte) as usize;
        out.extend_from_slice(&full[o..o + elbyte as usize]);
    }
    out
}

/// Chunks intersecting the subset, counted by brute force over the grid.
fn intersecting(dims: &[u64], chunk: &[u64], ranges: &[Range<u64>]) -> u64 {
    let counts: Vec<u64> = dims
        .iter()
        .zip(chunk)
        .map(|(d, c)| d.div_ceil(*c))
        .collect();
    let total: u64 = counts.iter().product();
    (0..total)
        .filter(|&n| {
            let mut rest = n;
            (0..dims.len()).all(|k| {
                let i = rest % counts[k];
                rest /= counts[k];
                let (lo, hi) = (i * chunk[k], (i + 1) * chunk[k]);
                ranges[k].start < hi && lo < ranges[k].end
            })
        })
        .count() as u64
}

fn file_of(h: &Header, section: &[u8]) -> Vec<u8> {
    let mut f = h.encode();
    f.extend_from_slice(section);
    f
}

/// dims, type, chunk shape, filter, codec, elements per block, seed, subset bounds.
type Case = (
    Vec<u64>,
    usize,
    Vec<u64>,
    usize,
    usize,
    u64,
    u64,
    Vec<(u64, u64)>,
);

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(1u64..7, 1..=6)
        .prop_filter("at most 3000 elements", |d| {
            d.iter().product::<u64>() <= 3000
        })
        .prop_flat_map(|dims| {
            (
                Just(dims.clone()),
                0..TYPES.len(),
                dims.iter().map(|&d| 1..d + 3).collect::<Vec<_>>(),
                0..3usize,
                0..3usize,
                1u64..40,
                any::<u64>(),
                dims.iter().map(|&d| (0..d, 0..d)).collect::<Vec<_>>(),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn write_then_read_and_every_subset((dims, t, chunk, s, c, block_els, seed, sub) in case()) {
        let (eltype, elbyte) = TYPES[t];
        let header = Header::new(eltype, elbyte, dims.clone()).unwrap();
        let raw = data(header.data_len() as usize, seed);
        let opts = ChunkOptions::new()
            .chunks(chunk.clone())
            .shuffle(SHUFFLES[s])
            .codec(CODECS[c])
            .block_bytes(block_els * elbyte)
            .threads(1 + (seed % 2) as usize);
        let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
        prop_assert!(h.flags.is_chunked());
        let file = file_of(&h, &section);
        prop_assert_eq!(&codec::decode_all(&h, &file[..]).unwrap(), &raw);
        // The whole-array readers.
        let d = DynArray::from_bytes(&file).unwrap();
        prop_assert_eq!(d.header().dims.clone(), dims.clone());
        if eltype == ElType::User || elbyte == 1 {
            prop_assert_eq!(d.data(), &raw[..]);
        }
        // A subset: the block cut from the full read, reading only the chunks it intersects.
        let ranges: Vec<Range<u64>> = sub.iter().map(|&(a, b)| a.min(b)..a.max(b) + 1).collect();
        let r = SectionReader::open(&h, &file[..]).unwrap();
        let want = cut(&raw, &dims, elbyte, &ranges);
        let mut got = vec![0u8; want.len()];
        r.read_subset(&ranges, &mut got).unwrap();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(r.stats().chunks_read, intersecting(&dims, &chunk, &ranges));
        prop_assert_eq!(r.chunk_map().unwrap().grid().touched_count(&ranges), intersecting(&dims, &chunk, &ranges));
        // Again: served from the block cache where the chunk was compressed.
        let before = r.stats();
        let mut again = vec![0u8; want.len()];
        r.read_subset(&ranges, &mut again).unwrap();
        prop_assert_eq!(&again, &want);
        prop_assert!(r.stats().blocks_decoded == before.blocks_decoded || want.len() > (8 << 20));
    }
}

#[test]
fn typed_arrays_round_trip_through_files_and_streams() {
    let dir = tempfile::tempdir().unwrap();
    let a = RawArray::from_shape_vec(
        vec![30, 20, 7],
        (0..4200).map(|i| (i as f32 * 0.01).sin()).collect(),
    )
    .unwrap();
    for (i, opts) in [
        WriteOptions::new().codec(Codec::Zstd),
        WriteOptions::new()
            .codec(Codec::Lz4)
            .shuffle(Shuffle::Bit)
            .chunks(vec![7, 7, 7]),
        WriteOptions::new()
            .codec(Codec::None)
            .chunks(vec![100, 1, 2])
            .big_endian(true),
        WriteOptions::new().level(19).threads(1).big_endian(true),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("a{i}.ra"));
        a.write_file_with(&path, &opts).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(Header::decode_any(&bytes).unwrap().flags.is_chunked());
        assert_eq!(RawArray::<f32>::read_file(&path).unwrap(), a, "{opts:?}");
        assert_eq!(RawArray::<f32>::from_bytes(&bytes).unwrap(), a);
        assert_eq!(RawArray::<f32>::read_from(&bytes[..]).unwrap(), a);
        let d = DynArray::read_file(&path).unwrap();
        assert_eq!(d.to_typed::<f32>().unwrap(), a);
        assert_eq!(DynArray::read_from(&bytes[..]).unwrap(), d);
        // DynArray writes chunked too, and reads back the same.
        let p2 = dir.path().join(format!("d{i}.ra"));
        d.write_file_with(&p2, &opts).unwrap();
        assert_eq!(DynArray::read_file(&p2).unwrap(), d);
    }
}

#[test]
fn compress_and_a_codec_at_once_is_an_error() {
    let a = RawArray::from_vec(vec![1u8, 2, 3]);
    let err = a
        .write_to_with(
            Vec::new(),
            &WriteOptions::new().compress(true).codec(Codec::Zstd),
        )
        .unwrap_err();
    assert!(err.to_string().contains("compress(true)"), "{err}");
}

#[test]
fn readers_outside_the_codec_layer_refuse_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.ra");
    RawArray::from_vec(vec![1.0f64; 100])
        .write_file_with(&path, &WriteOptions::new().codec(Codec::Lz4))
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(matches!(
        Header::decode(&bytes).unwrap_err().kind(),
        ErrorKind::UnknownFlags { bits: 4 }
    ));
    assert!(matches!(
        Header::read_from(&mut &bytes[..]).unwrap_err().kind(),
        ErrorKind::UnknownFlags { bits: 4 }
    ));
    // Bits 1 and 2 together are refused by every reader.
    let mut h = Header::decode_any(&bytes).unwrap();
    h.flags = Flags::COMPRESSED | Flags::CHUNKED;
    assert!(Header::decode_any(&h.encode()).is_err());
}

/// A small chunked file and its parts: 4 chunks of 1000 f32 along the last dim, 4 blocks each.
fn sample(codec_: Codec) -> (Header, Vec<u8>, Vec<u8>) {
    let header = Header::new(ElType::Float, 4, vec![10, 400]).unwrap();
    let raw: Vec<u8> = (0..4000u32)
        .flat_map(|i| ((i as f32) * 0.5).to_le_bytes())
        .collect();
    // Version 1: the tests below poke its 24-byte entries, which carry no CRC.
    let opts = ChunkOptions::new()
        .codec(codec_)
        .chunks(vec![10, 100])
        .block_bytes(1000)
        .layout_version(1);
    let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
    (h.clone(), file_of(&h, &section), raw)
}

/// Where chunk `n`'s entry lies in the file.
fn entry_at(h: &Header, n: u64) -> usize {
    h.encoded_len() + Config::encoded_len_v1(h.dims.len()) + (n * ENTRY_LEN) as usize
}

fn entry(h: &Header, file: &[u8], n: u64) -> Entry {
    let at = entry_at(h, n);
    Entry::decode(file[at..at + 24].try_into().unwrap())
}

#[test]
fn a_flipped_bit_in_a_chunk_is_an_error_naming_it() {
    for c in [Codec::Lz4, Codec::Zstd] {
        let (h, file, raw) = sample(c);
        let base = h.encoded_len() as u64;
        for n in 0..4 {
            let e = entry(&h, &file, n);
            for pos in (0..e.len).step_by(7) {
                for bit in [0, 5] {
                    let mut bad = file.clone();
                    bad[(base + e.offset + pos) as usize] ^= 1 << bit;
                    match codec::decode_all(&h, &bad[..]) {
                        Err(err) => assert!(
                            matches!(err.kind(), ErrorKind::ChunkCorrupt { chunk, .. } if *chunk == n),
                            "{c:?} chunk {n} byte {pos}: {err}"
                        ),
                        Ok(_) => panic!(
                            "{c:?} chunk {n} byte {pos} bit {bit}: flipped bit read without error"
                        ),
                    }
                    // A one-element read inside that chunk: its block is checked alone.
                    let mut one = [0u8; 4];
                    let r = codec::decode_subset(
                        &h,
                        &bad[..],
                        &[3..4, n * 100 + 50..n * 100 + 51],
                        &mut one,
                    );
                    if let Err(err) = r {
                        assert!(
                            matches!(err.kind(), ErrorKind::ChunkCorrupt { chunk, .. } if *chunk == n),
                            "{err}"
                        );
                    } else {
                        // Another block was hit: the element still reads right.
                        let at = ((n * 100 + 50) * 10 + 3) as usize * 4;
                        assert_eq!(one, raw[at..at + 4]);
                    }
                }
            }
        }
    }
}

#[test]
fn hostile_configs_and_indexes_are_errors_never_panics() {
    let (h, file, raw) = sample(Codec::Zstd);
    let base = h.encoded_len();
    let section_end = base + h.size as usize;
    // Every byte of the config and the index, changed: an error or the right bytes.
    for pos in base..base + Config::encoded_len_v1(2) + 4 * 24 {
        for x in [1u8, 0x80, 0xff] {
            let mut bad = file.clone();
            bad[pos] ^= x;
            if let Ok(got) = codec::decode_all(&h, &bad[..]) {
                // Entries moved past the committed size read as never written; nothing else.
                let zeroed = (0..4).any(|n| got[n * 4000..(n + 1) * 4000].iter().all(|&b| b == 0));
                assert!(
                    got == raw || zeroed,
                    "byte {pos} ^ {x:#x}: wrong data without an error"
                );
            }
        }
    }
    // Truncated anywhere in the section.
    for cut_at in [base, base + 10, base + 600, section_end - 1] {
        assert!(codec::decode_all(&h, &file[..cut_at]).is_err());
    }
    // An unknown codec id (CRC fixed up): named.
    let mut bad = file.clone();
    bad[base + 12] = 9;
    let crc = crc32fast::hash(&bad[base..base + 48 + 16]);
    bad[base + 64..base + 68].copy_from_slice(&crc.to_le_bytes());
    let err = codec::decode_all(&h, &bad[..]).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::UnknownCodecId {
                what: "codec",
                id: 9,
                ..
            }
        ),
        "{err}"
    );
    // Two entries naming the same bytes.
    let mut bad = file.clone();
    let (a1, a0) = (entry_at(&h, 1), entry_at(&h, 0));
    let e0 = bad[a0..a0 + 24].to_vec();
    bad[a1..a1 + 24].copy_from_slice(&e0);
    let err = codec::decode_all(&h, &bad[..]).unwrap_err();
    assert!(err.to_string().contains("overlaps"), "{err}");
    // An entry reaching into the index.
    let mut bad = file.clone();
    bad[a0..a0 + 8].copy_from_slice(&(Config::encoded_len_v1(2) as u64).to_le_bytes());
    assert!(codec::decode_all(&h, &bad[..])
        .unwrap_err()
        .to_string()
        .contains("overlaps"));
}

#[test]
fn a_decompression_bomb_is_an_error() {
    // One chunk, one block of 4000 raw bytes, whose zstd frame decodes to 1 MiB.
    let header = Header::new(ElType::Uint, 1, vec![4000]).unwrap();
    let opts = ChunkOptions::new()
        .codec(Codec::Zstd)
        .shuffle(Shuffle::None)
        .chunks(vec![4000])
        .layout_version(1);
    let (h, section) = codec::encode(&header, &data(4000, 9), &opts).unwrap();
    let cfg_len = Config::encoded_len_v1(1);
    let frame = zstd::bulk::compress(&vec![0u8; 1 << 20], 3).unwrap();
    let mut stored = Vec::new();
    stored.extend_from_slice(&(frame.len() as u64).to_le_bytes());
    stored.extend_from_slice(&crc32fast::hash(&frame).to_le_bytes());
    stored.extend_from_slice(&frame);
    let e = Entry {
        offset: (cfg_len + 24) as u64,
        len: stored.len() as u64,
        crc: crc32fast::hash(&stored),
        flags: 0,
    };
    let mut bomb = section[..cfg_len].to_vec();
    bomb.extend_from_slice(&e.encode());
    bomb.extend_from_slice(&stored);
    let mut h2 = h.clone();
    h2.size = bomb.len() as u64;
    let err = codec::decode_all(&h2, &file_of(&h2, &bomb)[..]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ChunkCorrupt { chunk: 0, .. }),
        "{err}"
    );
}

#[test]
fn chunks_never_written_read_as_zeros() {
    let (h, mut file, raw) = sample(Codec::Lz4);
    let a = entry_at(&h, 2);
    file[a..a + 24].fill(0);
    let got = codec::decode_all(&h, &file[..]).unwrap();
    assert!(got[8000..12000].iter().all(|&b| b == 0));
    assert_eq!(got[..8000], raw[..8000]);
    assert_eq!(got[12000..], raw[12000..]);
}

#[test]
fn one_element_decodes_one_block() {
    let (h, file, raw) = sample(Codec::Zstd);
    let r = SectionReader::open(&h, &file[..]).unwrap();
    let mut one = [0u8; 4];
    r.read_subset(&[4..5, 250..251], &mut one).unwrap();
    let at = (250 * 10 + 4) * 4;
    assert_eq!(one, raw[at..at + 4]);
    assert_eq!((r.stats().chunks_read, r.stats().blocks_decoded), (1, 1));
    // The same block again: from the cache.
    r.read_subset(&[5..6, 250..251], &mut one).unwrap();
    assert_eq!(r.stats().blocks_decoded, 1);
}

/// The listing of version 1's worked example in doc/chunked.md.
fn spec_example() -> Vec<u8> {
    spec_listing("#### 6.4 A worked example")
}

/// The listing under `heading` in doc/chunked.md: `OFFSET: hex bytes | comment` lines and
/// `... N zero bytes`.
fn spec_listing(heading: &str) -> Vec<u8> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../doc/chunked.md")).unwrap();
    let after = doc.split(heading).nth(1).expect("the example section");
    let block = after
        .split("```text")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let mut bytes = Vec::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let data = line.split('|').next().unwrap().trim();
        if let Some(rest) = data.strip_prefix("...") {
            let n: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
            bytes.resize(bytes.len() + n, 0);
            continue;
        }
        let (off, hex) = data.split_once(':').unwrap();
        assert_eq!(
            usize::from_str_radix(off, 16).unwrap(),
            bytes.len(),
            "offset of line {line:?}"
        );
        bytes.extend(
            hex.split_whitespace()
                .map(|h| u8::from_str_radix(h, 16).unwrap()),
        );
    }
    bytes
}

/// The spec's listings are lz4_flex's encoding of their blocks. With the feature `lz4-c`, blocks
/// are compressed by liblz4, another valid encoding of the same data (it decodes the same):
/// the byte-exact tests switch the encoder back (process-wide; every other test round-trips).
fn lz4_flex_encoder() {
    #[cfg(feature = "lz4-c")]
    rawarray_serde::codec::lz4::set_encoder(rawarray_serde::codec::lz4::Encoder::Flex);
}

#[test]
fn worked_example_in_the_spec() {
    lz4_flex_encoder();
    let file = spec_example();
    let mut raw = vec![7u8; 64];
    raw.extend(0..64u8);
    let header = Header::new(ElType::Uint, 1, vec![64, 2]).unwrap();
    let opts = ChunkOptions::new()
        .chunks(vec![64, 1])
        .shuffle(Shuffle::None)
        .codec(Codec::Lz4)
        .block_bytes(64)
        .layout_version(1);
    let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
    assert_eq!(file_of(&h, &section), file);
    let h = Header::decode_any(&file).unwrap();
    assert_eq!(codec::decode_all(&h, &file[..]).unwrap(), raw);
    let a: RawArray<u8> = RawArray::from_bytes(&file).unwrap();
    assert_eq!(a.into_vec(), raw);
    // The same block as LZ4 written by hand (a match of 58, the minimal 5 last literals):
    // another valid encoding, which our decoder reads too.
    let by_hand = [0x1f, 0x07, 0x01, 0x00, 0x27, 0x50, 7, 7, 7, 7, 7];
    let mut back = [0u8; 64];
    let el = rawarray_serde::codec::Elements::new(ElType::Uint, 1, false);
    Codec::Lz4
        .block_codec()
        .decompress(&by_hand, &el, &mut back)
        .unwrap();
    assert_eq!(back, [7u8; 64]);
}

/// Version 2's worked example (doc/chunked.md 5.6): `u8` dims `[32, 4]`, columns 0 and 1 all
/// 7 and columns 2 and 3 the ramp 0..32; chunks `[32, 2]`, blocks `[16, 2]`, filters
/// `[delta]`, lz4, statistics. The encoder writes exactly the listing; it decodes to the array,
/// every block and entry CRC holds, and the statistics are the chunks' min and max.
#[test]
fn worked_example_v2_in_the_spec() {
    lz4_flex_encoder();
    let file = spec_listing("#### 5.6 A worked example");
    let raw: Vec<u8> = (0..4u8)
        .flat_map(|j| (0..32u8).map(move |i| if j < 2 { 7 } else { i }))
        .collect();
    let header = Header::new(ElType::Uint, 1, vec![32, 4]).unwrap();
    let opts = rawarray_serde::WriteOptions::new()
        .codec(Codec::Lz4)
        .filters([rawarray_serde::codec::Filter::Delta])
        .chunks(vec![32, 2])
        .blocks(vec![16, 2]);
    let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
    assert_eq!(file_of(&h, &section), file);
    let h = Header::decode_any(&file).unwrap();
    let s = rawarray_serde::section::Section::open(&h, &file[..]).unwrap();
    assert_eq!(s.read_all().unwrap(), raw);
    assert_eq!(s.verify().unwrap(), 2);
    let map = s.chunk_map().unwrap();
    assert_eq!(map.config().version, 2);
    let fields = map.config().stats.clone().unwrap();
    for (n, (lo, hi)) in [(0u64, (7u128, 7u128)), (1, (0, 31))] {
        let st = rawarray_serde::codec::stats::parse(&fields, map.index().stats(n).unwrap());
        assert_eq!(
            st[0].min_max,
            Some((
                rawarray_serde::codec::stats::Value::Uint(lo),
                rawarray_serde::codec::stats::Value::Uint(hi)
            ))
        );
    }
}

#[test]
fn chunk_writer_grows_along_the_last_dim_and_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.ra");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    // Records of 3 u16, 5 records per chunk; S0 = 1 so segments 1, 2, 3 are allocated as it grows.
    let h = Header::new(ElType::Uint, 2, vec![3, 0]).unwrap();
    let opts = ChunkOptions::new().chunks(vec![3, 5]).codec(Codec::Zstd);
    let mut w = chunk_writer(&file, &h, &opts, 1);
    let chunk = |c: u64| -> Vec<u8> {
        (0..15u16)
            .flat_map(|i| (c as u16 * 100 + i).to_le_bytes())
            .collect()
    };
    for c in 0..6u64 {
        w.set_dims(vec![3, 5 * (c + 1)]).unwrap();
        w.write_chunk(&file, c, &chunk(c)).unwrap();
        // Not yet committed: readers see the chunks committed before.
        let a: RawArray<u16> = RawArray::read_file(&path).unwrap();
        assert_eq!(a.dims(), [3, 5 * c]);
        w.commit(&file, false).unwrap();
        let a: RawArray<u16> = RawArray::read_file(&path).unwrap();
        let want: Vec<u16> = (0..=c)
            .flat_map(|c| (0..15u16).map(move |i| c as u16 * 100 + i))
            .collect();
        assert_eq!(a.into_vec(), want);
    }
    // Reopened: appends after the committed chunks.
    drop(w);
    let mut w = codec::ChunkWriter::open(&file).unwrap();
    w.set_dims(vec![3, 35]).unwrap();
    w.write_chunk(&file, 6, &chunk(6)).unwrap();
    w.commit(&file, true).unwrap();
    let a: RawArray<u16> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.get(&[2, 34]), Some(&614));
    assert_eq!(a.get(&[0, 0]), Some(&0));
}

#[test]
fn serde_reads_chunked_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let points: Vec<[f64; 3]> = (0..500)
        .map(|i| [f64::from(i), 0.5 * f64::from(i), -1.0])
        .collect();
    let a: RawArray<[f64; 3]> = RawArray::from_vec(points.clone());
    for opts in [
        WriteOptions::new().codec(Codec::Zstd).chunks(vec![3, 64]),
        WriteOptions::new().codec(Codec::Lz4).big_endian(true),
    ] {
        a.write_file_with(&path, &opts).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            rawarray_serde::from_file::<Vec<[f64; 3]>>(&path).unwrap(),
            points
        );
        assert_eq!(
            rawarray_serde::from_reader::<Vec<[f64; 3]>>(&bytes[..]).unwrap(),
            points
        );
        assert_eq!(
            rawarray_serde::from_slice::<Vec<[f64; 3]>>(&bytes).unwrap(),
            points
        );
    }
}

/// A chunk writer starting `file` for `h` with `opts`, its index segment 0 of `s0` entries.
fn chunk_writer(
    file: &std::fs::File,
    h: &Header,
    opts: &ChunkOptions,
    s0: u64,
) -> codec::ChunkWriter {
    let mut config = opts.chunk_config(h, None).unwrap();
    config.s0 = s0;
    codec::ChunkWriter::create(file, h, config).unwrap()
}

/// A chunked file built by hand (version 1): `dims` of `elbyte`-byte uints, a config of chunk shape
/// `chunk` and `block_bytes`, index segment 0 holding `entries`, then `tail` (chunk bytes).
fn hand_file(
    elbyte: u64,
    dims: Vec<u64>,
    chunk: Vec<u64>,
    block_bytes: u64,
    entries: &[Entry],
    tail: &[u8],
) -> (Header, Vec<u8>) {
    let n = dims.len();
    let mut h = Header::new(ElType::Uint, elbyte, dims).unwrap();
    let config = Config {
        version: 1,
        codec: Codec::Lz4,
        level: 0,
        filters: Vec::new(),
        blocks: rawarray_serde::codec::Blocks::Bytes(block_bytes),
        chunk,
        s0: entries.len() as u64,
        segments: Config::first_segment(1, n, 0, 0),
        stats: None,
        split: false,
        stream_crcs: false,
    };
    let mut section = config.encode();
    for e in entries {
        section.extend_from_slice(&e.encode());
    }
    section.extend_from_slice(tail);
    h.flags = Flags::CHUNKED;
    h.size = section.len() as u64;
    (h.clone(), file_of(&h, &section))
}

#[test]
fn a_block_table_whose_length_overflows_is_an_error_naming_the_chunk() {
    // One chunk of 2^62 one-byte blocks: its table (2^62 x 12 bytes) wraps to 0 in u64.
    let payload = [0u8; 10];
    let at = (Config::encoded_len_v1(1) as u64) + ENTRY_LEN;
    let e = Entry {
        offset: at,
        len: 10,
        crc: crc32fast::hash(&payload),
        flags: 0,
    };
    let (h, file) = hand_file(1, vec![1 << 62], vec![1 << 62], 1, &[e], &payload);
    assert!(file.len() < 700);
    let err = SectionReader::open(&h, &file[..]).unwrap_err();
    assert!(
        err.to_string().contains("index entry of chunk 0")
            && err.to_string().contains("block table"),
        "{err}"
    );
    let mut one = [0u8; 1];
    let err =
        codec::decode_subset(&h, &file[..], std::slice::from_ref(&(5..6)), &mut one).unwrap_err();
    assert!(err.to_string().contains("chunk 0"), "{err}");
}

#[test]
fn a_chunk_shape_far_past_the_dims_reads_whole() {
    // dims [2, 4] of u32 in one chunk of shape [2, 2^62]: the unclipped stride, 2 x 2^62 x 4
    // bytes, wraps to 0.
    let raw: Vec<u8> = (0..32u8).collect();
    let e = Entry {
        offset: (Config::encoded_len_v1(2) as u64) + ENTRY_LEN,
        len: 32,
        crc: crc32fast::hash(&raw),
        flags: 1,
    };
    let (h, file) = hand_file(4, vec![2, 4], vec![2, 1 << 62], 4, &[e], &raw);
    assert_eq!(codec::decode_all(&h, &file[..]).unwrap(), raw);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.ra");
    std::fs::write(&path, &file).unwrap();
    let a: RawArray<u32> = RawArray::read_file(&path).unwrap();
    let want: Vec<u32> = raw
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(a.into_vec(), want);
}

#[test]
fn a_committed_chunk_is_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("once.ra");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let h = Header::new(ElType::Uint, 1, vec![4, 0]).unwrap();
    let opts = ChunkOptions::new().chunks(vec![4, 2]).codec(Codec::None);
    let mut w = chunk_writer(&file, &h, &opts, 4);
    w.set_dims(vec![4, 4]).unwrap();
    w.write_chunk(&file, 0, &[1; 8]).unwrap();
    // Not committed yet: it may be written again.
    w.write_chunk(&file, 0, &[2; 8]).unwrap();
    w.commit(&file, false).unwrap();
    let err = w.write_chunk(&file, 0, &[3; 8]).unwrap_err();
    assert!(err.to_string().contains("chunk 0"), "{err}");
    // Chunk 1 still goes in; after its commit chunk 0 holds what was committed.
    w.write_chunk(&file, 1, &[4; 8]).unwrap();
    let a: RawArray<u8> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.into_vec(), [[2; 8], [0; 8]].concat());
    w.commit(&file, false).unwrap();
    // A writer reopened on the file refuses it too.
    drop(w);
    let mut w = codec::ChunkWriter::open(&file).unwrap();
    assert!(w.write_chunk(&file, 1, &[5; 8]).is_err());
    let a: RawArray<u8> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.into_vec(), [[2; 8], [4; 8]].concat());
}

#[test]
fn a_writer_resumed_after_a_crash_clears_what_the_dead_writer_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.ra");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    // Bytes no codec shrinks: the top byte of an LCG's state.
    let noise = |seed: u64| -> Vec<u8> {
        let mut x = seed;
        (0..128)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect()
    };
    // Entries: segment 0 holds all 4 chunks; stored raw, every chunk is 8 bytes.
    let h = Header::new(ElType::Uint, 1, vec![4, 0]).unwrap();
    let opts = ChunkOptions::new().chunks(vec![4, 2]).codec(Codec::None);
    let mut w = chunk_writer(&file, &h, &opts, 4);
    w.set_dims(vec![4, 2]).unwrap();
    w.write_chunk(&file, 0, &[1; 8]).unwrap();
    w.commit(&file, false).unwrap();
    // A writer dies after writing chunk 1's bytes and entry, before its commit.
    w.set_dims(vec![4, 4]).unwrap();
    w.write_chunk(&file, 1, &[9; 8]).unwrap();
    drop(w);
    // The next writer appends chunk 2 where chunk 1 was and commits: chunk 1's stale entry
    // now ends inside the size, over chunk 2's bytes.
    let mut w = codec::ChunkWriter::open(&file).unwrap();
    w.set_dims(vec![4, 6]).unwrap();
    w.write_chunk(&file, 2, &[7; 8]).unwrap();
    w.commit(&file, false).unwrap();
    let a: RawArray<u8> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.into_vec(), [[1; 8], [0; 8], [7; 8]].concat());

    // Segment slots: S0 = 1, so chunk 2 lives in segment 2. A dead writer allocates segments
    // 1 and 2 after a small (compressed) chunk 1; the next writer's chunk 1 is larger and its
    // commit covers the stale segment 2, which lies over its bytes.
    let path = dir.path().join("slots.ra");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let opts = ChunkOptions::new()
        .chunks(vec![4, 32])
        .codec(Codec::Zstd)
        .shuffle(Shuffle::None);
    let mut w = chunk_writer(&file, &h, &opts, 1);
    w.set_dims(vec![4, 32]).unwrap();
    w.write_chunk(&file, 0, &[1; 128]).unwrap();
    w.commit(&file, false).unwrap();
    w.set_dims(vec![4, 96]).unwrap();
    w.write_chunk(&file, 1, &[2; 128]).unwrap();
    w.write_chunk(&file, 2, &[3; 128]).unwrap();
    drop(w);
    let mut w = codec::ChunkWriter::open(&file).unwrap();
    w.set_dims(vec![4, 64]).unwrap();
    let chunk1 = noise(5);
    assert!(w.write_chunk(&file, 1, &chunk1).unwrap().is_raw());
    w.commit(&file, false).unwrap();
    drop(w);
    // Growing to chunk 2: a reader and a writer see segment 2 as not allocated.
    let mut w = codec::ChunkWriter::open(&file).unwrap();
    w.set_dims(vec![4, 96]).unwrap();
    w.write_chunk(&file, 2, &[4; 128]).unwrap();
    w.commit(&file, false).unwrap();
    let a: RawArray<u8> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.into_vec(), [vec![1; 128], chunk1, vec![4; 128]].concat());
}

#[test]
fn entries_pointing_past_the_committed_size_are_reported() {
    let (h, file, raw) = sample(Codec::Lz4);
    let reader = SectionReader::open(&h, &file[..]).unwrap();
    assert!(reader.chunk_map().unwrap().index().uncommitted().is_empty());
    // One flipped bit in chunk 2's offset: the chunk reads as never written, so the index
    // names it for checkers.
    let mut bad = file.clone();
    bad[entry_at(&h, 2) + 5] ^= 0x10;
    let got = codec::decode_all(&h, &bad[..]).unwrap();
    assert_eq!(got[..8000], raw[..8000]);
    assert!(got[8000..12000].iter().all(|&b| b == 0));
    let reader = SectionReader::open(&h, &bad[..]).unwrap();
    assert_eq!(reader.chunk_map().unwrap().index().uncommitted(), [2]);
}

// The byte-streams example of doc/chunked.md 5.3: 64 `u16` elements 0 ..= 63, filters
// [shuffle], codec lz4, features bit 1. The listing is the block's payload; the encoder writes
// exactly it, and it decodes to the elements.
#[test]
fn split_worked_example_in_the_spec() {
    use rawarray_serde::codec::{Elements, Filter, Pipeline};
    lz4_flex_encoder();
    let listed = spec_listing("**Byte streams (features bit 1).**");
    let raw: Vec<u8> = (0..64u16).flat_map(u16::to_le_bytes).collect();
    let p = Pipeline::new(
        vec![Filter::Shuffle],
        Codec::Lz4,
        0,
        Elements::new(ElType::Uint, 2, false),
    )
    .with_split(true);
    let mut stored = Vec::new();
    p.encode_block(&raw, &mut stored).unwrap();
    assert_eq!(stored, listed, "{stored:02x?}");
    let mut back = vec![0u8; raw.len()];
    p.decode_block(&listed, &mut back).unwrap();
    assert_eq!(back, raw);
    // Stream 0 (the low bytes 0 ..= 63) is stored as it is; stream 1 (64 zeros) is coded.
    assert_eq!(&listed[..4], &64u32.to_le_bytes());
    assert_eq!(&listed[8..72], &(0..64u8).collect::<Vec<_>>()[..]);
}

// doc/chunked.md 5.3's block with stream CRCs (features bit 2): the encoder writes exactly the
// listed bytes, whose CRCs are zlib's CRC-32 of each stream (computed here by crc32fast, and
// in the spec by Python's zlib.crc32), a whole decode gives the elements, and each stream read
// alone from its own bytes decodes to its plane.
#[test]
fn stream_crcs_worked_example_in_the_spec() {
    use rawarray_serde::codec::{split, Elements, Filter, Pipeline};
    lz4_flex_encoder();
    let listed = spec_listing("**Stream CRCs (features bit 2, only with bit 1).**");
    assert_eq!(listed.len(), 92);
    let raw: Vec<u8> = (0..64u16).flat_map(u16::to_le_bytes).collect();
    let el = Elements::new(ElType::Uint, 2, false);
    let p = Pipeline::new(vec![Filter::Shuffle], Codec::Lz4, 0, el)
        .with_split(true)
        .with_stream_crcs(true);
    let mut stored = Vec::new();
    p.encode_block(&raw, &mut stored).unwrap();
    assert_eq!(stored, listed, "{stored:02x?}");
    let mut back = vec![0u8; raw.len()];
    p.decode_block(&listed, &mut back).unwrap();
    assert_eq!(back, raw);
    assert_eq!(&listed[8..12], &0x100e_ce8cu32.to_le_bytes());
    assert_eq!(
        &listed[8..12],
        &crc32fast::hash(&listed[16..80]).to_le_bytes()
    );
    assert_eq!(
        &listed[12..16],
        &crc32fast::hash(&listed[80..92]).to_le_bytes()
    );
    let streams = split::streams_of(&listed[..16], 92, &el, raw.len(), true).unwrap();
    let planes: [Vec<u8>; 2] = [(0..64u8).collect(), vec![0u8; 64]];
    let codec = Codec::Lz4.block_codec();
    for (j, s) in streams.iter().enumerate() {
        let mut out = vec![0u8; 64];
        split::decode_stream(codec, s, j, &listed[s.range.clone()], &el, &mut out).unwrap();
        assert_eq!(out, planes[j], "stream {j}");
    }
}
