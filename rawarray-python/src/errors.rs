//! The package's errors: the library's as Python exceptions, and the package's own.

use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use rawarray_serde::section::Holds;
use rawarray_serde::{Category, ElType, Error, ErrorKind, Header};

create_exception!(
    _rawarray,
    RaError,
    PyValueError,
    "A file that is not a valid .ra file, or a value that cannot be stored in one. The message \
     names the field, what was expected and what was found."
);

/// `text` as a message may show it: a URL's password replaced by `***` (the library's
/// `shown_url`, which `ra` and every message of the store module use too).
#[pyfunction]
pub(crate) fn shown_url(text: &str) -> String {
    rawarray_serde::error::shown_url(text).into_owned()
}

/// The library's errors as Python exceptions: I/O as `OSError` (with its errno), the rest as
/// `RaError`.
pub(crate) fn to_py(e: Error) -> PyErr {
    if e.category() == Category::Io {
        let io: std::io::Error = e.into();
        return PyErr::from(io);
    }
    if matches!(e.kind(), ErrorKind::RaggedFile) {
        // The library's words for what the file is, then a Python user's readers of it.
        return RaError::new_err(format!(
            "{e}: rawarray.open gives a rawarray.RaggedFile, rawarray.read a rawarray.Ragged"
        ));
    }
    RaError::new_err(e.to_string())
}

/// The package's own `RaError`.
pub(crate) fn ra_err(msg: impl Into<String>) -> PyErr {
    RaError::new_err(msg.into())
}

/// What a caller was doing with a path, for the next step its errors name.
#[derive(Clone, Copy)]
pub(crate) enum Doing {
    /// Opening a file to read it.
    Reading,
    /// Writing a new file (or replacing one).
    Writing,
    /// Opening an existing file to add to it; the text is how to start one instead.
    Adding(&'static str),
}

/// The library's error `e` about `path`, saying what to do next where the error alone does
/// not: a missing folder is named (the library's I/O error names only the file, as "entity
/// not found"), a missing file to append to says how to create one, and a truncated file says
/// how to get a whole one back.
pub(crate) fn at_path(e: Error, path: &Path, doing: Doing) -> PyErr {
    if let ErrorKind::Io(io) = e.kind() {
        if io.kind() == std::io::ErrorKind::NotFound {
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(folder) = folder.filter(|f| !f.is_dir()) {
                let name = path
                    .file_name()
                    .map_or("the file".into(), |n| n.to_string_lossy());
                return PyFileNotFoundError::new_err(match doing {
                    Doing::Reading => format!(
                        "{}: no such folder, so no {name} in it: check the path",
                        folder.display()
                    ),
                    _ => format!(
                        "{}: no such folder to write {name} in: create it first \
                         (os.makedirs({:?}))",
                        folder.display(),
                        folder.display().to_string(),
                    ),
                });
            }
            let next = match doing {
                Doing::Reading | Doing::Writing => "check the path".into(),
                Doing::Adding(start) => format!("start one with {start}"),
            };
            return PyFileNotFoundError::new_err(format!(
                "{}: no such file: {next}",
                path.display()
            ));
        }
    }
    if matches!(e.kind(), ErrorKind::Truncated { .. }) {
        return ra_err(format!("{e}: {}", truncated_next_step(path)));
    }
    to_py(e)
}

/// What to do about a file shorter than its header says: a file records or rows were being
/// appended to keeps its whole ones with `ra recover` (the library's repair); an array written
/// whole was cut on its way here (a copy or download that stopped) and is copied again.
fn truncated_next_step(path: &Path) -> String {
    let appended = (|| {
        if Holds::of_file(path).ok()? == Holds::Rows {
            return Some("rows");
        }
        let mut f = std::io::BufReader::new(std::fs::File::open(path).ok()?);
        let h = Header::read_from_any(&mut f).ok()?;
        (h.eltype == ElType::User).then_some("records")
    })();
    let file = path.display();
    match appended {
        Some(what) => format!(
            "if a program was appending {what} to it and stopped, `ra recover {file}` keeps \
             every whole one; if it was cut while being copied, copy it again"
        ),
        None => format!(
            "it was cut short, as by a copy or download that stopped: copy it again from its \
             source (if a program was appending records to it, `ra recover {file}` keeps the \
             whole ones)"
        ),
    }
}
