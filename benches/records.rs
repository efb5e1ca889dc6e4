//! Throughput of derived records: 3 Mi records of `struct foo { char info[12]; uint32_t index;
//! double v[8]; }` (80 bytes each, 240 MiB) written to and read from a file, and to and from a
//! `Vec<u8>`, by
//!
//! - `packed`: `RawArray<Foo>`, `Foo` derived without `repr(C)` (field-by-field packing),
//! - `pod`: `RawArray<PodFoo>`, a `#[repr(C)]` `Pod` struct (the one-copy path),
//! - `raw`: one `write_all` / one `read_exact` of the `Pod` bytes,
//! - `bincode`: bincode 1 with fixed-width integers (also 80 bytes a record) through serde.
//!
//! Best of 3 runs each, after a warm-up run of the same workload. Prints MiB/s, the time
//! relative to `raw`, and the targets: `pod` within 1.1x of `raw`, `packed` at least 2.5x
//! `bincode`'s throughput.
//!
//! Run: `cargo bench --bench records` (`RA_BENCH_RECORDS=100000` for a quick run,
//! `RA_BENCH_ONLY=packed` to time only the workloads whose name contains `packed`,
//! `RA_BENCH_VERBOSE=1` to print every run's time; run 0 is the untimed warm-up).

use std::fs::File;
use std::hint::black_box;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use bincode::Options;
use rawarray_serde::{RaRecord, RawArray};
use serde::{Deserialize, Serialize};

#[derive(RaRecord, Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct PodFoo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

const RUNS: usize = 3;

fn bincode_opts() -> impl Options {
    bincode::DefaultOptions::new().with_fixint_encoding()
}

/// Timed workloads, each run `RUNS` times round-robin; the best time of each is kept.
struct Bench<'a> {
    names: Vec<&'static str>,
    jobs: Vec<Box<dyn FnMut() + 'a>>,
}

impl<'a> Bench<'a> {
    fn add(&mut self, name: &'static str, job: impl FnMut() + 'a) {
        if let Ok(only) = std::env::var("RA_BENCH_ONLY") {
            if !name.contains(&only) {
                return;
            }
        }
        self.names.push(name);
        self.jobs.push(Box::new(job));
    }

    /// Runs each job once untimed, then `RUNS` times timed, before the next job: a job's
    /// timed runs follow a run of the same job, not whatever another job left behind (a big
    /// `free`, dirty pages); `settle` runs untimed after every run.
    fn run(mut self, settle: impl Fn()) -> Vec<(&'static str, Duration)> {
        let verbose = std::env::var_os("RA_BENCH_VERBOSE").is_some();
        let mut best = vec![Duration::MAX; self.jobs.len()];
        for (j, job) in self.jobs.iter_mut().enumerate() {
            for run in 0..=RUNS {
                let t = Instant::now();
                job();
                let took = t.elapsed();
                if verbose {
                    eprintln!("{} run {run}: {took:?}", self.names[j]);
                }
                if run > 0 {
                    best[j] = best[j].min(took);
                }
                settle();
            }
        }
        self.names.into_iter().zip(best).collect()
    }
}

fn read_all(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn main() {
    let n: usize = std::env::var("RA_BENCH_RECORDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3 << 20);
    let foos: Vec<Foo> = (0..n)
        .map(|i| Foo {
            info: std::array::from_fn(|k| (i + k) as u8),
            index: i as u32,
            v: std::array::from_fn(|k| i as f64 * 0.5 + k as f64),
        })
        .collect();
    let pods: Vec<PodFoo> = foos
        .iter()
        .map(|f| PodFoo {
            info: f.info,
            index: f.index,
            v: f.v,
        })
        .collect();
    let packed = RawArray::from_vec(foos);
    let pod = RawArray::from_vec(pods);
    let raw_bytes: &[u8] = bytemuck::cast_slice(pod.as_slice());
    let mib = raw_bytes.len() as f64 / f64::from(1 << 20);

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = |name: &str| dir.path().join(name);
    // Reads start from these files; writes go to fresh files (`w_*`), deleted untimed after each
    // job and followed by a `sync`, so that no write pays for truncating an old file or shares
    // the machine (two cores) with the kernel writing back an earlier job's pages.
    let (f_packed, f_pod, f_raw, f_bincode) = (
        path("packed.ra"),
        path("pod.ra"),
        path("raw.bin"),
        path("bincode.bin"),
    );
    let (w_packed, w_pod, w_raw, w_bincode) = (
        path("w_packed.ra"),
        path("w_pod.ra"),
        path("w_raw.bin"),
        path("w_bincode.bin"),
    );

    // The files and buffers the reads start from; every form holds the same values.
    packed.write_to(File::create(&f_packed).unwrap()).unwrap();
    pod.write_to(File::create(&f_pod).unwrap()).unwrap();
    std::fs::write(&f_raw, raw_bytes).unwrap();
    bincode_opts()
        .serialize_into(
            BufWriter::new(File::create(&f_bincode).unwrap()),
            packed.as_slice(),
        )
        .unwrap();
    for f in [&f_packed, &f_pod, &f_raw, &f_bincode] {
        File::open(f).unwrap().sync_all().unwrap();
    }
    let m_ra = read_all(&f_packed);
    let m_bincode = read_all(&f_bincode);
    assert_eq!(m_ra, read_all(&f_pod), "both paths write the same file");
    assert_eq!(&m_ra[56..], raw_bytes, "the data section is the raw bytes");
    assert_eq!(
        m_bincode.len(),
        8 + raw_bytes.len(),
        "bincode: length + 80 bytes a record"
    );
    assert_eq!(RawArray::<Foo>::read_file(&f_packed).unwrap(), packed);
    assert_eq!(RawArray::<PodFoo>::read_file(&f_pod).unwrap(), pod);
    let decoded: Vec<Foo> = bincode_opts().deserialize(&m_bincode).unwrap();
    assert_eq!(decoded, packed.as_slice());
    drop(decoded);

    let mut b = Bench {
        names: Vec::new(),
        jobs: Vec::new(),
    };
    // Writes to a new file (page cache, no fsync for anyone).
    b.add("write file  raw", || {
        File::create(&w_raw).unwrap().write_all(raw_bytes).unwrap();
    });
    b.add("write file  pod", || {
        pod.write_to(File::create(&w_pod).unwrap()).unwrap();
    });
    b.add("write file  packed", || {
        packed.write_to(File::create(&w_packed).unwrap()).unwrap();
    });
    b.add("write file  bincode", || {
        let mut w = BufWriter::new(File::create(&w_bincode).unwrap());
        bincode_opts()
            .serialize_into(&mut w, packed.as_slice())
            .unwrap();
        w.flush().unwrap();
    });
    // Reads from a file into the final values.
    b.add("read file   raw", || {
        let mut v: Vec<PodFoo> = bytemuck::zeroed_vec(n);
        File::open(&f_raw)
            .unwrap()
            .read_exact(bytemuck::cast_slice_mut(&mut v))
            .unwrap();
        black_box(v);
    });
    b.add("read file   pod", || {
        black_box(RawArray::<PodFoo>::read_file(&f_pod).unwrap());
    });
    b.add("read file   packed", || {
        black_box(RawArray::<Foo>::read_file(&f_packed).unwrap());
    });
    b.add("read file   bincode", || {
        let r = BufReader::new(File::open(&f_bincode).unwrap());
        let v: Vec<Foo> = bincode_opts().deserialize_from(r).unwrap();
        black_box(v);
    });
    // The same in memory.
    b.add("to bytes    raw", || {
        black_box(raw_bytes.to_vec());
    });
    b.add("to bytes    pod", || {
        black_box(pod.to_bytes());
    });
    b.add("to bytes    packed", || {
        black_box(packed.to_bytes());
    });
    b.add("to bytes    bincode", || {
        black_box(bincode_opts().serialize(packed.as_slice()).unwrap());
    });
    b.add("from bytes  raw", || {
        let mut v: Vec<PodFoo> = bytemuck::zeroed_vec(n);
        bytemuck::cast_slice_mut(&mut v).copy_from_slice(&m_ra[56..]);
        black_box(v);
    });
    b.add("from bytes  pod", || {
        black_box(RawArray::<PodFoo>::from_bytes(&m_ra).unwrap());
    });
    b.add("from bytes  packed", || {
        black_box(RawArray::<Foo>::from_bytes(&m_ra).unwrap());
    });
    b.add("from bytes  bincode", || {
        let v: Vec<Foo> = bincode_opts().deserialize(&m_bincode).unwrap();
        black_box(v);
    });
    let results = b.run(|| {
        for f in [&w_packed, &w_pod, &w_raw, &w_bincode] {
            let _ = std::fs::remove_file(f);
        }
        // Let the kernel finish any writeback before the next job (best effort).
        let _ = std::process::Command::new("sync").status();
    });

    let time = |name: &str| {
        results
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(f64::NAN, |(_, t)| t.as_secs_f64())
    };
    println!(
        "{n} records of Foo, {mib:.0} MiB; best of {RUNS} runs after a warm-up\n\n\
         | workload | MiB/s | time vs raw |\n|---|---:|---:|"
    );
    for (name, t) in &results {
        let raw = time(&format!("{} raw", &name[..11]));
        println!(
            "| {name} | {:.0} | {:.2}x |",
            mib / t.as_secs_f64(),
            t.as_secs_f64() / raw
        );
    }
    println!("\ntargets:");
    for way in ["write file ", "read file  ", "to bytes   ", "from bytes "] {
        let pod_vs_raw = time(&format!("{way} pod")) / time(&format!("{way} raw"));
        let packed_vs_bincode = time(&format!("{way} bincode")) / time(&format!("{way} packed"));
        println!(
            "  {way}: pod {pod_vs_raw:.2}x raw's time (target <= 1.10: {}); \
             packed {packed_vs_bincode:.2}x bincode's throughput (target >= 2.5: {})",
            verdict(pod_vs_raw <= 1.10),
            verdict(packed_vs_bincode >= 2.5)
        );
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}
