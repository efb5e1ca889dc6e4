//! `ra slice`: blocks written as new files, equal to the same block cut from a whole read, with
//! the trailer kept; numpy's slice syntax (steps, negatives) checked against numpy slicing the
//! same file; a `.ra` stream on standard output; bad ranges are errors naming the dim.

mod common;

use std::process::{Command as Process, Stdio};

use common::*;
use predicates::prelude::*;
use rawarray_serde::{DynArray, RawArray, Trailer, WriteOptions};

fn cube(dir: &std::path::Path, opts: &WriteOptions) -> std::path::PathBuf {
    let a = RawArray::from_shape_vec(vec![4, 3, 5], (0..60).map(|i| i as f32).collect()).unwrap();
    let mut d = DynArray::from_typed(&a);
    d.set_trailer(&Trailer::new(serde_json::json!({"units": "m"})).unwrap());
    let path = dir.join("cube.ra");
    d.write_file_with(&path, opts).unwrap();
    path
}

#[test]
fn a_plane_a_block_and_a_squeezed_plane() {
    let dir = tempfile::tempdir().unwrap();
    for opts in [
        WriteOptions::new(),
        WriteOptions::new().big_endian(true).compress(true),
    ] {
        let input = cube(dir.path(), &opts);
        let out = dir.path().join("plane.ra");
        ra().args(["slice"])
            .arg(&input)
            .arg(&out)
            .arg(":,:,2")
            .assert()
            .success();
        let plane: RawArray<f32> = RawArray::read_file(&out).unwrap();
        assert_eq!(plane.dims(), &[4, 3, 1]);
        assert_eq!(
            plane.as_slice(),
            (24..36).map(|i| i as f32).collect::<Vec<_>>()
        );
        let t = Trailer::read_file(&out).unwrap().unwrap();
        assert_eq!(t.params["units"], "m");

        ra().args(["slice"])
            .arg(&input)
            .arg(&out)
            .arg("1:3, 2 ,3:")
            .assert()
            .success();
        let b: RawArray<f32> = RawArray::read_file(&out).unwrap();
        assert_eq!(b.dims(), &[2, 1, 2]);
        assert_eq!(b.as_slice(), &[45.0, 46.0, 57.0, 58.0]);

        ra().args(["slice", "--squeeze"])
            .arg(&input)
            .arg(&out)
            .arg(":2,:,4")
            .assert()
            .success();
        let s: RawArray<f32> = RawArray::read_file(&out).unwrap();
        assert_eq!(s.dims(), &[2, 3]);
        assert_eq!(s.as_slice(), &[48.0, 49.0, 52.0, 53.0, 56.0, 57.0]);
    }
}

#[test]
fn bad_ranges_name_the_dim_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = cube(dir.path(), &WriteOptions::new());
    let out = dir.path().join("never.ra");
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,:,5")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "subset dim 2: index 5 is out of bounds for length 5",
        ));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,:")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("2 ranges for 3 dims [4, 3, 5]"));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,x,:")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("dim 1"));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,-4,:")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "subset dim 1: index -4 is out of bounds for length 3",
        ));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg(":,::0,:")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("dim 1").and(predicate::str::contains("step")));
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg("1:2:3:4,:,:")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("dim 0"));
    assert!(!out.exists());
}

/// As numpy, a slice past the end or backward with a positive step is clipped, not refused:
/// `3:1` is an empty dim, `2:99` the dim from 2.
#[test]
fn slices_past_the_end_are_clipped_as_numpy_clips_them() {
    let dir = tempfile::tempdir().unwrap();
    let input = cube(dir.path(), &WriteOptions::new());
    let out = dir.path().join("clip.ra");
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg("3:1,:,:")
        .assert()
        .success();
    let e: RawArray<f32> = RawArray::read_file(&out).unwrap();
    assert_eq!(e.dims(), &[0, 3, 5]);
    ra().args(["slice"])
        .arg(&input)
        .arg(&out)
        .arg("2:99,0,-99:1")
        .assert()
        .success();
    let c: RawArray<f32> = RawArray::read_file(&out).unwrap();
    assert_eq!(c.dims(), &[2, 1, 1]);
    assert_eq!(c.as_slice(), &[2.0, 3.0]);
}

/// Steps, negative steps and negative indices, written out by hand: the cube's value at
/// `[i, j, k]` is `i + 4 j + 12 k`.
#[test]
fn steps_and_negatives_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    for opts in [
        WriteOptions::new(),
        WriteOptions::new().big_endian(true).compress(true),
    ] {
        let input = cube(dir.path(), &opts);
        let out = dir.path().join("s.ra");
        let cut = |ranges: &str, squeeze: bool| -> RawArray<f32> {
            let mut cmd = ra();
            cmd.arg("slice");
            if squeeze {
                cmd.arg("--squeeze");
            }
            cmd.arg(&input).arg(&out).arg(ranges).assert().success();
            RawArray::read_file(&out).unwrap()
        };
        // Every other i, the last j, k backward by 2 from the end.
        let a = cut("::2,-1,::-2", false);
        assert_eq!(a.dims(), &[2, 1, 3]);
        let want: Vec<f32> = [4, 2, 0]
            .iter()
            .flat_map(|k| [0, 2].map(move |i| (i + 4 * 2 + 12 * k) as f32))
            .collect();
        assert_eq!(a.as_slice(), want);
        // i reversed, j from 1 by 1, k = -5 (the first): squeezed to [4, 2].
        let b = cut("::-1,1:,-5", true);
        assert_eq!(b.dims(), &[4, 2]);
        assert_eq!(b.as_slice(), &[7.0, 6.0, 5.0, 4.0, 11.0, 10.0, 9.0, 8.0]);
        // A step in every dim: i = 3, 1; j = 0, 2; k = 1, 4.
        let c = cut("-1:0:-2,::2,1::3", false);
        assert_eq!(c.dims(), &[2, 2, 2]);
        assert_eq!(
            c.as_slice(),
            &[15.0, 13.0, 23.0, 21.0, 51.0, 49.0, 59.0, 57.0]
        );
        // The trailer is kept.
        assert_eq!(
            Trailer::read_file(&out).unwrap().unwrap().params["units"],
            "m"
        );
    }
}

/// numpy slicing the file itself (its own header parse) is the truth: every kind of item in
/// every dim, with and without --squeeze, on a cube whose k-planes are more than a page apart
/// (so far steps take the index-by-index reads).
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn slices_equal_numpys_of_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let dims = vec![37u64, 30, 9];
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims, (0..n as i32).map(|k| k * 3 - 7).collect()).unwrap();
    let input = dir.path().join("in.ra");
    a.write_file(&input).unwrap();
    let cases = [
        (":,:,:", false),
        ("::3,::-1,-1", false),
        ("::3,::-1,-1", true),
        ("-5:,2:-2:4,::-4", false),
        ("30:2:-7,-1,1:8:2", true),
        ("::-1,::-1,::-1", false),
        ("100:,:,:", false),
        ("1::5,-30,::8", false),
        ("-2,-29::9,3:", true),
        // k-planes 4440 bytes apart and more: read one k at a time.
        (":,::2,::3", false),
        ("::-1,:,::-2", false),
    ];
    for (i, (ranges, squeeze)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("out{i}.ra"));
        let mut cmd = ra();
        cmd.args(["-q", "slice"]);
        if *squeeze {
            cmd.arg("--squeeze");
        }
        cmd.arg(&input).arg(&out).arg(ranges).assert().success();
        let said = python(&[
            &"slice",
            &input,
            &out,
            ranges,
            &if *squeeze { "1" } else { "0" },
        ]);
        assert!(said.starts_with("ok"), "{ranges}: {said}");
    }
}

/// `-` as OUT writes the `.ra` stream to standard output: `ra info -` and `ra cat -` read it as
/// they read the file `ra slice` writes; nothing but the stream is on stdout.
#[test]
fn a_slice_on_standard_output_is_read_by_ra_itself() {
    let dir = tempfile::tempdir().unwrap();
    let input = cube(dir.path(), &WriteOptions::new().compress(true));
    let file = dir.path().join("f.ra");
    ra().args(["-q", "slice"])
        .arg(&input)
        .arg(&file)
        .arg("::-2,-1,1::2")
        .assert()
        .success();
    let out = ra()
        .arg("slice")
        .arg(&input)
        .args(["-", "::-2,-1,1::2"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(out.stdout, std::fs::read(&file).unwrap());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        format!(
            "{} -> <stdout>: dims [2, 1, 2], one LZ4 block\n",
            input.display()
        )
    );
    // Piped: ra slice IN - RANGES | ra cat -.
    let bin = assert_cmd::cargo::cargo_bin("ra");
    let mut slicer = Process::new(&bin)
        .args(["-q", "slice"])
        .arg(&input)
        .args(["-", "::-2,-1,1::2"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let cat = Process::new(&bin)
        .args(["cat", "-"])
        .stdin(slicer.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(slicer.wait().unwrap().success());
    assert!(cat.status.success());
    assert_eq!(
        String::from_utf8(cat.stdout).unwrap(),
        stdout_of(ra().arg("cat").arg(&file))
    );
    let info = ra()
        .args(["info", "-"])
        .write_stdin(std::fs::read(&file).unwrap())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(info).unwrap().contains("[2, 1, 2]"));
}

/// What the chunked config of a file says, read from its bytes as doc/chunked.md lays them out
/// (the config follows the header): filter id, codec id, level, chunk shape.
/// flags, filter id, codec id, level, chunk shape (zeros and none for a file not chunked).
type ChunkedConfig = (u64, u32, u32, i32, Vec<u64>);

fn chunked_config(path: &std::path::Path) -> ChunkedConfig {
    let b = std::fs::read(path).unwrap();
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let flags = u64_at(8);
    let ndims = u64_at(40) as usize;
    let c = 48 + 8 * ndims;
    if flags & 4 == 0 {
        return (flags, 0, 0, 0, Vec::new());
    }
    assert_eq!(&b[c..c + 8], b"RACHUNK1");
    let chunks = (0..ndims).map(|d| u64_at(c + 48 + 8 * d)).collect();
    (
        flags,
        u32_at(c + 8),
        u32_at(c + 12),
        u32_at(c + 16) as i32,
        chunks,
    )
}

/// A slice of a chunked zstd file is a chunked zstd file with the input's filter and level and
/// chunk shape (each size at most the slice's dim), as its own bytes say, and its values are
/// numpy's slice of the plain file; stderr says what was written. Flags say otherwise:
/// `--codec none` writes plain, `--codec lz4` keeps the filter, `--level` the codec.
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn a_slice_of_a_chunked_file_is_chunked_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let dims = vec![40u64, 30, 12];
    let n: u64 = dims.iter().product();
    let a = RawArray::from_shape_vec(dims, (0..n as i32).map(|k| k / 7 - 300).collect()).unwrap();
    let plain = dir.path().join("plain.ra");
    a.write_file(&plain).unwrap();
    let z = dir.path().join("z.ra");
    ra().args([
        "-q",
        "compress",
        "--level",
        "9",
        "--shuffle",
        "bit",
        "--chunks",
        "16,30,4",
        // Version 1, whose config bytes chunked_config reads; a slice keeps the version.
        "--layout-version",
        "1",
    ])
    .arg(&plain)
    .arg("-o")
    .arg(&z)
    .assert()
    .success();
    // filter 2 (bit shuffle), codec 2 (zstd), level 9.
    assert_eq!(chunked_config(&z), (4, 2, 2, 9, vec![16, 30, 4]));

    let cases: [(&str, &[&str], ChunkedConfig, &str); 5] = [
        // The input's settings; chunks cut to the slice's dims (30 -> 5, 4 -> 3).
        (
            "2:38:2,5:10,3:6",
            &[],
            (4, 2, 2, 9, vec![16, 5, 3]),
            "chunked (zstd level 9, filters [bitshuffle], RACHUNK1, chunks [16, 5, 3])",
        ),
        // --squeeze drops the dim, and its chunk size.
        (
            ":,7,::-1",
            &["--squeeze"],
            (4, 2, 2, 9, vec![16, 4]),
            "chunked (zstd level 9, filters [bitshuffle], RACHUNK1, chunks [16, 4])",
        ),
        (":,:,5", &["--codec", "none"], (0, 0, 0, 0, vec![]), "plain"),
        // Another codec: the input's filter and chunks, that codec's level (lz4's is 0).
        (
            "::-3,:,:",
            &["--codec", "lz4"],
            (4, 2, 1, 0, vec![14, 30, 4]),
            "chunked (lz4, filters [bitshuffle], RACHUNK1, chunks [14, 30, 4])",
        ),
        (
            ":,:,:",
            &["--level", "1", "--chunks", "40,10,12"],
            (4, 2, 2, 1, vec![40, 10, 12]),
            "chunked (zstd level 1, filters [bitshuffle], RACHUNK1, chunks [40, 10, 12])",
        ),
    ];
    for (i, (ranges, flags, config, said)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("s{i}.ra"));
        let run = ra()
            .arg("slice")
            .args(*flags)
            .arg(&z)
            .arg(&out)
            .arg(ranges)
            .assert()
            .success()
            .get_output()
            .clone();
        let err = String::from_utf8(run.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.trim_end().ends_with(said), "{ranges}: {err}");
        assert_eq!(&chunked_config(&out), config, "{ranges} {flags:?}");
        // The values: numpy's slice of the plain file (decoded to plain bytes first).
        let decoded = dir.path().join(format!("s{i}_plain.ra"));
        ra().args(["-q", "decompress"])
            .arg(&out)
            .arg("-o")
            .arg(&decoded)
            .assert()
            .success();
        let squeeze = if flags.contains(&"--squeeze") {
            "1"
        } else {
            "0"
        };
        let ok = python(&[&"slice", &plain, &decoded, ranges, &squeeze]);
        assert!(ok.starts_with("ok"), "{ranges}: {ok}");
    }

    // --codec none takes no chunk settings: a usage error, nothing written.
    let never = dir.path().join("never.ra");
    ra().args(["slice", "--codec", "none", "--level", "3"])
        .arg(&z)
        .arg(&never)
        .arg(":,:,1")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--codec none writes the slice plain",
        ));
    assert!(!never.exists());
    // A slice of a plain file stays plain; of an LZ4 block, one LZ4 block (flag bit 1).
    let p = dir.path().join("p.ra");
    ra().args(["-q", "slice"])
        .arg(&plain)
        .arg(&p)
        .arg(":,:,1")
        .assert()
        .success();
    assert_eq!(chunked_config(&p).0, 0);
    let l = dir.path().join("l.ra");
    ra().args(["-q", "compress", "--codec", "lz4-whole"])
        .arg(&plain)
        .arg("-o")
        .arg(&l)
        .assert()
        .success();
    let ls = dir.path().join("ls.ra");
    ra().args(["-q", "slice"])
        .arg(&l)
        .arg(&ls)
        .arg(":,:,1")
        .assert()
        .success();
    assert_eq!(chunked_config(&ls).0, 2);
}

#[test]
fn help_documents_the_range_syntax() {
    ra().args(["slice", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("ra slice big.ra plane.ra :,:,42"))
        .stdout(predicate::str::contains("the order ra info"))
        // --codec none is plain here, and its help says so (not ra compress's chunked none).
        .stdout(predicate::str::contains("none plain"))
        .stdout(predicate::str::contains("Chunked, blocks stored").not());
}
