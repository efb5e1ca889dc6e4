//! The permissions of what `ra` writes, under umask 022: a new file gets what the umask gives
//! (0644, as `cp` and `File::create` give), and a file replaced keeps its own mode (here 0640),
//! for every command that writes a file: each conversion, compress, decompress, reshape and
//! slice (plain and compressed; to a new name and over an old one), the in-place rewrites, and
//! `ra man --dir`. (`ra convert x.parquet y.ra` and `x.arrow y.ra` once wrote 0600, and made a
//! replaced 0644 file 0600.)
#![cfg(unix)]

mod common;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use rawarray_serde::Ragged;

/// Runs `ra ARGS` under umask 022 (through `sh`, which sets it before `exec`), and expects it
/// to succeed.
fn ra_under_umask_022(args: &[OsString]) {
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 022 && exec \"$@\"")
        .arg("sh")
        .arg(assert_cmd::cargo::cargo_bin("ra"))
        .arg("-q")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ra {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The inputs every case starts from, in `dir`.
struct Inputs {
    ra: PathBuf,
    image: PathBuf,
    png: PathBuf,
    npy: PathBuf,
    csv: PathBuf,
    parquet: PathBuf,
    arrow: PathBuf,
    chunked: PathBuf,
    ragged: PathBuf,
}

fn inputs(dir: &Path) -> Inputs {
    let i = Inputs {
        ra: dir.join("in.ra"),
        image: dir.join("img.ra"),
        png: dir.join("in.png"),
        npy: dir.join("in.npy"),
        csv: dir.join("in.csv"),
        parquet: dir.join("in.parquet"),
        arrow: dir.join("in.arrow"),
        chunked: dir.join("in_z.ra"),
        ragged: dir.join("rows.ra"),
    };
    copy_writable(&reference("randf32.ra"), &i.ra);
    copy_writable(&reference("randu8.ra"), &i.image);
    copy_writable(&reference("mnist_8.png"), &i.png);
    for to in [&i.npy, &i.csv, &i.parquet, &i.arrow] {
        ra().args(["-q", "convert"])
            .arg(&i.ra)
            .arg(to)
            .assert()
            .success();
    }
    ra().args(["-q", "compress"])
        .arg(&i.ra)
        .arg("-o")
        .arg(&i.chunked)
        .assert()
        .success();
    Ragged::from_rows([vec![1.5f32, 2.5], vec![], vec![3.0]])
        .write_file(&i.ragged)
        .unwrap();
    i
}

/// Every command that writes a file to a new name: its arguments, and the file it writes.
fn commands(i: &Inputs, out: &Path) -> Vec<(Vec<OsString>, PathBuf)> {
    let o = |name: &str| out.join(name);
    let args = |parts: &[&dyn AsRef<std::ffi::OsStr>]| -> Vec<OsString> {
        parts.iter().map(|p| p.as_ref().to_os_string()).collect()
    };
    vec![
        (args(&[&"convert", &i.ra, &o("a.npy")]), o("a.npy")),
        (args(&[&"convert", &i.npy, &o("b.ra")]), o("b.ra")),
        (args(&[&"convert", &i.image, &o("c.png")]), o("c.png")),
        (args(&[&"convert", &i.png, &o("d.ra")]), o("d.ra")),
        (args(&[&"convert", &i.ra, &o("e.csv")]), o("e.csv")),
        (args(&[&"convert", &i.csv, &o("f.ra")]), o("f.ra")),
        (args(&[&"convert", &i.ra, &o("g.parquet")]), o("g.parquet")),
        (args(&[&"convert", &i.parquet, &o("h.ra")]), o("h.ra")),
        (args(&[&"convert", &i.ra, &o("i.arrow")]), o("i.arrow")),
        (args(&[&"convert", &i.arrow, &o("j.ra")]), o("j.ra")),
        (args(&[&"compress", &i.ra, &"-o", &o("k.ra")]), o("k.ra")),
        (
            args(&[&"decompress", &i.chunked, &"-o", &o("l.ra")]),
            o("l.ra"),
        ),
        (
            args(&[&"reshape", &i.ra, &"16", &"-o", &o("m.ra")]),
            o("m.ra"),
        ),
        (args(&[&"slice", &i.ra, &o("n.ra"), &":,1:3"]), o("n.ra")),
        (
            args(&[&"slice", &i.chunked, &o("p.ra"), &":,1:3"]),
            o("p.ra"),
        ),
        (args(&[&"slice", &i.ragged, &o("q.ra"), &"1:"]), o("q.ra")),
        (
            args(&[&"compress", &i.ragged, &"-o", &o("r.ra")]),
            o("r.ra"),
        ),
        (args(&[&"convert", &i.ragged, &o("s.csv")]), o("s.csv")),
        (
            args(&[&"man", &"--dir", &out.join("man")]),
            out.join("man/ra.1"),
        ),
    ]
}

#[test]
fn new_files_get_the_umasks_mode_and_replaced_files_keep_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let cases = commands(&i, &out);
    assert!(cases.len() >= 19);
    for (args, written) in &cases {
        ra_under_umask_022(args);
        assert_eq!(mode(written), 0o644, "new: ra {args:?}");
        // Written again over the file, now 0640: it keeps its mode.
        set_mode(written, 0o640);
        ra_under_umask_022(args);
        assert_eq!(mode(written), 0o640, "replaced: ra {args:?}");
        // And over a file of 0644 (the mode a new file got), 0644 stays.
        set_mode(written, 0o644);
        ra_under_umask_022(args);
        assert_eq!(mode(written), 0o644, "replaced 0644: ra {args:?}");
    }
}

/// The rewrites in place keep the file's mode.
#[test]
fn rewrites_in_place_keep_the_files_mode() {
    let dir = tempfile::tempdir().unwrap();
    let i = inputs(dir.path());
    let rec = dir.path().join("rec.ra");
    {
        let mut w =
            rawarray_serde::RecordWriter::<Rec>::create(&rec, serde_json::json!({})).unwrap();
        for r in recs(3) {
            w.append(&r).unwrap();
        }
        w.finish().unwrap();
    }
    let cases: [(&[&str], &Path); 5] = [
        (&["compress"], &i.ra),
        (&["decompress"], &i.ra),
        (&["reshape", "16"], &i.ra),
        (&["compress"], &i.ragged),
        (&["recover"], &rec),
    ];
    for (command, file) in cases {
        set_mode(file, 0o640);
        // ra COMMAND FILE [DIMS]
        let mut args: Vec<OsString> = vec![command[0].into(), file.into()];
        args.extend(command[1..].iter().map(OsString::from));
        ra_under_umask_022(&args);
        assert_eq!(mode(file), 0o640, "ra {args:?}");
    }
}
