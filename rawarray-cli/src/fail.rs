//! The one error type of the tool: what failed, on which file, as one line.
//!
//! `main` turns it into the exit code: 1 for a file that could not be read or written,
//! 2 for a usage error (printed the way clap prints its own), and a quiet 0 when stdout is
//! closed early (`ra cat big.ra | head`).

use std::fmt;
use std::io;
use std::path::Path;

/// Why a subcommand failed.
#[derive(Debug)]
pub enum Failure {
    /// A file could not be read or written, or its content is not what the command needs.
    File {
        /// The file, as the user named it.
        path: String,
        /// The problem, one line.
        message: String,
    },
    /// Checks ran and some did not pass (`ra verify`); the details are already on stdout.
    Checks(String),
    /// The arguments of a subcommand do not make sense together (exit 2).
    Usage {
        /// The subcommand, for its usage line.
        command: &'static str,
        /// What is wrong.
        message: String,
    },
    /// stdout was closed by its reader: stop quietly.
    BrokenPipe,
    /// `ra diff` found differences (already printed): exit 1, as `diff`.
    Differ,
}

/// The result of a subcommand.
pub type Result<T, E = Failure> = std::result::Result<T, E>;

impl Failure {
    /// A problem with `path`.
    pub fn file(path: &Path, message: impl fmt::Display) -> Failure {
        let raw = path.display().to_string();
        let path = crate::source::shown(path).into_owned();
        let mut message = one_line(&message.to_string());
        if raw != path {
            // The temporary copy of standard input is named as what it stands for.
            message = message.replace(&raw, &path);
        }
        // Library errors about a destination already name it ("PATH: reason", or "PATH is
        // being written by another writer"): say it once.
        let message = match message
            .strip_prefix(&format!("{path}: "))
            .or_else(|| message.strip_prefix(&format!("{path} ")))
        {
            Some(rest) => rest.to_string(),
            None => message,
        };
        Failure::File { path, message }
    }

    /// A usage error of `command`.
    pub fn usage(command: &'static str, message: impl fmt::Display) -> Failure {
        Failure::Usage {
            command,
            message: one_line(&message.to_string()),
        }
    }

    /// A failed write to stdout.
    pub fn stdout(e: io::Error) -> Failure {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::File {
                path: "<stdout>".into(),
                message: one_line(&e.to_string()),
            }
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::File { path, message } => write!(f, "{path}: {message}"),
            Failure::Checks(m) | Failure::Usage { message: m, .. } => f.write_str(m),
            Failure::BrokenPipe => f.write_str("broken pipe"),
            Failure::Differ => Ok(()),
        }
    }
}

/// Names the file a failure is about: `result.at(path)?`.
pub trait At<T> {
    /// The error, as a failure on `path`.
    fn at(self, path: &Path) -> Result<T>;
}

impl<T, E: fmt::Display> At<T> for std::result::Result<T, E> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|e| Failure::file(path, e))
    }
}

/// Messages go on one line of stderr, whatever the source wrote.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
