//! numpy reads files of derived records: the dtype Rust describes them with, and every field
//! value, checked by `tests/python/read_records.py` (numpy's view, its own header parser).
//!
//! Runs in the tests' own Python environment (`tests/common/python.rs`).

mod common;

use std::path::Path;

use half::{bf16, f16};
use num_complex::Complex;
use rawarray_serde::{Element, RaRecord, RawArray};
use serde_json::{json, Value};

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f32,
    y: f32,
}

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Mixed {
    flag: bool,
    letter: char,
    h: f16,
    b: bf16,
    z: Complex<f32>,
    #[ra(rename = "position")]
    pos: Point,
    path: [Point; 2],
    grid: [[i16; 3]; 2],
}

fn point_json(p: &Point) -> Value {
    json!({"x": p.x, "y": p.y})
}

/// Writes `array` and its spec, and has numpy check it.
fn numpy_checks<T: Element>(dir: &Path, name: &str, array: &RawArray<T>, records: Vec<Value>) {
    let out = run_numpy(dir, name, array, records);
    assert!(
        out.status.success(),
        "numpy disagrees on {name}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_numpy<T: Element>(
    dir: &Path,
    name: &str,
    array: &RawArray<T>,
    records: Vec<Value>,
) -> std::process::Output {
    let file = dir.join(format!("{name}.ra"));
    array.write_file(&file).unwrap();
    let spec = json!({
        "file": file,
        "descr_json": T::layout().numpy_descr_json(),
        "descr": T::layout().numpy_descr(),
        "dims": array.dims(),
        "records": records,
    });
    let spec_path = dir.join(format!("{name}.json"));
    std::fs::write(&spec_path, serde_json::to_vec(&spec).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_records.py");
    common::python::command(&script, &[&spec_path])
        .output()
        .expect("the tests' Python runs")
}

fn foo_records() -> Vec<Foo> {
    (0..5u32)
        .map(|i| Foo {
            info: std::array::from_fn(|k| b'a' + (i as u8 + k as u8) % 26),
            index: 0xABCD_0000 + i,
            v: std::array::from_fn(|k| f64::from(i) * 10.0 + k as f64 / 8.0 - 3.0),
        })
        .collect()
}

fn foo_json(r: &Foo) -> Value {
    json!({"info": r.info, "index": r.index, "v": r.v})
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_reads_foo_records() {
    let records = foo_records();
    let expected = records.iter().map(foo_json).collect();
    let dir = tempfile::tempdir().unwrap();
    numpy_checks(dir.path(), "foo", &RawArray::from_vec(records), expected);
}

/// The checker is not vacuous: one float off by a quarter in the expectation fails it.
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_check_catches_a_wrong_value() {
    let records = foo_records();
    let mut expected: Vec<Value> = records.iter().map(foo_json).collect();
    expected[3]["v"][5] = json!(records[3].v[5] + 0.25);
    let dir = tempfile::tempdir().unwrap();
    let out = run_numpy(dir.path(), "foo", &RawArray::from_vec(records), expected);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("record[3].v[5]"), "{stderr}");
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_reads_nested_records_in_two_dims() {
    let records: Vec<Mixed> = (0..6i16)
        .map(|i| {
            let f = f32::from(i);
            Mixed {
                flag: i % 2 == 1,
                letter: ['a', 'é', '∑', '😀', 'Z', '0'][i as usize],
                h: f16::from_f32(f * 0.5 - 1.0),
                b: bf16::from_f32(f * 1024.0 + 0.25),
                z: Complex::new(f, -2.0 * f),
                pos: Point { x: f, y: f + 0.5 },
                path: [Point { x: -f, y: 1.0 }, Point { x: 2.0, y: f * f }],
                grid: [[i, i + 1, i + 2], [-i, i * 10, 7]],
            }
        })
        .collect();
    let expected = records
        .iter()
        .map(|r| {
            json!({
                "flag": r.flag,
                "letter": u32::from(r.letter),
                "h": r.h.to_f64(),
                "b": r.b.to_f64(),
                "z": [r.z.re, r.z.im],
                "position": point_json(&r.pos),
                "path": r.path.iter().map(point_json).collect::<Vec<_>>(),
                "grid": r.grid,
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let array = RawArray::from_shape_vec(vec![3, 2], records).unwrap();
    numpy_checks(dir.path(), "mixed", &array, expected);
}
