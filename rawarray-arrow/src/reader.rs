//! A `.ra` file as a table: [`RaTable`] reads its header, trailer and schema once, and hands
//! out its rows as Arrow record batches, streamed ([`RaTable::batches`]) or whole.

use rawarray_serde::section::{Holds, Storage};
use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use memmap2::{Mmap, MmapOptions};
use rawarray_serde::codec::ChunkMap;
use rawarray_serde::query::{Predicate, Pruning, RowFilter};
use rawarray_serde::ragged::DynRagged;
use rawarray_serde::{ArrayReader, ElType, Header, IoStats, Layout, Trailer};

use crate::columns::{column, gather};
use crate::error::{Error, Result};
use crate::schema::{arrow_schema, DIMS_KEY, PARAMS_KEY, SCHEMA_KEY};

/// How many rows a batch holds unless told otherwise.
pub const DEFAULT_BATCH_ROWS: usize = 1 << 16;

/// Where the rows' bytes come from.
enum Source {
    /// The data section of a file stored plain, mapped: batches are slices of the map (no copy
    /// for a little-endian plain array), and the map lives as long as any of them.
    Mapped(Arc<Mmap>),
    /// A compressed or chunked data section, decoded block by block along the last dim; or any
    /// data section of a file that is not local (an object in a store), read block by block.
    Decoded(Box<dyn BlockSource>),
    /// No data at all.
    Empty,
    /// A ragged file (flag bit 3): one `LargeList` (or, for text, `LargeUtf8`) row per row.
    Ragged(Box<DynRagged>),
}

struct Inner {
    path: PathBuf,
    header: Header,
    layout: Layout,
    schema: SchemaRef,
    trailer: Option<Trailer>,
    source: Source,
    rows: u64,
    /// Rows per index of the last dim: a decoded batch is whole steps of it.
    rows_per_step: u64,
}

/// A `.ra` file opened as a table: one row per element of its schema (per record of a record
/// file, whatever its record dims), one column per field; a file without a schema is one
/// column of its scalars ([`crate::VALUES_COLUMN`]). The type mapping is [`crate::schema`]'s.
///
/// A file stored plain is mapped: like every map, it assumes that nobody rewrites the mapped
/// bytes in place while it is open (appending record writers write after them). Big-endian
/// files are swapped into little-endian batches.
///
/// ```
/// use rawarray_serde::{RaRecord, RecordWriter};
/// #[derive(RaRecord, Clone)]
/// struct Body { step: u32, energy: f64, pos: [f32; 3] }
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("run.ra");
/// let mut w = RecordWriter::<Body>::create(&path, serde_json::json!({"dt": 0.5})).unwrap();
/// for step in 0..10 { w.append(&Body { step, energy: step as f64, pos: [0.0; 3] }).unwrap(); }
/// w.finish().unwrap();
///
/// let table = rawarray_arrow::RaTable::open(&path).unwrap();
/// assert_eq!(table.rows(), 10);
/// let names: Vec<_> = table.schema().fields().iter().map(|f| f.name().clone()).collect();
/// assert_eq!(names, ["step", "energy", "pos"]);
/// let batches: Vec<_> = table.batches(4).collect::<Result<_, _>>().unwrap();
/// assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [4, 4, 2]);
/// assert_eq!(table.schema().metadata()["rawarray.params"], r#"{"dt":0.5}"#);
/// ```
#[derive(Clone)]
pub struct RaTable(Arc<Inner>);

/// What the header and trailer of an array file say of its table: the layout of a row, the
/// rows, the schema.
struct Shape {
    layout: Layout,
    schema: SchemaRef,
    rows: u64,
    rows_per_step: u64,
}

impl Shape {
    fn of(path: &Path, header: &Header, trailer: Option<&Trailer>) -> Result<Shape> {
        let schema = trailer.and_then(|t| t.schema.as_ref());
        let layout = match schema {
            Some(s) if s.check_header(header).is_ok() => s.clone(),
            _ if header.eltype != ElType::User => Layout::scalar(header.eltype, header.elbyte),
            _ => {
                return Err(Error::NoTable(format!(
                    "{}: {} elements without a valid record schema in the trailer: nothing says \
                     what their columns are",
                    path.display(),
                    header.type_label()
                )))
            }
        };
        let row_bytes = layout.size();
        let data_len = header.data_len();
        if row_bytes == 0 || !data_len.is_multiple_of(row_bytes) {
            return Err(Error::NoTable(format!(
                "{}: {data_len} data bytes are not whole elements of the schema's {row_bytes} bytes",
                path.display()
            )));
        }
        let rows = data_len / row_bytes;
        let step_bytes = match header.dims.split_last() {
            Some((_, lead)) => lead.iter().product::<u64>() * header.elbyte,
            None => data_len,
        };
        // A decoded batch is whole steps of the last dim; where a row does not divide a step
        // (a schema spanning every dim), the one batch is the whole array.
        let rows_per_step = if step_bytes >= row_bytes && step_bytes.is_multiple_of(row_bytes) {
            step_bytes / row_bytes
        } else {
            rows.max(1)
        };
        let mut metadata = HashMap::from([
            (
                SCHEMA_KEY.to_string(),
                serde_json::to_string(&layout).map_err(|e| Error::NoTable(e.to_string()))?,
            ),
            (
                DIMS_KEY.to_string(),
                serde_json::to_string(&header.dims).map_err(|e| Error::NoTable(e.to_string()))?,
            ),
        ]);
        if let Some(params) = trailer.map(|t| &t.params).filter(|p| !p.is_null()) {
            metadata.insert(PARAMS_KEY.to_string(), params.to_string());
        }
        let schema = Arc::new(arrow_schema(&layout)?.with_metadata(metadata));
        Ok(Shape {
            layout,
            schema,
            rows,
            rows_per_step,
        })
    }

    fn table(
        self,
        path: &Path,
        header: Header,
        trailer: Option<Trailer>,
        source: Source,
    ) -> RaTable {
        RaTable(Arc::new(Inner {
            path: path.to_path_buf(),
            header,
            layout: self.layout,
            schema: self.schema,
            trailer,
            source,
            rows: self.rows,
            rows_per_step: self.rows_per_step,
        }))
    }
}

/// The blocks of a `.ra` array, whatever holds it: what a [`RaTable`] reads a data section
/// through. [`ArrayReader`] is one (a local file); `rawarray-sql` makes one of rawarray-serde's
/// `StoreArrayReader` (an object in a store, read by ranged requests) for URLs, so that a
/// table over a URL is read as one over a file is, block by block. Reads block: a source over
/// an async reader waits for it on a runtime of its own.
pub trait BlockSource: Send + Sync {
    /// The array's header, as read at open.
    fn header(&self) -> &Header;
    /// Its trailer, if it has a valid one.
    fn trailer(&self) -> Option<&Trailer>;
    /// Why the bytes after the data look like a trailer but cannot be read, if so.
    fn trailer_error(&self) -> Option<&str>;
    /// The chunk map of a chunked section (`None` otherwise): its statistics prune a scan.
    fn chunk_map(&self) -> Option<&ChunkMap>;
    /// The block `ranges` (one range per dim of the header), as
    /// [`ArrayReader::read_subset_bytes`] reads it: its header and its little-endian bytes.
    fn read_subset_bytes(&self, ranges: &[Range<u64>])
        -> rawarray_serde::Result<(Header, Vec<u8>)>;
    /// The reads made so far and the bytes they brought.
    fn io_stats(&self) -> IoStats;
    /// The bytes `fields` (`(offset, width)` in an element) of the block `ranges`, one buffer
    /// per field, as [`ArrayReader::read_subset_fields`] reads them; `None` (the default) when
    /// the source decodes whole elements only.
    fn read_subset_fields(
        &self,
        _ranges: &[Range<u64>],
        _fields: &[(usize, usize)],
    ) -> rawarray_serde::Result<Option<Vec<Vec<u8>>>> {
        Ok(None)
    }
}

impl BlockSource for ArrayReader {
    fn header(&self) -> &Header {
        ArrayReader::header(self)
    }
    fn trailer(&self) -> Option<&Trailer> {
        ArrayReader::trailer(self)
    }
    fn trailer_error(&self) -> Option<&str> {
        ArrayReader::trailer_error(self)
    }
    fn chunk_map(&self) -> Option<&ChunkMap> {
        self.section().chunk_map()
    }
    fn read_subset_bytes(
        &self,
        ranges: &[Range<u64>],
    ) -> rawarray_serde::Result<(Header, Vec<u8>)> {
        ArrayReader::read_subset_bytes(self, ranges)
    }
    fn io_stats(&self) -> IoStats {
        ArrayReader::io_stats(self)
    }
    fn read_subset_fields(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> rawarray_serde::Result<Option<Vec<Vec<u8>>>> {
        ArrayReader::read_subset_fields(self, ranges, fields)
    }
}

impl RaTable {
    /// Opens a `.ra` file: reads and checks its header and trailer, and maps or opens its
    /// data section. A file of user-defined elements without a valid schema is refused: nothing
    /// says what its columns are.
    pub fn open(path: impl AsRef<Path>) -> Result<RaTable> {
        let path = path.as_ref();
        let named = |e: rawarray_serde::Error| -> Error {
            match e.path() {
                Some(_) => Error::Ra(e),
                None => Error::InFile {
                    path: path.to_path_buf(),
                    source: e,
                },
            }
        };
        let file = File::open(path).map_err(|e| named(e.into()))?;
        if Holds::of_open_file(&file).map_err(named)? == Holds::Rows {
            return RaTable::open_ragged(file, path);
        }
        let file_len = file.metadata().map_err(|e| named(e.into()))?.len();
        let header = Header::read_from_any(&mut BufReader::new(&file)).map_err(named)?;
        header.check_input_len(file_len).map_err(named)?;
        let trailer = match Trailer::read_open_file(&file) {
            Ok(t) => t,
            Err(e) if header.eltype == ElType::User => return Err(named(e)),
            // Numbers are numbers without their trailer: convert them, without parameters.
            Err(_) => None,
        };
        let shape = Shape::of(path, &header, trailer.as_ref())?;
        let source = if shape.rows == 0 {
            if Storage::of(&header).is_coded() {
                // No rows, but a coded section is still decoded once: damaged, it is refused
                // here as every other reader of the file refuses it.
                ArrayReader::from_open_file(file, path)?
                    .section()
                    .read_all_into(&mut [])
                    .map_err(named)?;
            }
            Source::Empty
        } else if Storage::of(&header).is_coded() {
            Source::Decoded(Box::new(ArrayReader::from_open_file(file, path)?))
        } else {
            let len = usize::try_from(header.size).map_err(|_| {
                Error::NoTable(format!(
                    "{}: the data does not fit in the address space",
                    path.display()
                ))
            })?;
            // SAFETY: memmap2 requires that the mapped bytes are neither modified nor truncated
            // away while mapped. The map covers the data section of the header just read,
            // which check_input_len found the file to hold; writers of this crate append after
            // it or rename a new file over the path, and RaTable's documentation says that a
            // file rewritten in place by another program must not be opened this way (as every
            // map of this workspace does).
            let map = unsafe {
                MmapOptions::new()
                    .offset(header.encoded_len() as u64)
                    .len(len)
                    .map(&file)
            }
            .map_err(|e| named(e.into()))?;
            Source::Mapped(Arc::new(map))
        };
        Ok(shape.table(path, header, trailer, source))
    }

    /// A table read through `source`, a `.ra` array that is not a local file (an object in a
    /// store, which `rawarray-sql` reads URLs through), its errors naming it by `name` (a URL):
    /// every batch is one block read of it ([`BlockSource::read_subset_bytes`]), of the rows
    /// the batch holds, and a filter's pruning reads the chunk statistics of
    /// [`BlockSource::chunk_map`] as it reads a local file's.
    ///
    /// ```
    /// use rawarray_serde::{ArrayReader, RaRecord, RecordWriter};
    /// #[derive(RaRecord, Clone)]
    /// struct Body { step: u32, energy: f64 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let mut w = RecordWriter::<Body>::create(&path, ()).unwrap();
    /// for step in 0..10 { w.append(&Body { step, energy: step as f64 }).unwrap(); }
    /// w.finish().unwrap();
    ///
    /// // A local file's reader is a block source too.
    /// let reader = ArrayReader::open(&path).unwrap();
    /// let table = rawarray_arrow::RaTable::from_blocks("mem://run.ra", Box::new(reader)).unwrap();
    /// assert_eq!(table.rows(), 10);
    /// let rows: usize = table.batches(3).map(|b| b.unwrap().num_rows()).sum();
    /// assert_eq!(rows, 10);
    /// assert_eq!(table.io_stats().unwrap().bytes, 10 * 12); // every row's 12 bytes, once
    /// ```
    pub fn from_blocks(name: impl Into<PathBuf>, source: Box<dyn BlockSource>) -> Result<RaTable> {
        let path = name.into();
        let header = source.header().clone();
        if header.eltype == ElType::User && source.trailer().is_none() {
            let why = source.trailer_error().unwrap_or("it has no trailer");
            return Err(Error::NoTable(format!(
                "{}: {} elements without a record schema ({why}): nothing says what their \
                 columns are",
                path.display(),
                header.type_label()
            )));
        }
        let trailer = source.trailer().cloned();
        let shape = Shape::of(&path, &header, trailer.as_ref())?;
        let source = if shape.rows == 0 {
            Source::Empty
        } else {
            Source::Decoded(source)
        };
        Ok(shape.table(&path, header, trailer, source))
    }

    /// A ragged file: one row per row, one column [`crate::VALUES_COLUMN`] of `LargeList` of
    /// its values (text rows: `LargeUtf8`).
    fn open_ragged(file: File, path: &Path) -> Result<RaTable> {
        let ragged =
            DynRagged::from_open_file(file, path, rawarray_serde::records::ReadMode::Mapped)?;
        RaTable::from_ragged(path, ragged)
    }

    /// A table over a ragged file opened by the caller, its errors naming it by `name`: one
    /// row per row, one column [`crate::VALUES_COLUMN`] of `LargeList` of its values (text
    /// rows: `LargeUtf8`), as [`RaTable::open`] makes of a ragged file. `rawarray-sql` reads a
    /// ragged object at a URL so ([`DynRagged::from_source`] over rawarray-serde's
    /// `StoreSource`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rawarray_serde::{ragged::DynRagged, Ragged};
    /// let bytes = Ragged::from_rows([vec![1u16, 2], vec![3]]).to_bytes().unwrap();
    /// let ragged = DynRagged::from_source(Arc::new(bytes)).unwrap();
    /// let table = rawarray_arrow::RaTable::from_ragged("mem://rows.ra", ragged).unwrap();
    /// assert_eq!(table.rows(), 2);
    /// assert_eq!(table.read_all().unwrap().num_rows(), 2);
    /// ```
    pub fn from_ragged(name: impl Into<PathBuf>, ragged: DynRagged) -> Result<RaTable> {
        let path = name.into();
        let path = path.as_path();
        let h = ragged.header().clone();
        let mut layout = ragged.layout().ok_or_else(|| {
            Error::NoTable(format!(
                "{}: ragged rows of user-defined values without a schema: nothing says what \
                 their fields are",
                path.display()
            ))
        })?;
        // Without a schema, a value of dims [3] is its scalars: an array of them.
        if layout.size() != h.value_bytes() {
            for &d in &h.value_dims {
                layout = Layout::Array {
                    len: d,
                    item: Box::new(layout),
                };
            }
        }
        if layout.size() != h.value_bytes() {
            return Err(Error::NoTable(format!(
                "{}: the schema's {} bytes are not the header's {}-byte values",
                path.display(),
                layout.size(),
                h.value_bytes()
            )));
        }
        let item = crate::schema::arrow_field("item", &layout)?;
        let data_type = if ragged.is_text() {
            arrow_schema::DataType::LargeUtf8
        } else {
            arrow_schema::DataType::LargeList(Arc::new(item))
        };
        let mut metadata = HashMap::from([(
            SCHEMA_KEY.to_string(),
            serde_json::to_string(&layout).map_err(|e| Error::NoTable(e.to_string()))?,
        )]);
        if let Some(params) = ragged.trailer().map(|t| &t.params).filter(|p| !p.is_null()) {
            metadata.insert(PARAMS_KEY.to_string(), params.to_string());
        }
        let schema = Schema::new(vec![arrow_schema::Field::new(
            crate::schema::VALUES_COLUMN,
            data_type,
            false,
        )])
        .with_metadata(metadata);
        let header = Header::new(h.eltype, h.elbyte, vec![h.size / h.elbyte.max(1)])?;
        Ok(RaTable(Arc::new(Inner {
            path: path.to_path_buf(),
            header,
            trailer: ragged.trailer().cloned(),
            layout,
            schema: Arc::new(schema),
            rows: h.rows,
            rows_per_step: 1,
            source: Source::Ragged(Box::new(ragged)),
        })))
    }

    /// The table's Arrow schema, with the file's layout, dims and parameters as metadata.
    pub fn schema(&self) -> SchemaRef {
        self.0.schema.clone()
    }

    /// The number of rows (elements of the schema).
    pub fn rows(&self) -> u64 {
        self.0.rows
    }

    /// The layout of one row.
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// The file's header, as stored.
    pub fn header(&self) -> &Header {
        &self.0.header
    }

    /// The file's trailer, if it has a valid one.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.0.trailer.as_ref()
    }

    /// Bytes of one row in the file.
    pub fn row_bytes(&self) -> u64 {
        self.0.layout.size()
    }

    /// The rows in batches of `batch_rows` (the last may be shorter), read one at a time: the
    /// memory in use is one batch's, whatever the file's size. A compressed or chunked file is
    /// read in whole steps of its last dim (so a batch holds at least one step); an LZ4 file's
    /// data section is decompressed whole on the first batch, as every reader of it does.
    pub fn batches(&self, batch_rows: usize) -> RaBatchReader {
        self.reader(
            batch_rows,
            None,
            std::iter::once(0..self.0.rows).collect(),
            None,
            None,
        )
    }

    /// The batch reader of `ranges` of rows (whole steps of the last dim for a decoded file,
    /// but the end of the table), `batch_rows` a batch rounded up to whole steps.
    fn reader(
        &self,
        batch_rows: usize,
        columns: Option<(Vec<usize>, SchemaRef)>,
        mut ranges: Vec<Range<u64>>,
        filter: Option<RowFilter>,
        limit: Option<u64>,
    ) -> RaBatchReader {
        let batch_rows = batch_rows.max(1) as u64;
        let unit = self.unit_rows();
        let batch_rows = batch_rows.div_ceil(unit).max(1) * unit;
        ranges.retain(|r| r.start < r.end);
        RaBatchReader {
            table: self.clone(),
            ranges,
            range: 0,
            next: 0,
            batch_rows,
            columns,
            filter,
            left: limit,
        }
    }

    /// The rows a batch is a whole number of: one for a mapped file; whole steps of the last
    /// dim for a decoded one, and in a chunked file whose chunks span the other dims (a record
    /// file) whole chunks, so that no chunk is read by two batches.
    fn unit_rows(&self) -> u64 {
        let Source::Decoded(r) = &self.0.source else {
            return 1;
        };
        let step = self.0.rows_per_step.max(1);
        let dims = &self.0.header.dims;
        match r.chunk_map().map(|m| &m.config().chunk) {
            Some(c)
                if step < self.0.rows
                    && c.len() == dims.len()
                    && c.iter().zip(dims).rev().skip(1).all(|(c, d)| c >= d) =>
            {
                step.saturating_mul(c[c.len() - 1]).min(self.0.rows.max(1))
            }
            _ => step,
        }
    }

    /// Part `k` of `n` of `ranges`: about as many rows each, cut at whole units
    /// ([`RaTable::unit_rows`]), in order.
    fn part(&self, ranges: Vec<Range<u64>>, k: usize, n: usize) -> Vec<Range<u64>> {
        let n = n.max(1) as u64;
        let unit = self.unit_rows();
        let units: u64 = ranges
            .iter()
            .map(|r| (r.end - r.start).div_ceil(unit))
            .sum();
        // Part k holds units [k u / n, (k + 1) u / n) of the ranges' units, in order.
        let (lo, hi) = (k as u64 * units / n, (k as u64 + 1) * units / n);
        let mut out = Vec::new();
        let mut seen = 0u64;
        for r in ranges {
            let count = (r.end - r.start).div_ceil(unit);
            let (a, b) = (lo.max(seen), hi.min(seen + count));
            if a < b {
                let start = r.start + (a - seen) * unit;
                out.push(start..(r.start + (b - seen) * unit).min(r.end));
            }
            seen += count;
        }
        out
    }

    /// A scan of the table (what a query engine asks of it): the columns `options` names, and,
    /// with a filter, only the rows of the chunks whose statistics allow a match
    /// (rawarray_serde's [`Pruning`]), each batch then cut to the matching rows unless
    /// [`ScanOptions::exact`] is off; with a limit, reading stops once that many rows were
    /// handed out. A filter on a column that does not exist or cannot be compared, or on a
    /// file that is not of records, is an error naming it.
    ///
    /// ```
    /// use rawarray_arrow::{RaTable, ScanOptions};
    /// use rawarray_serde::query::Predicate;
    /// use rawarray_serde::{Codec, RaRecord, RecordOptions};
    /// #[derive(RaRecord, Clone)]
    /// struct Body { step: u32, energy: f64 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let mut w = RecordOptions::new().codec(Codec::Zstd).chunk_records(100).create::<Body>(&path).unwrap();
    /// for step in 0..1000 { w.append(&Body { step, energy: 1.0 }).unwrap(); }
    /// w.finish().unwrap();
    ///
    /// let table = RaTable::open(&path).unwrap();
    /// let scan = ScanOptions::new().filter(Predicate::between("step", 510, 519));
    /// let rows: usize = table.scan(&scan).unwrap().map(|b| b.unwrap().num_rows()).sum();
    /// assert_eq!(rows, 10);
    /// assert_eq!(table.io_stats().unwrap().reads, 1); // one chunk of ten
    /// ```
    pub fn scan(&self, options: &ScanOptions) -> Result<RaBatchReader> {
        let columns = match &options.columns {
            Some(c) => Some((c.clone(), Arc::new(self.project(c)?))),
            None => None,
        };
        let (ranges, filter) = match &options.filter {
            None => (std::iter::once(0..self.0.rows).collect(), None),
            Some(predicate) => {
                let filter = self.row_filter(predicate)?;
                let ranges = self.pruning(&filter).ranges().to_vec();
                (ranges, options.exact.then_some(filter))
            }
        };
        let ranges = match options.part {
            Some((k, n)) => self.part(ranges, k, n),
            None => ranges,
        };
        Ok(self.reader(options.batch_rows, columns, ranges, filter, options.limit))
    }

    /// `predicate` resolved against the rows' layout, or an error naming what does not fit.
    pub fn row_filter(&self, predicate: &Predicate) -> Result<RowFilter> {
        if matches!(self.0.source, Source::Ragged(_)) {
            return Err(Error::NoTable(format!(
                "{}: filters take files of records; this is a ragged file (rows of different \
                 lengths), whose rows have no fields to compare",
                self.0.path.display()
            )));
        }
        RowFilter::new(predicate, &self.0.layout).map_err(|e| Error::InFile {
            path: self.0.path.clone(),
            source: e,
        })
    }

    /// The rows a filter reads: those of the chunks whose statistics allow a match (every row
    /// of a file that is not chunked or keeps no statistics).
    pub fn pruning(&self, filter: &RowFilter) -> Pruning {
        let map = match &self.0.source {
            Source::Decoded(r) => r.chunk_map(),
            _ => None,
        };
        let mut p = Pruning::new(filter, &self.0.header, map);
        p.clip(self.0.rows);
        p
    }

    /// The reads of the file's data made so far through this table (and its clones): chunks
    /// and their stored bytes for a chunked file; `None` for a mapped plain file (the kernel
    /// pages it in) and a ragged one.
    pub fn io_stats(&self) -> Option<IoStats> {
        match &self.0.source {
            Source::Decoded(r) => Some(r.io_stats()),
            _ => None,
        }
    }

    fn project(&self, columns: &[usize]) -> Result<Schema> {
        self.0.schema.project(columns).map_err(|_| {
            Error::NoTable(format!(
                "columns {columns:?} of a table of {} columns",
                self.0.schema.fields().len()
            ))
        })
    }

    /// As [`RaTable::batches`], with only the columns `columns` (indices into
    /// [`RaTable::schema`], in the order given, repeats allowed): the other fields are never
    /// gathered out of the rows, which is what a query engine's projection pushdown asks of a
    /// table. An empty list gives batches of no columns that still count their rows.
    ///
    /// ```
    /// use rawarray_serde::{RaRecord, RecordWriter};
    /// #[derive(RaRecord, Clone)]
    /// struct Body { step: u32, energy: f64, pos: [f32; 3] }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let mut w = RecordWriter::<Body>::create(&path, ()).unwrap();
    /// for step in 0..5 { w.append(&Body { step, energy: 0.5, pos: [0.0; 3] }).unwrap(); }
    /// w.finish().unwrap();
    ///
    /// let table = rawarray_arrow::RaTable::open(&path).unwrap();
    /// let batch = table.batches_of(&[1], 16).unwrap().next().unwrap().unwrap();
    /// assert_eq!(batch.schema().field(0).name(), "energy");
    /// assert_eq!((batch.num_columns(), batch.num_rows()), (1, 5));
    /// assert!(table.batches_of(&[3], 16).is_err());
    /// ```
    pub fn batches_of(&self, columns: &[usize], batch_rows: usize) -> Result<RaBatchReader> {
        self.scan(
            &ScanOptions::new()
                .columns(columns.to_vec())
                .batch_rows(batch_rows),
        )
    }

    /// All the rows as one batch.
    pub fn read_all(&self) -> Result<RecordBatch> {
        self.read_rows(0..self.0.rows, None, None)
    }

    /// The rows `range` as one batch (for a decoded file, `range` must start at a whole step
    /// of the last dim, as [`RaTable::batches`] makes them), with only `columns` (indices, and
    /// the schema they make) when given, and only the rows `filter` keeps.
    fn read_rows(
        &self,
        range: Range<u64>,
        columns: Option<&(Vec<usize>, SchemaRef)>,
        filter: Option<&RowFilter>,
    ) -> Result<RecordBatch> {
        let inner = &*self.0;
        let mut rows = usize::try_from(range.end - range.start)
            .map_err(|_| Error::NoTable("a batch larger than the address space".into()))?;
        let row_bytes = inner.layout.size() as usize;
        if let Some(batch) = self.read_fields(&range, rows, columns, filter)? {
            return Ok(batch);
        }
        let bytes: Buffer = match &inner.source {
            Source::Ragged(ragged) => {
                let batch = self.read_ragged(ragged, range)?;
                return match columns {
                    Some((indices, _)) => Ok(batch.project(indices)?),
                    None => Ok(batch),
                };
            }
            Source::Empty => Buffer::from_vec(Vec::<u8>::new()),
            Source::Mapped(map) => {
                let start = range.start as usize * row_bytes;
                let len = rows * row_bytes;
                if inner.header.is_big_endian() {
                    let mut v = map[start..start + len].to_vec();
                    v.chunks_exact_mut(row_bytes)
                        .for_each(|row| inner.layout.swap_byte_order(row));
                    Buffer::from_vec(v)
                } else {
                    let ptr = NonNull::from(&map[start..start + len]).cast::<u8>();
                    // SAFETY: `ptr` points at `len` bytes inside the map, which the buffer's
                    // owner (a clone of the Arc holding the map) keeps mapped for as long as
                    // the buffer or any slice of it lives; the map is read-only.
                    unsafe { Buffer::from_custom_allocation(ptr, len, map.clone()) }
                }
            }
            Source::Decoded(reader) => {
                let (_, mut v) = reader.read_subset_bytes(&self.box_of(&range))?;
                // The reader swaps scalars; records of a big-endian file keep their bytes.
                if inner.header.is_big_endian() && inner.header.eltype == ElType::User {
                    v.chunks_exact_mut(row_bytes)
                        .for_each(|row| inner.layout.swap_byte_order(row));
                }
                v.truncate(rows * row_bytes);
                Buffer::from_vec(v)
            }
        };
        // The rows the filter keeps, gathered before the columns are (little-endian by now).
        let bytes = match filter {
            Some(f) => {
                let keep = f.mask(bytes.as_slice(), false);
                let kept = keep.iter().filter(|&&k| k).count();
                if kept == rows {
                    bytes
                } else {
                    let mut v = Vec::with_capacity(kept * row_bytes);
                    for (row, _) in bytes
                        .as_slice()
                        .chunks_exact(row_bytes.max(1))
                        .zip(&keep)
                        .filter(|(_, &k)| k)
                    {
                        v.extend_from_slice(row);
                    }
                    rows = kept;
                    Buffer::from_vec(v)
                }
            }
            None => bytes,
        };
        let all: Vec<usize>;
        let (indices, schema) = match columns {
            Some((indices, schema)) => (indices.as_slice(), schema),
            None => {
                all = (0..inner.schema.fields().len()).collect();
                (all.as_slice(), &inner.schema)
            }
        };
        let columns: Vec<ArrayRef> = match &inner.layout {
            Layout::Record { fields, .. } => indices
                .iter()
                .map(|&i| {
                    let f = &fields[i];
                    let starts: Vec<usize> = (0..rows)
                        .map(|r| r * row_bytes + f.offset as usize)
                        .collect();
                    gather(inner.schema.field(i), &f.layout, bytes.as_slice(), &starts)
                })
                .collect::<Result<_>>()?,
            other => indices
                .iter()
                .map(|_| column(inner.schema.field(0).name(), other, rows, &bytes))
                .collect::<Result<_>>()?,
        };
        Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// The rows `range` (`rows` of them) as one batch of only `columns`, their fields decoded
    /// alone (a record file whose blocks are stored as byte planes: [`BlockSource::
    /// read_subset_fields`]), or `None` when they cannot be or need not be: no projection, one
    /// of half the row or more, a filter (it reads whole rows), a big-endian file, or a source
    /// that decodes whole elements.
    fn read_fields(
        &self,
        range: &Range<u64>,
        rows: usize,
        columns: Option<&(Vec<usize>, SchemaRef)>,
        filter: Option<&RowFilter>,
    ) -> Result<Option<RecordBatch>> {
        let inner = &*self.0;
        let (Source::Decoded(reader), Some((indices, schema)), None, Layout::Record { fields, .. }) =
            (&inner.source, columns, filter, &inner.layout)
        else {
            return Ok(None);
        };
        if inner.header.is_big_endian() || indices.is_empty() {
            return Ok(None);
        }
        let spans: Vec<(usize, usize)> = indices
            .iter()
            .map(|&i| (fields[i].offset as usize, fields[i].layout.size() as usize))
            .collect();
        // Half the row or more: whole rows cost about as much to decode, and a batch of the
        // whole table is then read in parallel, chunk entries checked.
        if 2 * spans.iter().map(|s| s.1).sum::<usize>() >= inner.layout.size() as usize {
            return Ok(None);
        }
        let Some(cols) = reader.read_subset_fields(&self.box_of(range), &spans)? else {
            return Ok(None);
        };
        let columns: Vec<ArrayRef> = indices
            .iter()
            .zip(cols)
            .zip(&spans)
            .map(|((&i, mut col), &(_, w))| {
                let (field, layout) = (inner.schema.field(i), &fields[i].layout);
                // A field whose Arrow form is its bytes takes the decoded column as its buffer.
                col.truncate(rows * w);
                let bytes = Buffer::from_vec(col);
                if let Some(a) = crate::columns::contiguous(field, layout, rows, &bytes)? {
                    return Ok(a);
                }
                let starts: Vec<usize> = (0..rows).map(|r| r * w).collect();
                gather(field, layout, bytes.as_slice(), &starts)
            })
            .collect::<Result<_>>()?;
        Ok(Some(RecordBatch::try_new_with_options(
            schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?))
    }

    /// The block of the header's dims that holds rows `range` of a decoded file: whole dims
    /// but the last, the steps of the rows along it.
    fn box_of(&self, range: &Range<u64>) -> Vec<Range<u64>> {
        let inner = &*self.0;
        let mut ranges: Vec<Range<u64>> = inner.header.dims.iter().map(|&d| 0..d).collect();
        if let Some(last) = ranges
            .last_mut()
            .filter(|_| inner.rows_per_step < inner.rows)
        {
            *last = range.start / inner.rows_per_step..range.end.div_ceil(inner.rows_per_step);
        }
        ranges
    }

    /// Rows `range` of a ragged file: their values gathered into one buffer, the rows' offsets.
    fn read_ragged(&self, ragged: &DynRagged, range: Range<u64>) -> Result<RecordBatch> {
        let inner = &*self.0;
        let mut values = Vec::new();
        let mut offsets = vec![0i64];
        for k in range {
            let row = ragged.row_bytes(k)?;
            values.extend_from_slice(&row);
            let end = i64::try_from(values.len())
                .map_err(|_| Error::NoTable("a batch of more than 2^63 bytes".into()))?;
            offsets.push(end);
        }
        let array: ArrayRef = match inner.schema.field(0).data_type() {
            arrow_schema::DataType::LargeUtf8 => Arc::new(arrow_array::LargeStringArray::try_new(
                arrow_buffer::OffsetBuffer::new(offsets.into()),
                Buffer::from_vec(values),
                None,
            )?),
            arrow_schema::DataType::LargeList(item) => {
                let size = inner.layout.size() as i64;
                let count = usize::try_from(*offsets.last().unwrap_or(&0) / size.max(1))
                    .map_err(|_| Error::NoTable("a batch larger than the address space".into()))?;
                let offsets: Vec<i64> = offsets.iter().map(|o| o / size.max(1)).collect();
                let child = column(item.name(), &inner.layout, count, &Buffer::from_vec(values))?;
                Arc::new(arrow_array::LargeListArray::try_new(
                    item.clone(),
                    arrow_buffer::OffsetBuffer::new(offsets.into()),
                    child,
                    None,
                )?)
            }
            other => unreachable!("open_ragged makes {other} a list or text"),
        };
        Ok(RecordBatch::try_new(inner.schema.clone(), vec![array])?)
    }

    /// The path the table was opened by (for [`RaTable::from_blocks`], the name given: a URL).
    pub fn path(&self) -> &Path {
        &self.0.path
    }
}

/// The batches of a [`RaTable`], in file order: an Arrow [`RecordBatchReader`].
pub struct RaBatchReader {
    table: RaTable,
    /// The rows to read, in order, and where the reader is in them.
    ranges: Vec<Range<u64>>,
    range: usize,
    next: u64,
    batch_rows: u64,
    /// The columns read ([`RaTable::batches_of`]) and their schema; all of them when `None`.
    columns: Option<(Vec<usize>, SchemaRef)>,
    /// The rows kept of those read ([`RaTable::scan`] with a filter).
    filter: Option<RowFilter>,
    /// Rows still to hand out, under a limit.
    left: Option<u64>,
}

impl RaBatchReader {
    /// The next batch of rows read, before the filter; `None` at the end (or the limit).
    fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
        if self.left == Some(0) {
            return None;
        }
        let range = self.ranges.get(self.range)?.clone();
        let start = self.next.max(range.start);
        let mut end = (start + self.batch_rows).min(range.end);
        if self.filter.is_none() {
            // Without a filter every row read is handed out: read no more than the limit.
            if let Some(left) = self.left {
                end = end.min(start + left);
            }
        }
        if end >= range.end {
            self.range += 1;
        }
        self.next = end;
        let batch = self
            .table
            .read_rows(start..end, self.columns.as_ref(), self.filter.as_ref());
        Some(batch.map(|b| match &mut self.left {
            Some(left) => {
                let n = (b.num_rows() as u64).min(*left);
                *left -= n;
                b.slice(0, n as usize)
            }
            None => b,
        }))
    }
}

impl Iterator for RaBatchReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let batch = self.next_batch()?;
            // A filter may keep no row of a batch: go on to the next.
            if matches!(&batch, Ok(b) if b.num_rows() == 0) && self.filter.is_some() {
                continue;
            }
            return Some(batch.map_err(|e| match e {
                Error::Arrow(e) => e,
                e => ArrowError::ExternalError(Box::new(e)),
            }));
        }
    }
}

/// What [`RaTable::scan`] reads: which columns, how many rows a batch, which rows.
///
/// ```
/// use rawarray_arrow::ScanOptions;
/// use rawarray_serde::query::Predicate;
/// let scan = ScanOptions::new().columns(vec![0, 2]).filter(Predicate::gt("energy", 1.5)).limit(10);
/// assert_eq!(scan.get_limit(), Some(10));
/// ```
#[derive(Clone, Debug)]
pub struct ScanOptions {
    columns: Option<Vec<usize>>,
    batch_rows: usize,
    filter: Option<Predicate>,
    exact: bool,
    limit: Option<u64>,
    part: Option<(usize, usize)>,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions::new()
    }
}

impl ScanOptions {
    /// Every column, every row, [`DEFAULT_BATCH_ROWS`] a batch.
    pub fn new() -> ScanOptions {
        ScanOptions {
            columns: None,
            batch_rows: DEFAULT_BATCH_ROWS,
            filter: None,
            exact: true,
            limit: None,
            part: None,
        }
    }

    /// Only these columns (indices into [`RaTable::schema`], in this order, repeats allowed).
    #[must_use]
    pub fn columns(mut self, columns: Vec<usize>) -> ScanOptions {
        self.columns = Some(columns);
        self
    }

    /// Rows per batch (at least 1; a decoded file's batches are whole steps of its last dim).
    #[must_use]
    pub fn batch_rows(mut self, rows: usize) -> ScanOptions {
        self.batch_rows = rows.max(1);
        self
    }

    /// Only the rows that match: chunks whose statistics rule out a match are not read.
    #[must_use]
    pub fn filter(mut self, predicate: Predicate) -> ScanOptions {
        self.filter = Some(predicate);
        self
    }

    /// Whether the rows read are cut to those that match (the default), or handed out whole
    /// (`false`: for an engine that applies the filter itself, and only wants the chunks that
    /// cannot match skipped).
    #[must_use]
    pub fn exact(mut self, on: bool) -> ScanOptions {
        self.exact = on;
        self
    }

    /// At most this many rows: reading stops when they were handed out.
    #[must_use]
    pub fn limit(mut self, rows: u64) -> ScanOptions {
        self.limit = Some(rows);
        self
    }

    /// The limit, if any.
    pub fn get_limit(&self) -> Option<u64> {
        self.limit
    }

    /// Only part `k` of `n` of the rows it would read (`k < n`): about as many rows each, in
    /// whole chunks, so that `n` scans read the table in parallel, each chunk once.
    ///
    /// ```
    /// use rawarray_arrow::{RaTable, ScanOptions};
    /// use rawarray_serde::{Codec, RaRecord, RecordOptions};
    /// #[derive(RaRecord, Clone)]
    /// struct R { id: u32 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let mut w = RecordOptions::new().codec(Codec::Lz4).chunk_records(10).create::<R>(&path).unwrap();
    /// for id in 0..95 { w.append(&R { id }).unwrap(); }
    /// w.finish().unwrap();
    /// let t = RaTable::open(&path).unwrap();
    /// let rows = |k| -> usize { t.scan(&ScanOptions::new().part(k, 3)).unwrap().map(|b| b.unwrap().num_rows()).sum() };
    /// assert_eq!([rows(0), rows(1), rows(2)], [30, 30, 35]);
    /// ```
    #[must_use]
    pub fn part(mut self, k: usize, n: usize) -> ScanOptions {
        self.part = Some((k.min(n.saturating_sub(1)), n.max(1)));
        self
    }
}

impl RecordBatchReader for RaBatchReader {
    fn schema(&self) -> SchemaRef {
        match &self.columns {
            Some((_, schema)) => schema.clone(),
            None => self.table.schema(),
        }
    }
}

/// The schema [`RaTable`] gives a file, without reading its data.
pub fn schema_of(path: impl AsRef<Path>) -> Result<Schema> {
    Ok(RaTable::open(path)?.schema().as_ref().clone())
}
