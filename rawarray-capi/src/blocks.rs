//! Many processes writing blocks of one array: `ra_blocks`, over the core's `ArrayWriter`.

use std::ffi::{c_char, c_int, c_void};

use rawarray_serde::ArrayWriter;

use crate::args::{box_arg, bytes_arg, clear_out, dims_arg, handle, path_arg, put};
use crate::error::{guard, Failure};
use crate::options::{options_or_default, RaWriteOptions};
use crate::write::array_header;

/// One process's (or thread's) writer of blocks of one array file, which others write too:
/// each MPI rank opens the file with `ra_blocks_open_or_create` (exactly one creates it), writes
/// its own blocks with `ra_blocks_write`, and calls `ra_blocks_finish` (which frees the handle).
///
/// Writes may be made from several threads at once on one handle (blocks must not overlap).
/// While any block writer holds the file, the exclusive writers (`ra_write` over it, a record
/// writer) are refused. Each block is journaled beside the file (`NAME.journal`) until it is
/// committed, so a block a killed writer left half written is known; the last writer to finish
/// removes the journal.
pub struct RaBlocks {
    writer: ArrayWriter,
    path: String,
}

/// Opens the array file at `path` to write blocks of it, creating it if there is none: `ndims`
/// dims in `order` of elements of `eltype`/`elbyte`, stored as `opts` say (NULL: plain;
/// chunked options: blocks must then be whole chunks of the grid; whole-section LZ4 and
/// big-endian are refused). Of processes racing to start one file exactly one creates it
/// (`ra_blocks_created`); the file appears whole (by a rename) and reads as zeros where no
/// block was written. An existing file must hold this array with this storage, else an error
/// saying what it has. On success `*out` is a new handle.
///
/// # Safety
/// `path` is a NUL-terminated string; `dims` points to `ndims` values; `opts` is NULL or live
/// options; `out` points to a writable `ra_blocks *`.
#[no_mangle]
pub unsafe extern "C" fn ra_blocks_open_or_create(
    path: *const c_char,
    eltype: u64,
    elbyte: u64,
    order: c_int,
    dims: *const u64,
    ndims: usize,
    opts: *const RaWriteOptions,
    out: *mut *mut RaBlocks,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        // SAFETY: the caller's promise about `path`.
        let (path, shown) = unsafe { path_arg(path, "path") }?;
        // SAFETY: the caller's promise about `dims`.
        let dims = unsafe { dims_arg(dims, ndims, order, "dims") }?;
        // SAFETY: the caller's promise about `opts`.
        let o = unsafe { options_or_default(opts) };
        let header = array_header(eltype, elbyte, dims)?;
        let writer = ArrayWriter::options()
            .header(header)
            .storage(o.opts)
            .open_or_create(&path)
            .map_err(|e| Failure::at(e, &shown))?;
        let b = RaBlocks {
            writer,
            path: shown,
        };
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, Box::into_raw(Box::new(b)), "out") }
    })
}

/// 1 into `*out` if this handle's open created the file, else 0.
///
/// # Safety
/// `blocks` is a live handle; `out` points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn ra_blocks_created(blocks: *const RaBlocks, out: *mut c_int) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let b = unsafe { handle(blocks, "blocks") }?;
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, c_int::from(b.writer.created()), "out") }
    })
}

/// Writes the block `start[i] .. start[i] + count[i]` (`ndims` dims in `order`) from `data` of
/// `data_bytes` bytes: the block's own array in the same order, values in the host's byte
/// order (little-endian). A chunked file takes blocks aligned to its chunk grid (an error names
/// the block and the grid otherwise), each chunk compressed by this writer.
///
/// # Safety
/// `blocks` is a live handle; `start` and `count` point to `ndims` values each; `data` to
/// `data_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn ra_blocks_write(
    blocks: *const RaBlocks,
    order: c_int,
    start: *const u64,
    count: *const u64,
    ndims: usize,
    data: *const c_void,
    data_bytes: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let b = unsafe { handle(blocks, "blocks") }?;
        // SAFETY: the caller's promise about `start` and `count`.
        let ranges = unsafe { box_arg(start, count, ndims, order) }?;
        // SAFETY: the caller's promise about `data`.
        let bytes = unsafe { bytes_arg(data, data_bytes, "data") }?;
        b.writer
            .write_subset_bytes(&ranges, bytes)
            .map_err(|e| Failure::at(e, &b.path))
    })
}

/// Syncs this writer's blocks to disk, closes the file and frees the handle (NULL is ignored),
/// whatever the status. Once every writer has finished the file holds the whole array; the last
/// one reports blocks a killed writer left uncommitted, as an error naming them.
///
/// # Safety
/// `blocks` is NULL or a live handle, finished once, used by no other call now.
#[no_mangle]
pub unsafe extern "C" fn ra_blocks_finish(blocks: *mut RaBlocks) -> c_int {
    guard(|| {
        if blocks.is_null() {
            return Ok(());
        }
        // SAFETY: a handle from `ra_blocks_open_or_create` (a leaked Box), finished once.
        let b = unsafe { Box::from_raw(blocks) };
        let RaBlocks { writer, path } = *b;
        writer.finish().map_err(|e| Failure::at(e, &path))
    })
}
