//! Reading records without loading the file: a memory map of the data section, or positioned
//! reads where a map is not safe.

use std::borrow::Cow;
use std::fs::File;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use std::ops::Range;

use crate::data;
use crate::element::Element;
use crate::error::{ErrorKind, Result};
use crate::fileio::{header_bytes, map_data_section, reading, stable_header_bytes};
use crate::header::Header;
use crate::io::{FileState, PinnedFile};
use crate::layout::SchemaCheck;
use crate::query::{Predicate, Pruning, RowFilter};
use crate::records::RecordShape;
use crate::section::{Section as DataSection, SectionStats, Storage};
use crate::trailer::{data_end, locate, Probe, Trailer};

/// Times a reader re-reads a header that changes under it before settling for what it saw.
const SNAPSHOT_TRIES: usize = 100;
/// Pauses of 0.5 ms an open makes for a damaged trailer in a file that does not move (see
/// [`snapshot`]): a damaged file costs its opens about 4 ms, not the whole `SNAPSHOT_TRIES`.
const DAMAGED_WAITS: usize = 8;

/// How a [`RecordReader`] reaches the data section.
///
/// ```
/// use rawarray_serde::{RawArray, ReadMode, RecordReader};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.ra");
/// RawArray::from_vec((0..10u16).collect()).write_file(&path).unwrap();
/// let r = RecordReader::<u16>::open_with(&path, ReadMode::Positioned).unwrap();
/// assert_eq!(*r.slice(2..5).unwrap(), [2, 3, 4]);
/// assert_eq!(r.mode(), ReadMode::Positioned);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// A memory map of the data section (the default): views borrow the file's pages, no copy.
    ///
    /// Its limit: the map assumes nobody truncates the file below the mapped data, or rewrites
    /// those bytes in place, while the reader lives. This crate's writers never do (they hold
    /// the file's lock, write only after the data end and replace files by renaming), but
    /// another program, or a file system that does not keep an open file's pages (some network
    /// file systems), can: then views change under the reader, or the process gets `SIGBUS`.
    #[default]
    Mapped,
    /// Positioned reads (`pread`) at each access, copied into owned values: a file truncated
    /// under the reader gives an error, never a signal. For files other programs may cut or
    /// rewrite, and for network file systems.
    Positioned,
}

/// How to open a [`RecordReader`]: how it reaches the data ([`ReadMode`]) and how strictly
/// `T` must match the file's record schema ([`SchemaCheck`]).
///
/// A file whose trailer holds a schema is read only if the schema describes `T`'s elements
/// ([`Layout::check_against`](crate::Layout::check_against)): by default the fields' names,
/// types and offsets must match (a struct with renamed or reordered fields of the same size is
/// refused, naming the field), while the record's own name may differ (numpy writes none). A file without a schema is read
/// by its header alone (eltype and element size), whatever the check.
///
/// ```
/// use rawarray_serde::{ErrorKind, RaRecord, RecordOptions, RecordReadOptions, SchemaCheck};
/// #[derive(RaRecord, Clone, Debug, PartialEq)]
/// struct Point { x: f32, y: f32 }
/// #[derive(RaRecord, Clone, Debug, PartialEq)]
/// struct Swapped { y: f32, x: f32 }
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("p.ra");
/// let mut w = RecordOptions::new().create::<Point>(&path).unwrap();
/// w.append(&Point { x: 1.0, y: 2.0 }).unwrap();
/// w.finish().unwrap();
///
/// let err = RecordReadOptions::new().open::<Swapped>(&path).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::SchemaMismatch { .. }), "{err}");
/// // Reinterpreting the bytes on purpose:
/// let r = RecordReadOptions::new().schema_check(SchemaCheck::Off).open::<Swapped>(&path).unwrap();
/// assert_eq!(r.get(0).unwrap(), Some(Swapped { y: 1.0, x: 2.0 }));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RecordReadOptions {
    mode: ReadMode,
    schema: SchemaCheck,
}

impl RecordReadOptions {
    /// The defaults: [`ReadMode::Mapped`], [`SchemaCheck::Fields`].
    pub fn new() -> RecordReadOptions {
        RecordReadOptions::default()
    }

    /// How the data is reached.
    #[must_use]
    pub fn mode(mut self, mode: ReadMode) -> RecordReadOptions {
        self.mode = mode;
        self
    }

    /// How strictly `T` must match the file's record schema.
    #[must_use]
    pub fn schema_check(mut self, check: SchemaCheck) -> RecordReadOptions {
        self.schema = check;
        self
    }

    /// Opens a file of records of `T` with these options.
    pub fn open<T: Element + Clone>(&self, path: impl AsRef<Path>) -> Result<RecordReader<T>> {
        reading(path.as_ref(), |path| RecordReader::open_options(path, self))
    }
}

/// The data section, as the reader reaches it.
#[derive(Debug)]
enum Section {
    /// A plain section's bytes, mapped: records are borrowed from it.
    Mapped(Mmap),
    /// Any section read through the file it opened (positioned reads, checked against the file
    /// being rewritten in place): a plain one's runs, a whole-LZ4 one decoded once, a chunked
    /// one's blocks (only those of the chunks the records lie in, with a small cache).
    Read(Box<DataSection<PinnedFile>>),
}

/// A `.ra` file's records through a memory map (or positioned reads, [`ReadMode`]): opening
/// costs O(1) whatever the file's size, and only the pages touched are read, so files larger
/// than memory work.
///
/// Records run along the last dim (see [`RecordWriter`](crate::RecordWriter)); each is
/// [`record_len`](RecordReader::record_len) values of `T`. Access returns a [`Cow`]: a
/// borrowed view of the mapped bytes, without copying, for plain-old-data elements of a
/// little-endian file whose bytes are aligned for `T`
/// ([`Element::cast_pod_slice`]); a decoded copy otherwise.
///
/// The reader sees the file as its header was when it was opened: a writer appending at the
/// same time changes nothing it sees. The trailer is read once, at open. After open the reader
/// touches no byte past the data end, so writers may cut or rewrite what follows.
///
/// Like every memory map, this one assumes that nobody modifies the mapped bytes in place or
/// truncates the file below them while it is open. This crate's writers never do (they only
/// write after the data end, and replace files by renaming a new one over them); another program
/// doing so could make the views change under you, or the process receive `SIGBUS`. Open with
/// [`ReadMode::Positioned`] where that may happen.
///
/// ```
/// use std::borrow::Cow;
/// use rawarray_serde::{RecordReader, RawArray};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.ra");
/// RawArray::from_vec((0..1000u32).collect()).write_file(&path).unwrap();
///
/// let r = RecordReader::<u32>::open(&path).unwrap();
/// assert_eq!(r.len(), 1000);
/// assert_eq!(r.get(7).unwrap(), Some(7));
/// let some = r.slice(10..13).unwrap();
/// assert_eq!(*some, [10, 11, 12]);
/// assert!(matches!(some, Cow::Borrowed(_))); // zero-copy: u32 data is 8-byte aligned here
/// assert_eq!(r.iter().map(|rec| rec.unwrap()[0]).sum::<u32>(), 499_500);
/// assert_eq!(r.get(1000).unwrap(), None);
/// ```
#[derive(Debug)]
pub struct RecordReader<T> {
    /// The path it was opened by, which its errors name.
    path: PathBuf,
    section: Section,
    header: Header,
    shape: RecordShape,
    len: usize,
    trailer: Option<Trailer>,
    trailer_error: Option<String>,
    notes: Vec<String>,
    _element: PhantomData<fn() -> T>,
}

impl<T: Element + Clone> RecordReader<T> {
    /// Opens a file of records of `T`: reads the header and the trailer, and maps the data
    /// ([`ReadMode::Mapped`]).
    ///
    /// The element type must match the header (else an error naming both), and the file's
    /// record schema, if it has one, `T`'s fields (see [`RecordReadOptions`]); the record dims
    /// are whatever the file has. LZ4-compressed files (flag bit 1) are refused; a chunked
    /// file (flag bit 2) is read through the section decoder whatever the [`ReadMode`]: a
    /// record decodes only the blocks of its chunk, with positioned reads (never a map), into
    /// owned values, and [`mode`](RecordReader::mode) says [`ReadMode::Positioned`].
    ///
    /// ```
    /// use rawarray_serde::{Codec, RawArray, ReadMode, RecordReader, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let a = RawArray::from_vec((0..5000u32).collect());
    /// a.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![1000])).unwrap();
    /// let r = RecordReader::<u32>::open(&path).unwrap();
    /// assert_eq!(r.get(4321).unwrap(), Some(4321));
    /// assert_eq!(*r.slice(998..1002).unwrap(), [998, 999, 1000, 1001]);
    /// assert_eq!(r.mode(), ReadMode::Positioned);
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<RecordReader<T>> {
        RecordReadOptions::new().open(path)
    }

    /// Opens a file of records of `T`, reaching its data as `mode` says. Takes no lock.
    pub fn open_with(path: impl AsRef<Path>, mode: ReadMode) -> Result<RecordReader<T>> {
        RecordReadOptions::new().mode(mode).open(path)
    }

    fn open_options(path: &Path, opts: &RecordReadOptions) -> Result<RecordReader<T>> {
        let mode = opts.mode;
        let file = File::open(path)?;
        let Snapshot {
            header,
            probe,
            state,
        } = snapshot(&file)?;
        let shape = RecordShape::of::<T>(&header, None)?;
        let len = data::to_usize(*header.dims.last().expect("checked by RecordShape"))?;
        let (trailer, trailer_error) = match probe.into_result() {
            Ok(t) => (t, None),
            // A damaged trailer hides the schema: only a reader that checks none goes on.
            Err(e) if opts.schema == SchemaCheck::Off => (None, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        let notes = match trailer.as_ref().and_then(|t| t.schema.as_ref()) {
            Some(schema) => T::layout().check_against(schema, opts.schema)?,
            None => Vec::new(),
        };
        data::to_usize(header.data_len())?;
        let section = if mode == ReadMode::Positioned
            || Storage::of(&header).is_coded()
            || header.size == 0
        {
            let pinned = PinnedFile::pin_snapshot(file, path, &header, state)?;
            let state = pinned.opened_state().clone();
            // The pinned file must hold the data its header claims, as a map's must: a file
            // cut short (being rewritten in place, truncated first) is refused here, so that
            // a read that later finds bytes missing finds a file whose state moved.
            header.check_input_len(state.len())?;
            Section::Read(Box::new(DataSection::open_in_state(
                &header,
                pinned,
                header.encoded_len() as u64,
                Some(state),
            )?))
        } else {
            // SAFETY: memmap2 requires that the mapped bytes are not modified or truncated away
            // while mapped. The map covers the data section of the header read above and nothing
            // else. This crate never changes those bytes: a `RecordWriter` writes only at or after
            // the data end of the header it last committed (never before ours), `finish`, `open`
            // and `recover` cut the file only after the data end, and replacing a file
            // (`RecordOptions::create`, `write_file`) renames a new file over the path, leaving
            // this one alone; and writers hold the file's lock, so no stale writer can cut it.
            // Other programs editing the data in place break this, as they would for any mapped
            // file: `ReadMode::Positioned` is the mode for those files.
            let map = unsafe { map_data_section(&file, &header)? };
            Section::Mapped(map)
        };
        Ok(RecordReader {
            path: path.to_path_buf(),
            section,
            header,
            shape,
            len,
            trailer,
            trailer_error,
            notes,
            _element: PhantomData,
        })
    }

    /// Number of records (the last dim, as the header said at open).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The dims of one record, in values of `T` (empty for records of one value).
    pub fn record_dims(&self) -> &[u64] {
        &self.shape.dims
    }

    /// Values of `T` per record.
    pub fn record_len(&self) -> usize {
        self.shape.values
    }

    /// The header as it was at open.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The trailer read at open, if the file has one.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Why the file's trailer block could not be read, if so. Only a reader opened with
    /// [`SchemaCheck::Off`] opens such a file (the others refuse it, as its schema is lost).
    pub fn trailer_error(&self) -> Option<&str> {
        self.trailer_error.as_deref()
    }

    /// What the schema check allowed but noted at open: a record name or a logical marker
    /// (`bool`) that differs between the file's schema and `T`'s.
    pub fn schema_notes(&self) -> &[String] {
        &self.notes
    }

    /// What the section decoder of a chunked file has read and decoded so far (`None` for a
    /// file that is not chunked): a record costs the blocks of its chunk it lies in, once.
    ///
    /// ```
    /// use rawarray_serde::{Codec, RawArray, RecordReader, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let a = RawArray::from_vec((0..5000u64).collect());
    /// a.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![1000])).unwrap();
    /// let r = RecordReader::<u64>::open(&path).unwrap();
    /// assert_eq!(r.get(2500).unwrap(), Some(2500));
    /// assert_eq!(r.get(2501).unwrap(), Some(2501)); // the same block, from the cache
    /// let s = r.section_stats().unwrap();
    /// assert_eq!((s.chunks_read, s.blocks_decoded), (2, 1));
    /// ```
    pub fn section_stats(&self) -> Option<SectionStats> {
        match &self.section {
            Section::Read(s) if s.chunk_map().is_some() => Some(s.stats()),
            _ => None,
        }
    }

    /// How the data is reached.
    pub fn mode(&self) -> ReadMode {
        match (&self.section, self.header.size) {
            (Section::Read(_), s) if s > 0 => ReadMode::Positioned,
            _ => ReadMode::Mapped,
        }
    }

    /// The data section's bytes as stored (little- or big-endian, as the header says):
    /// borrowed from the map, or read now with [`ReadMode::Positioned`]. A chunked section's
    /// bytes are its decoded data.
    pub fn data(&self) -> Result<Cow<'_, [u8]>> {
        self.bytes(0, data::to_usize(self.header.data_len())?)
    }

    /// `len` data bytes from `start`.
    fn bytes(&self, start: usize, len: usize) -> Result<Cow<'_, [u8]>> {
        match &self.section {
            Section::Mapped(map) => Ok(Cow::Borrowed(&map[start..start + len])),
            Section::Read(section) => reading(&self.path, |_| {
                let record = self.shape.bytes as usize;
                if len == 0 || record == 0 {
                    return Ok(Cow::Owned(Vec::new()));
                }
                // Callers ask for whole records: the last dim's range, every other dim whole.
                let (first, count) = ((start / record) as u64, (len / record) as u64);
                let (_, lead) = self
                    .header
                    .dims
                    .split_last()
                    .expect("checked by RecordShape");
                let ranges: Vec<Range<u64>> = lead
                    .iter()
                    .map(|&d| 0..d)
                    .chain(std::iter::once(first..first + count))
                    .collect();
                let mut buf = data::try_zeroed_bytes(len as u64)?;
                section.read_box(&ranges, &mut buf)?;
                Ok(Cow::Owned(buf))
            }),
        }
    }

    /// Record `index`, `None` past the end. For records of one value of `T` (the usual case:
    /// a derived struct, or a scalar per record); records of several values (record dims) are
    /// read with [`RecordReader::slice`]`(index..=index)`, and their stored bytes with
    /// [`RecordReader::get_bytes`].
    ///
    /// ```
    /// use rawarray_serde::{RawArray, RecordReader};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// RawArray::from_vec(vec![1.5f64, 2.5]).write_file(&path).unwrap();
    /// let r = RecordReader::<f64>::open(&path).unwrap();
    /// assert_eq!(r.get(1).unwrap(), Some(2.5));
    /// assert_eq!(r.get(2).unwrap(), None);
    /// assert_eq!(*r.get_bytes(1).unwrap(), 2.5f64.to_le_bytes());
    /// ```
    pub fn get(&self, index: usize) -> Result<Option<T>> {
        if self.shape.values != 1 {
            return Err(ErrorKind::Unsupported(format!(
                "a record of this file is {} values of {} (record dims {:?}): read it with \
                 slice(index..=index)",
                self.shape.values,
                std::any::type_name::<T>(),
                self.shape.dims
            ))
            .into());
        }
        if index >= self.len {
            return Ok(None);
        }
        Ok(self.slice(index..=index)?.first().cloned())
    }

    /// The stored bytes of record `index` (little- or big-endian, as the header says).
    pub fn get_bytes(&self, index: usize) -> Result<Cow<'_, [u8]>> {
        let (start, _) = self.bounds(index..=index)?;
        let record_bytes = self.shape.bytes as usize;
        self.bytes(start * record_bytes, record_bytes)
    }

    /// The values of the records in `range`, one record after the other.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<Cow<'_, [T]>> {
        let (start, end) = self.bounds(range)?;
        let per = self.shape.values;
        let record_bytes = self.shape.bytes as usize;
        let bytes = self.bytes(start * record_bytes, (end - start) * record_bytes)?;
        if let (false, Cow::Borrowed(bytes)) = (self.header.is_big_endian(), &bytes) {
            if let Some(values) = T::cast_pod_slice(bytes) {
                return Ok(Cow::Borrowed(values));
            }
        }
        data::decode_values(&bytes, self.header.is_big_endian())
            .map(Cow::Owned)
            .map_err(|e| data::shift_index(e, (start * per) as u64))
    }

    /// Every record in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Result<Cow<'_, [T]>>> + '_ {
        (0..self.len).map(move |i| self.slice(i..=i))
    }

    /// The records that match `predicate` (on the fields of `T`, by name: see
    /// [`crate::query`]), read from only the chunks whose statistics allow a match: a chunked
    /// file written with statistics (the default) skips the others unread; any other file is
    /// read whole. The records are tested as they are read, a piece of the ranges at a time,
    /// so memory stays near one piece (about 4 MiB of records) whatever the file's size.
    /// [`RecordQuery::pruning`] says which records are read.
    ///
    /// Records must be one element each (no record dims); a column `T` does not have, or
    /// cannot compare, is an error naming it.
    ///
    /// ```
    /// use rawarray_serde::query::Predicate;
    /// use rawarray_serde::{Codec, RaRecord, RecordOptions, RecordReader};
    /// #[derive(RaRecord, Clone, Debug)]
    /// struct Body { step: u32, body: u16, x: f32 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let mut w = RecordOptions::new().codec(Codec::Zstd).chunk_records(64).create::<Body>(&path).unwrap();
    /// for step in 0..100 {
    ///     for body in 0..16 {
    ///         w.append(&Body { step, body, x: 0.0 }).unwrap();
    ///     }
    /// }
    /// w.finish().unwrap();
    /// let r = RecordReader::<Body>::open(&path).unwrap();
    /// let q = r.query(&(Predicate::ge("step", 90) & Predicate::eq("body", 3u16))).unwrap();
    /// assert_eq!(q.pruning().ranges(), [1408..1600]); // 3 of 25 chunks
    /// assert_eq!(q.map(|b| b.unwrap().step).collect::<Vec<_>>(), (90..100).collect::<Vec<_>>());
    /// assert!(r.query(&Predicate::eq("mass", 1)).is_err());
    /// ```
    pub fn query(&self, predicate: &Predicate) -> Result<RecordQuery<'_, T>> {
        if self.shape.values != 1 {
            return Err(ErrorKind::BadFilter(format!(
                "a record of this file is {} values of {} (record dims {:?}); filters test \
                 records of one element",
                self.shape.values,
                std::any::type_name::<T>(),
                self.shape.dims
            ))
            .into());
        }
        let filter = RowFilter::new(predicate, &T::layout())?;
        let map = match &self.section {
            Section::Read(s) => s.chunk_map(),
            Section::Mapped(_) => None,
        };
        let mut pruning = Pruning::new(&filter, &self.header, map);
        pruning.clip(self.len as u64);
        Ok(RecordQuery {
            reader: self,
            filter,
            pruning,
            range: 0,
            next: 0,
            ready: Vec::new().into_iter(),
        })
    }

    fn bounds(&self, range: impl RangeBounds<usize>) -> Result<(usize, usize)> {
        // Wider than usize, so that `..=usize::MAX` ends one past the last index rather than at
        // a saturated one: a file of empty records can hold usize::MAX of them.
        let start = match range.start_bound() {
            Bound::Included(&s) => s as u128,
            Bound::Excluded(&s) => s as u128 + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e as u128 + 1,
            Bound::Excluded(&e) => e as u128,
            Bound::Unbounded => self.len as u128,
        };
        if start > end || end > self.len as u128 {
            let to_u64 = |i: u128| u64::try_from(i).unwrap_or(u64::MAX);
            return Err(ErrorKind::OutOfBounds {
                start: to_u64(start),
                end: to_u64(end),
                len: self.len as u64,
            }
            .into());
        }
        Ok((start as usize, end as usize))
    }
}

/// Records of the bytes to read at a time by [`RecordQuery`].
const QUERY_PIECE_BYTES: usize = 4 << 20;

/// The records of a [`RecordReader`] that match a predicate ([`RecordReader::query`]), in
/// file order.
#[derive(Debug)]
pub struct RecordQuery<'a, T> {
    reader: &'a RecordReader<T>,
    filter: RowFilter,
    pruning: Pruning,
    /// The range of `pruning` being read, and the next record of it.
    range: usize,
    next: u64,
    ready: std::vec::IntoIter<T>,
}

impl<T> RecordQuery<'_, T> {
    /// The records read (the others' chunks were skipped by their statistics).
    pub fn pruning(&self) -> &Pruning {
        &self.pruning
    }

    /// The filter, resolved against the records' fields.
    pub fn filter(&self) -> &RowFilter {
        &self.filter
    }
}

impl<T: Element + Clone> RecordQuery<'_, T> {
    /// The matching records of the next piece of the ranges; `None` when all were read.
    fn next_piece(&mut self) -> Option<Result<Vec<T>>> {
        let range = self.pruning.ranges().get(self.range)?.clone();
        let start = self.next.max(range.start);
        let rb = self.reader.shape.bytes as usize;
        let per = (QUERY_PIECE_BYTES / rb.max(1)).max(1) as u64;
        let end = (start + per).min(range.end);
        if end == range.end {
            self.range += 1;
        }
        self.next = end;
        let big_endian = self.reader.header.is_big_endian();
        let piece = || -> Result<Vec<T>> {
            let bytes = self
                .reader
                .bytes(start as usize * rb, (end - start) as usize * rb)?;
            let mask = self.filter.mask(&bytes, big_endian);
            let values: Vec<T> =
                data::decode_values(&bytes, big_endian).map_err(|e| data::shift_index(e, start))?;
            Ok(values
                .into_iter()
                .zip(mask)
                .filter_map(|(v, keep)| keep.then_some(v))
                .collect())
        };
        Some(piece())
    }
}

impl<T: Element + Clone> Iterator for RecordQuery<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if let Some(v) = self.ready.next() {
                return Some(Ok(v));
            }
            match self.next_piece()? {
                Ok(values) => self.ready = values.into_iter(),
                Err(e) => {
                    // One error ends the query.
                    self.range = self.pruning.ranges().len();
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What [`snapshot`] takes of a file at open.
pub(crate) struct Snapshot {
    /// The header.
    pub(crate) header: Header,
    /// The trailer probe for its data end.
    pub(crate) probe: Probe,
    /// The file's state of that moment (its `fstat` between two reads of that header), for
    /// the reader to pin ([`PinnedFile::pin_snapshot`]) without taking it again; `None` if the
    /// header kept changing.
    pub(crate) state: Option<FileState>,
}

/// A header and the trailer probe for its data end, taken while the header did not change, so
/// that both belong to the same moment of a file a writer may be appending to. A chunked data
/// section (flag bit 2) is accepted: both callers read it through the section decoder.
pub(crate) fn snapshot(file: &File) -> Result<Snapshot> {
    let mut seen = None;
    let mut waits = 0;
    for tries_left in (0..SNAPSHOT_TRIES).rev() {
        let bytes = stable_header_bytes(file)?;
        let header = Header::decode_any(&bytes)?;
        let meta = file.metadata()?;
        header.check_input_len(meta.len())?;
        let probe = locate(file, data_end(&header), meta.len());
        // One read: equal to the header two reads agreed on, it is that header.
        let again = header_bytes(file)?;
        let damaged = matches!(probe, Probe::Damaged(_));
        // A damaged trailer under a header that did not change is a writer between writing
        // records over the old trailer and committing its new header. This crate's writers
        // first append a spare copy of the trailer past the new records, so the file grew
        // since the `fstat` the probe used: it is probed again at once. A file that did not
        // move may be another writer's (or damaged): a few short pauses for its commit
        // (`DAMAGED_WAITS`, about 4 ms), then the damage is the file's and is reported.
        let moved = damaged && {
            let now = file.metadata()?;
            now.len() != meta.len() || now.modified().ok() != meta.modified().ok()
        };
        let settled = !damaged || (!moved && waits == DAMAGED_WAITS) || tries_left == 0;
        if again == bytes && settled {
            // The `fstat` then the header, as `FileState::of` takes a state.
            let state = Some(FileState::from_meta(&meta, again));
            return Ok(Snapshot {
                header,
                probe,
                state,
            });
        }
        seen = Some((header, probe));
        if damaged && !moved && again == bytes {
            waits += 1;
            std::thread::sleep(std::time::Duration::from_micros(500));
        } else {
            std::thread::yield_now();
        }
    }
    let (header, probe) = seen.expect("SNAPSHOT_TRIES > 0");
    Ok(Snapshot {
        header,
        probe,
        state: None,
    })
}
