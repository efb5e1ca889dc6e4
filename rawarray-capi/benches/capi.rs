//! The C API against the Rust API and against HDF5's C library, on the same data: a 256 MiB
//! `f32` array written and read whole, and 3 Mi records appended (1024 a call, a flush every
//! 64 Ki) and read back, plain and compressed. Prints a table (best of `RA_BENCH_REPS`, default
//! 3, seconds) and each C API time over the Rust API's.
//!
//! Durability is equal on every side. Each write makes a new file (the last one is removed
//! first, as a program writing a series of snapshots does) and nothing is synced, which is how
//! HDF5 writes and how this library writes a new file or flushes records by default. The
//! "synced" rows write the array over the last file: this library then syncs before its
//! rename, and HDF5's file is synced after it is closed (written in place: a crash during the
//! write costs the old file). The "replaced" rows give HDF5 this library's guarantee, which is
//! what its equivalent setting is: a temporary file written, synced, renamed over the last
//! one, and the folder synced (this library's write is the same as in the synced rows).
//!
//! `cargo bench -p rawarray-capi --bench capi` (needs gcc and libhdf5-dev: installed with
//! apt-get when missing and run as root). The files go to `RA_BENCH_DIR` (default: a folder
//! under the target directory, on disk).

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rawarray_serde::{
    ArrayReader, RaRecord, RawArray, RecordOptions, RecordReader, RecordWriter, WriteOptions,
};

const NX: u64 = 512;
const NY: u64 = 512;
const NZ: u64 = 256;
const NREC: usize = 3 << 20;
const BATCH: usize = 1024;
const FLUSH: usize = 64 << 10;

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Sample {
    step: u64,
    position: [f32; 3],
    energy: f64,
}

fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn opts(compressed: bool) -> WriteOptions {
    WriteOptions::for_name(if compressed { "zstd" } else { "plain" }).unwrap()
}

fn rust_times(dir: &Path, reps: usize) -> BTreeMap<String, f64> {
    // The values capi_hdf5.c writes.
    let n = (NX * NY * NZ) as usize;
    let field = RawArray::from_shape_vec(
        vec![NX, NY, NZ],
        (0..n)
            .map(|k| ((k % 1000) as f64 * 0.5 + (k / 262_144) as f64) as f32)
            .collect(),
    )
    .unwrap();
    let recs: Vec<Sample> = (0..NREC as u64)
        .map(|i| Sample {
            step: i,
            position: [i as f32 * 0.001, (i % 1000) as f32, -1.0],
            energy: (i % 4096) as f64 * 0.25,
        })
        .collect();
    let mut out = BTreeMap::new();
    let mut buf = vec![0f32; n];
    for compressed in [false, true] {
        let kind = if compressed { "compressed" } else { "plain" };
        let path = dir.join(format!("rust_{kind}.ra"));
        let t = best(reps, || {
            let _ = std::fs::remove_file(&path);
            field.write_file_with(&path, &opts(compressed)).unwrap();
        });
        out.insert(format!("array_write_{kind}"), t);
        // Over the last run's file: synced before the rename.
        let t = best(reps, || {
            field.write_file_with(&path, &opts(compressed)).unwrap();
        });
        out.insert(format!("array_write_synced_{kind}"), t);
        // The same write again, beside HDF5 replacing its file the same way (capi_hdf5.c).
        let t = best(reps, || {
            field.write_file_with(&path, &opts(compressed)).unwrap();
        });
        out.insert(format!("array_write_replaced_{kind}"), t);
        let ranges = [0..NX, 0..NY, 0..NZ];
        let t = best(reps, || {
            ArrayReader::open(&path)
                .unwrap()
                .read_subset_into(&ranges, &mut buf)
                .unwrap();
        });
        assert_eq!(buf, field.as_slice());
        out.insert(format!("array_read_{kind}"), t);

        let rpath = dir.join(format!("rust_records_{kind}.ra"));
        let t = best(reps, || {
            let _ = std::fs::remove_file(&rpath);
            let mut w: RecordWriter<Sample> = RecordOptions::new()
                .storage(opts(compressed))
                .create(&rpath)
                .unwrap();
            for (k, batch) in recs.chunks(BATCH).enumerate() {
                w.append_slice(batch).unwrap();
                if ((k + 1) * BATCH).is_multiple_of(FLUSH) {
                    w.flush().unwrap();
                }
            }
            w.finish().unwrap();
        });
        out.insert(format!("records_write_{kind}"), t);
        let mut back = Vec::new();
        let t = best(reps, || {
            back = RecordReader::<Sample>::open(&rpath)
                .unwrap()
                .slice(..)
                .unwrap()
                .into_owned();
        });
        assert_eq!(back, recs);
        out.insert(format!("records_read_{kind}"), t);
    }
    out
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs it with no argument: then only
    // say what it would do.
    if !std::env::args().any(|a| a == "--bench") {
        println!("capi bench: run with `cargo bench -p rawarray-capi --bench capi`");
        return;
    }
    let reps: usize = std::env::var("RA_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let base = std::env::var_os("RA_BENCH_DIR").map_or_else(
        || common::lib_dir().parent().unwrap().join("capi-bench"),
        std::path::PathBuf::from,
    );
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();

    // The C program: librawarray (this build, release) and HDF5.
    let gcc = common::gcc();
    let hdf5 = common::hdf5_flags();
    let lib = common::lib_dir();
    let exe = dir.path().join("capi_hdf5");
    let o = Command::new(gcc)
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(common::crate_dir().join("include"))
        .arg(common::crate_dir().join("benches/capi_hdf5.c"))
        .args(hdf5.split_whitespace())
        .arg(format!("-L{}", lib.display()))
        .arg("-lrawarray")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "compiling capi_hdf5.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    let rust = rust_times(dir.path(), reps);
    let o = Command::new(&exe)
        .arg(dir.path())
        .arg(reps.to_string())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "capi_hdf5: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut c: BTreeMap<(String, String), f64> = BTreeMap::new();
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let v: Vec<&str> = line.split_whitespace().collect();
        c.insert((v[0].to_string(), v[1].to_string()), v[2].parse().unwrap());
    }
    println!("256 MiB f32 array ({NX} x {NY} x {NZ}) and {NREC} records of 28 bytes (a 32-byte C struct); best of {reps}, seconds; files in {}", base.display());
    println!("writes make a new file, unsynced on every side; \"synced\": the array written over the last file, synced (this library before its rename, HDF5 after close, in place); \"replaced\": the same, HDF5 replacing its file as this library does (a temporary file synced, renamed over the last one, the folder synced), so a crash never costs the old file");
    println!("compressed: rawarray zstd level 3 + byte shuffle, chunks of about 1 MiB; HDF5 deflate level 1 + shuffle, chunks of 1 MiB (a plane; 32 Ki records)");
    println!();
    println!("| case | Rust API | C API | HDF5 | C API / Rust | HDF5 / C API |");
    println!("|---|---|---|---|---|---|");
    for case in [
        "array_write_plain",
        "array_write_synced_plain",
        "array_write_replaced_plain",
        "array_read_plain",
        "records_write_plain",
        "records_read_plain",
        "array_write_compressed",
        "array_write_synced_compressed",
        "array_write_replaced_compressed",
        "array_read_compressed",
        "records_write_compressed",
        "records_read_compressed",
    ] {
        let r = rust[case];
        let capi = c[&("capi".to_string(), case.to_string())];
        let h5 = c[&("hdf5".to_string(), case.to_string())];
        println!(
            "| {} | {r:.3} | {capi:.3} | {h5:.3} | {:.2} | {:.2} |",
            case.replace('_', " "),
            capi / r,
            h5 / capi
        );
    }
}
