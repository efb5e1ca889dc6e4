//! numpy reads every numeric eltype we write, and we read what numpy writes. The truth on
//! both sides is a formula of the column-major index, computed by each language on its own.

mod common;

use half::f16;
use num_complex::Complex;
use rawarray_serde::{DynArray, Element, RawArray, WriteOptions};

/// The value at column-major position k, as tests/python/numpy_core.py computes it.
trait Formula: Element + PartialEq + std::fmt::Debug {
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

fn name(dtype: &str, dims: &[u64], opts: &WriteOptions) -> String {
    let shape = if dims.is_empty() {
        "scalar".to_string()
    } else {
        dims.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("x")
    };
    let mut n = format!("{dtype}_{shape}");
    if opts.is_big_endian() {
        n += "_be";
    }
    if opts.is_compressed() {
        n += "_z";
    }
    n + ".ra"
}

fn put<T: Formula>(dir: &std::path::Path, dims: &[u64], opts: WriteOptions) {
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims.to_vec(), (0..n).map(T::at).collect()).unwrap();
    a.write_file_with(dir.join(name(T::DTYPE, dims, &opts)), &opts)
        .unwrap();
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_reads_what_we_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = WriteOptions::new;
    put::<i8>(d, &[3, 4], plain());
    put::<i16>(d, &[3, 4], plain());
    put::<i32>(d, &[3, 4], plain());
    put::<i64>(d, &[3, 4], plain());
    put::<u8>(d, &[3, 4], plain());
    put::<u16>(d, &[3, 4], plain());
    put::<u32>(d, &[3, 4], plain());
    put::<u64>(d, &[3, 4], plain());
    put::<f16>(d, &[3, 4], plain());
    put::<f32>(d, &[3, 4], plain());
    put::<f64>(d, &[3, 4], plain());
    put::<Complex<f32>>(d, &[3, 4], plain());
    put::<Complex<f64>>(d, &[3, 4], plain());
    put::<f32>(d, &[2, 3, 4], plain());
    put::<f64>(d, &[5], plain());
    put::<Complex<f32>>(d, &[], plain());
    put::<i32>(d, &[4, 0], plain());
    put::<f64>(d, &[3, 4], plain().big_endian(true));
    put::<Complex<f32>>(d, &[3, 4], plain().big_endian(true));
    put::<u16>(d, &[30, 20], plain().compress(true));
    put::<f32>(d, &[6, 5], plain().compress(true).big_endian(true));
    let out = common::python("numpy_core.py", &[&"check", &d]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        21,
        "{out}"
    );
}

fn check<T: Formula>(path: &std::path::Path, dims: &[u64]) {
    let a: RawArray<T> =
        RawArray::read_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(a.dims(), dims, "{}", path.display());
    let want: Vec<T> = (0..a.len() as u64).map(T::at).collect();
    assert_eq!(a.as_slice(), &want[..], "{}", path.display());
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn we_read_what_numpy_writes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::python("numpy_core.py", &[&"write", &d]);
    check::<i8>(&d.join("i1_3x4.ra"), &[3, 4]);
    check::<i16>(&d.join("i2_3x4.ra"), &[3, 4]);
    check::<i32>(&d.join("i4_3x4.ra"), &[3, 4]);
    check::<i64>(&d.join("i8_3x4.ra"), &[3, 4]);
    check::<u8>(&d.join("u1_3x4.ra"), &[3, 4]);
    check::<u16>(&d.join("u2_3x4.ra"), &[3, 4]);
    check::<u32>(&d.join("u4_3x4.ra"), &[3, 4]);
    check::<u64>(&d.join("u8_3x4.ra"), &[3, 4]);
    check::<f16>(&d.join("f2_3x4.ra"), &[3, 4]);
    check::<f32>(&d.join("f4_3x4.ra"), &[3, 4]);
    check::<f64>(&d.join("f8_3x4.ra"), &[3, 4]);
    check::<Complex<f32>>(&d.join("c8_3x4.ra"), &[3, 4]);
    check::<Complex<f64>>(&d.join("c16_3x4.ra"), &[3, 4]);
    check::<f32>(&d.join("f4_2x3x4.ra"), &[2, 3, 4]);
    check::<i64>(&d.join("i8_scalar.ra"), &[]);
    check::<f64>(&d.join("f8_3x4_be.ra"), &[3, 4]);
    check::<Complex<f64>>(&d.join("c16_5_be.ra"), &[5]);
    check::<u16>(&d.join("u2_7x9_z.ra"), &[7, 9]);
    check::<f32>(&d.join("f4_0x3.ra"), &[0, 3]);
    // The big-endian file through the dynamic reader comes out little-endian.
    let be = DynArray::read_file(d.join("f8_3x4_be.ra")).unwrap();
    assert!(!be.header().is_big_endian());
    assert_eq!(&be.data()[8..16], &(-2.75f64).to_le_bytes());
}

/// numpy and lz4 (the C library) read the reference files as our reader does.
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_agrees_on_the_reference_files() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "rand100.ra",
        "randc32.ra",
        "randc64.ra",
        "randf16.ra",
        "randf32.ra",
        "randf64.ra",
        "randi32.ra",
        "randi8.ra",
        "randu32.ra",
        "randu8.ra",
        "test.ra",
        "mnist_8_z.ra",
    ];
    // Our reading of each file, as plain little-endian data, for numpy to compare with its own.
    for n in names {
        let d = DynArray::read_file(common::reference(n)).unwrap();
        std::fs::write(dir.path().join(format!("{n}.bin")), d.data()).unwrap();
    }
    let ours = dir.path();
    let refdir = common::reference_dir();
    let out = common::python("numpy_reference.py", &[&"compare", &ours, &refdir]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        names.len(),
        "{out}"
    );
}
