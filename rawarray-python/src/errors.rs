//! The package's errors: the library's as Python exceptions, and the package's own.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rawarray_serde::{Category, Error};

create_exception!(
    _rawarray,
    RaError,
    PyValueError,
    "A file that is not a valid .ra file, or a value that cannot be stored in one. The message \
     names the field, what was expected and what was found."
);

/// The library's errors as Python exceptions: I/O as `OSError` (with its errno), the rest as
/// `RaError`.
pub(crate) fn to_py(e: Error) -> PyErr {
    if e.category() == Category::Io {
        let io: std::io::Error = e.into();
        return PyErr::from(io);
    }
    RaError::new_err(e.to_string())
}

pub(crate) fn ra_err(msg: impl Into<String>) -> PyErr {
    RaError::new_err(msg.into())
}
