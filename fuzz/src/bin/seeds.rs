//! Writes the seed corpora: `fuzz/corpus/<target>/`, from the reference files
//! (`tests/fixtures/reference`, or `$RA_REFERENCE_DIR`) and from files written the ways the
//! tests write them (every element kind, big-endian, LZ4, trailers, record files caught
//! mid-write, a file whose last header update was lost).
//!
//! Run from `fuzz/`: `cargo run --bin seeds` (the corpus folders are not committed).

use std::path::{Path, PathBuf};

use half::{bf16, f16};
use num_complex::Complex;
use rawarray_fuzz::{lz4_input, Particle};
use rawarray_serde::{
    to_vec, Durability, DynArray, Header, RaRecord, RawArray, RecordOptions, RecordWriter, Trailer,
    WriteOptions,
};

/// A three-byte record: user-defined elements of an odd size.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Small {
    a: u8,
    b: u16,
}

type Seeds = Vec<(String, Vec<u8>)>;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = std::env::var_os("RA_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../tests/fixtures/reference"));
    let mut files = reference_files(&reference);
    files.extend(written_files());
    files.extend(record_files());

    let trailers = trailer_seeds(&files);
    let lz4: Seeds = files
        .iter()
        .filter_map(|(name, bytes)| Some((name.clone(), lz4_input(bytes)?)))
        .collect();

    let corpus = root.join("corpus");
    for target in [
        "header",
        "dynamic",
        "typed",
        "from_slice",
        "records",
        "recover",
        "subset",
    ] {
        write(&corpus.join(target), &files);
    }
    write(&corpus.join("trailer"), &trailers);
    write(&corpus.join("lz4"), &lz4);
    write(&corpus.join("chunked"), &chunked_files());
    write(&corpus.join("ragged"), &ragged_files());
}

/// Chunked files (flag bit 2) of each filter and codec, with edge chunks and small blocks.
fn chunked_files() -> Seeds {
    use rawarray_serde::codec::{Codec, Shuffle};
    let a = RawArray::from_shape_vec(vec![5, 4, 3], (0..60u16).map(|i| i / 3).collect())
        .expect("shape");
    let mut out = Seeds::new();
    for (s, c) in [
        (Shuffle::Byte, Codec::Zstd),
        (Shuffle::Bit, Codec::Lz4),
        (Shuffle::None, Codec::None),
    ] {
        let opts = WriteOptions::new()
            .shuffle(s)
            .codec(c)
            .chunks(vec![2, 4, 2]);
        let mut bytes = Vec::new();
        a.write_to_with(&mut bytes, &opts).expect("write to a Vec");
        out.push((format!("chunked_{}_{}", s.name(), c.name()), bytes));
    }
    out
}

/// Ragged files of each element the `ragged` target reads, text among them.
fn ragged_files() -> Seeds {
    use rawarray_serde::Ragged;
    let f32s = Ragged::from_rows([vec![1.5f32, 2.5], vec![], vec![3.0]]);
    let bytes = Ragged::from_rows([vec![0xffu8], vec![], vec![1, 2, 3]]);
    let text = Ragged::from_strs(["Grüße", "", "abc"]);
    vec![
        ("ragged-f32".into(), f32s.to_bytes().expect("writes")),
        ("ragged-u8".into(), bytes.to_bytes().expect("writes")),
        ("ragged-text".into(), text.to_bytes().expect("writes")),
        (
            "ragged-none".into(),
            Ragged::<f32>::new().to_bytes().expect("writes"),
        ),
        (
            "ragged-f32-zstd".into(),
            f32s.to_bytes_with(&rawarray_serde::codec::ChunkOptions::new())
                .expect("writes"),
        ),
    ]
}

fn write(dir: &Path, seeds: &Seeds) {
    std::fs::create_dir_all(dir).expect("create the corpus folder");
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).expect("write a seed");
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
}

fn reference_files(dir: &Path) -> Seeds {
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!(
            "no reference files at {} (set RA_REFERENCE_DIR)",
            dir.display()
        );
        return Vec::new();
    };
    let mut out: Seeds = entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "ra").then(|| {
                let name = format!("ref-{}", path.file_name()?.to_string_lossy());
                Some((name, std::fs::read(&path).ok()?))
            })?
        })
        .collect();
    out.sort();
    out
}

fn typed<T: rawarray_serde::Element>(out: &mut Seeds, name: &str, a: &RawArray<T>) {
    out.push((format!("{name}.ra"), a.to_bytes()));
    for (suffix, opts) in [
        ("be", WriteOptions::new().big_endian(true)),
        ("z", WriteOptions::new().compress(true)),
        ("bez", WriteOptions::new().big_endian(true).compress(true)),
    ] {
        let mut bytes = Vec::new();
        a.write_to_with(&mut bytes, &opts).expect("write");
        out.push((format!("{name}-{suffix}.ra"), bytes));
    }
}

fn particles(n: u32) -> Vec<Particle> {
    (0..n)
        .map(|i| Particle {
            id: i,
            alive: i % 2 == 0,
            pos: [i as f32, -0.5, 1e-3],
            z: Complex::new(f64::from(i), -2.0),
            h: f16::from_f32(0.25 * i as f32),
        })
        .collect()
}

fn written_files() -> Seeds {
    let mut out = Seeds::new();
    let f32s = RawArray::from_shape_vec(vec![3, 2], vec![1.0f32, 2.0, 3.5, -4.0, 5.0, 6.0]);
    typed(&mut out, "f32", &f32s.expect("shape"));
    typed(
        &mut out,
        "f64",
        &RawArray::from_vec(vec![0.1f64, f64::NAN, -0.0]),
    );
    typed(
        &mut out,
        "c64",
        &RawArray::from_shape_vec(
            vec![2, 2],
            (0..4).map(|i| Complex::new(i as f64, 1.0)).collect(),
        )
        .expect("shape"),
    );
    typed(
        &mut out,
        "c32",
        &RawArray::from_vec(vec![Complex::new(1.0f32, -1.0)]),
    );
    typed(
        &mut out,
        "u16x3",
        &RawArray::from_vec(vec![[1u16, 2, 3], [4, 5, 6]]),
    );
    typed(
        &mut out,
        "bool",
        &RawArray::from_vec(vec![true, false, true, true]),
    );
    typed(&mut out, "particle", &RawArray::from_vec(particles(3)));
    typed(
        &mut out,
        "small",
        &RawArray::from_vec(vec![Small { a: 1, b: 2 }; 5]),
    );
    typed(
        &mut out,
        "f16",
        &RawArray::from_vec(vec![f16::from_f32(1.5); 4]),
    );
    typed(
        &mut out,
        "bf16",
        &RawArray::from_vec(vec![bf16::from_f32(-2.0); 4]),
    );
    typed(
        &mut out,
        "i128",
        &RawArray::from_vec(vec![-1i128, 1 << 100]),
    );
    typed(&mut out, "i16", &RawArray::from_vec(vec![-1i16, 300, 7]));
    typed(
        &mut out,
        "char",
        &RawArray::from_vec("héllo".chars().collect()),
    );
    typed(&mut out, "u8-long", &RawArray::from_vec(vec![7u8; 300]));
    typed(&mut out, "scalar", &RawArray::scalar(42u8));
    typed(&mut out, "empty", &RawArray::<f32>::from_vec(Vec::new()));
    typed(
        &mut out,
        "empty-0x3",
        &RawArray::<f64>::from_shape_vec(vec![0, 3], Vec::new()).expect("shape"),
    );
    typed(
        &mut out,
        "empty-3x0",
        &RawArray::<f64>::from_shape_vec(vec![3, 0], Vec::new()).expect("shape"),
    );

    let serde_values: [(&str, rawarray_serde::Result<Vec<u8>>); 10] = [
        ("serde-str", to_vec("hello")),
        ("serde-strings", to_vec(&vec!["ab", "cd", "ef"])),
        (
            "serde-nested",
            to_vec(&vec![vec![1.0f64, 2.0], vec![3.0, 4.0]]),
        ),
        ("serde-scalar", to_vec(&2.5f64)),
        ("serde-tuple", to_vec(&(7u32, true))),
        ("serde-particle", to_vec(&particles(1)[0])),
        ("serde-particles", to_vec(&particles(4))),
        ("serde-complex", to_vec(&Complex::new(1.0f32, 2.0))),
        (
            "serde-embedded",
            to_vec(&vec![
                RawArray::from_vec(vec![1u8, 2]),
                RawArray::from_vec(vec![3u8, 4]),
            ]),
        ),
        ("serde-i32s", to_vec(&vec![[1i32, 2], [3, 4], [5, 6]])),
    ];
    for (name, bytes) in serde_values {
        out.push((format!("{name}.ra"), bytes.expect("serialize")));
    }

    let mut with_trailer = DynArray::from_typed(&RawArray::from_vec(vec![1.5f32, 2.5, 3.5]));
    let t =
        Trailer::for_element::<f32>(serde_json::json!({"units": "K", "dt": 0.5})).expect("trailer");
    with_trailer.set_trailer(&t);
    out.push((
        "trailer-f32.ra".into(),
        with_trailer.to_bytes().expect("to_bytes"),
    ));
    let mut raw_tail = DynArray::from_typed(&RawArray::from_vec(vec![9u8; 4]));
    raw_tail.set_trailer_bytes(b"volatile metadata".to_vec());
    out.push(("tail-u8.ra".into(), raw_tail.to_bytes().expect("to_bytes")));
    out
}

/// Record files: mid-write (free space and a spare trailer copy), finished, and one whose
/// last header update was lost (the records and the forward block are there, the header
/// counts one record fewer).
fn record_files() -> Seeds {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut out = Seeds::new();
    let opts = RecordOptions::new()
        .durability(Durability::NoFsync)
        .params(serde_json::json!({"run": 3}));

    let path = dir.path().join("f32.ra");
    let mut w: RecordWriter<f32> = opts.create(&path).expect("create");
    w.append_slice(&[1.0, 2.0, 3.0]).expect("append");
    w.flush().expect("flush");
    // A mid-write file is mostly a hole: keep its head and its spare block.
    let mid = std::fs::read(&path).expect("read");
    out.push(("rec-f32-open.ra".into(), compact(&mid)));
    w.append_slice(&[4.0]).expect("append");
    w.flush().expect("flush");
    let lost = lose_last_header_update(&std::fs::read(&path).expect("read"), &mid);
    out.push(("rec-f32-lost-update.ra".into(), compact(&lost)));
    w.finish().expect("finish");
    out.push((
        "rec-f32-done.ra".into(),
        std::fs::read(&path).expect("read"),
    ));

    let path = dir.path().join("particle.ra");
    let mut w: RecordWriter<Particle> = opts.create(&path).expect("create");
    w.append_slice(&particles(3)).expect("append");
    w.finish().expect("finish");
    out.push((
        "rec-particle.ra".into(),
        std::fs::read(&path).expect("read"),
    ));

    let path = dir.path().join("field.ra");
    let mut w: RecordWriter<[u16; 3]> =
        opts.clone().record_dims([2]).create(&path).expect("create");
    w.append_slice(&[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]])
        .expect("append");
    w.finish().expect("finish");
    out.push(("rec-u16x3x2.ra".into(), std::fs::read(&path).expect("read")));

    // No trailer, one whole record and a torn one after the data.
    let mut bare = RawArray::from_vec(vec![1u32, 2]).to_bytes();
    bare.extend([3u8, 0, 0, 0, 4, 0]);
    out.push(("rec-u32-bare.ra".into(), bare));
    out
}

/// `now` (a record file after a flush) with the header of `before` (the flush before it).
fn lose_last_header_update(now: &[u8], before: &[u8]) -> Vec<u8> {
    let h = Header::decode(before).expect("header");
    let mut out = now.to_vec();
    out[..h.encoded_len()].copy_from_slice(&before[..h.encoded_len()]);
    out
}

/// A mid-write record file without its hole: everything up to the forward block's end, then
/// the spare block (so both copies stay findable in a file of a few hundred bytes).
fn compact(file: &[u8]) -> Vec<u8> {
    let tag = b"RATRAILR";
    let positions: Vec<usize> = file
        .windows(8)
        .enumerate()
        .filter(|(_, w)| w == tag)
        .map(|(i, _)| i)
        .collect();
    match positions[..] {
        [_, forward_end, spare, ..] if forward_end + 8 < spare => {
            let mut out = file[..forward_end + 8].to_vec();
            out.extend_from_slice(&file[spare..]);
            out
        }
        _ => file.to_vec(),
    }
}

/// Trailer seeds: the bytes after the data of every file that has any, single blocks, two
/// blocks (a forward and a spare copy), and the files themselves (`from_file_bytes`).
fn trailer_seeds(files: &Seeds) -> Seeds {
    let mut out = Seeds::new();
    for (name, bytes) in files {
        let Ok(h) = Header::decode(bytes) else {
            continue;
        };
        let end = h.encoded_len() + h.size as usize;
        if bytes.len() > end {
            out.push((format!("tail-{name}"), bytes[end..].to_vec()));
            out.push((name.clone(), bytes.clone()));
        }
    }
    let t = Trailer::for_element::<Particle>(serde_json::json!({"a": [1, 2.5, "x"], "b": null}))
        .expect("trailer");
    out.push(("block-spare".into(), t.encode_block(0)));
    out.push(("block-forward".into(), t.encode_block(72)));
    let mut two = t.encode_block(100);
    two.extend_from_slice(&[0u8; 16]);
    two.extend_from_slice(&Trailer::new(1).expect("trailer").encode_block(0));
    out.push(("block-two".into(), two));
    let schema = Trailer::new(serde_json::Value::Null)
        .expect("trailer")
        .with_schema(<[[Complex<f32>; 2]; 3] as rawarray_serde::Element>::layout());
    out.push(("block-schema".into(), schema.encode_block(0)));
    out
}
