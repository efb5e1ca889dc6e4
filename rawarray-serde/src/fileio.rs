//! Positioned reads and writes (`pread`/`pwrite`), which leave no shared cursor behind: the
//! record writer and the trailer probes address the file by offset only; and the header of a
//! file being appended to, read so that it is never torn; and the memory map of a data section.

use std::fs::File;
use std::io;

use memmap2::{Mmap, MmapOptions};

use crate::error::Result;
use crate::header::{le_u64, Header, FIXED_HEADER_LEN, MAX_NDIMS};

/// Reads exactly `buf.len()` bytes at `offset`.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Writes all of `buf` at `offset` (one `pwrite` unless the kernel writes less).
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_write(file, buf, offset) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Times a header that changes under the reader is read again before settling for the last.
const HEADER_TRIES: usize = 100;

/// The header of a file that a [`RecordWriter`](crate::RecordWriter) may be appending to: its
/// bytes are read (in one positioned read) until two reads agree, then decoded. A writer updates
/// the header with one `pwrite`; a reader taking the fixed part and the dims in two reads, or
/// racing the copy into the page cache, could otherwise join an old `size` to new dims.
///
/// At most `48 + 8 x MAX_NDIMS` bytes are read, and a header cut short by the end of the file is
/// decoded from what is there, so the errors are those of [`Header::decode`] on the same bytes.
pub(crate) fn stable_header(file: &File) -> crate::Result<Header> {
    Header::decode(&stable_header_bytes(file)?)
}

/// The header's bytes, read until two reads agree (see [`stable_header`]), not decoded: for
/// readers of headers that [`Header::decode`] refuses (ragged files).
pub(crate) fn stable_header_bytes(file: &File) -> io::Result<Vec<u8>> {
    let mut bytes = header_bytes(file)?;
    for _ in 0..HEADER_TRIES {
        let again = header_bytes(file)?;
        if again == bytes {
            break;
        }
        bytes = again;
        std::thread::yield_now();
    }
    Ok(bytes)
}

/// The header's bytes: the fixed part, then its dims, as far as the file goes.
fn header_bytes(file: &File) -> io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut bytes = vec![0u8; FIXED_HEADER_LEN.min(len as usize)];
    read_exact_at(file, &mut bytes, 0)?;
    if bytes.len() == FIXED_HEADER_LEN {
        let ndims = le_u64(&bytes[40..48]);
        // More dims than a header may have are refused by `Header::decode` from the fixed part.
        if ndims <= MAX_NDIMS {
            let total = (FIXED_HEADER_LEN as u64 + 8 * ndims).min(len);
            bytes.resize(total as usize, 0);
            read_exact_at(file, &mut bytes, 0)?;
        }
    }
    Ok(bytes)
}

/// Maps the data section of `file`, as `header` (read from it) describes it.
///
/// # Safety
///
/// memmap2's contract: the mapped bytes must be neither modified nor truncated away while
/// the map lives. Each caller says why that holds for its files.
pub(crate) unsafe fn map_data_section(file: &File, header: &Header) -> Result<Mmap> {
    let bytes = crate::data::to_usize(header.size)?;
    // SAFETY: the caller upholds memmap2's contract for these bytes (this fn's own contract).
    let map = unsafe {
        MmapOptions::new()
            .offset(header.encoded_len() as u64)
            .len(bytes)
            .map(file)?
    };
    Ok(map)
}
