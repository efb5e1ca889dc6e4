//! Every subcommand: malformed files (exit 1, one line), usage errors (exit 2), `--help`.

mod common;

use predicates::prelude::*;

use common::*;

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
            // Without --data any file is summed (as md5sum sums it): the header matters only
            // for the data section.
            vec!["checksum".into(), "--data".into(), path.clone().into()],
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
        .stderr(predicate::str::contains("by its extension: give --to"));
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

/// `ra NAME` for a NAME of no subcommand runs `ra-NAME` found beside `ra` (how `ra sql` runs
/// rawarray-sql's `ra-sql`), passing the arguments and the exit status through.
#[cfg(unix)]
#[test]
fn an_unknown_subcommand_runs_the_program_ra_name_beside_ra() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ra_copy = dir.path().join("ra");
    std::fs::copy(env!("CARGO_BIN_EXE_ra"), &ra_copy).unwrap();
    let script = dir.path().join("ra-hello");
    std::fs::write(&script, "#!/bin/sh\necho \"hello:$1:$2\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another test thread's fork may briefly hold the just-written files open for writing,
    // and exec then fails with ETXTBSY ("Text file busy"): try again, as cargo does.
    let out = (0..100)
        .find_map(|_| {
            let out = std::process::Command::new(&ra_copy)
                .args(["hello", "a b", "--flag"])
                .env("PATH", "/nonexistent")
                .output();
            match out {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => None,
                Ok(o) if String::from_utf8_lossy(&o.stderr).contains("Text file busy") => None,
                other => Some(other.unwrap()),
            }
            .or_else(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                None
            })
        })
        .expect("ra ran");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello:a b:--flag\n");
    // No such program anywhere: a usage error naming the subcommand, as clap's own.
    ra().args(["nosuchthing", "x"])
        .env("PATH", "/nonexistent")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unrecognized subcommand 'nosuchthing'",
        ));
}
