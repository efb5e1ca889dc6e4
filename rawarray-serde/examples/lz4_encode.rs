//! The `lz4` codec's write path alone, for profilers (doc/benchmarks.md, "LZ4 encoders"):
//! the bench's two f32 arrays (a smooth field and random normal values, `MB` MiB each, cached
//! in `RA_BENCH_DIR` or the temporary folder after the first run) encoded `REPS` times each
//! with byte shuffle, default chunks and blocks, on `THREADS` threads (1), with statistics
//! unless `NOSTATS` is set; `SPLIT=1`/`SPLIT=0` sets byte streams (default the writer's);
//! `WHICH=field|random` picks one, `DUMP=prefix` writes the sections (to compare builds).
//!
//! `cargo build --release -p rawarray-serde --example lz4_encode`, then for example
//! `MB=64 REPS=6 WHICH=field perf stat -e task-clock target/release/examples/lz4_encode`.
use rawarray_serde::codec::{self, Codec, Filter};
use rawarray_serde::{ElType, Header, WriteOptions};
use std::time::Instant;

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

fn main() {
    let mb: u64 = std::env::var("MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let which = std::env::var("WHICH").unwrap_or_else(|_| "both".into());
    let n = (((mb << 20) / 4) as f64).cbrt().round() as u64;
    // The arrays take longer to make than to encode: made once, then read back.
    let dir = std::env::var("RA_BENCH_DIR").map_or_else(|_| std::env::temp_dir(), Into::into);
    let cache = dir.join(format!("lz4_encode-{mb}")).display().to_string();
    let (field, random) = if let (Ok(a), Ok(b)) = (
        std::fs::read(format!("{cache}-f")),
        std::fs::read(format!("{cache}-r")),
    ) {
        (a, b)
    } else {
        let mut rng = Rng(7);
        let mut field = Vec::new();
        for z in 0..n {
            for y in 0..n {
                for x in 0..n {
                    let v = (x as f64 / 17.0).sin() * (y as f64 / 23.0).cos()
                        + z as f64 / n as f64
                        + 1e-3 * rng.normal();
                    field.extend_from_slice(&(v as f32).to_le_bytes());
                }
            }
        }
        let mut rng = Rng(11);
        let len = n * n * n;
        let random: Vec<u8> = (0..len)
            .flat_map(|_| (rng.normal() as f32).to_le_bytes())
            .collect();
        std::fs::write(format!("{cache}-f"), &field).unwrap();
        std::fs::write(format!("{cache}-r"), &random).unwrap();
        (field, random)
    };
    let len = n * n * n;
    let sets = [
        (
            "field",
            Header::new(ElType::Float, 4, vec![n, n, n]).unwrap(),
            field,
        ),
        (
            "random",
            Header::new(ElType::Float, 4, vec![len]).unwrap(),
            random,
        ),
    ];
    let mut opts = WriteOptions::chunked()
        .codec(Codec::Lz4)
        .filters([Filter::Shuffle])
        .threads(
            std::env::var("THREADS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1),
        )
        .statistics(std::env::var("NOSTATS").is_err());
    if let Ok(b) = std::env::var("SPLIT") {
        opts = opts.split(b == "1");
    }
    for (name, h, raw) in &sets {
        if which != "both" && which != *name {
            continue;
        }
        for _ in 0..reps {
            let t = Instant::now();
            let (_, s) = codec::encode(h, raw, &opts).unwrap();
            let dt = t.elapsed().as_secs_f64();
            println!(
                "{name}: {} -> {} in {:.1} ms, {:.2} GB/s",
                raw.len(),
                s.len(),
                dt * 1e3,
                raw.len() as f64 / dt / 1e9
            );
            if let Ok(d) = std::env::var("DUMP") {
                std::fs::write(format!("{d}-{name}"), &s).unwrap();
            }
            std::hint::black_box(s);
        }
    }
}
