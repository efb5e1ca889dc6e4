//! A chunked read's decode path alone, for profilers (doc/benchmarks.md): the smooth field of
//! `lz4_encode` (run that example first; it caches the arrays in `RA_BENCH_DIR` or the temporary
//! folder) encoded once with `FILTERS` (comma-separated names as `ra compress --filter` takes
//! them; default `shuffle`, `none` for none) and `CODEC` (default `zstd`) at `LEVEL` (the
//! codec's default), default chunks and `BLOCKS` (comma-separated, file order; default the
//! codec's), `SPLIT` (`1` or `0`: byte streams on or off; default the writer's), then read whole `REPS` times from memory on `THREADS` threads (1), and prints
//! the encode's speed and the reads' best and median.
//!
//! `cargo build --release -p rawarray-serde --example decode_loop`, then for example
//! `MB=64 REPS=10 target/release/examples/decode_loop`.
use rawarray_serde::codec::{self, Codec, Filter};
use rawarray_serde::section::Section;
use rawarray_serde::{ElType, Header, WriteOptions};
use std::time::Instant;

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(d)
}

fn main() {
    let mb: u64 = env("MB", 64);
    let reps: usize = env("REPS", 5);
    let threads: usize = env("THREADS", 1);
    let n = (((mb << 20) / 4) as f64).cbrt().round() as u64;
    let dir = std::env::var("RA_BENCH_DIR").map_or_else(|_| std::env::temp_dir(), Into::into);
    let field = std::fs::read(dir.join(format!("lz4_encode-{mb}-f")))
        .expect("run the lz4_encode example first, with the same MB and RA_BENCH_DIR");
    let h = Header::new(ElType::Float, 4, vec![n, n, n]).unwrap();
    let codec = Codec::parse(&std::env::var("CODEC").unwrap_or_else(|_| "zstd".into())).unwrap();
    let filters: Vec<Filter> = match std::env::var("FILTERS").as_deref() {
        Ok("none") => vec![],
        Ok(list) => list.split(',').map(|f| Filter::parse(f).unwrap()).collect(),
        Err(_) => vec![Filter::Shuffle],
    };
    let mut opts = WriteOptions::chunked()
        .codec(codec)
        .filters(filters)
        .threads(threads);
    if let Ok(l) = std::env::var("LEVEL") {
        opts = opts.level(l.parse().unwrap());
    }
    if let Ok(b) = std::env::var("BLOCKS") {
        opts = opts.blocks(b.split(',').map(|x| x.parse().unwrap()).collect());
    }
    if let Ok(b) = std::env::var("SPLIT") {
        opts = opts.split(b == "1");
    }
    let t = Instant::now();
    let (h, section) = codec::encode(&h, &field, &opts).unwrap();
    let enc = t.elapsed().as_secs_f64();
    let mut file = h.encode();
    file.extend_from_slice(&section);
    let mut times = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let back = Section::open(&h, &file[..])
            .unwrap()
            .with_threads(threads)
            .read_all()
            .unwrap();
        times.push(t.elapsed().as_secs_f64());
        assert!(back.len() == field.len());
        std::hint::black_box(back);
    }
    times.sort_by(f64::total_cmp);
    let gbs = |t: f64| field.len() as f64 / t / 1e9;
    println!(
        "ratio {:.3}, encoded once at {:.2} GB/s; {} -> {}: best {:.1} ms ({:.2} GB/s), median {:.1} ms ({:.2} GB/s)",
        field.len() as f64 / section.len() as f64,
        field.len() as f64 / enc / 1e9,
        field.len(),
        section.len(),
        times[0] * 1e3,
        gbs(times[0]),
        times[reps / 2] * 1e3,
        gbs(times[reps / 2])
    );
}
