//! `ra recover` and files cut short.

mod common;

use rawarray_serde::{RawArray, RecordWriter};
use serde_json::Value;

use common::*;

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
    assert!(
        text.contains("[30] (numpy shape (30,)), 30 elements"),
        "{text}"
    );
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
    // The flag that forces it, in ra's words: no Rust call.
    assert!(
        err.contains("(force it: ra recover --force keeps those)"),
        "{err}"
    );
    assert!(!err.contains("::") && !err.contains("Options"), "{err}");
    let said = stdout_of(ra().args(["recover", "--force"]).arg(&path));
    assert!(
        said.contains("30 records -> 12 records; no trailer; 7 bytes removed"),
        "{said}"
    );
    let a: RawArray<Rec> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.as_slice(), &recs(30)[..12]);
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
            && err.contains("(force it: ra recover --force)"),
        "{err}"
    );
    assert!(!err.contains("::") && !err.contains("Options"), "{err}");
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
    assert!(
        err.contains("z.ra") && err.contains("stored as lz4-whole"),
        "{err}"
    );
}
