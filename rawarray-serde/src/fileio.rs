//! Opening files by path, with the path named in every error ([`reading`]); positioned reads
//! and writes (`pread`/`pwrite`), which leave no shared cursor behind: the record writer and the
//! trailer probes address the file by offset only; the header of a file being appended to, read
//! so that it is never torn; and the memory map of a data section.

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use crate::error::Result;
use crate::header::{le_u64, Header, FIXED_HEADER_LEN, MAX_NDIMS};

/// Runs `read`, a read (or an open) of the file at `path`, and names the path in any error it
/// returns: the one place a public function given a path joins it to its errors, however deep
/// they began ("No such file or directory", a truncation, an allocation refused).
pub(crate) fn reading<T>(path: &Path, read: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    read(path).map_err(|e| e.in_file(path))
}

/// Reads exactly `buf.len()` bytes at `offset`. A file that ends first is an `UnexpectedEof`
/// error saying how far it goes and which bytes were asked for.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    read_exact_at_raw(file, buf, offset).map_err(|e| {
        if e.kind() != io::ErrorKind::UnexpectedEof {
            return e;
        }
        let end = offset.saturating_add(buf.len() as u64);
        let held = file
            .metadata()
            .map_or_else(|_| "fewer".to_string(), |m| m.len().to_string());
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "truncated: expected {end} bytes in the file (bytes {offset}..{end} read), found {held}"
            ),
        )
    })
}

fn read_exact_at_raw(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
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

/// Reads of a header after the first, each compared with the one before it, before
/// [`settled`] gives up on a header that keeps changing.
pub(crate) const SETTLE_TRIES: usize = 100;

/// The bytes `read` returns, read again until two reads in a row agree: the one rule for
/// reading a header that a writer may be committing (for a file here, for any source in
/// [`crate::io`]'s `read_settled_at`, which calls this: `io` imports this module, so the rule
/// lives here and takes the read as a closure). Writers commit a header with one `pwrite`, but a
/// concurrent `pread` is not atomic with it: a reader may copy the header's first words before
/// the write and its last words after it, an old `size` joined to new dims, which reads the
/// chunks the new dims need as never written (zeros). Two reads that agree are one header: its
/// words only move forward (doc/chunked.md, section 7.1).
///
/// A header that still differs from the read before it after [`SETTLE_TRIES`] more reads is
/// an error: a writer is rewriting it faster than it can be read, and no read of it is one
/// committed header. The caller that knows the file's path names it ([`reading`]).
pub(crate) fn settled(mut read: impl FnMut() -> io::Result<Vec<u8>>) -> io::Result<Vec<u8>> {
    let mut bytes = read()?;
    for _ in 0..SETTLE_TRIES {
        let again = read()?;
        if again == bytes {
            return Ok(bytes);
        }
        bytes = again;
        std::thread::yield_now();
    }
    Err(io::Error::other(format!(
        "its header kept changing while it was read ({} reads, no two in a row the same): a \
         writer is rewriting it; read it again once the writer has finished",
        SETTLE_TRIES + 1
    )))
}

// The stable reads are `Header`'s methods, but live here with the positioned reads they are
// made of: `header` imports nothing of the file layer, so the modules form no cycle.
impl Header {
    /// The header of `file`, which a [`RecordWriter`](crate::RecordWriter) may be appending
    /// to: its bytes are read (in one positioned read) until two reads agree, then decoded, so
    /// an old `size` is never joined to new dims. Tools that follow a growing file (`ra
    /// watch`) poll with this.
    ///
    /// ```
    /// use rawarray_serde::{Header, RawArray};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// RawArray::from_vec(vec![1u8, 2, 3]).write_file(&path).unwrap();
    /// let h = Header::read_stable(&std::fs::File::open(&path).unwrap()).unwrap();
    /// assert_eq!(h.dims, [3]);
    /// ```
    pub fn read_stable(file: &std::fs::File) -> Result<Header> {
        stable_header(file)
    }

    /// [`Header::read_stable`] that also accepts a chunked data section (flag bit 2), for
    /// callers that read it through [`crate::codec`].
    ///
    /// ```
    /// use rawarray_serde::codec::{self, ChunkOptions};
    /// use rawarray_serde::{ElType, Header};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let plain = Header::new(ElType::Uint, 1, vec![64]).unwrap();
    /// let (h, section) = codec::encode(&plain, &[7u8; 64], &ChunkOptions::new()).unwrap();
    /// let mut file = h.encode();
    /// file.extend_from_slice(&section);
    /// std::fs::write(&path, file).unwrap();
    /// let f = std::fs::File::open(&path).unwrap();
    /// let h = Header::read_stable_any(&f).unwrap();
    /// assert_eq!(rawarray_serde::section::Storage::of(&h).name(), "chunked");
    /// assert!(Header::read_stable(&f).is_err());
    /// ```
    pub fn read_stable_any(file: &std::fs::File) -> Result<Header> {
        stable_header_any(file)
    }
}

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

/// [`stable_header`] that also accepts a chunked data section (flag bit 2), for readers that
/// go through [`crate::codec`].
pub(crate) fn stable_header_any(file: &File) -> crate::Result<Header> {
    Header::decode_any(&stable_header_bytes(file)?)
}

/// The header's bytes, read until two reads agree (see [`stable_header`]), not decoded: for
/// readers of headers that [`Header::decode`] refuses (ragged files).
pub(crate) fn stable_header_bytes(file: &File) -> io::Result<Vec<u8>> {
    settled(|| header_bytes(file))
}

/// Bytes the first read of a header asks for: the fixed part and 32 dims, so that the header
/// of any array with up to 32 dims takes one `pread` (and no `fstat`: a file that ends first
/// gives what it has).
pub(crate) const FIRST_HEADER_READ: usize = FIXED_HEADER_LEN + 8 * 32;

/// The header's bytes: the fixed part, then its dims, as far as the file goes. One positioned
/// read for up to 32 dims; a header of more dims is read again whole by a second one.
pub(crate) fn header_bytes(file: &File) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; FIRST_HEADER_READ];
    let got = read_up_to(file, &mut bytes, 0)?;
    bytes.truncate(got);
    if got < FIXED_HEADER_LEN {
        return Ok(bytes);
    }
    let ndims = le_u64(&bytes[40..48]);
    // More dims than a header may have are refused by `Header::decode` from the fixed part.
    let want = if ndims <= MAX_NDIMS {
        FIXED_HEADER_LEN + 8 * ndims as usize
    } else {
        FIXED_HEADER_LEN
    };
    if want <= got || got < FIRST_HEADER_READ {
        // All of it was read, or the file ends within it.
        bytes.truncate(want);
        return Ok(bytes);
    }
    bytes.resize(want, 0);
    let got = read_up_to(file, &mut bytes, 0)?;
    bytes.truncate(got);
    Ok(bytes)
}

/// Reads at `offset` until `buf` is full or the file ends; how many bytes were read.
fn read_up_to(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(file, &mut buf[done..], offset + done as u64);
        #[cfg(windows)]
        let n =
            std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], offset + done as u64);
        match n {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
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
