//! What a command that writes a file says when it succeeds: one line on stderr (stdout is
//! kept for data: `ra convert a.ra -` writes the array there), and notes about a command
//! that changed nothing or made a file larger. `-q` silences both; errors and warnings about
//! data that is not kept still print.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences [`done`] and [`note`] (`ra -q`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// The one line of a successful command: `a.ra -> a.npy: 2424 bytes`.
pub fn done(line: impl Display) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{}", crate::names::unalias(&line.to_string()));
    }
}

/// A note: the command succeeded but did not do what its name says (`ra: note: ...`).
pub fn note(line: impl Display) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("ra: note: {line}");
    }
}

/// `n bytes`, with the size in MiB/GiB beside large counts.
pub fn bytes(n: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    match n {
        0..=1048575 => format!("{n} bytes"),
        1048576..=1073741823 => format!("{n} bytes ({:.1} MiB)", n as f64 / MIB),
        _ => format!("{n} bytes ({:.1} GiB)", n as f64 / MIB / 1024.0),
    }
}
