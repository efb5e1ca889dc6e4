//! Helpers shared by the library's integration tests.
#![allow(dead_code)]

pub mod counting;
pub mod crash;
mod fixtures;

#[allow(unused_imports)] // not every test file uses every helper
pub use fixtures::*;
