//! `ra diff A B`: values, not bytes; exit 0 equal, 1 different, 2 an error, as `diff`.

mod common;

use std::path::Path;

use num_complex::Complex;
use rawarray_serde::{DynArray, Layout, RawArray, RecordWriter, Trailer, WriteOptions};

use common::*;

/// Runs `ra diff ARGS`, expects `code`, returns (stdout, stderr).
fn diff(args: &[&dyn AsRef<std::ffi::OsStr>], code: i32) -> (String, String) {
    let mut cmd = ra();
    cmd.arg("diff");
    for a in args {
        cmd.arg(a);
    }
    let out = cmd.assert().code(code).get_output().clone();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn write_f64(path: &Path, dims: &[u64], v: &[f64], opts: WriteOptions) {
    RawArray::from_shape_vec(dims.to_vec(), v.to_vec())
        .unwrap()
        .write_file_with(path, &opts)
        .unwrap();
}

#[test]
fn twins_in_other_byte_orders_and_compression_are_equal() {
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<f64> = (0..600).map(|k| f64::from(k).sin() * 1e3).collect();
    let plain = dir.path().join("plain.ra");
    write_f64(&plain, &[20, 30], &v, WriteOptions::new());
    for (name, opts) in [
        ("be.ra", WriteOptions::new().big_endian(true)),
        ("z.ra", WriteOptions::new().compress(true)),
        (
            "bez.ra",
            WriteOptions::new().big_endian(true).compress(true),
        ),
    ] {
        let twin = dir.path().join(name);
        write_f64(&twin, &[20, 30], &v, opts);
        assert_ne!(
            std::fs::read(&twin).unwrap(),
            std::fs::read(&plain).unwrap()
        );
        assert_eq!(diff(&[&plain, &twin], 0), (String::new(), String::new()));
        assert_eq!(diff(&[&twin, &plain], 0).0, "");
    }
    let (out, _) = diff(&[&reference("mnist_8.ra"), &reference("mnist_8_z.ra")], 0);
    assert_eq!(out, "");
}

#[test]
fn differing_values_are_listed_with_column_major_indices_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    // dims [3, 2]: position k is index [k % 3, k / 3].
    let a = [1.0, 2.0, 3.0, 4.0, f64::NAN, 6.0];
    let b = [1.0, 2.5, 3.0, 4.0, f64::NAN, 5.0];
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    write_f64(&pa, &[3, 2], &a, WriteOptions::new());
    write_f64(&pb, &[3, 2], &b, WriteOptions::new().big_endian(true));
    // Without --equal-nan NaN differs from NaN (as numpy's isclose); NaN adds nothing to the
    // largest differences (|2 - 2.5| = 0.5, rel 0.5/2.5 = 0.2; |6 - 5| = 1, rel 0.2) and is
    // counted apart.
    let (out, err) = diff(&[&pa, &pb], 1);
    assert_eq!(
        out,
        "[1, 0]\t2.0\t2.5\n[1, 1]\tNaN\tNaN\n[2, 1]\t6.0\t5.0\n\
         3 of 6 elements differ; max abs difference 1.0, max rel difference 0.2; \
         1 with NaN or infinity\n"
    );
    assert_eq!(err, "");
    let (out, _) = diff(&[&"--equal-nan", &pa, &pb], 1);
    assert!(
        out.starts_with("[1, 0]\t2.0\t2.5\n[2, 1]\t6.0\t5.0\n2 of 6"),
        "{out}"
    );
    // Tolerances as numpy's isclose: |a - b| <= atol + rtol * |b|.
    diff(&[&"--equal-nan", &"--atol", &"1", &pa, &pb], 0);
    diff(&[&"--equal-nan", &"--rtol", &"0.2", &pa, &pb], 0);
    let (out, _) = diff(&[&"--equal-nan", &"--rtol", &"0.19", &pa, &pb], 1);
    assert!(out.contains("2 of 6"), "{out}");
    let (out, _) = diff(&[&"--equal-nan", &"--atol", &"0.5", &pa, &pb], 1);
    assert_eq!(
        out,
        "[2, 1]\t6.0\t5.0\n1 of 6 elements differ; max abs difference 1.0, max rel difference 0.2\n"
    );
    // --show bounds the listing, not the count.
    let (out, _) = diff(&[&"--show", &"1", &pa, &pb], 1);
    assert_eq!(
        out,
        "[1, 0]\t2.0\t2.5\n... (2 more)\n\
         3 of 6 elements differ; max abs difference 1.0, max rel difference 0.2; \
         1 with NaN or infinity\n"
    );
}

/// As numpy's isclose: isclose(1, inf) and isclose(-inf, inf) are False and
/// isclose(inf, inf) True, whatever rtol (inf <= atol + rtol * inf would say "close").
/// Infinities stay out of the largest differences; only NaN differences print no statistics.
#[test]
fn infinities_are_equal_only_to_themselves_whatever_the_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let inf = f64::INFINITY;
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    write_f64(&pa, &[4], &[1.0, -inf, inf, 2.0], WriteOptions::new());
    write_f64(&pb, &[4], &[inf, inf, inf, 2.0], WriteOptions::new());
    for args in [
        &[][..],
        &["--rtol", "1e-5"][..],
        &["--rtol", "1", "--atol", "1"][..],
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = Vec::new();
        for a in args {
            all.push(a);
        }
        all.push(&pa);
        all.push(&pb);
        let (out, _) = diff(&all, 1);
        assert_eq!(
            out, "[0]\t1.0\tinf\n[1]\t-inf\tinf\n2 of 4 elements differ; 2 with NaN or infinity\n",
            "{args:?}"
        );
    }
    // Complex: an infinite component on either side.
    let (ca, cb) = (dir.path().join("ca.ra"), dir.path().join("cb.ra"));
    let z = |re: f64, im: f64| Complex::new(re, im);
    RawArray::from_shape_vec(vec![2], vec![z(1.0, inf), z(inf, 0.0)])
        .unwrap()
        .write_file(&ca)
        .unwrap();
    RawArray::from_shape_vec(vec![2], vec![z(1.0, 1.0), z(inf, 0.0)])
        .unwrap()
        .write_file(&cb)
        .unwrap();
    let (out, _) = diff(&[&"--rtol", &"1", &ca, &cb], 1);
    assert!(
        out.ends_with("1 of 2 elements differ; 1 with NaN or infinity\n"),
        "{out}"
    );
    // NaN only: no "max abs difference 0.0".
    write_f64(&pa, &[2], &[f64::NAN, 1.0], WriteOptions::new());
    write_f64(&pb, &[2], &[2.0, 1.0], WriteOptions::new());
    let (out, _) = diff(&[&pa, &pb], 1);
    assert_eq!(
        out,
        "[0]\tNaN\t2.0\n1 of 2 elements differ; 1 with NaN or infinity\n"
    );
}

#[test]
fn complex_and_integers() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    let a = vec![Complex::new(1.0f32, 1.0), Complex::new(3.0, 4.0)];
    let b = vec![Complex::new(1.0f32, 1.0), Complex::new(0.0, 0.0)];
    RawArray::from_shape_vec(vec![2], a)
        .unwrap()
        .write_file(&pa)
        .unwrap();
    RawArray::from_shape_vec(vec![2], b)
        .unwrap()
        .write_file_with(&pb, &WriteOptions::new().compress(true))
        .unwrap();
    // |(3+4i) - 0| = 5; relative to |0|: inf.
    let (out, _) = diff(&[&pa, &pb], 1);
    assert_eq!(
        out,
        "[1]\t3.0+4.0i\t0.0+0.0i\n1 of 2 elements differ; max abs difference 5.0, max rel difference inf\n"
    );
    diff(&[&"--atol", &"5", &pa, &pb], 0);
    let a: Vec<i32> = vec![1, -2, 3];
    let b: Vec<i32> = vec![1, -3, 3];
    RawArray::from_shape_vec(vec![1, 3], a)
        .unwrap()
        .write_file(&pa)
        .unwrap();
    RawArray::from_shape_vec(vec![1, 3], b)
        .unwrap()
        .write_file_with(&pb, &WriteOptions::new().big_endian(true))
        .unwrap();
    // Integers compare exactly: no float statistics.
    let (out, _) = diff(&[&"--atol", &"5", &pa, &pb], 1);
    assert_eq!(out, "[0, 1]\t-2\t-3\n1 of 3 elements differ\n");
}

#[test]
fn header_differences_are_named_without_comparing_values() {
    let (out, _) = diff(&[&reference("randf32.ra"), &reference("randf64.ra")], 1);
    assert_eq!(out, "element type: float32 vs float64\n");
    let (out, _) = diff(&[&reference("randc32.ra"), &reference("test.ra")], 1);
    assert_eq!(out, "dims: [4, 4] vs [3, 4]\n");
}

#[test]
fn records_name_the_field_that_differs_and_params_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    record_file(&pa, 4);
    record_file(&pb, 4);
    diff(&[&pa, &pb], 0);
    let mut changed = recs(4);
    changed[2].id = 99;
    let mut w =
        RecordWriter::<Rec>::create(&pb, serde_json::json!({"dt": 0.25, "units": "s"})).unwrap();
    w.append_slice(&changed).unwrap();
    w.finish().unwrap();
    let (out, _) = diff(&[&pa, &pb], 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[0],
        r#"trailer params: {"dt":0.5,"units":"s"} vs {"dt":0.25,"units":"s"}"#
    );
    // rec(2): t 1.0, xyz [2.0, 2.25, -2.0], id 15.
    assert!(lines[1].starts_with("[2]\t"), "{out}");
    assert!(lines[1].ends_with("\tfield id"), "{out}");
    assert!(lines[1].contains("15") && lines[1].contains("99"), "{out}");
    assert_eq!(lines[2], "1 of 4 elements differ");
    // A damaged trailer is named damaged, not "(no trailer)".
    let mut bytes = std::fs::read(&pb).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    std::fs::write(&pb, &bytes).unwrap();
    let (out, _) = diff(&[&pa, &pb], 1);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(r#"trailer params: {"dt":0.5,"units":"s"} vs (damaged trailer: "#),
        "{out}"
    );
    // Records compare by their bytes: a tolerance is refused, not ignored.
    let (_, err) = diff(&[&"--rtol=0.5", &pa, &pb], 2);
    assert!(
        err.contains("elements are compared exactly, by their bytes"),
        "{err}"
    );
}

#[test]
fn errors_exit_2_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.ra");
    let (out, err) = diff(&[&reference("randf32.ra"), &missing], 2);
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ra: ") && err.contains("missing.ra"),
        "{err}"
    );
    let bad = dir.path().join("bad.ra");
    let mut b = std::fs::read(reference("mnist_8_z.ra")).unwrap();
    for x in &mut b[72..] {
        *x = 0xff;
    }
    std::fs::write(&bad, b).unwrap();
    // The broken LZ4 data is found while streaming, on either side.
    for args in [
        [&reference("mnist_8.ra"), &bad],
        [&bad, &reference("mnist_8.ra")],
    ] {
        let (_, err) = diff(&[args[0], args[1]], 2);
        assert!(err.contains("bad.ra") && err.contains("LZ4"), "{err}");
    }
    // Usage errors are 2 too (clap's).
    diff(&[&reference("randf32.ra")], 2);
    // A negative tolerance is ra's own usage error (`--rtol -1` would be clap's: an unknown
    // argument).
    for flag in ["--rtol=-1", "--atol=-1"] {
        let (_, err) = diff(
            &[&flag, &reference("randf32.ra"), &reference("randf32.ra")],
            2,
        );
        assert!(
            err.contains("--rtol and --atol must be numbers >= 0"),
            "{err}"
        );
    }
    // Standard input can be one side only: `ra diff - -` would compare it with itself.
    let (_, err) = diff(&[&"-", &"-"], 2);
    assert!(err.contains("only one of the two files"), "{err}");
}

/// Tolerances would be silently ignored for floats compared by their bytes (f128) and
/// records: they are a usage error naming the type (integers compare exactly, as documented).
#[test]
fn a_tolerance_for_elements_compared_by_bytes_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    // f128 (eltype 3, 16 bytes), two elements; the files differ in one byte.
    let f128 = |last: u8| {
        let words: [u64; 7] = [u64::from_le_bytes(*b"rawarray"), 0, 3, 16, 32, 1, 2];
        let mut b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        b.extend([0u8; 31]);
        b.push(last);
        b
    };
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    std::fs::write(&pa, f128(0x3f)).unwrap();
    std::fs::write(&pb, f128(0x40)).unwrap();
    let (out, _) = diff(&[&pa, &pb], 1);
    assert!(out.ends_with("1 of 2 elements differ\n"), "{out}");
    for flag in ["--rtol=1", "--atol=1", "--equal-nan"] {
        let (out, err) = diff(&[&flag, &pa, &pb], 2);
        assert_eq!(out, "");
        assert!(
            err.contains(
                "apply to float and complex values; float128 elements are compared exactly"
            ),
            "{err}"
        );
    }
}

/// A reader that stops early (`ra diff a b | head -2`) has seen differences: exit 1, not 0.
#[test]
fn a_closed_output_pipe_still_exits_1() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000;
    let a: Vec<f64> = (0..n).map(f64::from).collect();
    let b: Vec<f64> = (0..n).map(|k| f64::from(k) + 0.5).collect();
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    write_f64(&pa, &[n as u64], &a, WriteOptions::new());
    write_f64(&pb, &[n as u64], &b, WriteOptions::new());
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ra"))
        .args(["diff", "--show", "1000000"])
        .arg(&pa)
        .arg(&pb)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Some megabytes of differences: far more than a pipe holds. Read one line, then close.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "[0]\t0.0\t0.5\n");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
}

/// Several chunks on both sides, cut at different places (an LZ4 stream against a plain
/// file): the one differing element near the end is found at its index.
#[test]
fn streams_files_of_many_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let n = 400_000u64;
    let a: Vec<f64> = (0..n).map(|k| (k % 1000) as f64).collect();
    let mut b = a.clone();
    b[(n - 3) as usize] = -1.0;
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    write_f64(&pa, &[1000, 400], &a, WriteOptions::new().compress(true));
    write_f64(&pb, &[1000, 400], &b, WriteOptions::new().big_endian(true));
    // Position n - 3 = 399997 is [997, 399]; a holds 997.
    let (out, _) = diff(&[&pa, &pb], 1);
    assert_eq!(
        out,
        "[997, 399]\t997.0\t-1.0\n1 of 400000 elements differ; max abs difference 998.0, max rel difference 998.0\n"
    );
}

/// `path`'s records with its trailer's schema changed by `edit` (the data left as it is).
fn with_schema(from: &Path, path: &Path, edit: impl FnOnce(&mut Layout)) {
    let mut d = DynArray::read_file(from).unwrap();
    let t = d.trailer().unwrap().clone();
    let mut schema = t.schema.clone().unwrap();
    edit(&mut schema);
    d.set_trailer(&t.with_schema(schema));
    d.write_file(path).unwrap();
}

#[test]
fn a_record_name_that_differs_is_a_note_and_values_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.ra"), dir.path().join("b.ra"));
    record_file(&pa, 4);
    // B: the same records, as numpy writes them: a record without a name.
    with_schema(&pa, &pb, |l| {
        let Layout::Record { name, .. } = l else {
            panic!("a record schema")
        };
        assert_eq!(name, "Rec");
        name.clear();
    });
    let (out, err) = diff(&[&pa, &pb], 0);
    assert_eq!(out, "");
    assert!(
        err.contains("note: diff: the record's name: the file's is '', Rec's 'Rec'"),
        "{err}"
    );
    // The values are compared all the same: one changed is found.
    let mut changed = recs(4);
    changed[1].id = 77;
    let pc = dir.path().join("c.ra");
    let mut w =
        RecordWriter::<Rec>::create(&pc, serde_json::json!({"dt": 0.5, "units": "s"})).unwrap();
    w.append_slice(&changed).unwrap();
    w.finish().unwrap();
    with_schema(&pc, &pc, |l| {
        if let Layout::Record { name, .. } = l {
            name.clear();
        }
    });
    let (out, _) = diff(&[&pa, &pc], 1);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("[1]\t") && lines[0].ends_with("\tfield id"),
        "{out}"
    );
    assert_eq!(lines.last(), Some(&"1 of 4 elements differ"), "{out}");
    // --strict-schema makes the name a difference.
    let (out, _) = diff(&[&"--strict-schema", &pa, &pb], 1);
    assert_eq!(
        out,
        "record schema differs at the record's name: 'Rec' vs ''\n"
    );
    // Fields renamed are a difference, whatever the flag, naming the field.
    with_schema(&pa, &pb, |l| {
        if let Layout::Record { fields, .. } = l {
            fields[0].name = "time".into();
        }
    });
    let (out, _) = diff(&[&pa, &pb], 1);
    assert!(
        out.starts_with(
            "record schema differs at field 0: 't' at offset 0 vs 'time' at offset 0\n"
        ),
        "{out}"
    );
    assert!(Trailer::read_file(&pb).unwrap().is_some());
}
