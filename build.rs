//! Tests that cannot run everywhere are compiled as ignored, with the reason, so a run reports
//! them as `ignored`, never as passed:
//! - `cfg(skip_python)`: `RAWARRAY_SKIP_PYTHON=1` skips the numpy interop tests.
//! - `cfg(skip_tmpfs)`: the real-full-disk test mounts a tmpfs, which needs root on Linux; it is
//!   skipped for other users, on other systems, and with `RAWARRAY_SKIP_TMPFS=1`.
//! - `cfg(not_root)`: tests that make files of another owner (chown) need root.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(skip_python)");
    println!("cargo::rustc-check-cfg=cfg(skip_tmpfs)");
    println!("cargo::rustc-check-cfg=cfg(not_root)");
    println!("cargo::rerun-if-env-changed=RAWARRAY_SKIP_PYTHON");
    println!("cargo::rerun-if-env-changed=RAWARRAY_SKIP_TMPFS");
    if env_is_one("RAWARRAY_SKIP_PYTHON") {
        println!("cargo::rustc-cfg=skip_python");
    }
    let root = is_linux_root();
    if env_is_one("RAWARRAY_SKIP_TMPFS") || !root {
        println!("cargo::rustc-cfg=skip_tmpfs");
    }
    if !root {
        println!("cargo::rustc-cfg=not_root");
    }
}

fn env_is_one(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v == "1")
}

/// Whether the build (and so, normally, the tests) runs as root on Linux: the real user id
/// in `/proc/self/status` is 0.
fn is_linux_root() -> bool {
    std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                == Some("0")
        })
}
