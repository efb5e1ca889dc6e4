//! Whole-file conversions, streamed batch by batch: `.ra` to Parquet and Arrow IPC (`.arrow`,
//! `.feather`) and back. What `ra convert` runs.

use std::fs::File;
use std::path::Path;

use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::WriteOptions;

use crate::error::{Error, Result};
use crate::reader::{RaTable, DEFAULT_BATCH_ROWS};
use crate::write::RecordFileWriter;

/// The compression of the Parquet files written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParquetCompression {
    /// Snappy: fast, what most writers use by default.
    #[default]
    Snappy,
    /// Zstandard at this level (1..=22).
    Zstd(i32),
    /// None.
    Uncompressed,
}

/// How a conversion runs.
///
/// ```
/// let o = rawarray_arrow::ConvertOptions::new().batch_rows(4096);
/// assert_eq!(o.batch_rows, 4096);
/// ```
#[derive(Clone, Debug)]
pub struct ConvertOptions {
    /// Rows per batch read and written; also the rows of a Parquet row group, so that the
    /// memory a conversion uses is bounded by one batch.
    pub batch_rows: usize,
    /// The Parquet codec.
    pub compression: ParquetCompression,
    /// How the `.ra` records are stored (Parquet or Arrow IPC -> `.ra`): plain by default; a
    /// chunked codec compresses them, with per-chunk statistics unless turned off.
    pub storage: WriteOptions,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            batch_rows: DEFAULT_BATCH_ROWS,
            compression: ParquetCompression::Snappy,
            storage: WriteOptions::new(),
        }
    }
}

impl ConvertOptions {
    /// The defaults: batches of [`DEFAULT_BATCH_ROWS`] rows, Snappy.
    pub fn new() -> ConvertOptions {
        ConvertOptions::default()
    }

    /// Rows per batch (and Parquet row group).
    #[must_use]
    pub fn batch_rows(mut self, rows: usize) -> ConvertOptions {
        self.batch_rows = rows.max(1);
        self
    }

    /// The Parquet codec.
    #[must_use]
    pub fn compression(mut self, c: ParquetCompression) -> ConvertOptions {
        self.compression = c;
        self
    }

    /// How the `.ra` records are stored (see [`RecordOptions::storage`]).
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, WriteOptions};
    /// let o = rawarray_arrow::ConvertOptions::new().storage(WriteOptions::new().codec(Codec::Zstd));
    /// assert_eq!(o.storage.storage().name(), "chunked");
    /// ```
    ///
    /// [`RecordOptions::storage`]: rawarray_serde::RecordOptions::storage
    #[must_use]
    pub fn storage(mut self, storage: WriteOptions) -> ConvertOptions {
        self.storage = storage;
        self
    }
}

/// `.ra` -> Parquet, a row group per batch; the file's layout, dims and parameters go into the
/// Parquet key-value metadata. `progress` is called after each batch with the `.ra` data bytes
/// done and in all.
/// The output is written under a temporary name and renamed over `output` once complete.
///
/// ```
/// use rawarray_serde::RawArray;
/// let dir = tempfile::tempdir().unwrap();
/// let (ra, pq) = (dir.path().join("a.ra"), dir.path().join("a.parquet"));
/// RawArray::from_vec(vec![1.0f64, 2.0, 3.0]).write_file(&ra).unwrap();
/// rawarray_arrow::ra_to_parquet(&ra, &pq, &Default::default(), |_, _| {}).unwrap();
/// let back = dir.path().join("b.ra");
/// rawarray_arrow::parquet_to_ra(&pq, &back, &Default::default(), |_, _| {}).unwrap();
/// let b = rawarray_serde::RecordReader::<f64>::open(&back).unwrap();
/// assert_eq!(b.get(2).unwrap(), Some(3.0));
/// ```
pub fn ra_to_parquet(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<()> {
    let table = RaTable::open(input)?;
    let compression = match opts.compression {
        ParquetCompression::Snappy => Compression::SNAPPY,
        ParquetCompression::Zstd(level) => Compression::ZSTD(ZstdLevel::try_new(level)?),
        ParquetCompression::Uncompressed => Compression::UNCOMPRESSED,
    };
    // The schema's metadata also travels inside the embedded Arrow schema, which only Arrow
    // readers decode: as key-value pairs, every Parquet reader sees the layout and parameters.
    let mut kv: Vec<KeyValue> = table
        .schema()
        .metadata()
        .iter()
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    kv.sort_by(|a, b| a.key.cmp(&b.key));
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_key_value_metadata(Some(kv))
        .set_max_row_group_row_count(Some(opts.batch_rows))
        // Statistics per column chunk, as pyarrow writes by default; a page index (page-level
        // statistics) costs a pass over every page that few readers use.
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .build();
    let mut out = AtomicFile::create(output)?;
    {
        let mut writer = ArrowWriter::try_new(out.file(), table.schema(), Some(props))?;
        let (total, rows) = (table.header().data_len(), table.rows().max(1));
        let mut done_rows = 0u64;
        for batch in table.batches(opts.batch_rows) {
            let batch = batch?;
            writer.write(&batch)?;
            done_rows += batch.num_rows() as u64;
            // In u128: bytes times rows can pass 2^64.
            progress(
                (u128::from(total) * u128::from(done_rows) / u128::from(rows)) as u64,
                total,
            );
        }
        writer.close()?;
    }
    out.commit_relaxed()?;
    Ok(())
}

/// `.ra` -> Arrow IPC file format (`.arrow`; `.feather` is the same format, version 2), one
/// record batch per batch; metadata as for [`ra_to_parquet`].
pub fn ra_to_ipc(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<()> {
    let table = RaTable::open(input)?;
    let mut out = AtomicFile::create(output)?;
    {
        let mut writer = FileWriter::try_new(out.file(), &table.schema())?;
        let (total, rows) = (table.header().data_len(), table.rows().max(1));
        let mut done_rows = 0u64;
        for batch in table.batches(opts.batch_rows) {
            let batch = batch?;
            writer.write(&batch)?;
            done_rows += batch.num_rows() as u64;
            // In u128: bytes times rows can pass 2^64.
            progress(
                (u128::from(total) * u128::from(done_rows) / u128::from(rows)) as u64,
                total,
            );
        }
        writer.finish()?;
    }
    out.commit_relaxed()?;
    Ok(())
}

/// Parquet -> `.ra` record file: each row a record, one field per column (fixed-width columns
/// only: any other is refused by name before anything is written). `progress` is called after
/// each batch with the `.ra` data bytes written and in all.
pub fn parquet_to_ra(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    progress: impl FnMut(u64, u64),
) -> Result<()> {
    let file = open(input)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?.with_batch_size(opts.batch_rows);
    let total = u64::try_from(builder.metadata().file_metadata().num_rows()).ok();
    // The builder's schema: the built reader's has lost the file's key-value metadata.
    let schema = builder.schema().clone();
    let reader = builder.build()?;
    let mut w = RecordFileWriter::create_with(output, &schema, total, &opts.storage)?;
    w.write_all(reader, total, progress)?;
    w.finish()?;
    Ok(())
}

/// Arrow IPC file (`.arrow`, `.feather`) -> `.ra` record file, as [`parquet_to_ra`]: the
/// record dims come back too, the row count being read from the file's footer and the
/// metadata of its batches first (a few small reads, no data).
pub fn ipc_to_ra(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    progress: impl FnMut(u64, u64),
) -> Result<()> {
    let mut file = open(input)?;
    let total = ipc_rows(&mut file);
    let reader = FileReader::try_new(file, None)?;
    let mut w = RecordFileWriter::create_with(output, &reader.schema(), total, &opts.storage)?;
    w.write_all(reader, total, progress)?;
    w.finish()?;
    Ok(())
}

/// The rows of an Arrow IPC file, summed over its record batches from the footer's blocks and
/// each batch's message header (the length field of its `RecordBatch`), without reading the
/// data; `None` if any of it cannot be read, which the reader proper then reports. Every
/// length is checked against the file's before anything is read: at most the footer and the
/// messages' metadata are held.
fn ipc_rows(file: &mut File) -> Option<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let len = file.metadata().ok()?.len();
    let mut tail = [0u8; 10];
    file.seek(SeekFrom::Start(len.checked_sub(10)?)).ok()?;
    file.read_exact(&mut tail).ok()?;
    let footer_len = arrow_ipc::reader::read_footer_length(tail).ok()? as u64;
    let mut footer = vec![
        0u8;
        usize::try_from(footer_len)
            .ok()
            .filter(|&n| n as u64 + 10 <= len)?
    ];
    file.seek(SeekFrom::Start(len - 10 - footer_len)).ok()?;
    file.read_exact(&mut footer).ok()?;
    let footer = arrow_ipc::root_as_footer(&footer).ok()?;
    let mut rows = 0u64;
    for block in footer.recordBatches()?.iter() {
        let at = u64::try_from(block.offset()).ok()?;
        let meta = u64::try_from(block.metaDataLength()).ok()?;
        if meta < 8 || at.checked_add(meta)? > len {
            return None;
        }
        let mut buf = vec![0u8; meta as usize];
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut buf).ok()?;
        // A message is prefixed by its length (after the 0xFFFFFFFF continuation marker of
        // format version 5; without it in older files).
        let body = if buf[..4] == [0xff; 4] {
            &buf[8..]
        } else {
            &buf[4..]
        };
        let message = arrow_ipc::root_as_message(body).ok()?;
        rows = rows.checked_add(u64::try_from(message.header_as_record_batch()?.length()).ok()?)?;
    }
    file.rewind().ok()?;
    Some(rows)
}

/// Opens an input; the error names it.
fn open(input: &Path) -> Result<File> {
    File::open(input).map_err(|e| Error::InFile {
        path: input.to_path_buf(),
        source: e.into(),
    })
}
