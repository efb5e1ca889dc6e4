//! Ragged files (rows of different lengths): `ra_ragged`, over the core's `DynRagged`.

use std::ffi::{c_char, c_int, c_void, CString};

use rawarray_serde::ragged::DynRagged;

use crate::args::{buf_arg, clear_out, handle, path_arg, put};
use crate::error::{guard, Failure, Result};

/// An open ragged file: rows of different lengths, each a run of values of one element type
/// (numbers, records, or text: bytes of UTF-8).
///
/// Made by `ra_ragged_open`, freed by `ra_ragged_close`. Reads may be made from several threads
/// at once; strings it hands out are owned by it and valid until `ra_ragged_close`.
pub struct RaRagged {
    ragged: DynRagged,
    path: String,
    schema_json: Option<CString>,
}

/// What a ragged file holds, as `ra_ragged_describe` reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RaRaggedInfo {
    /// The values' element type code (`RA_FLOAT` ...; `RA_USER` for records).
    pub eltype: u64,
    /// Bytes of one element.
    pub elbyte: u64,
    /// Bytes of one value (an element times the value's own dims, for fixed arrays).
    pub value_bytes: u64,
    /// Rows.
    pub rows: u64,
    /// Values in all rows.
    pub values: u64,
    /// 1 if the rows are text (bytes of UTF-8), else 0.
    pub text: c_int,
}

/// Opens the ragged file at `path` (flag bit 3: offsets then values; plain or with chunked
/// values). On success `*out` is a new handle (free it with `ra_ragged_close`).
///
/// # Safety
/// `path` is a NUL-terminated string; `out` points to a writable `ra_ragged *`.
#[no_mangle]
pub unsafe extern "C" fn ra_ragged_open(path: *const c_char, out: *mut *mut RaRagged) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        // SAFETY: the caller's promise about `path`.
        let (path, shown) = unsafe { path_arg(path, "path") }?;
        let ragged = DynRagged::open(&path).map_err(|e| Failure::at(e, &shown))?;
        let schema_json = ragged
            .layout()
            .and_then(|l| serde_json::to_string(&l).ok())
            .and_then(|s| CString::new(s).ok());
        let r = RaRagged {
            ragged,
            path: shown,
            schema_json,
        };
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, Box::into_raw(Box::new(r)), "out") }
    })
}

/// Frees a ragged handle (NULL is ignored).
///
/// # Safety
/// `ragged` is NULL or a live handle, closed once, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn ra_ragged_close(ragged: *mut RaRagged) {
    if !ragged.is_null() {
        // SAFETY: a handle from `ra_ragged_open` (a leaked Box), closed once.
        let b = unsafe { Box::from_raw(ragged) };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(b)));
    }
}

/// What the file holds into `*out`.
///
/// # Safety
/// `ragged` is a live handle; `out` points to a writable `ra_ragged_info`.
#[no_mangle]
pub unsafe extern "C" fn ra_ragged_describe(
    ragged: *const RaRagged,
    out: *mut RaRaggedInfo,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let r = unsafe { handle(ragged, "ragged") }?;
        let h = r.ragged.header();
        let info = RaRaggedInfo {
            eltype: h.eltype.code(),
            elbyte: h.elbyte,
            value_bytes: h.value_bytes(),
            rows: h.rows,
            values: h.values,
            text: c_int::from(r.ragged.is_text()),
        };
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, info, "out") }
    })
}

/// The layout of one value (the trailer's schema, else the header's scalar) as JSON into
/// `*out`; NULL if unknown. Owned by the handle.
///
/// # Safety
/// `ragged` is a live handle; `out` points to a writable `const char *`.
#[no_mangle]
pub unsafe extern "C" fn ra_ragged_schema_json(
    ragged: *const RaRagged,
    out: *mut *const c_char,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let r = unsafe { handle(ragged, "ragged") }?;
        let p = r
            .schema_json
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, p, "out") }
    })
}

impl RaRagged {
    fn row(&self, row: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        self.ragged
            .row_bytes(row)
            .map_err(|e| Failure::at(e, &self.path))
    }
}

/// The length of row `row` (0-based), in values, into `*out`. A row past the last is a usage
/// error naming the row count.
///
/// # Safety
/// `ragged` is a live handle; `out` points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn ra_ragged_row_len(
    ragged: *const RaRagged,
    row: u64,
    out: *mut u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let r = unsafe { handle(ragged, "ragged") }?;
        let vb = r.ragged.header().value_bytes().max(1);
        let n = r.row(row)?.len() as u64 / vb;
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, n, "out") }
    })
}

/// Reads row `row` into `buf` of `buf_bytes` bytes, exactly its values times the value bytes
/// (`ra_ragged_row_len`), values little-endian and packed.
///
/// # Safety
/// `ragged` is a live handle; `buf` points to `buf_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ra_ragged_read_row(
    ragged: *const RaRagged,
    row: u64,
    buf: *mut c_void,
    buf_bytes: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let r = unsafe { handle(ragged, "ragged") }?;
        // SAFETY: the caller's promise about `buf`.
        let out = unsafe { buf_arg(buf, buf_bytes, "buf") }?;
        let bytes = r.row(row)?;
        if bytes.len() != out.len() {
            return Err(Failure::usage(format!(
                "argument buf_bytes: row {row} holds {} bytes, found {}",
                bytes.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&bytes);
        Ok(())
    })
}
