//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::Path;

pub mod python;
pub mod servers;

#[path = "../../rawarray-serde/tests/common/fixtures.rs"]
mod fixtures;

#[allow(unused_imports)] // not every test file uses every helper
pub use fixtures::*;

/// Runs `python tests/python/<script> args...` in the tests' own Python environment
/// ([`python`]) and returns its stdout; panics with the script's output if it fails.
pub fn python(script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    python::run_script(&script, args)
}
