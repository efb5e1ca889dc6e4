#![doc = include_str!("../../../README.md")]
//! (The workspace README, whose Rust code blocks run here as doc tests; the guides' blocks run
//! as the docs of the modules below.)

/// The Rust guide, `doc/rust.md`, whose Rust code blocks run here as doc tests.
#[doc = include_str!("../../../doc/rust.md")]
pub mod rust_guide {}

/// Makes a fresh scratch folder the current directory, so that the examples can write
/// `a.ra` and friends as a user would without writing into the source tree. Called from the
/// hidden first line of each example.
#[doc(hidden)]
pub fn scratch() {
    let dir = std::env::temp_dir().join(format!("rawarray-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder in the temp dir");
    std::env::set_current_dir(&dir).expect("the scratch folder as current dir");
}
