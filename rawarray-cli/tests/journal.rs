//! A block an `ArrayWriter` left half written (issue 24, item 3): a writer SIGKILLed in the
//! middle of a block is reported by `ra verify FILE.ra`, `ra info` (and `--json`) and
//! `ra recover`, which changes nothing; a file every writer finished is reported clean; a
//! damaged journal is reported, not trusted.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rawarray_serde::ArrayWriter;
use serde_json::Value;

use common::*;

/// Set in the child process: the path of a `[2, N]` u32 array whose row 1 it writes.
const CHILD: &str = "RAWARRAY_CLI_BLOCK_CHILD";

/// The child role: writes row 1 of the array, one element per run (slow enough to be killed
/// in the middle). Does nothing unless the parent set `CHILD`.
#[test]
fn slow_block_child() {
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    let w = ArrayWriter::open(&path).unwrap();
    let n = w.header().dims[1];
    w.write_subset(&[1..2, 0..n], &vec![7u32; n as usize])
        .unwrap();
    w.finish().unwrap();
}

const N: u64 = 1 << 21;

/// A `[2, N]` u32 array whose row 1's writer was SIGKILLed after its first element.
#[cfg(unix)]
fn torn_file(path: &Path) {
    use std::os::unix::fs::FileExt;
    ArrayWriter::create::<u32>(path, &[2, N])
        .unwrap()
        .finish()
        .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["slow_block_child", "--exact", "--test-threads=1", "--quiet"])
        .env(CHILD, path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let file = std::fs::File::open(path).unwrap();
    let mut first = [0u8; 4];
    let start = Instant::now();
    // Element (1, 0), after the 64-byte header.
    while first == [0; 4] {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child never wrote"
        );
        file.read_exact_at(&mut first, 64 + 4).unwrap();
    }
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
}

fn info_json(path: &Path, code: i32) -> Value {
    let out = ra()
        .args(["info", "--json"])
        .arg(path)
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[cfg(unix)]
#[test]
fn a_block_torn_by_a_killed_writer_is_reported_by_verify_info_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.ra");
    torn_file(&path);
    let before = std::fs::read(&path).unwrap();
    let block = format!("block [1..2, 0..{N}) was never committed");

    let out = ra()
        .arg("verify")
        .arg(&path)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(
        said.starts_with(&format!("{}: FAILED ({block}", path.display())),
        "{said}"
    );

    let j = info_json(&path, 1);
    assert_eq!(
        j["uncommitted_blocks"],
        serde_json::json!([[[1, 2], [0, N]]])
    );
    assert_eq!(j["journal_error"], Value::Null);
    let out = ra()
        .arg("info")
        .arg(&path)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("journal:     {block}")), "{text}");
    assert!(String::from_utf8(out.stderr).unwrap().contains(&block));

    // recover reports it and extends nothing: the file is as it was.
    let err = fails_with_one_line(ra().arg("recover").arg(&path));
    assert!(err.contains(&block), "{err}");
    let err = fails_with_one_line(ra().args(["recover", "--force"]).arg(&path));
    assert!(err.contains(&block), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Written again and finished, the file is clean everywhere.
    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[1..2, 0..N], &vec![7u32; N as usize])
        .unwrap();
    w.finish().unwrap();
    let said = stdout_of(ra().arg("verify").arg(&path));
    assert_eq!(said, format!("{}: OK\n", path.display()));
    let j = info_json(&path, 0);
    assert_eq!(j["uncommitted_blocks"], serde_json::json!([]));
    stdout_of(ra().arg("recover").arg(&path));
}

#[test]
fn a_finished_file_is_clean_and_a_damaged_journal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.ra");
    let w = ArrayWriter::create::<f32>(&path, &[3, 2]).unwrap();
    w.write_subset(&[0..3, 0..2], &[1.0f32; 6]).unwrap();
    w.finish().unwrap();
    assert_eq!(
        stdout_of(ra().arg("verify").arg(&path)),
        format!("{}: OK\n", path.display())
    );
    assert_eq!(
        info_json(&path, 0)["uncommitted_blocks"],
        serde_json::json!([])
    );

    std::fs::write(dir.path().join("ok.ra.journal"), b"rajournl garbage").unwrap();
    let out = ra()
        .arg("verify")
        .arg(&path)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(
        said.contains("ok.ra.journal: damaged block journal: truncated header"),
        "{said}"
    );
    let j = info_json(&path, 1);
    assert!(
        j["journal_error"]
            .as_str()
            .unwrap()
            .contains("truncated header"),
        "{j}"
    );
    let err = fails_with_one_line(ra().arg("recover").arg(&path));
    assert!(err.contains("damaged block journal"), "{err}");

    // A .ra file cut short fails verify with what is missing.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(dir.path().join("ok.ra.journal")).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
    let out = ra()
        .arg("verify")
        .arg(&path)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("FAILED (truncated"), "{said}");
}

/// Set in the child process: the path of a chunked `[256, 256, 16]` f32 array whose whole
/// block it writes at zstd level 22 (seconds of compressing: the time to be killed in).
const CHUNKED_CHILD: &str = "RAWARRAY_CLI_CHUNKED_CHILD";

/// The child role of the chunked file; does nothing unless the parent set `CHUNKED_CHILD`.
#[test]
fn slow_chunked_child() {
    let Ok(path) = std::env::var(CHUNKED_CHILD) else {
        return;
    };
    let w = ArrayWriter::open_with_threads(&path, 1).unwrap();
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<f32> = (0..256 * 256 * 16)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f32::from_bits(((s >> 41) as u32) | 0x3f80_0000)
        })
        .collect();
    w.write_subset(&[0..256, 0..256, 0..16], &noise).unwrap();
    w.finish().unwrap();
}

/// A chunked file (flag bit 2) whose writer was SIGKILLed while it compressed its block: the
/// block was begun and never committed, and `ra verify`, `ra info` and `ra recover` report it
/// (the file reads as zeros there); written again, the file is clean everywhere.
#[cfg(unix)]
#[test]
fn a_chunked_block_of_a_killed_writer_is_reported_by_verify_info_and_recover() {
    use rawarray_serde::codec::{ChunkOptions, Codec};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chunked.ra");
    let opts = ChunkOptions::new()
        .codec(Codec::Zstd)
        .level(22)
        .chunks(vec![256, 256, 4]);
    ArrayWriter::create_chunked::<f32>(&path, &[256, 256, 16], &opts)
        .unwrap()
        .finish()
        .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "slow_chunked_child",
            "--exact",
            "--test-threads=1",
            "--quiet",
        ])
        .env(CHUNKED_CHILD, &path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let block = vec![vec![0..256, 0..256, 0..16]];
    let start = Instant::now();
    while ArrayWriter::uncommitted_blocks(&path).unwrap() != block {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the child never began"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    let said = "block [0..256, 0..256, 0..16) was never committed";

    let out = ra()
        .arg("verify")
        .arg(&path)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(said), "{text}");
    let j = info_json(&path, 1);
    assert_eq!(
        j["uncommitted_blocks"],
        serde_json::json!([[[0, 256], [0, 256], [0, 16]]])
    );
    let err = fails_with_one_line(ra().arg("recover").arg(&path));
    assert!(err.contains(said), "{err}");

    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[0..256, 0..256, 0..16], &vec![1.5f32; 256 * 256 * 16])
        .unwrap();
    w.finish().unwrap();
    let said = stdout_of(ra().arg("verify").arg(&path));
    assert_eq!(said, format!("{}: OK\n", path.display()));
    assert_eq!(
        info_json(&path, 0)["uncommitted_blocks"],
        serde_json::json!([])
    );
    let out = stdout_of(ra().arg("recover").arg(&path));
    assert!(out.contains("16 records (unchanged)"), "{out}");
}

/// A chunked file whose second block's writer died between entering its chunk in the index
/// and committing the header (the entry points past the committed size), copied without its
/// journal (a journal belongs to the file it was made for): `ra verify` names the chunk;
/// `ra recover` drops the entry and says so, by chunk, never "unchanged"; then `ra verify`
/// says OK, and the chunk reads as never written (zeros).
#[test]
fn recover_of_a_copy_reports_the_chunks_it_drops() {
    use rawarray_serde::codec::ChunkOptions;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("field.ra");
    let w =
        ArrayWriter::create_chunked::<u32>(&path, &[8, 8], &ChunkOptions::new().chunks(vec![8, 4]))
            .unwrap();
    w.write_subset(&[0..8, 0..4], &[1u32; 32]).unwrap();
    let header_len = 48 + 8 * 2;
    let committed_a = std::fs::read(&path).unwrap()[..header_len].to_vec();
    w.write_subset(&[0..8, 4..8], &[2u32; 32]).unwrap();
    w.finish().unwrap();
    // The header as it was before block 2's commit: its chunk (1) and entry lie past the size.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..header_len].copy_from_slice(&committed_a);
    let copy = dir.path().join("copy.ra");
    std::fs::write(&copy, &bytes).unwrap();

    let out = ra()
        .arg("verify")
        .arg(&copy)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("chunk 1"), "{said}");

    let said = stdout_of(ra().arg("recover").arg(&copy));
    assert!(!said.contains("unchanged"), "{said}");
    assert!(said.contains("dropped chunk 1"), "{said}");
    assert_ne!(
        std::fs::read(&copy).unwrap(),
        bytes,
        "the entry was cleared"
    );
    assert_eq!(
        stdout_of(ra().arg("verify").arg(&copy)),
        format!("{}: OK\n", copy.display())
    );
    let a: rawarray_serde::RawArray<u32> = rawarray_serde::RawArray::read_file(&copy).unwrap();
    assert_eq!(&a.as_slice()[..32], &[1u32; 32][..]);
    assert_eq!(&a.as_slice()[32..], &[0u32; 32][..]);
    // Recovered again, nothing is left to do: now it is unchanged.
    let said = stdout_of(ra().arg("recover").arg(&copy));
    assert!(
        said.contains("(unchanged)") && said.contains("0 bytes removed"),
        "{said}"
    );
}
