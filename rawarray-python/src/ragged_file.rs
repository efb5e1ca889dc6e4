//! [`RaggedFile`]: an opened ragged file (doc/format.md, section 10), read either through the
//! library's [`DynRagged`] and its memory map (`mmap=True`: offsets, values and rows are numpy
//! views of the map, live as `np.memmap`'s are) or with positioned reads through the
//! descriptor opened (`mmap=False`: every row a copy of the file as it was opened, or an error
//! saying it changed; see `state`). Every rule (the header, the offsets, the text marker, the
//! chunked values) is the library's.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rawarray_serde::ragged::{check_offsets, DynRagged};
use rawarray_serde::section::Section;
use rawarray_serde::{ElType, Error, ErrorKind, Layout, Logical, RaggedHeader, Trailer};

use crate::buffer::{Buffer, Bytes};
use crate::chunked::{read_config, settings_of, ChunkSettings};
use crate::errors::{at_path, to_py, Doing};
use crate::file::read_exact_at;
use crate::state::{one_state, Opened};

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

/// A ragged file read with positioned reads: its header and trailer, read at open through the
/// descriptor, and the decoder of its values when they are chunked.
struct Positioned {
    header: RaggedHeader,
    trailer: Option<Trailer>,
    values: Option<Section<File>>,
}

/// How rows are read.
enum Reader {
    /// The library's reader over a map of the file.
    Mapped(Arc<DynRagged>),
    /// Positioned reads through the descriptor.
    Positioned(Box<Positioned>),
}

/// An opened ragged file, read row by row or whole.
#[pyclass(frozen, module = "rawarray._rawarray")]
pub(crate) struct RaggedFile {
    reader: Reader,
    /// The descriptor opened: the file's state is checked through it, and a positioned reader
    /// reads through it.
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
        matches!(self.reader, Reader::Mapped(_))
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
        match &self.reader {
            Reader::Mapped(d) => d.is_text(),
            Reader::Positioned(p) => {
                p.trailer.as_ref().and_then(|t| t.schema.as_ref()) == Some(&text_layout())
            }
        }
    }

    /// The trailer's schema (the layout of one value) as JSON, if any.
    #[getter]
    fn schema_json(&self) -> Option<String> {
        let schema = self.trailer()?.schema.as_ref()?;
        serde_json::to_string(schema).ok()
    }

    /// How numpy should see one element of a value, as `RawFile.element_kind` says it.
    fn element_kind(&self) -> (String, String) {
        let h = self.header();
        let Ok(values) = h.values_header() else {
            return ("void".into(), "the header's element is invalid".into());
        };
        let base = match self.layout() {
            Some(layout) => match layout.check_header(&values) {
                Ok(base) => Some(base.clone()),
                Err(e) => {
                    return (
                        "void".into(),
                        format!("the trailer's record schema is damaged: {e}"),
                    )
                }
            },
            None => None,
        };
        match base {
            Some(
                s @ Layout::Scalar {
                    logical: Some(_), ..
                },
            ) => (
                "dtype".into(),
                s.numpy_descr_json().as_str().unwrap_or("|u1").into(),
            ),
            Some(r @ Layout::Record { .. }) => ("record".into(), r.numpy_descr_json().to_string()),
            _ => match (values.numpy_dtype(), h.eltype, h.elbyte) {
                (Some(dt), _, _) => ("dtype".into(), dt.into()),
                (None, ElType::BFloat16, 2) => ("bfloat16".into(), "<u2".into()),
                (None, ElType::Complex, 4) => ("complex32".into(), "<f2".into()),
                (None, _, elbyte) => (
                    "void".into(),
                    format!("{} ({elbyte} bytes) has no numpy type", values.type_label()),
                ),
            },
        }
    }

    /// What the library notices about the values' chunked section that a user must hear of
    /// (`RawFile.warnings`: a `RACHUNK1` entry past the committed size), one message each;
    /// empty for plain values. One read of the config and index.
    #[getter]
    fn warnings(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let h = self.header();
        let Some(vh) = h.values_section_header() else {
            return Ok(Vec::new());
        };
        py.detach(|| -> rawarray_serde::Result<Vec<String>> {
            let section = Section::open_at(&vh, self.file.try_clone()?, h.values_at())?;
            Ok(crate::chunked::section_warnings(&section, &self.path))
        })
        .map_err(to_py)
    }

    /// The mantissa bits the values were rounded to, as the trailer's lossy mark says
    /// (`RawFile.rounded_to`), `None` without a mark.
    #[getter]
    fn rounded_to(&self) -> Option<u32> {
        self.trailer().and_then(Trailer::rounded_to)
    }

    /// The chunked values' settings, `None` for values stored plain: `(codec, level, shuffle,
    /// chunk shape in the file's dim order, raw bytes per block)`, with the values' plain bytes
    /// and their bytes as stored.
    fn chunk_config(&self, py: Python<'_>) -> PyResult<Option<(ChunkSettings, u64, u64)>> {
        let h = self.header();
        let Some(vh) = h.values_section_header() else {
            return Ok(None);
        };
        py.detach(|| {
            self.checked(|| {
                let config =
                    read_config(&vh, h.values_at(), |b, at| read_exact_at(&self.file, b, at))?;
                Ok(Some((
                    settings_of(&config, vh.elbyte),
                    h.values_len(),
                    vh.size,
                )))
            })
        })
        .map_err(to_py)
    }

    /// `offsets[0..=rows]` (little-endian `u64`s), every one checked first (an error naming
    /// the first bad row): a view of the map, or a copy read through the descriptor.
    fn offsets(&self, py: Python<'_>) -> PyResult<Buffer> {
        py.detach(|| match &self.reader {
            Reader::Mapped(d) => Ok(Region::buffer(d, d.offsets_bytes()?)),
            Reader::Positioned(p) => self.checked(|| {
                let bytes = self.offset_bytes(p, 0, p.header.rows + 1)?;
                check_offsets(&words(&bytes), p.header.values)?;
                Ok(owned(bytes))
            }),
        })
        .map_err(to_py)
    }

    /// Every value, row after row: a view of the map, or a copy.
    fn values(&self, py: Python<'_>) -> PyResult<Buffer> {
        py.detach(|| match &self.reader {
            Reader::Mapped(d) => {
                let decoded = self.decodes();
                let read = || d.values_bytes().map(|b| Region::buffer(d, b));
                if decoded {
                    self.checked(read)
                } else {
                    read()
                }
            }
            Reader::Positioned(p) => {
                self.checked(|| Ok(owned(self.values_of(p, 0, p.header.values)?)))
            }
        })
        .map_err(to_py)
    }

    /// Row `k`'s values, only its two offsets read and checked: a view of the map, or a copy.
    fn row(&self, py: Python<'_>, k: u64) -> PyResult<Buffer> {
        py.detach(|| match &self.reader {
            Reader::Mapped(d) => {
                let read = || d.row_bytes(k).map(|b| Region::buffer(d, b));
                if self.decodes() {
                    self.checked(read)
                } else {
                    read()
                }
            }
            Reader::Positioned(p) => self.checked(|| Ok(owned(self.row_of(p, k)?))),
        })
        .map_err(to_py)
    }

    /// Row `k` as a string (an error naming the row if it is not UTF-8), copied.
    fn row_str(&self, py: Python<'_>, k: u64) -> PyResult<String> {
        py.detach(|| {
            self.checked(|| match &self.reader {
                Reader::Mapped(d) => d.row_str(k).map(|s| s.to_string()),
                Reader::Positioned(p) => {
                    let bytes = self.row_of(p, k)?;
                    String::from_utf8(bytes)
                        .map_err(|e| bad(format!("row {k} is not UTF-8 text: {}", e.utf8_error())))
                }
            })
        })
        .map_err(to_py)
    }

    /// Checks every row's offsets, and for text every row's UTF-8, each failure naming the
    /// row: what a whole read checks before it hands anything out.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        let text = self.is_text();
        py.detach(|| match &self.reader {
            Reader::Mapped(d) => {
                d.offsets_bytes()?;
                if text {
                    for k in 0..d.rows() {
                        d.row_str(k)?;
                    }
                }
                Ok(())
            }
            Reader::Positioned(p) => self.checked(|| {
                let offsets = words(&self.offset_bytes(p, 0, p.header.rows + 1)?);
                check_offsets(&offsets, p.header.values)?;
                if text {
                    let values = self.values_of(p, 0, p.header.values)?;
                    for (k, w) in offsets.windows(2).enumerate() {
                        std::str::from_utf8(&values[w[0] as usize..w[1] as usize])
                            .map_err(|e| bad(format!("row {k} is not UTF-8 text: {e}")))?;
                    }
                }
                Ok(())
            }),
        })
        .map_err(to_py)
    }

    /// The length of the longest row, in values (every row's offsets checked).
    fn longest_row(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| match &self.reader {
            Reader::Mapped(d) => d.longest_row(),
            Reader::Positioned(p) => self.checked(|| {
                let offsets = words(&self.offset_bytes(p, 0, p.header.rows + 1)?);
                check_offsets(&offsets, p.header.values)?;
                Ok(offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0))
            }),
        })
        .map_err(to_py)
    }
}

impl RaggedFile {
    fn header(&self) -> &RaggedHeader {
        match &self.reader {
            Reader::Mapped(d) => d.header(),
            Reader::Positioned(p) => &p.header,
        }
    }

    fn trailer(&self) -> Option<&Trailer> {
        match &self.reader {
            Reader::Mapped(d) => d.trailer(),
            Reader::Positioned(p) => p.trailer.as_ref(),
        }
    }

    /// The element's layout: the trailer's schema, else the header's scalar (as the library's
    /// `DynRagged::layout` says it).
    fn layout(&self) -> Option<Layout> {
        match &self.reader {
            Reader::Mapped(d) => d.layout(),
            Reader::Positioned(p) => {
                let h = &p.header;
                p.trailer
                    .as_ref()
                    .and_then(|t| t.schema.clone())
                    .or_else(|| {
                        (h.eltype != ElType::User).then_some(Layout::Scalar {
                            eltype: h.eltype,
                            elbyte: h.elbyte,
                            logical: None,
                        })
                    })
            }
        }
    }

    /// Whether the values are chunked, so that a row of the map is decoded (a copy).
    fn decodes(&self) -> bool {
        self.header().values_section_header().is_some()
    }

    /// Runs `read`, a copying read, and returns its result only if it is of the file as opened.
    fn checked<T>(
        &self,
        read: impl FnOnce() -> rawarray_serde::Result<T>,
    ) -> rawarray_serde::Result<T> {
        one_state(&self.file, &self.path, &self.opened, read)
    }

    /// The bytes of offsets `first..first + count` (within the header's slots).
    fn offset_bytes(
        &self,
        p: &Positioned,
        first: u64,
        count: u64,
    ) -> rawarray_serde::Result<Vec<u8>> {
        let mut bytes = zeroed(8 * count)?;
        read_exact_at(&self.file, &mut bytes, p.header.offsets_at() + 8 * first)?;
        Ok(bytes)
    }

    /// The packed bytes of values `start..end` (checked against the value count).
    fn values_of(&self, p: &Positioned, start: u64, end: u64) -> rawarray_serde::Result<Vec<u8>> {
        let h = &p.header;
        let vb = h.value_bytes();
        let len = (end - start).checked_mul(vb).ok_or_else(|| {
            ErrorKind::Message(format!("{} values of {vb} bytes: too large", end - start))
        })?;
        let mut out = zeroed(len)?;
        if start == end {
            return Ok(out);
        }
        match &p.values {
            None => read_exact_at(&self.file, &mut out, h.values_at() + start * vb)?,
            Some(section) => {
                let mut ranges: Vec<std::ops::Range<u64>> =
                    h.value_dims.iter().map(|&d| 0..d).collect();
                ranges.push(start..end);
                section.read_box(&ranges, &mut out)?;
            }
        }
        Ok(out)
    }

    /// Row `k`'s packed bytes, its two offsets checked as the library's reader checks them.
    fn row_of(&self, p: &Positioned, k: u64) -> rawarray_serde::Result<Vec<u8>> {
        let h = &p.header;
        if k >= h.rows {
            return Err(ErrorKind::OutOfBounds {
                start: k,
                end: k + 1,
                len: h.rows,
            }
            .into());
        }
        let w = words(&self.offset_bytes(p, k, 2)?);
        let (start, end) = (w[0], w[1]);
        if start > end || end > h.values || (k == 0 && start != 0) {
            return Err(bad(format!(
                "row {k} spans values {start}..{end} of {} (offsets[{k}], offsets[{}])",
                h.values,
                k + 1
            )));
        }
        self.values_of(p, start, end)
    }
}

/// The layout of one value of a text file: a `u8` marked text, as the library writes it.
fn text_layout() -> Layout {
    Layout::Scalar {
        eltype: ElType::Uint,
        elbyte: 1,
        logical: Some(Logical::Text),
    }
}

/// A damaged ragged file's error, as the library's reader words it.
fn bad(why: String) -> Error {
    ErrorKind::BadRagged { why }.into()
}

/// Little-endian `u64` words of `bytes`.
fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect()
}

/// `len` zero bytes, or an error if memory cannot hold them: a header's counts are the file's
/// word (chunked values never written read as zeros, so a small file may claim many).
fn zeroed(len: u64) -> rawarray_serde::Result<Vec<u8>> {
    let n = usize::try_from(len).map_err(|_| ErrorKind::TooLarge { bytes: len })?;
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| ErrorKind::TooLarge { bytes: len })?;
    v.resize(n, 0);
    Ok(v)
}

fn owned(bytes: Vec<u8>) -> Buffer {
    Buffer {
        bytes: Bytes::Owned(bytes),
    }
}

/// Opens the file at `path`: its descriptor, then the reader, bracketed so that the reader and
/// the state the later reads are checked against are of one version of the file.
fn open(path: &Path, mmap: bool) -> rawarray_serde::Result<RaggedFile> {
    let file = File::open(path)?;
    let header_of = |h: &RaggedHeader| (h.clone(), h.offsets_at());
    let (reader, opened) = if mmap {
        let id = file_id(&file)?;
        let (d, opened) = Opened::open(
            &file,
            path,
            || {
                let d = DynRagged::open(path)?;
                // The map is of the file the descriptor holds (not of one renamed over it).
                if file_id(&File::open(path)?)? != id {
                    return Err(ErrorKind::Message(format!(
                        "{}: another file was put at this path while it was opened; open it again",
                        path.display()
                    ))
                    .into());
                }
                Ok(d)
            },
            |d: &DynRagged| header_of(d.header()),
            RaggedHeader::decode,
        )?;
        (Reader::Mapped(Arc::new(d)), opened)
    } else {
        let (p, opened) = Opened::open(
            &file,
            path,
            || open_positioned(&file),
            |p: &Positioned| header_of(&p.header),
            RaggedHeader::decode,
        )?;
        (Reader::Positioned(Box::new(p)), opened)
    };
    Ok(RaggedFile {
        reader,
        file,
        path: path.to_path_buf(),
        opened,
    })
}

/// Device and inode of an open file (zeros where the platform has none).
fn file_id(file: &File) -> std::io::Result<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata()?;
        Ok((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        file.metadata().map(|_| (0, 0))
    }
}

/// The trailer of a ragged file is JSON: past this, the bytes after the data are not one a
/// writer made, and reading them whole is not justified.
const MAX_TRAILING: u64 = 64 << 20;

/// The positioned reader of the ragged file open in `file`: its header (read as far as the
/// library's decoder asks), its trailer, and the first and last offsets checked, as the
/// library's mapped reader checks them at open.
fn open_positioned(file: &File) -> rawarray_serde::Result<Positioned> {
    let len = file.metadata()?.len();
    let mut want = len.min(4096);
    let header = loop {
        let mut bytes = vec![0u8; want as usize];
        read_exact_at(file, &mut bytes, 0)?;
        match RaggedHeader::decode(&bytes) {
            Err(e) => match e.kind() {
                ErrorKind::HeaderTruncated { needed, .. } if *needed > want && *needed <= len => {
                    want = *needed;
                }
                _ => return Err(e),
            },
            Ok(h) => break h,
        }
    };
    if len < header.data_end() {
        return Err(ErrorKind::Truncated {
            expected: header.size,
            found: len.saturating_sub(header.encoded_len()),
        }
        .into());
    }
    let trailing = len - header.data_end();
    if trailing > MAX_TRAILING {
        return Err(Error::from(ErrorKind::Trailer(format!(
            "{trailing} bytes after the data: more than a trailer ({MAX_TRAILING} bytes at most)"
        ))));
    }
    let mut tail = vec![0u8; trailing as usize];
    read_exact_at(file, &mut tail, header.data_end())?;
    let trailer = Trailer::from_trailing_bytes(&tail)?;
    let values = match header.values_section_header() {
        Some(vh) => Some(Section::open_at(
            &vh,
            file.try_clone()?,
            header.values_at(),
        )?),
        None => None,
    };
    let mut ends = vec![0u8; 8];
    read_exact_at(file, &mut ends, header.offsets_at())?;
    let first = words(&ends)[0];
    read_exact_at(file, &mut ends, header.offsets_at() + 8 * header.rows)?;
    let last = words(&ends)[0];
    // The library's reader checks the same ends at open, in the same words.
    if first != 0 {
        return Err(bad(format!(
            "row 0 starts at value {first}, not 0 (offsets[0])"
        )));
    }
    if last != header.values {
        return Err(bad(format!(
            "row {} ends at value {last}, but the file holds {} values (offsets[{}], the last \
             offset, must be the value count)",
            header.rows.saturating_sub(1),
            header.values,
            header.rows
        )));
    }
    Ok(Positioned {
        header,
        trailer,
        values,
    })
}
