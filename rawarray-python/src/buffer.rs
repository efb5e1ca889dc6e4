//! [`Buffer`]: bytes handed to numpy through the buffer protocol, without a copy.

use std::ffi::{c_int, c_void};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::errors::ra_err;
use crate::ragged_file;

/// The bytes of a C-contiguous buffer Python passed in, only read (`what` names it in the
/// error of one that is not contiguous).
pub(crate) fn input_bytes<'a>(data: &'a PyBuffer<u8>, what: &str) -> PyResult<&'a [u8]> {
    if !data.is_c_contiguous() {
        return Err(ra_err(format!("{what} must be C-contiguous bytes")));
    }
    if data.len_bytes() == 0 {
        return Ok(&[]); // an empty buffer may export a null pointer, which no slice may hold
    }
    // SAFETY: `data` holds the exporter's buffer (so its memory stays valid while borrowed
    // from it) and was checked C-contiguous with len_bytes() bytes at buf_ptr(); it is only
    // read. Python code in another thread could write to it while the GIL is released, as
    // with numpy's own `tofile`: the file then holds some mix of old and new bytes, never
    // bytes from outside the buffer.
    Ok(unsafe { std::slice::from_raw_parts(data.buf_ptr() as *const u8, data.len_bytes()) })
}

/// The bytes of a writable, C-contiguous buffer Python passed in to be filled (a numpy array
/// the caller allocated, so the result is an ordinary array that owns its memory); `what`
/// names the call in the error of any other buffer. Borrowed mutably from `out`, so that no
/// second slice of it can exist.
pub(crate) fn output_bytes<'a>(out: &'a mut PyBuffer<u8>, what: &str) -> PyResult<&'a mut [u8]> {
    if out.readonly() || !out.is_c_contiguous() {
        return Err(ra_err(format!(
            "{what} needs a writable, C-contiguous buffer"
        )));
    }
    if out.len_bytes() == 0 {
        return Ok(&mut []); // an empty buffer may export a null pointer, which no slice may hold
    }
    // SAFETY: `out` holds the exporter's buffer, checked writable and C-contiguous, with
    // len_bytes() bytes at buf_ptr(); `out` is borrowed mutably for the slice's life, so
    // nothing else in Rust aliases it. Python code in another thread could touch the array
    // while the GIL is released, as with numpy's own `readinto`; it would see partly written
    // bytes, never memory outside the buffer.
    Ok(unsafe { std::slice::from_raw_parts_mut(out.buf_ptr() as *mut u8, out.len_bytes()) })
}

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
