//! `ra checksum` and `ra verify`.

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
