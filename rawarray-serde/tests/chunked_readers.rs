//! The library's readers over chunked files (flag bit 2): `ArrayReader` subsets equal the block
//! cut from a full read and touch only the chunks they intersect; `RecordReader` and serde's
//! `from_file` / `from_reader` / `from_slice` read chunked files; a flipped bit names its chunk.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

use std::ops::Range;

use proptest::prelude::*;
use rawarray_serde::codec::{self, ChunkOptions, Codec, SectionReader, Shuffle};
use rawarray_serde::{
    ArrayReader, ElType, ErrorKind, Header, RawArray, ReadMode, RecordReader, WriteOptions,
};

const TYPES: &[(ElType, u64)] = &[
    (ElType::Uint, 1),
    (ElType::Int, 2),
    (ElType::Float, 4),
    (ElType::Float, 8),
    (ElType::Complex, 16),
    (ElType::User, 3),
    (ElType::User, 76),
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

/// The subset cut from a full column-major buffer, element by element (independent of the
/// library's run planning).
fn cut(full: &[u8], dims: &[u64], elbyte: u64, ranges: &[Range<u64>]) -> Vec<u8> {
    let n: u64 = ranges.iter().map(|r| r.end - r.start).product();
    let mut out = Vec::new();
    for i in 0..n {
        let (mut rest, mut off, mut stride) = (i, 0u64, 1u64);
        for (k, r) in ranges.iter().enumerate() {
            let len = r.end - r.start;
            off += (r.start + rest % len) * stride;
            rest /= len;
            stride *= dims[k];
        }
        let o = (off * elbyte) as usize;
        out.extend_from_slice(&full[o..o + elbyte as usize]);
    }
    out
}

/// The chunks a subset intersects, by brute force over the grid.
fn intersecting(dims: &[u64], chunk: &[u64], ranges: &[Range<u64>]) -> Vec<u64> {
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
                ranges[k].start < (i + 1) * chunk[k] && i * chunk[k] < ranges[k].end
            })
        })
        .collect()
}

fn write(path: &std::path::Path, h: &Header, section: &[u8]) {
    let mut f = h.encode();
    f.extend_from_slice(section);
    std::fs::write(path, f).unwrap();
}

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
    prop::collection::vec(1u64..9, 1..=4).prop_flat_map(|dims| {
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
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn array_reader_subsets_read_only_the_chunks_they_intersect(
        (dims, t, chunk, s, c, block_els, seed, sub) in case()
    ) {
        let (eltype, elbyte) = TYPES[t];
        let header = Header::new(eltype, elbyte, dims.clone()).unwrap();
        let raw = data(header.data_len() as usize, seed);
        let opts = ChunkOptions::new()
            .chunks(chunk.clone())
            .shuffle(SHUFFLES[s])
            .codec(CODECS[c])
            .block_bytes(block_els * elbyte);
        let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.ra");
        write(&path, &h, &section);
        let mut file = h.encode();
        file.extend_from_slice(&section);
        let layout = SectionReader::open(&h, &file[..]).unwrap().chunk_map().unwrap().clone();

        for mapped in [false, true] {
            let r = if mapped { ArrayReader::open_mapped(&path) } else { ArrayReader::open(&path) }
                .unwrap();
            prop_assert!(!r.is_mapped(), "a chunked section is never mapped");
            // The whole array.
            let all: Vec<Range<u64>> = dims.iter().map(|&d| 0..d).collect();
            let (_, whole) = r.read_subset_bytes(&all).unwrap();
            prop_assert_eq!(&whole, &raw);
            // A subset: the block cut from the full read, reading only the chunks it touches
            // and no more than their stored bytes.
            let ranges: Vec<Range<u64>> =
                sub.iter().map(|&(a, b)| a.min(b)..a.max(b) + 1).collect();
            let touched = intersecting(&dims, &chunk, &ranges);
            let stored: u64 = touched
                .iter()
                .map(|&n| layout.chunk_range(n).map_or(0, |r| r.end - r.start))
                .sum();
            let before = r.io_stats();
            let decoded_before = r.section_stats().unwrap().blocks_decoded;
            let (bh, got) = r.read_subset_bytes(&ranges).unwrap();
            prop_assert_eq!(&got, &cut(&raw, &dims, elbyte, &ranges));
            prop_assert_eq!(bh.dims, ranges.iter().map(|r| r.end - r.start).collect::<Vec<_>>());
            let after = r.io_stats();
            prop_assert_eq!(after.reads - before.reads, touched.len() as u64);
            prop_assert!(after.bytes - before.bytes <= stored);
            // Again: blocks cut from come from the cache (a chunk read whole is decoded straight
            // into place, not cached), so a repeat decodes no more than the first read did.
            let first = r.section_stats().unwrap().blocks_decoded;
            let (_, again) = r.read_subset_bytes(&ranges).unwrap();
            prop_assert_eq!(&again, &got);
            let second = r.section_stats().unwrap().blocks_decoded;
            prop_assert!(
                second - first <= first - decoded_before,
                "a repeat decoded {} blocks, the first read {}",
                second - first,
                first - decoded_before
            );
        }
    }
}

#[test]
fn typed_reads_of_a_chunked_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.ra");
    let dims = vec![13u64, 11, 5];
    let values: Vec<f32> = (0..13 * 11 * 5).map(|i| i as f32 * 0.25).collect();
    let a = RawArray::from_shape_vec(dims.clone(), values.clone()).unwrap();
    for opts in [
        WriteOptions::new().codec(Codec::Zstd).chunks(vec![4, 3, 2]),
        WriteOptions::new()
            .codec(Codec::Lz4)
            .chunks(vec![13, 11, 1])
            .big_endian(true),
    ] {
        a.write_file_with(&path, &opts).unwrap();
        let r = ArrayReader::open(&path).unwrap();
        assert_eq!(r.read_all::<f32>().unwrap(), a);
        let plane: RawArray<f32> = r.read_subset(&[0..13, 0..11, 3..4]).unwrap();
        assert_eq!(plane.as_slice(), &values[3 * 143..4 * 143]);
        let mut one = [0f32];
        r.read_subset_into(&[7..8, 9..10, 2..3], &mut one).unwrap();
        assert_eq!(one[0], values[7 + 9 * 13 + 2 * 143]);
        // The wrong type is refused as for plain files.
        assert!(r.read_subset::<u32>(&[0..1, 0..1, 0..1]).is_err());
    }
    // A fixed-array element: its own dim leads the header's and is read whole.
    let v: Vec<[f32; 3]> = (0..40).map(|i| [i as f32, -(i as f32), 0.5]).collect();
    let b = RawArray::from_shape_vec(vec![8, 5], v.clone()).unwrap();
    b.write_file_with(
        &path,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![2, 3, 2]),
    )
    .unwrap();
    let r = ArrayReader::open(&path).unwrap();
    let col: RawArray<[f32; 3]> = r.read_subset(&[2..5, 4..5]).unwrap();
    assert_eq!(col.as_slice(), &v[34..37]);
}

#[cfg(feature = "ndarray")]
#[test]
fn read_slice_of_a_chunked_file() {
    use ndarray::s;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let a = RawArray::from_shape_vec(vec![6, 5, 4], (0..120u32).collect()).unwrap();
    a.write_file_with(
        &path,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![2, 2, 2]),
    )
    .unwrap();
    let r = ArrayReader::open(&path).unwrap();
    let plane = r.read_slice::<u32, _>(s![.., .., 1]).unwrap();
    assert_eq!(plane.shape(), &[6, 5]);
    assert_eq!(plane[[4, 3]], 4 + 3 * 6 + 30);
    // Plane 1 of the last dim lies in the 3 x 3 chunks at chunk index 0 along it.
    assert_eq!(r.io_stats().reads, 9);
    let err = r.view::<u32>().unwrap_err();
    assert!(err.to_string().contains("chunked"), "{err}");
}

#[test]
fn a_flipped_bit_read_through_array_reader_names_the_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ra");
    let a = RawArray::from_shape_vec(
        vec![10, 400],
        (0..4000)
            .map(|i| (i as f32 * 0.01).sin())
            .collect::<Vec<f32>>(),
    )
    .unwrap();
    // Coded chunks are checked by their blocks' CRCs; chunks stored raw (no codec) by their
    // entry's, also when a read takes one element of them.
    for (codec, one) in [
        (Codec::Zstd, false),
        (Codec::None, false),
        (Codec::None, true),
    ] {
        a.write_file_with(
            &path,
            &WriteOptions::new().codec(codec).chunks(vec![10, 100]),
        )
        .unwrap();
        let good = std::fs::read(&path).unwrap();
        let h = Header::decode_any(&good).unwrap();
        let layout = SectionReader::open(&h, &good[..])
            .unwrap()
            .chunk_map()
            .unwrap()
            .clone();
        for n in 0..4u64 {
            let chunk = layout.chunk_range(n).unwrap();
            let mut bad = good.clone();
            // The last stored byte of the chunk: inside its last block's payload.
            bad[h.encoded_len() + chunk.end as usize - 1] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            let r = ArrayReader::open(&path).unwrap();
            let last = if one { (n + 1) * 100 - 1 } else { n * 100 };
            let err = r
                .read_subset::<f32>(&[9..10, last..(n + 1) * 100])
                .unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::ChunkCorrupt { chunk, .. } if *chunk == n),
                "chunk {n}: {err}"
            );
            assert!(err.to_string().contains(&format!("chunk {n}")), "{err}");
            // The chunks next to it read right.
            let other = (n + 1) % 4;
            let ok: RawArray<f32> = r
                .read_subset(&[0..10, other * 100..other * 100 + 1])
                .unwrap();
            assert_eq!(
                ok.as_slice(),
                &a.as_slice()[(other * 1000) as usize..][..10]
            );
        }
    }
}

#[test]
fn whole_reads_into_a_used_buffer_read_unwritten_chunks_as_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.ra");
    let values: Vec<f32> = (1..=4000).map(|i| i as f32).collect();
    let a = RawArray::from_shape_vec(vec![10, 400], values.clone()).unwrap();
    // Chunks holding whole leading dims (decoded in place) and chunks that do not.
    for chunk in [vec![10, 100], vec![5, 100]] {
        a.write_file_with(
            &path,
            // Version 1: its 24-byte entries are poked below.
            &WriteOptions::new()
                .codec(Codec::Zstd)
                .chunks(chunk.clone())
                .layout_version(1),
        )
        .unwrap();
        let mut file = std::fs::read(&path).unwrap();
        let h = Header::decode_any(&file).unwrap();
        // Chunk 1 never written: its index entry all zeros.
        let at =
            h.encoded_len() + codec::Config::encoded_len_v1(2) + codec::index::ENTRY_LEN as usize;
        file[at..at + 24].fill(0);
        std::fs::write(&path, &file).unwrap();
        let mut want = values.clone();
        for j in 0..400 {
            for i in 0..10 {
                let n = i / chunk[0] + (10 / chunk[0]) * (j / 100);
                if n == 1 {
                    want[(i + 10 * j) as usize] = 0.0;
                }
            }
        }
        let r = ArrayReader::open(&path).unwrap();
        let mut out = vec![7.0f32; 4000];
        r.read_subset_into(&[0..10, 0..400], &mut out).unwrap();
        assert_eq!(out, want, "chunks {chunk:?}");
        assert_eq!(r.read_all::<f32>().unwrap().as_slice(), &want[..]);
        let chunks = 4000 / (chunk[0] * 100);
        assert_eq!(
            r.io_stats().reads,
            2 * (chunks - 1),
            "the unwritten chunk is not read"
        );
    }
}

#[test]
fn record_reader_decodes_only_the_chunk_of_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let values: Vec<u64> = (0..5000).map(|i| i * 3 + 1).collect();
    let a = RawArray::from_vec(values.clone());
    for opts in [
        WriteOptions::new().codec(Codec::Zstd).chunks(vec![700]),
        WriteOptions::new()
            .codec(Codec::Lz4)
            .shuffle(Shuffle::Bit)
            .chunks(vec![64])
            .big_endian(true),
    ] {
        a.write_file_with(&path, &opts).unwrap();
        for mode in [ReadMode::Mapped, ReadMode::Positioned] {
            let r = RecordReader::<u64>::open_with(&path, mode).unwrap();
            // Never mapped: read through the decoder.
            assert_eq!(r.mode(), ReadMode::Positioned);
            assert_eq!(r.len(), 5000);
            assert_eq!(r.get(4321).unwrap(), Some(values[4321]));
            let s = r.section_stats().unwrap();
            assert_eq!(s.chunks_read, 1, "one record, one chunk");
            // The same record again: its block comes from the cache.
            assert_eq!(r.get(4321).unwrap(), Some(values[4321]));
            assert_eq!(r.section_stats().unwrap().blocks_decoded, s.blocks_decoded);
            assert_eq!(r.get(5000).unwrap(), None);
            // Across chunk boundaries, and every record in order.
            assert_eq!(*r.slice(690..1410).unwrap(), values[690..1410]);
            assert_eq!(
                r.iter().map(|rec| rec.unwrap()[0]).collect::<Vec<_>>(),
                values
            );
            let stored: Vec<u8> = if r.header().is_big_endian() {
                values.iter().flat_map(|v| v.to_be_bytes()).collect()
            } else {
                values.iter().flat_map(|v| v.to_le_bytes()).collect()
            };
            assert_eq!(*r.data().unwrap(), stored[..]);
            assert_eq!(*r.get_bytes(7).unwrap(), stored[56..64]);
        }
    }
    // Records of several values: dims [3, 400], a record is a column of three.
    let b = RawArray::from_shape_vec(vec![3, 400], (0..1200).map(|i| i as f32).collect()).unwrap();
    b.write_file_with(
        &path,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![2, 50]),
    )
    .unwrap();
    let r = RecordReader::<f32>::open(&path).unwrap();
    assert_eq!((r.len(), r.record_len()), (400, 3));
    assert_eq!(
        *r.slice(99..101).unwrap(),
        [297.0, 298.0, 299.0, 300.0, 301.0, 302.0]
    );
    assert_eq!(
        r.section_stats().unwrap().chunks_read,
        4,
        "2 x 2 chunks hold records 99 and 100"
    );
}

#[test]
fn serde_reads_chunked_files_from_files_streams_and_slices() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    // The truth: the same value as a plain file, read back by serde.
    let nested: Vec<Vec<u16>> = (0..25)
        .map(|j| (0..4).map(|i| i * 100 + j).collect())
        .collect();
    let plain = rawarray_serde::to_vec(&nested).unwrap();
    let h = Header::decode(&plain).unwrap();
    assert_eq!(h.dims, [4, 25]);
    let a: RawArray<u16> = RawArray::from_bytes(&plain).unwrap();
    for opts in [
        WriteOptions::new().codec(Codec::Zstd).chunks(vec![3, 7]),
        WriteOptions::new()
            .codec(Codec::None)
            .chunks(vec![4, 1])
            .big_endian(true),
    ] {
        a.write_file_with(&path, &opts).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let h = Header::decode_any(&bytes).unwrap();
        assert!(h.flags.is_chunked());
        assert_eq!(
            rawarray_serde::from_file::<Vec<Vec<u16>>>(&path).unwrap(),
            nested
        );
        assert_eq!(
            rawarray_serde::from_reader::<Vec<Vec<u16>>>(&bytes[..]).unwrap(),
            nested
        );
        assert_eq!(
            rawarray_serde::from_slice::<Vec<Vec<u16>>>(&bytes).unwrap(),
            nested
        );
        // A stream is left just after the data section (the header's size), whatever follows.
        let mut more = bytes.clone();
        let end = h.encoded_len() as u64 + h.size;
        more.truncate(end as usize);
        more.extend_from_slice(b"after");
        let mut cur = std::io::Cursor::new(&more);
        let mut de = rawarray_serde::Deserializer::from_reader(&mut cur).unwrap();
        let v: Vec<Vec<u16>> = serde::Deserialize::deserialize(&mut de).unwrap();
        de.end().unwrap();
        drop(de);
        assert_eq!(v, nested);
        assert_eq!(cur.position(), end);
        // A stream cut inside the section: an error, never a panic.
        let cut = &bytes[..(end - 5) as usize];
        let err = rawarray_serde::from_reader::<Vec<Vec<u16>>>(cut).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
    }
    // A header claiming a huge section over a short stream: refused as the bytes run out.
    let mut h = Header::decode_any(&std::fs::read(&path).unwrap()).unwrap();
    h.size = 1 << 40;
    let mut lie = h.encode();
    lie.extend_from_slice(&[0u8; 1000]);
    let err = rawarray_serde::from_reader::<Vec<Vec<u16>>>(&lie[..]).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
}

/// A whole read of a grid of many slabs along the last dim (each thread decodes and places a
/// slab's chunks) into a dirty buffer: chunks written read back, chunks never written are
/// zeros, at every edge (chunks clipped in every dim).
#[test]
fn whole_reads_of_slabs_of_chunks_with_holes_into_a_dirty_buffer() {
    use rawarray_serde::ArrayWriter;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holes.ra");
    let dims = [7u64, 5, 9];
    let chunk = vec![3u64, 2, 2];
    let opts = ChunkOptions::new()
        .codec(Codec::Lz4)
        .shuffle(Shuffle::Byte)
        .chunks(chunk.clone());
    let w = ArrayWriter::create_chunked::<u32>(&path, &dims, &opts).unwrap();
    let value = |x: u64, y: u64, z: u64| (1 + x + 10 * y + 100 * z) as u32;
    let mut want = vec![0u32; 7 * 5 * 9];
    // Every other chunk of the grid (3 x 3 x 5 chunks), so each slab has holes.
    let counts = [3u64, 3, 5];
    for n in 0..counts.iter().product::<u64>() {
        if n % 2 == 1 {
            continue;
        }
        let c = [n % 3, n / 3 % 3, n / 9];
        let r: Vec<Range<u64>> = (0..3)
            .map(|k| c[k] * chunk[k]..((c[k] + 1) * chunk[k]).min(dims[k]))
            .collect();
        let mut block = Vec::new();
        for z in r[2].clone() {
            for y in r[1].clone() {
                for x in r[0].clone() {
                    block.push(value(x, y, z));
                    want[(x + 7 * (y + 5 * z)) as usize] = value(x, y, z);
                }
            }
        }
        w.write_subset(&r, &block).unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let h = Header::decode_any(&bytes).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    // 5 slabs: threads of their own on 1 and 2 threads; on 8, chunks in batches instead.
    for threads in [1, 2, 8] {
        let reader = SectionReader::open(&h, &f).unwrap().with_threads(threads);
        let mut out = vec![0xA5u8; 7 * 5 * 9 * 4];
        reader.read_all_into(&mut out).unwrap();
        let got: Vec<u32> = out
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "{threads} threads");
        assert_eq!(reader.read_all().unwrap(), out);
    }
}

/// `Section::for_each_piece` hands out the section's bytes in file order whatever the piece:
/// pieces smaller than a plane (every dim but the last) are read as runs of the file order
/// (whole along the leading dims that fit, a run of the next, one index after), and equal the
/// bytes of the whole read, up to `limit`, for pieces smaller than one dim, than a plane, and
/// larger, and limits that end inside a run.
#[test]
fn pieces_of_a_chunked_section_are_its_bytes_in_file_order() {
    use rawarray_serde::section::Section;
    let dims = vec![37u64, 23, 5];
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims.clone(), (0..n as u16).collect()).unwrap();
    let mut file = Vec::new();
    a.write_to_with(
        &mut file,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![8, 7, 2]),
    )
    .unwrap();
    let h = rawarray_serde::Header::decode_any(&file).unwrap();
    let s = Section::open(&h, &file[..]).unwrap();
    let whole = s.read_all().unwrap();
    for piece in [1usize, 10, 74, 100, 1702, 5000, 1 << 20] {
        for limit in [0u64, 3, 74, 1000, 1703, whole.len() as u64, u64::MAX] {
            let mut got = Vec::new();
            s.for_each_piece(limit, piece, |p| {
                got.extend_from_slice(p);
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
            let want = &whole[..(limit.min(whole.len() as u64) as usize)];
            assert_eq!(got.len(), want.len(), "piece {piece}, limit {limit}");
            assert!(got == want, "piece {piece}, limit {limit}: bytes differ");
        }
    }
}
