//! `ra checksum` and `ra verify`.

mod common;

use md5::Digest;
use predicates::prelude::*;

use common::*;

#[test]
fn checksum_of_file_and_data_section() {
    let path = reference("mnist_8.ra");
    let bytes = std::fs::read(&path).unwrap();
    let out = stdout_of(ra().arg("checksum").arg(&path));
    let lines: Vec<&str> = out.lines().collect();
    let p = path.display();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        format!("MD5 ({p}) = 8115a9ca3dc12d0f38aa68ec0e100a4c")
    );
    use sha2::Sha256;
    assert_eq!(
        lines[1],
        format!("SHA256 ({p}) = {}", hex(&Sha256::digest(&bytes)))
    );
    assert_eq!(
        lines[2],
        format!("MD5-DATA ({p}) = {}", md5_hex(&bytes[72..]))
    );
    assert_eq!(
        lines[3],
        format!("SHA256-DATA ({p}) = {}", hex(&Sha256::digest(&bytes[72..])))
    );
    let out = stdout_of(ra().args(["checksum", "--algo", "md5"]).arg(&path));
    assert_eq!(out.lines().collect::<Vec<_>>(), [lines[0], lines[2]]);
    // The data section excludes trailing bytes and is the stored (compressed) bytes.
    let z = reference("mnist_8_z.ra");
    let zb = std::fs::read(&z).unwrap();
    let out = stdout_of(ra().args(["checksum", "--algo", "md5"]).arg(&z));
    assert!(out.ends_with(&format!("= {}\n", md5_hex(&zb[72..]))));
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
        .args(["checksum", "test.ra", "mnist_8_z.ra"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    std::fs::write(dir.path().join("SUMS"), &sums).unwrap();
    let out = stdout_of(ra().arg("verify").arg(dir.path().join("SUMS")));
    assert_eq!(out.matches(": OK").count(), 8, "{out}");
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
