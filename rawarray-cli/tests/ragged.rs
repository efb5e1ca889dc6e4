//! Ragged files in the CLI: `ra info` (rows, values, longest row), `ra cat` (rows, text as
//! text), `ra slice` (a range of rows), `ra convert` (.npy refused naming the fix, CSV one row
//! per line), `ra recover` (the rows of a flush whose header write was lost), `ra compress` /
//! `ra decompress` (the values through the codec layer), and hostile
//! offsets reported as one line naming the row.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

mod common;

use rawarray_serde::Ragged;
use serde_json::Value;

use common::*;

#[test]
fn info_shows_rows_values_and_the_longest_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    Ragged::from_rows([vec![1.5f32, 2.5], vec![], vec![3.0, 4.0, 5.0]])
        .write_file(&path)
        .unwrap();
    let out = stdout_of(ra().arg("info").arg(&path));
    assert!(out.contains("ragged array of float32"), "{out}");
    assert!(out.contains("rows: 3\n"), "{out}");
    assert!(out.contains("values: 5\n"), "{out}");
    assert!(out.contains("longest row: 3\n"), "{out}");
    let json: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(
        (
            &json["rows"],
            &json["values"],
            &json["longest_row"],
            &json["text"]
        ),
        (&3.into(), &5.into(), &3.into(), &false.into())
    );
}

#[test]
fn cat_prints_rows_and_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let nums = dir.path().join("n.ra");
    Ragged::from_rows([vec![1u16, 2], vec![], vec![3]])
        .write_file(&nums)
        .unwrap();
    assert_eq!(
        stdout_of(ra().arg("cat").arg(&nums)),
        "[0]\t1, 2\n[1]\t\n[2]\t3\n"
    );
    let text = dir.path().join("t.ra");
    Ragged::from_strs(["Grüße", "", "日本"])
        .write_file(&text)
        .unwrap();
    assert_eq!(
        stdout_of(ra().arg("cat").arg(&text)),
        "[0]\tGrüße\n[1]\t\n[2]\t日本\n"
    );
    let json = stdout_of(ra().args(["cat", "--json", "--head", "1"]).arg(&text));
    assert_eq!(json, "{\"row\":0,\"value\":\"Grüße\"}\n");
}

#[test]
fn slice_takes_a_row_range() {
    let dir = tempfile::tempdir().unwrap();
    let (path, out) = (dir.path().join("r.ra"), dir.path().join("s.ra"));
    let rows = vec![vec![1i32], vec![2, 3], vec![], vec![4, 5, 6]];
    Ragged::from_rows(&rows).write_file(&path).unwrap();
    stdout_of(ra().arg("slice").arg(&path).arg(&out).arg("2:2"));
    assert_eq!(Ragged::<i32>::read_file(&out).unwrap().rows(), 0);
    stdout_of(ra().arg("slice").arg(&path).arg(&out).arg("1:4"));
    let s = Ragged::<i32>::read_file(&out).unwrap();
    assert_eq!(s, Ragged::from_rows(&rows[1..]));
    stdout_of(ra().arg("slice").arg(&path).arg(&out).arg("-1"));
    assert_eq!(
        Ragged::<i32>::read_file(&out).unwrap(),
        Ragged::from_rows(&rows[3..])
    );
    // A step is a usage error (exit 2).
    let done = ra()
        .arg("slice")
        .arg(&path)
        .arg(&out)
        .arg("0:4:2")
        .assert()
        .code(2);
    let err = String::from_utf8(done.get_output().stderr.clone()).unwrap();
    assert!(err.contains("one range of rows"), "{err}");
}

#[test]
fn convert_refuses_npy_naming_the_fix_and_writes_csv_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    Ragged::from_rows([vec![1.5f64, 2.0], vec![], vec![3.0]])
        .write_file(&path)
        .unwrap();
    let err = fails_with_one_line(ra().arg("convert").arg(&path).arg(dir.path().join("r.npy")));
    assert!(
        err.contains("numpy has no ragged type") && err.contains(".csv"),
        "{err}"
    );
    assert!(!dir.path().join("r.npy").exists());
    let csv = dir.path().join("r.csv");
    stdout_of(ra().arg("convert").arg(&path).arg(&csv));
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "1.5,2.0\n\n3.0\n");
    let text = dir.path().join("t.ra");
    Ragged::from_strs(["a,b", "plain"])
        .write_file(&text)
        .unwrap();
    let tcsv = dir.path().join("t.csv");
    stdout_of(ra().arg("convert").arg(&text).arg(&tcsv));
    assert_eq!(std::fs::read_to_string(&tcsv).unwrap(), "\"a,b\"\nplain\n");
}

#[test]
fn hostile_offsets_are_one_line_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.ra");
    let mut bytes = Ragged::from_rows([vec![1u8, 2], vec![3]])
        .to_bytes()
        .unwrap();
    // offsets [0, 2, 3] -> [0, 9, 3]: row 0 ends past the 3 values.
    bytes[72..80].copy_from_slice(&9u64.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = fails_with_one_line(ra().arg("cat").arg(&path));
    assert!(err.contains("row 0"), "{err}");
    let err = fails_with_one_line(ra().arg("info").arg(&path));
    assert!(err.contains("row 0"), "{err}");
    // recover reports the damage as readers do (not "unchanged"), and changes nothing.
    let err = fails_with_one_line(ra().arg("recover").arg(&path));
    assert!(err.contains("row 0 ends at value 9"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn recover_takes_back_the_rows_of_a_flush_whose_header_write_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writing) = (dir.path().join("r.ra"), dir.path().join("w.ra"));
    // A writer that never finishes (killed; its lock stays with its leaked handle): the
    // file it left is copied to `path`, its first flush's header put back.
    let mut w = rawarray_serde::RaggedWriter::<u32>::create(&writing).unwrap();
    w.append_row(&[1, 2]).unwrap();
    w.flush().unwrap();
    let committed = std::fs::read(&writing).unwrap()[..64].to_vec();
    w.append_row(&[3]).unwrap();
    w.append_row(&[]).unwrap();
    w.flush().unwrap();
    std::mem::forget(w);
    let mut bytes = std::fs::read(&writing).unwrap();
    bytes[..64].copy_from_slice(&committed);
    std::fs::write(&path, &bytes).unwrap();
    let out = stdout_of(ra().arg("recover").arg(&path));
    assert!(out.contains(": 1 row -> 3 rows; trailer kept;"), "{out}");
    let back = Ragged::<u32>::read_file(&path).unwrap();
    assert_eq!(back.iter().collect::<Vec<_>>(), [&[1u32, 2][..], &[3], &[]]);
    let out = stdout_of(ra().arg("recover").arg(&path));
    assert!(
        out.contains(": 3 rows (unchanged); trailer kept; 0 bytes removed"),
        "{out}"
    );
}

#[test]
fn compress_and_decompress_a_ragged_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let rows: Vec<Vec<u32>> = (0..300u32).map(|k| vec![k; (k % 50) as usize]).collect();
    let r = Ragged::from_rows(&rows);
    r.write_file(&path).unwrap();
    let plain = std::fs::read(&path).unwrap();
    let done = ra()
        .args(["compress", "--chunks", "256"])
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    let out = String::from_utf8(done).unwrap();
    assert!(out.contains("compressed (zstd"), "{out}");
    let packed = std::fs::read(&path).unwrap();
    assert_eq!(
        &packed[8..16],
        &12u64.to_le_bytes(),
        "flags: ragged, chunked"
    );
    assert!(packed.len() < plain.len() / 4, "{} bytes", packed.len());
    assert_eq!(Ragged::<u32>::read_file(&path).unwrap(), r);
    let info = stdout_of(ra().arg("info").arg(&path));
    assert!(info.contains("(compressed: a chunked section of"), "{info}");
    let json: Value =
        serde_json::from_str(&stdout_of(ra().args(["info", "--json"]).arg(&path))).unwrap();
    assert_eq!(json["chunked"], true);
    // ra cat reads the rows through the codec layer.
    let cat = stdout_of(ra().args(["cat", "--head", "3"]).arg(&path));
    assert!(cat.contains("[2]\t2, 2\n"), "{cat}");
    // Back to plain: the very bytes written before.
    ra().arg("decompress").arg(&path).assert().success();
    assert!(
        std::fs::read(&path).unwrap() == plain,
        "decompressed bytes differ"
    );
    // One LZ4 block does not apply to ragged values.
    let err = fails_with_one_line(ra().args(["compress", "--codec", "lz4-whole"]).arg(&path));
    assert!(err.contains("lz4-whole does not apply"), "{err}");
}

#[test]
fn a_hostile_slot_count_word_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.ra");
    let r = Ragged::from_rows([vec![1u32, 2], vec![3]]);
    let mut bytes = r
        .to_bytes_with(&rawarray_serde::codec::ChunkOptions::new())
        .unwrap();
    // The slot count word after the dims (64 bytes of header): fewer slots than rows + 1.
    bytes[64..72].copy_from_slice(&2u64.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    for cmd in ["info", "cat"] {
        let err = fails_with_one_line(ra().arg(cmd).arg(&path));
        assert!(err.contains("slots = 2"), "{cmd}: {err}");
    }
}

#[test]
fn commands_for_rectangular_arrays_say_a_ragged_file_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    Ragged::from_rows([vec![1.5f32, 2.0], vec![]])
        .write_file(&path)
        .unwrap();
    // Once "unknown flag bits 0x8": now what the file is, and which commands read it.
    // diff's exit status for a file it cannot read is 2, as diff's.
    for (args, code) in [
        (vec!["diff", "r.ra", "r.ra"], 2),
        (vec!["checksum", "--data", "r.ra"], 1),
    ] {
        let out = ra().current_dir(dir.path()).args(&args).assert().code(code);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(
            err.contains("is a ragged file") && err.contains("ra info, cat, slice"),
            "{args:?}: {err}"
        );
    }
    // Commands that meet the library's own error (watch reads the header itself) say the same
    // in ra's words, naming no Rust type.
    let out = ra()
        .current_dir(dir.path())
        .args(["watch", "r.ra"])
        .assert()
        .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("r.ra") && err.contains("ragged") && err.contains("ra info, cat, slice"),
        "{err}"
    );
    assert!(!err.contains("Ragged") && !err.contains("::"), "{err}");
}

/// A text row holding newlines, tabs, a backslash and other control characters prints on one
/// line, escaped (as `ra cat --help` says), and in JSON as the JSON string of the text.
#[test]
fn cat_escapes_the_control_characters_of_text_rows() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("t.ra");
    Ragged::from_strs([
        "two\nlines",
        "tab\there",
        "back\\slash",
        "bell\u{7}esc\u{1b}[31m",
        "crlf\r\n",
        "\u{85}é",
    ])
    .write_file(&text)
    .unwrap();
    let out = stdout_of(ra().arg("cat").arg(&text));
    assert_eq!(
        out,
        "[0]\ttwo\\nlines\n[1]\ttab\\there\n[2]\tback\\\\slash\n[3]\tbell\\u{7}esc\\u{1b}[31m\n\
         [4]\tcrlf\\r\\n\n[5]\t\\u{85}é\n"
    );
    assert_eq!(out.lines().count(), 6, "one line per row");
    let json = stdout_of(ra().args(["cat", "--json", "--head", "1"]).arg(&text));
    assert_eq!(json, "{\"row\":0,\"value\":\"two\\nlines\"}\n");
    let help = stdout_of(ra().args(["cat", "--help"]));
    assert!(
        help.contains("newline, carriage return and tab as \\n, \\r, \\t"),
        "{help}"
    );
}

/// A text file whose row 1 is not UTF-8 (a byte flipped on disk): `ra slice` of rows holding
/// it and `ra compress` refuse, naming the row, and write nothing; a slice of the good rows
/// is written.
#[test]
fn slice_and_compress_refuse_text_rows_that_are_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("t.ra");
    Ragged::from_strs(["fine", "b@d!", "also fine"])
        .write_file(&text)
        .unwrap();
    let mut bytes = std::fs::read(&text).unwrap();
    let at = bytes.windows(4).position(|w| w == b"b@d!").unwrap();
    bytes[at + 1] = 0xff; // a byte no UTF-8 text holds
    std::fs::write(&text, &bytes).unwrap();

    let out = dir.path().join("out.ra");
    let err = fails_with_one_line(ra().arg("slice").arg(&text).arg(&out).arg("0:3"));
    assert!(err.contains("row 1 is not UTF-8"), "{err}");
    assert!(!out.exists());
    let err = fails_with_one_line(ra().arg("compress").arg(&text).arg("-o").arg(&out));
    assert!(err.contains("row 1 is not UTF-8"), "{err}");
    assert!(!out.exists());
    // In place, the file is left as it was.
    let err = fails_with_one_line(ra().arg("compress").arg(&text));
    assert!(err.contains("row 1 is not UTF-8"), "{err}");
    assert_eq!(std::fs::read(&text).unwrap(), bytes);
    // Rows 2.. are text: their slice is written, and reads back.
    ra().args(["-q", "slice"])
        .arg(&text)
        .arg(&out)
        .arg("2:")
        .assert()
        .success();
    assert_eq!(
        Ragged::<u8>::read_file(&out).unwrap().to_strings().unwrap(),
        ["also fine"]
    );
}

/// A slice of a ragged file whose values are compressed keeps them compressed, with the
/// input's codec, level and filter (its own bytes say so: flags 12); `--codec none` writes them
/// plain (flags 8).
#[test]
fn a_slice_of_compressed_rows_stays_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("r.ra");
    let rows: Vec<Vec<f64>> = (0..50).map(|k| vec![k as f64 * 0.5; k % 7]).collect();
    Ragged::from_rows(rows.clone()).write_file(&plain).unwrap();
    let z = dir.path().join("z.ra");
    ra().args(["-q", "compress", "--codec", "lz4", "--shuffle", "bit"])
        .arg(&plain)
        .arg("-o")
        .arg(&z)
        .assert()
        .success();
    let flags = |p: &std::path::Path| {
        u64::from_le_bytes(std::fs::read(p).unwrap()[8..16].try_into().unwrap())
    };
    assert_eq!(flags(&z), 12);
    let out = dir.path().join("s.ra");
    let run = ra()
        .arg("slice")
        .arg(&z)
        .arg(&out)
        .arg("10:30")
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8(run.stderr).unwrap();
    assert!(
        err.contains("rows 10..30, values chunked (lz4, filters [bitshuffle]"),
        "{err}"
    );
    assert_eq!(flags(&out), 12);
    let back = Ragged::<f64>::read_file(&out).unwrap();
    assert_eq!(back.iter().collect::<Vec<_>>(), rows[10..30].to_vec());
    ra().args(["-q", "slice", "--codec", "none"])
        .arg(&z)
        .arg(&out)
        .arg("10:30")
        .assert()
        .success();
    assert_eq!(flags(&out), 8);
}

/// Rows appended to compressed values by `RaggedWriter` (flushes of several sizes, the file
/// reopened) are what `ra cat` prints; `ra recover` of a writer's uncommitted chunks says
/// which it dropped, and the rows committed stay.
#[test]
fn cat_and_recover_a_ragged_file_appended_compressed() {
    use rawarray_serde::codec::Codec;
    use rawarray_serde::{RaggedHeader, RaggedOptions, RaggedWriter, WriteOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.ra");
    let row = |k: u32| (0..k % 4).map(|i| k * 10 + i).collect::<Vec<u32>>();
    let opts = RaggedOptions::new().storage(WriteOptions::new().codec(Codec::Zstd).chunks(vec![3]));
    let mut w = RaggedWriter::<u32>::create_with(&path, &opts).unwrap();
    for k in 0..9 {
        w.append_row(&row(k)).unwrap();
        if k % 4 == 1 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
    let mut w = RaggedWriter::<u32>::open(&path).unwrap();
    for k in 9..12 {
        w.append_row(&row(k)).unwrap();
    }
    w.finish().unwrap();
    let want: String = (0..12)
        .map(|k| {
            let vals: Vec<String> = row(k).iter().map(u32::to_string).collect();
            format!("[{k}]\t{}\n", vals.join(", "))
        })
        .collect();
    assert!(
        want.starts_with("[0]\t\n[1]\t10\n[2]\t20, 21\n[3]\t30, 31, 32\n"),
        "{want}"
    );
    assert_eq!(stdout_of(ra().arg("cat").arg(&path)), want);
    let h = RaggedHeader::decode(&std::fs::read(&path).unwrap()).unwrap();
    assert!(h.chunked);
    assert_eq!(h.values, 18);

    // A writer whose flush of 6 more values (two new chunks of 3) lost its header write:
    // its entries point past the committed size.
    let writing = dir.path().join("w.ra");
    std::fs::copy(&path, &writing).unwrap();
    let committed = std::fs::read(&writing).unwrap()[..h.encode().len()].to_vec();
    let mut w = RaggedWriter::<u32>::open(&writing).unwrap();
    w.append_row(&[1, 2, 3, 4, 5, 6]).unwrap();
    w.flush().unwrap();
    std::mem::forget(w);
    let mut bytes = std::fs::read(&writing).unwrap();
    bytes[..committed.len()].copy_from_slice(&committed);
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(stdout_of(ra().arg("cat").arg(&path)), want);
    let out = stdout_of(ra().arg("recover").arg(&path));
    assert!(
        out.contains(": 12 rows (as many as before); trailer kept;")
            && out.contains("dropped chunks 6, 7 (index entries"),
        "{out}"
    );
    assert_eq!(stdout_of(ra().arg("cat").arg(&path)), want);
    let out = stdout_of(ra().arg("recover").arg(&path));
    assert!(
        out.contains(": 12 rows (unchanged); trailer kept; 0 bytes removed"),
        "{out}"
    );
}
