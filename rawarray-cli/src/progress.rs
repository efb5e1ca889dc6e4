//! A progress bar on stderr for long operations: only for inputs over [`THRESHOLD`] bytes and
//! only when stderr is a terminal, so piped and scripted runs see nothing extra.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Inputs smaller than this finish too fast for a bar to help.
pub const THRESHOLD: u64 = 64 << 20;

/// A byte-counting progress bar, possibly hidden.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar for `total` bytes of `what`, shown only if worth it and stderr is a terminal.
    pub fn bytes(total: u64, what: &str) -> Progress {
        if total <= THRESHOLD || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        Progress(bar)
    }

    /// No bar.
    pub fn hidden() -> Progress {
        Progress(ProgressBar::hidden())
    }

    /// `n` more bytes done.
    pub fn inc(&self, n: u64) {
        self.0.inc(n);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
