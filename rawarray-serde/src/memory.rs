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

/// Buffers from this many bytes are offered transparent huge pages by [`advise_huge_pages`].
const HUGE_PAGES_FROM: usize = 8 << 20;

/// Asks Linux to back the large fresh buffer `buf` with transparent huge pages (`madvise`
/// `MADV_HUGEPAGE`; elsewhere, and for buffers under 8 MiB, nothing). Where the system's THP
/// mode is `madvise` (a common default) a buffer written once from fresh pages otherwise takes
/// one page fault per 4 KiB: for the chunked encoder's 64 MiB section, 13,000 faults, which
/// cost a quarter of the `lz4` codec's time (doc/benchmarks.md, "LZ4 encoders"). Only advice: the
/// contents and the allocation are unchanged, and a refusal is ignored.
pub(crate) fn advise_huge_pages(buf: &mut [u8]) {
    #[cfg(target_os = "linux")]
    if buf.len() >= HUGE_PAGES_FROM {
        const PAGE: usize = 4096;
        let start = (buf.as_mut_ptr() as usize).next_multiple_of(PAGE);
        let end = (buf.as_mut_ptr() as usize + buf.len()) & !(PAGE - 1);
        // SAFETY: [start, end) is a page-aligned range inside `buf`, memory this process owns
        // and holds exclusively here; MADV_HUGEPAGE changes how the kernel backs the range,
        // never its contents or its mapping, so no Rust reference to it is invalidated.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// `len` zeroed bytes (see [`try_zeroed_vec`]), offered huge pages from 8 MiB
/// ([`advise_huge_pages`]): such buffers are a read's output or an encoder's section, written
/// whole, where 4 KiB faults cost a quarter of a shuffle + zstd read's time.
pub(crate) fn try_zeroed_bytes(len: u64) -> Result<Vec<u8>> {
    let mut v = try_zeroed_vec(to_usize(len)?)?;
    advise_huge_pages(&mut v);
    Ok(v)
}

/// Room for `more` values after those in `v`, exactly, or [`ErrorKind::TooLarge`].
pub(crate) fn try_reserve<T>(v: &mut Vec<T>, more: usize) -> Result<()> {
    v.try_reserve_exact(more)
        .map_err(|_| too_large(v.len().saturating_add(more), size_of::<T>()))
}
