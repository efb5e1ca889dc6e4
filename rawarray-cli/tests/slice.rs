//! `ra slice`: blocks written as new files, equal to the same block cut from a whole read, with
//! the trailer kept; bad ranges are errors naming the dim.

use assert_cmd::Command;
use predicates::prelude::*;
use rawarray_serde::{DynArray, RawArray, Trailer, WriteOptions};

fn ra() -> Command {
    Command::cargo_bin("ra").expect("the ra binary is built")
}

fn cube(dir: &std::path::Path, opts: &WriteOptions) -> std::path::PathBuf {
    let a = RawArray::from_shape_vec(vec![4, 3, 5], (0..60).map(|i| i as f32).collect()).unwrap();
    let mut d = DynArray::from_typed(&a);
    d.set_trailer(&Trailer::new(serde_json::json!({"units": "m"})).unwrap());
    let path = dir.join("cube.ra");
    d.write_file_with(&path, opts).unwrap();
    path
}

#[test]
fn a_plane_a_block_and_a_squeezed_plane() {
    let dir = tempfile::tempdir().unwrap();
    for opts in [
        WriteOptions::new(),
        WriteOptions::new().big_endian(true).compress(true),
    ] {
        let input = cube(dir.path(), &opts);
        let out = dir.path().join("plane.ra");
        ra().args(["slice"])
            .arg(&input)
            .arg(&out)
            .arg(":,:,2")
            .assert()
            .success();
        let plane: RawArray<f32> = RawArray::read_file(&out).unwrap();
        assert_eq!(plane.dims(), &[4, 3, 1]);
        assert_eq!(
            plane.as_slice(),
            (24..36).map(|i| i as f32).collect::<Vec<_>>()
        );
        let t = Trailer::read_file(&out).unwrap().unwrap();
        assert_eq!(t.params["units"], "m");

        ra().args(["slice"])
            .arg(&input)
            .arg(&out)
            .arg("1:3, 2 ,3:")
            .assert()
            .success();
        let b: RawArray<f32> = RawArray::read_file(&out).unwrap();
        assert_eq!(b.dims(), &[2, 1, 2]);
        assert_eq!(b.as_slice(), &[45.0, 46.0, 57.0, 58.0]);

        ra().args(["slice", "--squeeze"])
            .arg(&input)
            .arg(&out)
            .arg(":2,:,4")
            .assert()
            .success();
        let s: RawArray<f32> = RawArray::read_file(&out).unwrap();
        assert_eq!(s.dims(), &[2, 3]);
        assert_eq!(s.as_slice(), &[48.0, 49.0, 52.0, 53.0, 56.0, 57.0]);
    }
}

#[test]
fn bad_ranges_name_the_dim_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = cube(dir.path(), &WriteOptions::new());
    let out = dir.path().join("never.ra");
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,:,5")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "subset dim 2: range 5..6 is out of bounds for length 5",
        ));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,:")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("2 ranges for 3 dims [4, 3, 5]"));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,x,:")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("dim 1"));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg("3:1,:,:")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("dim 0"));
    assert!(!out.exists());
}

#[test]
fn help_documents_the_range_syntax() {
    ra().args(["slice", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("ra slice big.ra plane.ra :,:,42"))
        .stdout(predicate::str::contains("the order ra info"));
}
