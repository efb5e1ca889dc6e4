//! Appending records and opening record files, against the plain standard-library calls.
//!
//! - append: 3 Mi records of `struct foo { char info[12]; uint32_t index; double v[8]; }`
//!   (80 bytes, 240 MiB) in batches of 4096 with a flush per batch, through `RecordWriter`
//!   (`Pod` record: the one-copy path; and the same record packed field by field), against one
//!   `write_all` of the same bytes per batch, and (no fsync) against raw positioned writes in
//!   the file's own layout, after a 56-byte header, whose writes straddle pages as ours do.
//!   Both durability modes in the same run: the default
//!   (`Durability::NoFsync`: a flush commits for readers and survives a killed process; target:
//!   within 1.2x), then `Durability::Fsync` against an fsync per batch on the raw side (a tenth of
//!   the records: the disk sets the pace; ours syncs twice per flush, data then header, as
//!   surviving a power cut needs).
//! - open: `RecordReader::open` + `get(len / 2)` on files of 16 MiB and 1 GiB (the large one
//!   sparse, with real records around the middle and a trailer). Target: under 100 us.
//!
//! Best of 3 alternating runs. Run: `cargo bench --bench append`
//! (`RA_BENCH_RECORDS=262144` for a quick run).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use rawarray_serde::{
    Durability, Element, Header, RaRecord, RecordOptions, RecordReader, RecordWriter, Trailer,
};

#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct PodFoo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

/// The same fields without `repr(C)`: packed field by field.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

const BATCH: usize = 4096;
const RUNS: usize = 3;

fn pod_foo(i: usize) -> PodFoo {
    let mut info = [b' '; 12];
    info[..4].copy_from_slice(&(i as u32).to_le_bytes());
    PodFoo {
        info,
        index: i as u32,
        v: std::array::from_fn(|k| i as f64 + k as f64 * 0.5),
    }
}

/// Times `f` into `best`, after deleting `path` untimed: tearing down the previous run's file
/// (its dirty pages, perhaps still being written back) is not the contender's cost, and a
/// contender whose file was written just before would otherwise pay more of it.
fn best<F: FnMut()>(path: &Path, f: &mut F, best: &mut Duration) {
    let _ = std::fs::remove_file(path);
    let t = Instant::now();
    f();
    *best = (*best).min(t.elapsed());
}

/// Appends through a writer with `durability`, or the default options' (`None`).
fn append_with<T: Element>(path: &Path, records: &[T], durability: Option<Durability>) {
    let opts = match durability {
        Some(d) => RecordOptions::new().durability(d),
        None => RecordOptions::new(),
    };
    let mut w: RecordWriter<T> = opts
        .params(serde_json::json!({"bench": "append"}))
        .create(path)
        .unwrap();
    for batch in records.chunks(BATCH) {
        w.append_slice(batch).unwrap();
        w.flush().unwrap();
    }
    w.finish().unwrap();
}

/// Raw appends in the record file's layout: the batches after a 56-byte header, so that every
/// write starts inside a page, as ours do (the data section is not page-aligned).
fn raw_write_after_header(path: &Path, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = File::create(path).unwrap();
    f.write_all_at(&[0u8; 56], 0).unwrap();
    let mut at = 56u64;
    for batch in bytes.chunks(BATCH * 80) {
        f.write_all_at(batch, at).unwrap();
        at += batch.len() as u64;
    }
}

fn raw_write(path: &Path, bytes: &[u8], sync: bool) {
    let mut f = File::create(path).unwrap();
    for batch in bytes.chunks(BATCH * 80) {
        f.write_all(batch).unwrap();
        if sync {
            f.sync_data().unwrap();
        }
    }
}

fn mib_s(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / f64::from(1 << 20) / t.as_secs_f64()
}

fn main() {
    let n: usize = std::env::var("RA_BENCH_RECORDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3 << 20);
    let pods: Vec<PodFoo> = (0..n).map(pod_foo).collect();
    let packed: Vec<Foo> = pods
        .iter()
        .map(|p| Foo {
            info: p.info,
            index: p.index,
            v: p.v,
        })
        .collect();
    let bytes: Vec<u8> = bytemuck::cast_slice(&pods).to_vec();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (ours, plain) = (dir.path().join("ours.ra"), dir.path().join("plain.bin"));

    println!("append: records of 80 bytes, batches of {BATCH}, a flush per batch, best of {RUNS}");
    println!("| workload | ours | baseline | ours MiB/s | baseline MiB/s | ratio (time) |");
    println!("|---|---|---|---:|---:|---:|");
    for (label, sync) in [("default (no fsync)", false), ("Durability::Fsync", true)] {
        let durability = sync.then_some(Durability::Fsync);
        // With fsync the disk sets the pace: a tenth of the records is enough.
        let m = if sync { (n / 10).max(BATCH) } else { n };
        let (pods, packed, bytes) = (&pods[..m], &packed[..m], &bytes[..m * 80]);
        let (mut t_pod, mut t_packed, mut t_raw) = (Duration::MAX, Duration::MAX, Duration::MAX);
        let mut t_layout = Duration::MAX;
        for _ in 0..RUNS {
            best(
                &ours,
                &mut || append_with(&ours, pods, durability),
                &mut t_pod,
            );
            best(&plain, &mut || raw_write(&plain, bytes, sync), &mut t_raw);
            if !sync {
                best(
                    &plain,
                    &mut || raw_write_after_header(&plain, bytes),
                    &mut t_layout,
                );
            }
            best(
                &ours,
                &mut || append_with(&ours, packed, durability),
                &mut t_packed,
            );
        }
        let on_disk = std::fs::read(&ours).unwrap();
        let start = Header::decode(&on_disk).unwrap().encoded_len();
        assert_eq!(&on_disk[start..start + bytes.len()], bytes);
        let baseline = if sync {
            "`write_all` + `sync_data` per batch"
        } else {
            "`write_all` per batch"
        };
        let label = format!("{label}, {} MiB", bytes.len() >> 20);
        for (what, t) in [("Pod record", t_pod), ("packed record", t_packed)] {
            println!(
                "| append, {label}, {what} | `append_slice` + `flush` | {baseline} | {:.0} | {:.0} | {:.2} |",
                mib_s(bytes.len(), t),
                mib_s(bytes.len(), t_raw),
                t.as_secs_f64() / t_raw.as_secs_f64()
            );
        }
        if !sync {
            println!(
                "| append, {label}, Pod record | `append_slice` + `flush` | `write_all_at` per batch after a 56-byte header | {:.0} | {:.0} | {:.2} |",
                mib_s(bytes.len(), t_pod),
                mib_s(bytes.len(), t_layout),
                t_pod.as_secs_f64() / t_layout.as_secs_f64()
            );
        }
    }
    drop((pods, packed, bytes));

    println!();
    println!("| open + get(len / 2) | file size | best | median of 50 |");
    println!("|---|---:|---:|---:|");
    for mib in [16u64, 1024] {
        let path = dir.path().join(format!("open_{mib}.ra"));
        let records = (mib << 20) / 80;
        make_sparse_file(&path, records);
        let mut times: Vec<Duration> = (0..50)
            .map(|_| {
                let t = Instant::now();
                let r = RecordReader::<PodFoo>::open(&path).unwrap();
                let rec = r.get(r.len() / 2).unwrap().unwrap();
                let t = t.elapsed();
                assert_eq!(rec, pod_foo(records as usize / 2));
                assert!(r.trailer().is_some());
                t
            })
            .collect();
        times.sort();
        println!(
            "| `RecordReader::open` + `get` | {} MiB | {:.1} us | {:.1} us |",
            std::fs::metadata(&path).unwrap().len() >> 20,
            times[0].as_secs_f64() * 1e6,
            times[25].as_secs_f64() * 1e6
        );
        std::fs::remove_file(&path).unwrap();
    }
}

/// A record file of `records` PodFoo whose data is a hole except a few records around the
/// middle, with a trailer: created in milliseconds whatever its size.
fn make_sparse_file(path: &Path, records: u64) {
    let header = Header::new(PodFoo::ELTYPE, PodFoo::ELBYTE as u64, vec![records]).unwrap();
    let start = header.encoded_len() as u64;
    let end = start + header.size;
    let mut f = File::create(path).unwrap();
    f.write_all(&header.encode()).unwrap();
    let mid = records as usize / 2;
    let around: Vec<PodFoo> = (mid - 8..mid + 8).map(pod_foo).collect();
    let at = start + (mid as u64 - 8) * 80;
    std::os::unix::fs::FileExt::write_all_at(&f, bytemuck::cast_slice(&around), at).unwrap();
    let trailer = Trailer::for_element::<PodFoo>(serde_json::json!({"bench": "open"})).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &trailer.encode_block(end), end).unwrap();
}
