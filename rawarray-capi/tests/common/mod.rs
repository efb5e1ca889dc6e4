//! What the C and Fortran tests share: the compilers (installed from Debian's packages when
//! missing and the tests run as root, as CI does; otherwise each test fails with one line saying
//! what to install), and building a program against the library cargo built for this test.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The crate's folder.
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where cargo put `librawarray.so` for this test: beside the test binary.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    assert!(
        deps.join("librawarray.so").is_file() || deps.join("librawarray.dylib").is_file(),
        "{}: cargo builds the cdylib beside the test binaries",
        deps.display()
    );
    deps
}

fn which(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `program` runs, after installing `package` with apt-get where it does not and this
/// process may (root, apt-get present). `None` when it can be had; else why not.
fn provide(program: &str, package: &str) -> Result<(), String> {
    if which(program) {
        return Ok(());
    }
    static UPDATED: OnceLock<()> = OnceLock::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc_geteuid() } == 0;
    if root && which("apt-get") {
        UPDATED.get_or_init(|| {
            let _ = Command::new("apt-get").args(["update", "-qq"]).output();
        });
        eprintln!("installing {package} (apt-get) for the C and Fortran tests");
        let out = Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(|e| format!("apt-get: {e}"))?;
        if which(program) {
            return Ok(());
        }
        return Err(format!(
            "{program} is absent and `apt-get install {package}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    Err(format!(
        "{program} is absent: install it (Debian/Ubuntu: apt-get install {package}); the C and \
         Fortran tests need it"
    ))
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// The C compiler, provided once; panics with one line if it cannot be had.
pub fn gcc() -> &'static str {
    static GCC: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(why) = GCC.get_or_init(|| provide("gcc", "gcc").and_then(|()| provide_libc_dev())) {
        panic!("C compiler: {why}");
    }
    "gcc"
}

fn provide_libc_dev() -> Result<(), String> {
    // gcc without libc6-dev cannot link; its absence shows as a missing stdio.h.
    if Path::new("/usr/include/stdio.h").exists() {
        return Ok(());
    }
    provide("gcc", "libc6-dev")
}

/// The Fortran compiler, provided once; panics with one line if it cannot be had.
pub fn gfortran() -> &'static str {
    static GF: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(why) = GF.get_or_init(|| provide("gfortran", "gfortran")) {
        panic!("Fortran compiler: {why}");
    }
    "gfortran"
}

/// The flags of every C test program: warnings are errors, and AddressSanitizer watches every
/// access and leak on the C side (the library's own memory is Rust's).
pub const C_FLAGS: &[&str] = &[
    "-std=c11",
    "-g",
    "-O1",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-fsanitize=address",
    "-fno-omit-frame-pointer",
];

/// Compiles C `sources` into `out` (in `dir`) against the header and the library, with
/// [`C_FLAGS`] and `extra`; panics with the compiler's output on failure.
pub fn build_c(compiler: &str, sources: &[PathBuf], out: &Path, extra: &[&str]) -> PathBuf {
    let lib = lib_dir();
    let mut cmd = Command::new(compiler);
    cmd.args(C_FLAGS)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(crate_dir().join("tests/c"))
        .args(sources)
        .args(extra)
        .arg("-o")
        .arg(out)
        .arg(format!("-L{}", lib.display()))
        .arg("-lrawarray")
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    let o = cmd.output().unwrap_or_else(|e| panic!("{compiler}: {e}"));
    assert!(
        o.status.success(),
        "compiling {sources:?} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out.to_path_buf()
}

/// A C test program's source.
pub fn c_source(name: &str) -> PathBuf {
    crate_dir().join("tests/c").join(name)
}

/// AddressSanitizer's options for the test programs: any finding, leaks included, fails the run.
pub const ASAN_OPTIONS: &str = "detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86";

/// Runs a test program (with [`ASAN_OPTIONS`] unless the command sets its own), against the
/// library built for this test: cargo's `LD_LIBRARY_PATH` also names `target/debug`, whose
/// `librawarray.so` another cargo command may have left behind, older than this test's, and
/// it would win over the program's rpath.
pub fn run(cmd: &mut Command) -> Output {
    let own = cmd
        .get_envs()
        .any(|(k, v)| k.to_str() == Some("ASAN_OPTIONS") && v.is_some());
    if !own {
        cmd.env("ASAN_OPTIONS", ASAN_OPTIONS);
    }
    let var = if cfg!(target_os = "macos") {
        "DYLD_LIBRARY_PATH"
    } else {
        "LD_LIBRARY_PATH"
    };
    let inherited = std::env::var_os(var).unwrap_or_default();
    let paths = std::iter::once(lib_dir()).chain(std::env::split_paths(&inherited));
    cmd.env(var, std::env::join_paths(paths).expect("library paths"));
    cmd.output().expect("the test program runs")
}

/// [`run`], asserting success; returns stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let what = format!("{cmd:?}");
    let o = run(cmd);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{what} failed ({}):\n{log}", o.status);
    assert!(!log.contains("AddressSanitizer"), "{what}:\n{log}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[path = "../../../tests/common/python.rs"]
pub mod python;

/// `python tests/python/SCRIPT args...` in the tests' Python environment, with the rawarray
/// package installed (built once; cargo makes the rebuild a no-op): its stdout.
pub fn numpy_script(script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(python::install_package);
    python::run_script(&crate_dir().join("tests/python").join(script), args)
}

/// The `ra` tool of this build: beside the test binaries' folder (built with the workspace;
/// built here when this crate's tests run alone).
pub fn ra_tool() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let ra = profile_dir.join("ra");
    if !ra.is_file() {
        let target = profile_dir.parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let o = Command::new(cargo)
            .args(["build", "-p", "rawarray-cli", "--bin", "ra", "--target-dir"])
            .arg(target)
            .current_dir(crate_dir())
            .output()
            .expect("cargo runs");
        assert!(
            o.status.success(),
            "building ra failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    ra
}

/// pkg-config, provided once; panics with one line if it cannot be had.
pub fn pkg_config() -> &'static str {
    static PC: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(why) = PC.get_or_init(|| provide("pkg-config", "pkg-config")) {
        panic!("pkg-config: {why}");
    }
    "pkg-config"
}

/// The compiler and linker flags of HDF5's C library (libhdf5-dev, provided once), for the
/// benchmark.
pub fn hdf5_flags() -> String {
    let pc = pkg_config();
    static H5: OnceLock<Result<(), String>> = OnceLock::new();
    let have = || {
        Command::new(pc)
            .args(["--exists", "hdf5"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if let Err(why) = H5.get_or_init(|| {
        if have() {
            return Ok(());
        }
        provide("h5cc", "libhdf5-dev")?;
        if have() {
            Ok(())
        } else {
            Err("libhdf5-dev installed no hdf5.pc".into())
        }
    }) {
        panic!("HDF5: {why}");
    }
    let o = Command::new(pc)
        .args(["--cflags", "--libs", "hdf5"])
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap()
}
