//! Appending records from a running program: `ra_records`, over the core's `DynRecordWriter`.

use std::ffi::{c_char, c_int, c_void};

use rawarray_serde::{Durability, DynRecordWriter, ElementSpec, RecordOptions};

use crate::args::{bytes_arg, clear_out, handle, handle_mut, path_arg, put};
use crate::error::{guard, Failure, Result};
use crate::options::{options_or_default, RaWriteOptions};
use crate::rtype::RaRecordType;

/// A record file being appended to: each record one C struct of a record type, stored packed.
///
/// Made by `ra_records_create` or `ra_records_open`, closed (and freed) by `ra_records_close`.
/// It holds the file's exclusive lock until closed: another writer (in this process or
/// another) is refused at once. Records appended are seen by readers, and survive the
/// process being killed, from the `ra_records_flush` after them. One thread at a time: calls
/// on one handle must not overlap.
pub struct RaRecords {
    writer: Option<DynRecordWriter>,
    rtype: RaRecordType,
    path: String,
}

impl RaRecords {
    fn writer(&mut self) -> Result<&mut DynRecordWriter> {
        self.writer.as_mut().ok_or_else(|| closed(&self.path))
    }
}

/// The error of a call on a writer that failed earlier.
fn closed(path: &str) -> Failure {
    Failure::usage(format!("{path}: the writer failed earlier and is closed"))
}

enum Mode {
    Create,
    Open,
}

/// Makes a writer for `mode`, filling `*out`.
///
/// # Safety
/// As `ra_records_create`.
unsafe fn make(
    mode: Mode,
    path: *const c_char,
    r#type: *const RaRecordType,
    opts: *const RaWriteOptions,
    out: *mut *mut RaRecords,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        // SAFETY: the caller's promise about `path`.
        let (path, shown) = unsafe { path_arg(path, "path") }?;
        // SAFETY: the caller passes a live record type.
        let t = unsafe { handle(r#type, "type") }?.clone();
        // SAFETY: the caller's promise about `opts`.
        let o = unsafe { options_or_default(opts) };
        let spec = ElementSpec::from_layout(t.layout()?)?;
        let mut ro = RecordOptions::new()
            .storage(o.opts.clone())
            .durability(if o.fsync {
                Durability::Fsync
            } else {
                Durability::NoFsync
            });
        if let Some(p) = &o.params {
            ro = ro.params(p);
        }
        let w = match mode {
            Mode::Create => ro.create_dyn(&path, &spec),
            Mode::Open => ro.open_dyn(&path, &spec),
        }
        .map_err(|e| Failure::at(e, &shown))?;
        let r = RaRecords {
            writer: Some(w),
            rtype: t,
            path: shown,
        };
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, Box::into_raw(Box::new(r)), "out") }
    })
}

/// Creates (or replaces, atomically) a record file at `path` holding no records yet, for
/// records of `type` (its schema stored in the trailer), stored as `opts` say (NULL: plain;
/// chunked options compress the records as they are flushed; whole-section LZ4 is refused;
/// `ra_write_options_params_json` and `ra_write_options_fsync` apply). A file another writer
/// holds is not replaced: a usage error says so. On success `*out` is a new writer.
///
/// # Safety
/// `path` is a NUL-terminated string; `type` a live record type; `opts` NULL or live options;
/// `out` points to a writable `ra_records *`.
#[no_mangle]
pub unsafe extern "C" fn ra_records_create(
    path: *const c_char,
    r#type: *const RaRecordType,
    opts: *const RaWriteOptions,
    out: *mut *mut RaRecords,
) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { make(Mode::Create, path, r#type, opts, out) }
}

/// Opens an existing record file to append to it: its schema must be `type`'s (else an error
/// naming the field that differs), and it keeps its storage (`opts` may give parameters, which
/// replace the file's, and fsync). What a writer killed before its last flush left is cut
/// away first. A file another writer holds is a usage error, at once.
///
/// # Safety
/// As `ra_records_create`.
#[no_mangle]
pub unsafe extern "C" fn ra_records_open(
    path: *const c_char,
    r#type: *const RaRecordType,
    opts: *const RaWriteOptions,
    out: *mut *mut RaRecords,
) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { make(Mode::Open, path, r#type, opts, out) }
}

/// Appends `count` records from `records`: `count` structs of the record type, laid out as C
/// lays out an array of them (`sizeof` apart). They are buffered, and written out as the buffer
/// fills; readers see them after the next `ra_records_flush`.
///
/// # Safety
/// `writer` is a live writer used by no other thread now; `records` points to `count` structs.
#[no_mangle]
pub unsafe extern "C" fn ra_records_append(
    writer: *mut RaRecords,
    records: *const c_void,
    count: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live writer used by no other thread.
        let r = unsafe { handle_mut(writer, "writer") }?;
        let size = r.rtype.c_size();
        let bytes = count.checked_mul(size).ok_or_else(|| {
            Failure::usage(format!(
                "argument count: {count} records of {size} bytes overflow"
            ))
        })?;
        // SAFETY: the caller's promise: `count` structs of `size` bytes at `records`.
        let structs = unsafe { bytes_arg(records, bytes, "records") }?;
        if r.rtype.is_packed() {
            let path = r.path.clone();
            return r
                .writer()?
                .append_bytes(structs)
                .map_err(|e| Failure::at(e, &path));
        }
        // Gathered a slice at a time straight into the writer's buffer (one copy), so that the
        // packed slice stays small.
        let per = ((4usize << 20) / size as usize).max(1) * size as usize;
        let RaRecords {
            writer,
            rtype,
            path,
            ..
        } = r;
        let w = writer.as_mut().ok_or_else(|| closed(path))?;
        for slice in structs.chunks(per) {
            w.append_with(slice.len() as u64 / size, |dst| {
                rtype.pack(slice, dst);
                Ok(())
            })
            .map_err(|e| Failure::at(e, path))?;
        }
        Ok(())
    })
}

/// Commits every record appended so far: readers see them, and they survive this process being
/// killed (with `ra_write_options_fsync`, a power cut too). Cheap enough to call every few
/// steps of a simulation.
///
/// # Safety
/// `writer` is a live writer used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_records_flush(writer: *mut RaRecords) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live writer used by no other thread.
        let r = unsafe { handle_mut(writer, "writer") }?;
        let path = r.path.clone();
        r.writer()?.flush().map_err(|e| Failure::at(e, &path))
    })
}

/// Flushes, then syncs the file to disk: every record so far survives a power cut.
///
/// # Safety
/// `writer` is a live writer used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_records_sync(writer: *mut RaRecords) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live writer used by no other thread.
        let r = unsafe { handle_mut(writer, "writer") }?;
        let path = r.path.clone();
        r.writer()?.sync().map_err(|e| Failure::at(e, &path))
    })
}

/// Records appended so far, flushed or not, into `*out` (a reopened file's count included).
///
/// # Safety
/// `writer` is a live writer; `out` points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn ra_records_len(writer: *const RaRecords, out: *mut u64) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live writer.
        let r = unsafe { handle(writer, "writer") }?;
        let n = r
            .writer
            .as_ref()
            .map(DynRecordWriter::len)
            .ok_or_else(|| Failure::usage(format!("{}: the writer is closed", r.path)))?;
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, n, "out") }
    })
}

/// Flushes the records appended, closes the file and frees the writer (NULL is ignored). The
/// handle is freed whatever the status: a failure is the final flush's, named in the last
/// error.
///
/// # Safety
/// `writer` is NULL or a live writer, closed once, used by no other call now.
#[no_mangle]
pub unsafe extern "C" fn ra_records_close(writer: *mut RaRecords) -> c_int {
    guard(|| {
        if writer.is_null() {
            return Ok(());
        }
        // SAFETY: a handle from `ra_records_create`/`open` (a leaked Box), closed once.
        let mut r = unsafe { Box::from_raw(writer) };
        match r.writer.take() {
            Some(w) => w.finish().map(|_| ()).map_err(|e| Failure::at(e, &r.path)),
            None => Ok(()),
        }
    })
}
