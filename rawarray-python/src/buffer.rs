//! [`Buffer`]: bytes handed to numpy through the buffer protocol, without a copy.

use std::ffi::{c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::ragged_file;

/// Where a [`Buffer`]'s bytes live.
pub(crate) enum Bytes {
    /// A read-only map of a whole file.
    Map(memmap2::Mmap),
    /// Bytes decoded or read into memory.
    Owned(Vec<u8>),
    /// Bytes of a ragged file's map (offsets, values or one row).
    Ragged(ragged_file::Region),
}

/// Read-only bytes exported through Python's buffer protocol: numpy's `frombuffer` and
/// `ndarray(buffer=...)` view them without a copy, and the view's `base` holds this object.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct Buffer {
    pub(crate) bytes: Bytes,
}

impl Buffer {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
            Bytes::Ragged(r) => r.as_slice(),
        }
    }
}

#[pymethods]
impl Buffer {
    fn __len__(&self) -> usize {
        self.as_slice().len()
    }

    /// Whether the bytes are a memory map of the file (rather than a copy in memory).
    #[getter]
    fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Map(_) | Bytes::Ragged(_))
    }

    /// # Safety
    /// Called by the interpreter with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("rawarray buffers are read-only"));
        }
        let bytes = slf.get().as_slice();
        // SAFETY: `view` is the interpreter's to fill. `PyBuffer_FillInfo` stores a new
        // reference to `slf` in `view.obj`, so the Buffer, and with it the map or Vec the
        // pointer points into, outlives every consumer of the view; the bytes are never
        // mutated or moved while the Buffer exists (it is frozen and owns them), and the view
        // is read-only (readonly = 1), so no consumer writes through it.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr() as *mut c_void,
                bytes.len() as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// # Safety
    /// Called by the interpreter; nothing to release (the view's reference to the Buffer is
    /// dropped by the interpreter itself).
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}
