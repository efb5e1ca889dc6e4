//! The appending writers: [`RecordWriter<T>`], [`DynRecordWriter`] and the core they share.

use std::fs::File;
use std::marker::PhantomData;

use super::chunked::Chunked;
use super::commit::reserve_spare;
use super::spec::RecordShape;
use crate::array::RawArray;
use crate::data;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::write_all_at;
use crate::header::Header;
use crate::trailer::{block_len, data_end, encode_block_into, Trailer};

/// What a completed [`RecordWriter::flush`] survives.
///
/// Either way a flush commits: readers see the records at once, and a killed process loses
/// nothing flushed. [`RecordWriter::sync`] makes what is flushed survive a power cut too,
/// whatever the setting, at the moments the caller chooses.
///
/// ```
/// use rawarray_serde::{Durability, RecordOptions};
/// let durable = RecordOptions::new().durability(Durability::Fsync);
/// assert_eq!(RecordOptions::new(), RecordOptions::new().durability(Durability::NoFsync));
/// # let _ = durable;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Each flush syncs the data, then the header (`fdatasync` twice): flushed records survive
    /// a power cut. A sync costs what the disk takes, often milliseconds, on every flush.
    Fsync,
    /// No syncs (the default): flushed records survive the writer being killed (the kernel has
    /// them, in order), not a power cut or a kernel crash, after which the header may cover
    /// records whose bytes never reached the disk.
    #[default]
    NoFsync,
}

/// Plain-old-data appends of at least this many bytes skip the buffer.
const DIRECT_WRITE: usize = 64 << 10;

/// The methods [`RecordWriter<T>`] and [`DynRecordWriter`] share, written once: both are the
/// same writer core with another way in.
macro_rules! writer_methods {
    () => {
        /// Commits the records appended so far: writes the buffer and the trailer block after them
        /// in one `pwrite`, then rewrites the header in one `pwrite` (syncing each with
        /// [`Durability::Fsync`]). When it returns, the header on disk covers every record appended.
        /// On an error the file still holds the records of the last successful flush, and flushing
        /// can be retried.
        pub fn flush(&mut self) -> Result<()> {
            self.core.flush()
        }

        /// Commits like [`Self::flush`], syncing as [`Durability::Fsync`] does (records
        /// and trailer, then the header), whatever the writer's durability: when it returns, every
        /// record appended survives a power cut.
        pub fn sync(&mut self) -> Result<()> {
            self.core.sync()
        }

        /// Flushes, then cuts the file after the trailer (dropping the free space and the spare
        /// copy) and closes it, releasing its lock. Returns the final header. The cut is after the
        /// data end of this flush: no reader has mapped anything beyond it.
        pub fn finish(mut self) -> Result<Header> {
            self.core.close()?;
            Ok(self.core.header.clone())
        }

        /// Records appended, flushed or not.
        pub fn len(&self) -> u64 {
            self.core.len()
        }

        /// Whether no record was ever appended.
        pub fn is_empty(&self) -> bool {
            self.core.len() == 0
        }

        /// Records the header on disk covers: those of the last flush.
        pub fn flushed_len(&self) -> u64 {
            self.core.flushed_len()
        }

        /// The header on disk.
        pub fn header(&self) -> &Header {
            &self.core.header
        }

        /// The dims of one record, in values of the element.
        pub fn record_dims(&self) -> &[u64] {
            &self.core.shape.dims
        }

        /// The trailer written with the records.
        pub fn trailer(&self) -> &Trailer {
            &self.core.trailer
        }
    };
}

/// Appends records to a `.ra` file crash-safely: a crash loses at most the records appended
/// since the last [`RecordWriter::flush`], and leaves a file every reader reads.
///
/// A record file is an ordinary `.ra` array whose **last dim counts records** and grows: one
/// record is one value of `T` (dims `[n]`, or `[3, n]` for `T = [f64; 3]`), or an n-d snapshot
/// of values of `T` (dims `[nx, ny, n]` for an `[nx, ny]` field per step). Every reader of
/// `size` bytes (numpy, Julia, C) reads it as it stands at any moment. Dropping the writer
/// finishes it, ignoring errors; call [`RecordWriter::finish`] to see them.
///
/// ```
/// use rawarray_serde::{RecordReader, RecordWriter, RawArray};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("orbit.ra");
/// let mut w = RecordWriter::<[f64; 3]>::create(&path, serde_json::json!({"dt": 0.1})).unwrap();
/// for step in 0..100 {
///     let t = step as f64 * 0.1;
///     w.append(&[t.cos(), t.sin(), t]).unwrap();
///     if step % 10 == 9 {
///         w.flush().unwrap(); // the header on disk now covers these records
///     }
/// }
/// w.finish().unwrap();
///
/// // Any reader of .ra files sees an f64 [3, 100] array.
/// let all: RawArray<f64> = RawArray::read_file(&path).unwrap();
/// assert_eq!(all.dims(), [3, 100]);
/// let r = RecordReader::<[f64; 3]>::open(&path).unwrap();
/// assert_eq!(r.get(10).unwrap().unwrap()[2], 1.0);
/// ```
///
/// # The file while it is written
///
/// ```text
/// header(n) | data: n records | trailer block | free space (a hole) | spare trailer block
///                              ^ the data end                        ^ the end of the file
/// ```
///
/// The [trailer](crate::Trailer) (parameters and schema) is kept twice: the *forward* copy at
/// the data end, and a *spare* copy at the end of the file (the two coincide when there is no
/// free space, as after [`RecordWriter::finish`]). Invariant: **the header is always valid and
/// describes only records written before it (and synced before it, with
/// [`Durability::Fsync`]), and at every instant at least one of the two copies is valid** (the
/// reader tries the end of the file, then the data end: both O(1)).
///
/// Appended records `R` go after the data end, uncommitted: packed into a reused buffer (one
/// copy for plain-old-data elements), or for plain-old-data slices of 64 KiB or more written
/// straight from the caller's memory. [`RecordWriter::flush`] commits them, with `B` the block:
///
/// 1. whenever bytes are about to be written that, with a block after them, would reach the
///    spare copy, a new spare copy is first written further out (leaving free space of 1/8 of
///    the data, at least 64 KiB: a sparse hole on most file systems), and synced (with
///    [`Durability::Fsync`], as the syncs below).
/// 2. the records still in the buffer, then `B`, are written after the records already written,
///    in one `pwrite`, and synced. Record writes clobber only the forward copy of the old
///    header; the spare copy lies beyond them.
/// 3. the header, with the new last dim and `size`, is written in one `pwrite` at offset 0, and
///    synced. A header is at most 512 bytes (58 dims), inside one page and one disk sector, so
///    no kill can tear it; if it is not written, the old header still describes complete data.
///
/// A process killed anywhere leaves a file whose header describes the records of the last
/// completed flush, or those of the flush under way if step 3 was reached. With
/// [`Durability::NoFsync`] (the default) the syncs are skipped: a killed process loses nothing
/// the kernel has (its page cache keeps the writes' order), but a power cut may;
/// [`RecordWriter::sync`] closes that gap when the caller chooses.
///
/// [`RecordWriter::finish`] truncates the file after the forward copy (one `ftruncate`, atomic).
/// [`RecordWriter::open`] leaves a file the same way before appending: a valid spare is made
/// if needed, the forward copy written, then the rest cut off. Records a lost header update
/// left after the data are dropped then; call [`recover`](crate::recover) first to keep them.
///
/// # Compressed record files
///
/// With a codec ([`RecordOptions::codec`](crate::RecordOptions::codec)) the file is in the chunked layout (flag bit 2):
/// records are compressed a chunk at a time along the last dim, each chunk as soon as it
/// fills, and a flush also stores the partial last chunk (padded to a whole chunk, readers
/// take its prefix). The trailer copies and the header's one `pwrite` work as above; a flush
/// that adds records to a last chunk already committed commits its new version in two header
/// writes (the new size with the old dims, the entry moved, then the new dims), so that every
/// moment is a file whose records are values appended. Old versions of the last chunk stay in
/// the file as dead bytes: flush about once a chunk ([`RecordOptions::chunk_records`](crate::RecordOptions::chunk_records)) or less
/// often where file size matters. The protocol is in doc/chunked.md ("A record file's last
/// chunk").
///
/// # One writer at a time
///
/// A writer holds the file's exclusive advisory lock (`flock`) from create or open until it is
/// finished or dropped. A second writer, in this process or another, fails within a fifth of a second (a
/// just-closed handle's lock can outlive it for a moment in a forked child) with
/// [`ErrorKind::Locked`]; so do [`recover`](crate::recover), [`RecordOptions::create`](crate::RecordOptions::create) over the file, and every
/// replacement through [`AtomicFile`](crate::atomic::AtomicFile) (`write_file`, `to_file`, `ra`'s
/// rewrites). Readers take no lock and are never blocked. Since no other writer can interleave,
/// nothing cuts the file below a data end a reader may have mapped: [`RecordWriter::finish`]
/// and `open` cut only after the data end of the latest flush.
///
/// ```
/// use rawarray_serde::{ErrorKind, RecordWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("log.ra");
/// let mut first = RecordWriter::<u64>::create(&path, serde_json::Value::Null).unwrap();
/// let second = RecordWriter::<u64>::open(&path).unwrap_err();
/// assert!(matches!(second.kind(), ErrorKind::Locked { .. }));
/// first.append(&1).unwrap();
/// first.finish().unwrap();
/// RecordWriter::<u64>::open(&path).unwrap(); // free again
/// ```
#[derive(Debug)]
pub struct RecordWriter<T: Element> {
    pub(super) core: Writer,
    pub(super) _element: PhantomData<fn(&T)>,
}

impl<T: Element> RecordWriter<T> {
    /// Appends one record (for files whose records are one value each).
    pub fn append(&mut self, record: &T) -> Result<()> {
        self.append_slice(std::slice::from_ref(record))
    }

    /// Appends whole records: `values.len()` must be a multiple of the values per record.
    ///
    /// Records are not committed until [`RecordWriter::flush`]. A slice of plain-old-data
    /// records of 64 KiB or more is written at once, straight from `values`; smaller ones are
    /// packed into the buffer, which is written out (still uncommitted) when it holds
    /// [`buffer_bytes`](crate::RecordOptions::buffer_bytes).
    pub fn append_slice(&mut self, values: &[T]) -> Result<()> {
        let per = self.core.shape.values;
        if per == 0 || !values.len().is_multiple_of(per) {
            return Err(Error::unsupported(format!(
                "{} values are not whole records: a record of this file is {:?}, {per} values",
                values.len(),
                self.core.shape.dims
            )));
        }
        if !self.core.big_endian {
            if let Some(bytes) = T::as_pod_bytes(values).filter(|b| b.len() >= DIRECT_WRITE) {
                return self.core.append_direct((values.len() / per) as u64, bytes);
            }
        }
        let chunk = (self.core.buffer_bytes / (per * T::PACKED_SIZE)).max(1) * per;
        for part in values.chunks(chunk) {
            self.pack(part);
            self.core.buffered((part.len() / per) as u64)?;
        }
        Ok(())
    }

    /// Appends an array of records: dims equal to the record dims (one record), or the record
    /// dims followed by a count.
    pub fn append_array(&mut self, records: &RawArray<T>) -> Result<()> {
        let (dims, want) = (records.dims(), &self.core.shape.dims[..]);
        if dims != want && !(dims.len() == want.len() + 1 && dims.starts_with(want)) {
            return Err(ErrorKind::DimsMismatch {
                expected: format!("{want:?} (one record), or {want:?} then a record count"),
                found: dims.to_vec(),
            }
            .into());
        }
        self.append_slice(records.as_slice())
    }

    fn pack(&mut self, values: &[T]) {
        if !self.core.big_endian {
            if let Some(bytes) = T::as_pod_bytes(values) {
                self.core.pending.extend_from_slice(bytes);
                return;
            }
        }
        let start = self.core.pending.len();
        self.core
            .pending
            .resize(start + values.len() * T::PACKED_SIZE, 0);
        data::pack_into(
            values,
            self.core.big_endian,
            &mut self.core.pending[start..],
        );
    }

    writer_methods!();
}

/// Appends records given as packed little-endian bytes, for an element described at run time
/// ([`ElementSpec`](crate::ElementSpec)): the same file, lock and crash safety as [`RecordWriter<T>`], whose docs
/// describe them. Made by [`RecordOptions::create_dyn`](crate::RecordOptions::create_dyn) and [`RecordOptions::open_dyn`](crate::RecordOptions::open_dyn).
#[derive(Debug)]
pub struct DynRecordWriter {
    pub(super) core: Writer,
}

impl DynRecordWriter {
    /// Appends whole records: `bytes` holds them packed, little-endian, as the trailer's schema
    /// lays them out, and its length must be a multiple of the record size. Not committed until
    /// [`DynRecordWriter::flush`].
    ///
    /// Appends of 64 KiB or more are written out at once, straight from `bytes` (after the
    /// buffer); smaller ones are copied into the buffer, which is written out (still
    /// uncommitted) when it holds [`buffer_bytes`](crate::RecordOptions::buffer_bytes).
    pub fn append_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let record = self.core.shape.bytes;
        if record == 0 || !(bytes.len() as u64).is_multiple_of(record) {
            return Err(Error::unsupported(format!(
                "{} bytes are not whole records of {record} bytes",
                bytes.len()
            )));
        }
        let records = bytes.len() as u64 / record;
        if bytes.len() >= DIRECT_WRITE {
            return self.core.append_direct(records, bytes);
        }
        self.core.pending.extend_from_slice(bytes);
        self.core.buffered(records)
    }

    /// Appends `count` records that `fill` writes, packed as for [`Self::append_bytes`], into
    /// the `count *` [`record_bytes`](Self::record_bytes) bytes it is given: the writer's own
    /// buffer, so that records packed from another layout (a C struct with padding, columns)
    /// are copied once, not packed somewhere and copied again. The file is then written exactly
    /// as [`Self::append_bytes`] writes those bytes: the same writes, buffer and flush policy,
    /// crash safety and counts.
    ///
    /// `fill` is called once, with a zeroed slice. If it returns an error (or panics), nothing
    /// of it is appended and its error is returned: the count is unchanged, nothing new is
    /// committed, and the writer goes on as if the call had not been made. Errors of the
    /// writes after a successful fill are those of [`Self::append_bytes`], with the same
    /// effects. The slice is `count` records of memory on top of the buffer: append a large
    /// number of records in batches (a few MiB each). A `count` whose bytes overflow, or that
    /// cannot be allocated, is an error ([`ErrorKind::TooLarge`]) and appends nothing.
    ///
    /// ```
    /// use rawarray_serde::{ElementSpec, RecordOptions, RecordReader};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("pairs.ra");
    /// // Records of two u32 fields, packed from two columns without an intermediate copy.
    /// let (ids, counts) = ([1u32, 2, 3], [10u32, 20, 30]);
    /// let spec = ElementSpec::of::<[u32; 2]>();
    /// let mut w = RecordOptions::new().create_dyn(&path, &spec).unwrap();
    /// w.append_with(3, |dst| {
    ///     for (rec, (id, n)) in dst.chunks_exact_mut(8).zip(ids.iter().zip(&counts)) {
    ///         rec[..4].copy_from_slice(&id.to_le_bytes());
    ///         rec[4..].copy_from_slice(&n.to_le_bytes());
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// w.finish().unwrap();
    /// let r = RecordReader::<[u32; 2]>::open(&path).unwrap();
    /// assert_eq!(r.slice(..).unwrap().to_vec(), [[1, 10], [2, 20], [3, 30]]);
    /// ```
    pub fn append_with(
        &mut self,
        count: u64,
        fill: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let record = self.core.shape.bytes;
        if record == 0 {
            return Err(Error::unsupported("records of 0 bytes cannot be appended"));
        }
        let len = count
            .checked_mul(record)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(ErrorKind::TooLarge {
                bytes: count.saturating_mul(record),
            })?;
        if len < DIRECT_WRITE {
            self.core.fill_pending(len, fill)?;
            return self.core.buffered(count);
        }
        // As append_bytes does with bytes this long: what the buffer holds is written out
        // first, then these bytes at once, from the (now empty) buffer they were packed into.
        self.core.write_pending()?;
        self.core.fill_pending(len, fill)?;
        let packed = std::mem::take(&mut self.core.pending);
        let written = self.core.append_direct(count, &packed);
        self.core.pending = packed;
        self.core.pending.clear();
        written
    }

    writer_methods!();

    /// Bytes of one record.
    pub fn record_bytes(&self) -> u64 {
        self.core.shape.bytes
    }
}

/// The writer itself, for records of any element: [`RecordWriter<T>`] packs values of `T` into
/// it, [`DynRecordWriter`] hands it packed bytes.
#[derive(Debug)]
pub(super) struct Writer {
    file: File,
    /// The header on disk: the records of the last flush.
    header: Header,
    shape: RecordShape,
    big_endian: bool,
    trailer: Trailer,
    /// The trailer's JSON, encoded once; blocks are framed around it at each flush.
    json: Vec<u8>,
    /// Offset of the spare trailer copy; equal to the data end when the two copies coincide.
    spare_at: u64,
    /// Bytes of records already written after the data end, not yet committed.
    ahead: u64,
    /// Packed records not yet written (the block is appended to them while flushing).
    pending: Vec<u8>,
    /// Records not yet committed: those written ahead and those pending.
    pending_records: u64,
    durability: Durability,
    buffer_bytes: usize,
    closed: bool,
    /// The chunked layout's state, for a compressed record file: record bytes go to it instead
    /// of after the data end.
    chunked: Option<Box<Chunked>>,
    /// Compression asked for, the chunk shape not chosen yet: the file is a plain empty record
    /// file until records are first written out, then it becomes chunked with chunks of the
    /// records written then (see [`RecordOptions::codec`](crate::RecordOptions::codec)).
    pub(super) deferred: Option<crate::options::WriteOptions>,
}

impl Writer {
    pub(super) fn new(
        file: File,
        header: Header,
        shape: RecordShape,
        trailer: Trailer,
        json: Vec<u8>,
        (durability, buffer_bytes): (Durability, usize),
        chunked: Option<Chunked>,
    ) -> Writer {
        Writer {
            file,
            big_endian: header.is_big_endian(),
            spare_at: data_end(&header),
            header,
            shape,
            trailer,
            json,
            ahead: 0,
            pending: Vec::new(),
            pending_records: 0,
            durability,
            buffer_bytes,
            closed: false,
            chunked: chunked.map(Box::new),
            deferred: None,
        }
    }

    /// Adds `len` bytes to the buffer, written by `fill`. If `fill` fails or panics, or the
    /// memory cannot be had, the buffer is left as it was.
    fn fill_pending(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        /// Cuts the buffer back to its length before the fill, unless forgotten.
        struct Rollback<'a>(&'a mut Vec<u8>, usize);
        impl Drop for Rollback<'_> {
            fn drop(&mut self) {
                self.0.truncate(self.1);
            }
        }
        let start = self.pending.len();
        // Amortized (not exact) growth: the buffer is filled a batch at a time.
        self.pending
            .try_reserve(len)
            .map_err(|_| ErrorKind::TooLarge { bytes: len as u64 })?;
        self.pending.resize(start + len, 0);
        let rollback = Rollback(&mut self.pending, start);
        fill(&mut rollback.0[start..])?;
        std::mem::forget(rollback);
        Ok(())
    }

    /// Counts `records` just added to the buffer, then writes the buffer out if it holds
    /// `buffer_bytes`. Counted before writing out: if that write fails they stay pending, and
    /// the next flush commits them.
    fn buffered(&mut self, records: u64) -> Result<()> {
        self.pending_records += records;
        if self.pending.len() >= self.buffer_bytes {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Appends `records` given as `bytes` by writing them out at once, after the buffer: for
    /// appends of [`DIRECT_WRITE`] bytes or more, which the buffer would only copy. Counted
    /// once written: if a write fails, none of them is appended.
    fn append_direct(&mut self, records: u64, bytes: &[u8]) -> Result<()> {
        self.write_pending()?;
        self.write_ahead(bytes)?;
        self.pending_records += records;
        Ok(())
    }

    /// Writes the buffer after the records already written ahead, uncommitted.
    fn write_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let written = self.write_ahead(&pending);
        self.pending = pending;
        written?;
        self.pending.clear();
        Ok(())
    }

    /// Writes record bytes after those already written ahead, uncommitted (they replace the
    /// forward trailer copy; the spare copy stays valid beyond them).
    fn write_ahead(&mut self, bytes: &[u8]) -> Result<()> {
        if self.deferred.is_some() {
            self.start_chunked(bytes.len())?;
        }
        if self.chunked.is_some() {
            return self.with_chunked(|c, file, reserve, _| c.feed(file, bytes, reserve));
        }
        let at = self.data_end() + self.ahead;
        self.reserve(at + bytes.len() as u64)?;
        write_all_at(&self.file, bytes, at)?;
        self.ahead += bytes.len() as u64;
        Ok(())
    }

    /// Keeps the bytes up to `end`, and a trailer block after them, clear of the spare copy:
    /// if they would reach it, a new spare copy is written (and synced) further out, leaving
    /// free space of 1/8 of the data, at least 64 KiB.
    fn reserve(&mut self, end: u64) -> Result<()> {
        let sync = self.durability == Durability::Fsync;
        let header_len = self.header.encoded_len() as u64;
        reserve_spare(
            &self.file,
            &self.json,
            header_len,
            &mut self.spare_at,
            end,
            sync,
        )
    }

    /// Commits the records appended so far: writes the buffer and the trailer block after them
    /// in one `pwrite`, syncs, then rewrites the header in one `pwrite` and syncs (with
    /// [`Durability::Fsync`]). When it returns, the header on disk covers every record appended.
    /// On an error the file still holds the records of the last successful flush, and flushing
    /// can be retried.
    fn flush(&mut self) -> Result<()> {
        if self.pending_records == 0 {
            return Ok(());
        }
        if self.chunked.is_some() || self.deferred.is_some() {
            // A deferred file becomes chunked here (its records are all pending).
            self.write_pending()?;
            let records = self.len();
            let sync = self.durability == Durability::Fsync;
            let header = self.with_chunked(|c, file, reserve, write_block| {
                let mut write_header =
                    |h: &Header| -> Result<()> { Ok(write_all_at(file, &h.encode(), 0)?) };
                c.flush(file, records, sync, reserve, write_block, &mut write_header)
            })?;
            self.header = header;
            self.pending_records = 0;
            return Ok(());
        }
        let at = self.data_end() + self.ahead;
        let buffered = self.pending.len();
        let new_end = at + buffered as u64;
        self.reserve(new_end)?;
        encode_block_into(&self.json, new_end, &mut self.pending);
        let written = write_all_at(&self.file, &self.pending, at);
        self.pending.truncate(buffered);
        written?;
        self.sync_if_durable()?;
        let mut header = self.header.clone();
        let records = header.records().expect("record files have a last dim");
        header.set_records(records + self.pending_records)?;
        debug_assert_eq!(header.size, self.header.size + self.ahead + buffered as u64);
        write_all_at(&self.file, &header.encode(), 0)?;
        self.sync_if_durable()?;
        self.header = header;
        self.ahead = 0;
        self.pending.clear();
        self.pending_records = 0;
        Ok(())
    }

    /// Commits like [`RecordWriter::flush`], syncing as [`Durability::Fsync`] does (records
    /// and trailer, then the header), whatever the writer's durability: when it returns, every
    /// record appended survives a power cut.
    fn sync(&mut self) -> Result<()> {
        if self.pending_records == 0 {
            return Ok(self.file.sync_data()?);
        }
        // Records flushed without syncs before are synced by this flush's first sync, before
        // its header is written.
        let durability = std::mem::replace(&mut self.durability, Durability::Fsync);
        let flushed = self.flush();
        self.durability = durability;
        flushed
    }

    fn close(&mut self) -> Result<()> {
        self.flush()?;
        let end = self.data_end();
        if self.spare_at != end {
            self.file.set_len(end + block_len(self.json.len()) as u64)?;
            self.sync_if_durable()?;
            self.spare_at = end;
        }
        self.closed = true;
        Ok(())
    }

    /// Turns the plain empty file of a deferred compressed writer into a chunked one, whose
    /// chunks hold the records written out now (the buffer and `more` bytes), at most about
    /// 1 MiB of them. The trailer stays valid throughout: a spare copy is made beyond the new
    /// section before the section overwrites the forward copy, and the header, flagged
    /// chunked, is written last.
    fn start_chunked(&mut self, more: usize) -> Result<()> {
        let Some(opts) = self.deferred.take() else {
            return Ok(());
        };
        let records = ((self.pending.len() + more) as u64 / self.shape.bytes.max(1)).max(1);
        let per = records.min(super::chunked::default_records(self.shape.bytes));
        let opts = opts.chunks(vec![per]);
        let sync = self.durability == Durability::Fsync;
        let base = self.header.encoded_len() as u64;
        let schema = self.trailer.schema.clone();
        let section = super::chunked::new_section_len(
            &self.header,
            self.shape.bytes,
            &opts,
            schema.as_ref(),
        )?;
        reserve_spare(
            &self.file,
            &self.json,
            base,
            &mut self.spare_at,
            base + section,
            sync,
        )?;
        let header = Chunked::create(
            &self.file,
            &self.header,
            self.shape.bytes,
            &opts,
            schema.as_ref(),
        )?;
        let chunked = Chunked::open(
            &self.file,
            &header,
            self.shape.bytes,
            opts.get_threads(),
            sync,
        )?;
        self.header = header;
        self.chunked = Some(Box::new(chunked));
        Ok(())
    }

    /// Runs `f` on the chunked state with the file, a `reserve(end)` that keeps the bytes up
    /// to `end` (and a trailer block) clear of the spare copy, and a `write_block(end)` that
    /// writes the forward trailer block at a new data end `end`.
    fn with_chunked<R>(
        &mut self,
        f: impl FnOnce(&mut Chunked, &File, AtEnd<'_>, AtEnd<'_>) -> Result<R>,
    ) -> Result<R> {
        let sync = self.durability == Durability::Fsync;
        let header_len = self.header.encoded_len() as u64;
        let Writer {
            file,
            json,
            spare_at,
            chunked,
            ..
        } = self;
        let chunked = chunked.as_mut().expect("called for chunked files");
        let spare_at = std::cell::RefCell::new(spare_at);
        let mut reserve = |end: u64| {
            reserve_spare(
                file,
                json,
                header_len,
                &mut spare_at.borrow_mut(),
                end,
                sync,
            )
        };
        let mut write_block = |end: u64| -> Result<()> {
            reserve_spare(
                file,
                json,
                header_len,
                &mut spare_at.borrow_mut(),
                end,
                sync,
            )?;
            let mut block = Vec::with_capacity(block_len(json.len()));
            encode_block_into(json, end, &mut block);
            write_all_at(file, &block, end)?;
            if sync {
                file.sync_data()?;
            }
            Ok(())
        };
        f(chunked, file, &mut reserve, &mut write_block)
    }

    fn sync_if_durable(&self) -> Result<()> {
        if self.durability == Durability::Fsync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn data_end(&self) -> u64 {
        data_end(&self.header)
    }

    /// Records appended, flushed or not.
    fn len(&self) -> u64 {
        self.flushed_len() + self.pending_records
    }

    /// Records the header on disk covers: those of the last flush.
    fn flushed_len(&self) -> u64 {
        *self
            .header
            .dims
            .last()
            .expect("record files have a last dim")
    }
}

/// A step of a chunked flush given a file offset: reserving room up to it, or writing the
/// trailer block there.
type AtEnd<'a> = &'a mut dyn FnMut(u64) -> Result<()>;

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported here; the file is valid whatever happens.
            let _ = self.close();
        }
    }
}
