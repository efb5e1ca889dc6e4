//! The RawArray (`.ra`) format from C, C++ and Fortran: `librawarray` (`-lrawarray`,
//! `include/rawarray.h`, `pkg-config rawarray`), a C API over the one Rust core
//! (`rawarray-serde`). Every storage kind the core reads and writes (plain, LZ4, chunked with
//! its filters and codecs), record files with their schema, ragged files and files written in
//! blocks by many processes are reached through it; nothing here reads or writes the format
//! itself.
//!
//! The conventions, once (the header repeats them):
//! - Every call returns a status: `RA_OK` (0) or an `RA_ERR_*` category; the message of the
//!   last failure on the thread is `ra_last_error_message()`. No call aborts or unwinds into C:
//!   a panic is caught at the boundary and is `RA_ERR_INTERNAL`. NULL arguments, wrong sizes
//!   and hostile files are errors.
//! - Handles (`ra_file`, `ra_ragged`, `ra_write_options`, `ra_record_type`, `ra_records`,
//!   `ra_blocks`) are made by one call and freed by one (`ra_close`, `ra_ragged_close`,
//!   `ra_write_options_free`, `ra_record_type_free`, `ra_records_close`, `ra_blocks_finish`).
//!   Strings handed out are owned by their handle.
//! - Dims and boxes are in the file's order (first dim fastest, as Fortran) or, with
//!   `RA_ORDER_C`, reversed (as a C array is declared); the bytes are the same either way.
//! - Values are handed over in the host's byte order (little-endian on every platform this is
//!   built for).
//!
//! From Rust the same functions can be called (this crate is an rlib too), as here:
//!
//! ```
//! use rawarray::*;
//! let dir = tempfile::tempdir().unwrap();
//! let path = std::ffi::CString::new(dir.path().join("a.ra").to_str().unwrap()).unwrap();
//! let values: Vec<f32> = (0..12).map(|i| i as f32).collect();
//! let dims = [3u64, 4]; // C order: float a[3][4]
//! // SAFETY: every pointer is valid for the call; handles are freed once.
//! unsafe {
//!     let mut opts = std::ptr::null_mut();
//!     assert_eq!(ra_write_options_for_name(c"zstd".as_ptr(), &mut opts), RA_OK);
//!     let st = ra_write(path.as_ptr(), RA_FLOAT, 4, RA_ORDER_C, dims.as_ptr(), 2,
//!                       values.as_ptr().cast(), 48, opts);
//!     assert_eq!(st, RA_OK);
//!     ra_write_options_free(opts);
//!
//!     let mut f = std::ptr::null_mut();
//!     assert_eq!(ra_open(path.as_ptr(), &mut f), RA_OK);
//!     let mut file_dims = [0u64; 2];
//!     assert_eq!(ra_file_dims(f, RA_ORDER_FILE, file_dims.as_mut_ptr(), 2), RA_OK);
//!     assert_eq!(file_dims, [4, 3]);
//!     let mut row = [0f32; 4]; // a[1][0..4]
//!     let (start, count) = ([1u64, 0], [1u64, 4]);
//!     let st = ra_read_box(f, RA_ORDER_C, start.as_ptr(), count.as_ptr(), 2, row.as_mut_ptr().cast(), 16);
//!     assert_eq!((st, row), (RA_OK, [4.0, 5.0, 6.0, 7.0]));
//!     ra_close(f);
//!
//!     assert_eq!(ra_open(c"no/such.ra".as_ptr(), &mut f), RA_ERR_IO);
//!     let msg = std::ffi::CStr::from_ptr(ra_last_error_message()).to_str().unwrap();
//!     assert!(msg.starts_with("no/such.ra: "), "{msg}");
//! }
//! ```
#![deny(missing_docs)]

mod args;
mod blocks;
mod error;
mod options;
mod ragged;
mod read;
mod records;
mod rtype;
mod write;

use std::ffi::{c_char, c_int};

pub use args::{RA_ORDER_C, RA_ORDER_FILE};
pub use blocks::*;
pub use error::{
    ra_clear_error, ra_last_error_copy, ra_last_error_message, ra_last_error_status, RA_ERR_DATA,
    RA_ERR_EOF, RA_ERR_INTERNAL, RA_ERR_IO, RA_ERR_USAGE, RA_OK,
};
pub use options::*;
pub use ragged::*;
pub use read::*;
pub use records::*;
pub use rtype::*;
pub use write::*;

/// Element type code of user-defined elements (records): eltype 0.
pub const RA_USER: u64 = 0;
/// Element type code of signed integers (1, 2, 4, 8, 16 bytes).
pub const RA_INT: u64 = 1;
/// Element type code of unsigned integers (1, 2, 4, 8, 16 bytes).
pub const RA_UINT: u64 = 2;
/// Element type code of IEEE floats (2, 4, 8, 16 bytes).
pub const RA_FLOAT: u64 = 3;
/// Element type code of complex numbers, two floats (4, 8, 16, 32 bytes).
pub const RA_COMPLEX: u64 = 4;
/// Element type code of bfloat16 (2 bytes).
pub const RA_BFLOAT: u64 = 5;

/// The ABI version of this header: bumped when a function's signature, a struct's layout or a
/// constant changes, so that a program can check (`ra_abi_version`) that the library it loaded
/// is the one it was compiled against.
pub const RA_ABI_VERSION: u32 = 2;

/// The library's version (the Rust crates' version, `"0.1.0"`) into `*out`: a static string.
///
/// # Safety
/// `out` points to a writable `const char *`.
#[no_mangle]
pub unsafe extern "C" fn ra_version(out: *mut *const c_char) -> c_int {
    static VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    // SAFETY: the caller's promise about `out`.
    error::guard(|| unsafe { args::put(out, VERSION.as_ptr(), "out") })
}

/// The library's ABI version into `*out`: equal to `RA_ABI_VERSION` of the header a program
/// was compiled with if they match.
///
/// # Safety
/// `out` points to a writable `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn ra_abi_version(out: *mut u32) -> c_int {
    // SAFETY: the caller's promise about `out`.
    error::guard(|| unsafe { args::put(out, RA_ABI_VERSION, "out") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rawarray_serde::ElType;

    #[test]
    fn the_eltype_codes_are_the_cores() {
        let ours = [RA_USER, RA_INT, RA_UINT, RA_FLOAT, RA_COMPLEX, RA_BFLOAT];
        assert_eq!(ours.len(), ElType::ALL.len());
        for (code, et) in ours.iter().zip(ElType::ALL) {
            assert_eq!(*code, et.code(), "{et}");
        }
    }

    #[test]
    fn handles_are_shared_across_threads_where_the_header_says() {
        fn sync<T: Sync + Send>() {}
        sync::<RaFile>();
        sync::<RaRagged>();
        sync::<RaBlocks>();
    }
}
