//! Appending rows to a ragged file as a program runs ([`RaggedWriter`], [`RaggedOptions`]),
//! crash-safely, each flush committed by one header `pwrite`.

use super::header::{grown_slots, read_header, RaggedHeader, FIRST_SLOTS, MAX_HEADER_LEN};
use super::values::{is_text_trailer, ragged_trailer};
use std::fs::File;
use std::marker::PhantomData;
use std::path::Path;

use crate::atomic::create_atomic;
use crate::data;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{read_exact_at, write_all_at};
use crate::lock::{lock_exclusive, open_locked};
use crate::records::{reserve_spare, settle, Durability, ElementSpec};
use crate::trailer::{block_len, encode_block_into, locate, probe_backward, Probe};

/// Options for a [`RaggedWriter`].
#[derive(Clone, Debug, Default)]
pub struct RaggedOptions {
    durability: Durability,
    text: bool,
    reserve_rows: u64,
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

    /// Opens the ragged file at `path` to append rows, after leaving it as
    /// [`RaggedWriter::finish`] would (rows a crash left uncommitted are dropped).
    pub fn open(path: impl AsRef<Path>) -> Result<RaggedWriter<T>> {
        let path = path.as_ref();
        let file = open_locked(path)?;
        let header = read_header(&file)?;
        if header.chunked {
            return Err(chunked_append());
        }
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
        Ok(RaggedWriter::with_file(
            path,
            file,
            header,
            json,
            Durability::NoFsync,
        ))
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

/// The error for appending to (or recovering) a file whose values are chunked.
pub(super) fn chunked_append() -> Error {
    Error::unsupported(
        "the values are chunked (compressed, flag bit 2): this version appends rows only to \
         plain values, so such a file was never appended to (ra decompress gives plain values)",
    )
}

pub(super) fn check_header_len(h: &RaggedHeader) -> Result<()> {
    if h.encoded_len() as usize > MAX_HEADER_LEN {
        return Err(Error::unsupported(format!(
            "a ragged header of {} bytes cannot be updated in one untearable write (at most \
             {MAX_HEADER_LEN})",
            h.encoded_len()
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
