//! `ra checksum` and `ra verify`.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

mod common;

use std::process::Command as Process;

use md5::Digest;
use predicates::prelude::*;

use common::*;

#[test]
fn checksum_of_file_and_data_section() {
    use sha2::Sha256;
    let path = reference("mnist_8.ra");
    let bytes = std::fs::read(&path).unwrap();
    let p = path.display();
    let sha = hex(&Sha256::digest(&bytes));
    let sha_data = hex(&Sha256::digest(&bytes[72..]));
    // md5 by default, as md5sum writes it (the digest is the reference's CHECKSUMS.md5).
    let out = stdout_of(ra().arg("checksum").arg(&path));
    assert_eq!(out, format!("8115a9ca3dc12d0f38aa68ec0e100a4c  {p}\n"));
    let out = stdout_of(ra().args(["checksum", "--algo", "sha256"]).arg(&path));
    assert_eq!(out, format!("{sha}  {p}\n"));
    let out = stdout_of(ra().args(["checksum", "--tag"]).arg(&path));
    assert_eq!(
        out,
        format!("MD5 ({p}) = 8115a9ca3dc12d0f38aa68ec0e100a4c\n")
    );
    let out = stdout_of(
        ra().args(["checksum", "--algo", "sha256", "--data"])
            .arg(&path),
    );
    assert_eq!(out, format!("{sha}  {p}\nSHA256-DATA ({p}) = {sha_data}\n"));
    let out = stdout_of(ra().args(["checksum", "--data", "--tag"]).arg(&path));
    assert_eq!(
        out,
        format!(
            "MD5 ({p}) = 8115a9ca3dc12d0f38aa68ec0e100a4c\nMD5-DATA ({p}) = {}\n",
            md5_hex(&bytes[72..])
        )
    );
    // The data section excludes trailing bytes and is the stored (compressed) bytes.
    let z = reference("mnist_8_z.ra");
    let zb = std::fs::read(&z).unwrap();
    let out = stdout_of(ra().args(["checksum", "--data"]).arg(&z));
    assert!(
        out.ends_with(&format!("= {}\n", md5_hex(&zb[72..]))),
        "{out}"
    );
    // Without --data any file is summed, as md5sum sums it; with it, a .ra file is needed.
    let png = reference("mnist_8.png");
    let out = stdout_of(ra().arg("checksum").arg(&png));
    assert_eq!(
        out,
        format!(
            "{}  {}\n",
            md5_hex(&std::fs::read(&png).unwrap()),
            png.display()
        )
    );
    fails_with_one_line(ra().args(["checksum", "--data"]).arg(&png));
}

/// `md5sum -c` and `sha256sum -c` (coreutils itself) accept what `ra checksum` writes, plain
/// and `--tag`, with names that coreutils escapes; and they catch a changed file, so the
/// check can fail.
#[test]
fn md5sum_and_sha256sum_check_what_checksum_writes() {
    let dir = tempfile::tempdir().unwrap();
    let odd = if cfg!(windows) {
        "odd name.ra"
    } else {
        "back\\slash\nnewline.ra"
    };
    for name in ["test.ra", "mnist_8_z.ra"] {
        copy_writable(&reference(name), &dir.path().join(name));
    }
    copy_writable(&reference("randf32.ra"), &dir.path().join(odd));
    let names = ["test.ra", "mnist_8_z.ra", odd];
    for (tool, algo) in [("md5sum", "md5"), ("sha256sum", "sha256")] {
        if Process::new(tool).arg("--version").output().is_err() {
            eprintln!("SKIPPED: {tool} is not installed; ra checksum --algo {algo} unchecked");
            continue;
        }
        for tag in [false, true] {
            let mut cmd = ra();
            cmd.current_dir(dir.path())
                .args(["checksum", "--algo", algo]);
            if tag {
                cmd.arg("--tag");
            }
            let sums = cmd
                .args(names)
                .assert()
                .success()
                .get_output()
                .stdout
                .clone();
            // Three lines: the newline in the odd name is escaped.
            assert_eq!(String::from_utf8_lossy(&sums).lines().count(), 3);
            std::fs::write(dir.path().join("SUMS"), &sums).unwrap();
            // coreutils' own lines for the same files are byte for byte ours.
            let mut theirs = Process::new(tool);
            if tag {
                theirs.arg("--tag");
            }
            let theirs = theirs.current_dir(dir.path()).args(names).output().unwrap();
            assert_eq!(theirs.stdout, sums, "{tool} tag={tag}");
            let check = Process::new(tool)
                .current_dir(dir.path())
                .args(["--strict", "-c", "SUMS"])
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&check.stdout);
            assert!(check.status.success(), "{tool} -c: {said} {check:?}");
            assert_eq!(said.matches(": OK").count(), 3, "{said}");
            // Ours reads them back too.
            let out = stdout_of(ra().arg("verify").arg(dir.path().join("SUMS")));
            assert_eq!(out.matches(": OK").count(), 3, "{out}");
        }
        // A changed byte fails coreutils' check.
        let victim = dir.path().join("test.ra");
        let good = std::fs::read(&victim).unwrap();
        let mut b = good.clone();
        b[100] ^= 1;
        std::fs::write(&victim, &b).unwrap();
        let check = Process::new(tool)
            .current_dir(dir.path())
            .args(["-c", "SUMS"])
            .output()
            .unwrap();
        assert!(!check.status.success());
        assert!(String::from_utf8_lossy(&check.stdout).contains("test.ra: FAILED"));
        std::fs::write(&victim, &good).unwrap();
    }
}

#[test]
fn verify_passes_on_the_reference_sums() {
    let out = stdout_of(ra().arg("verify").arg(reference("CHECKSUMS.md5")));
    assert_eq!(out.lines().count(), 14);
    assert!(out.lines().all(|l| l.ends_with(": OK")), "{out}");
    assert!(out.contains("mnist_8.png: OK"));
}

#[test]
fn verify_fails_on_a_corrupted_copy() {
    let dir = tempfile::tempdir().unwrap();
    for name in listing(&reference_dir()) {
        copy_writable(&reference(&name), &dir.path().join(&name));
    }
    let victim = dir.path().join("randf32.ra");
    let mut b = std::fs::read(&victim).unwrap();
    b[100] ^= 1;
    std::fs::write(&victim, b).unwrap();
    let out = ra()
        .arg("verify")
        .arg(dir.path().join("CHECKSUMS.md5"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("randf32.ra: FAILED\n"), "{stdout}");
    assert_eq!(stdout.matches(": OK").count(), 13);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("CHECKSUMS.md5: 1 of 14 checksums did not match"),
        "{stderr}"
    );
    // A missing file fails too.
    std::fs::remove_file(dir.path().join("test.ra")).unwrap();
    ra().arg("verify")
        .arg(dir.path().join("CHECKSUMS.md5"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("test.ra: FAILED open or read"));
}

#[test]
fn verify_reads_what_checksum_writes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["test.ra", "mnist_8_z.ra"] {
        copy_writable(&reference(name), &dir.path().join(name));
    }
    let sums = ra()
        .current_dir(dir.path())
        .args(["checksum", "--data", "test.ra", "mnist_8_z.ra"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    std::fs::write(dir.path().join("SUMS"), &sums).unwrap();
    let out = stdout_of(ra().arg("verify").arg(dir.path().join("SUMS")));
    assert_eq!(out.matches(": OK").count(), 4, "{out}");
    assert!(out.contains("test.ra (data): OK"));
    // Trailing bytes change the file's sums but not the data section's.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("test.ra"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"trailer").unwrap();
    let out = ra()
        .arg("verify")
        .arg(dir.path().join("SUMS"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("test.ra: FAILED") && stdout.contains("test.ra (data): OK"),
        "{stdout}"
    );
}

/// `ra verify` reads `ra checksum`'s own lines back whatever the names hold: " (" (not a tag
/// line unless it starts with a known tag), and bytes that are not UTF-8 (written as they are,
/// as md5sum writes them; a sums file is read as bytes).
#[cfg(unix)]
#[test]
fn verify_reads_names_with_parentheses_and_non_utf8_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let names: [&[u8]; 3] = [b"a (1).ra", b"MD5 (x) = y", b"caf\xe9.ra"];
    for (k, n) in names.iter().enumerate() {
        std::fs::write(dir.path().join(OsStr::from_bytes(n)), [k as u8; 5]).unwrap();
    }
    for args in [&["checksum"][..], &["checksum", "--algo", "sha256"][..]] {
        let out = ra()
            .args(args)
            .args(names.iter().map(|n| OsStr::from_bytes(n)))
            .current_dir(dir.path())
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        // The name's own byte 0xE9, not U+FFFD.
        let want = format!("{}  caf", md5_or_sha(args.len(), &[2u8; 5]));
        let mut want = want.into_bytes();
        want.extend_from_slice(b"\xe9.ra\n");
        assert!(out.ends_with(&want), "{}", String::from_utf8_lossy(&out));
        let sums = dir.path().join("SUMS");
        // A comment that is not UTF-8 does not reject the file.
        let mut text = b"# r\xe9sum\xe9\n".to_vec();
        text.extend_from_slice(&out);
        std::fs::write(&sums, &text).unwrap();
        let got = ra()
            .arg("verify")
            .arg(&sums)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let mut want = b"a (1).ra: OK\nMD5 (x) = y: OK\ncaf".to_vec();
        want.extend_from_slice(b"\xe9.ra: OK\n");
        assert_eq!(got, want, "{}", String::from_utf8_lossy(&got));
    }
}

fn md5_or_sha(args: usize, bytes: &[u8]) -> String {
    if args == 1 {
        md5_hex(bytes)
    } else {
        hex(&sha2::Sha256::digest(bytes))
    }
}

/// A FIFO listed in a sums file is refused at once (nothing would ever write it), while the
/// sums file itself may be a pipe (`ra verify <(ssh host cat SUMS)`).
#[cfg(unix)]
#[test]
fn verify_refuses_a_listed_fifo_and_reads_sums_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Process::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let plain = dir.path().join("plain");
    std::fs::write(&plain, b"abc").unwrap();
    let sums = dir.path().join("SUMS");
    std::fs::write(
        &sums,
        format!("{}  fifo\n{}  plain\n", md5_hex(b""), md5_hex(b"abc")),
    )
    .unwrap();
    let out = ra()
        .arg("verify")
        .arg(&sums)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("fifo: FAILED open or read (is a FIFO") && stdout.contains("plain: OK"),
        "{stdout}"
    );
    // The sums file as a FIFO, written by another thread: read, not refused.
    let pipe = dir.path().join("sums-pipe");
    assert!(Process::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap()
        .success());
    let line = format!("{}  {}\n", md5_hex(b"abc"), plain.display());
    let writer = {
        let pipe = pipe.clone();
        std::thread::spawn(move || std::fs::write(pipe, line).unwrap())
    };
    let out = stdout_of(
        ra().arg("verify")
            .arg(&pipe)
            .timeout(std::time::Duration::from_secs(60)),
    );
    assert_eq!(out, format!("{}: OK\n", plain.display()));
    writer.join().unwrap();
}

/// `ra checksum --data` of a chunked file digests its decoded data: the md5 of the plain
/// file's data bytes (computed here), whatever the codec and whatever order the chunks were
/// written in (an `ArrayWriter` appends them as its blocks come). `ra verify` checks such a
/// line, and fails on the file once one of its chunks is corrupt.
#[test]
fn checksum_data_of_a_chunked_file_is_the_plain_files() {
    use rawarray_serde::codec::{ChunkOptions, Codec, Shuffle};
    use rawarray_serde::ArrayWriter;
    let dir = tempfile::tempdir().unwrap();
    let dims = [6u64, 5, 8];
    let values: Vec<f32> = (0..240).map(|i| (i as f32 * 0.3).cos()).collect();
    let plain = dir.path().join("plain.ra");
    let w = ArrayWriter::create::<f32>(&plain, &dims).unwrap();
    w.write_subset(&[0..6, 0..5, 0..8], &values).unwrap();
    w.finish().unwrap();
    let zstd = dir.path().join("zstd.ra");
    ra().arg("compress")
        .arg(&plain)
        .arg("-o")
        .arg(&zstd)
        .assert()
        .success();
    // The same array, its chunks appended last slab first.
    let lz4 = dir.path().join("lz4.ra");
    let opts = ChunkOptions::new()
        .codec(Codec::Lz4)
        .shuffle(Shuffle::Bit)
        .chunks(vec![6, 5, 2]);
    let w = ArrayWriter::create_chunked::<f32>(&lz4, &dims, &opts).unwrap();
    for z in (0..4u64).rev() {
        let block = &values[(z * 60) as usize..(z * 60 + 60) as usize];
        w.write_subset(&[0..6, 0..5, 2 * z..2 * z + 2], block)
            .unwrap();
    }
    w.finish().unwrap();

    let plain_bytes = std::fs::read(&plain).unwrap();
    let want: String = md5::Md5::digest(&plain_bytes[72..])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    for (path, name) in [(&plain, "plain.ra"), (&zstd, "zstd.ra"), (&lz4, "lz4.ra")] {
        let out = stdout_of(ra().args(["checksum", "--data"]).arg(path));
        assert!(
            out.ends_with(&format!("MD5-DATA ({}) = {want}\n", path.display())),
            "{name}: {out}"
        );
    }
    assert_ne!(
        std::fs::read(&zstd).unwrap()[72..],
        std::fs::read(&lz4).unwrap()[72..],
        "two different sections"
    );

    let sums = ra()
        .current_dir(dir.path())
        .args(["checksum", "--data", "plain.ra", "zstd.ra", "lz4.ra"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    std::fs::write(dir.path().join("SUMS"), &sums).unwrap();
    let out = stdout_of(ra().arg("verify").arg(dir.path().join("SUMS")));
    assert_eq!(out.matches(": OK").count(), 6, "{out}");
    // The last stored byte is chunk 0's (appended last): flipped, lz4.ra's data fails.
    let mut bytes = std::fs::read(&lz4).unwrap();
    *bytes.last_mut().unwrap() ^= 0x10;
    std::fs::write(&lz4, &bytes).unwrap();
    let out = ra()
        .arg("verify")
        .arg(dir.path().join("SUMS"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("lz4.ra (data): FAILED") && stdout.contains("zstd.ra (data): OK"),
        "{stdout}"
    );
}
