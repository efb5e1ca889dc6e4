//! LZ4 encoders on the chunked layout's blocks: `lz4_flex` (the codec's crate, `compress_into`,
//! its only block encoder in 0.11; unsafe encoder, `safe-decode` decoder) against liblz4 through
//! the `lz4` crate (`LZ4_compress_default`, and `LZ4_compress_fast` with accelerations 2, 4 and
//! 8), on byte-shuffled f32 in 128 KiB blocks: a smooth field `sin(i * 0.001)` and random
//! normal f32. Each encoder's blocks are decoded by `lz4_flex::block::decompress_into` (bounds
//! checked, `safe-decode`) and by liblz4's `LZ4_decompress_safe`, and checked. Prints a markdown
//! table: GB/s of raw bytes (best of a few runs, one thread), ratio, and each encoder's speed and
//! ratio against `lz4_flex`'s in the same run.
//!
//! Run: `cargo bench --bench lz4_encoders` (RA_BENCH_MB=64 for 64 MiB per data set, default 32;
//! RA_BENCH_RUNS=15 for the best of 15 runs, default 7: on a loaded machine, more).

use std::time::{Duration, Instant};

const BLOCK: usize = 128 << 10;

fn best(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("runs > 0")
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// `values` f32 as the chunked layout filters them: byte-shuffled by 4 in blocks.
fn shuffled_blocks(values: impl Iterator<Item = f32>) -> Vec<Vec<u8>> {
    let raw: Vec<u8> = values.flat_map(f32::to_le_bytes).collect();
    raw.chunks(BLOCK)
        .map(|b| {
            let mut out = vec![0u8; b.len()];
            rawarray_serde::codec::shuffle::shuffle(b, 4, &mut out);
            out
        })
        .collect()
}

type Encoder = (&'static str, Box<dyn Fn(&[u8], &mut [u8]) -> usize>);

fn encoders() -> Vec<Encoder> {
    let mut v: Vec<Encoder> = vec![
        (
            "lz4_flex 0.11 compress_into",
            Box::new(|src: &[u8], dst: &mut [u8]| {
                lz4_flex::block::compress_into(src, dst).expect("lz4_flex")
            }),
        ),
        (
            "liblz4 default",
            Box::new(|src: &[u8], dst: &mut [u8]| {
                lz4::block::compress_to_buffer(src, None, false, dst).expect("liblz4")
            }),
        ),
    ];
    for (name, accel) in [
        ("liblz4 fast(2)", 2),
        ("liblz4 fast(4)", 4),
        ("liblz4 fast(8)", 8),
    ] {
        v.push((
            name,
            Box::new(move |src: &[u8], dst: &mut [u8]| {
                let mode = Some(lz4::block::CompressionMode::FAST(accel));
                lz4::block::compress_to_buffer(src, mode, false, dst).expect("liblz4")
            }),
        ));
    }
    v
}

fn main() {
    let mb: usize = std::env::var("RA_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    let n = (mb << 20) / 4;
    let mut rng = Rng(11);
    let sets = [
        (
            "smooth sin(i*0.001)",
            shuffled_blocks((0..n).map(|i| (i as f64 * 0.001).sin() as f32)),
        ),
        (
            "random normal",
            shuffled_blocks((0..n).map(|_| rng.normal() as f32)),
        ),
    ];
    let runs: usize = std::env::var("RA_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(7);
    println!("{mb} MiB of f32 per data set, byte-shuffled in 128 KiB blocks; one thread, best of {runs}.\n");
    println!("| data | encoder | compress GB/s | ratio | speed vs lz4_flex | size vs lz4_flex | decompress GB/s, lz4_flex safe-decode | decompress GB/s, liblz4 |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (label, blocks) in &sets {
        let raw_len: usize = blocks.iter().map(Vec::len).sum();
        let bound = lz4_flex::block::get_maximum_output_size(BLOCK);
        let mut packed: Vec<Vec<u8>> = blocks.iter().map(|_| vec![0u8; bound]).collect();
        let mut back = vec![0u8; BLOCK];
        let mut baseline: Option<(f64, usize)> = None;
        for (name, encode) in encoders() {
            let mut lens = vec![0usize; blocks.len()];
            let t = best(runs, || {
                for ((b, p), l) in blocks.iter().zip(&mut packed).zip(&mut lens) {
                    *l = encode(b, p);
                }
            });
            let stored: usize = lens.iter().sum();
            let gbs = raw_len as f64 / t.as_secs_f64() / 1e9;
            let (base_gbs, base_len) = *baseline.get_or_insert((gbs, stored));
            // Both decoders on this encoder's blocks, checked against the input.
            for ((b, p), &l) in blocks.iter().zip(&packed).zip(&lens) {
                let k = lz4_flex::block::decompress_into(&p[..l], &mut back).expect("decode");
                assert_eq!(&back[..k], &b[..], "{name}: lz4_flex decode");
                let k = lz4::block::decompress_to_buffer(&p[..l], Some(b.len() as i32), &mut back)
                    .expect("liblz4 decode");
                assert_eq!(&back[..k], &b[..], "{name}: liblz4 decode");
            }
            let t_flex = best(runs, || {
                for ((b, p), &l) in blocks.iter().zip(&packed).zip(&lens) {
                    let k = lz4_flex::block::decompress_into(&p[..l], &mut back[..b.len()]);
                    std::hint::black_box(k.expect("decode"));
                }
            });
            let t_c = best(runs, || {
                for ((b, p), &l) in blocks.iter().zip(&packed).zip(&lens) {
                    let k = lz4::block::decompress_to_buffer(
                        &p[..l],
                        Some(b.len() as i32),
                        &mut back[..b.len()],
                    );
                    std::hint::black_box(k.expect("decode"));
                }
            });
            println!(
                "| {label} | {name} | {gbs:.2} | {:.3} | {:.2}x | {:.3}x | {:.2} | {:.2} |",
                raw_len as f64 / stored as f64,
                gbs / base_gbs,
                stored as f64 / base_len as f64,
                raw_len as f64 / t_flex.as_secs_f64() / 1e9,
                raw_len as f64 / t_c.as_secs_f64() / 1e9,
            );
        }
    }
}
