//! Chunked files (flag bit 2) through the CLI: `ra compress` with every codec and shuffle,
//! `ra decompress` back to the exact plain file, `ra cat` and `ra diff` through the codec
//! layer, `ra info` describing the chunks, `ra verify` naming a corrupt chunk, and hostile
//! chunked files refused with one line, never a panic.

mod common;

use std::path::Path;

use num_complex::Complex;
use rawarray_serde::{DynArray, Header, RawArray};
use serde_json::Value;

use common::*;

/// A smooth 3-D float field (a sum of slow sines), written plain: the data a byte shuffle and
/// zstd shrink.
fn smooth_field(path: &Path, dims: [u64; 3]) -> Vec<f32> {
    let [a, b, c] = dims;
    let mut v = Vec::new();
    for k in 0..c {
        for j in 0..b {
            for i in 0..a {
                let x = (i as f32 * 0.05).sin() + (j as f32 * 0.03).cos() + k as f32 * 0.01;
                v.push(x);
            }
        }
    }
    RawArray::from_shape_vec(dims.to_vec(), v.clone())
        .unwrap()
        .write_file(path)
        .unwrap();
    v
}

fn info_json(path: &Path) -> Value {
    serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(path))).unwrap()
}

fn compress(input: &Path, output: &Path, args: &[&str]) {
    ra().arg("compress")
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(args)
        .assert()
        .success();
}

/// Every codec x shuffle, for several element types (and a big-endian file): compress writes
/// the chunked flag, decompress gives back the plain file byte for byte, and `ra cat` prints
/// what it prints for the plain file.
#[test]
fn every_codec_and_shuffle_round_trips_for_several_types() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain: Vec<(&str, Vec<u8>)> = {
        let mut v = Vec::new();
        let f = d.join("f32.ra");
        smooth_field(&f, [20, 9, 3]);
        v.push(("f32.ra", std::fs::read(&f).unwrap()));
        let mut bytes = Vec::new();
        RawArray::from_shape_vec(vec![7, 11], (0..77i16).map(|i| i * 300 - 9000).collect())
            .unwrap()
            .write_to_with(
                &mut bytes,
                &rawarray_serde::WriteOptions::new().big_endian(true),
            )
            .unwrap();
        v.push(("i16be.ra", bytes));
        let c: Vec<Complex<f64>> = (0..30)
            .map(|i| Complex::new(f64::from(i), -f64::from(i) / 3.0))
            .collect();
        v.push((
            "c128.ra",
            RawArray::from_shape_vec(vec![5, 6], c).unwrap().to_bytes(),
        ));
        v.push((
            "u8.ra",
            RawArray::from_vec((0..=255u8).cycle().take(1000).collect::<Vec<u8>>()).to_bytes(),
        ));
        v
    };
    for (name, bytes) in &plain {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let h = Header::decode_any(bytes).unwrap();
        let chunks: Vec<String> = h.dims.iter().map(|&n| (n / 2).max(1).to_string()).collect();
        let chunks = chunks.join(",");
        let cat = stdout_of(ra().arg("cat").arg(&p));
        for codec in ["zstd", "lz4", "none"] {
            for shuffle in ["byte", "bit", "none"] {
                let z = d.join(format!("z_{codec}_{shuffle}_{name}"));
                compress(
                    &p,
                    &z,
                    &["--codec", codec, "--shuffle", shuffle, "--chunks", &chunks],
                );
                let zh = Header::decode_any(&std::fs::read(&z).unwrap()).unwrap();
                assert!(zh.flags.is_chunked(), "{name} {codec} {shuffle}");
                assert_eq!(zh.is_big_endian(), h.is_big_endian());
                let j = info_json(&z);
                assert_eq!(j["codec"], codec);
                assert_eq!(j["shuffle"], shuffle);
                assert_eq!(j["compressed"], true);
                assert_eq!(stdout_of(ra().arg("cat").arg(&z)), cat, "{name} {codec}");
                let back = d.join("back.ra");
                ra().arg("decompress")
                    .arg(&z)
                    .arg("-o")
                    .arg(&back)
                    .assert()
                    .success();
                assert_eq!(
                    &std::fs::read(&back).unwrap(),
                    bytes,
                    "{name} {codec} {shuffle}"
                );
                ra().arg("diff").arg(&p).arg(&z).assert().success();
            }
        }
    }
}

/// The default (no --codec) is the chunked layout with zstd 3 and byte shuffle, and on a
/// smooth float field it shrinks the data section by more than 1.1x; `ra info` says so.
#[test]
fn the_default_is_zstd_3_byte_shuffle_and_shrinks_a_smooth_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("field.ra");
    let v = smooth_field(&p, [64, 64, 16]);
    ra().arg("compress").arg(&p).assert().success();
    let j = info_json(&p);
    assert_eq!(j["compressed"], true);
    assert_eq!(j["codec"], "zstd");
    assert_eq!(j["level"], 3);
    assert_eq!(j["shuffle"], "byte");
    assert_eq!(j["flags"], 4);
    assert!(j["chunks"].is_array());
    let plain = (v.len() * 4) as f64;
    let size = j["size"].as_u64().unwrap() as f64;
    assert!(plain / size > 1.1, "ratio {}", plain / size);
    assert!((j["ratio"].as_f64().unwrap() - plain / size).abs() < 1e-9);
    let text = stdout_of(ra().arg("info").arg(&p));
    assert!(
        text.contains(
            "chunked (flag bit 2, RACHUNK2): zstd level 3, filters [shuffle], byte streams, chunks"
        ),
        "{text}"
    );
    assert!(text.contains("ratio "), "{text}");
    // Re-encoding a chunked file applies the new settings.
    ra().args([
        "compress",
        "--codec",
        "lz4",
        "--chunks",
        "32,32,4",
        "--threads",
        "2",
    ])
    .arg(&p)
    .assert()
    .success();
    let j = info_json(&p);
    assert_eq!(
        (j["codec"].as_str(), j["chunks"].clone()),
        (Some("lz4"), serde_json::json!([32, 32, 4]))
    );
    // And the values are still the field's.
    ra().arg("decompress").arg(&p).assert().success();
    let a: RawArray<f32> = RawArray::read_file(&p).unwrap();
    assert_eq!(a.as_slice(), &v[..]);
    // Plain files: no codec.
    let j = info_json(&p);
    assert_eq!(
        (j["compressed"].clone(), j["codec"].clone()),
        (Value::Bool(false), Value::Null)
    );
}

/// `--filter` takes a pipeline with parameters (`bytedelta:4`: the third byte plane alone)
/// and `ra info` shows it; the values come back; a mask past the elements' planes is an error
/// naming the filter and the plane, and leaves the file as it was.
#[test]
fn filter_parameters_are_taken_shown_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("field.ra");
    let v = smooth_field(&p, [64, 64, 16]);
    let before = std::fs::read(&p).unwrap();
    let err = ra()
        .args(["compress", "--filter", "shuffle,bytedelta:16"])
        .arg(&p)
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&err);
    assert!(
        err.contains("bytedelta:16") && err.contains("plane 4"),
        "{err}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);
    ra().args([
        "compress",
        "--codec",
        "huffman",
        "--filter",
        "shuffle,bytedelta:4",
        "--filter",
        "bytedelta:4",
    ])
    .arg(&p)
    .assert()
    .success();
    let text = stdout_of(ra().arg("info").arg(&p));
    assert!(
        text.contains("huffman level 3, filters [shuffle, bytedelta:4, bytedelta:4]"),
        "{text}"
    );
    ra().arg("decompress").arg(&p).assert().success();
    let a: RawArray<f32> = RawArray::read_file(&p).unwrap();
    assert_eq!(a.as_slice(), &v[..]);
}

/// `--codec lz4-whole` writes flag bit 1, the block the C reference reads, also from a
/// chunked file; the trailer (params) goes through every rewrite.
#[test]
fn lz4_whole_from_a_chunked_file_and_the_trailer_kept() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("rec.ra");
    record_file(&r, 40);
    let plain = std::fs::read(&r).unwrap();
    let z = dir.path().join("z.ra");
    compress(&r, &z, &[]);
    assert!(Header::decode_any(&std::fs::read(&z).unwrap())
        .unwrap()
        .flags
        .is_chunked());
    assert_eq!(
        rawarray_serde::Trailer::read_file(&z)
            .unwrap()
            .unwrap()
            .params["units"],
        "s"
    );
    let w = dir.path().join("w.ra");
    compress(&z, &w, &["--codec", "lz4-whole"]);
    let wh = Header::decode_any(&std::fs::read(&w).unwrap()).unwrap();
    assert!(wh.is_compressed() && !wh.flags.is_chunked());
    assert_eq!(
        DynArray::read_file(&w).unwrap().data(),
        DynArray::read_file(&r).unwrap().data()
    );
    ra().arg("decompress").arg(&z).assert().success();
    assert_eq!(std::fs::read(&z).unwrap(), plain);
    let out = fails_with_one_line(
        ra().args(["compress", "--codec", "lz4", "--chunks", "4,4"])
            .arg(&r)
            .arg("-o")
            .arg(dir.path().join("x.ra")),
    );
    assert!(out.contains("--chunks has 2 sizes for 1 dims"), "{out}");
}

/// A flipped bit in one chunk's stored bytes: `ra verify` fails naming that chunk (and only
/// it), and `ra cat` fails with one line naming it too.
#[test]
fn verify_names_the_chunk_with_a_flipped_bit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.ra");
    smooth_field(&p, [16, 16, 4]);
    let z = dir.path().join("z.ra");
    compress(&p, &z, &["--chunks", "16,16,1"]);
    assert_eq!(
        stdout_of(ra().arg("verify").arg(&z)),
        format!("{}: OK\n", z.display())
    );
    let mut bytes = std::fs::read(&z).unwrap();
    // The last chunk's payload ends the file: chunk 3 of the grid [1, 1, 4].
    let at = bytes.len() - 5;
    bytes[at] ^= 0x10;
    std::fs::write(&z, &bytes).unwrap();
    let out = ra()
        .arg("verify")
        .arg(&z)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("FAILED (chunk 3: crc32"), "{out}");
    assert!(
        !out.contains("chunk 0") && !out.contains("chunk 2"),
        "{out}"
    );
    let err = fails_with_one_line(ra().arg("cat").arg(&z));
    assert!(err.contains("chunk 3"), "{err}");
}

/// A flipped bit in a chunk's index entry offset sends it past the committed size: readers
/// see that chunk as never written, and `ra verify` fails naming it instead of saying OK.
#[test]
fn verify_names_a_chunk_whose_entry_points_past_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.ra");
    smooth_field(&p, [16, 16, 4]);
    let z = dir.path().join("z.ra");
    // Version 1, whose bytes this test pokes (version 2 entries carry a CRC: the same flip is
    // an error for every reader, tested in rawarray-serde/tests/integrity.rs).
    compress(&p, &z, &["--chunks", "16,16,1", "--layout-version", "1"]);
    let mut bytes = std::fs::read(&z).unwrap();
    let h = Header::decode_any(&bytes).unwrap();
    // Chunk 1's entry: after the config (56 + 8 n + 512 bytes) and chunk 0's 24 bytes.
    let at = h.encoded_len() + 56 + 8 * 3 + 512 + 24;
    bytes[at + 5] ^= 0x10;
    std::fs::write(&z, &bytes).unwrap();
    let out = ra()
        .arg("verify")
        .arg(&z)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("FAILED (chunk 1: index entry points past the committed size"),
        "{out}"
    );
    // Every other command reads chunk 1 as zeros, as version 1 says, and notes it on stderr
    // naming the chunk (version 1 cannot tell damage from a writer still appending).
    let run = ra().args(["cat", "--head", "1"]).arg(&z).assert().success();
    let err = String::from_utf8_lossy(&run.get_output().stderr).into_owned();
    assert!(
        err.contains("ra: note: ")
            && err.contains("chunk 1: its index entry points past the committed data"),
        "{err}"
    );
    // The same flip in a version 2 file is an error naming the chunk, from every command.
    let z2 = dir.path().join("z2.ra");
    compress(&p, &z2, &["--chunks", "16,16,1"]);
    let mut b2 = std::fs::read(&z2).unwrap();
    let h2 = Header::decode_any(&b2).unwrap();
    let base = h2.encoded_len();
    let section = rawarray_serde::section::Section::open(&h2, &b2).unwrap();
    let map = section.chunk_map().unwrap();
    let entry_at = base as u64 + map.config().segments[0] + map.config().entry_len();
    b2[entry_at as usize + 5] ^= 0x10;
    std::fs::write(&z2, &b2).unwrap();
    for cmd in [&["cat"][..], &["verify"], &["convert"]] {
        let mut c = ra();
        c.args(cmd).arg(&z2);
        if cmd[0] == "convert" {
            c.arg(dir.path().join("o.npy"));
        }
        let out = c.assert().failure().get_output().clone();
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("chunk 1"), "{cmd:?}: {text}");
    }
}

/// CRC-32 (IEEE), bitwise: the config's checksum computed independently of the codec layer.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Hostile chunked files: a config with a bad magic, an unknown codec id, an index pointing
/// past the section, a section cut short; every command fails with one line, no panic.
#[test]
fn hostile_chunked_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.ra");
    smooth_field(&p, [8, 8, 2]);
    let z = dir.path().join("z.ra");
    // Version 1, whose bytes are poked here (version 2's are in rawarray-serde's tests).
    compress(&p, &z, &["--chunks", "8,8,1", "--layout-version", "1"]);
    let good = std::fs::read(&z).unwrap();
    let h = Header::decode_any(&good).unwrap();
    let base = h.encoded_len();
    let n = h.dims.len();
    let config_len = 56 + 8 * n + 512;
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut b = good.clone();
    b[base] = b'X';
    cases.push(("config magic", b));
    let mut b = good.clone();
    b[base + 12] = 9;
    cases.push(("config crc", b));
    let mut b = good.clone();
    // Chunk 1's stored bytes over the config (an entry past the section's committed size is
    // a chunk not committed yet, by the layout's commit order, and reads as zeros).
    b[base + config_len + 24..base + config_len + 32].copy_from_slice(&8u64.to_le_bytes());
    cases.push(("index overlap", b));
    let mut b = good.clone();
    // Chunk 0 claims a stored length no larger than its block table.
    b[base + config_len + 8..base + config_len + 16].copy_from_slice(&1u64.to_le_bytes());
    cases.push(("index length", b));
    let mut b = good.clone();
    // An unknown codec id, with the config's crc made right: named, not guessed.
    b[base + 12] = 9;
    let crc_at = base + 48 + 8 * n;
    let crc = crc32(&b[base..crc_at]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    cases.push(("codec id", b));
    let mut b = good.clone();
    b.truncate(b.len() - 7);
    cases.push(("cut", b));
    // Cut short, `ra info` still shows the header, and what is missing.
    let cut = dir.path().join("cut_info.ra");
    std::fs::write(&cut, &good[..good.len() - 7]).unwrap();
    let out = ra()
        .arg("info")
        .arg(&cut)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("compression: chunked (flag bit 2)"), "{text}");
    assert!(text.contains("missing:     7 of"), "{text}");
    for (what, bytes) in cases {
        let expect = match what {
            "config magic" => "config magic",
            "config crc" => "config crc",
            "index overlap" => "overlaps",
            "index length" => "index entry of chunk 0",
            "codec id" => "unknown codec id 9",
            _ => "",
        };
        let bad = dir
            .path()
            .join(format!("bad_{}.ra", what.replace(' ', "_")));
        std::fs::write(&bad, &bytes).unwrap();
        let out_path = dir.path().join("out.ra");
        for cmd in [&["cat"][..], &["decompress", "-o"], &["verify"], &["info"]] {
            let mut c = ra();
            c.args(&cmd[..1]).arg(&bad).args(&cmd[1..]);
            if cmd.len() > 1 {
                c.arg(&out_path);
            }
            let out = c.assert().code(1).get_output().clone();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{what} {cmd:?}: {err}");
            assert!(err.starts_with("ra: "), "{what} {cmd:?}: {err}");
            if cmd[0] != "verify" {
                assert!(err.contains(expect), "{what} {cmd:?}: {err}");
            }
        }
    }
}

/// `ra slice --codec none` of a chunked file (decoded chunk by chunk through the codec layer)
/// writes the same file as the slice of the plain file, for steps, negative steps, single indices, a
/// big-endian file and a record file with its trailer; `ra convert` to .npy is the same too.
#[test]
fn slice_and_convert_of_a_chunked_file_equal_the_plain_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = d.join("f.ra");
    smooth_field(&f, [30, 20, 7]);
    let mut be = Vec::new();
    RawArray::from_shape_vec(vec![9, 8], (0..72i32).map(|i| i * 1000 - 5).collect())
        .unwrap()
        .write_to_with(
            &mut be,
            &rawarray_serde::WriteOptions::new().big_endian(true),
        )
        .unwrap();
    let b = d.join("be.ra");
    std::fs::write(&b, be).unwrap();
    let r = d.join("rec.ra");
    record_file(&r, 50);
    let cases: [(&Path, &str, &[&str]); 6] = [
        (
            &f,
            "7,7,3",
            &[":,:,:", "3:25:4,::-3,5", "-1,2:3,::2", "::7,::-1,1:6"],
        ),
        (&f, "30,20,1", &[":,5,:", "0,0,0"]),
        (&f, "64,64,64", &["10:12,3:9,2:4"]),
        (&b, "4,3", &[":,:", "1::2,-2", "::-1,::-1"]),
        (&r, "7", &["3:40:5", "::-1"]),
        (&r, "1", &["10:20"]),
    ];
    for (i, (plain, chunks, slices)) in cases.iter().enumerate() {
        let z = d.join(format!("z{i}.ra"));
        compress(plain, &z, &["--chunks", chunks, "--codec", "lz4"]);
        for s in *slices {
            let (a, c) = (d.join("a.ra"), d.join("c.ra"));
            ra().arg("slice")
                .arg(plain)
                .arg(&a)
                .arg(s)
                .assert()
                .success();
            ra().args(["slice", "--codec", "none"])
                .arg(&z)
                .arg(&c)
                .arg(s)
                .assert()
                .success();
            assert_eq!(
                std::fs::read(&a).unwrap(),
                std::fs::read(&c).unwrap(),
                "{plain:?} {chunks} {s}"
            );
        }
        if *plain != r {
            let (a, c) = (d.join("a.npy"), d.join("c.npy"));
            ra().arg("convert").arg(plain).arg(&a).assert().success();
            ra().arg("convert").arg(&z).arg(&c).assert().success();
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
        }
    }
}

/// `ra reshape` of a chunked file is refused (its config and index are laid out for its dims:
/// copied behind new dims they would name chunks the data does not hold), the file left as
/// it was; decompressed in place, it reshapes.
#[test]
fn reshape_refuses_a_chunked_file_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.ra");
    let v = smooth_field(&p, [6, 5, 4]);
    ra().args(["compress", "--chunks", "3,5,2"])
        .arg(&p)
        .assert()
        .success();
    let z = std::fs::read(&p).unwrap();
    let err = fails_with_one_line(ra().arg("reshape").arg(&p).arg("120"));
    assert!(err.contains("is chunked (flag bit 2)"), "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), z);
    ra().arg("decompress").arg(&p).assert().success();
    ra().arg("reshape").arg(&p).arg("120").assert().success();
    let a: RawArray<f32> = RawArray::read_file(&p).unwrap();
    assert_eq!((a.dims(), a.as_slice()), (&[120][..], &v[..]));
}

/// A sparse chunked file of 2^62 one-byte chunks, one written: `ra verify` checks the chunks
/// its index lists (bounded by the file's length), not every chunk of the grid, so it answers
/// at once, and still names a corrupt chunk.
#[test]
fn verify_of_a_sparse_file_with_2_62_chunks_is_bounded_by_its_index() {
    use rawarray_serde::codec::ChunkWriter;
    use rawarray_serde::ElType;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sparse.ra");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    let h = Header::new(ElType::Uint, 1, vec![1 << 62]).unwrap();
    // Built by hand: writers refuse an index of more than 2^40 chunks, readers must still
    // cope with a file that claims 2^62.
    let config = rawarray_serde::codec::Config {
        version: 2,
        codec: rawarray_serde::Codec::Zstd,
        level: 3,
        filters: vec![],
        blocks: rawarray_serde::codec::Blocks::Shape(vec![1]),
        chunk: vec![1],
        s0: 4,
        segments: [0; 64],
        stats: None,
        split: false,
        stream_crcs: false,
    };
    let mut w = ChunkWriter::create(&file, &h, config).unwrap();
    w.write_chunk(&file, 2, &[7]).unwrap();
    w.commit(&file, false).unwrap();
    drop(file);
    let verify = || {
        ra().arg("verify")
            .arg(&p)
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap()
    };
    let out = verify();
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stdout)),
        (Some(0), format!("{}: OK\n", p.display()).into()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The one written chunk's stored bytes end the file: a flipped bit there is still found.
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes.len() - 1;
    bytes[at] ^= 0x01;
    std::fs::write(&p, &bytes).unwrap();
    let out = verify();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAILED (chunk 2: crc32"), "{text}");
}

/// `ra info --stats`: the whole file's and each chunk's minimum, maximum and NaN count, from
/// the index alone, equal to what this test computes from the values it wrote (NaN ignored by
/// min and max, counted apart); `--no-stats` and version 1 files keep none (`"stats": null`).
#[test]
fn info_stats_are_the_values_min_max_and_nan_count() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.ra");
    let mut v: Vec<f32> = (0..40 * 30)
        .map(|k| ((k as f32) * 0.37).sin() * 50.0)
        .collect();
    for k in [3, 4, 700] {
        v[k] = f32::NAN;
    }
    v[900] = -1e30;
    RawArray::from_shape_vec(vec![40, 30], v.clone())
        .unwrap()
        .write_file(&p)
        .unwrap();
    let z = dir.path().join("z.ra");
    compress(&p, &z, &["--chunks", "40,10"]);
    let out = stdout_of(
        ra().args(["info", "--json", "--stats", "--per-chunk"])
            .arg(&z),
    );
    let j: Value = serde_json::from_str(out.trim()).unwrap();
    let stats = &j["stats"];
    // The truth: per chunk of 400 values (chunks of whole columns, 10 columns each).
    let summary = |vals: &[f32]| {
        let ok: Vec<f64> = vals
            .iter()
            .filter(|x| !x.is_nan())
            .map(|&x| f64::from(x))
            .collect();
        let lo = ok.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ok.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi, vals.iter().filter(|x| x.is_nan()).count() as u64)
    };
    let field = &stats["fields"][0];
    let (lo, hi, nan) = summary(&v);
    assert_eq!(field["name"], "values");
    assert_eq!(
        (field["min"].as_f64(), field["max"].as_f64()),
        (Some(lo), Some(hi))
    );
    assert_eq!(field["nan"], nan);
    let chunks = stats["chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 3);
    for (n, c) in chunks.iter().enumerate() {
        let (lo, hi, nan) = summary(&v[400 * n..400 * (n + 1)]);
        let f = &c["fields"][0];
        assert_eq!(c["chunk"], n as u64);
        assert_eq!(
            (f["min"].as_f64(), f["max"].as_f64(), f["nan"].as_u64()),
            (Some(lo), Some(hi), Some(nan)),
            "chunk {n}"
        );
    }
    // The text form names the field and the NaN count.
    let text = stdout_of(ra().args(["info", "--stats"]).arg(&z));
    assert!(
        text.contains(&format!("values  min {lo}, max {hi}, 3 NaN")),
        "{text}"
    );
    // Written without statistics, or as version 1: none.
    for (name, flags) in [
        ("n.ra", &["--no-stats"][..]),
        ("v1.ra", &["--layout-version", "1"][..]),
    ] {
        let q = dir.path().join(name);
        compress(&p, &q, flags);
        let out = stdout_of(ra().args(["info", "--json", "--stats"]).arg(&q));
        let j: Value = serde_json::from_str(out.trim()).unwrap();
        assert!(j["stats"].is_null(), "{name}: {out}");
    }
}

/// Records compressed with the defaults get a CRC per byte stream (`ra info` says so); `ra
/// slice` keeps the input's choice either way; `ra verify` finds a stream CRC that does not
/// match its stream even when the block's and the chunk's CRCs agree with it.
#[test]
fn stream_crcs_are_kept_by_slice_and_checked_by_verify() {
    use rawarray_serde::section::Section;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = d.join("rec.ra");
    record_file(&plain, 20_000);
    let z = d.join("z.ra");
    compress(&plain, &z, &["--no-stats"]);
    let j = info_json(&z);
    assert_eq!(
        (&j["split"], &j["stream_crcs"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert!(stdout_of(ra().arg("info").arg(&z)).contains("byte streams with CRCs"));
    assert_eq!(info_json(&plain)["stream_crcs"], Value::Null);
    let s = d.join("s.ra");
    ra().arg("slice")
        .arg(&z)
        .arg(&s)
        .arg("100:19000")
        .assert()
        .success();
    assert_eq!(info_json(&s)["stream_crcs"], Value::Bool(true));
    // An input whose streams have no CRCs (as a writer for older readers makes them) keeps
    // none through `ra slice`.
    let (h, raw) = data_of(&plain);
    let opts = rawarray_serde::WriteOptions::chunked().stream_crcs(false);
    let (hz, section) = rawarray_serde::codec::encode(&h, &raw, &opts).unwrap();
    let mut bytes = hz.encode();
    bytes.extend_from_slice(&section);
    let old = d.join("old.ra");
    std::fs::write(&old, &bytes).unwrap();
    assert_eq!(info_json(&old)["stream_crcs"], Value::Bool(false));
    ra().arg("slice")
        .arg(&old)
        .arg(&s)
        .arg("100:19000")
        .assert()
        .success();
    let j = info_json(&s);
    assert_eq!(
        (&j["split"], &j["stream_crcs"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    // Packing settings given: kept with the input's codec and filters (`--level`, `--split`),
    // the library's default once the codec changes.
    for (input, args, crcs) in [
        (&old, &["--level", "5"][..], Value::Bool(false)),
        (&old, &["--split"], Value::Bool(false)),
        (&z, &["--level", "5"], Value::Bool(true)),
        (&old, &["--codec", "lz4"], Value::Bool(false)),
    ] {
        ra().arg("slice")
            .args(args)
            .arg(input)
            .arg(&s)
            .arg("100:19000")
            .assert()
            .success();
        assert_eq!(info_json(&s)["stream_crcs"], crcs, "{input:?} {args:?}");
    }
    assert_eq!(
        info_json(&s)["split"],
        Value::Bool(false),
        "lz4 keeps one stream a block"
    );
    // Asked for by name: `--no-stream-crcs` on records, `--stream-crcs` on a smooth f32
    // field and through `ra slice` of an input without them; without byte streams, an error
    // naming the setting; none with `--codec lz4-whole`.
    compress(&plain, &s, &["--no-stream-crcs"]);
    let j = info_json(&s);
    assert_eq!(
        (&j["split"], &j["stream_crcs"]),
        (&Value::Bool(true), &Value::Bool(false))
    );
    let field = d.join("field.ra");
    smooth_field(&field, [64, 64, 16]);
    compress(&field, &s, &[]);
    assert_eq!(
        info_json(&s)["stream_crcs"],
        Value::Bool(false),
        "arrays: none by default"
    );
    compress(&field, &s, &["--stream-crcs"]);
    let j = info_json(&s);
    assert_eq!(
        (&j["split"], &j["stream_crcs"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert_eq!(data_of(&s), data_of(&field));
    ra().arg("slice")
        .arg("--stream-crcs")
        .arg(&old)
        .arg(&s)
        .arg("100:19000")
        .assert()
        .success();
    assert_eq!(info_json(&s)["stream_crcs"], Value::Bool(true));
    for args in [
        &["--stream-crcs", "--no-split"][..],
        &["--codec", "lz4-whole", "--stream-crcs"],
    ] {
        let err = ra()
            .arg("compress")
            .arg(&plain)
            .arg("-o")
            .arg(&s)
            .args(args)
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.contains("stream_crcs") || err.contains("--stream-crcs"),
            "{args:?}: {err}"
        );
    }

    // One chunk, one block: change crc[5] in the block's head, then fix up the block's CRC
    // (block table entry 0: end u64, crc u32) and the chunk's (its index entry: crc at 16,
    // the entry's own CRC at 24 over bytes 0..24 and the chunk number).
    assert_eq!(
        stdout_of(ra().arg("verify").arg(&z)),
        format!("{}: OK\n", z.display())
    );
    let mut bytes = std::fs::read(&z).unwrap();
    let h = Header::decode_any(&bytes).unwrap();
    let sec = Section::open(&h, &bytes[..]).unwrap();
    let map = sec.chunk_map().unwrap();
    assert_eq!(map.index().entries().len(), 1);
    let e = map.index().entries()[0];
    let base = h.encoded_len();
    let chunk = base + e.offset as usize..base + (e.offset + e.len) as usize;
    let entry = base + map.config().encoded_len() as usize;
    let payload = chunk.start + 12;
    bytes[payload + 4 * (22 + 5)] ^= 0x21;
    let crc = crc32(&bytes[payload..chunk.end]);
    bytes[chunk.start + 8..chunk.start + 12].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32(&bytes[chunk.clone()]);
    bytes[entry + 16..entry + 20].copy_from_slice(&crc.to_le_bytes());
    let mut covered = bytes[entry..entry + 24].to_vec();
    covered.extend_from_slice(&0u64.to_le_bytes());
    let crc = crc32(&covered);
    bytes[entry + 24..entry + 28].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&z, &bytes).unwrap();
    // The whole records still read (the block's bytes are whole), and `ra cat` prints them.
    ra().arg("cat").arg(&z).assert().success();
    let out = ra()
        .arg("verify")
        .arg(&z)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("FAILED (chunk 0: block 0: split stream 5: CRC-32"),
        "{out}"
    );
}
