//! Allocations whose size comes from a file: fallible, so that a header that lies about its
//! size is an error ([`ErrorKind::TooLarge`]), never an aborted process. A leaf below every
//! module that reads: it knows only the error type.

use crate::error::{Error, ErrorKind, Result};

/// `n` as a `usize`, or an error for data that cannot be addressed on this platform.
pub(crate) fn to_usize(n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|_| ErrorKind::TooLarge { bytes: n }.into())
}

/// The error of an allocation of `len` values of `size` bytes that failed.
pub(crate) fn too_large(len: usize, size: usize) -> Error {
    let bytes = (len as u64).saturating_mul(size as u64);
    ErrorKind::TooLarge { bytes }.into()
}

/// `len` zeroed values in one allocation, or [`ErrorKind::TooLarge`] where the memory cannot be
/// had: every allocation whose size comes from a file is made this way (or through
/// [`try_reserve`]), never one that aborts the process. Zeroed by the allocator, so that fresh
/// pages from the system cost nothing until they are written.
pub(crate) fn try_zeroed_vec<P: bytemuck::Zeroable>(len: usize) -> Result<Vec<P>> {
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| too_large(len, size_of::<P>()))
}

/// `len` zeroed bytes (see [`try_zeroed_vec`]).
pub(crate) fn try_zeroed_bytes(len: u64) -> Result<Vec<u8>> {
    try_zeroed_vec(to_usize(len)?)
}

/// Room for `more` values after those in `v`, exactly, or [`ErrorKind::TooLarge`].
pub(crate) fn try_reserve<T>(v: &mut Vec<T>, more: usize) -> Result<()> {
    v.try_reserve_exact(more)
        .map_err(|_| too_large(v.len().saturating_add(more), size_of::<T>()))
}
