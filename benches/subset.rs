//! Partial reads: one plane and one slab of a `[512, 512, NZ]` f32 file (1 GiB at NZ = 1024)
//! in the page cache, read by `ArrayReader` (positioned reads, then the map) against reading
//! the whole file and cutting the block out, in the same run; with the feature `object_store`,
//! the same blocks through the object store's `LocalFileSystem` and `InMemory` backends, with
//! the requests they cost. Prints a markdown table: best time of several runs, bytes read,
//! reads or requests, and the whole read's time over the row's.
//!
//! Run: `cargo bench --bench subset --features object_store` (RA_BENCH_NZ=256 for a 256 MiB
//! file; without the feature, the object store rows are left out).

use std::ops::Range;
use std::time::{Duration, Instant};

use rawarray_serde::{ArrayReader, ArrayWriter, RawArray};

/// Best time of `runs` runs of `f`, and its last result.
fn best<R>(runs: usize, mut f: impl FnMut() -> R) -> (Duration, R) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        last = Some(std::hint::black_box(r));
    }
    (best, last.expect("runs > 0"))
}

/// The block cut from a whole array by index arithmetic.
fn cut(dims: &[u64; 3], data: &[f32], r: &[Range<u64>; 3]) -> Vec<f32> {
    let mut out = Vec::with_capacity(r.iter().map(|r| (r.end - r.start) as usize).product());
    for z in r[2].clone() {
        for y in r[1].clone() {
            let row = ((z * dims[1] + y) * dims[0]) as usize;
            out.extend_from_slice(&data[row + r[0].start as usize..row + r[0].end as usize]);
        }
    }
    out
}

struct Row {
    block: &'static str,
    how: &'static str,
    time: Duration,
    bytes: u64,
    reads: u64,
}

fn main() {
    let nz: u64 = std::env::var("RA_BENCH_NZ")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let dims = [512u64, 512, nz];
    let runs = 5;
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("field.ra");
    // Written plane by plane through the writer, so the bench holds one copy of the array.
    {
        let w = ArrayWriter::options()
            .array::<f32>(&dims)
            .create(&path)
            .unwrap();
        let plane = (dims[0] * dims[1]) as usize;
        for z in 0..nz {
            let v: Vec<f32> = (0..plane)
                .map(|i| (z as usize * plane + i) as f32)
                .collect();
            w.write_subset(&[0..dims[0], 0..dims[1], z..z + 1], &v)
                .unwrap();
        }
        w.finish().unwrap();
    }
    let file_bytes = dims.iter().product::<u64>() * 4;
    let plane: [Range<u64>; 3] = [0..512, 0..512, nz / 2..nz / 2 + 1];
    let slab: [Range<u64>; 3] = [100..101, 0..512, 0..nz];
    let blocks = [
        ("plane [512, 512, 1]", &plane),
        ("slab [1, 512, NZ]", &slab),
    ];

    let mut rows = Vec::new();
    // Warm the page cache, and the whole read and cut each block is measured against.
    let _: RawArray<f32> = RawArray::read_file(&path).unwrap();
    for (name, r) in blocks {
        let (t, got) = best(runs, || {
            let whole: RawArray<f32> = RawArray::read_file(&path).unwrap();
            cut(&dims, whole.as_slice(), r)
        });
        rows.push(Row {
            block: name,
            how: "whole file read, then cut",
            time: t,
            bytes: file_bytes,
            reads: 1,
        });
        for (how, mapped) in [
            ("ArrayReader, positioned reads", false),
            ("ArrayReader, map", true),
        ] {
            let reader = if mapped {
                ArrayReader::open_mapped(&path).unwrap()
            } else {
                ArrayReader::open(&path).unwrap()
            };
            let (t, block) = best(runs, || reader.read_subset::<f32>(&r[..]).unwrap());
            assert_eq!(block.as_slice(), got, "{how}");
            let stats = reader.io_stats();
            rows.push(Row {
                block: name,
                how,
                time: t,
                bytes: stats.bytes / runs as u64,
                reads: stats.reads / runs as u64,
            });
        }
        #[cfg(feature = "object_store")]
        store::rows(dir.path(), name, r, &got, runs, &mut rows);
    }

    println!(
        "f32 {dims:?} ({} MiB) in the page cache; best of {runs} runs\n",
        file_bytes >> 20
    );
    println!("| block | read by | time | bytes read | reads or requests | whole read / this |");
    println!("|---|---|---:|---:|---:|---:|");
    for row in &rows {
        let whole = rows
            .iter()
            .find(|w| w.block == row.block && w.how.starts_with("whole file"))
            .expect("the whole read of each block comes first");
        println!(
            "| {} | {} | {:.2} ms | {} | {} | {:.1}x |",
            row.block,
            row.how,
            row.time.as_secs_f64() * 1e3,
            human(row.bytes),
            row.reads,
            whole.time.as_secs_f64() / row.time.as_secs_f64(),
        );
    }
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

#[cfg(feature = "object_store")]
mod store {
    use std::path::Path;
    use std::sync::Arc;

    use object_store::local::LocalFileSystem;
    use object_store::memory::InMemory;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    use rawarray_serde::StoreArrayReader;

    use super::*;

    /// The block through both backends: the reader's own count of its requests and bytes.
    pub fn rows(
        dir: &Path,
        name: &'static str,
        r: &[Range<u64>; 3],
        want: &[f32],
        runs: usize,
        rows: &mut Vec<Row>,
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let local: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(dir).unwrap());
        let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let bytes = std::fs::read(dir.join("field.ra")).unwrap();
        rt.block_on(mem.put(&"field.ra".into(), PutPayload::from(bytes)))
            .unwrap();
        for (how, store) in [
            ("object store, LocalFileSystem", local),
            ("object store, InMemory", mem),
        ] {
            let reader = rt
                .block_on(StoreArrayReader::open(store, "field.ra"))
                .unwrap();
            let open = reader.io_stats();
            let (t, block) = best(runs, || {
                rt.block_on(reader.read_subset::<f32>(&r[..])).unwrap()
            });
            assert_eq!(block.as_slice(), want, "{how}");
            let stats = reader.io_stats();
            rows.push(Row {
                block: name,
                how,
                time: t,
                bytes: (stats.bytes - open.bytes) / runs as u64,
                reads: (stats.reads - open.reads) / runs as u64,
            });
        }
    }
}
