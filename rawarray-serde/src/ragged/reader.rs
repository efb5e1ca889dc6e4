//! Reading ragged files: [`RaggedReader`] (typed rows over a memory map) and [`DynRagged`]
//! (rows of a type known at run time, mapped or read with positioned reads: [`ReadMode`]).

use super::header::{
    bad, check_ends, check_offsets, read_header, read_header_again, read_source_header,
    RaggedHeader,
};
use super::values::{
    check_text, is_text_trailer, text_marked, text_of, write_chunked, write_head, write_tail,
    Ragged,
};
use std::borrow::Cow;
use std::fs::File;
use std::io::Write;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

use crate::data;
use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::read_exact_at;
use crate::header::le_u64;
use crate::header::Header;
use crate::io::{PinnedFile, ReadAt};
use crate::layout::Layout;
use crate::mapped::ReadMode;
use crate::options::WriteOptions;
use crate::records::ElementSpec;
use crate::section::{stream, Section};
use crate::trailer::{locate, Probe, Trailer};

/// A ragged file through a memory map: open is O(1), row `k` reads two offsets and the row's
/// bytes, borrowed from the map for plain-old-data elements whose bytes are aligned. Chunked
/// values (section 10.2) are decoded from the chunks the row touches (a decoded copy).
///
/// The reader sees the rows of the header it read at open: a [`RaggedWriter`](super::RaggedWriter) appending at the
/// same time writes only into offsets slots past those rows and after the data end, so what
/// the reader sees never changes.
///
/// ```
/// use std::borrow::Cow;
/// use rawarray_serde::{Ragged, RaggedReader};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("r.ra");
/// Ragged::from_rows([vec![1u32, 2], vec![3]]).write_file(&path).unwrap();
/// let r = RaggedReader::<u32>::open(&path).unwrap();
/// assert_eq!(r.rows(), 2);
/// let row = r.row(0).unwrap();
/// assert_eq!(*row, [1, 2]);
/// assert!(matches!(row, Cow::Borrowed(_)));
/// ```
#[derive(Debug)]
pub struct RaggedReader<T> {
    mapped: Mapped,
    _element: PhantomData<fn() -> T>,
}

impl<T: Element + Clone> RaggedReader<T> {
    /// Opens and maps the file; checks the header, the element type and the first and last
    /// offsets (each row's offsets are checked when the row is read).
    pub fn open(path: impl AsRef<Path>) -> Result<RaggedReader<T>> {
        let mapped = Mapped::open(path.as_ref())?;
        mapped
            .header
            .check_element(&ElementSpec::of::<T>(), std::any::type_name::<T>())?;
        Ok(RaggedReader {
            mapped,
            _element: PhantomData,
        })
    }

    /// Number of rows (as the header said at open).
    pub fn rows(&self) -> usize {
        self.mapped.header.rows as usize
    }

    /// The header read at open.
    pub fn header(&self) -> &RaggedHeader {
        &self.mapped.header
    }

    /// The trailer read at open, if any.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.mapped.trailer.as_ref()
    }

    /// Row `k`: borrowed from the map where `T`'s bytes can be (plain-old-data, aligned, values
    /// not chunked), a decoded copy otherwise. A row whose offsets break the rules is an error
    /// naming it.
    pub fn row(&self, k: usize) -> Result<Cow<'_, [T]>> {
        let bytes = self.mapped.row_bytes(k as u64)?;
        if let Cow::Borrowed(bytes) = bytes {
            if let Some(values) = T::cast_pod_slice(bytes) {
                return Ok(Cow::Borrowed(values));
            }
        }
        data::decode_values(&bytes, false).map(Cow::Owned)
    }
}

/// A ragged file opened for reading: its header, its trailer, its data section (mapped, or
/// reached by positioned reads through the open file), and for chunked values the section
/// reader that decodes them (through the same open file).
#[derive(Debug)]
pub(super) struct Mapped {
    header: RaggedHeader,
    trailer: Option<Trailer>,
    data: Data,
    values: Option<Values>,
}

/// Where a ragged file's offsets and plain values are read from ([`ReadMode`]).
#[derive(Debug)]
enum Data {
    /// A memory map of the data section: rows of plain values borrow its bytes.
    Map(Mmap),
    /// Positioned reads through the open file: every row a copy, and a file cut under the
    /// reader an error rather than a signal.
    Positioned(File),
    /// Positioned reads of a source that is not a local file ([`DynRagged::from_source`]).
    Source(Shared),
}

/// A source of a whole ragged file that is not a local file (an object in a store).
#[derive(Clone)]
struct Shared(Arc<dyn ReadAt + Send + Sync>);

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

impl ReadAt for Shared {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
    fn source_len(&self) -> std::io::Result<u64> {
        self.0.source_len()
    }
    fn state(&self) -> Result<Option<crate::io::FileState>> {
        self.0.state()
    }
    fn still_holds(&self, then: &crate::io::FileState, now: &crate::io::FileState) -> bool {
        self.0.still_holds(then, now)
    }
    fn has(&self, range: std::ops::Range<u64>) -> bool {
        self.0.has(range)
    }
    fn is_local(&self) -> bool {
        self.0.is_local()
    }
}

/// The decoder of chunked values, reading through the open file or the source.
#[derive(Debug)]
enum Values {
    File(Section<PinnedFile>),
    Source(Section<Shared>),
}

/// Reading a whole ragged file lives with the readers: chunked values are read through the
/// pinned section [`DynRagged`] reads them with, never from one copy of the whole file (whose
/// header a writer's commit can tear: see `read_settled_at` in `io.rs`).
impl<T: Element> Ragged<T> {
    /// Reads the ragged file at `path`, checked as [`Ragged::from_bytes`] checks. Plain values
    /// are read with one read into the final buffer (after the offsets, checked first);
    /// chunked values are decoded through the codec layer, from the chunks of one committed
    /// header (a [`RaggedWriter`](super::RaggedWriter) may be appending: the rows read are
    /// those of one of its commits, or the error says the file changed). Every read goes
    /// through the one descriptor the header was read from.
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, Ragged, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let rows = Ragged::from_rows([vec![1u32, 2], vec![], vec![3]]);
    /// rows.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd)).unwrap();
    /// let back = Ragged::<u32>::read_file(&path).unwrap();
    /// assert_eq!((back.rows(), back.row(0).unwrap(), back.row(2).unwrap()), (3, &[1, 2][..], &[3][..]));
    /// ```
    pub fn read_file(path: impl AsRef<Path>) -> Result<Ragged<T>> {
        // Every error names the file, as the other whole reads' do.
        crate::fileio::reading(path.as_ref(), Ragged::read_file_at)
    }

    fn read_file_at(path: &Path) -> Result<Ragged<T>> {
        use std::io::{Seek, SeekFrom};
        let mut file = File::open(path)?;
        let h = read_header(&file)?;
        h.check_element(&ElementSpec::of::<T>(), std::any::type_name::<T>())?;
        if h.chunked {
            let m = Mapped::from_file(file, path, ReadMode::Positioned)?;
            let h = &m.header;
            let offsets = m.offsets(0..h.rows)?;
            check_offsets(&offsets, h.values)?;
            let raw = m.values_bytes(0, h.values)?;
            let text = is_text_trailer(m.trailer.as_ref());
            if text {
                check_text(&offsets, &raw, h.value_bytes())?;
            }
            return Ok(Ragged {
                offsets,
                values: data::decode_values(&raw, false)?,
                text,
            });
        }
        let len = file.metadata()?.len();
        if len < h.data_end() {
            return Err(ErrorKind::Truncated {
                expected: h.size,
                found: len.saturating_sub(h.encoded_len()),
            }
            .into());
        }
        // The offsets as a plain u64 array read into place: at most `size` bytes, which the
        // file holds.
        let n = h.rows + 1;
        file.seek(SeekFrom::Start(h.offsets_at()))?;
        let offsets: Vec<u64> = stream::read_values(
            &Header::new(ElType::Uint, 8, vec![n])?,
            &mut file,
            Some(8 * n),
        )?;
        check_offsets(&offsets, h.values)?;
        let text = is_text_trailer(locate(&file, h.data_end(), len).into_result()?.as_ref());
        file.seek(SeekFrom::Start(h.values_at()))?;
        let vh = h.values_header()?;
        let values: Vec<T> = stream::read_values(&vh, &mut file, Some(h.values_len()))?;
        if text {
            check_text(
                &offsets,
                &data::encode_values(&values, false),
                h.value_bytes(),
            )?;
        }
        Ok(Ragged {
            offsets,
            values,
            text,
        })
    }
}

impl Mapped {
    /// Opens a ragged file and maps its data section; checks the first and last offsets.
    fn open(path: &Path) -> Result<Mapped> {
        Mapped::from_file(File::open(path)?, path, ReadMode::Mapped)
    }

    /// Reads the header and trailer of the ragged file open in `file` (known as `path` in
    /// messages), reaches its data as `mode` says, and checks the first and last offsets.
    fn from_file(file: File, path: &Path, mode: ReadMode) -> Result<Mapped> {
        // The header and the trailer probe of one moment: a writer appending may commit a new
        // header (and write values over the old trailer) between the two reads, as
        // `RecordReader` allows for.
        let (header, _len, probe) = {
            let mut seen = None;
            for _ in 0..100 {
                let header = read_header(&file)?;
                let len = file.metadata()?.len();
                if len < header.data_end() {
                    return Err(ErrorKind::Truncated {
                        expected: header.size,
                        found: len.saturating_sub(header.encoded_len()),
                    }
                    .into());
                }
                let probe = locate(&file, header.data_end(), len);
                let again = read_header_again(&file)?;
                // A damaged trailer under a header that did not change is most likely a writer
                // between writing values over the old trailer and committing its new header:
                // read again after a pause long enough for its commit (a damaged file costs
                // the tries, then says what is damaged).
                let damaged = matches!(probe, Probe::Damaged(_));
                let settled = again == header && !damaged;
                seen = Some((header, len, probe));
                if settled {
                    break;
                }
                if damaged {
                    std::thread::sleep(std::time::Duration::from_micros(500));
                } else {
                    std::thread::yield_now();
                }
            }
            seen.expect("tried at least once")
        };
        let trailer = probe.into_result()?;
        let data = match mode {
            ReadMode::Mapped => {
                let size = data::to_usize(header.size)?;
                // SAFETY: memmap2 requires that the mapped bytes are not modified or truncated
                // away while mapped. The map covers the data section of the header read above.
                // A `RaggedWriter` never changes the bytes this reader uses: it writes offsets
                // only into slots past `rows + 1` of any header it committed, values and
                // trailers only after the data end, cuts the file only after the data end, and
                // grows by renaming a new file over the path (this one is left alone); writers
                // hold the file's lock. Other programs editing the file in place break this,
                // as for any map (see `ReadMode`).
                Data::Map(unsafe {
                    MmapOptions::new()
                        .offset(header.encoded_len())
                        .len(size)
                        .map(&file)?
                })
            }
            ReadMode::Positioned => Data::Positioned(file.try_clone()?),
        };
        let values = match header.values_section_header() {
            Some(vh) => {
                let pinned = PinnedFile::pin_read(file, path, &header.encode())?;
                let state = pinned.opened_state().clone();
                Some(Values::File(Section::open_in_state(
                    &vh,
                    pinned,
                    header.values_at(),
                    Some(state),
                )?))
            }
            None => None,
        };
        let m = Mapped {
            header,
            trailer,
            data,
            values,
        };
        let rows = m.header.rows;
        check_ends(m.offset(0)?, rows, Some(m.offset(rows)?), m.header.values)?;
        Ok(m)
    }

    /// [`Mapped::from_file`] of a source that is not a local file, which nobody writes while
    /// it is read (an object in a store, pinned to the one opened): one header read, positioned
    /// reads of the offsets and values.
    fn from_source(source: Shared) -> Result<Mapped> {
        let header = read_source_header(&source)?;
        let len = source.source_len()?;
        if len < header.data_end() {
            return Err(ErrorKind::Truncated {
                expected: header.size,
                found: len.saturating_sub(header.encoded_len()),
            }
            .into());
        }
        let trailer = locate(&source, header.data_end(), len).into_result()?;
        let values = match header.values_section_header() {
            Some(vh) => Some(Values::Source(Section::open_at(
                &vh,
                source.clone(),
                header.values_at(),
            )?)),
            None => None,
        };
        let m = Mapped {
            header,
            trailer,
            data: Data::Source(source),
            values,
        };
        let rows = m.header.rows;
        check_ends(m.offset(0)?, rows, Some(m.offset(rows)?), m.header.values)?;
        Ok(m)
    }

    /// The bytes of `offsets[first..first + count]`, for `first + count <= rows + 1` (the
    /// header guarantees those slots are in the data section): borrowed from the map, or read.
    fn offset_bytes(&self, first: u64, count: u64) -> Result<Cow<'_, [u8]>> {
        let at = self.header.offsets_at() + 8 * first;
        match &self.data {
            Data::Map(map) => {
                let s = (at - self.header.encoded_len()) as usize;
                Ok(Cow::Borrowed(&map[s..s + 8 * count as usize]))
            }
            Data::Positioned(file) => {
                let mut bytes = data::try_zeroed_bytes(8 * count)?;
                read_exact_at(file, &mut bytes, at)?;
                Ok(Cow::Owned(bytes))
            }
            Data::Source(source) => {
                let mut bytes = data::try_zeroed_bytes(8 * count)?;
                source.read_exact_at(&mut bytes, at)?;
                Ok(Cow::Owned(bytes))
            }
        }
    }

    /// `offsets[k]`, for `k <= rows`.
    fn offset(&self, k: u64) -> Result<u64> {
        Ok(le_u64(&self.offset_bytes(k, 1)?))
    }

    /// The packed bytes of values `start..end` (offsets already checked against the count).
    fn values_bytes(&self, start: u64, end: u64) -> Result<Cow<'_, [u8]>> {
        let h = &self.header;
        let vb = h.value_bytes();
        if let (None, Data::Map(map)) = (&self.values, &self.data) {
            let base = (h.values_at() - h.encoded_len()) as usize;
            let (s, e) = ((start * vb) as usize, (end * vb) as usize);
            return Ok(Cow::Borrowed(&map[base + s..base + e]));
        }
        // The value count is the file's word and compressed values never written read as
        // zeros, so a small file may claim more than memory holds: an error, not an abort.
        let len = (end - start).checked_mul(vb).ok_or_else(|| {
            Error::msg(format!("{} values of {vb} bytes: too large", end - start))
        })?;
        let mut out = data::try_zeroed_bytes(len)?;
        if start < end {
            match (&self.values, &self.data) {
                (Some(section), _) => {
                    let mut ranges: Vec<std::ops::Range<u64>> =
                        h.value_dims.iter().map(|&d| 0..d).collect();
                    ranges.push(start..end);
                    match section {
                        Values::File(s) => s.read_box(&ranges, &mut out)?,
                        Values::Source(s) => s.read_box(&ranges, &mut out)?,
                    }
                }
                (None, Data::Positioned(file)) => {
                    read_exact_at(file, &mut out, h.values_at() + start * vb)?;
                }
                (None, Data::Source(source)) => {
                    source.read_exact_at(&mut out, h.values_at() + start * vb)?;
                }
                (None, Data::Map(_)) => unreachable!("borrowed above"),
            }
        }
        Ok(Cow::Owned(out))
    }

    /// The bytes of row `k`, its offsets checked.
    fn row_bytes(&self, k: u64) -> Result<Cow<'_, [u8]>> {
        let h = &self.header;
        if k >= h.rows {
            return Err(ErrorKind::OutOfBounds {
                start: k,
                end: k + 1,
                len: h.rows,
            }
            .into());
        }
        // Both offsets at once: one positioned read.
        let ends = self.offset_bytes(k, 2)?;
        let (start, end) = (le_u64(&ends[..8]), le_u64(&ends[8..]));
        if start > end || end > h.values || (k == 0 && start != 0) {
            return Err(bad(format!(
                "row {k} spans values {start}..{end} of {} (offsets[{k}], offsets[{}])",
                h.values,
                k + 1
            )));
        }
        self.values_bytes(start, end)
    }

    /// `offsets[rows.start..=rows.end]`.
    fn offsets(&self, rows: std::ops::Range<u64>) -> Result<Vec<u64>> {
        let bytes = self.offset_bytes(rows.start, rows.end - rows.start + 1)?;
        Ok(bytes.chunks_exact(8).map(le_u64).collect())
    }
}

/// A ragged file of any element type, for tools (`ra info`, `ra cat`): rows as packed
/// little-endian bytes, the element described by the header and the trailer's schema.
///
/// ```
/// use rawarray_serde::{Ragged, ragged::DynRagged};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.ra");
/// Ragged::from_strs(["a", "bcd"]).write_file(&path).unwrap();
/// let d = DynRagged::open(&path).unwrap();
/// assert_eq!((d.rows(), d.header().values, d.longest_row().unwrap()), (2, 4, 3));
/// assert!(d.is_text());
/// assert_eq!(&*d.row_bytes(1).unwrap(), b"bcd");
/// ```
#[derive(Debug)]
pub struct DynRagged {
    mapped: Mapped,
}

impl DynRagged {
    /// Opens and maps a ragged file of any element type.
    pub fn open(path: impl AsRef<Path>) -> Result<DynRagged> {
        Ok(DynRagged {
            mapped: Mapped::open(path.as_ref())?,
        })
    }

    /// Opens the ragged file already open in `file` (`path` is what errors name; nothing is
    /// opened by it), reaching its data as `mode` says: a map of the data section (rows
    /// borrowed from it), or positioned reads through `file` (every row a copy; a file cut
    /// under the reader is an error, never a signal). Every read is of that open file, whatever
    /// the path names by then. The reader checks nothing between reads: a caller that must
    /// know the file was not rewritten in place meanwhile compares its state around them.
    ///
    /// ```
    /// use rawarray_serde::{Ragged, ReadMode, ragged::DynRagged};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// Ragged::from_rows([vec![1u16, 2], vec![3]]).write_file(&path).unwrap();
    /// let file = std::fs::File::open(&path).unwrap();
    /// let d = DynRagged::from_open_file(file, &path, ReadMode::Positioned).unwrap();
    /// // A new file renamed over the path does not change what `d` reads.
    /// Ragged::from_rows([vec![9u16]]).write_file(&path).unwrap();
    /// assert_eq!((d.rows(), d.mode()), (2, ReadMode::Positioned));
    /// assert_eq!(*d.row_bytes(1).unwrap(), [3, 0]);
    /// ```
    pub fn from_open_file(file: File, path: impl AsRef<Path>, mode: ReadMode) -> Result<DynRagged> {
        Ok(DynRagged {
            mapped: Mapped::from_file(file, path.as_ref(), mode)?,
        })
    }

    /// Opens the ragged file `source` holds whole (offset 0 is its first byte), a source that
    /// is not a local file and that nobody writes while it is read: an object in a store
    /// (`store::StoreSource`, feature `object_store`), bytes in memory.
    /// Rows are read by positioned reads of it (every row a copy: [`ReadMode::Positioned`]);
    /// chunked values are decoded from the chunks a row touches. Errors say what is wrong, not
    /// where: the caller names the source.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rawarray_serde::{Ragged, ReadMode, ragged::DynRagged};
    /// let bytes = Ragged::from_strs(["a", "bcd"]).to_bytes().unwrap();
    /// let d = DynRagged::from_source(Arc::new(bytes)).unwrap();
    /// assert_eq!((d.rows(), d.mode(), d.is_text()), (2, ReadMode::Positioned, true));
    /// assert_eq!(&*d.row_bytes(1).unwrap(), b"bcd");
    /// assert!(DynRagged::from_source(Arc::new(vec![0u8; 10])).is_err());
    /// ```
    pub fn from_source(source: Arc<dyn ReadAt + Send + Sync>) -> Result<DynRagged> {
        Ok(DynRagged {
            mapped: Mapped::from_source(Shared(source))?,
        })
    }

    /// How the data is reached: [`ReadMode::Mapped`] (rows of plain values borrowed from the
    /// map) or [`ReadMode::Positioned`] (copies).
    pub fn mode(&self) -> ReadMode {
        match self.mapped.data {
            Data::Map(_) => ReadMode::Mapped,
            Data::Positioned(_) | Data::Source(_) => ReadMode::Positioned,
        }
    }

    /// The section of chunked values (doc/format.md, section 10.2), read at open: its chunk
    /// map holds the codec settings and its warnings what a user should hear of; `None` for
    /// plain values, and for a file read from a source ([`DynRagged::from_source`]).
    pub fn values_section(&self) -> Option<&Section<PinnedFile>> {
        match self.mapped.values.as_ref()? {
            Values::File(s) => Some(s),
            Values::Source(_) => None,
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> u64 {
        self.mapped.header.rows
    }

    /// The header.
    pub fn header(&self) -> &RaggedHeader {
        &self.mapped.header
    }

    /// The trailer, if any.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.mapped.trailer.as_ref()
    }

    /// The element's layout: the trailer's schema, else the header's scalar.
    pub fn layout(&self) -> Option<Layout> {
        let h = &self.mapped.header;
        self.mapped
            .trailer
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

    /// Whether the rows are text.
    pub fn is_text(&self) -> bool {
        is_text_trailer(self.mapped.trailer.as_ref())
    }

    /// Row `k`'s packed little-endian bytes: borrowed from the map, or decoded from the
    /// chunks it touches when the values are chunked.
    pub fn row_bytes(&self, k: u64) -> Result<Cow<'_, [u8]>> {
        self.mapped.row_bytes(k)
    }

    /// Row `k` as text (an error naming the row if it is not UTF-8).
    pub fn row_str(&self, k: u64) -> Result<Cow<'_, str>> {
        match self.row_bytes(k)? {
            Cow::Borrowed(b) => text_of(b, k as usize).map(Cow::Borrowed),
            Cow::Owned(b) => text_of(&b, k as usize).map(|s| Cow::Owned(s.to_owned())),
        }
    }

    /// `offsets[0..=rows]` as little-endian `u64` bytes, every one checked first
    /// ([`check_offsets`], each failure naming the row): for readers that hand the whole
    /// offsets array out (the Python package's `Ragged.offsets`, a numpy view). Borrowed from
    /// the map; a `Cow` so that a layout whose offsets are not stored plain can decode them.
    ///
    /// ```
    /// use rawarray_serde::{Ragged, ragged::DynRagged};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// Ragged::from_rows([vec![7u16, 8], vec![9]]).write_file(&path).unwrap();
    /// let d = DynRagged::open(&path).unwrap();
    /// let words: Vec<u64> = d.offsets_bytes().unwrap().chunks(8)
    ///     .map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
    /// assert_eq!(words, [0, 2, 3]);
    /// assert_eq!(*d.values_bytes().unwrap(), [7, 0, 8, 0, 9, 0]);
    /// ```
    pub fn offsets_bytes(&self) -> Result<Cow<'_, [u8]>> {
        let m = &self.mapped;
        let bytes = m.offset_bytes(0, m.header.rows + 1)?;
        let offsets: Vec<u64> = bytes.chunks_exact(8).map(le_u64).collect();
        check_offsets(&offsets, m.header.values)?;
        Ok(bytes)
    }

    /// Every value, row after row, as packed little-endian bytes (`values x value bytes`; row
    /// `k` is the bytes of values `offsets[k]..offsets[k + 1]`): borrowed from the map; a `Cow`
    /// so that values stored compressed can be decoded.
    pub fn values_bytes(&self) -> Result<Cow<'_, [u8]>> {
        self.mapped.values_bytes(0, self.mapped.header.values)
    }

    /// Writes rows `rows` (a range of row indices) as a ragged file of their own, with this
    /// file's element and trailer (`ra slice`), its values plain.
    pub fn write_rows<W: Write + ?Sized>(
        &self,
        rows: std::ops::Range<u64>,
        w: &mut W,
    ) -> Result<()> {
        self.write_rows_with(rows, w, None)
    }

    /// [`DynRagged::write_rows`], the values compressed as `opts` say (`None`: plain), as
    /// `ra compress` and `ra decompress` write a ragged file.
    pub fn write_rows_with<W: Write + ?Sized>(
        &self,
        rows: std::ops::Range<u64>,
        w: &mut W,
        opts: Option<&WriteOptions>,
    ) -> Result<()> {
        let h = &self.mapped.header;
        if rows.start > rows.end || rows.end > h.rows {
            return Err(ErrorKind::OutOfBounds {
                start: rows.start,
                end: rows.end,
                len: h.rows,
            }
            .into());
        }
        let offsets = self.mapped.offsets(rows.clone())?;
        let (first, last) = (offsets[0], offsets[offsets.len() - 1]);
        if first > last || last > h.values {
            return Err(bad(format!(
                "rows {}..{} span values {first}..{last} of {} (offsets[{}], offsets[{}])",
                rows.start, rows.end, h.values, rows.start, rows.end
            )));
        }
        let shifted: Vec<u64> = offsets.iter().map(|o| o.wrapping_sub(first)).collect();
        let values = last - first;
        // Rows named by their place in this file, not in the slice.
        check_offsets(&shifted, values).map_err(|e| {
            bad(format!(
                "in rows {}..{} (row 0 is row {}): {e}",
                rows.start, rows.end, rows.start
            ))
        })?;
        let out = RaggedHeader::new(
            h.eltype,
            h.elbyte,
            h.value_dims.clone(),
            values,
            rows.end - rows.start,
            rows.end - rows.start + 1,
        )?;
        let trailer = match &self.mapped.trailer {
            Some(t) => t.clone(),
            None => text_marked(self.layout(), false),
        };
        let bytes = self.mapped.values_bytes(first, last)?;
        match opts {
            Some(opts) => write_chunked(w, &out, &shifted, &bytes, opts, &trailer),
            None => {
                write_head(w, &out, &shifted)?;
                w.write_all(&bytes)?;
                write_tail(w, &out, &trailer)
            }
        }
    }

    /// The length of the longest row, in values, checking every row's offsets.
    pub fn longest_row(&self) -> Result<u64> {
        let offsets = self.mapped.offsets(0..self.mapped.header.rows)?;
        check_offsets(&offsets, self.mapped.header.values)?;
        Ok(offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0))
    }

    /// Checks every row's offsets and, for text, every row's UTF-8, each failure naming the
    /// row: what a reader that hands out the whole offsets and values at once checks first.
    ///
    /// ```
    /// use rawarray_serde::{Ragged, ragged::DynRagged};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("t.ra");
    /// Ragged::from_strs(["ab", "c"]).write_file(&path).unwrap();
    /// assert!(DynRagged::open(&path).unwrap().check().is_ok());
    /// let at = DynRagged::open(&path).unwrap().header().values_at() as usize;
    /// let mut raw = std::fs::read(&path).unwrap();
    /// assert_eq!(&raw[at..at + 3], b"abc");
    /// raw[at] = 0xff; // row 0 is no longer UTF-8
    /// std::fs::write(&path, &raw).unwrap();
    /// let err = DynRagged::open(&path).unwrap().check().unwrap_err();
    /// assert!(err.to_string().contains("row 0 is not UTF-8"), "{err}");
    /// ```
    pub fn check(&self) -> Result<()> {
        let h = &self.mapped.header;
        let offsets = self.mapped.offsets(0..h.rows)?;
        check_offsets(&offsets, h.values)?;
        if self.is_text() {
            check_text(&offsets, &self.values_bytes()?, h.value_bytes())?;
        }
        Ok(())
    }
}
