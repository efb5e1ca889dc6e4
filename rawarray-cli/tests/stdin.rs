//! `-`: standard input for `info`, `cat`, `checksum`, `convert`, `diff`, `slice` (and `verify`'s
//! sums), standard output for `convert` and `slice`; the commands that rewrite or follow a file
//! refuse it. A pipe named as a file (`/dev/stdin`, a FIFO) is read wherever `-` is. Bytes are
//! piped through the spawned binary.

mod common;

use std::path::Path;
use std::process::Command as Process;

use common::*;

/// Runs `ra ARGS` with `stdin` piped in and TMPDIR set to `tmp`; returns (code, stdout,
/// stderr).
fn piped(tmp: &Path, args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let out = ra()
        .env("TMPDIR", tmp)
        .args(args)
        .write_stdin(stdin.to_vec())
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        out.stdout,
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn info_cat_and_checksum_read_standard_input_and_leave_no_copy() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["randf32.ra", "mnist_8_z.ra", "test.ra"] {
        let path = reference(name);
        let bytes = std::fs::read(&path).unwrap();
        let (code, out, _) = piped(tmp.path(), &["cat", "-"], &bytes);
        assert_eq!(code, 0);
        assert_eq!(out, stdout_of(ra().arg("cat").arg(&path)).into_bytes());
        let (code, out, _) = piped(tmp.path(), &["info", "--json", "-"], &bytes);
        assert_eq!(code, 0);
        let from_file = stdout_of(ra().args(["info", "--json"]).arg(&path));
        let from_pipe = String::from_utf8(out).unwrap();
        let name_key = format!("\"file\":\"{}\"", path.display());
        assert_eq!(from_pipe, from_file.replace(&name_key, "\"file\":\"-\""));
        // As md5sum names standard input: `-`.
        let (code, out, _) = piped(tmp.path(), &["checksum", "-"], &bytes);
        assert_eq!(code, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{}  -\n", md5_hex(&bytes))
        );
    }
    if let Ok(md5sum) = Process::new("md5sum")
        .stdin(std::fs::File::open(reference("test.ra")).unwrap())
        .output()
    {
        let bytes = std::fs::read(reference("test.ra")).unwrap();
        let (_, out, _) = piped(tmp.path(), &["checksum", "-"], &bytes);
        assert_eq!(out, md5sum.stdout);
    } else {
        eprintln!("SKIPPED: md5sum is not installed; checksum - compared to our own md5 only");
    }
    // The copy of standard input is deleted when ra ends.
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_cut_short_pipe_is_named_standard_input() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(reference("randf32.ra")).unwrap();
    let (code, out, err) = piped(tmp.path(), &["cat", "-"], &bytes[..100]);
    assert_eq!((code, out.len()), (1, 0));
    assert_eq!(
        err,
        "ra: <stdin>: truncated: expected 64 data bytes, found 36\n"
    );
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

#[test]
fn convert_through_pipes_in_every_direction() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ra_bytes = std::fs::read(reference("randf32.ra")).unwrap();
    let npy = dir.path().join("f.npy");
    ra().arg("convert")
        .arg(reference("randf32.ra"))
        .arg(&npy)
        .assert()
        .success();
    let npy_bytes = std::fs::read(&npy).unwrap();
    // .ra on stdin (told by its magic) -> .npy on stdout: the bytes of the file conversion,
    // and nothing else on stdout (the success line is on stderr).
    let (code, out, err) = piped(tmp.path(), &["convert", "-", "--to", "npy", "-"], &ra_bytes);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, npy_bytes);
    assert_eq!(
        err,
        format!("<stdin> -> <stdout>: {} bytes\n", npy_bytes.len())
    );
    // And back: .npy on stdin -> .ra on stdout is the reference byte for byte.
    let (code, out, _) = piped(
        tmp.path(),
        &["-q", "convert", "-", "--to", "ra", "-"],
        &npy_bytes,
    );
    assert_eq!(code, 0);
    assert_eq!(out, ra_bytes);
    // A file to stdout (the bytes of the file-to-file conversion), stdin to a file.
    let out = ra()
        .env("TMPDIR", tmp.path())
        .args(["-q", "convert"])
        .arg(reference("randf32.ra"))
        .args(["-", "--to", "npy"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(out, npy_bytes);
    let csv = stdout_of(
        ra().args(["-q", "convert"])
            .arg(reference("randi8.ra"))
            .args(["-", "--to", "csv"]),
    );
    assert_eq!(csv.lines().count(), 4);
    let back = dir.path().join("back.ra");
    let (code, _, err) = piped(
        tmp.path(),
        &["convert", "--from", "csv", "-", back.to_str().unwrap()],
        csv.as_bytes(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        stdout_of(ra().arg("cat").arg(&back)),
        stdout_of(ra().arg("cat").arg(reference("randi8.ra")))
    );
    // Without a name or --from/--to the format is asked for (exit 2), and a failed
    // conversion writes nothing to stdout.
    let (code, _, err) = piped(tmp.path(), &["convert", "-", "x.ra"], b"1,2\n");
    assert_eq!(code, 2);
    assert!(err.contains("give --from"), "{err}");
    let (code, _, err) = piped(tmp.path(), &["convert", "-", "-"], &ra_bytes);
    assert_eq!(code, 2);
    assert!(err.contains("give --to"), "{err}");
    // dims [28, 28, 3] are no PNG layout ([w, h] or [c, w, h] with c <= 4).
    let mnist = std::fs::read(reference("mnist_8.ra")).unwrap();
    let (code, out, err) = piped(tmp.path(), &["convert", "-", "--to", "png", "-"], &mnist);
    assert_eq!((code, out.len()), (1, 0), "{err}");
    assert!(err.starts_with("ra: <stdin>: "), "{err}");
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

#[test]
fn diff_and_verify_read_standard_input() {
    let tmp = tempfile::tempdir().unwrap();
    let z = std::fs::read(reference("mnist_8_z.ra")).unwrap();
    let plain = reference("mnist_8.ra");
    let (code, out, _) = piped(tmp.path(), &["diff", "-", plain.to_str().unwrap()], &z);
    assert_eq!((code, out.len()), (0, 0));
    let sums =
        stdout_of(
            ra().current_dir(reference_dir())
                .args(["checksum", "test.ra", "randu8.ra"]),
        );
    let out = ra()
        .current_dir(reference_dir())
        .args(["verify", "-"])
        .write_stdin(sums)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "test.ra: OK\nrandu8.ra: OK\n"
    );
}

#[test]
fn commands_that_rewrite_or_follow_a_file_refuse_standard_input() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(reference("randf32.ra")).unwrap();
    for args in [
        &["compress", "-"][..],
        &["decompress", "-"],
        &["reshape", "-", "16"],
        &["recover", "-"],
        &["watch", "-"],
    ] {
        let (code, _, err) = piped(tmp.path(), args, &bytes);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.contains("needs a seekable file, not standard input"),
            "{args:?}: {err}"
        );
    }
    // With -o they read it; and only convert writes standard output.
    let out = tmp.path().join("z.ra");
    let (code, _, err) = piped(
        tmp.path(),
        &["compress", "-", "-o", out.to_str().unwrap()],
        &bytes,
    );
    assert_eq!(code, 0, "{err}");
    // The success line names standard input, not the temporary copy.
    assert!(err.starts_with("<stdin> -> "), "{err}");
    assert_eq!(
        stdout_of(ra().arg("cat").arg(&out)),
        stdout_of(ra().arg("cat").arg(reference("randf32.ra")))
    );
    std::fs::remove_file(&out).unwrap();
    let arg = out.to_str().unwrap();
    for args in [
        &["reshape", "-", "16", "-o", arg][..],
        &["slice", "-", arg, ":,:"],
    ] {
        let (code, _, err) = piped(tmp.path(), args, &bytes);
        assert_eq!(code, 0, "{err}");
        assert!(err.starts_with("<stdin> -> "), "{args:?}: {err}");
        std::fs::remove_file(&out).unwrap();
    }
    let (code, _, err) = piped(tmp.path(), &["compress", "-", "-o", "-"], &bytes);
    assert_eq!(code, 2);
    assert!(
        err.contains("only ra convert and ra slice write standard output"),
        "{err}"
    );
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

/// A FIFO at `path` (mkfifo), or `None` where there is none.
#[cfg(unix)]
fn mkfifo(path: &Path) -> Option<()> {
    match Process::new("mkfifo").arg(path).status() {
        Ok(s) if s.success() => Some(()),
        _ => {
            eprintln!("SKIPPED: mkfifo is not available");
            None
        }
    }
}

/// Writes `bytes` into the FIFO `path` from a thread (opening it waits for the reader).
#[cfg(unix)]
fn feed(path: &Path, bytes: Vec<u8>) -> std::thread::JoinHandle<std::io::Result<()>> {
    use std::io::Write;
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)?
            .write_all(&bytes)
    })
}

/// `/dev/stdin` on a pipe (what `cat x.ra | ra info /dev/stdin` names) is read as `-` is: it
/// was refused as "a FIFO, device or socket". Errors name it as the user did.
#[cfg(target_os = "linux")]
#[test]
fn dev_stdin_on_a_pipe_is_read_as_dash_is() {
    let tmp = tempfile::tempdir().unwrap();
    let path = reference("mnist_8_z.ra");
    let bytes = std::fs::read(&path).unwrap();
    let (code, out, err) = piped(tmp.path(), &["info", "--json", "/dev/stdin"], &bytes);
    assert_eq!(code, 0, "{err}");
    let (_, dash, _) = piped(tmp.path(), &["info", "--json", "-"], &bytes);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        String::from_utf8(dash)
            .unwrap()
            .replace("\"file\":\"-\"", "\"file\":\"/dev/stdin\"")
    );
    let (code, out, _) = piped(tmp.path(), &["cat", "/dev/stdin"], &bytes);
    assert_eq!(code, 0);
    assert_eq!(out, stdout_of(ra().arg("cat").arg(&path)).into_bytes());
    let (code, out, err) = piped(
        tmp.path(),
        &["slice", "--codec", "none", "/dev/stdin", "-", "::-1,-1,0"],
        &bytes,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("/dev/stdin -> <stdout>: dims [28, 1, 1]"),
        "{err}"
    );
    assert_eq!(out.len(), 48 + 3 * 8 + 28);
    // Cut short: named as the user named it.
    let plain = std::fs::read(reference("randf32.ra")).unwrap();
    let (code, _, err) = piped(tmp.path(), &["cat", "/dev/stdin"], &plain[..100]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "ra: /dev/stdin: truncated: expected 64 data bytes, found 36\n"
    );
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

/// A FIFO named as an input (what bash's `<(...)` passes) is read wherever `-` is: `info`, `cat`,
/// `diff` of two of them, `checksum` (streamed, as md5sum reads it), `convert` (its format told
/// by its first bytes, as standard input's) and `slice`; each copy is gone when ra ends.
#[cfg(unix)]
#[test]
fn a_fifo_by_name_is_read_as_standard_input_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = ["a", "b"].map(|n| dir.path().join(n));
    if mkfifo(&a).and(mkfifo(&b)).is_none() {
        return;
    }
    let path = reference("randf32.ra");
    let bytes = std::fs::read(&path).unwrap();
    let run = |args: &[&dyn AsRef<std::ffi::OsStr>], feeds: &[&Path]| {
        let feeders: Vec<_> = feeds.iter().map(|p| feed(p, bytes.clone())).collect();
        let mut cmd = Process::new(assert_cmd::cargo::cargo_bin("ra"));
        cmd.env("TMPDIR", tmp.path());
        for arg in args {
            cmd.arg(arg);
        }
        let out = bounded(
            cmd.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        for f in feeders {
            f.join().unwrap().unwrap();
        }
        out
    };
    let out = run(&[&"cat", &a], &[&a]);
    assert!(out.status.success());
    assert_eq!(
        out.stdout,
        stdout_of(ra().arg("cat").arg(&path)).into_bytes()
    );
    let out = run(&[&"info", &a], &[&a]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        stdout_of(ra().arg("info").arg(&path))
            .replace(&path.display().to_string(), &a.display().to_string())
    );
    let out = run(&[&"diff", &a, &b], &[&a, &b]);
    assert_eq!(out.status.code(), Some(0));
    let out = run(&[&"checksum", &a], &[&a]);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}  {}\n", md5_hex(&bytes), a.display())
    );
    let npy = dir.path().join("f.npy");
    ra().args(["-q", "convert"])
        .arg(&path)
        .arg(&npy)
        .assert()
        .success();
    let out = run(&[&"-q", &"convert", &a, &"--to", &"npy", &"-"], &[&a]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, std::fs::read(&npy).unwrap());
    let sliced = dir.path().join("s.ra");
    let out = run(&[&"slice", &a, &sliced, &"::-1,1"], &[&a]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_file = dir.path().join("t.ra");
    ra().args(["-q", "slice"])
        .arg(&path)
        .arg(&from_file)
        .arg("::-1,1")
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&sliced).unwrap(),
        std::fs::read(&from_file).unwrap()
    );
    // Garbage through a FIFO is named by the FIFO's name.
    let feeder = feed(&a, b"not an array at all".to_vec());
    let err = fails_with_one_line(ra().arg("info").arg(&a));
    feeder.join().unwrap().unwrap();
    assert!(err.starts_with(&format!("ra: {}: ", a.display())), "{err}");
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

/// Binary output is not written to a terminal (CSV is); the terminal is `script`'s
/// pseudo-terminal (util-linux), where it is installed.
#[cfg(target_os = "linux")]
#[test]
fn binary_output_to_a_terminal_is_refused() {
    let ra_bin = assert_cmd::cargo::cargo_bin("ra");
    let run = |args: &str| {
        Process::new("script")
            .args(["-qec", &format!("{} {args}", ra_bin.display()), "/dev/null"])
            .output()
    };
    let f32_ra = reference("randf32.ra");
    let Ok(out) = run(&format!("convert {} - --to npy", f32_ra.display())) else {
        eprintln!("SKIPPED: script (util-linux) is not installed; no terminal to write to");
        return;
    };
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("standard output is a terminal: npy is binary"),
        "{said}"
    );
    let out = run(&format!(
        "-q convert {} - --to csv",
        reference("randi8.ra").display()
    ))
    .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("66,-120,-125,-90"));
}

/// Standard input is checked from its first bytes before anything is copied: endless garbage
/// is named at once (`cat /dev/zero | ra info -` used to copy gigabytes), and a `.ra` stream is
/// copied only as far as its header's data and a trailer's largest size.
#[cfg(unix)]
#[test]
fn standard_input_is_checked_before_it_is_copied_and_bounded() {
    use std::io::Write;
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["info", "-"][..],
        &["cat", "-"],
        &["convert", "-", "--to", "npy", "-"],
    ] {
        // Not assert_cmd's pipe_stdin, which reads the whole file first.
        let child = Process::new(assert_cmd::cargo::cargo_bin("ra"))
            .env("TMPDIR", tmp.path())
            .args(args)
            .stdin(std::fs::File::open("/dev/zero").unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = bounded(child);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains("<stdin>") || err.contains("give --from"),
            "{args:?}: {err}"
        );
    }
    // A PNG or .npy where a .ra file is read is named, as ra info names such files.
    let png = std::fs::read(reference("mnist_8.png")).unwrap();
    let (code, _, err) = piped(tmp.path(), &["info", "-"], &png);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(
            "ra: <stdin>: not a .ra file: it looks like a PNG image; `ra convert - OUT.ra`"
        ),
        "{err}"
    );
    // The wrong kind of file for --from is named from its first bytes.
    let png = std::fs::read(reference("mnist_8.ra")).unwrap();
    let (code, _, err) = piped(tmp.path(), &["convert", "--from", "npy", "-", "x.ra"], &png);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "ra: <stdin>: not a .npy file: it does not start with \\x93NUMPY (it starts as a .ra file does)\n"
    );
    // A valid header and data, then endless bytes: refused after a trailer's largest size.
    let mut child = Process::new(assert_cmd::cargo::cargo_bin("ra"))
        .env("TMPDIR", tmp.path())
        .args(["info", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let head = std::fs::read(reference("randf32.ra")).unwrap();
    let writer = std::thread::spawn(move || {
        let zeros = vec![0u8; 1 << 20];
        stdin.write_all(&head)?;
        loop {
            stdin.write_all(&zeros)?;
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    });
    let out = bounded(child);
    // ra stopped reading: the writer sees a broken pipe.
    assert!(writer.join().unwrap().is_err());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("<stdin>: more than 67108892 bytes after the data section"),
        "{err}"
    );
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

/// The copy of standard input is an unlinked file: killing ra while it copies leaves nothing
/// in the temporary folder (a named copy was left behind).
#[cfg(target_os = "linux")]
#[test]
fn a_killed_ra_leaves_no_copy_of_standard_input() {
    use std::io::Write;
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Process::new(assert_cmd::cargo::cargo_bin("ra"))
        .env("TMPDIR", tmp.path())
        .args(["cat", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A header announcing 8 MB of data, and only part of it: ra is copying, waiting for more.
    let mut words: Vec<u64> = vec![
        u64::from_le_bytes(*b"rawarray"),
        0,
        2,
        8,
        8 << 20,
        1,
        1 << 20,
    ];
    let mut bytes: Vec<u8> = words.drain(..).flat_map(u64::to_le_bytes).collect();
    bytes.extend(vec![0u8; 1 << 16]);
    stdin.write_all(&bytes).unwrap();
    // Handshake: the copy is open (a descriptor of ra's names a file in the temporary folder).
    let fds = format!("/proc/{}/fd", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let copying = || {
        std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(tmp.path())))
    };
    while !copying() {
        assert!(
            std::time::Instant::now() < deadline,
            "ra never opened its copy"
        );
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert_eq!(listing(tmp.path()), Vec::<String>::new());
}

/// The child's output, or a failed test (the child killed) after a minute: a hang fails.
#[cfg(unix)]
fn bounded(child: std::process::Child) -> std::process::Output {
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Process::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("ra did not finish within a minute");
        }
    }
}

/// The wrong kind of stream for `--from` is named by the library's one table of signatures
/// (`rawarray_serde::sniff`), as `ra info` names files: HDF5, gzip and .npy heads, hand-written.
#[test]
fn the_wrong_kind_of_stream_is_named_by_the_library_table() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.ra");
    let out = out.to_str().unwrap();
    let cases: [(&str, &[u8], &str); 3] = [
        (
            "npy",
            b"\x89HDF\r\n\x1a\n\0\0\0\0\0\0\0\0",
            "not a .npy file: it does not start with \\x93NUMPY (it looks like an HDF5 file)",
        ),
        (
            "png",
            b"\x1f\x8b\x08\0\0\0\0\0\0\x03",
            "not a PNG image: it does not start with the PNG signature (it looks like \
             gzip-compressed data)",
        ),
        (
            "png",
            b"\x93NUMPY\x01\0v\0{'descr': '<f4'",
            "not a PNG image: it does not start with the PNG signature (it looks like a \
             numpy .npy file)",
        ),
    ];
    for (from, head, why) in cases {
        let (code, _, err) = piped(tmp.path(), &["convert", "--from", from, "-", out], head);
        assert_eq!(code, 1, "{err}");
        assert_eq!(err, format!("ra: <stdin>: {why}\n"));
    }
}
