//! Statuses, the thread-local last error, and the guard every entry point runs in: an error
//! becomes a status and a message, a panic is caught at the boundary and becomes an error too.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use rawarray_serde::Category;

/// The call succeeded.
pub const RA_OK: c_int = 0;
/// The operating system failed to read or write (no such file, permission denied, disk full).
pub const RA_ERR_IO: c_int = 1;
/// The bytes are not a valid `.ra` file, or not of the type asked for.
pub const RA_ERR_DATA: c_int = 2;
/// The file ended before what its header says it holds.
pub const RA_ERR_EOF: c_int = 3;
/// The call was not possible as made: a NULL argument, a wrong buffer size, a box outside the
/// array, an option that does not apply, a file another writer holds.
pub const RA_ERR_USAGE: c_int = 4;
/// A bug in the library (a Rust panic, caught at the boundary): please report it with the
/// message.
pub const RA_ERR_INTERNAL: c_int = 5;

/// A failed call: its status and message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: c_int,
    pub message: String,
}

impl Failure {
    /// A usage error (a call that was not possible as made).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            status: RA_ERR_USAGE,
            message: message.into(),
        }
    }

    /// A core error, naming `path` unless it names a file already.
    pub fn at(e: rawarray_serde::Error, path: &str) -> Failure {
        let mut f = Failure::from(e);
        if !path.is_empty() && !f.message.contains(path) {
            f.message = format!("{path}: {}", f.message);
        }
        f
    }
}

impl From<rawarray_serde::Error> for Failure {
    fn from(e: rawarray_serde::Error) -> Failure {
        let status = match e.category() {
            Category::Io => RA_ERR_IO,
            Category::Data => RA_ERR_DATA,
            Category::Eof => RA_ERR_EOF,
            Category::Usage => RA_ERR_USAGE,
        };
        Failure {
            status,
            message: e.to_string(),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::from(rawarray_serde::Error::from(e))
    }
}

pub(crate) type Result<T, E = Failure> = std::result::Result<T, E>;

struct LastError {
    status: c_int,
    message: CString,
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError { status: RA_OK, message: CString::default() });
}

fn set_last(status: c_int, message: &str) {
    // A message holding NUL (a path can't, JSON from a file might) is cut there for C.
    let cut = message.split('\0').next().unwrap_or_default();
    let message = CString::new(cut).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = LastError { status, message });
}

/// Runs one entry point's body: its status, with the last error set on failure. A panic is
/// caught here and reported as [`RA_ERR_INTERNAL`]: none crosses into C.
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => RA_OK,
        Ok(Err(f)) => {
            set_last(f.status, &f.message);
            f.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            set_last(
                RA_ERR_INTERNAL,
                &format!("internal error in librawarray (please report it): {what}"),
            );
            RA_ERR_INTERNAL
        }
    }
}

/// The message of the last call that failed on this thread (`""` if none has): it names the
/// file, the field or argument, what was expected and what was found, as the Rust library's
/// errors do.
///
/// The string belongs to the library and stays valid until the next call that fails on this
/// thread; copy it to keep it. A successful call leaves it as it was (as `errno`). Each thread
/// has its own.
#[no_mangle]
pub extern "C" fn ra_last_error_message() -> *const c_char {
    // Reading a thread-local cannot panic, but the guard costs nothing here either.
    catch_unwind(|| LAST.with(|l| l.borrow().message.as_ptr())).unwrap_or(c"".as_ptr())
}

/// The status of the last call that failed on this thread (`RA_OK` if none has): one of the
/// `RA_ERR_*` categories, which say how to react (`RA_ERR_IO`: the system; `RA_ERR_DATA`: the
/// file; `RA_ERR_EOF`: a file cut short; `RA_ERR_USAGE`: the call; `RA_ERR_INTERNAL`: a bug).
#[no_mangle]
pub extern "C" fn ra_last_error_status() -> c_int {
    catch_unwind(|| LAST.with(|l| l.borrow().status)).unwrap_or(RA_ERR_INTERNAL)
}

/// Copies the last error's message into `buf` of `len` bytes, cut to fit and NUL-terminated
/// (for Fortran and for callers that keep messages); returns the message's full length in
/// bytes, without the NUL. `buf` may be NULL when `len` is 0, to ask for the length.
///
/// # Safety
/// `buf` points to `len` writable bytes (or `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn ra_last_error_copy(buf: *mut c_char, len: usize) -> usize {
    catch_unwind(AssertUnwindSafe(|| {
        LAST.with(|l| {
            let l = l.borrow();
            let bytes = l.message.as_bytes();
            if len > 0 && !buf.is_null() {
                let n = bytes.len().min(len - 1);
                // SAFETY: the caller gives `len` writable bytes at `buf`; `n < len` bytes and
                // the NUL at `n` are written, and a CString's bytes cannot overlap them.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
                    *buf.add(n) = 0;
                }
            }
            bytes.len()
        })
    }))
    .unwrap_or(0)
}

/// Forgets the last error on this thread: then `ra_last_error_status()` is `RA_OK` until a
/// call fails.
#[no_mangle]
pub extern "C" fn ra_clear_error() {
    let _ = catch_unwind(|| set_last(RA_OK, ""));
}
