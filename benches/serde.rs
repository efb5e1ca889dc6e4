//! The serde path against bincode 1 (fixint: 80 bytes a `Foo`, like ours) and a raw copy, in
//! one run, on the two workloads: 256 MiB of `f32` and 3 Mi records of
//! `Foo { info: [u8; 12], index: u32, v: [f64; 8] }`. Prints a table of throughputs and ratios.
//!
//! Two regimes, because they measure different things:
//!
//! - **per-element cost**: the workload as 256 values of 1 MiB each. Every allocation is
//!   reused warm by the allocator, so the times are the formats' own work per element. This is
//!   where the target (at least 2x bincode's throughput) is measured; the `bincode / raw`
//!   column shows what bincode costs against a plain copy in the same conditions.
//! - **one value**: the workload as a single 256 MiB value. Every run writes into or reads
//!   into fresh memory, and the kernel's page faults (4 KiB pages here) bound even a plain copy.
//!
//! Each operation is measured against the same operation of bincode: `to_vec` against
//! `serialize` (a new `Vec`), `to_writer` into a reused `Vec` against `serialize_into`, and
//! `from_slice` against `deserialize`. The contenders run round-robin; each keeps its best time.
//!
//! Run: `cargo bench --bench serde` (`RA_BENCH_MIB=64` for a smaller run).

use std::time::{Duration, Instant};

use bincode::Options;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

fn bincode() -> impl Options + Copy {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
}

/// Runs the closures round-robin `runs` times; the best time of each.
fn best_of(runs: usize, fs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut best = vec![Duration::MAX; fs.len()];
    for _ in 0..runs {
        for (f, b) in fs.iter_mut().zip(&mut best) {
            let t = Instant::now();
            f();
            *b = (*b).min(t.elapsed());
        }
    }
    best
}

/// One row: ours, bincode and a raw copy of the same bytes, as throughputs and ratios.
fn row(name: &str, op: &str, mib: f64, [ours, bin, raw]: [Duration; 3]) {
    let mbs = |d: Duration| mib / d.as_secs_f64();
    println!(
        "| {name} | {op} | {:.0} | {:.0} | {:.0} | **{:.2}x** | {:.2}x |",
        mbs(ours),
        mbs(bin),
        mbs(raw),
        bin.as_secs_f64() / ours.as_secs_f64(),
        bin.as_secs_f64() / raw.as_secs_f64(),
    );
}

/// Measures the workload given as `values` (one value, or many 1 MiB ones). `memory`, for a
/// plain value, is its memory (a copy of it is the least any writer can do); empty otherwise.
fn bench<T>(name: &str, values: &[T], runs: usize, memory: fn(&T) -> &[u8])
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let ours: Vec<Vec<u8>> = values
        .iter()
        .map(|v| rawarray_serde::to_vec(v).unwrap())
        .collect();
    let bins: Vec<Vec<u8>> = values
        .iter()
        .map(|v| bincode().serialize(v).unwrap())
        .collect();
    for (v, bytes) in values.iter().zip(&ours) {
        assert!(rawarray_serde::from_slice::<T>(bytes).unwrap() == *v);
        let mut w = Vec::new();
        rawarray_serde::to_writer(&mut w, v).unwrap();
        assert!(w == *bytes);
    }
    let mib = ours.iter().map(Vec::len).sum::<usize>() as f64 / (1 << 20) as f64;
    let largest = ours.iter().map(Vec::len).max().unwrap_or(0);

    // A new Vec for each value: to_vec, bincode's serialize, a copy of the file into a new
    // Vec, and (for a plain value) a copy of the value's own memory, which may read slower
    // than the file's bytes (it does here).
    let new_vec = best_of(
        runs,
        &mut [
            &mut || {
                values
                    .iter()
                    .for_each(|v| drop(rawarray_serde::to_vec(v).unwrap()))
            },
            &mut || {
                values
                    .iter()
                    .for_each(|v| drop(bincode().serialize(v).unwrap()))
            },
            &mut || {
                ours.iter()
                    .for_each(|b| drop(std::hint::black_box(b.to_vec())))
            },
            &mut || {
                values
                    .iter()
                    .for_each(|v| drop(std::hint::black_box(memory(v).to_vec())))
            },
        ],
    );
    // Into a Vec reused from run to run: to_writer and serialize_into.
    let mut sink = Vec::with_capacity(largest + 4096);
    let sink = std::cell::RefCell::new(&mut sink);
    let reused = best_of(
        runs,
        &mut [
            &mut || {
                for v in values {
                    let mut s = sink.borrow_mut();
                    s.clear();
                    rawarray_serde::to_writer(&mut **s, v).unwrap();
                }
            },
            &mut || {
                for v in values {
                    let mut s = sink.borrow_mut();
                    s.clear();
                    bincode().serialize_into(&mut **s, v).unwrap();
                }
            },
            &mut || {
                for b in &ours {
                    let mut s = sink.borrow_mut();
                    s.clear();
                    s.extend_from_slice(b);
                    std::hint::black_box(&*s);
                }
            },
        ],
    );
    let read = best_of(
        runs,
        &mut [
            &mut || {
                ours.iter()
                    .for_each(|b| drop(rawarray_serde::from_slice::<T>(b).unwrap()))
            },
            &mut || {
                bins.iter()
                    .for_each(|b| drop(bincode().deserialize::<T>(b).unwrap()))
            },
            &mut || {
                ours.iter()
                    .for_each(|b| drop(std::hint::black_box(b.to_vec())))
            },
        ],
    );
    row(
        name,
        "write: `to_vec` / `serialize`",
        mib,
        [new_vec[0], new_vec[1], new_vec[2]],
    );
    row(
        name,
        "write: `to_writer` / `serialize_into` a reused `Vec`",
        mib,
        [reused[0], reused[1], reused[2]],
    );
    row(
        name,
        "read: `from_slice` / `deserialize`",
        mib,
        [read[0], read[1], read[2]],
    );
    if !memory(&values[0]).is_empty() {
        row(
            name,
            "write: `to_vec` / `serialize`, raw: a copy of the value's memory",
            mib,
            [new_vec[0], new_vec[1], new_vec[3]],
        );
    }
}

fn foo(i: usize) -> Foo {
    Foo {
        info: [i as u8; 12],
        index: i as u32,
        v: std::array::from_fn(|k| (i + k) as f64),
    }
}

fn main() {
    let mib: usize = std::env::var("RA_BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let floats_per_mib = (1 << 20) / 4;
    // 3 Mi records in 256 MiB: 12 Ki records per MiB of the workload.
    let foos_per_mib = 3 * (1 << 20) / 256;
    println!(
        "serde path vs bincode 1 (fixint) and a raw copy; target: ours >= 2x bincode's throughput"
    );
    println!();
    println!("| workload | operation | ours MiB/s | bincode MiB/s | raw copy MiB/s | ours / bincode throughput | bincode / raw time |");
    println!("|---|---|---:|---:|---:|---:|---:|");

    let chunks: Vec<Vec<f32>> = (0..mib)
        .map(|c| {
            (0..floats_per_mib)
                .map(|i| (c * floats_per_mib + i) as f32 * 0.25)
                .collect()
        })
        .collect();
    let floats_memory: fn(&Vec<f32>) -> &[u8] = |v| bytemuck::cast_slice(v);
    bench(
        &format!("`Vec<f32>`, {mib} values of 1 MiB"),
        &chunks,
        7,
        floats_memory,
    );
    drop(chunks);
    let chunks: Vec<Vec<Foo>> = (0..mib)
        .map(|c| {
            (0..foos_per_mib)
                .map(|i| foo(c * foos_per_mib + i))
                .collect()
        })
        .collect();
    bench(
        &format!(
            "`Vec<Foo>`, {mib} values of {} Ki records",
            foos_per_mib >> 10
        ),
        &chunks,
        7,
        |_| &[],
    );
    drop(chunks);

    let floats: Vec<f32> = (0..mib * floats_per_mib).map(|i| i as f32 * 0.25).collect();
    bench(
        &format!("`Vec<f32>`, one value of {mib} MiB"),
        std::slice::from_ref(&floats),
        3,
        floats_memory,
    );
    drop(floats);
    let foos: Vec<Foo> = (0..mib * foos_per_mib).map(foo).collect();
    bench(
        &format!("`Vec<Foo>`, one value of {} Ki records", foos.len() >> 10),
        std::slice::from_ref(&foos),
        3,
        |_| &[],
    );
}
