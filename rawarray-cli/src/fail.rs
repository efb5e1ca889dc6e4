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
        let path = crate::names::shown(path).into_owned();
        let mut message = in_ra_words(&one_line(&message.to_string()));
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

/// The library's messages that name a Rust call, and what `ra` says in their place: a user of
/// `ra` is told the `ra` flag (or nothing), never a Rust API. Longest first, so that a phrase
/// naming both is replaced whole. The test below finds every message of the libraries `ra` is
/// built on that names a Rust call, and fails on one this table does not cover.
const RUST_WORDS: &[(&str, &str)] = &[
    (
        "RecoverOptions::force, ra recover --force keeps those",
        "ra recover --force keeps those",
    ),
    (
        "RecoverOptions::force, ra recover --force",
        "ra recover --force",
    ),
    ("RecoverOptions::force", "ra recover --force"),
    (" (RecordOptions::drop_foreign_trailing allows it)", ""),
    (" (codec::encode takes any)", ""),
    (
        " (replace the trailer with DynArray::set_trailer first)",
        " (replace the trailer first)",
    ),
    ("WriteOptions holds at most", "at most"),
    (": open the file with ArrayReader::open_mapped", ""),
    (
        ": ArrayWriter::create_chunked",
        ": a chunked file is created with them",
    ),
    (
        "ArrayWriter::options(): give the array (.array::<T>(dims) or .header(h)) before create or open_or_create",
        "the array's type and dims are needed before the file is created",
    ),
    (
        ": ArrayWriter::options().storage(..)",
        ": give --codec and --chunks",
    ),
    (" (RaggedWriter::open)", ""),
    (
        ": read it with a reader of ragged rows",
        "; ra info, cat, slice, convert and compress read ragged files",
    ),
    (" (WriteOptions::codec)", " (--codec)"),
];

/// `message` with the Rust calls it names replaced by `ra`'s words ([`RUST_WORDS`]).
fn in_ra_words(message: &str) -> String {
    let mut m = message.to_string();
    for (rust, ra) in RUST_WORDS {
        if m.contains(rust) {
            m = m.replace(rust, ra);
        }
    }
    m
}

/// Messages go on one line of stderr, whatever the source wrote.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The string literals of Rust source, outside comments (a small lexer: strings with
    /// escapes, raw strings, char literals told from lifetimes).
    fn literals(src: &str) -> Vec<String> {
        let b = src.as_bytes();
        let (mut i, mut out) = (0, Vec::new());
        while i < b.len() {
            match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                        i += 1;
                    }
                    i += 2;
                }
                b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                    && !b[i.saturating_sub(1)].is_ascii_alphanumeric() =>
                {
                    let mut j = i + 1;
                    while b.get(j) == Some(&b'#') {
                        j += 1;
                    }
                    let hashes = j - i - 1;
                    if b.get(j) != Some(&b'"') {
                        i += 1;
                        continue;
                    }
                    let close = format!("\"{}", "#".repeat(hashes));
                    let start = j + 1;
                    let end = src[start..].find(&close).map_or(b.len(), |k| start + k);
                    out.push(src[start..end].to_string());
                    i = end + close.len();
                }
                b'"' => {
                    let mut j = i + 1;
                    while j < b.len() && b[j] != b'"' {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    // A backslash at the end of a line drops it and the next line's indent.
                    let raw = &src[i + 1..j.min(b.len())];
                    let mut text = String::new();
                    let mut parts = raw.split("\\\n");
                    text.push_str(parts.next().unwrap_or_default());
                    for part in parts {
                        text.push_str(part.trim_start());
                    }
                    out.push(text);
                    i = j + 1;
                }
                b'\'' => {
                    // A char literal ('x', '\n', '"'), else a lifetime.
                    if b.get(i + 1) == Some(&b'\\') {
                        i += 2;
                        while i < b.len() && b[i] != b'\'' {
                            i += 1;
                        }
                        i += 1;
                    } else if b.get(i + 2) == Some(&b'\'') {
                        i += 3;
                    } else {
                        i += 1;
                    }
                }
                _ => i += 1,
            }
        }
        out
    }

    /// `Type::call` names in `s`: an upper-case word, `::`, a lower-case word.
    fn rust_calls(s: &str) -> Vec<String> {
        let mut found = Vec::new();
        for (at, _) in s.match_indices("::") {
            let head = &s[..at];
            let ty: String = head
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let call: String = s[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let type_like =
                ty.chars().next().is_some_and(|c| c.is_ascii_uppercase()) || ty == "codec";
            if type_like && call.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                found.push(format!("{ty}::{call}"));
            }
        }
        found
    }

    fn rust_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Literals outside a file's `#[cfg(test)]` module (its tests' own strings are no
    /// messages) and outside `#[deprecated(note = ...)]` (read by Rust programmers, never
    /// shown by `ra`) that hold words: a literal without a space is a path in an attribute
    /// (`skip_serializing_if = "Vec::is_empty"`) or a name, not a message.
    fn message_literals(path: &std::path::Path) -> Vec<String> {
        let src = std::fs::read_to_string(path).unwrap();
        let mut code = src
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap()
            .to_string();
        while let Some(at) = code.find("#[deprecated(") {
            let end = code[at..].find(")]").map_or(code.len(), |e| at + e + 2);
            code.replace_range(at..end, "");
        }
        literals(&code)
            .into_iter()
            .filter(|l| l.contains(' '))
            .collect()
    }

    #[test]
    fn the_lexer_finds_literals_and_calls() {
        let src = "let a = 'x'; // \"comment Foo::bar\"\nfn f<'a>() { g(\"Foo::bar \\\" q\", r#\"X::y\"#); }";
        assert_eq!(literals(src), ["Foo::bar \\\" q", "X::y"]);
        assert_eq!(
            rust_calls("use RecoverOptions::force or $rawarray::embedded"),
            ["RecoverOptions::force"]
        );
    }

    /// Every message of `ra` itself, and of the libraries it is built on (rawarray-serde,
    /// rawarray-arrow), that names a Rust call reaches the user in `ra`'s words: `ra`'s own
    /// source names none, and each library phrase that does is in [`RUST_WORDS`].
    #[test]
    fn no_message_names_a_rust_call() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut own = Vec::new();
        rust_files(&root.join("src"), &mut own);
        for path in own {
            for lit in message_literals(&path) {
                // The table's own keys are what it replaces, not messages.
                if RUST_WORDS.iter().any(|(rust, _)| *rust == lit) {
                    continue;
                }
                let calls = rust_calls(&lit);
                assert!(
                    calls.is_empty(),
                    "{}: {lit:?} names {calls:?}",
                    path.display()
                );
            }
        }
        let mut libraries = Vec::new();
        rust_files(&root.join("../rawarray-serde/src"), &mut libraries);
        rust_files(&root.join("../rawarray-arrow/src"), &mut libraries);
        let mut seen = 0;
        let mut missing = Vec::new();
        for path in libraries {
            for lit in message_literals(&path) {
                if rust_calls(&lit).is_empty() {
                    continue;
                }
                seen += 1;
                let said = in_ra_words(&one_line(&lit));
                if !rust_calls(&said).is_empty() {
                    missing.push(format!("{}: {lit:?}", path.display()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "these messages name a Rust call that ra would show as it is: add them to \
             RUST_WORDS:\n{}",
            missing.join("\n")
        );
        assert!(seen >= 2, "the scan finds the library's messages ({seen})");
    }
}
