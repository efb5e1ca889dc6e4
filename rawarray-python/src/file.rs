//! [`RawFile`]: an opened `.ra` file of an n-d array or records, read through one descriptor.

use std::fs::File;
use std::path::{Path, PathBuf};

#[cfg(unix)]
use std::os::unix::fs::FileExt;

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyTuple, PyType};
use rawarray_serde::query::RowFilter;
use rawarray_serde::section::{read_exact_at_split, Section, Storage};
use rawarray_serde::{ArrayReader, Header};

use crate::buffer::{output_bytes, Buffer, Bytes};
use crate::chunked::{settings_of, ChunkSettings};
use crate::errors::{at_path, ra_err, to_py, Doing};
use crate::head::array_methods;
use crate::state::{file_id, one_state, Opened};

/// Fills `buf` from `at` with positioned reads (no shared cursor).
#[cfg(unix)]
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    file.read_exact_at(buf, at)
}

/// Fills `buf` from `at` with positioned reads (no shared cursor: threads share the handle).
#[cfg(windows)]
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
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

/// An opened `.ra` file: its validated header and trailer, read in O(1) of the file's size.
///
/// It holds the descriptor it opened until it is dropped, and every read (map, decode, block,
/// positioned read) goes through that descriptor: the bytes are those of the file it opened,
/// with its header, even after another file is renamed over the path.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct RawFile {
    pub(crate) file: File,
    /// The library's reader over a duplicate of `file` (the same open file, the same inode):
    /// the header and trailer of one moment, and blocks.
    reader: ArrayReader,
    file_len: u64,
    /// Device and inode of what was opened (zero where the platform has none).
    dev: u64,
    ino: u64,
    /// The path opened, for messages.
    path: PathBuf,
    /// The file's state and header at open: every copying read is checked against them.
    opened: Opened,
}

array_methods!(RawFile {
    /// Opens the file once, reads and validates its header, and finds the trailer from the end.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<RawFile> {
        py.detach(|| open_raw(&path))
            .map_err(|e| at_path(e, &path, Doing::Reading))
    }

    /// What the library noticed at open that is not an error but that a user must hear of
    /// (`chunked::section_warnings`), one message each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        crate::chunked::section_warnings(self.reader.section(), &self.path)
    }

    /// The file's per-chunk statistics (doc/chunked.md section 5.4), from its index alone: per
    /// field name `{min, max, nan}` of the whole file, or with `per_chunk` a list of them, one
    /// per chunk (None where a chunk has none); `None` for a file that keeps none.
    fn stats<'py>(&self, py: Python<'py>, per_chunk: bool) -> PyResult<Option<Bound<'py, PyDict>>> {
        crate::query::file_stats(py, &self.reader, per_chunk)
    }

    /// The records that match `filters` (pyarrow's convention), little-endian, read from only
    /// the chunks whose statistics allow a match (counted by `io_stats`).
    fn select(&self, py: Python<'_>, filters: &Bound<'_, PyAny>) -> PyResult<Buffer> {
        let schema = self.reader.trailer().and_then(|t| t.schema.as_ref());
        let layout =
            crate::query::record_layout(self.header(), schema, &self.path.display().to_string())?;
        let Some(predicate) = crate::query::predicate_from_py(filters, Some(&layout))? else {
            return Err(ra_err("select needs filters"));
        };
        let filter = RowFilter::new(&predicate, &layout).map_err(to_py)?;
        py.detach(|| {
            self.checked(|| crate::query::select(&self.reader, &filter, &layout))
                .map(|bytes| Buffer {
                    bytes: Bytes::Owned(bytes),
                })
        })
        .map_err(to_py)
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
            // Through the library's reader, never from one copy of the header and data
            // section: a writer appending may commit a header during that copy, which tears
            // it (an old `size` with new dims reads written chunks as zeros; doc/chunked.md
            // 7.1). The reader's section re-reads a later header for an entry it moved.
            let ranges: Vec<std::ops::Range<u64>> =
                self.header().dims.iter().map(|&d| 0..d).collect();
            let (_, data) = self.checked(|| {
                if self.header().data_len() == 0 {
                    // An empty array's section is still decoded: damaged, it is refused.
                    self.section().read_all()?;
                }
                self.reader.read_subset_bytes(&ranges)
            })?;
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
            let (_, data) = self.checked(|| self.reader.read_subset_bytes(&ranges))?;
            Ok(Buffer {
                bytes: Bytes::Owned(data),
            })
        })
        .map_err(to_py)
    }

    /// The bytes of the one element `key` names, read as `read_block` reads, if `key` is
    /// numpy's index of one element: a tuple of one integer per axis (an integer alone for a
    /// 1-d array), each a Python `int` or numpy integer (not a `bool`: numpy reads those as
    /// masks), within bounds, negative ones counting from the end. `None` for any other key,
    /// and for an index out of bounds, which the general path words as numpy does. This is
    /// the path of `f[i, j, k]` with `mmap=False`: no Python planning, no block object, one
    /// positioned read between the state checks.
    fn read_element<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let Some(ranges) = element_ranges(key, &self.header().dims)? else {
            return Ok(None);
        };
        let data = py
            .detach(|| self.checked(|| self.reader.read_subset_bytes(&ranges)))
            .map_err(to_py)?
            .1;
        Ok(Some(PyBytes::new(py, &data)))
    }

    /// `len` data bytes from byte `start` of the data section of a plain (uncompressed) file,
    /// read with one positioned read (for callers that want bytes without a map).
    fn read_data(&self, py: Python<'_>, start: u64, len: u64) -> PyResult<Buffer> {
        let at = self.data_range(start, len)?;
        py.detach(|| -> rawarray_serde::Result<Buffer> {
            let mut bytes = vec![0u8; len as usize];
            self.checked(|| Ok(read_exact_at(&self.file, &mut bytes, at)?))?;
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
    fn read_into(&self, py: Python<'_>, start: u64, mut out: PyBuffer<u8>) -> PyResult<()> {
        let bytes = output_bytes(&mut out, "read_into")?;
        let at = self.data_range(start, bytes.len() as u64)?;
        if bytes.is_empty() {
            return Ok(());
        }
        // 32 MiB or more are read in pieces on several threads: one core copies from the page
        // cache at about half what two do (doc/benchmarks.md, "Plain reads and writes on two
        // threads"). Through this file's own descriptor, as every read of this method, so the
        // section's read counters (`io_stats`, which counts box reads) see none of it.
        py.detach(|| {
            self.checked(|| Ok(read_exact_at_split(&self.file, bytes, at, 0)?))
        })
        .map_err(to_py)
    }

    /// The file's length in bytes when it was opened.
    #[getter]
    fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The chunk settings of a chunked file, as stored in its config; `None` for any other
    /// file. From the config the library read and validated at open: no read.
    fn chunk_config(&self) -> Option<ChunkSettings> {
        let config = self.reader.section().chunk_map()?.config();
        Some(settings_of(config, self.header().elbyte))
    }
});

impl RawFile {
    /// Runs `read`, a copying read through the descriptor, and returns its bytes only if they
    /// are of the file as opened ([`one_state`]).
    pub(crate) fn checked<T>(
        &self,
        read: impl FnOnce() -> rawarray_serde::Result<T>,
    ) -> rawarray_serde::Result<T> {
        one_state(&self.file, &self.path, &self.opened, read)
    }

    pub(crate) fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The data section as the library's reader opened it (its config and index read then).
    pub(crate) fn section(&self) -> &Section<impl rawarray_serde::io::ReadAt> {
        self.reader.section()
    }

    /// The file offset of data bytes `start..start + len` of a plain file, or an error naming
    /// the data section's size.
    fn data_range(&self, start: u64, len: u64) -> PyResult<u64> {
        let header = self.header();
        let storage = Storage::of(header);
        if storage.is_coded() {
            return Err(ra_err(format!(
                "a file stored as {} is read whole (decode) or by box (read_block), not by byte range",
                storage.name()
            )));
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

/// The ranges (the file's dim order) of the one element numpy's `key` names in an array of the
/// file's `dims`, or `None` if `key` is not one element's index within bounds (see
/// [`RawFile::read_element`]).
fn element_ranges(
    key: &Bound<'_, PyAny>,
    dims: &[u64],
) -> PyResult<Option<Vec<std::ops::Range<u64>>>> {
    static NP_INTEGER: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let np_integer = NP_INTEGER.import(key.py(), "numpy", "integer")?;
    let n = dims.len();
    let mut ranges = vec![0..0; n];
    // numpy's axis `axis` is the file's dim `n - 1 - axis`.
    let mut put = |axis: usize, k: &Bound<'_, PyAny>| -> PyResult<bool> {
        if k.is_instance_of::<PyBool>()
            || !(k.is_instance_of::<PyInt>() || k.is_instance(np_integer)?)
        {
            return Ok(false);
        }
        let len = dims[n - 1 - axis];
        let Ok(i) = k.extract::<i64>() else {
            return Ok(false); // beyond any axis: out of bounds
        };
        let i = i128::from(i) + if i < 0 { i128::from(len) } else { 0 };
        match u64::try_from(i) {
            Ok(i) if i < len => {
                ranges[n - 1 - axis] = i..i + 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    if let Ok(items) = key.cast::<PyTuple>() {
        if items.len() != n {
            return Ok(None);
        }
        for (axis, k) in items.iter().enumerate() {
            if !put(axis, &k)? {
                return Ok(None);
            }
        }
    } else if n != 1 || !put(0, key)? {
        return Ok(None);
    }
    Ok(Some(ranges))
}

fn open_raw(path: &Path) -> rawarray_serde::Result<RawFile> {
    let file = File::open(path)?;
    let (reader, opened) = Opened::open(
        &file,
        path,
        || ArrayReader::from_open_file(file.try_clone()?, path),
        |r: &ArrayReader| (r.header().clone(), r.header().encoded_len() as u64),
        Header::decode_any,
    )?;
    let (dev, ino) = file_id(&file)?;
    Ok(RawFile {
        // The length after the header: a record writer appends data before the header that
        // counts it, so a length taken first could be shorter than what the header describes.
        file_len: file.metadata()?.len(),
        file,
        reader,
        dev,
        ino,
        path: path.to_path_buf(),
        opened,
    })
}
