//! Format-core throughput: a 256 MiB f32 array written and read by `RawArray` against the
//! plain standard-library calls on the same bytes, in the same run. Prints a table of ratios.
//!
//! Run: `cargo bench --bench core` (RA_BENCH_MIB=64 for a smaller array).

use std::fs::File;
use std::io::Read;
use std::time::{Duration, Instant};

use rawarray_serde::RawArray;

fn time<F: FnMut()>(f: &mut F) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// Best time of each of two operations over `runs` runs, alternating them so that neither
/// gets a warmer cache or a quieter machine.
fn best_of_pair<A: FnMut(), B: FnMut()>(runs: usize, mut a: A, mut b: B) -> (Duration, Duration) {
    (0..runs).fold((Duration::MAX, Duration::MAX), |(ta, tb), _| {
        (ta.min(time(&mut a)), tb.min(time(&mut b)))
    })
}

fn main() {
    let mib: usize = std::env::var("RA_BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let n = mib * (1 << 20) / 4;
    let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let array = RawArray::from_vec(values);
    let bytes = array.to_bytes();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ours = dir.path().join("ours.ra");
    let plain = dir.path().join("plain.bin");
    let runs = 5;

    let (write_ours, write_std) = best_of_pair(
        runs,
        || array.write_to(File::create(&ours).unwrap()).unwrap(),
        || std::fs::write(&plain, &bytes).unwrap(),
    );
    // A new file each time, the last one removed first (inside the timing on both sides).
    let (write_new, write_std_new) = best_of_pair(
        runs,
        || {
            let _ = std::fs::remove_file(&ours);
            array.write_file(&ours).unwrap();
        },
        || {
            let _ = std::fs::remove_file(&plain);
            std::fs::write(&plain, &bytes).unwrap();
        },
    );
    let (write_atomic, write_std_sync) = best_of_pair(
        runs,
        || array.write_file(&ours).unwrap(),
        || {
            let mut f = File::create(&plain).unwrap();
            std::io::Write::write_all(&mut f, &bytes).unwrap();
            f.sync_all().unwrap();
        },
    );
    assert_eq!(std::fs::read(&ours).unwrap(), bytes);

    let read_std = || {
        let mut f = File::open(&plain).unwrap();
        let len = f.metadata().unwrap().len() as usize;
        let mut v = vec![0u8; len];
        f.read_exact(&mut v).unwrap();
        std::hint::black_box(v);
    };
    let (read_ours, read_base) = best_of_pair(
        runs,
        || {
            let a: RawArray<f32> = RawArray::read_file(&ours).unwrap();
            std::hint::black_box(a);
        },
        read_std,
    );
    let (read_stream, read_base2) = best_of_pair(
        runs,
        || {
            let a: RawArray<f32> = RawArray::read_from(File::open(&ours).unwrap()).unwrap();
            std::hint::black_box(a);
        },
        read_std,
    );

    let mbs = |d: Duration| mib as f64 / d.as_secs_f64();
    println!("format core, {mib} MiB of f32, best of {runs} alternating runs");
    println!("| operation | ours | baseline | ours MiB/s | baseline MiB/s | ratio (ours/baseline time) |");
    println!("|---|---|---|---:|---:|---:|");
    let row = |op: &str, a: &str, b: &str, ours: Duration, base: Duration| {
        println!(
            "| {op} | {a} | {b} | {:.0} | {:.0} | {:.3} |",
            mbs(ours),
            mbs(base),
            ours.as_secs_f64() / base.as_secs_f64()
        );
    };
    row(
        "write",
        "`write_to(File)`",
        "`std::fs::write`",
        write_ours,
        write_std,
    );
    row(
        "write, a new file",
        "`write_file` (temp + rename; 64 MiB or more written on two threads)",
        "`std::fs::write`",
        write_new,
        write_std_new,
    );
    row(
        "write, durable",
        "`write_file` over the last run's file (temp + fsync + rename)",
        "`write_all` + `sync_all`",
        write_atomic,
        write_std_sync,
    );
    row(
        "read",
        "`RawArray::read_file`",
        "`read_exact` into a fresh `Vec`",
        read_ours,
        read_base,
    );
    row(
        "read, stream",
        "`RawArray::read_from(File)`",
        "`read_exact` into a fresh `Vec`",
        read_stream,
        read_base2,
    );
}
