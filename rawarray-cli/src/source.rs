//! An opened `.ra` file: its validated header, its data handed out as plain little-endian
//! bytes, streamed in chunks (LZ4 blocks decoded as a stream), and its trailing bytes found from
//! the end. Memory stays independent of the file's size.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rawarray_serde::{Flags, Header};

use crate::fail::{At, Failure, Result};
use crate::lz4;
use crate::progress::Progress;
use crate::trailer::TrailerInfo;

/// Bytes handed to a chunk callback at a time (rounded down to whole elements).
pub const CHUNK: usize = 1 << 20;

/// What `-` means on the command line.
pub const STDIN: &str = "-";

/// Standard input, copied to a temporary file the first time a command names `-`; `main`
/// deletes it ([`remove_stdin_copy`]) when the command ends.
static STDIN_COPY: Mutex<Option<tempfile::TempPath>> = Mutex::new(None);

/// Whether `path` is `-`, standard input (or output).
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// The file to read for an input argument: `path` itself, or for `-` a temporary copy of
/// standard input, made once. The copy is a regular file, so every command reads it as it
/// reads any file (the header, the trailer from the end, more than one pass); memory stays
/// independent of its size. Errors about the copy name it `<stdin>` (see [`shown`]).
pub fn input(path: &Path) -> Result<PathBuf> {
    if !is_stdio(path) {
        return Ok(path.to_path_buf());
    }
    let mut copy = STDIN_COPY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = copy.as_ref() {
        return Ok(p.to_path_buf());
    }
    let stdin_name = Path::new("<stdin>");
    let mut file = tempfile::Builder::new()
        .prefix(".ra-stdin-")
        .tempfile()
        .map_err(|e| Failure::file(stdin_name, format!("cannot make a temporary copy: {e}")))?;
    io::copy(&mut io::stdin().lock(), file.as_file_mut()).at(stdin_name)?;
    let temp = file.into_temp_path();
    let p = temp.to_path_buf();
    *copy = Some(temp);
    Ok(p)
}

/// How to name `path` in a message: `<stdin>` for the copy of standard input.
pub fn shown(path: &Path) -> std::borrow::Cow<'_, str> {
    let copy = STDIN_COPY.lock().unwrap_or_else(|e| e.into_inner());
    if copy.as_deref().is_some_and(|c| c == path) {
        return "<stdin>".into();
    }
    path.to_string_lossy()
}

/// Deletes the copy of standard input, if one was made.
pub fn remove_stdin_copy() {
    let mut copy = STDIN_COPY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = copy.take() {
        let _ = p.close();
    }
}

/// The error of a command that needs a file it can seek in or rewrite, given `-`.
pub fn needs_a_file(command: &'static str, why: &str) -> Failure {
    Failure::usage(
        command,
        format!("{why}: it needs a seekable file, not standard input (-)"),
    )
}

/// Opens an input file for reading, refusing anything but a regular file first: opening a FIFO
/// would wait for a writer forever, and a device has no end.
pub fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path).at(path)?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a folder, not a regular file"
        } else {
            "a FIFO, device or socket, not a regular file (to read standard input, name it -)"
        };
        return Err(Failure::file(path, format!("is {what}")));
    }
    File::open(path).at(path)
}

/// A `.ra` file whose header has been read and checked against the file's length.
pub struct RaSource {
    path: PathBuf,
    file: File,
    /// The header as stored (flags, compressed size).
    pub header: Header,
    /// Bytes of the whole file.
    pub file_len: u64,
}

impl RaSource {
    /// Opens `path` and reads its header; a truncated or malformed file is an error naming it.
    pub fn open(path: &Path) -> Result<RaSource> {
        let mut file = open_regular(path)?;
        let file_len = file.metadata().at(path)?.len();
        let header = Header::read_from(&mut BufReader::new(&mut file)).at(path)?;
        header.check_input_len(file_len).at(path)?;
        Ok(RaSource {
            path: path.to_path_buf(),
            file,
            header,
            file_len,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset of the data section.
    pub fn data_offset(&self) -> u64 {
        self.header.encoded_len() as u64
    }

    /// The header of the plain data this source hands out: uncompressed, little-endian (except
    /// user-defined elements of a big-endian file, whose scalars are unknown and stay as stored).
    pub fn plain_header(&self) -> Header {
        let mut h = self.header.clone();
        h.flags = h.flags.with(Flags::COMPRESSED, false);
        if self.header.eltype.swap_width(self.header.elbyte).is_some() {
            h.flags = h.flags.with(Flags::BIG_ENDIAN, false);
        }
        h.size = h.data_len();
        h
    }

    /// Whether the data section is stored exactly as [`RaSource::for_each_chunk`] hands it out,
    /// so it can be copied byte for byte (by the kernel, file to file).
    pub fn is_plain(&self) -> bool {
        !self.header.is_compressed() && self.plain_header().flags == self.header.flags
    }

    /// The open file, positioned at the first data byte, and the data section's length: for
    /// copying a plain data section as it is.
    pub fn data_file(&mut self) -> Result<(&mut File, u64)> {
        let offset = self.data_offset();
        self.file.seek(SeekFrom::Start(offset)).at(&self.path)?;
        Ok((&mut self.file, self.header.size))
    }

    /// Where the data section ends: the trailing bytes start there.
    pub fn data_end(&self) -> u64 {
        self.data_offset() + self.header.size
    }

    /// What the bytes after the data section are, found from the end of the file without
    /// reading them whole (the library's `Trailer::read_file`, O(1)).
    pub fn trailer_info(&self) -> TrailerInfo {
        let bytes = self.file_len - self.data_end();
        if bytes == 0 {
            return TrailerInfo::default();
        }
        let (trailer, damaged) = match rawarray_serde::Trailer::read_file(&self.path) {
            Ok(t) => (t, None),
            Err(e) => (None, Some(e.to_string())),
        };
        TrailerInfo {
            bytes,
            trailer,
            damaged,
        }
    }

    /// Writes the trailing bytes behind a rewritten data section that now ends at `new_end`:
    /// a trailer block placed again for that offset (so that record appending and `recover`
    /// find it where they look; 0 marks a copy away from the data end), other bytes copied as
    /// they are, streamed.
    pub fn copy_trailing(
        &mut self,
        info: &TrailerInfo,
        new_end: u64,
        out: &mut File,
        output: &Path,
    ) -> Result<()> {
        use std::io::Write;
        if let Some(t) = &info.trailer {
            return out.write_all(&t.encode_block(new_end)).at(output);
        }
        let start = self.data_end();
        self.file.seek(SeekFrom::Start(start)).at(&self.path)?;
        let copied = io::copy(&mut (&self.file).take(info.bytes), out).at(output)?;
        if copied != info.bytes {
            return Err(Failure::file(
                &self.path,
                "the file shrank while it was read",
            ));
        }
        Ok(())
    }

    /// Calls `f` with the plain data, in order, in chunks of whole elements; stops at the first
    /// error `f` returns, or after `limit` bytes. Compressed files are decoded as a stream,
    /// and only as far as `limit` asks.
    pub fn for_each_chunk(
        &mut self,
        limit: Option<u64>,
        progress: &Progress,
        mut f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let total = self.header.data_len().min(limit.unwrap_or(u64::MAX));
        let elbyte = self.header.elbyte as usize;
        let swap = match self.header.eltype.swap_width(self.header.elbyte) {
            Some(w) if w > 1 && self.header.is_big_endian() => w as usize,
            _ => 0,
        };
        if self.header.is_compressed() {
            let path = self.path.clone();
            let plain = self.header.data_len();
            let (file, size) = self.data_file()?;
            let input = BufReader::with_capacity(1 << 16, file.take(size));
            let mut buf = Vec::new();
            let decoded = lz4::decode(input, plain, total, elbyte, CHUNK, |chunk| {
                let chunk = if swap > 0 {
                    buf.clear();
                    buf.extend_from_slice(chunk);
                    buf.chunks_exact_mut(swap).for_each(<[u8]>::reverse);
                    &buf[..]
                } else {
                    chunk
                };
                f(chunk)?;
                progress.inc(chunk.len() as u64);
                Ok(())
            });
            return match decoded {
                Ok(()) => Ok(()),
                Err(lz4::Stop::Callback(e)) => Err(e),
                Err(lz4::Stop::Decode(e)) => Err(Failure::file(&path, e)),
            };
        }
        self.data_file()?;
        let mut reader = (&self.file).take(total);
        // Whole elements, and never more than there is to read: a user-defined element may
        // claim a huge elbyte in a file whose dims hold a 0 (and so no data at all).
        let per = ((CHUNK / elbyte).max(1) * elbyte) as u64;
        let mut buf = vec![0u8; per.min(total) as usize];
        let mut left = total;
        while left > 0 {
            let want = (buf.len() as u64).min(left) as usize;
            reader.read_exact(&mut buf[..want]).at(&self.path)?;
            let chunk = &mut buf[..want];
            if swap > 0 {
                chunk.chunks_exact_mut(swap).for_each(<[u8]>::reverse);
            }
            f(chunk)?;
            progress.inc(want as u64);
            left -= want as u64;
        }
        Ok(())
    }

    /// All the plain data in memory.
    pub fn read_all(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(usize::try_from(self.header.data_len()).unwrap_or(0));
        self.for_each_chunk(None, &Progress::hidden(), |c| {
            out.extend_from_slice(c);
            Ok(())
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by running `ra cat` over the fuzz corpus: a user-defined element of 2^56 bytes in a
    /// file with a 0 dim (so no data) made `for_each_chunk` allocate one element's buffer, and
    /// abort.
    #[test]
    fn a_huge_elbyte_without_data_allocates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.ra");
        let words: [u64; 8] = [u64::from_le_bytes(*b"rawarray"), 0, 0, 1 << 56, 0, 2, 0, 5];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, bytes).unwrap();
        let mut src = RaSource::open(&path).unwrap();
        let mut calls = 0;
        src.for_each_chunk(None, &Progress::hidden(), |_| {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 0);
        assert!(src.read_all().unwrap().is_empty());
    }
}
