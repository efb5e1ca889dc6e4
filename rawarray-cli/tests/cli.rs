//! The `ra` binary, run as a user runs it (assert_cmd), on the reference files and on files
//! the tests write. numpy checks our `.npy` files and writes the ones we read
//! (tests/python/npy_check.py, run in the tests' own Python environment: the workspace's
//! `tests/common/python.rs`).

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use assert_cmd::Command;
use half::f16;
use md5::{Digest, Md5};
use num_complex::Complex;
use predicates::prelude::*;
use rawarray_serde::{
    DynArray, ElType, Element, Header, RaRecord, RawArray, RecordOptions, RecordWriter, Trailer,
    WriteOptions,
};
use serde_json::Value;

fn reference_dir() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/reference"
    ))
    .to_path_buf()
}

fn reference(name: &str) -> PathBuf {
    reference_dir().join(name)
}

fn ra() -> Command {
    Command::cargo_bin("ra").expect("the ra binary is built")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn md5_hex(b: &[u8]) -> String {
    hex(&Md5::digest(b))
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// Runs the command, expects exit 1 and exactly one line on stderr, and returns that line.
fn fails_with_one_line(cmd: &mut Command) -> String {
    let out = cmd.assert().code(1).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "stderr: {err:?}");
    assert!(err.starts_with("ra: "), "{err:?}");
    err
}

/// Copies a (read-only) reference file to a writable file.
fn copy_writable(from: &Path, to: &Path) {
    std::fs::write(to, std::fs::read(from).unwrap()).unwrap();
}

/// Files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[path = "../../tests/common/python.rs"]
#[allow(dead_code)]
mod python_env;

/// `python tests/python/npy_check.py args...` in the tests' Python environment: its stdout, or
/// a panic with its output when a check fails.
fn python(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/npy_check.py");
    python_env::run_script(&script, args)
}

// ---------------------------------------------------------------------------------------
// info

type Row = (&'static str, u64, u64, u64, u64, &'static [u64], u64);

/// The table of tests/fixtures/reference/README.md: name, flags, eltype, elbyte, size, dims,
/// file bytes.
const TABLE: &[Row] = &[
    ("test.ra", 0, 4, 8, 96, &[3, 4], 160),
    ("mnist_8.ra", 0, 2, 1, 2352, &[28, 28, 3], 2424),
    ("mnist_8_z.ra", 2, 2, 1, 486, &[28, 28, 3], 558),
    ("rand100.ra", 0, 1, 8, 512, &[8, 8], 576),
    ("randc32.ra", 0, 4, 8, 128, &[4, 4], 192),
    ("randc64.ra", 0, 4, 16, 256, &[4, 4], 320),
    ("randf16.ra", 0, 3, 2, 32, &[4, 4], 96),
    ("randf32.ra", 0, 3, 4, 64, &[4, 4], 128),
    ("randf64.ra", 0, 3, 8, 128, &[4, 4], 192),
    ("randi32.ra", 0, 1, 4, 64, &[4, 4], 128),
    ("randi8.ra", 0, 1, 1, 16, &[4, 4], 80),
    ("randu32.ra", 0, 2, 4, 64, &[4, 4], 128),
    ("randu8.ra", 0, 2, 1, 16, &[4, 4], 80),
];

#[test]
fn info_json_matches_the_reference_table_field_by_field() {
    let paths: Vec<PathBuf> = TABLE.iter().map(|t| reference(t.0)).collect();
    let out = stdout_of(ra().arg("info").arg("--json").args(&paths));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), TABLE.len());
    for (line, &(name, flags, eltype, elbyte, size, dims, bytes)) in lines.iter().zip(TABLE) {
        let j: Value = serde_json::from_str(line).unwrap();
        assert!(j["file"].as_str().unwrap().ends_with(name), "{j}");
        assert_eq!(j["flags"], flags, "{name}");
        assert_eq!(j["eltype"], eltype, "{name}");
        assert_eq!(j["elbyte"], elbyte, "{name}");
        assert_eq!(j["size"], size, "{name}");
        assert_eq!(j["ndims"], dims.len(), "{name}");
        assert_eq!(j["dims"], serde_json::json!(dims), "{name}");
        assert_eq!(j["big_endian"], false, "{name}");
        assert_eq!(j["compressed"], flags & 2 != 0, "{name}");
        assert_eq!(
            j["trailer_bytes"], 0,
            "{name}: the README says none has trailing bytes"
        );
        let header_bytes = 48 + 8 * dims.len() as u64;
        assert_eq!(j["header_bytes"], header_bytes, "{name}");
        assert_eq!(header_bytes + size, bytes, "{name}: the table adds up");
        let dtype = match (eltype, elbyte) {
            (1, 1) => "|i1",
            (1, 4) => "<i4",
            (1, 8) => "<i8",
            (2, 1) => "|u1",
            (2, 4) => "<u4",
            (3, 2) => "<f2",
            (3, 4) => "<f4",
            (3, 8) => "<f8",
            (4, 8) => "<c8",
            (4, 16) => "<c16",
            other => panic!("{other:?} not in the table"),
        };
        assert_eq!(j["dtype"], dtype, "{name}");
    }
}

#[test]
fn info_json_reports_trailers_big_endian_and_missing_dtypes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("be.ra");
    let a = RawArray::from_vec(vec![half::bf16::from_f32(1.0); 3]);
    let mut bytes = Vec::new();
    a.write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    bytes.extend_from_slice(b"extra");
    std::fs::write(&path, &bytes).unwrap();
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["flags"], 1);
    assert_eq!(j["big_endian"], true);
    assert_eq!(j["eltype"], 5);
    assert_eq!(j["dtype"], Value::Null);
    assert_eq!(j["trailer_bytes"], 5);
    let text = stdout_of(ra().arg("info").arg(&path));
    assert!(text.contains("big-endian"), "{text}");
    assert!(text.contains("none (numpy has no bfloat16)"), "{text}");
    assert!(text.contains("trailer:     5 bytes"), "{text}");
}

#[test]
fn info_in_words() {
    let text = stdout_of(ra().arg("info").arg(reference("mnist_8_z.ra")));
    for want in [
        "uint8 (eltype 2, uint)",
        "numpy dtype: |u1",
        "elbyte:      1",
        "[28, 28, 3], 2352 elements (numpy shape (3, 28, 28))",
        "486 bytes stored, 2352 plain",
        "little-endian",
        "LZ4 block",
        "header:      72 bytes",
        "trailer:     none",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
}

#[test]
fn info_reports_a_bad_file_and_still_prints_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ra");
    std::fs::write(
        &bad,
        b"not a rawarray file, but long enough for a header......",
    )
    .unwrap();
    let out = ra()
        .args(["info", "--json"])
        .arg(reference("test.ra"))
        .arg(&bad)
        .arg(reference("randu8.ra"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.ra") && err.contains("looks like text"),
        "{err}"
    );
}

#[test]
fn info_names_files_that_are_not_ra_by_what_they_look_like() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("m.npy");
    ra().arg("convert")
        .arg(reference("randf32.ra"))
        .arg(&npy)
        .assert()
        .success();
    let empty = dir.path().join("empty.ra");
    std::fs::write(&empty, b"").unwrap();
    let damaged = dir.path().join("damaged.ra");
    let mut bytes = std::fs::read(reference("randf32.ra")).unwrap();
    bytes[16] = 9; // eltype 9: a .ra file with a bad header is still called one
    std::fs::write(&damaged, &bytes).unwrap();
    for (path, want) in [
        (
            reference("mnist_8.png"),
            "not a .ra file: it looks like a PNG image; `ra convert",
        ),
        (
            npy.clone(),
            "not a .ra file: it looks like a numpy .npy file; `ra convert",
        ),
        (empty.clone(), "not a .ra file: the file is empty"),
        (damaged.clone(), "eltype"),
    ] {
        let out = ra()
            .arg("info")
            .arg(&path)
            .assert()
            .code(1)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{want:?} not in {err}");
    }
}

// ---------------------------------------------------------------------------------------
// cat

#[test]
fn cat_prints_indices_column_major_and_complex_as_a_plus_bi() {
    let out = stdout_of(ra().arg("cat").arg(reference("test.ra")));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 12);
    // Element k is k - i/k (README of the fixtures); [i, j] is k = i + 3j.
    assert_eq!(lines[0], "[0, 0]\t0.0-infi");
    assert_eq!(lines[1], "[1, 0]\t1.0-1.0i");
    assert_eq!(lines[2], "[2, 0]\t2.0-0.5i");
    assert_eq!(lines[3], "[0, 1]\t3.0-0.33333334i");
    assert_eq!(lines[11], "[2, 3]\t11.0-0.09090909i");
}

#[test]
fn cat_head_and_json() {
    let out = stdout_of(
        ra().args(["cat", "--head", "2", "--json"])
            .arg(reference("test.ra")),
    );
    let vals: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(vals.len(), 2);
    assert_eq!(vals[0]["index"], serde_json::json!([0, 0]));
    assert_eq!(
        vals[0]["value"],
        serde_json::json!({"re": 0.0, "im": "-inf"})
    );
    assert_eq!(vals[1]["value"], serde_json::json!({"re": 1.0, "im": -1.0}));
    let out = stdout_of(
        ra().args(["cat", "--head", "3"])
            .arg(reference("randf16.ra")),
    );
    assert_eq!(out, "[0, 0]\t0.6816\n[1, 0]\t0.9707\n[2, 0]\t0.3027\n");
}

#[test]
fn cat_reads_compressed_and_big_endian_files() {
    let plain = stdout_of(ra().arg("cat").arg(reference("mnist_8.ra")));
    let z = stdout_of(ra().arg("cat").arg(reference("mnist_8_z.ra")));
    assert_eq!(plain, z);
    assert_eq!(plain.lines().count(), 2352);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("be.ra");
    RawArray::from_shape_vec(vec![2, 1], vec![-1.5f64, 300.0])
        .unwrap()
        .write_file_with(&path, &WriteOptions::new().big_endian(true).compress(true))
        .unwrap();
    let out = stdout_of(ra().arg("cat").arg(&path));
    assert_eq!(out, "[0, 0]\t-1.5\n[1, 0]\t300.0\n");
}

#[test]
fn cat_prints_user_defined_elements_as_hex() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.ra");
    let a = DynArray::new(ElType::User, 3, vec![2], vec![1, 2, 3, 0xaa, 0xbb, 0xcc]).unwrap();
    a.write_file(&path).unwrap();
    assert_eq!(
        stdout_of(ra().arg("cat").arg(&path)),
        "[0]\t010203\n[1]\taabbcc\n"
    );
    let out = stdout_of(ra().args(["cat", "--json"]).arg(&path));
    assert_eq!(
        out.lines().next().unwrap(),
        r#"{"index":[0],"value":"010203"}"#
    );
}

#[test]
fn cat_into_a_closed_pipe_is_quiet() {
    // `ra cat big.ra | head -1`: no error, no panic message.
    let mut child = Process::new(env!("CARGO_BIN_EXE_ra"))
        .arg("cat")
        .arg(reference("mnist_8.ra"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
}

// ---------------------------------------------------------------------------------------
// convert: .ra <-> .npy

/// The value at column-major position k, as tests/python/npy_check.py computes it.
trait Formula: Element + PartialEq + std::fmt::Debug + Copy {
    const DTYPE: &'static str;
    fn at(k: u64) -> Self;
}

macro_rules! int_formula {
    ($($t:ty => $d:literal),*) => {$(
        impl Formula for $t {
            const DTYPE: &'static str = $d;
            fn at(k: u64) -> Self { (k * 37 + 11) as $t }
        }
    )*};
}
int_formula!(i8 => "i1", i16 => "i2", i32 => "i4", i64 => "i8", u8 => "u1", u16 => "u2", u32 => "u4", u64 => "u8");

impl Formula for f16 {
    const DTYPE: &'static str = "f2";
    fn at(k: u64) -> Self {
        f16::from_f64(k as f64 * 0.25 - 3.0)
    }
}
impl Formula for f32 {
    const DTYPE: &'static str = "f4";
    fn at(k: u64) -> Self {
        (k as f64 * 0.25 - 3.0) as f32
    }
}
impl Formula for f64 {
    const DTYPE: &'static str = "f8";
    fn at(k: u64) -> Self {
        k as f64 * 0.25 - 3.0
    }
}
impl Formula for Complex<f32> {
    const DTYPE: &'static str = "c8";
    fn at(k: u64) -> Self {
        Complex::new(k as f32 * 0.5, -(k as f32 * 0.25))
    }
}
impl Formula for Complex<f64> {
    const DTYPE: &'static str = "c16";
    fn at(k: u64) -> Self {
        Complex::new(k as f64 * 0.5, -(k as f64 * 0.25))
    }
}

fn dims_name(dims: &[u64]) -> String {
    if dims.is_empty() {
        "scalar".into()
    } else {
        dims.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("x")
    }
}

/// Writes DTYPE_DIMS[_be][_z].ra in `dir` (formula values) and converts it to .npy in `out`.
fn ra_then_npy<T: Formula>(dir: &Path, out: &Path, dims: &[u64], opts: WriteOptions) {
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims.to_vec(), (0..n).map(T::at).collect()).unwrap();
    let mut name = format!("{}_{}", T::DTYPE, dims_name(dims));
    if opts.is_big_endian() {
        name += "_be";
    }
    if opts.is_compressed() {
        name += "_z";
    }
    let ra_path = dir.join(format!("{name}.ra"));
    a.write_file_with(&ra_path, &opts).unwrap();
    ra().arg("convert")
        .arg(&ra_path)
        .arg(out.join(format!("{name}.npy")))
        .assert()
        .success()
        .stdout("")
        .stderr("");
}

fn every_dtype(dir: &Path, out: &Path, dims: &[u64], opts: WriteOptions) {
    ra_then_npy::<i8>(dir, out, dims, opts);
    ra_then_npy::<i16>(dir, out, dims, opts);
    ra_then_npy::<i32>(dir, out, dims, opts);
    ra_then_npy::<i64>(dir, out, dims, opts);
    ra_then_npy::<u8>(dir, out, dims, opts);
    ra_then_npy::<u16>(dir, out, dims, opts);
    ra_then_npy::<u32>(dir, out, dims, opts);
    ra_then_npy::<u64>(dir, out, dims, opts);
    ra_then_npy::<f16>(dir, out, dims, opts);
    ra_then_npy::<f32>(dir, out, dims, opts);
    ra_then_npy::<f64>(dir, out, dims, opts);
    ra_then_npy::<Complex<f32>>(dir, out, dims, opts);
    ra_then_npy::<Complex<f64>>(dir, out, dims, opts);
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_loads_our_npy_of_every_dtype_shape_byte_order_and_compression() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    for dims in [&[3u64, 4][..], &[5], &[2, 3, 4], &[]] {
        every_dtype(dir.path(), out.path(), dims, WriteOptions::new());
    }
    every_dtype(
        dir.path(),
        out.path(),
        &[3, 2],
        WriteOptions::new().big_endian(true),
    );
    every_dtype(
        dir.path(),
        out.path(),
        &[4, 3],
        WriteOptions::new().compress(true),
    );
    ra_then_npy::<f64>(dir.path(), out.path(), &[3, 0], WriteOptions::new());
    // Every .npy holds the same data bytes as a little-endian plain .ra of the same values.
    let plain = dir.path().join("c8_3x4.ra");
    let npy = std::fs::read(out.path().join("c8_3x4.npy")).unwrap();
    let ra_bytes = std::fs::read(plain).unwrap();
    assert_eq!(npy.len() % 64, 96 % 64);
    assert_eq!(&npy[npy.len() - 96..], &ra_bytes[64..]);
    let log = python(&[&"check", &out.path()]);
    assert_eq!(log.lines().count(), listing(out.path()).len());
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_loads_our_npy_of_every_reference_file() {
    let out = tempfile::tempdir().unwrap();
    for (name, ..) in TABLE {
        let npy = out.path().join(name.replace(".ra", ".npy"));
        ra().arg("convert")
            .arg(reference(name))
            .arg(&npy)
            .assert()
            .success();
        // And back: the same .ra, byte for byte (the compressed one comes back plain).
        let back = out.path().join(format!("back_{name}"));
        ra().arg("convert").arg(&npy).arg(&back).assert().success();
        let plain = reference(&name.replace("_z.ra", ".ra"));
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(plain).unwrap(),
            "{name}"
        );
        std::fs::remove_file(back).unwrap();
    }
    python(&[&"reference", &reference_dir(), &out.path()]);
}

/// Checks the .ra converted from a numpy-written DTYPE_DIMS_*.npy against the formula.
fn check_from_numpy<T: Formula>(path: &Path, dims: &[u64]) {
    let a: RawArray<T> = RawArray::read_file(path).unwrap();
    assert_eq!(a.dims(), dims, "{}", path.display());
    let want: Vec<T> = (0..dims.iter().product()).map(T::at).collect();
    assert_eq!(a.as_slice(), &want[..], "{}", path.display());
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_written_npy_in_c_and_fortran_order_converts_to_the_same_array() {
    let dir = tempfile::tempdir().unwrap();
    python(&[&"write", &dir.path()]);
    let names = listing(dir.path());
    assert_eq!(names.len(), 10);
    for name in names {
        let npy = dir.path().join(&name);
        let out = dir.path().join(name.replace(".npy", ".ra"));
        ra().arg("convert").arg(&npy).arg(&out).assert().success();
        let parts: Vec<&str> = name.split('_').collect();
        let dims: Vec<u64> = if parts[1] == "scalar" {
            vec![]
        } else {
            parts[1].split('x').map(|d| d.parse().unwrap()).collect()
        };
        let h = Header::decode(&std::fs::read(&out).unwrap()).unwrap();
        assert!(!h.is_big_endian(), "{name}: we write little-endian");
        match parts[0] {
            "f4" => check_from_numpy::<f32>(&out, &dims),
            "i2" => check_from_numpy::<i16>(&out, &dims),
            "u8" => check_from_numpy::<u64>(&out, &dims),
            "c8" => check_from_numpy::<Complex<f32>>(&out, &dims),
            "c16" => check_from_numpy::<Complex<f64>>(&out, &dims),
            "f2" => check_from_numpy::<f16>(&out, &dims),
            "f8" => check_from_numpy::<f64>(&out, &dims),
            "u1" => check_from_numpy::<u8>(&out, &dims),
            "i8" => check_from_numpy::<i64>(&out, &dims),
            other => panic!("no check for {other}"),
        }
    }
}

#[test]
fn no_npy_for_types_numpy_lacks_and_no_output_left() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("b.ra");
    RawArray::from_vec(vec![half::bf16::ONE; 4])
        .write_file(&input)
        .unwrap();
    let out = dir.path().join("b.npy");
    let err = fails_with_one_line(ra().arg("convert").arg(&input).arg(&out));
    assert!(err.contains("b.ra") && err.contains("bfloat16"), "{err}");
    assert_eq!(listing(dir.path()), ["b.ra"]);
}

#[test]
fn malformed_npy_is_one_line_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let good = {
        let a = RawArray::from_shape_vec(vec![2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let ra_path = dir.path().join("g.ra");
        a.write_file(&ra_path).unwrap();
        let npy = dir.path().join("g.npy");
        ra().arg("convert")
            .arg(&ra_path)
            .arg(&npy)
            .assert()
            .success();
        let bytes = std::fs::read(&npy).unwrap();
        std::fs::remove_file(ra_path).unwrap();
        std::fs::remove_file(npy).unwrap();
        bytes
    };
    let data_start = 10 + usize::from(u16::from_le_bytes([good[8], good[9]]));
    assert!(String::from_utf8_lossy(&good[..data_start]).contains("(2, 2)"));
    let with_header = |t: &str| {
        let mut b = good[..10].to_vec();
        let mut t = t.to_string();
        while !(10 + t.len() + 1).is_multiple_of(64) {
            t.push(' ');
        }
        t.push('\n');
        b[8..10].copy_from_slice(&(t.len() as u16).to_le_bytes());
        b.extend_from_slice(t.as_bytes());
        b.extend_from_slice(&good[data_start..]);
        b
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "not a .npy"),
        ("magic", b"\x93NUMPX\x01\x00".to_vec(), "not a .npy"),
        (
            "version",
            [&good[..6], &[9, 0][..], &good[8..]].concat(),
            "version 9.0",
        ),
        ("short header", good[..40].to_vec(), "truncated .npy header"),
        ("short data", good[..good.len() - 1].to_vec(), "truncated"),
        (
            "dict",
            with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2}"),
            "malformed .npy header",
        ),
        (
            "dtype",
            with_header("{'descr': '<U4', 'fortran_order': False, 'shape': (2, 2), }"),
            "'<U4'",
        ),
        (
            "padded record",
            with_header(
                "{'descr': [('a', '<f4'), ('', '|V12')], 'fortran_order': False, 'shape': (1,), }",
            ),
            "'|V12' has no .ra element type",
        ),
        (
            "overflow",
            with_header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
            ),
            "overflow",
        ),
    ];
    for (what, bytes, want) in cases {
        let input = dir.path().join(format!("{}.npy", what.replace(' ', "_")));
        std::fs::write(&input, &bytes).unwrap();
        let out = dir.path().join("out.ra");
        let err = fails_with_one_line(ra().arg("convert").arg(&input).arg(&out));
        assert!(
            err.contains(input.file_name().unwrap().to_str().unwrap()),
            "{what}: {err}"
        );
        assert!(err.contains(want), "{what}: {err}");
        assert!(!out.exists(), "{what}: output left behind");
        std::fs::remove_file(&input).unwrap();
        assert!(
            listing(dir.path()).is_empty(),
            "{what}: {:?}",
            listing(dir.path())
        );
    }
}

// ---------------------------------------------------------------------------------------
// convert: .ra <-> .png, .ra -> .csv

fn decode_png(path: &Path) -> (u32, u32, png::ColorType, Vec<u8>) {
    let mut d = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    d.set_transformations(png::Transformations::EXPAND);
    let mut r = d.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, info.color_type, buf)
}

fn data_of(path: &Path) -> (Header, Vec<u8>) {
    let d = DynArray::read_file(path).unwrap();
    (d.header().clone(), d.data().to_vec())
}

#[test]
fn png_to_ra_with_rgb_has_the_data_bytes_of_the_c_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.ra");
    ra().args(["convert", "--rgb"])
        .arg(reference("mnist_8.png"))
        .arg(&out)
        .assert()
        .success();
    let (h, data) = data_of(&out);
    let (_, want) = data_of(&reference("mnist_8.ra"));
    assert_eq!(h.dims, vec![3, 28, 28]);
    assert_eq!(data, want, "gray repeated as R, G, B in row order");

    // Without --rgb: gray, dims [w, h], each pixel once.
    let gray = dir.path().join("g.ra");
    ra().arg("convert")
        .arg(reference("mnist_8.png"))
        .arg(&gray)
        .assert()
        .success();
    let (h, data) = data_of(&gray);
    assert_eq!(h.dims, vec![28, 28]);
    assert_eq!(data, want.iter().step_by(3).copied().collect::<Vec<u8>>());
    let (w, hh, color, pixels) = decode_png(&reference("mnist_8.png"));
    assert_eq!((w, hh, color), (28, 28, png::ColorType::Grayscale));
    assert_eq!(data, pixels);
}

#[test]
fn png_round_trips_and_the_reference_layout_needs_a_reshape() {
    let dir = tempfile::tempdir().unwrap();
    // The C reference's dims [28, 28, 3] do not describe its interleaved bytes: refused.
    let png_out = dir.path().join("m.png");
    let err = fails_with_one_line(
        ra().arg("convert")
            .arg(reference("mnist_8.ra"))
            .arg(&png_out),
    );
    assert!(
        err.contains("not an image") && err.contains("reshape"),
        "{err}"
    );
    assert!(!png_out.exists());
    // Reshaped to [3, 28, 28] it is the RGB picture, each channel the reference PNG's gray.
    let fixed = dir.path().join("fixed.ra");
    ra().args(["reshape", "-o"])
        .arg(&fixed)
        .arg(reference("mnist_8.ra"))
        .args(["3", "28", "28"])
        .assert()
        .success();
    ra().arg("convert")
        .arg(&fixed)
        .arg(&png_out)
        .assert()
        .success();
    let (w, h, color, rgb) = decode_png(&png_out);
    let (_, _, _, gray) = decode_png(&reference("mnist_8.png"));
    assert_eq!((w, h, color), (28, 28, png::ColorType::Rgb));
    assert_eq!(
        rgb,
        gray.iter().flat_map(|&g| [g, g, g]).collect::<Vec<u8>>()
    );
    // ra -> png -> ra gives the same file.
    let back = dir.path().join("back.ra");
    ra().arg("convert")
        .arg(&png_out)
        .arg(&back)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&fixed).unwrap()
    );
    // And a gray one, non-square so width and height cannot be swapped unnoticed.
    let g = dir.path().join("g.ra");
    let pixels: Vec<u8> = (0..15).map(|i| i * 17).collect();
    RawArray::from_shape_vec(vec![5, 3], pixels.clone())
        .unwrap()
        .write_file(&g)
        .unwrap();
    let gp = dir.path().join("g.png");
    ra().arg("convert").arg(&g).arg(&gp).assert().success();
    let (w, h, color, got) = decode_png(&gp);
    assert_eq!((w, h, color), (5, 3, png::ColorType::Grayscale));
    assert_eq!(got, pixels);
    let g2 = dir.path().join("g2.ra");
    ra().arg("convert").arg(&gp).arg(&g2).assert().success();
    assert_eq!(std::fs::read(&g2).unwrap(), std::fs::read(&g).unwrap());
}

#[test]
fn png_of_wider_types_is_scaled_to_the_data_range() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, DynArray)> = vec![
        (
            "u16",
            DynArray::from_typed(
                &RawArray::from_shape_vec(vec![2, 2], vec![100u16, 200, 300, 400]).unwrap(),
            ),
        ),
        (
            "f32",
            DynArray::from_typed(
                &RawArray::from_shape_vec(vec![2, 2], vec![-1.0f32, 0.0, f32::NAN, 1.0]).unwrap(),
            ),
        ),
        (
            "c64",
            DynArray::from_typed(
                &RawArray::from_shape_vec(
                    vec![2, 2],
                    vec![
                        Complex::new(0.0f64, 0.0),
                        Complex::new(3.0, 4.0),
                        Complex::new(0.0, -10.0),
                        Complex::new(-5.0, 0.0),
                    ],
                )
                .unwrap(),
            ),
        ),
    ];
    let want = [
        vec![0u8, 85, 170, 255],
        vec![0, 128, 0, 255],
        vec![0, 128, 255, 128],
    ];
    for ((name, a), want) in cases.into_iter().zip(want) {
        let input = dir.path().join(format!("{name}.ra"));
        a.write_file(&input).unwrap();
        let out = dir.path().join(format!("{name}.png"));
        ra().arg("convert").arg(&input).arg(&out).assert().success();
        assert_eq!(decode_png(&out).3, want, "{name}");
    }
}

#[test]
fn csv_of_1d_and_2d_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.ra");
    // dims [3, 2]: numpy shape (2, 3): two lines of three.
    RawArray::from_shape_vec(vec![3, 2], vec![1i32, 2, 3, 4, 5, -6])
        .unwrap()
        .write_file(&m)
        .unwrap();
    let out = dir.path().join("m.csv");
    ra().arg("convert").arg(&m).arg(&out).assert().success();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "1,2,3\n4,5,-6\n");
    let v = dir.path().join("v.ra");
    RawArray::from_vec(vec![Complex::new(1.0f32, -2.0), Complex::new(0.5, 0.0)])
        .write_file(&v)
        .unwrap();
    let out = dir.path().join("v.csv");
    ra().arg("convert").arg(&v).arg(&out).assert().success();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "1.0-2.0j\n0.5+0.0j\n"
    );
    let out = dir.path().join("t.csv");
    ra().arg("convert")
        .arg(reference("randf16.ra"))
        .arg(&out)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with("0.6816,0.9707,0.3027,"));
    // Three dims do not fit: nothing written.
    let out = dir.path().join("mnist.csv");
    let err = fails_with_one_line(ra().arg("convert").arg(reference("mnist_8.ra")).arg(&out));
    assert!(err.contains("1-D and 2-D"), "{err}");
    assert!(!out.exists());
}

/// CSV back to `.ra`: the type inferred (int64, float64, complex128), the dims the reverse of
/// the table's shape; floats come back bit for bit, complex64 values exactly as f32.
#[test]
fn csv_converts_back_to_ra() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.ra");
    let field: Vec<f64> = (0..12).map(|k| f64::from(k) / 7.0 - 1.0).collect();
    RawArray::from_shape_vec(vec![4, 3], field.clone())
        .unwrap()
        .write_file(&f)
        .unwrap();
    let (csv, back) = (dir.path().join("f.csv"), dir.path().join("back.ra"));
    ra().arg("convert").arg(&f).arg(&csv).assert().success();
    ra().arg("convert").arg(&csv).arg(&back).assert().success();
    let b: RawArray<f64> = RawArray::read_file(&back).unwrap();
    assert_eq!((b.dims(), b.as_slice()), (&[4u64, 3][..], &field[..]));

    // Integers stay integers (int64); one column is one dim.
    std::fs::write(&csv, "# counts\n3\n-1\n\n42\n").unwrap();
    ra().arg("convert").arg(&csv).arg(&back).assert().success();
    let b: RawArray<i64> = RawArray::read_file(&back).unwrap();
    assert_eq!((b.dims(), b.as_slice()), (&[3u64][..], &[3, -1, 42][..]));

    // The reference complex64 file, through our CSV: complex128 equal to it as f32.
    ra().arg("convert")
        .arg(reference("test.ra"))
        .arg(&csv)
        .assert()
        .success();
    ra().arg("convert").arg(&csv).arg(&back).assert().success();
    let b: RawArray<Complex<f64>> = RawArray::read_file(&back).unwrap();
    let want: RawArray<Complex<f32>> = RawArray::read_file(reference("test.ra")).unwrap();
    assert_eq!(b.dims(), want.dims());
    for (got, want) in b.as_slice().iter().zip(want.as_slice()) {
        assert_eq!((got.re as f32, got.im as f32), (want.re, want.im));
    }

    // A ragged table and a word are errors naming the line; nothing is written.
    let out = dir.path().join("bad.ra");
    std::fs::write(&csv, "1,2,3\n4,5\n").unwrap();
    let err = fails_with_one_line(ra().arg("convert").arg(&csv).arg(&out));
    assert!(err.contains("line 2 has 2 values, line 1 has 3"), "{err}");
    std::fs::write(&csv, "1,2\n3,x\n").unwrap();
    let err = fails_with_one_line(ra().arg("convert").arg(&csv).arg(&out));
    assert!(
        err.contains("line 2, column 2: 'x' is not a number"),
        "{err}"
    );
    assert!(!out.exists());
}

/// numpy's `loadtxt(dtype=complex)` reads our complex CSV, infinities and NaN included: the
/// reference `test.ra` (element k is k - i/k, so the first is 0 - inf i).
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_loads_complex_csv() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("test.csv");
    ra().arg("convert")
        .arg(reference("test.ra"))
        .arg(&csv)
        .assert()
        .success();
    let script = dir.path().join("load.py");
    std::fs::write(
        &script,
        "import sys, json, numpy as np\n\
         a = np.loadtxt(sys.argv[1], dtype=complex, delimiter=',', ndmin=2)\n\
         print(json.dumps([a.shape, [[str(z) for z in row] for row in a]]))\n",
    )
    .unwrap();
    let out = python_env::run_script(&script, &[&csv]);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    // dims [3, 4]: numpy shape (4, 3), rows of three; row j holds k = 3j..3j+2.
    assert_eq!(v[0], serde_json::json!([4, 3]));
    assert_eq!(v[1][0][0], "-infj");
    assert_eq!(v[1][0][1], "(1-1j)");
    assert_eq!(v[1][1][0], "(3-0.33333334j)"); // the shortest decimal of the f32
}

#[test]
fn a_failed_conversion_keeps_an_existing_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keep.npy");
    std::fs::write(&out, b"old").unwrap();
    let bad = dir.path().join("bad.ra");
    let mut bytes = std::fs::read(reference("randf32.ra")).unwrap();
    bytes.truncate(100);
    std::fs::write(&bad, bytes).unwrap();
    let err = fails_with_one_line(ra().arg("convert").arg(&bad).arg(&out));
    assert!(err.contains("bad.ra") && err.contains("truncated"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    assert_eq!(listing(dir.path()), ["bad.ra", "keep.npy"]);
}

// ---------------------------------------------------------------------------------------
// compress, decompress, reshape

#[test]
fn decompress_of_the_compressed_reference_is_the_plain_one_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.ra");
    ra().arg("decompress")
        .arg(reference("mnist_8_z.ra"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(reference("mnist_8.ra")).unwrap()
    );
}

#[test]
fn compress_in_place_and_back_keeps_byte_order_and_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ra");
    let a = RawArray::from_shape_vec(vec![50, 20], (0..1000).map(|i| (i % 7) as f32).collect())
        .unwrap();
    let mut original = Vec::new();
    a.write_to_with(&mut original, &WriteOptions::new().big_endian(true))
        .unwrap();
    original.extend_from_slice(b"{\"note\": 1}");
    std::fs::write(&path, &original).unwrap();

    ra().arg("compress")
        .arg(&path)
        .assert()
        .success()
        .stdout("")
        .stderr("");
    let z = std::fs::read(&path).unwrap();
    let h = Header::decode(&z).unwrap();
    assert!(h.is_compressed() && h.is_big_endian());
    assert!(z.len() < original.len() / 4);
    assert!(z.ends_with(b"{\"note\": 1}"));
    assert_eq!(RawArray::<f32>::from_bytes(&z).unwrap(), a);
    // Compressing a compressed file changes nothing.
    ra().arg("compress").arg(&path).assert().success();
    assert_eq!(std::fs::read(&path).unwrap(), z);

    ra().arg("decompress").arg(&path).assert().success();
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // The reference compresses, and decompresses to itself.
    let m = dir.path().join("m_z.ra");
    ra().arg("compress")
        .arg(reference("mnist_8.ra"))
        .arg("-o")
        .arg(&m)
        .assert()
        .success();
    assert!(Header::decode(&std::fs::read(&m).unwrap())
        .unwrap()
        .is_compressed());
    ra().arg("decompress").arg(&m).assert().success();
    assert_eq!(
        std::fs::read(&m).unwrap(),
        std::fs::read(reference("mnist_8.ra")).unwrap()
    );
}

#[test]
fn reshape_keeps_the_data_and_checks_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ra");
    copy_writable(&reference("test.ra"), &path);
    ra().args(["reshape"])
        .arg(&path)
        .args(["2", "6"])
        .assert()
        .success();
    let (h, data) = data_of(&path);
    assert_eq!(h.dims, vec![2, 6]);
    assert_eq!(data, data_of(&reference("test.ra")).1);
    let before = std::fs::read(&path).unwrap();
    let err = fails_with_one_line(ra().arg("reshape").arg(&path).args(["5", "5"]));
    assert!(
        err.contains("t.ra") && err.contains("12 elements") && err.contains("25"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // A compressed file keeps its block; the dims change, and fewer dims shorten the header.
    let z = dir.path().join("z.ra");
    ra().arg("reshape")
        .arg(reference("mnist_8_z.ra"))
        .arg("2352")
        .arg("-o")
        .arg(&z)
        .assert()
        .success();
    let zb = std::fs::read(&z).unwrap();
    let zh = Header::decode(&zb).unwrap();
    assert_eq!((zh.dims.clone(), zh.size), (vec![2352], 486));
    assert_eq!(
        &zb[56..],
        &std::fs::read(reference("mnist_8_z.ra")).unwrap()[72..]
    );
    assert_eq!(listing(dir.path()), ["t.ra", "z.ra"]);
}

// ---------------------------------------------------------------------------------------
// checksum, verify

#[test]
fn checksum_of_file_and_data_section() {
    let path = reference("mnist_8.ra");
    let bytes = std::fs::read(&path).unwrap();
    let out = stdout_of(ra().arg("checksum").arg(&path));
    let lines: Vec<&str> = out.lines().collect();
    let p = path.display();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        format!("MD5 ({p}) = 8115a9ca3dc12d0f38aa68ec0e100a4c")
    );
    use sha2::Sha256;
    assert_eq!(
        lines[1],
        format!("SHA256 ({p}) = {}", hex(&Sha256::digest(&bytes)))
    );
    assert_eq!(
        lines[2],
        format!("MD5-DATA ({p}) = {}", md5_hex(&bytes[72..]))
    );
    assert_eq!(
        lines[3],
        format!("SHA256-DATA ({p}) = {}", hex(&Sha256::digest(&bytes[72..])))
    );
    let out = stdout_of(ra().args(["checksum", "--algo", "md5"]).arg(&path));
    assert_eq!(out.lines().collect::<Vec<_>>(), [lines[0], lines[2]]);
    // The data section excludes trailing bytes and is the stored (compressed) bytes.
    let z = reference("mnist_8_z.ra");
    let zb = std::fs::read(&z).unwrap();
    let out = stdout_of(ra().args(["checksum", "--algo", "md5"]).arg(&z));
    assert!(out.ends_with(&format!("= {}\n", md5_hex(&zb[72..]))));
}

#[test]
fn verify_passes_on_the_reference_sums() {
    let out = stdout_of(ra().arg("verify").arg(reference("CHECKSUMS.md5")));
    assert_eq!(out.lines().count(), 14);
    assert!(out.lines().all(|l| l.ends_with(": OK")), "{out}");
    assert!(out.contains("mnist_8.png: OK"));
}

#[test]
fn verify_fails_on_a_corrupted_copy() {
    let dir = tempfile::tempdir().unwrap();
    for name in listing(&reference_dir()) {
        copy_writable(&reference(&name), &dir.path().join(&name));
    }
    let victim = dir.path().join("randf32.ra");
    let mut b = std::fs::read(&victim).unwrap();
    b[100] ^= 1;
    std::fs::write(&victim, b).unwrap();
    let out = ra()
        .arg("verify")
        .arg(dir.path().join("CHECKSUMS.md5"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("randf32.ra: FAILED\n"), "{stdout}");
    assert_eq!(stdout.matches(": OK").count(), 13);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("CHECKSUMS.md5: 1 of 14 checksums did not match"),
        "{stderr}"
    );
    // A missing file fails too.
    std::fs::remove_file(dir.path().join("test.ra")).unwrap();
    ra().arg("verify")
        .arg(dir.path().join("CHECKSUMS.md5"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("test.ra: FAILED open or read"));
}

#[test]
fn verify_reads_what_checksum_writes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["test.ra", "mnist_8_z.ra"] {
        copy_writable(&reference(name), &dir.path().join(name));
    }
    let sums = ra()
        .current_dir(dir.path())
        .args(["checksum", "test.ra", "mnist_8_z.ra"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    std::fs::write(dir.path().join("SUMS"), &sums).unwrap();
    let out = stdout_of(ra().arg("verify").arg(dir.path().join("SUMS")));
    assert_eq!(out.matches(": OK").count(), 8, "{out}");
    assert!(out.contains("test.ra (data): OK"));
    // Trailing bytes change the file's sums but not the data section's.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("test.ra"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"trailer").unwrap();
    let out = ra()
        .arg("verify")
        .arg(dir.path().join("SUMS"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("test.ra: FAILED") && stdout.contains("test.ra (data): OK"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------
// records and trailers

/// tests/python/npy_check.py's REC: `[('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]`.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Rec {
    t: f64,
    xyz: [f32; 3],
    id: u16,
}

fn rec(k: u64) -> Rec {
    Rec {
        t: k as f64 * 0.5,
        xyz: [k as f32, k as f32 + 0.25, -(k as f32)],
        id: (k * 7 + 1) as u16,
    }
}

fn recs(n: u64) -> Vec<Rec> {
    (0..n).map(rec).collect()
}

/// A record file of `n` records of one `Rec` each, with params.
fn record_file(path: &Path, n: u64) {
    let mut w =
        RecordWriter::<Rec>::create(path, serde_json::json!({"dt": 0.5, "units": "s"})).unwrap();
    for r in recs(n) {
        w.append(&r).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn info_shows_the_trailer_params_and_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ra");
    record_file(&path, 4);
    let text = stdout_of(ra().arg("info").arg(&path));
    for want in [
        "user(22 bytes) (eltype 0, user-defined)",
        "numpy dtype: [('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]",
        "trailer block version 1; params: {\"dt\":0.5,\"units\":\"s\"}; record schema: \
         [('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["eltype"], 0);
    assert_eq!(
        j["dtype"],
        "[('t', '<f8'), ('xyz', '<f4', (3,)), ('id', '<u2')]"
    );
    assert_eq!(j["trailer"]["params"]["dt"], 0.5);
    assert_eq!(
        j["trailer"]["numpy_descr"],
        serde_json::json!([["t", "<f8"], ["xyz", "<f4", [3]], ["id", "<u2"]])
    );
    assert_eq!(j["trailer_error"], Value::Null);
    let file_len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(j["trailer_bytes"], file_len - 56 - 4 * 22);
    // A damaged block is reported, and the array is still described.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(j["trailer"], Value::Null);
    assert!(
        j["trailer_error"].as_str().unwrap().contains("trailer"),
        "{j}"
    );
}

/// A writer that stops without finishing (as a killed one: its writes are in the file, its
/// last records never committed) leaves bytes between the data and the spare trailer;
/// `ra info` counts them and names the command that salvages what can be.
#[test]
fn info_reports_uncommitted_records_of_a_writer_that_did_not_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crashed.ra");
    let mut w: RecordWriter<Rec> = RecordOptions::new()
        .params(serde_json::json!({"dt": 0.5}))
        .buffer_bytes(64) // written out (uncommitted) every few records
        .create(&path)
        .unwrap();
    let all = recs(40);
    w.append_slice(&all[..10]).unwrap();
    w.flush().unwrap();
    w.append_slice(&all[10..]).unwrap();
    std::mem::forget(w); // no finish, no final flush: what a kill leaves
    let text = stdout_of(ra().arg("info").arg(&path));
    assert!(text.contains("[10], 10 elements"), "{text}");
    assert!(
        text.contains("bytes after the data are not committed"),
        "{text}"
    );
    assert!(
        text.contains(&format!("ra recover {}", path.display())),
        "{text}"
    );
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    let loose = j["uncommitted_bytes"].as_u64().unwrap();
    assert!(loose >= 30 * 22 - 64, "{j}"); // all but the last buffer went out
                                           // A finished file has none.
    let done = dir.path().join("done.ra");
    record_file(&done, 4);
    let j: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&done))).unwrap();
    assert_eq!(j["uncommitted_bytes"], 0);
}

/// A record file cut short (a partial copy): `ra info` shows its header and what is missing
/// and exits 1; `ra recover` says what forcing keeps; `ra recover --force` keeps the complete
/// records, byte for byte, and drops the partial one.
#[test]
fn a_record_file_cut_short_is_described_and_salvaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.ra");
    record_file(&path, 30);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..56 + 12 * 22 + 7]).unwrap(); // 12 records and 7 bytes
    let out = ra()
        .arg("info")
        .arg(&path)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[30], 30 elements"), "{text}");
    assert!(
        text.contains(&format!(
            "missing:     {} of {} data bytes (the file was cut short); it holds 12 complete \
             records of the last dim's 30: `ra recover --force {}` keeps them",
            30 * 22 - 12 * 22 - 7,
            30 * 22,
            path.display()
        )),
        "{text}"
    );
    assert!(String::from_utf8(out.stderr).unwrap().contains("truncated"));
    let j: Value = serde_json::from_str(
        &String::from_utf8(
            ra().args(["info", "--json"])
                .arg(&path)
                .assert()
                .code(1)
                .get_output()
                .stdout
                .clone(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(j["missing_bytes"], 30 * 22 - 12 * 22 - 7);

    let err = fails_with_one_line(ra().arg("recover").arg(&path));
    assert!(err.contains("12 complete records of the 30"), "{err}");
    let said = stdout_of(ra().args(["recover", "--force"]).arg(&path));
    assert!(
        said.contains("30 records -> 12 records; no trailer; 7 bytes removed"),
        "{said}"
    );
    let a: RawArray<Rec> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.as_slice(), &recs(30)[..12]);
}

/// `.npy` has no place for a trailer's params: converting says they are not kept, naming them;
/// a file without params converts in silence.
#[test]
fn npy_conversion_warns_that_params_are_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (rec, npy) = (dir.path().join("rec.ra"), dir.path().join("rec.npy"));
    record_file(&rec, 3);
    let out = ra()
        .arg("convert")
        .arg(&rec)
        .arg(&npy)
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("warning")
            && err.contains(r#"{"dt":0.5,"units":"s"}"#)
            && err.contains("not kept"),
        "{err}"
    );
    let out = ra()
        .arg("convert")
        .arg(reference("randf32.ra"))
        .arg(dir.path().join("f.npy"))
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!String::from_utf8(out.stderr).unwrap().contains("warning"));
}

#[test]
fn cat_prints_records_by_field_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ra");
    record_file(&path, 3);
    let out = stdout_of(ra().arg("cat").arg(&path));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "[0]\t{t: 0.0, xyz: [0.0, 0.25, -0.0], id: 1}",
            "[1]\t{t: 0.5, xyz: [1.0, 1.25, -1.0], id: 8}",
            "[2]\t{t: 1.0, xyz: [2.0, 2.25, -2.0], id: 15}",
        ]
    );
    let out = stdout_of(ra().args(["cat", "--json", "--head", "1"]).arg(&path));
    assert_eq!(
        out,
        "{\"index\":[0],\"value\":{\"t\":0.0,\"xyz\":[0.0,0.25,-0.0],\"id\":1}}\n"
    );
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn records_become_structured_npy_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // One record per value, dims [4].
    let one = dir.path().join("rec_4.ra");
    record_file(&one, 4);
    // Records of three values, dims [3, 2].
    let three = dir.path().join("rec_3x2.ra");
    let mut w = RecordOptions::new()
        .record_dims(vec![3])
        .create::<Rec>(&three)
        .unwrap();
    w.append_slice(&recs(6)).unwrap();
    w.finish().unwrap();
    // A big-endian file: the schema says which bytes to swap.
    let be = dir.path().join("rec_2x2_be.ra");
    let mut bytes = Vec::new();
    RawArray::from_shape_vec(vec![2, 2], recs(4))
        .unwrap()
        .write_to_with(&mut bytes, &WriteOptions::new().big_endian(true))
        .unwrap();
    let end = bytes.len() as u64;
    bytes.extend(
        Trailer::for_element::<Rec>(Value::Null)
            .unwrap()
            .encode_block(end),
    );
    std::fs::write(&be, bytes).unwrap();
    for input in [&one, &three, &be] {
        let name = input
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .replace(".ra", ".npy");
        ra().arg("convert")
            .arg(input)
            .arg(out.path().join(&name))
            .assert()
            .success();
    }
    python(&[&"records", &out.path()]);
    // Back to .ra: the same data bytes, the same dtype in the trailer (numpy has no params).
    let back = dir.path().join("back.ra");
    ra().arg("convert")
        .arg(out.path().join("rec_3x2.npy"))
        .arg(&back)
        .assert()
        .success();
    let a: RawArray<Rec> = RawArray::read_file(&back).unwrap();
    assert_eq!((a.dims(), a.as_slice()), (&[3u64, 2][..], &recs(6)[..]));
    let t = Trailer::read_file(&back).unwrap().unwrap();
    assert_eq!(t.numpy_descr, Some(Rec::layout().numpy_descr_json()));
    assert_eq!(t.params, Value::Null);
    let back_be = dir.path().join("back_be.ra");
    ra().arg("convert")
        .arg(out.path().join("rec_2x2_be.npy"))
        .arg(&back_be)
        .assert()
        .success();
    let a: RawArray<Rec> = RawArray::read_file(&back_be).unwrap();
    assert_eq!(a.as_slice(), &recs(4)[..]);
    // Without a schema, user-defined elements have no dtype: nothing written.
    let bare = dir.path().join("bare.ra");
    DynArray::new(ElType::User, 22, vec![1], vec![0; 22])
        .unwrap()
        .write_file(&bare)
        .unwrap();
    let err = fails_with_one_line(
        ra().arg("convert")
            .arg(&bare)
            .arg(out.path().join("bare.npy")),
    );
    assert!(err.contains("needs a record schema"), "{err}");
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_written_structured_npy_converts_to_records() {
    let dir = tempfile::tempdir().unwrap();
    python(&[&"write_records", &dir.path()]);
    for (name, dims) in [
        ("rec_4_C", vec![4u64]),
        ("rec_3x2_C", vec![3, 2]),
        ("rec_3x2_F", vec![3, 2]),
    ] {
        let out = dir.path().join(format!("{name}.ra"));
        ra().arg("convert")
            .arg(dir.path().join(format!("{name}.npy")))
            .arg(&out)
            .assert()
            .success();
        let a: RawArray<Rec> = RawArray::read_file(&out).unwrap();
        assert_eq!(a.dims(), &dims[..], "{name}");
        assert_eq!(a.as_slice(), &recs(dims.iter().product())[..], "{name}");
        let t = Trailer::read_file(&out).unwrap().unwrap();
        assert_eq!(
            t.numpy_descr,
            Some(Rec::layout().numpy_descr_json()),
            "{name}"
        );
        // And it reads as a record file.
        assert!(stdout_of(ra().args(["cat", "--head", "1"]).arg(&out)).contains("id: 1}"));
    }
}

#[test]
fn recover_extends_the_header_over_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    // No trailer: a header for 2 values, 3 whole values after them and a torn one.
    let plain = dir.path().join("plain.ra");
    let mut bytes = RawArray::from_vec(vec![1u32, 2]).to_bytes();
    bytes.extend([3u32, 4, 5].iter().flat_map(|v| v.to_le_bytes()));
    bytes.extend([6, 0]);
    std::fs::write(&plain, &bytes).unwrap();
    // Without --force, bytes no trailer vouches for are named and left alone.
    let err = fails_with_one_line(ra().arg("recover").arg(&plain));
    assert!(
        err.contains("the 14 bytes after the data are not a record trailer (bytes 030000000400000005000000060")
            && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&plain).unwrap(), bytes);
    let out = stdout_of(ra().arg("recover").arg("--force").arg(&plain));
    assert_eq!(
        out,
        format!(
            "{}: 2 records -> 5 records; no trailer; 0 bytes removed\n",
            plain.display()
        )
    );
    let a: RawArray<u32> = RawArray::read_file(&plain).unwrap();
    assert_eq!(a.as_slice(), [1, 2, 3, 4, 5]);

    // A record file caught by a crash between writing a flush's records and its header
    // update: the header says 2 records, 4 are there with the flush's trailer block after them.
    let live = dir.path().join("live.ra");
    let mut w = RecordWriter::<Rec>::create(&live, serde_json::json!({"dt": 0.5})).unwrap();
    for r in recs(2) {
        w.append(&r).unwrap();
    }
    w.flush().unwrap();
    let two_records_header = std::fs::read(&live).unwrap()[..56].to_vec();
    for r in &recs(4)[2..] {
        w.append(r).unwrap();
    }
    w.flush().unwrap();
    let mut crashed = std::fs::read(&live).unwrap();
    drop(w);
    crashed[..56].copy_from_slice(&two_records_header);
    let rec_path = dir.path().join("rec.ra");
    std::fs::write(&rec_path, &crashed).unwrap();
    let out = stdout_of(ra().arg("recover").arg(&rec_path));
    let removed = crashed.len() as u64 - std::fs::metadata(&rec_path).unwrap().len();
    assert!(removed > 0, "the free space and the spare copy are cut off");
    assert!(
        out.ends_with(&format!(
            ": 2 records -> 4 records; trailer kept; {removed} bytes removed\n"
        )),
        "{out}"
    );
    let a: RawArray<Rec> = RawArray::read_file(&rec_path).unwrap();
    assert_eq!(a.as_slice(), &recs(4)[..]);
    let out = stdout_of(ra().arg("recover").arg(&rec_path));
    assert!(
        out.ends_with(": 4 records (unchanged); trailer kept; 0 bytes removed\n"),
        "{out}"
    );

    let z = dir.path().join("z.ra");
    copy_writable(&reference("mnist_8_z.ra"), &z);
    let err = fails_with_one_line(ra().arg("recover").arg(&z));
    assert!(err.contains("z.ra") && err.contains("LZ4"), "{err}");
}

#[test]
fn rewrites_place_the_trailer_where_record_readers_look() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ra");
    record_file(&path, 4);
    // Two dims instead of one: the header grows by 8 bytes, the block moves with the data end.
    let r = dir.path().join("r.ra");
    ra().args(["reshape", "-o"])
        .arg(&r)
        .arg(&path)
        .args(["2", "2"])
        .assert()
        .success();
    let reshaped = std::fs::read(&r).unwrap();
    assert_eq!(reshaped.len(), std::fs::read(&path).unwrap().len() + 8);
    assert_eq!(Trailer::read_file(&r).unwrap().unwrap().params["dt"], 0.5);
    let out = stdout_of(ra().arg("recover").arg(&r));
    assert!(
        out.ends_with(": 2 records (unchanged); trailer kept; 0 bytes removed\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(&r).unwrap(),
        reshaped,
        "recover found nothing to repair"
    );
    // Compressed, the block is still found; decompressed, the file is what it was.
    ra().arg("compress").arg(&r).assert().success();
    assert!(Header::decode(&std::fs::read(&r).unwrap())
        .unwrap()
        .is_compressed());
    assert_eq!(
        Trailer::read_file(&r).unwrap().unwrap().params["units"],
        "s"
    );
    ra().arg("decompress").arg(&r).assert().success();
    assert_eq!(std::fs::read(&r).unwrap(), reshaped);
}

// ---------------------------------------------------------------------------------------
// errors and usage

#[test]
fn malformed_ra_files_give_exit_1_and_one_line_for_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(reference("randf32.ra")).unwrap();
    let mut big_ndims = good.clone();
    big_ndims[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut bad_eltype = good.clone();
    bad_eltype[16] = 9;
    let mut bad_size = good.clone();
    bad_size[32] = 63;
    let mut lz4 = std::fs::read(reference("mnist_8_z.ra")).unwrap();
    for b in &mut lz4[72..] {
        *b = 0xff;
    }
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "truncated header"),
        (
            "magic",
            b"RAWARRAY and some more bytes to make up a header....".to_vec(),
            "bad magic",
        ),
        ("truncated", good[..100].to_vec(), "truncated"),
        // More dims than any header may have (MAX_NDIMS) are refused before they are read.
        ("ndims", big_ndims, "at most 1024 dims"),
        ("eltype", bad_eltype, "unknown eltype 9"),
        ("size", bad_size, "size is 63"),
        ("lz4", lz4, "LZ4"),
    ];
    for (what, bytes, want) in cases {
        let path = dir.path().join(format!("{what}.ra"));
        std::fs::write(&path, &bytes).unwrap();
        let out_npy = dir.path().join("out.npy");
        let commands: Vec<Vec<std::ffi::OsString>> = vec![
            vec!["info".into(), path.clone().into()],
            vec!["info".into(), "--json".into(), path.clone().into()],
            vec!["cat".into(), path.clone().into()],
            vec![
                "convert".into(),
                path.clone().into(),
                out_npy.clone().into(),
            ],
            vec![
                "convert".into(),
                path.clone().into(),
                dir.path().join("o.png").into(),
            ],
            vec![
                "convert".into(),
                path.clone().into(),
                dir.path().join("o.csv").into(),
            ],
            vec!["compress".into(), path.clone().into()],
            vec!["decompress".into(), path.clone().into()],
            vec!["reshape".into(), path.clone().into(), "16".into()],
            vec!["checksum".into(), path.clone().into()],
        ];
        for (i, args) in commands.into_iter().enumerate() {
            // LZ4 data is only looked at by the commands that decompress it: cat, convert to
            // .npy, decompress (png and csv refuse the dims [28, 28, 3] first).
            if what == "lz4" && ![2, 3, 7].contains(&i) {
                continue;
            }
            let err = fails_with_one_line(ra().args(&args));
            assert!(
                err.contains(&format!("{what}.ra")),
                "{what} {args:?}: {err}"
            );
            // `ra info` names what a file that is not .ra looks like (tested on its own).
            let want = match (what, i) {
                ("empty", 0 | 1) => "the file is empty",
                ("magic", 0 | 1) => "looks like text",
                _ => want,
            };
            assert!(err.contains(want), "{what} {args:?}: {err}");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bytes,
                "{what} {args:?}: input changed"
            );
            assert_eq!(
                listing(dir.path()),
                [format!("{what}.ra")],
                "{what} {args:?}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
    let missing = dir.path().join("missing.ra");
    let err = fails_with_one_line(ra().arg("info").arg(&missing));
    assert!(
        err.contains("missing.ra") && err.contains("No such file"),
        "{err}"
    );
    let err = fails_with_one_line(ra().arg("verify").arg(&missing));
    assert!(err.contains("missing.ra"), "{err}");
    let png = dir.path().join("bad.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let err = fails_with_one_line(ra().arg("convert").arg(&png).arg(dir.path().join("x.ra")));
    assert!(err.contains("bad.png"), "{err}");
    assert_eq!(listing(dir.path()), ["bad.png"]);
}

#[test]
fn usage_errors_exit_2() {
    ra().assert().code(2);
    ra().arg("frobnicate").assert().code(2);
    ra().arg("info").assert().code(2);
    ra().args(["cat", "--head", "x"])
        .arg(reference("test.ra"))
        .assert()
        .code(2);
    ra().args(["reshape"])
        .arg(reference("test.ra"))
        .arg("-3")
        .assert()
        .code(2);
    let dir = tempfile::tempdir().unwrap();
    ra().arg("convert")
        .arg(reference("test.ra"))
        .arg(dir.path().join("x.txt"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("extensions"));
    ra().args(["convert", "--rgb"])
        .arg(reference("test.ra"))
        .arg(dir.path().join("x.npy"))
        .assert()
        .code(2);
    ra().arg("convert")
        .arg(reference("test.ra"))
        .arg(dir.path().join("x.ra"))
        .assert()
        .code(2);
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for sub in [
        "info",
        "cat",
        "convert",
        "compress",
        "decompress",
        "reshape",
        "checksum",
        "verify",
    ] {
        ra().args([sub, "--help"]).assert().success().stdout(
            predicate::str::contains("Examples:")
                .and(predicate::str::contains(format!("ra {sub}"))),
        );
    }
    ra().arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"));
}
