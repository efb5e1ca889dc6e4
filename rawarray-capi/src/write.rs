//! Writing a whole array in one call: `ra_write`, through the core's section writer.

use std::ffi::{c_char, c_int, c_void};
use std::io::Write;

use rawarray_serde::atomic::write_atomic;
use rawarray_serde::section::write::{write_section, PlainBytes};
use rawarray_serde::{DynArray, ElType, Header, Trailer};

use crate::args::{bytes_arg, dims_arg, path_arg};
use crate::error::{guard, Failure, Result};
use crate::options::{options_or_default, RaWriteOptions};

/// The header of an array of `dims` (file order) elements of `eltype`/`elbyte`, checked.
pub(crate) fn array_header(eltype: u64, elbyte: u64, dims: Vec<u64>) -> Result<Header> {
    let et =
        ElType::from_code(eltype).map_err(|e| Failure::usage(format!("argument eltype: {e}")))?;
    Header::new(et, elbyte, dims).map_err(|e| Failure::usage(e.to_string()))
}

/// Writes an array to `path`: `ndims` dims in `order` (`RA_ORDER_FILE` or `RA_ORDER_C`) of
/// elements of type code `eltype` (`RA_FLOAT` ...) and `elbyte` bytes each, from `data` of
/// `data_bytes` bytes (exactly the elements times elbyte, values in the host's byte order),
/// stored as `opts` say (NULL: plain; see `ra_write_options_*`: LZ4, chunked with codec,
/// filters, chunks, level, threads; big-endian; trailer parameters).
///
/// The file appears at `path` whole, by a rename: on any error the file that was there, if
/// any, is left as it was and no temporary file remains. Plain data of 64 MiB or more is
/// written on two threads on ext4 or XFS (a second thread copies part of it through a map of
/// the new file): a file system failing during that copy ends the process with `SIGBUS`
/// instead of an error; a full disk is still an error.
///
/// # Safety
/// `path` is a NUL-terminated string; `dims` points to `ndims` values; `data` to `data_bytes`
/// bytes; `opts` is NULL or live options.
#[no_mangle]
pub unsafe extern "C" fn ra_write(
    path: *const c_char,
    eltype: u64,
    elbyte: u64,
    order: c_int,
    dims: *const u64,
    ndims: usize,
    data: *const c_void,
    data_bytes: u64,
    opts: *const RaWriteOptions,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `path`.
        let (path, shown) = unsafe { path_arg(path, "path") }?;
        // SAFETY: the caller's promise about `dims`.
        let dims = unsafe { dims_arg(dims, ndims, order, "dims") }?;
        // SAFETY: the caller's promise about `data`.
        let data = unsafe { bytes_arg(data, data_bytes, "data") }?;
        // SAFETY: the caller's promise about `opts`.
        let o = unsafe { options_or_default(opts) };
        let header = array_header(eltype, elbyte, dims)?;
        if header.data_len() != data.len() as u64 {
            return Err(Failure::usage(format!(
                "argument data_bytes: expected {} ({} elements of {elbyte} bytes, dims {:?}), found {}",
                header.data_len(),
                header.num_elements(),
                header.dims,
                data.len()
            )));
        }
        let trailer = o.params.clone().map(Trailer::new).transpose()?;
        // The caller's values are little-endian (the hosts this builds for: see the README).
        if trailer.is_some() || o.opts.is_big_endian() {
            // The core's array writer swaps the byte order and places the trailer; it owns
            // its data, so this path costs a copy.
            let mut a = DynArray::new(
                header.eltype,
                header.elbyte,
                header.dims.clone(),
                data.to_vec(),
            )?;
            if let Some(t) = &trailer {
                a.set_trailer(t);
            }
            return a
                .write_file_with(&path, &o.opts)
                .map_err(|e| Failure::at(e, &shown));
        }
        // The caller's bytes as they are: the path `RawArray::write_file_with` takes.
        write_atomic(&path, |w: &mut dyn Write| {
            write_section(w, &header, &o.opts, None, &PlainBytes::new(data))?;
            w.flush()?;
            Ok::<(), rawarray_serde::Error>(())
        })
        .map_err(|e| Failure::at(e, &shown))
    })
}
