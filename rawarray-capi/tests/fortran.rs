//! librawarray from Fortran: the module `fortran/rawarray.f90` and `examples/example.f90`,
//! compiled with gfortran, write a 3-d `real(4)` array (plain and compressed) and a record file
//! of a derived type; Rust reads them back.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use rawarray_serde::{ArrayReader, RaRecord, RawArray, RecordReader};

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Particle {
    step: i64,
    position: [f32; 3],
    energy: f64,
}

/// Compiles the module and the Fortran `program` into `dir/name`, as warnings-are-errors code
/// checked at run time (bounds, AddressSanitizer); panics with gfortran's output on failure.
fn build_fortran(dir: &Path, program: &Path, name: &str) -> PathBuf {
    let lib = lib_dir();
    let exe = dir.join(name);
    let o = Command::new(gfortran())
        .args([
            "-g",
            "-O1",
            "-Wall",
            "-Werror",
            "-fcheck=all",
            "-fsanitize=address",
        ])
        .arg("-J")
        .arg(dir)
        .arg(crate_dir().join("fortran/rawarray.f90"))
        .arg(program)
        .arg(format!("-L{}", lib.display()))
        .arg("-lrawarray")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gfortran failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    exe
}

#[test]
fn a_fortran_program_writes_an_array_and_records_that_rust_reads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = build_fortran(d, &crate_dir().join("examples/example.f90"), "example");
    let out = run_ok(Command::new(&exe).arg(d));
    assert!(
        out.contains("fortran: arrays ok") && out.contains("fortran: records ok"),
        "{out}"
    );
    assert!(out.contains("missing.ra: No such file"), "{out}");

    let (nx, ny, nz) = (30u64, 20u64, 10u64);
    let mut v = Vec::new();
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                v.push((i + 100 * j + 10_000 * k) as f32);
            }
        }
    }
    let truth = RawArray::from_shape_vec(vec![nx, ny, nz], v).unwrap();
    assert_eq!(
        RawArray::<f32>::read_file(d.join("f_plain.ra")).unwrap(),
        truth
    );
    assert_eq!(
        RawArray::<f32>::read_file(d.join("f_zstd.ra")).unwrap(),
        truth
    );
    let z = ArrayReader::open(d.join("f_zstd.ra")).unwrap();
    let desc = z.section().describe();
    assert_eq!(
        (desc.codec.unwrap().name(), desc.level, desc.chunks),
        ("zstd", Some(7), Some(vec![30, 20, 2]))
    );
    assert_eq!(z.trailer().unwrap().params["from"], "fortran");

    let r = RecordReader::<Particle>::open(d.join("f_records.ra")).unwrap();
    assert_eq!(r.len(), 500);
    for i in 0..500 {
        let n = (i + 1) as f32;
        let want = Particle {
            step: i as i64,
            position: [n, 2.0 * n, -n],
            energy: 1.0 / f64::from(i as u32 + 1),
        };
        assert_eq!(r.get(i).unwrap().unwrap(), want, "record {i}");
    }
}

/// The module's constants are the header's: each `#define RA_X N` of include/rawarray.h that
/// the module declares has the same value there.
#[test]
fn the_fortran_constants_are_the_headers() {
    let header = std::fs::read_to_string(crate_dir().join("include/rawarray.h")).unwrap();
    let module = std::fs::read_to_string(crate_dir().join("fortran/rawarray.f90")).unwrap();
    let mut checked = 0;
    for line in header.lines() {
        let Some(rest) = line.strip_prefix("#define RA_") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (name, value) = (parts.next().unwrap(), parts.next().unwrap());
        let fortran_name = if name == "ABI_VERSION" {
            "HEADER_ABI_VERSION".to_string()
        } else {
            name.to_string()
        };
        let decl = format!("RA_{fortran_name} = ");
        let at = module
            .find(&decl)
            .unwrap_or_else(|| panic!("fortran/rawarray.f90 declares RA_{fortran_name}"));
        let found: String = module[at + decl.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        assert_eq!(found, value, "RA_{name}");
        checked += 1;
    }
    assert!(checked >= 18, "{checked} constants");
}

/// `ra_file_logical` from Fortran: the marker of each file Rust wrote (a zoned timestamp, a
/// date, a duration, plain numbers), as the schema spells it (doc/format.md section 7), read
/// through the module's binding and `ra_fstr`.
#[test]
fn a_fortran_program_reads_the_logical_marker() {
    use rawarray_serde::{time::TimeUnit, ElType, Header, Layout, Logical, Trailer};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A file of three zero values of `elbyte` bytes whose trailer's schema is `layout`.
    let write = |name: &str, eltype, elbyte: u64, logical: Option<Logical>| {
        let mut bytes = Header::new(eltype, elbyte, vec![3]).unwrap().encode();
        bytes.resize(bytes.len() + 3 * elbyte as usize, 0);
        let end = bytes.len() as u64;
        let layout = Layout::Scalar {
            eltype,
            elbyte,
            logical,
        };
        bytes.extend_from_slice(
            &Trailer::new(())
                .unwrap()
                .with_schema(layout)
                .encode_block(end),
        );
        let path = d.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let files = [
        (
            write(
                "stamps.ra",
                ElType::Int,
                8,
                Some(Logical::Timestamp {
                    unit: TimeUnit::Microsecond,
                    tz: Some("Europe/Paris".into()),
                }),
            ),
            "timestamp[us, tz=Europe/Paris]",
        ),
        (
            write("days.ra", ElType::Int, 4, Some(Logical::Date)),
            "date",
        ),
        (
            write(
                "lengths.ra",
                ElType::Int,
                8,
                Some(Logical::Duration {
                    unit: TimeUnit::Millisecond,
                }),
            ),
            "duration[ms]",
        ),
        (write("numbers.ra", ElType::Float, 8, None), ""),
    ];
    let exe = build_fortran(
        d,
        &crate_dir().join("tests/fortran/logical_check.f90"),
        "logical_check",
    );
    let out = run_ok(Command::new(&exe).args(files.iter().map(|(p, _)| p)));
    let want: Vec<String> = files
        .iter()
        .map(|(p, marker)| format!("{}: {marker}", p.display()))
        .collect();
    // Fortran's `print` of a line ending in ": " keeps the blank.
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got, want, "{out}");
}
