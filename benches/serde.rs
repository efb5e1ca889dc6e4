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
//! A third part reads and writes **files** (in the page cache), as the issue measured them:
//! `from_file` and `from_reader(BufReader<File>)` against `read_exact` into a fresh `Vec` in
//! the same run, `to_writer(BufWriter<File>)` against a raw `write_all` of the same bytes, the
//! medians of 5 round-robin runs; and the peak heap of `from_reader` against the value's size,
//! seen by a counting global allocator.
//!
//! Run: `cargo bench --bench serde` (`RA_BENCH_MIB=64` for a smaller run; `RA_BENCH_PART=files`
//! or `RA_BENCH_PART=memory` for one part).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use bincode::Options;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

// The tests' counting allocator (per thread; this bench measures on its main thread).
#[path = "../rawarray-serde/tests/common/counting.rs"]
mod counting;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

/// Peak heap bytes while `f` runs, the result of `f` included.
fn peak_heap<R>(f: impl FnOnce() -> R) -> usize {
    counting::peak(f)
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
    let mib = ours.iter().map(Vec::len).sum::<usize>() as f64 / f64::from(1 << 20);
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
                    .for_each(|v| drop(rawarray_serde::to_vec(v).unwrap()));
            },
            &mut || {
                values
                    .iter()
                    .for_each(|v| drop(bincode().serialize(v).unwrap()));
            },
            &mut || {
                ours.iter()
                    .for_each(|b| drop(std::hint::black_box(b.clone())));
            },
            &mut || {
                values
                    .iter()
                    .for_each(|v| drop(std::hint::black_box(memory(v).to_vec())));
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
                    .for_each(|b| drop(rawarray_serde::from_slice::<T>(b).unwrap()));
            },
            &mut || {
                bins.iter()
                    .for_each(|b| drop(bincode().deserialize::<T>(b).unwrap()));
            },
            &mut || {
                ours.iter()
                    .for_each(|b| drop(std::hint::black_box(b.clone())));
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
    let part = std::env::var("RA_BENCH_PART").unwrap_or_default();
    if part != "files" {
        memory_part(mib);
    }
    if part != "memory" {
        files_part(mib);
    }
}

const FLOATS_PER_MIB: usize = (1 << 20) / 4;
/// 3 Mi records in 256 MiB: 12 Ki records per MiB of the workload.
const FOOS_PER_MIB: usize = 3 * (1 << 20) / 256;

fn memory_part(mib: usize) {
    let floats_per_mib = FLOATS_PER_MIB;
    let foos_per_mib = FOOS_PER_MIB;
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

/// Runs the closures round-robin `runs` times; the median time of each.
fn median_of(runs: usize, fs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut times = vec![Vec::new(); fs.len()];
    for _ in 0..runs {
        for (f, t) in fs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            f();
            t.push(start.elapsed());
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect()
}

/// The least a read of a file can do: its length, one allocation, one `read_exact`.
fn read_exact_fresh(path: &Path) -> Vec<u8> {
    let mut f = File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let mut v = vec![0u8; len];
    f.read_exact(&mut v).unwrap();
    v
}

/// One row of the files table: ours against the baseline, as MiB/s and a ratio of times.
fn file_row(name: &str, op: &str, baseline: &str, mib: f64, ours: Duration, base: Duration) {
    let mbs = |d: Duration| mib / d.as_secs_f64();
    println!(
        "| {name} | {op} | {baseline} | {:.0} | {:.0} | **{:.2}x** |",
        mbs(ours),
        mbs(base),
        ours.as_secs_f64() / base.as_secs_f64()
    );
}

/// The reads and writes of one workload, through files in the page cache.
fn files<T>(name: &str, value: &T, dir: &Path, value_bytes: usize)
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let ours = dir.join("ours.ra");
    let bin = dir.join("bincode.bin");
    rawarray_serde::to_file(&ours, value).unwrap();
    std::fs::write(&bin, bincode().serialize(value).unwrap()).unwrap();
    assert!(rawarray_serde::from_file::<T>(&ours).unwrap() == *value);
    let file_bytes = std::fs::read(&ours).unwrap();
    let mib = file_bytes.len() as f64 / f64::from(1 << 20);
    // Warm the page cache.
    drop(read_exact_fresh(&ours));
    drop(read_exact_fresh(&bin));

    let from_reader = || -> T {
        rawarray_serde::from_reader(BufReader::new(File::open(&ours).unwrap())).unwrap()
    };
    let reads = median_of(
        5,
        &mut [
            &mut || drop(std::hint::black_box(read_exact_fresh(&ours))),
            &mut || {
                drop(std::hint::black_box(
                    rawarray_serde::from_file::<T>(&ours).unwrap(),
                ));
            },
            &mut || drop(std::hint::black_box(from_reader())),
            &mut || {
                let r = BufReader::new(File::open(&bin).unwrap());
                drop(std::hint::black_box(
                    bincode().deserialize_from::<_, T>(r).unwrap(),
                ));
            },
        ],
    );
    let out = dir.join("out.ra");
    let raw_out = dir.join("raw.ra");
    let writes = median_of(
        5,
        &mut [
            &mut || {
                let mut w = BufWriter::new(File::create(&out).unwrap());
                rawarray_serde::to_writer(&mut w, value).unwrap();
                w.flush().unwrap();
            },
            &mut || {
                let mut f = File::create(&raw_out).unwrap();
                f.write_all(&file_bytes).unwrap();
            },
        ],
    );
    let peak = peak_heap(from_reader);
    // What the value holds: serde's own `Vec` (of records) grows by doubling past its length.
    let held = counting::held(from_reader);
    let base = "`read_exact` into a fresh `Vec`";
    file_row(name, "`from_file`", base, mib, reads[1], reads[0]);
    file_row(
        name,
        "`from_reader(BufReader<File>)`",
        base,
        mib,
        reads[2],
        reads[0],
    );
    file_row(
        name,
        "bincode 1 `deserialize_from(BufReader<File>)`",
        base,
        mib,
        reads[3],
        reads[0],
    );
    file_row(
        name,
        "`to_writer(BufWriter<File>)`",
        "`write_all` of the same bytes",
        mib,
        writes[0],
        writes[1],
    );
    let mib_of = |b: usize| b as f64 / f64::from(1 << 20);
    println!(
        "| {name} | peak heap of `from_reader` | the value's data ({:.1} MiB) | | | **{:.3}x**: {:.1} MiB, of which {:.1} MiB held by the value |",
        mib_of(value_bytes),
        peak as f64 / value_bytes as f64,
        mib_of(peak),
        mib_of(held),
    );
}

fn files_part(mib: usize) {
    let dir = tempfile::tempdir().unwrap();
    println!();
    println!(
        "files in the page cache: medians of 5 round-robin runs; ratio = time / baseline time"
    );
    println!();
    println!("| workload | operation | baseline | ours MiB/s | baseline MiB/s | ratio (time) |");
    println!("|---|---|---|---:|---:|---:|");
    let floats: Vec<f32> = (0..mib * FLOATS_PER_MIB).map(|i| i as f32 * 0.25).collect();
    files(
        &format!("`Vec<f32>`, {mib} MiB"),
        &floats,
        dir.path(),
        std::mem::size_of_val(floats.as_slice()),
    );
    drop(floats);
    let foos: Vec<Foo> = (0..mib * FOOS_PER_MIB).map(foo).collect();
    files(
        &format!("`Vec<Foo>`, {} Ki records", foos.len() >> 10),
        &foos,
        dir.path(),
        std::mem::size_of_val(foos.as_slice()),
    );
}
