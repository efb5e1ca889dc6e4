//! The Python package (`rawarray-python/`): built with maturin and installed into the tests'
//! Python environment, then its pytest suite runs (`rawarray-python/tests/`), with files this
//! test shares with it: the main job's record file for Python to read by field name, and a
//! structured array Python writes for Rust's `RecordReader` to read into a derived struct.

mod common;

#[allow(dead_code)]
#[path = "../rawarray-demo/src/main.rs"]
mod simulation;

use std::path::Path;
use std::process::Command;

use rawarray_serde::{RaRecord, Ragged, RaggedWriter, RecordReader};
use serde_json::json;

/// numpy's `[('info', 'u1', (12,)), ('index', '<u4'), ('v', '<f8', (8,))]`, as the Python
/// tests write it.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

fn simulation_files(dir: &Path) {
    let params = simulation::Params {
        particles: 6,
        steps: 40,
        flush_every: 5,
        ..Default::default()
    };
    simulation::run(&dir.join("nbody.ra"), &params).unwrap();
    let truth = simulation::all_records(&params);
    let truth = json!({
        "params": params,
        "id": truth.iter().map(|b| b.id).collect::<Vec<_>>(),
        "energy": truth.iter().map(|b| b.energy).collect::<Vec<_>>(),
    });
    std::fs::write(dir.join("nbody_truth.json"), truth.to_string()).unwrap();
}

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn the_python_package_passes_its_tests_and_agrees_with_rust() {
    common::python::install_package();
    let shared = tempfile::tempdir().unwrap();
    simulation_files(shared.path());
    ragged_files(shared.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(common::python::interpreter())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .arg(root.join("rawarray-python/tests"))
        .env("RAWARRAY_INTEROP_DIR", shared.path())
        .output()
        .expect("pytest runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{log}");
    assert!(
        out.status.success(),
        "the package's pytest suite failed:\n{log}"
    );
    // Nothing was skipped here: this run shares the files the skips wait for.
    assert!(!log.contains("skipped"), "{log}");

    // Rust reads what Python wrote (rawarray.write, and rawarray.RecordWriter three records
    // at a time), into a derived struct.
    check_foos(&shared.path().join("from_python.ra"), "python");
    check_foos(&shared.path().join("from_python_writer.ra"), "RecordWriter");
    // And the ragged files Python wrote (rawarray.write of unequal rows, RaggedWriter of text).
    let rows = Ragged::<f64>::read_file(shared.path().join("from_python_ragged.ra")).unwrap();
    let want: Vec<Vec<f64>> = (0..5).map(|k| (0..k).map(f64::from).collect()).collect();
    assert_eq!(rows.iter().collect::<Vec<_>>(), want);
    let text = Ragged::<u8>::read_file(shared.path().join("from_python_text.ra")).unwrap();
    assert!(text.is_text());
    assert_eq!(text.to_strings().unwrap(), ["", "ä", "ragged ✓"]);
}

/// Ragged files of the Rust library for the Python tests (rawarray-python/tests/test_ragged.py).
fn ragged_files(dir: &Path) {
    Ragged::from_strs(["hé", "", "abc"])
        .write_file(dir.join("rust_text.ra"))
        .unwrap();
    Ragged::from_rows([vec![1.5f32, 2.5], vec![], vec![-3.0]])
        .write_file(dir.join("rust_f32.ra"))
        .unwrap();
    Ragged::from_rows([vec![[1u16, 2, 3]], vec![], vec![[4, 5, 6], [7, 8, 9]]])
        .write_file(dir.join("rust_u16x3.ra"))
        .unwrap();
    let mut w = RaggedWriter::<i64>::create(dir.join("rust_appended.ra")).unwrap();
    for k in 0..10 {
        w.append_row(&vec![k; k as usize]).unwrap();
        w.flush().unwrap();
    }
    w.finish().unwrap();
}

fn check_foos(path: &Path, written_by: &str) {
    let r = RecordReader::<Foo>::open(path).unwrap();
    assert_eq!(r.len(), 9);
    for i in 0..9u32 {
        let rec = r.get(i as usize).unwrap().unwrap();
        let mut info = format!("record {i:05}").into_bytes();
        info.resize(12, b'.');
        assert_eq!(&rec.info[..], &info[..12], "record {i}");
        assert_eq!(rec.index, i * 7);
        let want: Vec<f64> = (0..8).map(|k| f64::from(k) * 0.5 + f64::from(i)).collect();
        assert_eq!(rec.v.to_vec(), want, "record {i}");
    }
    assert_eq!(
        r.trailer().unwrap().params,
        json!({ "written_by": written_by })
    );
}
