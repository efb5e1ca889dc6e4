//! `ra convert`: .ra <-> .npy (checked by numpy), .png, .csv.

mod common;

use std::path::Path;

use half::f16;
use num_complex::Complex;
use rawarray_serde::{
    DynArray, ElType, Element, Header, RawArray, RecordOptions, Trailer, WriteOptions,
};
use serde_json::Value;

use common::*;

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
fn ra_then_npy<T: Formula>(dir: &Path, out: &Path, dims: &[u64], opts: &WriteOptions) {
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
    a.write_file_with(&ra_path, opts).unwrap();
    // -q: not even the line that says what was written.
    ra().args(["-q", "convert"])
        .arg(&ra_path)
        .arg(out.join(format!("{name}.npy")))
        .assert()
        .success()
        .stdout("")
        .stderr("");
}

fn every_dtype(dir: &Path, out: &Path, dims: &[u64], opts: &WriteOptions) {
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
        every_dtype(dir.path(), out.path(), dims, &WriteOptions::new());
    }
    every_dtype(
        dir.path(),
        out.path(),
        &[3, 2],
        &WriteOptions::new().big_endian(true),
    );
    every_dtype(
        dir.path(),
        out.path(),
        &[4, 3],
        &WriteOptions::new().compress(true),
    );
    ra_then_npy::<f64>(dir.path(), out.path(), &[3, 0], &WriteOptions::new());
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
            "padding, which .ra records do not have: 12 bytes after field 'a' (offsets 4..16)",
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

fn decode_png(path: &Path) -> (u32, u32, png::ColorType, Vec<u8>) {
    let mut d = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    d.set_transformations(png::Transformations::EXPAND);
    let mut r = d.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, info.color_type, buf)
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

/// numpy saves an aligned structured dtype with its gaps as unnamed void fields: the error
/// names the padding (where, which offsets, the sizes) and the fix, and the fix it names
/// (`repack_fields`, run by numpy) converts.
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn a_padded_structured_dtype_names_the_padding_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    python(&[&"write_padded", &dir.path()]);
    let out = dir.path().join("padded.ra");
    let err = fails_with_one_line(
        ra().arg("convert")
            .arg(dir.path().join("padded.npy"))
            .arg(&out),
    );
    assert!(
        err.contains("padded.npy: the numpy structured dtype has padding"),
        "{err}"
    );
    // a: u1 at 0, then 7 bytes to b (f8) at 8; c (u2) at 16..18, then 6 bytes to 24.
    assert!(
        err.contains("7 bytes after field 'a' (offsets 1..8)"),
        "{err}"
    );
    assert!(
        err.contains("6 bytes after field 'c' (offsets 18..24)"),
        "{err}"
    );
    assert!(err.contains("itemsize 24, packed 11"), "{err}");
    assert!(
        err.contains("repack_fields") && err.contains("align=False"),
        "{err}"
    );
    assert!(!out.exists());
    let packed = dir.path().join("packed.ra");
    ra().arg("convert")
        .arg(dir.path().join("packed.npy"))
        .arg(&packed)
        .assert()
        .success();
    let text = stdout_of(ra().arg("cat").arg(&packed));
    assert_eq!(
        text,
        "[0]\t{a: 1, b: 1.5, c: 7}\n[1]\t{a: 2, b: 2.5, c: 8}\n[2]\t{a: 3, b: 3.5, c: 9}\n"
    );
}

/// A plain array of timestamps (an `int64` file whose trailer marks it `timestamp[us]`, as
/// `rawarray.write` of a `datetime64[us]` array writes it): `ra cat` prints ISO 8601, `ra info`
/// names numpy's `datetime64`, and `.npy` both ways keeps it a `datetime64[us]` (the `.npy`
/// header read by hand).
#[test]
fn a_plain_array_of_timestamps_prints_and_converts_as_times() {
    use rawarray_serde::{time::TimeUnit, Layout, Logical};
    let dir = tempfile::tempdir().unwrap();
    let us = Layout::Scalar {
        eltype: ElType::Int,
        elbyte: 8,
        logical: Some(Logical::Timestamp {
            unit: TimeUnit::Microsecond,
            tz: None,
        }),
    };
    // 2020-01-01T12:30:00.250000Z and one microsecond before 1970.
    let values = [1_577_881_800_250_000i64, -1];
    let header = Header::new(ElType::Int, 8, vec![2]).unwrap();
    let mut bytes = header.encode();
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let end = bytes.len() as u64;
    bytes.extend_from_slice(
        &Trailer::new(Value::Null)
            .unwrap()
            .with_schema(us)
            .encode_block(end),
    );
    let ra_file = dir.path().join("t.ra");
    std::fs::write(&ra_file, &bytes).unwrap();
    assert_eq!(
        stdout_of(ra().arg("cat").arg(&ra_file)),
        "[0]\t2020-01-01T12:30:00.250000Z\n[1]\t1969-12-31T23:59:59.999999Z\n"
    );
    assert!(stdout_of(ra().arg("info").arg(&ra_file)).contains("<M8[us]"));
    let npy = dir.path().join("t.npy");
    ra().arg("convert")
        .arg(&ra_file)
        .arg(&npy)
        .assert()
        .success();
    let npy_bytes = std::fs::read(&npy).unwrap();
    let head = String::from_utf8_lossy(&npy_bytes[..128]);
    assert!(head.contains("'descr': '<M8[us]'"), "{head}");
    assert_eq!(
        &npy_bytes[npy_bytes.len() - 16..],
        &bytes[48 + 8..48 + 8 + 16]
    );
    let back = dir.path().join("back.ra");
    ra().arg("convert").arg(&npy).arg(&back).assert().success();
    assert_eq!(std::fs::read(&back).unwrap(), bytes);
}

/// A `.npy` file of version 1.0 with dtype `descr`, shape `(len,)` and the data bytes `data`,
/// laid out by hand as numpy's format documents it (magic, header length, the header dict
/// padded with spaces to a multiple of 64 bytes, a newline).
fn npy_by_hand(descr: &str, len: usize, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}

/// Big-endian datetime64 and timedelta64 `.npy` files (`>M8[ns]`, `>m8[s]`, as
/// `np.save(p, a.astype('>M8[ns]'))` writes them) convert to the same instants and lengths as
/// the little-endian ones: the int64s swapped to the file's order, marked in the trailer.
#[test]
fn big_endian_datetime_npy_converts_to_the_same_instants() {
    use rawarray_serde::{time::TimeUnit, ArrayReader, Layout, Logical};
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "M8[ns]",
            // 2020-01-01T12:30:00.250000123Z, one nanosecond before 1970, the epoch.
            vec![1_577_881_800_250_000_123i64, -1, 0],
            Logical::Timestamp {
                unit: TimeUnit::Nanosecond,
                tz: None,
            },
            "[0]\t2020-01-01T12:30:00.250000123Z\n[1]\t1969-12-31T23:59:59.999999999Z\n[2]\t1970-01-01T00:00:00.000000000Z\n",
        ),
        (
            "m8[s]",
            vec![86_400i64, -5, 1],
            Logical::Duration {
                unit: TimeUnit::Second,
            },
            "[0]\t86400s\n[1]\t-5s\n[2]\t1s\n",
        ),
    ];
    for (kind, values, logical, cat) in cases {
        let mut big = Vec::new();
        let mut little = Vec::new();
        for v in &values {
            big.extend_from_slice(&v.to_be_bytes());
            little.extend_from_slice(&v.to_le_bytes());
        }
        let name = kind.replace(['[', ']'], "_");
        let big_npy = dir.path().join(format!("{name}be.npy"));
        let little_npy = dir.path().join(format!("{name}le.npy"));
        std::fs::write(
            &big_npy,
            npy_by_hand(&format!(">{kind}"), values.len(), &big),
        )
        .unwrap();
        std::fs::write(
            &little_npy,
            npy_by_hand(&format!("<{kind}"), values.len(), &little),
        )
        .unwrap();
        let from_big = dir.path().join(format!("{name}be.ra"));
        let from_little = dir.path().join(format!("{name}le.ra"));
        ra().arg("convert")
            .arg(&big_npy)
            .arg(&from_big)
            .assert()
            .success();
        ra().arg("convert")
            .arg(&little_npy)
            .arg(&from_little)
            .assert()
            .success();
        // The values, little-endian in a little-endian file, as computed here.
        let h = Header::decode(&std::fs::read(&from_big).unwrap()).unwrap();
        assert!(!h.is_big_endian(), ">{kind}");
        let read = RawArray::<i64>::read_file(&from_big).unwrap();
        assert_eq!(read.as_slice(), &values[..], ">{kind}");
        // The marker in the trailer's schema.
        let schema = ArrayReader::open(&from_big)
            .unwrap()
            .trailer()
            .unwrap()
            .schema
            .clone();
        assert_eq!(
            schema,
            Some(Layout::Scalar {
                eltype: ElType::Int,
                elbyte: 8,
                logical: Some(logical),
            }),
            ">{kind}"
        );
        // The same file as from the little-endian `.npy`, byte for byte.
        assert_eq!(
            std::fs::read(&from_big).unwrap(),
            std::fs::read(&from_little).unwrap(),
            ">{kind}"
        );
        assert_eq!(stdout_of(ra().arg("cat").arg(&from_big)), cat, ">{kind}");
    }
}
