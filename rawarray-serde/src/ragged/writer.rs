//! Appending rows to a ragged file as a program runs ([`RaggedWriter`], [`RaggedOptions`]),
//! crash-safely, each flush committed by one header `pwrite`.

use super::header::{grown_slots, read_header, RaggedHeader, FIRST_SLOTS, MAX_HEADER_LEN};
use super::values::{is_text_trailer, ragged_trailer, RAGGED_VALUES};
use std::cell::RefCell;
use std::fs::File;
use std::marker::PhantomData;
use std::path::Path;

use crate::atomic::create_atomic;
use crate::codec::{ChunkWriter, Config};
use crate::data;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{read_exact_at, write_all_at};
use crate::header::{Flags, Header};
use crate::lock::{lock_exclusive, open_locked};
use crate::options::WriteOptions;
use crate::records::{default_records, reserve_spare, settle, Chunked, Durability, ElementSpec};
use crate::trailer::{block_len, encode_block_into, locate, probe_backward, Probe};

/// Options for a [`RaggedWriter`].
#[derive(Clone, Debug, Default)]
pub struct RaggedOptions {
    durability: Durability,
    text: bool,
    reserve_rows: u64,
    storage: WriteOptions,
}

impl RaggedOptions {
    /// Defaults: no `fsync` at flushes ([`Durability::NoFsync`]), not text.
    pub fn new() -> RaggedOptions {
        RaggedOptions::default()
    }

    /// Whether each flush syncs, as for records.
    pub fn durability(mut self, durability: Durability) -> RaggedOptions {
        self.durability = durability;
        self
    }

    /// Marks the rows as UTF-8 text (a writer of `u8` only).
    pub fn text(mut self, on: bool) -> RaggedOptions {
        self.text = on;
        self
    }

    /// Reserves offsets slots for `rows` rows in the new file (a hole on disk until written),
    /// so that appending that many rows never rewrites the file to grow its offsets region
    /// (by default 511 rows, then growing 2 to 16-fold by the mean size of a row: each growth
    /// copies the values written so far).
    ///
    /// ```
    /// use rawarray_serde::{RaggedOptions, RaggedWriter};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let opts = RaggedOptions::new().reserve_rows(1_000_000);
    /// let w = RaggedWriter::<f32>::create_with(&path, &opts).unwrap();
    /// assert_eq!(w.finish().unwrap().slots(), 1_000_001);
    /// ```
    pub fn reserve_rows(mut self, rows: u64) -> RaggedOptions {
        self.reserve_rows = rows;
        self
    }

    /// How a new file stores its values ([`WriteOptions`], as
    /// [`RecordOptions::storage`](crate::RecordOptions::storage) takes it): plain (the
    /// default), or chunked with its codec, level, filters, statistics, layout version and
    /// threads (doc/format.md, section 10.2). The values are cut into chunks of whole values:
    /// the chunk shape, if given, is one entry (values per chunk) or the value dims then the
    /// values per chunk; by default the chunks hold the values of the first flush that has
    /// any, at most about 1 MiB of them (a flush inside a chunk writes a new version of it,
    /// the old one left as dead bytes, as for records). [`RaggedWriter::open`] keeps a file's
    /// storage. Whole-section LZ4 cannot be appended to and is refused.
    ///
    /// ```
    /// use rawarray_serde::codec::Codec;
    /// use rawarray_serde::{Ragged, RaggedOptions, RaggedWriter, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let opts = RaggedOptions::new().storage(WriteOptions::new().codec(Codec::Zstd));
    /// let mut w = RaggedWriter::<f64>::create_with(&path, &opts).unwrap();
    /// for k in 0..1000 {
    ///     w.append_row(&vec![0.5; k % 7]).unwrap();
    ///     if k % 100 == 99 {
    ///         w.flush().unwrap(); // readers see these rows; a killed writer keeps them
    ///     }
    /// }
    /// assert!(w.finish().unwrap().chunked);
    /// let r = Ragged::<f64>::read_file(&path).unwrap();
    /// assert_eq!((r.rows(), r.row(13).unwrap()), (1000, &[0.5; 6][..]));
    /// ```
    pub fn storage(mut self, opts: WriteOptions) -> RaggedOptions {
        self.storage = opts;
        self
    }
}

/// Appends rows to a ragged file, committed by one header write per flush, as
/// [`RecordWriter`](crate::RecordWriter) commits records: readers see the rows of the last
/// flush, a crash loses only rows not flushed, and the file's exclusive lock keeps other
/// writers out.
///
/// Each flush writes the new offsets into free slots of the offsets region (past the
/// `rows + 1` a reader uses), the new values and a trailer block after the data end, then the
/// header. When the region is full the file is rewritten with 2 to 16 times the slots (more
/// for larger rows, whose values cost more to copy; see [`RaggedOptions::reserve_rows`]) and renamed over
/// the path (readers that have it open keep the old file).
///
/// ```
/// use rawarray_serde::{Ragged, RaggedWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("steps.ra");
/// let mut w = RaggedWriter::<u32>::create(&path).unwrap();
/// w.append_row(&[1, 2, 3]).unwrap();
/// w.append_row(&[]).unwrap();
/// w.flush().unwrap();
/// w.append_row(&[4]).unwrap();
/// w.finish().unwrap();
/// let r = Ragged::<u32>::read_file(&path).unwrap();
/// assert_eq!(r.iter().collect::<Vec<_>>(), [&[1, 2, 3][..], &[], &[4]]);
/// ```
#[derive(Debug)]
pub struct RaggedWriter<T: Element> {
    path: std::path::PathBuf,
    file: File,
    header: RaggedHeader,
    json: Vec<u8>,
    spare_at: u64,
    /// Offsets of the rows not yet committed.
    pending_offsets: Vec<u64>,
    /// Their packed values.
    pending_values: Vec<u8>,
    durability: Durability,
    closed: bool,
    /// The values' chunked section being appended to (flags = 12), `None` for plain values.
    values: Option<Box<Chunked>>,
    /// The storage of a new chunked file whose chunk shape is chosen by its first flush of
    /// values (see [`RaggedOptions::storage`]).
    deferred: Option<WriteOptions>,
    /// Threads compressing chunks (0: all cores).
    threads: usize,
    _element: PhantomData<fn(T)>,
}

impl<T: Element> RaggedWriter<T> {
    /// Creates (or replaces, atomically) the file at `path` with no rows.
    pub fn create(path: impl AsRef<Path>) -> Result<RaggedWriter<T>> {
        RaggedWriter::create_with(path, &RaggedOptions::new())
    }

    /// [`RaggedWriter::create`] with options.
    pub fn create_with(path: impl AsRef<Path>, opts: &RaggedOptions) -> Result<RaggedWriter<T>> {
        let spec = ElementSpec::of::<T>();
        if opts.text && spec.layout() != &u8::layout() {
            return Err(Error::unsupported(
                "only a RaggedWriter<u8> writes text (one UTF-8 string a row)",
            ));
        }
        opts.storage.storage().check_grows_in_place(RAGGED_VALUES)?;
        if opts.storage.chunk_settings().is_some() {
            return RaggedWriter::create_chunked(path.as_ref(), opts);
        }
        let header = RaggedHeader::new(
            spec.eltype(),
            spec.elbyte(),
            spec.inner_dims().to_vec(),
            0,
            0,
            FIRST_SLOTS.max(opts.reserve_rows.saturating_add(1)),
        )?;
        check_header_len(&header)?;
        let json = ragged_trailer::<T>(opts.text).to_json();
        let sync = opts.durability == Durability::Fsync;
        let path = path.as_ref();
        let file = create_atomic(path, sync, |f| {
            write_fresh(f, &header, &0u64.to_le_bytes(), &[], &json)
        })?;
        Ok(RaggedWriter::with_file(
            path,
            file,
            header,
            json,
            opts.durability,
        ))
    }

    /// [`RaggedWriter::create_with`] of a file whose values are chunked: header, slot count
    /// word, offsets region, and a values section of no chunks yet (config and index segment
    /// 0), written whole and renamed over the path.
    fn create_chunked(path: &Path, opts: &RaggedOptions) -> Result<RaggedWriter<T>> {
        let spec = ElementSpec::of::<T>();
        let template = RaggedHeader::new(
            spec.eltype(),
            spec.elbyte(),
            spec.inner_dims().to_vec(),
            0,
            0,
            1,
        )?;
        let value_bytes = template.value_bytes();
        if value_bytes == 0 {
            return Err(Error::unsupported(
                "values of no bytes have nothing to compress: write them plain",
            ));
        }
        let slots = FIRST_SLOTS.max(opts.reserve_rows.saturating_add(1));
        check_header_len(&RaggedHeader::new_chunked(
            template.eltype,
            template.elbyte,
            template.value_dims.clone(),
            0,
            0,
            slots,
            0,
        )?)?;
        let storage = opts.storage.clone();
        // Without a chunk shape, the first flush of values chooses it (see `storage`).
        let (now, deferred) = match storage.get_chunks() {
            Some(_) => (storage.clone(), None),
            None => (
                storage.clone().chunks(vec![default_records(value_bytes)]),
                Some(storage.clone()),
            ),
        };
        let config = Chunked::config(&values_header(&template)?, value_bytes, &now, None)?;
        let json = ragged_trailer::<T>(opts.text).to_json();
        let sync = opts.durability == Durability::Fsync;
        let mut made = None;
        let file = create_atomic(path, sync, |f| {
            made = Some(write_chunked_file(
                f,
                &template,
                slots,
                &0u64.to_le_bytes(),
                Values::New(Box::new(config)),
                &json,
            )?);
            Ok(())
        })?;
        let header = made.expect("written above");
        let mut w = RaggedWriter::with_file(path, file, header, json, opts.durability);
        w.threads = storage.get_threads();
        w.values = Some(Box::new(open_values(&w.file, &w.header, w.threads, sync)?));
        w.deferred = deferred;
        Ok(w)
    }

    /// Opens the ragged file at `path` to append rows, after leaving it as
    /// [`RaggedWriter::finish`] would (rows a crash left uncommitted are dropped). A file
    /// whose values are chunked is continued in its own layout version, codec and chunks.
    pub fn open(path: impl AsRef<Path>) -> Result<RaggedWriter<T>> {
        let path = path.as_ref();
        let file = open_locked(path)?;
        let header = read_header(&file)?;
        let spec = ElementSpec::of::<T>();
        header.check_element(&spec, std::any::type_name::<T>())?;
        check_header_len(&header)?;
        let len = file.metadata()?.len();
        let end = header.data_end();
        if len < end {
            return Err(ErrorKind::Truncated {
                expected: header.size,
                found: len.saturating_sub(header.encoded_len()),
            }
            .into());
        }
        let trailer = match locate(&file, end, len) {
            Probe::Valid(b) => Some(b.trailer),
            Probe::Absent => None,
            Probe::Damaged(why) => return Err(ErrorKind::Trailer(why).into()),
        };
        let json = ragged_trailer::<T>(is_text_trailer(trailer.as_ref())).to_json();
        let spare = probe_backward(&file, end, len).valid().map(|b| b.start);
        settle(&file, end, &json, len, spare, false)?;
        clear_free_slots(&file, &header)?;
        let values = if header.chunked {
            Some(Box::new(open_values(&file, &header, 0, false)?))
        } else {
            None
        };
        let mut w = RaggedWriter::with_file(path, file, header, json, Durability::NoFsync);
        w.values = values;
        Ok(w)
    }

    fn with_file(
        path: &Path,
        file: File,
        header: RaggedHeader,
        json: Vec<u8>,
        durability: Durability,
    ) -> RaggedWriter<T> {
        RaggedWriter {
            path: path.to_path_buf(),
            file,
            spare_at: header.data_end(),
            header,
            json,
            pending_offsets: Vec::new(),
            pending_values: Vec::new(),
            durability,
            closed: false,
            values: None,
            deferred: None,
            threads: 0,
            _element: PhantomData,
        }
    }

    /// Appends one row (buffered until [`RaggedWriter::flush`]).
    pub fn append_row(&mut self, row: &[T]) -> Result<()> {
        // Plain-old-data rows on a little-endian machine are their packed bytes: one copy.
        if let Some(bytes) = T::as_pod_bytes(row) {
            self.pending_values.extend_from_slice(bytes);
        } else {
            let start = self.pending_values.len();
            self.pending_values
                .resize(start + row.len() * T::PACKED_SIZE, 0);
            data::pack_into(row, false, &mut self.pending_values[start..]);
        }
        let last = self
            .pending_offsets
            .last()
            .copied()
            .unwrap_or(self.header.values);
        self.pending_offsets.push(last + row.len() as u64);
        Ok(())
    }

    /// Rows appended, flushed or not.
    pub fn rows(&self) -> u64 {
        self.header.rows + self.pending_offsets.len() as u64
    }

    /// Rows the header on disk covers.
    pub fn flushed_rows(&self) -> u64 {
        self.header.rows
    }

    /// Commits the rows appended so far: offsets into free slots, values and a trailer block
    /// after the data end (one `pwrite`), then the header (one `pwrite`), each synced with
    /// [`Durability::Fsync`]. On an error the file holds the rows of the last flush.
    pub fn flush(&mut self) -> Result<()> {
        if self.pending_offsets.is_empty() {
            return Ok(());
        }
        if self.values.is_some() {
            return self.flush_chunked();
        }
        if self.header.chunked {
            return Err(Error::unsupported(
                "an earlier flush failed and the writer could not read the file again: the file \
                 holds the rows of the last flush; open it again (RaggedWriter::open) to append",
            ));
        }
        let rows = self.header.rows + self.pending_offsets.len() as u64;
        if rows + 1 > self.header.slots() {
            return self.grow(rows + 1);
        }
        let file = &self.file;
        let sync = self.durability == Durability::Fsync;
        let h = &self.header;
        let offsets = data::encode_values(&self.pending_offsets, false);
        write_all_at(file, &offsets, h.offsets_at() + 8 * (h.rows + 1))?;
        let at = h.data_end();
        let new_end = at + self.pending_values.len() as u64;
        reserve_spare(
            file,
            &self.json,
            h.encoded_len(),
            &mut self.spare_at,
            new_end,
            sync,
        )?;
        let buffered = self.pending_values.len();
        encode_block_into(&self.json, new_end, &mut self.pending_values);
        let written = write_all_at(file, &self.pending_values, at);
        self.pending_values.truncate(buffered);
        written?;
        if sync {
            file.sync_data()?;
        }
        let values = *self.pending_offsets.last().expect("not empty");
        let mut next = self.header.clone();
        next.size += buffered as u64;
        next.values = values;
        next.rows = rows;
        next.validate()?;
        write_all_at(file, &next.encode(), 0)?;
        if sync {
            file.sync_data()?;
        }
        self.header = next;
        self.pending_offsets.clear();
        self.pending_values.clear();
        Ok(())
    }

    /// Rewrites the file with an offsets region of at least `need` slots (2 to 16 times as
    /// many as now: [`grown_slots`]), every row appended included, and renames it over the path.
    fn grow(&mut self, need: u64) -> Result<()> {
        let values = *self.pending_offsets.last().expect("not empty");
        let rows = self.header.rows + self.pending_offsets.len() as u64;
        let value_bytes = self.header.values_len() + self.pending_values.len() as u64;
        let slots = grown_slots(self.header.slots(), need, rows, value_bytes);
        let mut next = self.header.clone();
        next.values = values;
        next.rows = rows;
        next.size = 0;
        let next = RaggedHeader::new(
            next.eltype,
            next.elbyte,
            next.value_dims,
            values,
            rows,
            slots,
        )?;
        let old = &self.file;
        let h = &self.header;
        let mut offsets = vec![0u8; 8 * (h.rows as usize + 1)];
        read_exact_at(old, &mut offsets, h.offsets_at())?;
        offsets.extend(self.pending_offsets.iter().flat_map(|o| o.to_le_bytes()));
        let sync = self.durability == Durability::Fsync;
        // The replacement takes the path's lock, which our own handle holds: let it go first.
        // Another writer taking it in between makes this flush fail with `Locked`; the file
        // then still holds the rows of the last flush.
        old.unlock()?;
        let created = create_atomic(&self.path, sync, |f| {
            // The committed values move file to file (in the kernel where it can), never
            // through a buffer of their size; the new rows follow them.
            write_fresh(f, &next, &offsets, &[], &self.json)?;
            copy_range(old, h.values_at(), h.values_len(), f, next.values_at())?;
            write_all_at(f, &self.pending_values, next.values_at() + h.values_len())?;
            Ok(())
        });
        self.file = match created {
            Ok(file) => file,
            Err(e) => {
                // Still ours unless another writer took it; either way the error is this one.
                let _ = lock_exclusive(&self.file, &self.path);
                return Err(e);
            }
        };
        self.spare_at = next.data_end();
        self.header = next;
        self.pending_offsets.clear();
        self.pending_values.clear();
        Ok(())
    }

    /// [`RaggedWriter::flush`] of chunked values, as doc/format.md section 10.2 orders it:
    /// (1) the new offsets into free slots; (2) the values fed to the section (each chunk they
    /// fill appended, uncommitted); (3) the section's flush (the partial last chunk, flagged
    /// full extent, the trailer block, then one header write, or two when a committed last
    /// chunk is replaced: the new `size` with the old `m` and `n`, the entry moved, then the
    /// new `m` and `n`).
    fn flush_chunked(&mut self) -> Result<()> {
        let rows = self.header.rows + self.pending_offsets.len() as u64;
        let values = *self.pending_offsets.last().expect("not empty");
        let fresh = match &self.deferred {
            Some(opts) if self.header.values == 0 && !self.pending_values.is_empty() => {
                let vb = self.header.value_bytes();
                let per = (self.pending_values.len() as u64 / vb).clamp(1, default_records(vb));
                Some(opts.clone().chunks(vec![per]))
            }
            _ => None,
        };
        if rows + 1 > self.header.slots() || fresh.is_some() {
            let h = &self.header;
            let slots = if rows + 1 > h.slots() {
                let value_bytes = h.values_len() + self.pending_values.len() as u64;
                grown_slots(h.slots(), rows + 1, rows, value_bytes)
            } else {
                h.slots()
            };
            self.rebuild_chunked(slots, fresh)?;
        }
        let sync = self.durability == Durability::Fsync;
        let RaggedWriter {
            file,
            header,
            json,
            spare_at,
            pending_offsets,
            pending_values,
            values: section,
            threads,
            ..
        } = self;
        let offsets = data::encode_values(pending_offsets, false);
        write_all_at(file, &offsets, header.offsets_at() + 8 * (header.rows + 1))?;
        let mut next = header.clone();
        next.rows = rows;
        next.values = values;
        if values == header.values {
            // Empty rows only: nothing to compress; the header alone adds them.
            if sync {
                file.sync_data()?;
            }
            next.validate()?;
            write_all_at(file, &next.encode(), 0)?;
        } else {
            let committed = header.clone();
            let outcome = commit_values(
                file,
                json,
                spare_at,
                section.as_mut().expect("chunked values"),
                &committed,
                pending_values,
                (values, rows),
                sync,
            );
            let vh = match outcome {
                Ok(vh) => vh,
                Err(e) => {
                    // The section's state may hold values no header covers: start again from
                    // the header on disk (the last commit, perhaps a first header write of this
                    // flush), the rows staying pending for a retry.
                    let reset = read_header(file).and_then(|h| {
                        let c = open_values(file, &h, *threads, sync)?;
                        Ok((h, c))
                    });
                    match reset {
                        Ok((h, c)) => {
                            if h.rows != committed.rows {
                                // The last header write was done (a sync after it failed).
                                pending_offsets.clear();
                                pending_values.clear();
                            }
                            *header = h;
                            *section = Some(Box::new(c));
                        }
                        Err(_) => *section = None,
                    }
                    return Err(e);
                }
            };
            next = RaggedHeader::new_chunked(
                next.eltype,
                next.elbyte,
                next.value_dims.clone(),
                values,
                rows,
                next.slots(),
                vh.size,
            )?;
        }
        if sync {
            file.sync_data()?;
        }
        *header = next;
        pending_offsets.clear();
        pending_values.clear();
        Ok(())
    }

    /// Rewrites a chunked file with an offsets region of `slots` slots and the committed rows:
    /// the values section copied as it is (its offsets count from its own first byte), or,
    /// `fresh` (no values yet), a new one of those options. Renamed over the path; the rows
    /// not committed stay pending.
    fn rebuild_chunked(&mut self, slots: u64, fresh: Option<WriteOptions>) -> Result<()> {
        let h = self.header.clone();
        let mut offsets = vec![0u8; 8 * (h.rows as usize + 1)];
        read_exact_at(&self.file, &mut offsets, h.offsets_at())?;
        let values = match &fresh {
            Some(opts) => Values::New(Box::new(Chunked::config(
                &values_header(&h)?,
                h.value_bytes(),
                opts,
                None,
            )?)),
            None => Values::Copy {
                from: &self.file,
                at: h.values_at(),
                len: h.size - 8 * (h.slots() + 1),
            },
        };
        let sync = self.durability == Durability::Fsync;
        // As in `grow`: the replacement takes the path's lock, which our handle holds.
        self.file.unlock()?;
        let mut made = None;
        let created = create_atomic(&self.path, sync, |f| {
            made = Some(write_chunked_file(
                f, &h, slots, &offsets, values, &self.json,
            )?);
            Ok(())
        });
        self.file = match created {
            Ok(file) => file,
            Err(e) => {
                let _ = lock_exclusive(&self.file, &self.path);
                return Err(e);
            }
        };
        self.header = made.expect("written above");
        self.spare_at = self.header.data_end();
        self.values = Some(Box::new(open_values(
            &self.file,
            &self.header,
            self.threads,
            sync,
        )?));
        if fresh.is_some() {
            self.deferred = None;
        }
        Ok(())
    }

    /// Commits as [`Durability::Fsync`] would, whatever the writer's durability.
    pub fn sync(&mut self) -> Result<()> {
        let durability = std::mem::replace(&mut self.durability, Durability::Fsync);
        let flushed = self.flush();
        self.durability = durability;
        flushed?;
        self.file.sync_data()?;
        Ok(())
    }

    /// Flushes, cuts the file after the trailer block and closes it.
    pub fn finish(mut self) -> Result<RaggedHeader> {
        self.close()?;
        Ok(self.header.clone())
    }

    fn close(&mut self) -> Result<()> {
        self.flush()?;
        if self.header.chunked && self.values.is_none() {
            // A failed flush left a header on disk this writer may not know: cut nothing.
            self.closed = true;
            return Ok(());
        }
        let end = self.header.data_end();
        let file = &self.file;
        if self.spare_at != end {
            file.set_len(end + block_len(self.json.len()) as u64)?;
            self.spare_at = end;
        }
        self.closed = true;
        Ok(())
    }
}

impl<T: Element> Drop for RaggedWriter<T> {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported here; the file is valid whatever happens.
            let _ = self.close();
        }
    }
}

/// Zeroes the offsets slots past `offsets[rows]` (and syncs), so that what a dead writer's
/// torn flush left there can never be taken by [`recover`](crate::recover) for rows of a
/// later flush: it reads the rows of an uncommitted flush from those slots.
pub(super) fn clear_free_slots(file: &File, h: &RaggedHeader) -> Result<()> {
    let free = h.slots() - h.rows - 1;
    if free == 0 {
        return Ok(());
    }
    let at = h.offsets_at() + 8 * (h.rows + 1);
    let mut buf = vec![0u8; data::to_usize((8 * free).min(1 << 20))?];
    let mut done = 0u64;
    let mut dirty = false;
    while done < 8 * free {
        let n = (8 * free - done).min(buf.len() as u64) as usize;
        read_exact_at(file, &mut buf[..n], at + done)?;
        if buf[..n].iter().any(|&b| b != 0) {
            buf[..n].fill(0);
            write_all_at(file, &buf[..n], at + done)?;
            dirty = true;
        }
        done += n as u64;
    }
    if dirty {
        file.sync_data()?;
    }
    Ok(())
}

/// Steps (2) and (3) of [`RaggedWriter::flush_chunked`]: feeds `pending` (the new values,
/// `(values, rows)` the new counts) to the values section and commits them, each header write
/// the ragged header of `committed`'s file with the section's size. Returns the section's
/// header committed.
#[allow(clippy::too_many_arguments)] // the writer's parts, borrowed apart
fn commit_values(
    file: &File,
    json: &[u8],
    spare_at: &mut u64,
    section: &mut Chunked,
    committed: &RaggedHeader,
    pending: &[u8],
    (values, rows): (u64, u64),
    sync: bool,
) -> Result<Header> {
    let header_len = committed.encoded_len();
    let spare_at = RefCell::new(spare_at);
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
    section.feed(file, pending, &mut reserve)?;
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
    let mut write_header = |vh: &Header| -> Result<()> {
        // The section commits with the old value count first when it replaces a committed
        // chunk: the old rows go with it.
        let m = *vh.dims.last().expect("values have a last dim");
        let n = if m == values { rows } else { committed.rows };
        let h = RaggedHeader::new_chunked(
            committed.eltype,
            committed.elbyte,
            committed.value_dims.clone(),
            m,
            n,
            committed.slots(),
            vh.size,
        )?;
        Ok(write_all_at(file, &h.encode(), 0)?)
    };
    section.flush(
        file,
        values,
        sync,
        &mut reserve,
        &mut write_block,
        &mut write_header,
    )
}

/// The values of `h` as the header of a chunked section of no values yet (dims `[value
/// dims..., 0]`), for a new section's config.
fn values_header(h: &RaggedHeader) -> Result<Header> {
    let mut vh = h.values_header()?;
    if let Some(m) = vh.dims.last_mut() {
        *m = 0;
    }
    vh.flags = Flags::CHUNKED;
    Ok(vh)
}

/// Resumes appending to the values section of the chunked ragged file `file` (header `h`,
/// lock held): what a dead writer left past its committed size is reclaimed, and the values of
/// its partial last chunk decoded to continue it.
fn open_values(file: &File, h: &RaggedHeader, threads: usize, durable: bool) -> Result<Chunked> {
    let vh = h.chunked_values_header()?;
    let cw = ChunkWriter::open_in(file, vh, h.values_at())?;
    Chunked::resume(file, cw, h.value_bytes(), threads, durable)
}

/// Where the values section of a chunked ragged file being written whole comes from.
enum Values<'a> {
    /// A new section of this config, of no values.
    New(Box<Config>),
    /// `len` bytes at `at` of another file: a committed section, copied as it is.
    Copy { from: &'a File, at: u64, len: u64 },
}

/// Writes a whole chunked ragged file of `h`'s element, values and rows with `slots` offsets
/// slots: header with the slot count word, `offsets` (packed; the rest a hole), the values
/// section, the trailer block. Returns its header.
fn write_chunked_file(
    f: &File,
    h: &RaggedHeader,
    slots: u64,
    offsets: &[u8],
    values: Values<'_>,
    json: &[u8],
) -> Result<RaggedHeader> {
    let at = RaggedHeader::new_chunked(
        h.eltype,
        h.elbyte,
        h.value_dims.clone(),
        h.values,
        h.rows,
        slots,
        0,
    )?
    .values_at();
    let len = match values {
        Values::New(config) => {
            let vh = values_header(h)?;
            ChunkWriter::create_in(f, &vh, *config, at)?.header().size
        }
        Values::Copy { from, at: src, len } => {
            copy_range(from, src, len, f, at)?;
            len
        }
    };
    let next = RaggedHeader::new_chunked(
        h.eltype,
        h.elbyte,
        h.value_dims.clone(),
        h.values,
        h.rows,
        slots,
        len,
    )?;
    write_fresh(f, &next, offsets, &[], json)?;
    Ok(next)
}

pub(super) fn check_header_len(h: &RaggedHeader) -> Result<()> {
    // A chunked file's slot count word is written with the header.
    let len = h.encode().len();
    if len > MAX_HEADER_LEN {
        return Err(Error::unsupported(format!(
            "a ragged header of {len} bytes cannot be updated in one untearable write (at most \
             {MAX_HEADER_LEN})"
        )));
    }
    Ok(())
}

/// Copies `len` bytes at `from` in `src` to `to` in `dst` (`std::io::copy`, which Linux does
/// with `copy_file_range`); a source shorter than that is an error.
pub(super) fn copy_range(src: &File, from: u64, len: u64, dst: &File, to: u64) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut src, mut dst) = (src, dst);
    src.seek(SeekFrom::Start(from))?;
    dst.seek(SeekFrom::Start(to))?;
    let copied = std::io::copy(&mut src.take(len), &mut dst)?;
    if copied < len {
        return Err(ErrorKind::Truncated {
            expected: len,
            found: copied,
        }
        .into());
    }
    Ok(())
}

/// Writes a whole ragged file: header, `offsets` (packed; the rest of the region a hole),
/// `values` (packed) and the trailer block.
pub(super) fn write_fresh(
    f: &File,
    h: &RaggedHeader,
    offsets: &[u8],
    values: &[u8],
    json: &[u8],
) -> Result<()> {
    write_all_at(f, &h.encode(), 0)?;
    write_all_at(f, offsets, h.offsets_at())?;
    write_all_at(f, values, h.values_at())?;
    let mut block = Vec::new();
    encode_block_into(json, h.data_end(), &mut block);
    write_all_at(f, &block, h.data_end())?;
    Ok(())
}
