//! Filter pipelines, codecs and n-d blocks of layout version 2 (doc/chunked.md 5.2-5.5),
//! through the public writers and readers: every element type through every pipeline (up to
//! three filters) and codec round trips exactly (bitround within its stated bound), with edge
//! chunks and edge blocks; every axis-aligned plane and random boxes of an n-d-blocked file
//! equal the array; hostile configs are errors naming the field; a rounded file says so, and
//! keeps saying so through a lossless rewrite.

use proptest::prelude::*;
use rawarray_serde::codec::{bitround, Codec, Filter};
use rawarray_serde::section::Section;
use rawarray_serde::{ArrayReader, DynArray, ElType, Header, RawArray, WriteOptions};

/// Deterministic bytes of `n` elements of `eltype`/`elbyte`: smooth values with some noise, so
/// that every filter and codec has work, and floats stay finite and normal.
fn values(eltype: ElType, elbyte: u64, n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut noise = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(n * elbyte as usize);
    for i in 0..n {
        let smooth = (i as f64 * 0.01).sin() * 100.0 + (noise() % 7) as f64 * 0.01;
        match (eltype, elbyte) {
            (ElType::Float, 2) => out.extend(half::f16::from_f64(smooth).to_le_bytes()),
            (ElType::Float, 4) => out.extend((smooth as f32).to_le_bytes()),
            (ElType::Float, 8) => out.extend(smooth.to_le_bytes()),
            (ElType::BFloat16, 2) => out.extend(half::bf16::from_f64(smooth).to_le_bytes()),
            (ElType::Complex, 8) => {
                out.extend((smooth as f32).to_le_bytes());
                out.extend((-smooth as f32).to_le_bytes());
            }
            (ElType::Complex, 16) => {
                out.extend(smooth.to_le_bytes());
                out.extend((smooth * 0.5).to_le_bytes());
            }
            _ => {
                let v = (smooth as i64 as u64).wrapping_add(noise() % 3);
                out.extend_from_slice(&v.to_le_bytes()[..elbyte.min(8) as usize]);
                out.resize(out.len() + elbyte.saturating_sub(8) as usize, 0);
            }
        }
    }
    out
}

/// The element types every filter is tried with.
fn element_types() -> Vec<(ElType, u64)> {
    vec![
        (ElType::Int, 1),
        (ElType::Int, 2),
        (ElType::Uint, 4),
        (ElType::Int, 8),
        (ElType::Uint, 16),
        (ElType::Float, 2),
        (ElType::Float, 4),
        (ElType::Float, 8),
        (ElType::BFloat16, 2),
        (ElType::Complex, 8),
        (ElType::Complex, 16),
        (ElType::User, 12),
        // Past the 32 planes a mask can select.
        (ElType::User, 40),
    ]
}

/// The pipelines tried: none, each filter alone, and three-filter pipelines.
fn pipelines(eltype: ElType, elbyte: u64) -> Vec<Vec<Filter>> {
    let mut out = vec![
        vec![],
        vec![Filter::Shuffle],
        vec![Filter::BitShuffle],
        vec![Filter::ByteDelta],
        vec![Filter::Shuffle, Filter::ByteDelta],
    ];
    // bytedelta on some planes: the first and the last (or the one plane), twice; then
    // those and every plane, so that planes are undone different numbers of times.
    let planes = elbyte.min(32) as u32;
    let mask = 1 | 1 << (planes - 1);
    out.push(vec![
        Filter::Shuffle,
        Filter::ByteDeltaPlanes(mask),
        Filter::ByteDeltaPlanes(mask),
    ]);
    out.push(vec![
        Filter::Shuffle,
        Filter::ByteDeltaPlanes(mask),
        Filter::ByteDelta,
    ]);
    // A run of bytedeltas first, undone in place before the shuffle is.
    out.push(vec![
        Filter::ByteDeltaPlanes(mask),
        Filter::ByteDeltaPlanes(mask),
        Filter::Shuffle,
    ]);
    if eltype != ElType::User {
        out.push(vec![Filter::Delta]);
        out.push(vec![Filter::Delta, Filter::Shuffle, Filter::ByteDelta]);
    }
    if bitround::format_of(eltype, elbyte).is_some() {
        out.push(vec![
            Filter::BitRound(5),
            Filter::Shuffle,
            Filter::ByteDelta,
        ]);
        out.push(vec![Filter::BitRound(3), Filter::Delta, Filter::BitShuffle]);
    }
    out
}

/// Writes `raw` (dims `dims`) with `opts` and reads it back whole and by a box across edge
/// chunks and blocks; returns the whole read.
fn round_trip(header: &Header, raw: &[u8], opts: &WriteOptions) -> Vec<u8> {
    let (h, section) = rawarray_serde::codec::encode(header, raw, opts).unwrap();
    let mut file = h.encode();
    file.extend_from_slice(&section);
    let s = Section::open(&h, &file[..]).unwrap();
    let back = s.read_all().unwrap();
    assert_eq!(s.verify().unwrap(), s.chunk_map().unwrap().grid().count());
    // A box from the middle to the far corner: edge chunks and edge blocks.
    let ranges: Vec<_> = h.dims.iter().map(|&d| d / 3..d).collect();
    let plan = rawarray_serde::SubsetPlan::new(&h.dims, h.elbyte, &ranges).unwrap();
    let mut part = vec![0u8; plan.bytes() as usize];
    s.read_box(&ranges, &mut part).unwrap();
    let mut want = Vec::new();
    for r in plan.runs() {
        want.extend_from_slice(&back[r.start as usize..r.end as usize]);
    }
    assert_eq!(part, want, "box {ranges:?}");
    back
}

/// Checks that each float of `back` is `raw`'s rounded to `keepbits` bits within the bound of
/// doc/chunked.md 5.2 (relative for normal values, absolute below the smallest normal).
fn check_rounded(eltype: ElType, elbyte: u64, raw: &[u8], back: &[u8], keepbits: u32) {
    let format = bitround::format_of(eltype, elbyte).unwrap();
    let w = format.bytes();
    let bound = bitround::max_relative_error(format, keepbits);
    let nmin = format.min_positive_normal();
    let get = |b: &[u8]| -> f64 {
        match format {
            bitround::FloatFormat::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            bitround::FloatFormat::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            bitround::FloatFormat::F32 => f64::from(f32::from_le_bytes(b[..4].try_into().unwrap())),
            bitround::FloatFormat::F64 => f64::from_le_bytes(b[..8].try_into().unwrap()),
        }
    };
    for (a, b) in raw.chunks_exact(w).zip(back.chunks_exact(w)) {
        let (x, r) = (get(a), get(b));
        assert!(
            (r - x).abs() <= bound * x.abs().max(nmin) * (1.0 + 1e-12),
            "{x} rounded to {keepbits} bits gave {r}"
        );
    }
}

#[test]
fn every_element_type_through_every_pipeline_and_codec() {
    for (eltype, elbyte) in element_types() {
        // 37 x 23 elements in chunks of 16 x 8 and blocks of 5 x 3: edges everywhere.
        let header = Header::new(eltype, elbyte, vec![37, 23]).unwrap();
        let raw = values(eltype, elbyte, 37 * 23, elbyte);
        for filters in pipelines(eltype, elbyte) {
            for (codec, split) in [
                (Codec::None, false),
                (Codec::Lz4, false),
                (Codec::Lz4, true),
                (Codec::Zstd, false),
                (Codec::Zstd, true),
                (Codec::Pco, false),
                (Codec::Huffman, false),
                (Codec::Huffman, true),
            ] {
                if codec.check_elements(eltype, elbyte).is_err() {
                    continue;
                }
                let opts = WriteOptions::new()
                    .codec(codec)
                    .filters(filters.clone())
                    .chunks(vec![16, 8])
                    .blocks(vec![5, 3])
                    .split(split);
                let back = round_trip(&header, &raw, &opts);
                match filters.iter().find_map(|f| f.kept_bits()) {
                    None => assert_eq!(
                        back, raw,
                        "{eltype:?} {elbyte} {filters:?} {codec:?} split {split}"
                    ),
                    Some(k) => check_rounded(eltype, elbyte, &raw, &back, k),
                }
            }
        }
    }
}

/// A 16 MiB block (the largest) of one repeated byte, in one stream, is the 3 bytes of a
/// huffman payload of one symbol: the reader's bound on what a stored byte may expand to
/// (the codec's `max_ratio`) lets it through, as it does zstd's and lz4's.
#[test]
fn a_largest_block_of_one_byte_value_round_trips_through_every_codec() {
    let n = 1u64 << 24;
    let header = Header::new(ElType::Uint, 1, vec![n]).unwrap();
    let raw = vec![7u8; n as usize];
    for codec in [Codec::Lz4, Codec::Zstd, Codec::Huffman] {
        let opts = WriteOptions::new()
            .codec(codec)
            .filters([])
            .chunks(vec![n])
            .blocks(vec![n])
            .split(false);
        assert!(round_trip(&header, &raw, &opts) == raw, "{codec}");
    }
    // A block is one element when that is larger than 16 MiB, which huffman does not take
    // (its blocks are decoded whole): refused at writing, naming the codec and the elements.
    let header = Header::new(ElType::User, (1 << 24) + 1, vec![1]).unwrap();
    let raw = vec![9u8; (1 << 24) + 1];
    let opts = WriteOptions::new().codec(Codec::Huffman).filters([]);
    let err = rawarray_serde::codec::encode(&header, &raw, &opts)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("huffman") && err.contains("elements are"),
        "{err}"
    );
}

#[test]
fn pco_is_refused_for_what_it_does_not_take_naming_the_elements() {
    for (eltype, elbyte) in [
        (ElType::Int, 1),
        (ElType::Uint, 16),
        (ElType::Complex, 8),
        (ElType::User, 12),
        (ElType::BFloat16, 2),
    ] {
        let header = Header::new(eltype, elbyte, vec![10]).unwrap();
        let err = rawarray_serde::codec::encode(
            &header,
            &vec![0u8; 10 * elbyte as usize],
            &WriteOptions::new().codec(Codec::Pco),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("pco") && err.contains("elements are"), "{err}");
    }
}

/// A 3-d field in chunks of 16^3 and blocks of 4 x 8 x 2: every axis-aligned plane, through
/// the file (ArrayReader), equals the array's, and decodes only the blocks it crosses.
#[test]
fn every_plane_of_an_nd_blocked_file_equals_the_array() {
    let dims = [20u64, 18, 17];
    let n = (dims[0] * dims[1] * dims[2]) as usize;
    let a = RawArray::from_shape_vec(dims.to_vec(), (0..n as u32).collect::<Vec<_>>()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.ra");
    let opts = WriteOptions::new()
        .codec(Codec::Zstd)
        .chunks(vec![16, 16, 16])
        .blocks(vec![4, 8, 2]);
    a.write_file_with(&path, &opts).unwrap();
    let r = ArrayReader::open(&path).unwrap();
    for axis in 0..3 {
        for at in [0, 7, dims[axis] - 1] {
            let mut ranges: Vec<_> = dims.iter().map(|&d| 0..d).collect();
            ranges[axis] = at..at + 1;
            let before = r.section_stats().unwrap().blocks_decoded;
            let plane: RawArray<u32> = r.read_subset(&ranges).unwrap();
            let want: Vec<u32> = a
                .as_slice()
                .iter()
                .enumerate()
                .filter(|(k, _)| {
                    let k = *k as u64;
                    let idx = [k % dims[0], k / dims[0] % dims[1], k / (dims[0] * dims[1])];
                    idx[axis] == at
                })
                .map(|(_, v)| *v)
                .collect();
            assert_eq!(plane.as_slice(), &want[..], "axis {axis} at {at}");
            // The plane crosses one layer of blocks along its axis: at most the blocks of
            // the chunks it crosses, one block thick.
            let decoded = r.section_stats().unwrap().blocks_decoded - before;
            let thick = [4u64, 8, 2][axis];
            let per_chunk_layer: u64 = (0..3)
                .filter(|&k| k != axis)
                .map(|k| 16u64.div_ceil([4u64, 8, 2][k]))
                .product();
            assert!(
                decoded <= 4 * per_chunk_layer,
                "axis {axis}: {decoded} blocks decoded for one plane (blocks {thick} thick)"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Random boxes of a file with random chunk and block shapes equal the array's.
    #[test]
    fn random_boxes_equal_the_array(
        d0 in 1u64..30, d1 in 1u64..20, c0 in 1u64..12, c1 in 1u64..9,
        b0 in 1u64..12, b1 in 1u64..9, lo0 in 0u64..30, lo1 in 0u64..20,
        codec in prop::sample::select(vec![Codec::Lz4, Codec::Zstd, Codec::Pco, Codec::Huffman]),
        split in any::<bool>(),
    ) {
        let (b0, b1) = (b0.min(c0), b1.min(c1));
        let split = split && codec.splits();
        let header = Header::new(ElType::Int, 4, vec![d0, d1]).unwrap();
        let raw: Vec<u8> = (0..(d0 * d1) as i32).flat_map(|v| (v * 3 - 17).to_le_bytes()).collect();
        let opts = WriteOptions::new().codec(codec).filters([Filter::Delta]).chunks(vec![c0, c1]).blocks(vec![b0, b1]).split(split);
        let (h, section) = rawarray_serde::codec::encode(&header, &raw, &opts).unwrap();
        let mut file = h.encode();
        file.extend_from_slice(&section);
        let s = Section::open(&h, &file[..]).unwrap();
        prop_assert_eq!(s.read_all().unwrap(), raw.clone());
        let ranges = vec![lo0.min(d0 - 1)..d0, lo1.min(d1 - 1)..(lo1.min(d1 - 1) + 3).min(d1)];
        let plan = rawarray_serde::SubsetPlan::new(&h.dims, 4, &ranges).unwrap();
        let mut part = vec![0u8; plan.bytes() as usize];
        s.read_box(&ranges, &mut part).unwrap();
        let mut want = Vec::new();
        for r in plan.runs() {
            want.extend_from_slice(&raw[r.start as usize..r.end as usize]);
        }
        prop_assert_eq!(part, want);
    }
}

#[test]
fn hostile_settings_are_errors_naming_the_field() {
    let header = Header::new(ElType::Float, 4, vec![100, 10]).unwrap();
    let raw = vec![0u8; 4000];
    let cases: Vec<(WriteOptions, &str)> = vec![
        (
            WriteOptions::new().filters(vec![Filter::Shuffle; 1000]),
            "filters",
        ),
        (
            WriteOptions::new().chunks(vec![10, 10]).blocks(vec![20, 1]),
            "blocks",
        ),
        (
            WriteOptions::new().chunks(vec![10, 10]).blocks(vec![0, 1]),
            "blocks",
        ),
        (WriteOptions::new().chunks(vec![10, 0]), "chunks"),
        (WriteOptions::new().codec(Codec::Zstd).level(99), "level"),
        (WriteOptions::new().codec(Codec::Lz4).level(1), "level"),
        (
            WriteOptions::new().filters([Filter::BitRound(30)]),
            "bitround",
        ),
        (
            WriteOptions::new().filters([Filter::Shuffle, Filter::BitRound(8)]),
            "bitround",
        ),
        (
            WriteOptions::new().codec(Codec::Pco).layout_version(1),
            "codec",
        ),
        (
            WriteOptions::new()
                .filters([Filter::Delta])
                .layout_version(1),
            "filters",
        ),
        (
            WriteOptions::new().filters([Filter::Shuffle, Filter::ByteDeltaPlanes(1 << 4)]),
            "bytedelta:16: the mask selects byte plane 4; float32 has 4 byte planes (0 to 3)",
        ),
        (
            WriteOptions::new().filters([Filter::Shuffle, Filter::ByteDeltaPlanes(0)]),
            "ByteDeltaPlanes needs a mask other than 0, found 0",
        ),
        (WriteOptions::new().codec(Codec::Pco).split(true), "split"),
        (WriteOptions::new().codec(Codec::None).split(true), "split"),
        (WriteOptions::new().split(true).layout_version(1), "split"),
        (
            WriteOptions::new().split(false).stream_crcs(true),
            "stream_crcs",
        ),
    ];
    for (opts, field) in cases {
        let err = rawarray_serde::codec::encode(&header, &raw, &opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{field}: {err}");
    }
    assert!(Filter::parse("nosuch")
        .unwrap_err()
        .to_string()
        .contains("filters are"));
    assert!(Filter::parse("bitround")
        .unwrap_err()
        .to_string()
        .contains("keepbits"));
}

/// Hostile configs in files: an unknown filter id, a block shape larger than the chunk, a
/// statistics field past the element, each an error naming the field (the config's CRC fixed
/// up, so that the field's own check is what refuses it).
#[test]
fn hostile_configs_in_files_are_errors_naming_the_field() {
    let header = Header::new(ElType::Float, 4, vec![64, 8]).unwrap();
    let raw = vec![0u8; 64 * 8 * 4];
    let opts = WriteOptions::new()
        .codec(Codec::Zstd)
        .filters([Filter::Shuffle])
        .chunks(vec![64, 4])
        .blocks(vec![32, 4]);
    let (h, section) = rawarray_serde::codec::encode(&header, &raw, &opts).unwrap();
    let n = 2usize;
    // Offsets in the v2 config (doc/chunked.md 5.1) with one filter and one statistics field.
    let filter_id_at = 40 + 16 * n;
    let block0_at = 40 + 8 * n;
    let stat_offset_at = 48 + 16 * n + 8;
    let crc_at = 48 + 16 * n + 8 + 16;
    for (at, value, field) in [
        (filter_id_at, 77u64, "filter"),
        (block0_at, 65, "block shape"),
        (stat_offset_at, 9, "statistics field"),
        (20, 8 | 1, "config features"),
        // Stream CRCs (bit 2) without byte streams (bit 1), statistics (bit 0) kept.
        (20, 4 | 1, "config features bit 2"),
    ] {
        let mut bad = section.clone();
        if field == "filter"
            || field.starts_with("statistics field")
            || field.starts_with("config features")
        {
            bad[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
        } else {
            bad[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        let crc = crc32fast::hash(&bad[..crc_at]);
        bad[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        let mut file = h.encode();
        file.extend_from_slice(&bad);
        let err = Section::open(&h, &file[..]).unwrap_err().to_string();
        assert!(err.contains(field), "{field}: {err}");
    }
}

/// A bytedelta mask in a file's config selecting a plane the elements do not have is an
/// error naming the filter and the plane (the config's CRC fixed up, so that the mask's own
/// check is what refuses it); the largest mask they have reads.
#[test]
fn a_bytedelta_mask_past_the_planes_in_a_file_is_an_error() {
    let header = Header::new(ElType::Float, 4, vec![64, 8]).unwrap();
    let raw: Vec<u8> = (0..64 * 8 * 4).map(|i| (i * 7 % 251) as u8).collect();
    let opts = WriteOptions::new()
        .codec(Codec::Zstd)
        .filters([Filter::Shuffle, Filter::ByteDeltaPlanes(0b1111)])
        .chunks(vec![64, 4])
        .blocks(vec![32, 4]);
    let (h, section) = rawarray_serde::codec::encode(&header, &raw, &opts).unwrap();
    let n = 2usize;
    // doc/chunked.md 5.1 with two filters: the second's parameter, then the CRC.
    let param_at = 40 + 16 * n + 8 + 4;
    let crc_at = 48 + 16 * n + 16 + 16;
    assert_eq!(
        &section[param_at - 4..param_at + 4],
        &[4, 0, 0, 0, 15, 0, 0, 0]
    );
    for (mask, err) in [
        (0b1111u32, None),
        (0b10000, Some("bytedelta:16")),
        (1 << 31, Some("plane 31")),
    ] {
        let mut bad = section.clone();
        bad[param_at..param_at + 4].copy_from_slice(&mask.to_le_bytes());
        let crc = crc32fast::hash(&bad[..crc_at]);
        bad[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        let mut file = h.encode();
        file.extend_from_slice(&bad);
        match err {
            None => assert_eq!(
                Section::open(&h, &file[..]).unwrap().read_all().unwrap(),
                raw
            ),
            Some(want) => {
                let e = Section::open(&h, &file[..]).unwrap_err().to_string();
                assert!(e.contains(want) && e.contains("filter"), "{mask}: {e}");
            }
        }
    }
}

/// A file written with `bitround` says so in its config and its trailer; a lossless rewrite
/// keeps the trailer's mark.
#[test]
fn a_rounded_file_says_so_through_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let a = RawArray::from_vec(
        (0..5000)
            .map(|i| (i as f32 * 0.001).sin())
            .collect::<Vec<_>>(),
    );
    a.write_file_with(
        &path,
        &WriteOptions::new()
            .codec(Codec::Zstd)
            .filters([Filter::BitRound(9), Filter::Shuffle]),
    )
    .unwrap();
    let d = DynArray::read_file(&path).unwrap();
    assert_eq!(d.trailer().unwrap().rounded_to(), Some(9));
    let r = ArrayReader::open(&path).unwrap();
    assert_eq!(r.section().describe().rounded_to, Some(9));
    // Rewritten with a lossless pipeline, then plain: still says it was rounded.
    d.write_file_with(&path, &WriteOptions::new().codec(Codec::Lz4))
        .unwrap();
    let d = DynArray::read_file(&path).unwrap();
    assert_eq!(d.trailer().unwrap().rounded_to(), Some(9));
    d.write_file(&path).unwrap();
    assert_eq!(
        DynArray::read_file(&path)
            .unwrap()
            .trailer()
            .unwrap()
            .rounded_to(),
        Some(9)
    );
    // A lossy filter is never applied unless named: the default pipeline is lossless.
    assert!(!WriteOptions::new()
        .codec(Codec::Zstd)
        .get_filters()
        .iter()
        .any(|f| f.is_lossy()));
}

/// Byte streams read as one stream, or one stream read as byte streams (features bit 1 flipped
/// and the config's CRC fixed up), are errors naming the chunk and block, never values.
#[test]
fn a_flipped_split_bit_is_an_error_never_values() {
    let header = Header::new(ElType::Float, 4, vec![64, 8]).unwrap();
    let raw: Vec<u8> = (0..64 * 8)
        .flat_map(|i| ((i as f32) * 0.37).sin().to_le_bytes())
        .collect();
    let n = 2usize;
    let crc_at = 48 + 16 * n + 8 + 16;
    for (codec, split) in [
        (Codec::Zstd, true),
        (Codec::Zstd, false),
        (Codec::Lz4, true),
        (Codec::Lz4, false),
    ] {
        let opts = WriteOptions::new()
            .codec(codec)
            .chunks(vec![64, 4])
            .blocks(vec![32, 4])
            .split(split);
        let (h, section) = rawarray_serde::codec::encode(&header, &raw, &opts).unwrap();
        let mut bad = section.clone();
        let features = u32::from_le_bytes(bad[20..24].try_into().unwrap());
        assert_eq!(features, 1 | (u32::from(split) << 1), "{codec} {split}");
        bad[20..24].copy_from_slice(&(features ^ 2).to_le_bytes());
        let crc = crc32fast::hash(&bad[..crc_at]);
        bad[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        let mut file = h.encode();
        file.extend_from_slice(&bad);
        let s = Section::open(&h, &file[..]).unwrap();
        let err = s.read_all().unwrap_err().to_string();
        assert!(
            err.contains("chunk 0") && err.contains("block 0"),
            "{codec} {split}: {err}"
        );
    }
}

/// Writers split by default where a block ends as byte planes of 2 to 16 bytes in chunks of
/// 32 KiB or more (doc/chunked.md 5.3 and 5.5), with 128 KiB blocks then; nowhere else.
#[test]
fn byte_streams_are_the_default_only_where_they_pay() {
    let f4 = Header::new(ElType::Float, 4, vec![256, 256, 256]).unwrap();
    let cfg = |h: &Header, o: WriteOptions| o.chunk_config(h, None).unwrap();
    let z = WriteOptions::chunked();
    let c = cfg(&f4, z.clone());
    assert!(c.split);
    // Arrays are read whole: their streams carry no CRCs of their own unless asked.
    assert!(!c.stream_crcs);
    assert!(cfg(&f4, z.clone().stream_crcs(true)).stream_crcs);
    let rawarray_serde::codec::Blocks::Shape(b) = &c.blocks else {
        panic!("v2 blocks")
    };
    assert_eq!(b.iter().product::<u64>() * 4, 128 << 10, "{b:?}");
    // Planes kept by bytedelta; not after a bit shuffle, nor without a shuffle.
    assert!(cfg(&f4, z.clone().filters([Filter::Shuffle, Filter::ByteDelta])).split);
    assert!(
        !cfg(
            &f4,
            z.clone().filters([Filter::Shuffle, Filter::BitShuffle])
        )
        .split
    );
    assert!(!cfg(&f4, z.clone().filters([Filter::Delta])).split);
    // Not for lz4, pco, version 1, or bytes.
    assert!(!cfg(&f4, z.clone().codec(Codec::Lz4)).split);
    assert!(!cfg(&f4, z.clone().codec(Codec::Pco)).split);
    assert!(!cfg(&f4, z.clone().layout_version(1)).split);
    let u1 = Header::new(ElType::Uint, 1, vec![1 << 20]).unwrap();
    assert!(!cfg(&u1, z.clone()).split);
    let u16 = Header::new(ElType::Uint, 16, vec![1 << 16]).unwrap();
    assert!(cfg(&u16, z.clone()).split);
    // Records of 17 to 256 bytes, in chunks of at least 4 KiB a stream, a block the chunk.
    let rec = Header::new(ElType::User, 32, vec![1 << 16]).unwrap();
    let c = cfg(&rec, z.clone());
    assert!(c.split);
    // Records' fields are read alone: each stream has its CRC, unless turned off.
    assert!(c.stream_crcs);
    assert!(!cfg(&rec, z.clone().stream_crcs(false)).stream_crcs);
    assert!(!cfg(&rec, z.clone().split(false)).stream_crcs);
    assert_eq!(
        c.blocks,
        rawarray_serde::codec::Blocks::Shape(c.chunk.clone())
    );
    assert!(!cfg(&rec, z.clone().chunks(vec![4095])).split);
    assert!(cfg(&rec, z.clone().chunks(vec![4096])).split);
    let wide = Header::new(ElType::User, 257, vec![1 << 16]).unwrap();
    assert!(!cfg(&wide, z.clone()).split);
    // A block size asked for is kept.
    let c = cfg(&rec, z.clone().block_bytes(64 << 10));
    assert!(c.split && c.blocks == rawarray_serde::codec::Blocks::Shape(vec![2048]));
    // Not in chunks under 32 KiB, measured within the array's dims (but the last, which a
    // growing file fills).
    assert!(!cfg(&f4, z.clone().chunks(vec![64, 64, 1])).split);
    let thin = Header::new(ElType::Float, 4, vec![10, 100_000]).unwrap();
    assert!(!cfg(&thin, z.clone().chunks(vec![1000, 10])).split);
    assert!(cfg(&thin, z.clone().chunks(vec![10, 1000])).split);
    let growing = Header::new(ElType::Float, 4, vec![100, 0]).unwrap();
    assert!(cfg(&growing, z.clone().chunks(vec![100, 1000])).split);
    // Asked for, it is kept wherever the codec splits; refused asked for off.
    assert!(cfg(&u1, z.clone().split(true)).split);
    assert!(!cfg(&f4, z.split(false)).split);
}
