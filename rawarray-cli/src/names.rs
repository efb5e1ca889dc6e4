//! How local files are named in messages: a temporary copy by what it copies (`<stdin>`, a
//! pipe's name, a URL), and an output's local stand-in by the URL it is uploaded to. A leaf:
//! the modules that make copies and those that report both use it, and it uses none of them.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rawarray_serde::store::shown_url;

/// Copies of inputs: `(local file, name)`.
static COPIES: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// Local files standing for what they will be (an output uploaded to a URL): `(local, name)`.
static ALIASES: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// Names the copy `local` as `shown_as` (`<stdin>`, a pipe's or a URL's name) in messages.
pub fn name_copy(local: &Path, shown_as: &Path) {
    COPIES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((local.to_path_buf(), shown_as.to_path_buf()));
}

/// Names the local file `local` as `shown_as` in messages, and in report lines (see
/// [`unalias`]).
pub fn alias(local: &Path, shown_as: &Path) {
    ALIASES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((local.to_path_buf(), shown_as.to_path_buf()));
}

/// How to name `path` in a message: what a copy copies, what a stand-in stands for, or the
/// path itself; a URL's password, if any, replaced by `***` (the library's `shown_url`).
pub fn shown(path: &Path) -> Cow<'_, str> {
    for list in [&COPIES, &ALIASES] {
        let list = list.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, name)) = list.iter().find(|(local, _)| local == path) {
            return shown_url(&name.to_string_lossy()).into_owned().into();
        }
    }
    match path.to_string_lossy() {
        Cow::Borrowed(text) => shown_url(text),
        Cow::Owned(text) => shown_url(&text).into_owned().into(),
    }
}

/// `line` with every aliased local file named as what it stands for.
pub fn unalias(line: &str) -> String {
    let aliases = ALIASES.lock().unwrap_or_else(PoisonError::into_inner);
    let mut out = line.to_string();
    for (local, url) in aliases.iter() {
        out = out.replace(&*local.to_string_lossy(), &url.to_string_lossy());
    }
    out
}
