//! `rawarray._rawarray`: the Rust half of the Python package. Every rule of the format (header
//! validation, the trailer, the element-type table, LZ4, byte order, atomic writes) is
//! rawarray-serde's; this module only hands its results to Python. Bytes reach numpy through
//! [`Buffer`], which exports the buffer protocol over a memory map or an owned `Vec`, so a numpy
//! view keeps the map alive for as long as the view lives.
#![deny(missing_docs)]

mod arrow;
mod chunked;
mod ragged;

use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

#[cfg(unix)]
use std::os::unix::fs::FileExt;

#[cfg(feature = "cloud")]
mod store;

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rawarray_serde::{
    ArrayReader, ArrayWriter as LibArrayWriter, Category, DynArray, DynRecordWriter, ElType,
    ElementSpec, Error, ErrorKind, Header, Layout, RecordOptions, Trailer,
};

create_exception!(
    _rawarray,
    RaError,
    PyValueError,
    "A file that is not a valid .ra file, or a value that cannot be stored in one. The message \
     names the field, what was expected and what was found."
);

/// The library's errors as Python exceptions: I/O as `OSError` (with its errno), the rest as
/// `RaError`.
fn to_py(e: Error) -> PyErr {
    if e.category() == Category::Io {
        let io: std::io::Error = e.into();
        return PyErr::from(io);
    }
    RaError::new_err(e.to_string())
}

fn ra_err(msg: impl Into<String>) -> PyErr {
    RaError::new_err(msg.into())
}

/// Fills `buf` from `at` with positioned reads (no shared cursor).
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    file.read_exact_at(buf, at)
}

/// Fills `buf` from `at` with positioned reads (no shared cursor: threads share the handle).
#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, at) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Where a [`Buffer`]'s bytes live.
enum Bytes {
    /// A read-only map of a whole file.
    Map(memmap2::Mmap),
    /// Bytes decoded or read into memory.
    Owned(Vec<u8>),
    /// Bytes of a ragged file's map (offsets, values or one row).
    Ragged(ragged::Region),
}

/// Read-only bytes exported through Python's buffer protocol: numpy's `frombuffer` and
/// `ndarray(buffer=...)` view them without a copy, and the view's `base` holds this object.
#[pyclass(frozen, module = "rawarray._rawarray")]
struct Buffer {
    bytes: Bytes,
}

impl Buffer {
    fn as_slice(&self) -> &[u8] {
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

/// An opened `.ra` file: its validated header and trailer, read in O(1) of the file's size.
///
/// It holds the descriptor it opened until it is dropped, and every read (map, decode, block,
/// positioned read) goes through that descriptor: the bytes are those of the file it opened,
/// with its header, even after another file is renamed over the path.
#[pyclass(frozen, module = "rawarray._rawarray")]
struct RawFile {
    file: File,
    /// The library's reader over a duplicate of `file` (the same open file, the same inode):
    /// the header and trailer of one moment, and blocks.
    reader: ArrayReader,
    file_len: u64,
    /// Device and inode of what was opened (zero where the platform has none).
    dev: u64,
    ino: u64,
}

#[pymethods]
impl RawFile {
    /// Opens the file once, reads and validates its header, and finds the trailer from the end.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<RawFile> {
        py.detach(|| open_raw(&path)).map_err(to_py)
    }

    /// The element type code (0 user-defined, 1 int, 2 uint, 3 float, 4 complex, 5 bfloat16).
    #[getter]
    fn eltype(&self) -> u64 {
        self.header().eltype.code()
    }

    /// Bytes per element.
    #[getter]
    fn elbyte(&self) -> u64 {
        self.header().elbyte
    }

    /// The dims, first fastest (the file's order; numpy's shape is their reverse).
    #[getter]
    fn dims(&self) -> Vec<u64> {
        self.header().dims.clone()
    }

    /// The flag bits (1: big-endian, 2: LZ4).
    #[getter]
    fn flags(&self) -> u64 {
        self.header().flags.bits()
    }

    /// Stored data bytes (compressed length for LZ4 files).
    #[getter]
    fn size(&self) -> u64 {
        self.header().size
    }

    /// Elements in the array (the product of the dims).
    #[getter]
    fn num_elements(&self) -> u64 {
        self.header().num_elements()
    }

    /// Bytes of the header: the data starts here.
    #[getter]
    fn header_len(&self) -> usize {
        self.header().encoded_len()
    }

    /// The type in words, e.g. `float32`, `complex64`, `user-defined (80 bytes)`.
    #[getter]
    fn type_label(&self) -> String {
        self.header().type_label()
    }

    /// The trailer's parameters as JSON, `None` without a trailer.
    #[getter]
    fn params_json(&self) -> Option<String> {
        self.reader.trailer().map(|t| t.params.to_string())
    }

    /// The trailer's record schema as JSON, if any.
    #[getter]
    fn schema_json(&self) -> Option<String> {
        let schema = self.reader.trailer()?.schema.as_ref()?;
        serde_json::to_string(schema).ok()
    }

    /// Why the trailer could not be read, if it is damaged (the data is still readable).
    #[getter]
    fn trailer_error(&self) -> Option<String> {
        self.reader.trailer_error().map(str::to_string)
    }

    /// The trailer's top-level keys this version of the library does not interpret (such as
    /// the Python package's `dim_names` and `coords`), as a JSON object; `None` without a
    /// trailer.
    #[getter]
    fn extra_json(&self) -> Option<String> {
        self.reader
            .trailer()
            .map(|t| serde_json::Value::Object(t.extra.clone()).to_string())
    }

    /// The library's count of the data reads made through `read_block` so far:
    /// `(reads, bytes)` (an LZ4 file counts its one whole read).
    fn io_stats(&self) -> (u64, u64) {
        let s = self.reader.io_stats();
        (s.reads, s.bytes)
    }

    /// What was opened, to tell later whether the path still names the same file unchanged:
    /// `(device, inode, file length, header bytes)`.
    fn identity<'py>(&self, py: Python<'py>) -> (u64, u64, u64, Bound<'py, PyBytes>) {
        (
            self.dev,
            self.ino,
            self.file_len,
            PyBytes::new(py, &self.header().encode()),
        )
    }

    /// How numpy should see one element: `("dtype", "<f4")`, `("record", json_descr)` for a
    /// record with a valid schema, `("bfloat16", "<u2")`, `("complex32", "<f2")` or
    /// `("void", reason)` for bytes with no numpy type (the reason says why).
    fn element_kind(&self) -> (String, String) {
        element_kind(
            self.header(),
            self.reader.trailer(),
            self.reader.trailer_error(),
        )
    }

    /// The whole file as a read-only memory map of the descriptor opened (O(1); pages are read
    /// when touched).
    fn map(&self, py: Python<'_>) -> PyResult<Buffer> {
        py.detach(|| -> rawarray_serde::Result<Buffer> {
            // SAFETY: the map is read-only and its bytes only ever reach Python as a read-only
            // buffer. The file is the one opened (its length checked then against the header);
            // the library's writers replace a file by renaming a new one over the path, which
            // leaves this inode's bytes alone, or append after its data. Another program may
            // still change or truncate it in place while it is mapped: changed bytes are seen
            // as such (no Rust reference relies on them being stable), and a truncation makes
            // later reads of the lost pages fault, as with numpy's own `np.memmap`; the package
            // documents this for `File.array()`.
            let map = unsafe { memmap2::Mmap::map(&self.file)? };
            Ok(Buffer {
                bytes: Bytes::Map(map),
            })
        })
        .map_err(to_py)
    }

    /// The data section decoded into memory: LZ4 decompressed, primitive scalars little-endian
    /// (user-defined elements of a big-endian file keep their bytes; see `big_endian_records`).
    fn decode(&self, py: Python<'_>) -> PyResult<Buffer> {
        py.detach(|| -> rawarray_serde::Result<Buffer> {
            let header = self.header();
            // The header and data section, which the file held at open (checked then).
            let end = header.encoded_len() as u64 + header.size;
            let mut bytes = vec![0u8; usize::try_from(end).map_err(std::io::Error::other)?];
            read_exact_at(&self.file, &mut bytes, 0)?;
            let array = DynArray::from_bytes(&bytes)?;
            let (_, data, _) = array.into_parts();
            Ok(Buffer {
                bytes: Bytes::Owned(data),
            })
        })
        .map_err(to_py)
    }

    /// The block `ranges` (one `(start, end)` per dim, in the file's dim order, first fastest)
    /// read by the library's `ArrayReader`: one positioned read per run of the block, nothing
    /// else, its bytes in the byte order `decode` gives. Errors name the dim that is out of range.
    fn read_block(&self, py: Python<'_>, ranges: Vec<(u64, u64)>) -> PyResult<Buffer> {
        py.detach(|| -> rawarray_serde::Result<Buffer> {
            let ranges: Vec<std::ops::Range<u64>> = ranges.into_iter().map(|(a, b)| a..b).collect();
            let (_, data) = self.reader.read_subset_bytes(&ranges)?;
            Ok(Buffer {
                bytes: Bytes::Owned(data),
            })
        })
        .map_err(to_py)
    }

    /// Whether decoded user-defined elements are still big-endian (their fields' byte order
    /// is the header's, as the format does not describe them).
    #[getter]
    fn big_endian_records(&self) -> bool {
        self.header().is_big_endian() && self.header().eltype == ElType::User
    }

    /// `len` data bytes from byte `start` of the data section of a plain (uncompressed) file,
    /// read with one positioned read (for callers that want bytes without a map).
    fn read_data(&self, py: Python<'_>, start: u64, len: u64) -> PyResult<Buffer> {
        let at = self.data_range(start, len)?;
        py.detach(|| -> rawarray_serde::Result<Buffer> {
            let mut bytes = vec![0u8; len as usize];
            read_exact_at(&self.file, &mut bytes, at)?;
            Ok(Buffer {
                bytes: Bytes::Owned(bytes),
            })
        })
        .map_err(to_py)
    }

    /// Reads data bytes from byte `start` of the data section of a plain (uncompressed) file
    /// into `out` (a writable, C-contiguous buffer: a numpy array the caller allocated, so the
    /// result is an ordinary array that owns its memory), with positioned reads and the GIL
    /// released.
    fn read_into(&self, py: Python<'_>, start: u64, out: PyBuffer<u8>) -> PyResult<()> {
        if out.readonly() || !out.is_c_contiguous() {
            return Err(ra_err("read_into needs a writable, C-contiguous buffer"));
        }
        let at = self.data_range(start, out.len_bytes() as u64)?;
        if out.len_bytes() == 0 {
            return Ok(()); // an empty buffer may export a null pointer: nothing to read
        }
        // SAFETY: `out` holds the exporter's buffer, checked writable and C-contiguous, with
        // len_bytes() bytes at buf_ptr(); nothing else in Rust aliases it. Python code in another
        // thread could touch the array while the GIL is released, as with numpy's own
        // `readinto`; it would see partly read bytes, never memory outside the buffer.
        let bytes: &mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(out.buf_ptr() as *mut u8, out.len_bytes()) };
        py.detach(|| read_exact_at(&self.file, bytes, at))
            .map_err(|e| to_py(e.into()))
    }

    /// The file's length in bytes when it was opened.
    #[getter]
    fn file_len(&self) -> u64 {
        self.file_len
    }
}

impl RawFile {
    fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The file offset of data bytes `start..start + len` of a plain file, or an error naming
    /// the data section's size.
    fn data_range(&self, start: u64, len: u64) -> PyResult<u64> {
        let header = self.header();
        if header.is_compressed() {
            return Err(ra_err(
                "an LZ4 file is read whole (decode), not by byte range",
            ));
        }
        if header.flags.is_chunked() {
            return Err(ra_err(
                "a chunked file is read whole (decode) or by block (read_block), not by byte range",
            ));
        }
        if start.checked_add(len).is_none_or(|e| e > header.size) {
            return Err(ra_err(format!(
                "data bytes {start}..{start}+{len} are outside the data section of {} bytes",
                header.size
            )));
        }
        Ok(header.encoded_len() as u64 + start)
    }
}

/// How numpy should see one element of a file of header `h` (see `RawFile.element_kind`),
/// by its trailer, or why its trailer could not be read: one reading for every kind of file.
fn element_kind(
    h: &Header,
    trailer: Option<&Trailer>,
    trailer_error: Option<&str>,
) -> (String, String) {
    // A plain array's logical marker: a bool file is a u8 file whose schema says bool. A
    // scalar schema numpy has no type for (bfloat16, complex32; `rawarray-arrow` writes one
    // for every plain array) is read by the header, below, not as void bytes.
    if let Ok(Some(s @ Layout::Scalar { .. })) = record_layout(h, trailer) {
        let descr = s.numpy_descr_json();
        let descr = descr.as_str().unwrap_or("");
        if !descr.contains('V') {
            return ("dtype".into(), descr.into());
        }
    }
    if let Some(dt) = h.numpy_dtype() {
        return ("dtype".into(), dt.into());
    }
    match (h.eltype, h.elbyte) {
        (ElType::BFloat16, 2) => ("bfloat16".into(), "<u2".into()),
        (ElType::Complex, 4) => ("complex32".into(), "<f2".into()),
        (ElType::User, _) if trailer_error.is_some() => (
            "void".into(),
            format!(
                "the trailer is damaged ({})",
                trailer_error.unwrap_or_default()
            ),
        ),
        (ElType::User, elbyte) => match record_layout(h, trailer) {
            Ok(Some(layout)) => ("record".into(), layout.numpy_descr_json().to_string()),
            Ok(None) => (
                "void".into(),
                format!("user-defined elements of {elbyte} bytes and no record schema"),
            ),
            Err(why) => ("void".into(), why),
        },
        _ => (
            "void".into(),
            format!("{} has no numpy type", h.type_label()),
        ),
    }
}

/// The layout of one element by the trailer's schema, checked against the header by the
/// library (`Layout::check_header`, as every client checks it): `Ok(None)` without one,
/// `Err(why)` when it does not describe these elements.
fn record_layout(h: &Header, trailer: Option<&Trailer>) -> Result<Option<Layout>, String> {
    let Some(schema) = trailer.and_then(|t| t.schema.as_ref()) else {
        return Ok(None);
    };
    let layout = schema
        .check_header(h)
        .map_err(|e| format!("the trailer's record schema is damaged: {e}"))?;
    Ok(Some(layout.clone()))
}

fn open_raw(path: &Path) -> rawarray_serde::Result<RawFile> {
    // The library's readers name the file in their errors; this open is the package's own.
    let file = File::open(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let reader = ArrayReader::from_open_file(file.try_clone()?, path)?;
    let meta = file.metadata()?;
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    Ok(RawFile {
        file,
        reader,
        // The length after the header: a record writer appends data before the header that
        // counts it, so a length taken first could be shorter than what the header describes.
        file_len: meta.len(),
        dev,
        ino,
    })
}

/// How to store one numpy element: its eltype and elbyte, and the record layout if it is a
/// structured dtype. `descr_json` is `json.dumps(dtype.str)` for a plain dtype or
/// `json.dumps(dtype.descr)` for a structured one.
fn element_of(descr_json: &str) -> PyResult<(ElType, u64, Option<Layout>)> {
    // serde_json reads 127 levels: a structured dtype nested deeper than that (two levels per
    // record) is far past what a record schema holds (MAX_LAYOUT_DEPTH), and is refused as such.
    let descr: serde_json::Value = serde_json::from_str(descr_json).map_err(|e| {
        ra_err(format!(
            "structured dtype cannot be stored as a .ra record: it nests too deep ({e})"
        ))
    })?;
    if let Some(s) = descr.as_str() {
        if rawarray_serde::numpy::is_bool_dtype(s) {
            let layout = Layout::from_numpy_descr_json(&descr).map_err(to_py)?;
            return Ok((ElType::Uint, 1, Some(layout)));
        }
        if s == "bfloat16" {
            return Ok((ElType::BFloat16, 2, None));
        }
        if let Some(n) = s.strip_prefix("|V").and_then(|n| n.parse::<u64>().ok()) {
            return Ok((ElType::User, n, None));
        }
        let (eltype, elbyte, big_endian) = rawarray_serde::numpy::parse_dtype(s)
            .ok_or_else(|| ra_err(format!("numpy dtype '{s}' has no .ra element type")))?;
        if big_endian {
            return Err(ra_err(format!(
                "numpy dtype '{s}' is big-endian: pass little-endian data"
            )));
        }
        return Ok((eltype, elbyte, None));
    }
    let layout = Layout::from_numpy_descr_json(&descr).map_err(|e| {
        let padded = descr.as_array().is_some_and(|fields| {
            fields
                .iter()
                .any(|f| f.get(0).and_then(|n| n.as_str()) == Some(""))
        });
        if padded {
            ra_err(format!(
                "structured dtype has padding (unnamed void fields), which .ra records do not \
                 have: pack it with np.dtype(..., align=False) or \
                 numpy.lib.recfunctions.repack_fields ({e})"
            ))
        } else {
            to_py(e)
        }
    })?;
    // The rules every schema read from a file must pass (names, shapes, nesting): a dtype that
    // breaks one is refused here, before anything is written, rather than written into a file
    // whose trailer would read back as damaged.
    let size = layout.validate().map_err(|e| match e.kind() {
        ErrorKind::BadSchema(why) => ra_err(format!(
            "structured dtype cannot be stored as a .ra record: {why}"
        )),
        _ => to_py(e),
    })?;
    Ok((ElType::User, size, Some(layout)))
}

/// Writes a `.ra` file atomically (temporary file, sync, rename): the header for `dims`, the
/// bytes of `data` (C-contiguous, little-endian, `dims` in the file's order), and a trailer when
/// there are parameters or a record schema.
///
/// `codec` (`"zstd"`, `"lz4"`, `"none"`), `chunks` (the file's dim order), `level` and `shuffle`
/// (`"byte"`, `"bit"`, `"none"`) select the chunked layout, encoded on `threads` threads (0: all
/// cores); `compress` (or `codec="lz4-whole"`) the whole-section LZ4 block.
#[pyfunction]
#[pyo3(signature = (path, descr_json, dims, data, params_json=None, compress=false, extra_json=None,
                    codec=None, chunks=None, level=None, shuffle=None, threads=0))]
#[allow(clippy::too_many_arguments)]
fn write(
    py: Python<'_>,
    path: PathBuf,
    descr_json: &str,
    dims: Vec<u64>,
    data: PyBuffer<u8>,
    params_json: Option<&str>,
    compress: bool,
    extra_json: Option<&str>,
    codec: Option<&str>,
    chunks: Option<Vec<u64>>,
    level: Option<i32>,
    shuffle: Option<&str>,
    threads: usize,
) -> PyResult<()> {
    let (opts, chunk_opts) =
        chunked::write_options(compress, codec, chunks, level, shuffle, threads)?;
    let (eltype, elbyte, layout) = element_of(descr_json)?;
    let header = Header::new(eltype, elbyte, dims).map_err(to_py)?;
    if !data.is_c_contiguous() {
        return Err(ra_err("data must be C-contiguous bytes"));
    }
    if data.len_bytes() as u64 != header.data_len() {
        return Err(ra_err(format!(
            "data: expected {} bytes for dims {:?} of {elbyte} bytes, found {}",
            header.data_len(),
            header.dims,
            data.len_bytes()
        )));
    }
    let params: serde_json::Value = match params_json {
        Some(p) => {
            serde_json::from_str(p).map_err(|e| ra_err(format!("params are not JSON: {e}")))?
        }
        None => serde_json::Value::Null,
    };
    // Top-level trailer keys beside the params (the package's `dim_names`, `coords`): kept
    // by every reader and rewrite of the library as unknown keys (`Trailer::extra`).
    let extra = match extra_json {
        Some(e) => match serde_json::from_str(e) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(other) => {
                return Err(ra_err(format!(
                    "trailer keys: expected a JSON object, found {other}"
                )))
            }
            Err(e) => return Err(ra_err(format!("trailer keys are not JSON: {e}"))),
        },
        None => serde_json::Map::new(),
    };
    if let Some(k) = extra
        .keys()
        .find(|k| Trailer::KNOWN_KEYS.contains(&k.as_str()))
    {
        return Err(ra_err(format!(
            "trailer key '{k}' is the library's own: pass it as params or let the schema fill it"
        )));
    }
    let trailer = if params.is_null() && layout.is_none() && extra.is_empty() {
        None
    } else {
        let mut t = Trailer::new(params).map_err(to_py)?;
        t.extra = extra;
        Some(match layout {
            Some(l) => t.with_schema(l),
            None => t,
        })
    };
    // SAFETY: `data` holds the exporter's buffer (so its memory stays valid) and was checked
    // C-contiguous with len_bytes() bytes at buf_ptr(); it is only read. Python code in another
    // thread could write to the array while the GIL is released below, as with numpy's own
    // `tofile`; the file then holds some mix of the old and new bytes, never out-of-bounds data.
    let bytes: &[u8] = if data.len_bytes() == 0 {
        &[] // an empty buffer may export a null pointer, which no slice may hold
    } else {
        unsafe { std::slice::from_raw_parts(data.buf_ptr() as *const u8, data.len_bytes()) }
    };
    let result = py.detach(|| -> rawarray_serde::Result<()> {
        if let Some(co) = &chunk_opts {
            return chunked::write_chunked(&path, &header, bytes, co, trailer.as_ref());
        }
        if opts.is_compressed() {
            let mut array = DynArray::new(eltype, elbyte, header.dims.clone(), bytes.to_vec())?;
            if let Some(t) = &trailer {
                array.set_trailer(t);
            }
            return array.write_file_with(&path, &opts);
        }
        let end = header.encoded_len() as u64 + header.data_len();
        rawarray_serde::atomic::write_atomic(
            &path,
            |w: &mut dyn Write| -> rawarray_serde::Result<()> {
                w.write_all(&header.encode())?;
                w.write_all(bytes)?;
                if let Some(t) = &trailer {
                    w.write_all(&t.encode_block(end))?;
                }
                Ok(())
            },
        )
    });
    result.map_err(to_py)
}

/// Appends records to a `.ra` file: the library's record writer (its lock, its crash safety,
/// its trailer with the schema and parameters) fed with packed little-endian bytes.
///
/// Threads may share one: a mutex serializes its calls (each waits for the one before, with the
/// GIL released), so appends from several threads land whole, one after another.
#[pyclass(frozen, module = "rawarray._rawarray")]
struct RecordWriter {
    /// `None` once closed.
    inner: Mutex<Option<DynRecordWriter>>,
}

#[pymethods]
impl RecordWriter {
    /// Creates the file (`append=False`, atomically replacing any old one) or opens it to append,
    /// for elements described by `descr_json` (as for [`write`]) and records of `record_dims`
    /// values each (the file's order, first fastest; empty for one value per record), with
    /// the compression keywords of [`chunked::record_options`].
    #[new]
    #[pyo3(signature = (path, descr_json, record_dims, params_json=None, append=false,
                        codec=None, level=None, shuffle=None, chunk_records=None, threads=0))]
    #[allow(clippy::too_many_arguments)] // Python's keywords, one each
    fn new(
        py: Python<'_>,
        path: PathBuf,
        descr_json: &str,
        record_dims: Vec<u64>,
        params_json: Option<&str>,
        append: bool,
        codec: Option<&str>,
        level: Option<i32>,
        shuffle: Option<&str>,
        chunk_records: Option<u64>,
        threads: usize,
    ) -> PyResult<RecordWriter> {
        let (eltype, elbyte, layout) = element_of(descr_json)?;
        let layout = layout.unwrap_or(Layout::scalar(eltype, elbyte));
        let spec = ElementSpec::from_layout(layout).map_err(to_py)?;
        let mut opts = chunked::record_options(
            RecordOptions::new().record_dims(record_dims),
            codec,
            level,
            shuffle,
            chunk_records,
            threads,
        )?;
        if let Some(p) = params_json {
            let params: serde_json::Value =
                serde_json::from_str(p).map_err(|e| ra_err(format!("params are not JSON: {e}")))?;
            opts = opts.params(params);
        }
        let inner = py
            .detach(|| {
                if append {
                    opts.open_dyn(&path, &spec)
                } else {
                    opts.create_dyn(&path, &spec)
                }
            })
            .map_err(to_py)?;
        Ok(RecordWriter {
            inner: Mutex::new(Some(inner)),
        })
    }

    /// Appends whole records, packed little-endian (C-contiguous bytes); not committed until
    /// `flush`.
    fn append(&self, py: Python<'_>, data: PyBuffer<u8>) -> PyResult<()> {
        if !data.is_c_contiguous() {
            return Err(ra_err("records must be C-contiguous bytes"));
        }
        // SAFETY: as in `write`: the buffer is held, contiguous and only read.
        let bytes: &[u8] = if data.len_bytes() == 0 {
            &[] // an empty buffer may export a null pointer, which no slice may hold
        } else {
            unsafe { std::slice::from_raw_parts(data.buf_ptr() as *const u8, data.len_bytes()) }
        };
        self.with_writer(py, |w| w.append_bytes(bytes))
    }

    /// Commits the records appended so far: readers see them, a killed process keeps them.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with_writer(py, DynRecordWriter::flush)
    }

    /// Commits and syncs: the records survive a power cut too.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        self.with_writer(py, DynRecordWriter::sync)
    }

    /// Commits, trims the file and releases its lock. Closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| match lock(&self.inner).take() {
            Some(writer) => writer.finish().map(|_| ()),
            None => Ok(()),
        })
        .map_err(to_py)
    }

    /// Records appended, committed or not.
    fn __len__(&self, py: Python<'_>) -> usize {
        py.detach(|| lock(&self.inner).as_ref().map_or(0, |w| w.len() as usize))
    }

    /// Records the file's header covers: those of the last flush.
    #[getter]
    fn flushed_len(&self, py: Python<'_>) -> u64 {
        py.detach(|| {
            lock(&self.inner)
                .as_ref()
                .map_or(0, DynRecordWriter::flushed_len)
        })
    }

    /// Bytes of one record.
    #[getter]
    fn record_bytes(&self, py: Python<'_>) -> u64 {
        py.detach(|| {
            lock(&self.inner)
                .as_ref()
                .map_or(0, DynRecordWriter::record_bytes)
        })
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| lock(&self.inner).is_none())
    }
}

/// The writer's lock. A panic while it was held (a bug) leaves the writer as the library left
/// it, which the library's own crash safety covers: its state is still usable.
fn lock(m: &Mutex<Option<DynRecordWriter>>) -> MutexGuard<'_, Option<DynRecordWriter>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RecordWriter {
    /// Runs `op` on the open writer, holding its lock, with the GIL released: the lock is taken
    /// without the GIL, so a thread waiting for it never blocks the thread holding it.
    fn with_writer<T: Send>(
        &self,
        py: Python<'_>,
        op: impl FnOnce(&mut DynRecordWriter) -> rawarray_serde::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| match lock(&self.inner).as_mut() {
            Some(w) => op(w).map_err(Some),
            None => Err(None),
        })
        .map_err(|e| match e {
            Some(e) => to_py(e),
            None => PyValueError::new_err("I/O operation on a closed rawarray.RecordWriter"),
        })
    }
}

/// Writes n-d blocks of one array into a `.ra` file in place, from many threads and
/// processes at once: the library's `ArrayWriter` (its shared lock, its journal of blocks).
///
/// Threads share one: the library's writer is `Sync`, and every block is one positioned write
/// per run, so writers of disjoint blocks never disturb each other. `None` once closed.
#[pyclass(frozen, module = "rawarray._rawarray")]
struct ArrayWriter {
    inner: Mutex<Option<std::sync::Arc<LibArrayWriter>>>,
    dev: u64,
    ino: u64,
}

#[pymethods]
impl ArrayWriter {
    /// Opens the file at `path` to write blocks into (`descr_json` None), or, given the element
    /// (`descr_json` as for [`write`]) and `dims` (file order), opens it if a file holding that
    /// array is there, else creates it: ranks that race to start one array each get a writer
    /// of the same file (the library's `open_or_create`). Any of `codec`, `chunks` (file
    /// order), `level` and `shuffle` makes it a chunked file, as for [`write`] (and an existing
    /// file must then be chunked with those settings); a chunked file's blocks are compressed
    /// on `threads` threads (0: all cores).
    #[new]
    #[pyo3(signature = (path, descr_json=None, dims=None, codec=None, chunks=None, level=None, shuffle=None, threads=0))]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn new(
        py: Python<'_>,
        path: PathBuf,
        descr_json: Option<&str>,
        dims: Option<Vec<u64>>,
        codec: Option<&str>,
        chunks: Option<Vec<u64>>,
        level: Option<i32>,
        shuffle: Option<&str>,
        threads: usize,
    ) -> PyResult<ArrayWriter> {
        let (opts, chunked) =
            chunked::write_options(false, codec, chunks, level, shuffle, threads)?;
        if opts.is_compressed() {
            return Err(ra_err(
                "codec: an ArrayWriter cannot write \"lz4-whole\" (one LZ4 block over the whole \
                 data section cannot be written block by block): expected \"zstd\", \"lz4\" or \
                 \"none\", which write the chunked layout",
            ));
        }
        let header = match (descr_json, dims) {
            (Some(d), Some(dims)) => {
                let (eltype, elbyte, layout) = element_of(d)?;
                if layout.is_some() {
                    return Err(ra_err(
                        "ArrayWriter writes arrays of primitive elements: a structured dtype \
                         needs its schema in a trailer, which rawarray.write or RecordWriter \
                         writes",
                    ));
                }
                Some(Header::new(eltype, elbyte, dims).map_err(to_py)?)
            }
            (None, None) => None,
            _ => {
                return Err(ra_err(
                    "ArrayWriter: give both the dtype and the shape, or neither",
                ))
            }
        };
        let writer = py
            .detach(|| match (header, &chunked) {
                (Some(h), Some(c)) => {
                    LibArrayWriter::open_or_create_chunked_with_header(&path, h, c)
                }
                (Some(h), None) => LibArrayWriter::open_or_create_with_header(&path, h),
                // An opened file keeps its own chunk settings; only the threads apply.
                (None, _) => LibArrayWriter::open_with_threads(&path, threads),
            })
            .map_err(to_py)?;
        let (dev, ino) = file_id(&path).map_err(|e| to_py(e.into()))?;
        Ok(ArrayWriter {
            inner: Mutex::new(Some(std::sync::Arc::new(writer))),
            dev,
            ino,
        })
    }

    /// The header's element type code, bytes per element and dims (file order).
    fn header(&self) -> PyResult<(u64, u64, Vec<u64>)> {
        let w = self.writer()?;
        let h = w.header();
        Ok((h.eltype.code(), h.elbyte, h.dims.clone()))
    }

    /// `(device, inode, header bytes)` of the file written: what a pickled writer checks on
    /// reopening the path. The header's `size` is left out (zero): a chunked file's grows
    /// with every block committed, while its array stays the same.
    fn identity<'py>(&self, py: Python<'py>) -> PyResult<(u64, u64, Bound<'py, PyBytes>)> {
        let w = self.writer()?;
        let mut h = w.header().clone();
        h.size = 0;
        Ok((self.dev, self.ino, PyBytes::new(py, &h.encode())))
    }

    /// Whether this writer created the file (rather than opened it).
    #[getter]
    fn created(&self) -> PyResult<bool> {
        Ok(self.writer()?.created())
    }

    /// Writes the block `ranges` (one `(start, end)` per dim, file order) from its packed
    /// little-endian bytes (C-contiguous, column-major in the file's dims), the GIL released.
    fn write_block(
        &self,
        py: Python<'_>,
        ranges: Vec<(u64, u64)>,
        data: PyBuffer<u8>,
    ) -> PyResult<()> {
        if !data.is_c_contiguous() {
            return Err(ra_err("a block must be C-contiguous bytes"));
        }
        let w = self.writer()?;
        // SAFETY: as in `write`: the buffer is held, contiguous and only read.
        let bytes: &[u8] = if data.len_bytes() == 0 {
            &[] // an empty buffer may export a null pointer, which no slice may hold
        } else {
            unsafe { std::slice::from_raw_parts(data.buf_ptr() as *const u8, data.len_bytes()) }
        };
        let ranges: Vec<std::ops::Range<u64>> = ranges.into_iter().map(|(a, b)| a..b).collect();
        py.detach(|| w.write_subset_bytes(&ranges, bytes))
            .map_err(to_py)
    }

    /// Syncs what this writer wrote to disk, keeping it open.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.writer()?;
        py.detach(|| w.sync()).map_err(to_py)
    }

    /// Syncs and closes (the library's `finish`: the last writer removes a clean journal, and
    /// reports blocks another writer left unfinished). Closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(arc) = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            return Ok(());
        };
        // A block another thread is writing holds a clone; its end waits for it.
        py.detach(|| {
            let mut arc = arc;
            loop {
                match std::sync::Arc::try_unwrap(arc) {
                    Ok(w) => return w.finish(),
                    Err(again) => {
                        arc = again;
                        std::thread::yield_now();
                    }
                }
            }
        })
        .map_err(to_py)
    }

    /// Whether `close` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_none()
    }
}

impl ArrayWriter {
    /// The open writer, shared with the call that uses it (so `close` in another thread waits
    /// for a block being written rather than pulling the file from under it).
    fn writer(&self) -> PyResult<std::sync::Arc<LibArrayWriter>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| PyValueError::new_err("I/O operation on a closed rawarray.ArrayWriter"))
    }
}

/// Device and inode of the file at `path` (zero where the platform has none).
fn file_id(path: &Path) -> std::io::Result<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        Ok((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).map(|_| (0, 0))
    }
}

/// The module.
#[pymodule]
fn _rawarray(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RaError", m.py().get_type::<RaError>())?;
    m.add_class::<RawFile>()?;
    m.add_class::<Buffer>()?;
    m.add_class::<RecordWriter>()?;
    m.add_class::<ArrayWriter>()?;
    #[cfg(feature = "cloud")]
    m.add_class::<store::StoreFile>()?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    chunked::register(m)?;
    m.add_class::<ragged::RaggedFile>()?;
    m.add_class::<ragged::RaggedWriter>()?;
    m.add_function(wrap_pyfunction!(ragged::is_ragged, m)?)?;
    m.add_function(wrap_pyfunction!(ragged::write_ragged, m)?)?;
    arrow::register(m)?;
    Ok(())
}
