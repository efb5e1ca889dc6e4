//! `ra cat`: values with column-major indices, records by field name, closed pipes.

mod common;

use std::process::Command as Process;

use rawarray_serde::{DynArray, ElType, RawArray, WriteOptions};
use serde_json::Value;

use common::*;

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

/// Every row of the library's element-type table, printed by `ra cat` and named by `ra info`,
/// from hand-computed bytes: 1.5 and -2.0 (or 1 and -2, or 1 and 2 unsigned) per element type.
/// The `match` is exhaustive: a row added to the table does not compile here until it is given
/// its bytes and printed form.
#[test]
fn every_element_type_of_the_table_prints_and_is_named() {
    use rawarray_serde::eltype::ScalarType as S;
    use rawarray_serde::Header;
    let dir = tempfile::tempdir().unwrap();
    let int = |n: usize, v: i128| v.to_le_bytes()[..n].to_vec();
    for &t in S::ALL {
        // (bytes of element 0, bytes of element 1, printed element 0, printed element 1)
        let (a, b, pa, pb): (Vec<u8>, Vec<u8>, String, String) = match t {
            S::I8 | S::I16 | S::I32 | S::I64 | S::I128 => {
                let n = t.elbyte() as usize;
                (int(n, 1), int(n, -2), "1".into(), "-2".into())
            }
            S::U8 | S::U16 | S::U32 | S::U64 | S::U128 => {
                let n = t.elbyte() as usize;
                (int(n, 1), int(n, 2), "1".into(), "2".into())
            }
            S::F16 => (
                vec![0x00, 0x3e],
                vec![0x00, 0xc0],
                "1.5".into(),
                "-2.0".into(),
            ),
            S::BF16 => (
                vec![0xc0, 0x3f],
                vec![0x00, 0xc0],
                "1.5".into(),
                "-2.0".into(),
            ),
            S::F32 => (
                vec![0, 0, 0xc0, 0x3f],
                vec![0, 0, 0, 0xc0],
                "1.5".into(),
                "-2.0".into(),
            ),
            S::F64 => (
                vec![0, 0, 0, 0, 0, 0, 0xf8, 0x3f],
                vec![0, 0, 0, 0, 0, 0, 0, 0xc0],
                "1.5".into(),
                "-2.0".into(),
            ),
            S::Complex32 => (
                vec![0x00, 0x3e, 0x00, 0xc0],
                vec![0x00, 0xc0, 0x00, 0x3e],
                "1.5-2.0i".into(),
                "-2.0+1.5i".into(),
            ),
            S::Complex64 => (
                vec![0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0],
                vec![0, 0, 0, 0xc0, 0, 0, 0xc0, 0x3f],
                "1.5-2.0i".into(),
                "-2.0+1.5i".into(),
            ),
            S::Complex128 => {
                let (p, m) = ([0, 0, 0, 0, 0, 0, 0xf8, 0x3f], [0, 0, 0, 0, 0, 0, 0, 0xc0]);
                (
                    [p, m].concat(),
                    [m, p].concat(),
                    "1.5-2.0i".into(),
                    "-2.0+1.5i".into(),
                )
            }
            // No Rust type: printed as hex.
            S::F128 | S::Complex256 => {
                let n = t.elbyte() as usize;
                let (a, b) = (vec![0xab; n], vec![0x01; n]);
                let (pa, pb) = (hex(&a), hex(&b));
                (a, b, pa, pb)
            }
        };
        let path = dir.path().join(format!("{}.ra", t.label()));
        let mut file = Header::new(t.eltype(), t.elbyte(), vec![2])
            .unwrap()
            .encode();
        file.extend([a, b].concat());
        std::fs::write(&path, &file).unwrap();
        let out = stdout_of(ra().arg("cat").arg(&path));
        assert_eq!(out, format!("[0]\t{pa}\n[1]\t{pb}\n"), "{t:?}");
        let info: Value =
            serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
        assert_eq!(info["type"], t.label(), "{t:?}");
        assert_eq!(info["dtype"].as_str(), t.numpy(), "{t:?}");
    }
}
