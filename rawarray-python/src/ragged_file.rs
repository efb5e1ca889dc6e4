//! [`RaggedFile`]: an opened ragged file (doc/format.md, section 10), read through the
//! library's [`DynRagged`] over the descriptor opened, either mapped (`mmap=True`: offsets,
//! values and rows are numpy views of the map, live as `np.memmap`'s are) or with positioned
//! reads (`mmap=False`: every row a copy of the file as it was opened, or an error saying it
//! changed; see `state`). Every rule (the header, the offsets, the text marker, the chunked
//! values) is the library's.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rawarray_serde::codec::ChunkMap;
use rawarray_serde::ragged::DynRagged;
use rawarray_serde::{RaggedHeader, ReadMode, Trailer};

use crate::buffer::{Buffer, Bytes};
use crate::chunked::{settings_of, ChunkSettings};
use crate::dtype::element_kind;
use crate::errors::{at_path, to_py, Doing};
use crate::state::{file_id, one_state, Opened};

/// Bytes borrowed from a [`DynRagged`]'s memory map, kept alive by the reader they come from.
pub(crate) struct Region {
    /// The reader whose map holds the bytes, held so that it outlives this region.
    _owner: Arc<DynRagged>,
    ptr: usize,
    len: usize,
}

impl Region {
    /// A buffer of `bytes` from `owner`: a view of its map when they are borrowed from it,
    /// else (bytes the library decoded) the bytes themselves.
    fn buffer(owner: &Arc<DynRagged>, bytes: Cow<'_, [u8]>) -> Buffer {
        let bytes = match bytes {
            Cow::Borrowed(b) => Bytes::Ragged(Region {
                _owner: Arc::clone(owner),
                ptr: b.as_ptr() as usize,
                len: b.len(),
            }),
            Cow::Owned(v) => Bytes::Owned(v),
        };
        Buffer { bytes }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr..ptr + len` was a slice borrowed from `_owner`'s memory map, which lives
        // as long as `_owner` does (this Arc keeps it), never moves (a map's address is fixed),
        // and is read-only; the library's writers never change the bytes a reader of a
        // committed header uses (doc/format.md, section 10). Another program changing the
        // file in place is seen as changed bytes, as with any map.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

/// An opened ragged file, read row by row or whole.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct RaggedFile {
    /// The library's reader over the descriptor opened (mapped or positioned); shared with the
    /// buffers that borrow its map.
    reader: Arc<DynRagged>,
    /// The descriptor opened: the file's state is checked through it.
    file: File,
    path: PathBuf,
    /// The file's state and header at open.
    opened: Opened,
}

#[pymethods]
impl RaggedFile {
    /// Opens the ragged file at `path` (O(1): the header, the trailer, the first and last
    /// offsets), mapped (`mmap=True`) or to be read with positioned reads.
    #[new]
    #[pyo3(signature = (path, mmap=true))]
    fn new(py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<RaggedFile> {
        py.detach(|| open(&path, mmap))
            .map_err(|e| at_path(e, &path, Doing::Reading))
    }

    /// What was opened, to tell later whether the path still names the same file unchanged:
    /// `(device, inode, file length, header bytes)`.
    fn identity<'py>(&self, py: Python<'py>) -> PyResult<(u64, u64, u64, Bound<'py, PyBytes>)> {
        let (dev, ino) = file_id(&self.file)?;
        let (len, header) = self.opened.identity();
        Ok((dev, ino, len, PyBytes::new(py, header)))
    }

    /// Whether rows are views of a memory map (rather than copies read with positioned reads).
    #[getter]
    fn is_mapped(&self) -> bool {
        self.reader.mode() == ReadMode::Mapped
    }

    /// Number of rows.
    #[getter]
    fn rows(&self) -> u64 {
        self.header().rows
    }

    /// Number of values in all rows.
    #[getter]
    fn values_count(&self) -> u64 {
        self.header().values
    }

    /// The dims of one value, first fastest (empty for scalars and records).
    #[getter]
    fn value_dims(&self) -> Vec<u64> {
        self.header().value_dims.clone()
    }

    /// The element type code.
    #[getter]
    fn eltype(&self) -> u64 {
        self.header().eltype.code()
    }

    /// Bytes per element.
    #[getter]
    fn elbyte(&self) -> u64 {
        self.header().elbyte
    }

    /// Slots of the offsets region (at least `rows + 1`; a file appended to has more).
    #[getter]
    fn slots(&self) -> u64 {
        self.header().slots()
    }

    /// Bytes of the data section.
    #[getter]
    fn size(&self) -> u64 {
        self.header().size
    }

    /// Bytes of the header.
    #[getter]
    fn header_len(&self) -> u64 {
        self.header().encoded_len()
    }

    /// Whether the rows are UTF-8 text (the library's reading of the trailer's marker).
    #[getter]
    fn is_text(&self) -> bool {
        self.reader.is_text()
    }

    /// The trailer's schema (the layout of one value) as JSON, if any.
    #[getter]
    fn schema_json(&self) -> Option<String> {
        let schema = self.trailer()?.schema.as_ref()?;
        serde_json::to_string(schema).ok()
    }

    /// How numpy should see one element of a value, as `RawFile.element_kind` says it of an
    /// array of those values (the same reading: the header's element, the trailer's schema).
    fn element_kind(&self) -> (String, String) {
        match self.header().values_header() {
            // A ragged file's trailer is read whole at open: it is valid, or the open failed.
            Ok(values) => element_kind(&values, self.trailer(), None),
            Err(e) => (
                "void".into(),
                format!("the header's element is invalid: {e}"),
            ),
        }
    }

    /// What the library notices about the values' chunked section that a user must hear of
    /// (`RawFile.warnings`: a `RACHUNK1` entry past the committed size), one message each;
    /// empty for plain values. From the index read at open.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.reader.values_section().map_or_else(Vec::new, |s| {
            crate::chunked::section_warnings(s, &self.path)
        })
    }

    /// The mantissa bits the values were rounded to, as the trailer's lossy mark says
    /// (`RawFile.rounded_to`), `None` without a mark.
    #[getter]
    fn rounded_to(&self) -> Option<u32> {
        self.trailer().and_then(Trailer::rounded_to)
    }

    /// The chunked values' settings, `None` for values stored plain: `(codec, level, shuffle,
    /// chunk shape in the file's dim order, raw bytes per block)`, with the values' plain bytes
    /// and their bytes as stored. From the config read at open.
    fn chunk_config(&self) -> Option<(ChunkSettings, u64, u64)> {
        let section = self.reader.values_section()?;
        let config = section.chunk_map().map(ChunkMap::config)?;
        let vh = section.header();
        Some((
            settings_of(config, vh.elbyte),
            self.header().values_len(),
            vh.size,
        ))
    }

    /// `offsets[0..=rows]` (little-endian `u64`s), every one checked first (an error naming
    /// the first bad row): a view of the map, or a copy read through the descriptor.
    fn offsets(&self, py: Python<'_>) -> PyResult<Buffer> {
        let d = &self.reader;
        py.detach(|| self.read(false, || Ok(Region::buffer(d, d.offsets_bytes()?))))
            .map_err(to_py)
    }

    /// Every value, row after row: a view of the map, or a copy.
    fn values(&self, py: Python<'_>) -> PyResult<Buffer> {
        let d = &self.reader;
        py.detach(|| self.read(true, || Ok(Region::buffer(d, d.values_bytes()?))))
            .map_err(to_py)
    }

    /// Row `k`'s values, only its two offsets read and checked: a view of the map, or a copy.
    fn row(&self, py: Python<'_>, k: u64) -> PyResult<Buffer> {
        let d = &self.reader;
        py.detach(|| self.read(true, || Ok(Region::buffer(d, d.row_bytes(k)?))))
            .map_err(to_py)
    }

    /// Row `k` as a string (an error naming the row if it is not UTF-8), copied.
    fn row_str(&self, py: Python<'_>, k: u64) -> PyResult<String> {
        py.detach(|| self.checked(|| self.reader.row_str(k).map(Cow::into_owned)))
            .map_err(to_py)
    }

    /// Checks every row's offsets, and for text every row's UTF-8, each failure naming the
    /// row: what a whole read checks before it hands anything out.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.read(true, || self.reader.check()))
            .map_err(to_py)
    }

    /// The length of the longest row, in values (every row's offsets checked).
    fn longest_row(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.read(false, || self.reader.longest_row()))
            .map_err(to_py)
    }
}

impl RaggedFile {
    fn header(&self) -> &RaggedHeader {
        self.reader.header()
    }

    fn trailer(&self) -> Option<&Trailer> {
        self.reader.trailer()
    }

    /// Runs `read` through the reader: checked to be of the file as opened when it copies
    /// bytes through the descriptor (positioned reads, or with `values` the values of a
    /// chunked file, which are decoded); a mapped read is a live view, as `np.memmap`'s is.
    fn read<T>(
        &self,
        values: bool,
        read: impl FnOnce() -> rawarray_serde::Result<T>,
    ) -> rawarray_serde::Result<T> {
        let decodes = values && self.reader.values_section().is_some();
        if self.reader.mode() == ReadMode::Positioned || decodes {
            self.checked(read)
        } else {
            read()
        }
    }

    /// Runs `read`, a copying read, and returns its result only if it is of the file as opened.
    fn checked<T>(
        &self,
        read: impl FnOnce() -> rawarray_serde::Result<T>,
    ) -> rawarray_serde::Result<T> {
        one_state(&self.file, &self.path, &self.opened, read)
    }
}

/// Opens the file at `path`: its descriptor, then the library's reader over it, bracketed so
/// that the reader and the state the later reads are checked against are of one version of
/// the file. The map, too, is of the descriptor's file, not of one renamed over the path.
fn open(path: &Path, mmap: bool) -> rawarray_serde::Result<RaggedFile> {
    let file = File::open(path)?;
    let mode = if mmap {
        ReadMode::Mapped
    } else {
        ReadMode::Positioned
    };
    let (reader, opened) = Opened::open(
        &file,
        path,
        || DynRagged::from_open_file(file.try_clone()?, path, mode),
        |d: &DynRagged| (d.header().clone(), d.header().offsets_at()),
        RaggedHeader::decode,
    )?;
    Ok(RaggedFile {
        reader: Arc::new(reader),
        file,
        path: path.to_path_buf(),
        opened,
    })
}
