//! librawarray from Fortran: the module `fortran/rawarray.f90` and `examples/example.f90`,
//! compiled with gfortran, write a 3-d `real(4)` array (plain and compressed) and a record file
//! of a derived type; Rust reads them back.

mod common;

use std::process::Command;

use common::*;
use rawarray_serde::{ArrayReader, RaRecord, RawArray, RecordReader};

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Particle {
    step: i64,
    position: [f32; 3],
    energy: f64,
}

#[test]
fn a_fortran_program_writes_an_array_and_records_that_rust_reads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lib = lib_dir();
    let exe = d.join("example");
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
        .arg(d)
        .arg(crate_dir().join("fortran/rawarray.f90"))
        .arg(crate_dir().join("examples/example.f90"))
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
