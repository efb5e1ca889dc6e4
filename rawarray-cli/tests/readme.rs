//! The README's `ra` examples run as written: every line of the `ra` tool section's shell block
//! that starts with `ra ` is run by `sh` in a scratch folder holding the reference files at
//! the path the README uses, with this build's `ra` first on `PATH`, and must succeed.

use std::path::Path;
use std::process::Command;

fn readme_ra_lines() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## The `ra` tool")
        .nth(1)
        .expect("README has a section `## The `ra` tool`");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section opens with a sh block");
    block
        .lines()
        .filter(|l| l.starts_with("ra "))
        .map(|l| l.split("  #").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn the_readme_ra_lines_run() {
    let lines = readme_ra_lines();
    assert!(lines.len() >= 4, "{lines:?}");
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
    for line in &lines {
        let out = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(scratch.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README line `{line}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // What the lines made is there: the .npy, and a sums file ra verify accepted.
    assert!(scratch.path().join("randf32.npy").is_file());
    assert!(scratch.path().join("SUMS").is_file());
}
