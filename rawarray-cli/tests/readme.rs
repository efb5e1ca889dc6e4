//! The docs' `ra` examples run as written: every line starting with `ra ` in the shell blocks
//! of the README and of `doc/cli.md` is run by `sh`, in order, in a scratch folder holding the
//! reference files at the path the docs use, with this build's `ra` first on `PATH`, and must
//! succeed.

use std::path::Path;
use std::process::Command;

/// The `ra` lines of the shell blocks of `markdown`, without their comments.
fn ra_lines(markdown: &str) -> Vec<String> {
    markdown
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .flat_map(str::lines)
        .filter(|l| l.starts_with("ra "))
        .map(|l| l.split("  #").next().unwrap().trim().to_string())
        .collect()
}

/// Runs `lines` in a fresh scratch folder; returns the folder.
fn run_in_scratch(lines: &[String], doc: &str) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    let fixtures = scratch.path().join("tests/fixtures/reference");
    std::fs::create_dir_all(&fixtures).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/reference");
    for entry in std::fs::read_dir(source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), fixtures.join(entry.file_name())).unwrap();
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ra")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    for line in lines {
        let out = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(scratch.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{doc} line `{line}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    scratch
}

#[test]
fn the_readme_ra_lines_run() {
    let lines = ra_lines(include_str!("../../README.md"));
    assert!(lines.len() >= 3, "{lines:?}");
    let scratch = run_in_scratch(&lines, "README.md");
    // What the lines made is there: the plane, and its compressed twin.
    assert!(scratch.path().join("plane.ra").is_file());
    assert!(scratch.path().join("plane_z.ra").is_file());
}

#[test]
fn the_cli_guide_ra_lines_run() {
    let lines = ra_lines(include_str!("../../doc/cli.md"));
    assert!(lines.len() >= 6, "{lines:?}");
    let scratch = run_in_scratch(&lines, "doc/cli.md");
    // What the lines made is there: the .npy, a sums file ra verify accepted, the slice of the
    // compressed file.
    assert!(scratch.path().join("randf32.npy").is_file());
    assert!(scratch.path().join("SUMS").is_file());
    assert!(scratch.path().join("plane.ra").is_file());
}
