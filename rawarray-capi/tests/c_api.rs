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
