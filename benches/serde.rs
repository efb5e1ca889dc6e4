//! The serde path against bincode 1 (fixint: 80 bytes a Foo, like ours) and a raw copy, in
//! one run: a 256 MiB `Vec<f32>` and 3 Mi records of `Foo`, serialized into a reserved `Vec`
//! and deserialized from a slice. Prints a table of throughputs and ratios.
//!
//! Run: `cargo bench --bench serde` (RA_BENCH_MIB=64 for a smaller run).

use std::time::{Duration, Instant};

use bincode::Options;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

fn best<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn bench<T>(name: &str, value: &T, runs: usize)
where
    T: Serialize + serde::de::DeserializeOwned + PartialEq,
{
    let bin = bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes();
    let ours_bytes = rawarray_serde::to_vec(value).unwrap();
    let bin_bytes = bin.serialize(value).unwrap();
    let mib = ours_bytes.len() as f64 / (1 << 20) as f64;
    let mut sink = Vec::with_capacity(ours_bytes.len() + 4096);

    let raw_w = best(runs, || {
        sink.clear();
        sink.extend_from_slice(&ours_bytes);
        std::hint::black_box(&sink);
    });
    let ours_w = best(runs, || {
        sink.clear();
        rawarray_serde::to_writer(&mut sink, value).unwrap();
    });
    let bin_w = best(runs, || {
        sink.clear();
        bin.serialize_into(&mut sink, value).unwrap();
    });
    let raw_r = best(runs, || {
        std::hint::black_box(ours_bytes.to_vec());
    });
    let ours_r = best(runs, || {
        std::hint::black_box(rawarray_serde::from_slice::<T>(&ours_bytes).unwrap());
    });
    let bin_r = best(runs, || {
        std::hint::black_box(bin.deserialize::<T>(&bin_bytes).unwrap());
    });
    assert!(rawarray_serde::from_slice::<T>(&ours_bytes).unwrap() == *value);

    let mbs = |d: Duration| mib / d.as_secs_f64();
    for (dir, raw, ours, binc) in [
        ("write", raw_w, ours_w, bin_w),
        ("read", raw_r, ours_r, bin_r),
    ] {
        println!(
            "| {name} | {dir} | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x |",
            mbs(ours),
            mbs(binc),
            mbs(raw),
            binc.as_secs_f64() / ours.as_secs_f64(),
            ours.as_secs_f64() / raw.as_secs_f64(),
        );
    }
}

fn main() {
    let mib: usize = std::env::var("RA_BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let runs = 3;
    println!("serde path vs bincode 1 (fixint), best of {runs} runs; targets: ours >= 2x bincode's throughput");
    println!("| workload | direction | ours MiB/s | bincode MiB/s | raw copy MiB/s | ours / bincode throughput | ours / raw time |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let floats: Vec<f32> = (0..mib * (1 << 20) / 4).map(|i| i as f32 * 0.25).collect();
    bench(&format!("Vec<f32> {mib} MiB"), &floats, runs);
    drop(floats);
    let n = mib * (3 << 20) / 256;
    let foos: Vec<Foo> = (0..n)
        .map(|i| Foo {
            info: [i as u8; 12],
            index: i as u32,
            v: std::array::from_fn(|k| (i + k) as f64),
        })
        .collect();
    bench(&format!("Vec<Foo> {} Mi records", n >> 20), &foos, runs);
}
