//! The Python the numpy interop tests run, provisioned by the tests themselves.
//!
//! The first test that needs Python builds a virtual environment under `target/tmp/python-env`
//! from the pinned `tests/python/requirements.txt` (numpy, and lz4 as an independent LZ4
//! decoder) and every later test, in any test binary, reuses it; it is rebuilt when the
//! requirements change. A file lock keeps two test processes from building it at once.
//!
//! Where it cannot be built (no `python3`, no `venv` module, no package index), every test that
//! needs it fails with the same one line saying what to install, not a traceback per test.
//! Two switches, both read when the tests are compiled or run:
//! - `RAWARRAY_PYTHON=/path/to/python`: use that interpreter (it must have numpy and lz4).
//! - `RAWARRAY_SKIP_PYTHON=1`: the tests are compiled as ignored with that reason (the build
//!   scripts set `cfg(skip_python)`), so `cargo test` reports them as `ignored`, never `ok`.
//!
//! This file is shared by the workspace's tests and the CLI's (`#[path]`), so it uses only std.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The pinned requirements, compiled in: the stamp that says whether an environment is current.
const REQUIREMENTS: &str = include_str!("../python/requirements.txt");

/// What a newcomer can do about a failure, appended to every provisioning error.
const REMEDY: &str = "install Python 3 with its venv module (Debian/Ubuntu: apt-get install \
                      python3-venv) and allow access to PyPI, or set RAWARRAY_PYTHON to a Python \
                      with numpy and lz4, or set RAWARRAY_SKIP_PYTHON=1 to skip the numpy tests";

/// The interpreter to run, provisioned on first use; panics with one line if it cannot be had.
pub fn interpreter() -> &'static Path {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(provision) {
        Ok(path) => path,
        Err(why) => panic!("numpy interop tests need Python: {why}; {REMEDY}"),
    }
}

/// Runs `python script args...` and returns its standard output; panics with the script's
/// output if it fails (a failed check is a test failure, and its traceback is the detail).
pub fn run_script(script: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = command(script, args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", interpreter().display()));
    assert!(
        out.status.success(),
        "{} failed:\n--- stdout\n{}\n--- stderr\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the scripts print UTF-8")
}

/// `python script args...`, not yet run, for tests that look at a failing script's output.
pub fn command(script: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Command {
    let mut cmd = Command::new(interpreter());
    cmd.arg(script);
    for a in args {
        cmd.arg(a);
    }
    cmd
}

fn provision() -> Result<PathBuf, String> {
    if let Some(python) = std::env::var_os("RAWARRAY_PYTHON") {
        return Ok(PathBuf::from(python));
    }
    let env_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-env");
    let python = env_dir.join(if cfg!(windows) {
        "Scripts/python.exe"
    } else {
        "bin/python"
    });
    let stamp = env_dir.join("requirements.txt");
    let current = || fs::read_to_string(&stamp).is_ok_and(|s| s == REQUIREMENTS);
    if current() {
        return Ok(python);
    }
    fs::create_dir_all(env!("CARGO_TARGET_TMPDIR"))
        .map_err(|e| format!("cannot create target/tmp: {e}"))?;
    let lock_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-env.lock");
    let lock = File::create(&lock_path)
        .map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    // Another process may have built it while this one waited for the lock.
    if current() {
        return Ok(python);
    }
    eprintln!(
        "building the numpy tests' Python environment in {} (once)",
        env_dir.display()
    );
    let base = if cfg!(windows) { "python" } else { "python3" };
    run_step(
        Command::new(base)
            .args(["-m", "venv", "--clear"])
            .arg(&env_dir),
        &format!("`{base} -m venv` failed"),
    )?;
    let requirements = env_dir.join("requirements.pinned.txt");
    fs::write(&requirements, REQUIREMENTS)
        .map_err(|e| format!("cannot write {}: {e}", requirements.display()))?;
    run_step(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                "-r",
            ])
            .arg(&requirements),
        "installing tests/python/requirements.txt (numpy, lz4) failed",
    )?;
    // Written last: an interrupted build is not taken for a finished one.
    fs::write(&stamp, REQUIREMENTS)
        .map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(python)
}

/// Runs one provisioning step; on failure, the step and the last line it printed.
fn run_step(cmd: &mut Command, what: &str) -> Result<(), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run {program}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    Err(format!("{what} ({}: {})", out.status, last.trim()))
}

/// Builds and installs the package into the tests' Python (maturin through pip; cargo makes the
/// rebuild a no-op when nothing changed), with its Cargo feature `cloud`. Its build directory is
/// its own, under target/.
#[allow(dead_code)] // the CLI's tests include this file and do not install the package
pub fn install_package() {
    let root = workspace_root();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-build");
    // maturin's build hook runs the `maturin` program: the environment's bin/ goes first.
    let bin = interpreter().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let out = Command::new(interpreter())
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-build-isolation", "--no-deps", "--force-reinstall"])
        .arg(root.join("rawarray-python"))
        .env("CARGO_TARGET_DIR", &target)
        // The object-store reader (`rawarray.open("s3://...")`, tests/test_store.py), which
        // the default wheel leaves out.
        .env("MATURIN_PEP517_ARGS", "--features cloud")
        .env("PATH", path)
        .output()
        .expect("pip runs");
    assert!(
        out.status.success(),
        "building the rawarray Python package failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The workspace's root: the test's package folder or the first one above it that holds the
/// Python package (this file is included by tests of several packages).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("rawarray-python/pyproject.toml").is_file())
        .expect("the workspace holds rawarray-python/")
        .to_path_buf()
}
