//! `ra_write_options`: the core's `WriteOptions` (how a data section is stored), with the
//! trailer parameters and durability a writer also takes.

use std::ffi::{c_char, c_int};

use rawarray_serde::codec::{Codec, Filter};
use rawarray_serde::WriteOptions;

use crate::args::{clear_out, dims_arg, handle_mut, put, str_arg};
use crate::error::{guard, Failure, Result};

/// How a writer stores its data (plain, whole-section LZ4, or chunked with its chunk shape,
/// filters, codec, level, threads) and the byte order, plus the trailer's parameters (JSON)
/// and whether record flushes sync to disk.
///
/// Made by `ra_write_options_new` or `ra_write_options_for_name`, changed by the
/// `ra_write_options_*` setters, freed by `ra_write_options_free`. Writers copy it: it may be
/// freed once they are made. Not to be changed by one thread while another uses it.
#[derive(Clone, Debug, Default)]
pub struct RaWriteOptions {
    pub(crate) opts: WriteOptions,
    pub(crate) params: Option<serde_json::Value>,
    pub(crate) fsync: bool,
}

fn new_options(opts: WriteOptions, out: *mut *mut RaWriteOptions) -> Result<()> {
    let o = RaWriteOptions {
        opts,
        ..RaWriteOptions::default()
    };
    // SAFETY: the callers' promise about `out` (a writable pointer).
    unsafe { put(out, Box::into_raw(Box::new(o)), "out") }
}

/// Makes options that write little-endian, plain (what every reader reads). On success `*out`
/// is a new handle (free it with `ra_write_options_free`).
///
/// # Safety
/// `out` points to a writable `ra_write_options *`.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_new(out: *mut *mut RaWriteOptions) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        new_options(WriteOptions::new(), out)
    })
}

/// Makes the options of a storage kind by name: `"plain"`, `"lz4-whole"` (one LZ4 block, as the
/// original C library writes), or a chunked codec (`"zstd"`, `"lz4"`, `"none"`, `"pco"`, `"huffman"`, with
/// its defaults: byte shuffle, chunks of about 1 MiB). An unknown name is a usage error listing
/// the names.
///
/// # Safety
/// `name` is a NUL-terminated string; `out` points to a writable `ra_write_options *`.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_for_name(
    name: *const c_char,
    out: *mut *mut RaWriteOptions,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        // SAFETY: the caller's promise about `name`.
        let name = unsafe { str_arg(name, "name") }?;
        new_options(WriteOptions::for_name(name)?, out)
    })
}

/// Frees options (NULL is ignored).
///
/// # Safety
/// `opts` is NULL or live options, freed once, used by no other call now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_free(opts: *mut RaWriteOptions) {
    if !opts.is_null() {
        // SAFETY: a handle from `ra_write_options_new` (a leaked Box), freed once.
        drop(unsafe { Box::from_raw(opts) });
    }
}

/// Applies `change` to the options behind `opts`.
///
/// # Safety
/// `opts` is NULL or live options used by no other thread now.
unsafe fn change(
    opts: *mut RaWriteOptions,
    change: impl FnOnce(&mut RaWriteOptions) -> Result<()>,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise.
        let o = unsafe { handle_mut(opts, "opts") }?;
        change(o)
    })
}

fn set(o: &mut RaWriteOptions, f: impl FnOnce(WriteOptions) -> WriteOptions) {
    o.opts = f(std::mem::take(&mut o.opts));
}

/// The chunked layout with codec `name` (`"zstd"`, `"lz4"`, `"none"`, `"pco"`, `"huffman"`; see
/// `ra_write_options_for_name`).
///
/// # Safety
/// `opts` is live options used by no other thread now; `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_codec(
    opts: *mut RaWriteOptions,
    name: *const c_char,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            // SAFETY: the caller's promise about `name`.
            let codec = Codec::parse(str_arg(name, "name")?)?;
            set(o, |w| w.codec(codec));
            Ok(())
        })
    }
}

/// The codec's level (selects the chunked layout; zstd: -7 ..= 22, default 3). A codec
/// without levels refuses it when the file is written, naming the setting.
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_level(opts: *mut RaWriteOptions, level: c_int) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.level(level));
            Ok(())
        })
    }
}

/// The filter pipeline (selects the chunked layout), in the order applied when writing,
/// comma-separated: `"shuffle"` (the default), `"bitshuffle"`, `"bitround:10"` (keep 10
/// mantissa bits: lossy, first), `"delta"`, `"bytedelta"` (every byte plane) or
/// `"bytedelta:4"` (the planes of the mask's bits: plane 2, byte 2 of each element as stored), ...; `""` for none. An unknown
/// filter is a usage error naming it.
///
/// # Safety
/// `opts` is live options used by no other thread now; `spec` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_filters(
    opts: *mut RaWriteOptions,
    spec: *const c_char,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            // SAFETY: the caller's promise about `spec`.
            let spec = str_arg(spec, "spec")?;
            let filters = spec
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(Filter::parse)
                .collect::<Result<Vec<_>, _>>()?;
            set(o, |w| w.filters(filters));
            Ok(())
        })
    }
}

/// The chunk shape (selects the chunked layout): `ndims` sizes in `order`, one per dim of the
/// array, each at least 1 (it may exceed its dim).
///
/// # Safety
/// `opts` is live options used by no other thread now; `chunks` points to `ndims` values.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_chunks(
    opts: *mut RaWriteOptions,
    order: c_int,
    chunks: *const u64,
    ndims: usize,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            // SAFETY: the caller's promise about `chunks`.
            let c = dims_arg(chunks, ndims, order, "chunks")?;
            set(o, |w| w.chunks(c));
            Ok(())
        })
    }
}

/// The n-d block shape inside each chunk (selects the chunked layout): `ndims` sizes in
/// `order`, each 1 ..= the chunk's.
///
/// # Safety
/// `opts` is live options used by no other thread now; `blocks` points to `ndims` values.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_blocks(
    opts: *mut RaWriteOptions,
    order: c_int,
    blocks: *const u64,
    ndims: usize,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            // SAFETY: the caller's promise about `blocks`.
            let b = dims_arg(blocks, ndims, order, "blocks")?;
            set(o, |w| w.blocks(b));
            Ok(())
        })
    }
}

/// Threads compressing chunks (0, the default: all cores).
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_threads(
    opts: *mut RaWriteOptions,
    threads: usize,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.threads(threads));
            Ok(())
        })
    }
}

/// Whole-section LZ4 (`on` nonzero): the data as one raw LZ4 block, as the original C library
/// (`ra.h`) writes and reads it. Not with a chunked setting.
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_compress(opts: *mut RaWriteOptions, on: c_int) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.compress(on != 0));
            Ok(())
        })
    }
}

/// Write the data big-endian (`on` nonzero; flag bit 0). Values are given in the host's order
/// and swapped when written.
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_big_endian(
    opts: *mut RaWriteOptions,
    on: c_int,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.big_endian(on != 0));
            Ok(())
        })
    }
}

/// Whether chunk entries keep statistics (min, max, NaN count; selects the chunked layout;
/// default on).
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_statistics(
    opts: *mut RaWriteOptions,
    on: c_int,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.statistics(on != 0));
            Ok(())
        })
    }
}

/// Whether each block is compressed as byte streams, a frame per byte plane (selects the
/// chunked layout; doc/chunked.md 5.3). By default on for zstd after a byte shuffle of 2- to
/// 16-byte elements in chunks of 32 KiB or more; 0 writes one stream a block, for readers that
/// predate byte streams.
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_split(opts: *mut RaWriteOptions, on: c_int) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.split(on != 0));
            Ok(())
        })
    }
}

/// Whether each byte stream carries its own CRC-32 (config features bit 2, doc/chunked.md
/// 5.3; only with byte streams, `ra_write_options_split`): a reader of some fields of records
/// then reads and checks only their streams. By default on for records (elements over 16 bytes)
/// split in byte streams and off for arrays; readers older than this setting refuse files that
/// have it. Turning it on for blocks in one stream is an error when the options are used,
/// naming `stream_crcs`.
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_stream_crcs(
    opts: *mut RaWriteOptions,
    on: c_int,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.stream_crcs(on != 0));
            Ok(())
        })
    }
}

/// The chunked layout version: 2 (the default) or 1, which older readers read too.
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_layout_version(
    opts: *mut RaWriteOptions,
    version: u32,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            set(o, |w| w.layout_version(version));
            Ok(())
        })
    }
}

/// The trailer's parameters: any JSON text (`{"dt": 0.1, "units": "K"}`), stored after the
/// data and read back by `ra_file_params_json`, numpy's and Rust's readers. Text that is not
/// JSON is a usage error saying where it fails.
///
/// # Safety
/// `opts` is live options used by no other thread now; `json` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_params_json(
    opts: *mut RaWriteOptions,
    json: *const c_char,
) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            // SAFETY: the caller's promise about `json`.
            let text = str_arg(json, "json")?;
            let v: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| Failure::usage(format!("argument json: not JSON: {e}")))?;
            o.params = Some(v);
            Ok(())
        })
    }
}

/// Whether each record flush also syncs to disk (`on` nonzero), so that flushed records survive
/// a power cut, not only the writer being killed (default off: see `ra_records_flush`).
///
/// # Safety
/// `opts` is live options used by no other thread now.
#[no_mangle]
pub unsafe extern "C" fn ra_write_options_fsync(opts: *mut RaWriteOptions, on: c_int) -> c_int {
    // SAFETY: the caller's promise about `opts`.
    unsafe {
        change(opts, |o| {
            o.fsync = on != 0;
            Ok(())
        })
    }
}

/// The options behind an optional handle (NULL: the defaults).
///
/// # Safety
/// `opts` is NULL or live options.
pub(crate) unsafe fn options_or_default(opts: *const RaWriteOptions) -> RaWriteOptions {
    if opts.is_null() {
        RaWriteOptions::default()
    } else {
        // SAFETY: not NULL, and the caller passes live options.
        unsafe { (*opts).clone() }
    }
}
