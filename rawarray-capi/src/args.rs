//! The arguments C passes, checked before use: NULL pointers, strings, arrays and buffers are
//! each refused with a usage error naming the argument, never dereferenced unchecked.

use std::ffi::{c_char, c_int, CStr};
use std::ops::Range;
use std::path::PathBuf;

use crate::error::{Failure, Result};

/// Dims and boxes in the file's order: the first dim varies fastest (Fortran, Julia, Matlab,
/// and `ra info`).
pub const RA_ORDER_FILE: c_int = 0;
/// Dims and boxes in C order: the last dim varies fastest (C arrays, numpy). The bytes are
/// the same either way (an array of dims `[d0, d1, d2]` in the file's order is the C array
/// `[d2][d1][d0]`): only the order of the dims and of box coordinates is reversed.
pub const RA_ORDER_C: c_int = 1;

/// Whether `order` asks for C order; an error for anything but the two orders.
pub fn c_order(order: c_int) -> Result<bool> {
    match order {
        RA_ORDER_FILE => Ok(false),
        RA_ORDER_C => Ok(true),
        _ => Err(Failure::usage(format!(
            "argument order: expected RA_ORDER_FILE (0) or RA_ORDER_C (1), found {order}"
        ))),
    }
}

/// A NUL-terminated string argument, as UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that lives for `'a`.
pub unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| {
        Failure::usage(format!(
            "argument {name}: expected UTF-8 text, found {:?}",
            s.to_string_lossy()
        ))
    })
}

/// A path argument: any bytes but NUL (on Unix a path need not be UTF-8).
///
/// # Safety
/// As [`str_arg`].
pub unsafe fn path_arg(p: *const c_char, name: &str) -> Result<(PathBuf, String)> {
    if p.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    let shown = s.to_string_lossy().into_owned();
    if s.is_empty() {
        return Err(Failure::usage(format!("argument {name} is an empty path")));
    }
    #[cfg(unix)]
    let path = {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(s.to_bytes()))
    };
    #[cfg(not(unix))]
    let path = PathBuf::from(s.to_str().map_err(|_| {
        Failure::usage(format!(
            "argument {name}: expected UTF-8 text, found {shown:?}"
        ))
    })?);
    Ok((path, shown))
}

/// `len` items at `p`, borrowed; NULL is allowed only for `len` 0.
///
/// # Safety
/// `p` is NULL or points to `len` initialized items of `T` that live for `'a`.
pub unsafe fn slice_arg<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    if !p.is_aligned() {
        return Err(Failure::usage(format!(
            "argument {name} is not aligned for its type ({} bytes)",
            std::mem::align_of::<T>()
        )));
    }
    if len
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Failure::usage(format!(
            "argument {name}: {len} items do not fit in memory"
        )));
    }
    // SAFETY: not NULL, aligned, within isize::MAX bytes, and the caller promises `len`
    // initialized items that outlive the borrow.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A caller's buffer of `len` bytes to write into, borrowed; NULL is allowed only for `len` 0.
///
/// # Safety
/// `p` is NULL or points to `len` writable bytes, not otherwise accessed during the borrow.
pub unsafe fn buf_arg<'a>(p: *mut std::ffi::c_void, len: u64, name: &str) -> Result<&'a mut [u8]> {
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= isize::MAX as usize)
        .ok_or_else(|| {
            Failure::usage(format!("argument {name}: {len} bytes do not fit in memory"))
        })?;
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    // SAFETY: not NULL, within isize::MAX bytes, and the caller gives `len` writable bytes
    // that nothing else touches during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// [`buf_arg`] for bytes to read from.
///
/// # Safety
/// `p` is NULL or points to `len` initialized bytes that live during the borrow.
pub unsafe fn bytes_arg<'a>(p: *const std::ffi::c_void, len: u64, name: &str) -> Result<&'a [u8]> {
    let len = usize::try_from(len).map_err(|_| {
        Failure::usage(format!("argument {name}: {len} bytes do not fit in memory"))
    })?;
    // SAFETY: the caller's promise, as slice_arg's.
    unsafe { slice_arg(p.cast::<u8>(), len, name) }
}

/// Writes `value` through an out-pointer.
///
/// # Safety
/// `out` is NULL or points to a writable `T`.
pub unsafe fn put<T>(out: *mut T, value: T, name: &str) -> Result<()> {
    if out.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    if !out.is_aligned() {
        return Err(Failure::usage(format!(
            "argument {name} is not aligned for its type"
        )));
    }
    // SAFETY: not NULL, aligned, and the caller gives a writable T.
    unsafe { out.write(value) };
    Ok(())
}

/// Clears an out-pointer for a handle (so that a failed open leaves NULL), if it is not NULL.
///
/// # Safety
/// `out` is NULL or points to a writable pointer.
pub unsafe fn clear_out<T>(out: *mut *mut T) {
    if !out.is_null() && out.is_aligned() {
        // SAFETY: not NULL, aligned, and the caller gives a writable pointer.
        unsafe { out.write(std::ptr::null_mut()) };
    }
}

/// A handle argument, borrowed.
///
/// # Safety
/// `p` is NULL or a handle this library made and has not freed.
pub unsafe fn handle<'a, T>(p: *const T, name: &str) -> Result<&'a T> {
    if p.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    // SAFETY: the caller passes a live handle of ours (a Box leaked by its constructor).
    Ok(unsafe { &*p })
}

/// A handle argument, borrowed mutably.
///
/// # Safety
/// `p` is NULL or a handle this library made and has not freed, used by no other thread now.
pub unsafe fn handle_mut<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T> {
    if p.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    // SAFETY: the caller passes a live handle of ours, and no other thread uses it now.
    Ok(unsafe { &mut *p })
}

/// Dims given by C (`ndims` values at `dims`, in `order`), in the file's order.
///
/// # Safety
/// As [`slice_arg`].
pub unsafe fn dims_arg(
    dims: *const u64,
    ndims: usize,
    order: c_int,
    name: &str,
) -> Result<Vec<u64>> {
    let c = c_order(order)?;
    if ndims as u64 > rawarray_serde::header::MAX_NDIMS {
        return Err(Failure::usage(format!(
            "argument n{name}: at most {} dims, found {ndims}",
            rawarray_serde::header::MAX_NDIMS
        )));
    }
    // SAFETY: the caller's promise.
    let mut d = unsafe { slice_arg(dims, ndims, name) }?.to_vec();
    if c {
        d.reverse();
    }
    Ok(d)
}

/// A box given by C (`start` and `count`, `ndims` each, in `order`) as ranges in the file's
/// order; a box whose end overflows is refused naming the dim.
///
/// # Safety
/// As [`slice_arg`], for `start` and `count`.
pub unsafe fn box_arg(
    start: *const u64,
    count: *const u64,
    ndims: usize,
    order: c_int,
) -> Result<Vec<Range<u64>>> {
    // SAFETY: the caller's promise, for both arrays.
    let (s, n) = unsafe {
        (
            dims_arg(start, ndims, order, "start")?,
            dims_arg(count, ndims, order, "count")?,
        )
    };
    s.iter()
        .zip(&n)
        .enumerate()
        .map(|(i, (&a, &k))| {
            a.checked_add(k).map(|b| a..b).ok_or_else(|| {
                Failure::usage(format!(
                    "box: start {a} + count {k} overflows in dim {i} (the file's order)"
                ))
            })
        })
        .collect()
}

/// Copies `values` into C's `out` array of `capacity` items, in `order`: an error if it is too
/// small, naming how many are needed.
///
/// # Safety
/// `out` is NULL or points to `capacity` writable items.
pub unsafe fn put_dims(
    values: &[u64],
    out: *mut u64,
    capacity: usize,
    order: c_int,
    name: &str,
) -> Result<()> {
    let c = c_order(order)?;
    if capacity < values.len() {
        return Err(Failure::usage(format!(
            "argument {name}: room for {} values needed, {capacity} given",
            values.len()
        )));
    }
    if values.is_empty() {
        return Ok(());
    }
    if out.is_null() {
        return Err(Failure::usage(format!("argument {name} is NULL")));
    }
    if !out.is_aligned() {
        return Err(Failure::usage(format!(
            "argument {name} is not aligned for uint64_t"
        )));
    }
    for (i, &v) in values.iter().enumerate() {
        let at = if c { values.len() - 1 - i } else { i };
        // SAFETY: `at < values.len() <= capacity`, and the caller gives `capacity` writable
        // aligned u64s at `out`.
        unsafe { out.add(at).write(v) };
    }
    Ok(())
}
