//! The codec kernels against their Python peers (tests/python/codec_kernels.py): our byte
//! shuffle + bytedelta equals python-blosc2's SHUFFLE + BYTEDELTA filter output block for block
//! and Blosc2 undoes ours; our bitround equals numcodecs' `BitRound` and our delta numcodecs'
//! `Delta`; our pco blocks decode with `pcodec.standalone.simple_decompress` and theirs with
//! ours.

mod common;

use rawarray_serde::codec::bitround::{self, FloatFormat};
use rawarray_serde::codec::pco::{self, NumKind};
use rawarray_serde::codec::{bytedelta, delta};
use serde_json::json;

/// A deterministic generator (xorshift64).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Our byte shuffle then bytedelta of each block of `blocksize` bytes (the last shorter).
fn shuffle_bytedelta(raw: &[u8], width: usize, blocksize: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    for block in raw.chunks(blocksize) {
        let mut planes = vec![0u8; block.len()];
        rawarray_serde::codec::shuffle::shuffle(block, width, &mut planes);
        let mut filtered = vec![0u8; block.len()];
        bytedelta::encode(&planes, width, &mut filtered);
        out.extend_from_slice(&filtered);
    }
    out
}

/// Finite f32 values of every kind numcodecs rounds without overflow: a smooth field, random
/// magnitudes over the whole exponent range short of the top binade, subnormals, zeros of both
/// signs, and ties.
fn f32_values(noise: &mut Noise, n: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n).map(|i| (i as f32 * 0.001).sin() * 300.0).collect();
    for _ in 0..n {
        let bits = noise.next() as u32;
        // Exponent field 0 to 253: subnormals and normals below the largest binade.
        let exp = (bits >> 23) & 0xFF;
        v.push(f32::from_bits((bits & 0x807F_FFFF) | (exp.min(253) << 23)));
    }
    v.extend([
        0.0,
        -0.0,
        1.5,
        3.0,
        -1.5,
        f32::MIN_POSITIVE,
        -f32::from_bits(1),
    ]);
    v.extend((0..20).map(|k| 1.0 + (1u32 << k) as f32 * f32::EPSILON));
    v
}

fn f64_values(noise: &mut Noise, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n).map(|i| (i as f64 * 0.001).cos() * 1e-3).collect();
    for _ in 0..n {
        let bits = noise.next();
        let exp = (bits >> 52) & 0x7FF;
        v.push(f64::from_bits(
            (bits & 0x800F_FFFF_FFFF_FFFF) | (exp.min(0x7FD) << 52),
        ));
    }
    v.extend([0.0, -0.0, 2.5, f64::MIN_POSITIVE, f64::from_bits(3)]);
    v.extend((0..40).map(|k| 1.0 + (1u64 << k) as f64 * f64::EPSILON));
    v
}

fn f16_values(noise: &mut Noise, n: usize) -> Vec<half::f16> {
    (0..n)
        .map(|_| {
            let bits = noise.next() as u16;
            let exp = (bits >> 10) & 0x1F;
            half::f16::from_bits((bits & 0x83FF) | (exp.min(29) << 10))
        })
        .chain([half::f16::from_f32(1.5), half::f16::from_bits(0x8001)])
        .collect()
}

/// The values' bytes, little endian (the files these cases write are little-endian).
fn le_bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| {
            let mut b = bytemuck::bytes_of(x).to_vec();
            if cfg!(target_endian = "big") {
                b.reverse();
            }
            b
        })
        .collect()
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: interop skipped")]
fn our_kernels_match_blosc2_numcodecs_and_pcodec() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut manifest = Vec::new();
    let write = |name: &str, ext: &str, bytes: &[u8]| {
        std::fs::write(d.join(format!("{name}.{ext}")), bytes).unwrap();
    };

    // Bytedelta: widths Blosc2 takes (typesize 1 to 255), blocks with and without a trailing
    // partial element; the smooth floats are the filter's use, the noise checks every byte.
    let smooth: Vec<u8> = (0..20_000u32)
        .flat_map(|i| ((i as f32) * 0.001).sin().to_le_bytes())
        .collect();
    let random: Vec<u8> = (0..20_011).map(|_| noise.next() as u8).collect();
    for width in [1usize, 2, 3, 4, 8, 12, 16] {
        for (label, data) in [("smooth", &smooth), ("noise", &random)] {
            // Blosc2's block sizes are multiples of its typesize, which is 2 for width 1 (see
            // codec_kernels.py).
            let grain = width.max(2);
            for len in [
                data.len() / grain * grain,
                data.len() / grain * grain - grain + 1,
            ] {
                // The whole elements as one block, then a block of the partial element's bytes
                // alone; or blocks of about 4 KiB, the last of them shorter and holding the
                // partial element.
                for blocksize in [len / grain * grain, 4096 / grain * grain] {
                    let raw = &data[..len];
                    let name = format!("bd_{label}_w{width}_b{blocksize}_n{len}");
                    write(&name, "raw", raw);
                    write(&name, "ours", &shuffle_bytedelta(raw, width, blocksize));
                    manifest.push(json!({"kind": "bytedelta", "name": name, "width": width,
                                         "blocksize": blocksize}));
                }
            }
        }
    }

    // Bitround: f32 and f64 (the brief's), f16 too; every keepbits numcodecs takes.
    let floats: [(&str, FloatFormat, Vec<u8>); 3] = [
        (
            "<f4",
            FloatFormat::F32,
            le_bytes(&f32_values(&mut noise, 3000)),
        ),
        (
            "<f8",
            FloatFormat::F64,
            le_bytes(&f64_values(&mut noise, 3000)),
        ),
        (
            "<f2",
            FloatFormat::F16,
            le_bytes(&f16_values(&mut noise, 3000)),
        ),
    ];
    for (dtype, format, raw) in &floats {
        for keepbits in 0..=format.mantissa_bits() {
            let name = format!("br_{}_k{keepbits}", &dtype[1..]);
            let mut ours = vec![0u8; raw.len()];
            bitround::encode(raw, *format, keepbits, false, &mut ours);
            write(&name, "raw", raw);
            write(&name, "ours", &ours);
            manifest.push(json!({"kind": "bitround", "name": name, "dtype": dtype,
                                 "keepbits": keepbits}));
        }
    }

    // Delta: numcodecs' Delta on unsigned and signed integers (wrapping).
    let ints: Vec<u8> = (0..8000).map(|_| noise.next() as u8).collect();
    for (dtype, width) in [("<u1", 1), ("<u2", 2), ("<i4", 4), ("<u8", 8), ("<i8", 8)] {
        let name = format!("delta_{}", &dtype[1..]);
        let mut ours = vec![0u8; ints.len()];
        delta::encode(&ints, width, false, &mut ours);
        write(&name, "raw", &ints);
        write(&name, "ours", &ours);
        manifest.push(json!({"kind": "delta", "name": name, "dtype": dtype}));
    }

    // Pco: every kind, a smooth signal and random bits (NaN payloads included).
    let pco_cases: Vec<(NumKind, &str)> = vec![
        (NumKind::U16, "<u2"),
        (NumKind::I16, "<i2"),
        (NumKind::U32, "<u4"),
        (NumKind::I32, "<i4"),
        (NumKind::U64, "<u8"),
        (NumKind::I64, "<i8"),
        (NumKind::F16, "<f2"),
        (NumKind::F32, "<f4"),
        (NumKind::F64, "<f8"),
    ];
    let mut pco_raws = Vec::new();
    for &(kind, dtype) in &pco_cases {
        let w = kind.bytes();
        let smooth: Vec<u8> = (0..5000)
            .flat_map(|i| {
                let x = (f64::from(i) * 0.002).sin();
                match kind {
                    NumKind::F16 => half::f16::from_f64(x).to_le_bytes().to_vec(),
                    NumKind::F32 => (x as f32).to_le_bytes().to_vec(),
                    NumKind::F64 => x.to_le_bytes().to_vec(),
                    _ => (((x + 1.0) * 20000.0) as u64).to_le_bytes()[..w].to_vec(),
                }
            })
            .collect();
        let random: Vec<u8> = (0..3001 * w).map(|_| noise.next() as u8).collect();
        for (label, raw) in [("smooth", smooth), ("noise", random), ("empty", vec![])] {
            let name = format!("pco_{}_{label}", &dtype[1..]);
            let mut ours = Vec::new();
            pco::compress(&raw, kind, false, pco::DEFAULT_LEVEL, &mut ours).unwrap();
            write(&name, "raw", &raw);
            write(&name, "ours", &ours);
            manifest.push(json!({"kind": "pco", "name": name, "dtype": dtype}));
            pco_raws.push((name, kind, raw));
        }
    }

    std::fs::write(d.join("manifest.json"), json!(manifest).to_string()).unwrap();
    let out = common::python("codec_kernels.py", &[&d]);
    assert_eq!(out.trim(), format!("ok {}", manifest.len()));

    let read = |name: &str, ext: &str| std::fs::read(d.join(format!("{name}.{ext}"))).unwrap();
    for case in &manifest {
        let name = case["name"].as_str().unwrap();
        if case["kind"] != "pco" {
            assert!(
                read(name, "ours") == read(name, "theirs"),
                "{name}: our bytes differ from the Python peer's (first difference at byte {:?})",
                first_difference(&read(name, "ours"), &read(name, "theirs"))
            );
        }
    }
    for (name, kind, raw) in &pco_raws {
        let theirs = read(name, "theirs");
        let mut back = vec![0u8; raw.len()];
        pco::decompress(&theirs, *kind, false, &mut back)
            .unwrap_or_else(|e| panic!("{name}: pcodec's block: {e}"));
        assert!(
            back == *raw,
            "{name}: pcodec's block decodes to other numbers"
        );
        // In a big-endian file the same block gives the same numbers, bytes reversed.
        let w = kind.bytes();
        let mut be = vec![0u8; raw.len()];
        pco::decompress(&theirs, *kind, true, &mut be).unwrap();
        let swapped: Vec<u8> = raw
            .chunks(w)
            .flat_map(|c| c.iter().rev().copied())
            .collect();
        assert!(be == swapped, "{name}: big-endian decode");
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then_some(a.len().min(b.len())))
}
