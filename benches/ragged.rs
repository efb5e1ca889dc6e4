//! Ragged arrays against the hand-made way a user stores them today: the same `f32` values as
//! a flat `RawArray` plus a separate `RawArray` of `u64` offsets, two files.
//!
//! - write and read: 10 M rows (lengths drawn from 0 to 64, about 1.2 GiB of values) through
//!   `Ragged::write_file` / `Ragged::read_file`, and appended by a `RaggedWriter` (a flush per
//!   4096 rows; by default its offsets region grows as it fills, each time rewriting the
//!   file; with `reserve_rows(n)` never), against `RawArray::write_file` / `read_file` of values and offsets. Target:
//!   at most 1.1x the baseline's time.
//! - row k: `RaggedReader::open` + `row(n / 2)` of a 1 GiB ragged file (sparse: real rows
//!   around the middle, a trailer). Target: under 100 us, as for records.
//!
//! Every write is timed until its files are durable (`sync_all` at its end, ours and the
//! baseline's alike): neither a whole-file write of a new file nor a `RaggedWriter` syncs by
//! itself.
//!
//! Best of 3 runs after a warm-up run, in the same run as the baseline. Run:
//! `cargo bench --bench ragged` (`RA_BENCH_ROWS=100000` for a quick run; files go to
//! target/tmp, or to `RA_BENCH_DIR`, such as /dev/shm to leave the disk out).

use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rawarray_serde::{
    ElType, Ragged, RaggedHeader, RaggedOptions, RaggedReader, RaggedWriter, RawArray,
};

const RUNS: usize = 3;

/// Rows appended between flushes.
const BATCH: usize = 4096;

/// Runs `job` once untimed and `RUNS` times timed, `settle` after each: the best time.
fn best(job: &mut dyn FnMut(), settle: &dyn Fn()) -> Duration {
    let mut best = Duration::MAX;
    for run in 0..=RUNS {
        let t = Instant::now();
        job();
        let took = t.elapsed();
        if run > 0 {
            best = best.min(took);
        }
        settle();
    }
    best
}

fn main() {
    let n: usize = std::env::var("RA_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u64);
    for _ in 0..n {
        let len = next() % 65;
        offsets.push(offsets[offsets.len() - 1] + len);
    }
    let m = offsets[n] as usize;
    let values: Vec<f32> = (0..m).map(|i| i as f32 * 0.25).collect();
    let ragged = Ragged::from_parts(offsets.clone(), values.clone()).unwrap();
    let (flat, offs) = (RawArray::from_vec(values), RawArray::from_vec(offsets));
    let mib = (4 * m + 8 * (n + 1)) as f64 / f64::from(1 << 20);

    // RA_BENCH_DIR=/dev/shm takes the disk out of the times (fsync is then free).
    let dir = tempfile::tempdir_in(
        std::env::var_os("RA_BENCH_DIR").unwrap_or_else(|| env!("CARGO_TARGET_TMPDIR").into()),
    )
    .unwrap();
    let path = |name: &str| dir.path().join(name);
    let (r_ours, r_values, r_offsets) = (path("r.ra"), path("values.ra"), path("offsets.ra"));
    let (w_ours, w_values, w_offsets) = (path("w.ra"), path("w_values.ra"), path("w_offsets.ra"));
    ragged.write_file(&r_ours).unwrap();
    flat.write_file(&r_values).unwrap();
    offs.write_file(&r_offsets).unwrap();
    assert_eq!(Ragged::<f32>::read_file(&r_ours).unwrap(), ragged);
    // Writes go to fresh files, deleted untimed after each run and followed by a `sync`.
    let settle = || {
        for f in [&w_ours, &w_values, &w_offsets] {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::process::Command::new("sync").status();
    };

    // Every write is timed until its files are durable (`sync_all` at the end), so that the
    // rows compare equal work: neither a whole-file write of a new file nor a `RaggedWriter`'s
    // flush syncs by itself.
    let durable = |p: &Path| File::open(p).unwrap().sync_all().unwrap();
    let t_base_w = best(
        &mut || {
            flat.write_file(&w_values).unwrap();
            offs.write_file(&w_offsets).unwrap();
            durable(&w_values);
            durable(&w_offsets);
        },
        &settle,
    );
    let t_ours_w = best(
        &mut || {
            ragged.write_file(&w_ours).unwrap();
            durable(&w_ours);
        },
        &settle,
    );
    let append = |opts: &RaggedOptions| {
        let mut w = RaggedWriter::<f32>::create_with(&w_ours, opts).unwrap();
        for (k, row) in ragged.iter().enumerate() {
            w.append_row(row).unwrap();
            if k % BATCH == BATCH - 1 {
                w.flush().unwrap();
            }
        }
        w.finish().unwrap();
        durable(&w_ours);
    };
    let t_append = best(&mut || append(&RaggedOptions::new()), &settle);
    let reserved = RaggedOptions::new().reserve_rows(n as u64);
    let t_reserved = best(&mut || append(&reserved), &settle);
    let t_base_r = best(
        &mut || {
            black_box(RawArray::<f32>::read_file(&r_values).unwrap());
            black_box(RawArray::<u64>::read_file(&r_offsets).unwrap());
        },
        &settle,
    );
    let t_ours_r = best(
        &mut || {
            black_box(Ragged::<f32>::read_file(&r_ours).unwrap());
        },
        &settle,
    );
    drop((ragged, flat, offs));

    println!(
        "{n} rows of f32 (lengths 0 to 64), {m} values, {mib:.0} MiB; best of {RUNS} runs after a \
         warm-up; baseline: the values and the offsets as two RawArray files; every write timed \
         until its files are durable (`sync_all` at its end)\n"
    );
    println!("| workload | ours | MiB/s | baseline | MiB/s | time vs baseline (target <= 1.1) |");
    println!("|---|---|---:|---|---:|---:|");
    let row = |what: &str, ours: &str, t: Duration, base: &str, tb: Duration| {
        println!(
            "| {what} | {ours} | {:.0} | {base} | {:.0} | {:.2}x |",
            mib / t.as_secs_f64(),
            mib / tb.as_secs_f64(),
            t.as_secs_f64() / tb.as_secs_f64()
        );
    };
    let base_w = "`RawArray::write_file` x 2";
    row("write", "`Ragged::write_file`", t_ours_w, base_w, t_base_w);
    row(
        "write",
        "`RaggedWriter`, a flush per 4096 rows",
        t_append,
        base_w,
        t_base_w,
    );
    row(
        "write",
        "`RaggedWriter`, `reserve_rows(n)`, a flush per 4096 rows",
        t_reserved,
        base_w,
        t_base_w,
    );
    row(
        "read",
        "`Ragged::read_file`",
        t_ours_r,
        "`RawArray::read_file` x 2",
        t_base_r,
    );

    let gib = path("big.ra");
    let (rows, k) = make_sparse_file(&gib, 1 << 30);
    let mut times: Vec<Duration> = (0..50)
        .map(|_| {
            let t = Instant::now();
            let r = RaggedReader::<f32>::open(&gib).unwrap();
            let row = r.row(k).unwrap();
            let t = t.elapsed();
            assert_eq!(row.len(), 16);
            assert_eq!(row[3], k as f32 + 3.0);
            assert_eq!(r.rows(), rows);
            t
        })
        .collect();
    times.sort();
    println!("\n| open + row(n / 2) | file size | best | median of 50 | target |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| `RaggedReader::open` + `row` | {} MiB | {:.1} us | {:.1} us | < 100 us |",
        std::fs::metadata(&gib).unwrap().len() >> 20,
        times[0].as_secs_f64() * 1e6,
        times[25].as_secs_f64() * 1e6
    );
}

/// A ragged file of `f32` rows of 16 values, `bytes` of values, whose offsets and values are
/// holes except the first and last offsets and rows around the middle, with a trailer:
/// created in milliseconds whatever its size. Returns the rows and the middle row.
fn make_sparse_file(path: &Path, bytes: u64) -> (usize, usize) {
    let rows = bytes / 64;
    let h = RaggedHeader::new(ElType::Float, 4, vec![], rows * 16, rows, rows + 1).unwrap();
    let f = File::create(path).unwrap();
    f.write_all_at(&h.encode(), 0).unwrap();
    let word = |k: u64, v: u64| f.write_all_at(&v.to_le_bytes(), h.offsets_at() + 8 * k);
    word(0, 0).unwrap();
    word(rows, rows * 16).unwrap();
    let mid = rows / 2;
    for k in mid - 8..mid + 8 {
        word(k, k * 16).unwrap();
        let row: Vec<u8> = (0..16)
            .flat_map(|i| (k as f32 + i as f32).to_le_bytes())
            .collect();
        f.write_all_at(&row, h.values_at() + 64 * k).unwrap();
    }
    let trailer = rawarray_serde::Trailer::for_element::<f32>(serde_json::Value::Null).unwrap();
    f.write_all_at(&trailer.encode_block(h.data_end()), h.data_end())
        .unwrap();
    (rows as usize, mid as usize)
}
