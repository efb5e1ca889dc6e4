//! The C API against the Rust API in one process, alternated, so that a loaded machine's drift
//! falls on both alike:
//! - record appends: the records of `benches/capi.rs` (3 Mi, 1024 a call, a flush every 64 Ki)
//!   appended as padded C structs through `ra_records_append` (the library's own entry point,
//!   called from Rust) and as a derived record through the typed writer;
//! - whole arrays: the 256 MiB `f32` field of `benches/capi.rs` written by `ra_write` and by
//!   `RawArray::write_file_with`, each to a new path (the last file removed first, as a program
//!   writing a series of snapshots does), then over the last file (synced before the rename:
//!   on `/dev/shm` a sync costs nothing, so set `RA_BENCH_DIR` to a folder on a disk for those
//!   rows to mean anything), and read back whole into one buffer by `ra_read_all` and by
//!   `ArrayReader::read_subset_into`.
//!
//! Seven times each, in turn, plain and compressed (zstd). Prints the best times, the median of
//! the seven wall-time ratios and the ratio of the best CPU times (user and system, of this
//! process), which a loaded machine disturbs least; the files the two sides wrote are compared
//! byte for byte.
//!
//! `cargo bench -p rawarray-capi --bench ab`. The files go to `RA_BENCH_DIR` (default:
//! `/dev/shm` where it exists, else the temporary folder).

use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::time::Instant;

use rawarray::{
    ra_close, ra_open, ra_read_all, ra_record_type_add, ra_record_type_free, ra_record_type_new,
    ra_records_append, ra_records_close, ra_records_create, ra_records_flush, ra_write,
    ra_write_options_for_name, ra_write_options_free, RA_FLOAT, RA_OK, RA_ORDER_FILE, RA_UINT,
};
use rawarray_serde::{ArrayReader, RaRecord, RawArray, RecordOptions, RecordWriter, WriteOptions};

const NREC: usize = 3 << 20;
const BATCH: usize = 1024;
const FLUSH: usize = 64 << 10;
const ROUNDS: usize = 7;
/// The field of `benches/capi.rs`, in the file's order (first dim fastest).
const DIMS: [u64; 3] = [512, 512, 256];

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Sample {
    step: u64,
    position: [f32; 3],
    energy: f64,
}

/// The C struct of `benches/capi_hdf5.c`: 4 bytes of padding before `energy`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CSample {
    step: u64,
    position: [f32; 3],
    energy: f64,
}

/// This process's CPU time (user and system), in seconds.
fn cpu_seconds() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, t: *mut Timespec) -> i32;
    }
    /// Linux's CLOCK_PROCESS_CPUTIME_ID.
    const PROCESS_CPU: i32 = 2;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a live, writable timespec (two C longs on 64-bit Linux).
    let rc = unsafe { clock_gettime(PROCESS_CPU, &mut t) };
    assert_eq!(rc, 0, "clock_gettime");
    t.sec as f64 + t.nsec as f64 * 1e-9
}

/// Runs `f`, returning its (wall, CPU) seconds.
fn timed(f: impl FnOnce()) -> (f64, f64) {
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    f();
    (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

fn check(status: i32, call: &str) {
    assert_eq!(status, RA_OK, "{call}");
}

/// The C program's loop, through the library's entry points.
fn write_c(path: &CString, storage: &CString, recs: &[CSample]) {
    // SAFETY: every pointer passed is a live NUL-terminated string, a handle the library just
    // made (checked by its status), or the records, `BATCH` structs at a time; each handle is
    // freed once.
    unsafe {
        let mut t = std::ptr::null_mut();
        check(ra_record_type_new(c"Sample".as_ptr(), 32, &mut t), "type");
        check(
            ra_record_type_add(t, c"step".as_ptr(), RA_UINT, 8, 1, 0),
            "step",
        );
        check(
            ra_record_type_add(t, c"position".as_ptr(), RA_FLOAT, 4, 3, 8),
            "position",
        );
        check(
            ra_record_type_add(t, c"energy".as_ptr(), RA_FLOAT, 8, 1, 24),
            "energy",
        );
        let mut o = std::ptr::null_mut();
        check(
            ra_write_options_for_name(storage.as_ptr(), &mut o),
            "options",
        );
        let mut w = std::ptr::null_mut();
        check(ra_records_create(path.as_ptr(), t, o, &mut w), "create");
        for (k, batch) in recs.chunks(BATCH).enumerate() {
            let n = batch.len() as u64;
            check(
                ra_records_append(w, batch.as_ptr().cast::<c_void>(), n),
                "append",
            );
            if ((k + 1) * BATCH).is_multiple_of(FLUSH) {
                check(ra_records_flush(w), "flush");
            }
        }
        check(ra_records_close(w), "close");
        ra_write_options_free(o);
        ra_record_type_free(t);
    }
}

/// The Rust side of `benches/capi.rs`.
fn write_rust(path: &PathBuf, storage: &str, recs: &[Sample]) {
    let mut w: RecordWriter<Sample> = RecordOptions::new()
        .storage(WriteOptions::for_name(storage).unwrap())
        .create(path)
        .unwrap();
    for (k, batch) in recs.chunks(BATCH).enumerate() {
        w.append_slice(batch).unwrap();
        if ((k + 1) * BATCH).is_multiple_of(FLUSH) {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
}

fn main() {
    // `cargo test --benches` runs it with no argument: then only say what it would do.
    if !std::env::args().any(|a| a == "--bench") {
        println!("ab bench: run with `cargo bench -p rawarray-capi --bench ab`");
        return;
    }
    let base = std::env::var_os("RA_BENCH_DIR").map_or_else(
        || {
            let shm = PathBuf::from("/dev/shm");
            if shm.is_dir() {
                shm
            } else {
                std::env::temp_dir()
            }
        },
        PathBuf::from,
    );
    let dir = tempfile::tempdir_in(&base).unwrap();
    // The values benches/capi.rs writes.
    let recs: Vec<Sample> = (0..NREC as u64)
        .map(|i| Sample {
            step: i,
            position: [i as f32 * 0.001, (i % 1000) as f32, -1.0],
            energy: (i % 4096) as f64 * 0.25,
        })
        .collect();
    let crecs: Vec<CSample> = recs
        .iter()
        .map(|s| CSample {
            step: s.step,
            position: s.position,
            energy: s.energy,
        })
        .collect();
    println!(
        "{NREC} records of 28 bytes (a 32-byte C struct), {BATCH} a call, a flush every {FLUSH}; \
         a {} MiB f32 array {DIMS:?}; {ROUNDS} rounds, C API and Rust API in turn, files in {}",
        (DIMS.iter().product::<u64>() * 4) >> 20,
        base.display()
    );
    println!();
    println!(
        "| case | Rust API | C API | C API / Rust, median of {ROUNDS} | C API / Rust, CPU time |"
    );
    println!("|---|---|---|---|---|");
    for storage in ["plain", "zstd"] {
        let rpath = dir.path().join(format!("rust_{storage}.ra"));
        let cpath = dir.path().join(format!("c_{storage}.ra"));
        let c_path = CString::new(cpath.to_str().unwrap()).unwrap();
        let c_storage = CString::new(storage).unwrap();
        let rows = alternate(
            || write_rust(&rpath, storage, &recs),
            || write_c(&c_path, &c_storage, &crecs),
        );
        same_files(&rpath, &cpath, storage);
        row(&format!("records write {storage}"), &rows);
    }
    let n = DIMS.iter().product::<u64>() as usize;
    let field = RawArray::from_shape_vec(
        DIMS.to_vec(),
        (0..n)
            .map(|k| ((k % 1000) as f64 * 0.5 + (k / 262_144) as f64) as f32)
            .collect(),
    )
    .unwrap();
    // One buffer a side, touched before timing: both read into memory already mapped.
    let (mut rbuf, mut cbuf) = (vec![1f32; n], vec![1f32; n]);
    for storage in ["plain", "zstd"] {
        let rpath = dir.path().join(format!("rust_field_{storage}.ra"));
        let cpath = dir.path().join(format!("c_field_{storage}.ra"));
        let c_path = CString::new(cpath.to_str().unwrap()).unwrap();
        let c_storage = CString::new(storage).unwrap();
        let opts = WriteOptions::for_name(storage).unwrap();
        let rows = alternate(
            || {
                let _ = std::fs::remove_file(&rpath);
                field.write_file_with(&rpath, &opts).unwrap();
            },
            || {
                let _ = std::fs::remove_file(&cpath);
                write_array_c(&c_path, &c_storage, field.as_slice());
            },
        );
        same_files(&rpath, &cpath, storage);
        row(&format!("array write {storage} (a new file)"), &rows);
        // Over the last file: each side syncs its temporary file before the rename (which
        // needs a disk to mean anything: RA_BENCH_DIR on one, not /dev/shm).
        let rows = alternate(
            || field.write_file_with(&rpath, &opts).unwrap(),
            || write_array_c(&c_path, &c_storage, field.as_slice()),
        );
        same_files(&rpath, &cpath, storage);
        row(
            &format!("array write {storage} (over the last file, synced)"),
            &rows,
        );
        let ranges = [0..DIMS[0], 0..DIMS[1], 0..DIMS[2]];
        let rows = alternate(
            || {
                ArrayReader::open(&rpath)
                    .unwrap()
                    .read_subset_into(&ranges, &mut rbuf)
                    .unwrap();
            },
            || read_array_c(&c_path, &mut cbuf),
        );
        assert_eq!(
            rbuf,
            field.as_slice(),
            "{storage}: the Rust API read other values"
        );
        assert_eq!(
            cbuf,
            field.as_slice(),
            "{storage}: the C API read other values"
        );
        row(&format!("array read {storage}"), &rows);
    }
}

/// (wall, CPU) seconds of `ROUNDS` runs of each of `rust` and `c`, in turn.
type Rounds = (Vec<(f64, f64)>, Vec<(f64, f64)>);

fn alternate(mut rust: impl FnMut(), mut c: impl FnMut()) -> Rounds {
    let (mut r, mut cs) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        r.push(timed(&mut rust));
        cs.push(timed(&mut c));
    }
    (r, cs)
}

fn same_files(rust: &std::path::Path, c: &std::path::Path, storage: &str) {
    let same = std::fs::read(rust).unwrap() == std::fs::read(c).unwrap();
    assert!(
        same,
        "{storage}: the C API's file differs from the Rust API's"
    );
}

fn row(case: &str, (rust, c): &Rounds) {
    let best = |v: &[(f64, f64)], cpu: bool| {
        v.iter()
            .map(|t| if cpu { t.1 } else { t.0 })
            .fold(f64::INFINITY, f64::min)
    };
    let mut ratios: Vec<f64> = rust.iter().zip(c).map(|(r, c)| c.0 / r.0).collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "| {case} | {:.3} | {:.3} | {:.2} | {:.2} |",
        best(rust, false),
        best(c, false),
        ratios[ROUNDS / 2],
        best(c, true) / best(rust, true)
    );
}

/// `ra_write` of the field's bytes as they are (little-endian host), dims in the file's order.
fn write_array_c(path: &CString, storage: &CString, values: &[f32]) {
    // SAFETY: the path and name are live NUL-terminated strings, the options a handle the
    // library just made (checked) and freed once, `dims` 3 live u64s, and `values` the
    // `DIMS` product of f32s, whose byte count is passed.
    unsafe {
        let mut o = std::ptr::null_mut();
        check(
            ra_write_options_for_name(storage.as_ptr(), &mut o),
            "options",
        );
        check(
            ra_write(
                path.as_ptr(),
                RA_FLOAT,
                4,
                RA_ORDER_FILE,
                DIMS.as_ptr(),
                3,
                values.as_ptr().cast::<c_void>(),
                (values.len() * 4) as u64,
                o,
            ),
            "ra_write",
        );
        ra_write_options_free(o);
    }
}

/// `ra_open` + `ra_read_all` into `buf`.
fn read_array_c(path: &CString, buf: &mut [f32]) {
    // SAFETY: the path is a live NUL-terminated string, the file a handle the library just
    // made (checked) and closed once, and `buf` holds the byte count passed.
    unsafe {
        let mut f = std::ptr::null_mut();
        check(ra_open(path.as_ptr(), &mut f), "ra_open");
        check(
            ra_read_all(f, buf.as_mut_ptr().cast::<c_void>(), (buf.len() * 4) as u64),
            "ra_read_all",
        );
        ra_close(f);
    }
}
