//! `ra reshape`: new dims over the same data.

mod common;

use rawarray_serde::Header;

use common::*;

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
