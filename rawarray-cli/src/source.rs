//! An opened `.ra` file: its validated header, its data handed out as plain little-endian
//! bytes, streamed in chunks (LZ4 blocks decoded as a stream), and its trailing bytes found from
//! the end. Memory stays independent of the file's size.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rawarray_serde::section::{Holds, Section, Storage};
use rawarray_serde::sniff::{self, FileKind};
use rawarray_serde::{Flags, Header};

use crate::copies::{self, Copy};
use crate::fail::{At, Failure, Result};
use crate::progress::Progress;
use crate::trailer::TrailerInfo;

/// Bytes handed to a chunk callback at a time (rounded down to whole elements).
pub const CHUNK: usize = 1 << 20;

/// What `-` means on the command line.
pub const STDIN: &str = "-";

/// The most bytes after the data section that standard input may bring: a trailer block at
/// its largest (the library's 64 MiB of JSON and its frame). More is not a `.ra` file's tail,
/// and is refused rather than copied without end.
pub const MAX_STDIN_TRAILING: u64 = (64 << 20) + rawarray_serde::trailer::TRAILER_FRAME as u64;

/// What a command reads from standard input; its first bytes are checked before anything is
/// copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `.ra` file: its header is read and checked from the stream, and the copy stops at the
    /// data's end plus at most [`MAX_STDIN_TRAILING`] bytes.
    Ra,
    /// A `.npy` file (its magic).
    Npy,
    /// A PNG image (its signature).
    Png,
    /// CSV text (no NUL byte at its start, and none of the binary signatures).
    Csv,
}

/// Whether `path` is `-`, standard input (or output).
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// Whether `path` names a pipe (a FIFO: `/dev/stdin` when standard input is a pipe, bash's
/// `<(...)`, a `mkfifo`): an input that is read as standard input is, through a copy, since it
/// can be read only once and not from the end. Devices and sockets are not pipes: a device may
/// never end, and a socket cannot be opened by name.
pub fn is_pipe(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        !is_stdio(path) && std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Whether `path` is read as a stream, once: standard input (`-`) or a pipe named as a file.
pub fn is_stream(path: &Path) -> bool {
    is_stdio(path) || is_pipe(path)
}

/// How a stream is named in messages: `<stdin>` for `-`, a pipe by its own name.
fn stream_name(source: &Path) -> &Path {
    if is_stdio(source) {
        Path::new("<stdin>")
    } else {
        source
    }
}

/// The file to read for a `.ra` input argument: `path` itself, or for `-` or a pipe a
/// temporary copy of the stream (see [`input_as`]).
pub fn input(path: &Path) -> Result<PathBuf> {
    input_as(path, Kind::Ra)
}

/// The file to read for an input argument: `path` itself, or for `-` (standard input) or a
/// pipe named as a file ([`is_pipe`]) a temporary copy of the stream, made once per name,
/// after checking that its first bytes are what `kind` needs. The copy is a regular file, so
/// every command reads it as it reads any file (the header, the trailer from the end, more
/// than one pass); memory stays independent of its size (the disk's, or on a tmpfs the
/// memory's, use does not). Errors about the copy name it as the command line does: `<stdin>`,
/// or the pipe's name (see [`shown`](crate::names::shown)).
pub fn input_as(path: &Path, kind: Kind) -> Result<PathBuf> {
    if crate::remote::is_url(path) {
        if let Some(copy) = copies::find(path) {
            return Ok(copy);
        }
        return crate::remote::input(path);
    }
    if !is_stream(path) {
        return Ok(path.to_path_buf());
    }
    if let Some(copy) = copies::find(path) {
        return Ok(copy);
    }
    // Not holding the lock: the errors of the copy name it through `shown`, which takes it.
    let copy = match open_stream(path)? {
        Some(mut pipe) => copy_stream(path, &mut pipe, kind)?,
        None => copy_stream(path, &mut io::stdin().lock(), kind)?,
    };
    let p = copy.path.clone();
    crate::names::name_copy(&p, stream_name(&copy.source));
    copies::keep(copy);
    Ok(p)
}

/// The stream a [`sniff()`] of `source` opened, or else `source` opened now: `None` for standard
/// input (which is always open), the pipe's file otherwise.
fn open_stream(source: &Path) -> Result<Option<File>> {
    let peeked = PEEKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_mut()
        .filter(|p| p.source == source)
        .and_then(|p| p.pipe.take());
    match peeked {
        Some(pipe) => Ok(Some(pipe)),
        None if is_stdio(source) => Ok(None),
        // Opening a pipe waits for its writer, as `cat` does.
        None => File::open(source).at(source).map(Some),
    }
}

/// The format the first bytes of standard input (`-`) or of a pipe announce (`.ra`, `.npy`,
/// PNG); `None` (and nothing read past those bytes) for anything else. The bytes read, and the
/// open pipe, are kept for the copy.
pub fn sniff(source: &Path) -> Result<Option<Kind>> {
    let mut peeked = PEEKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if peeked.as_ref().is_none_or(|p| p.source != source) {
        let name = stream_name(source);
        let mut head = Vec::with_capacity(8);
        let pipe = if is_stdio(source) {
            io::stdin().lock().take(8).read_to_end(&mut head).at(name)?;
            None
        } else {
            let mut pipe = File::open(source).at(name)?;
            (&mut pipe).take(8).read_to_end(&mut head).at(name)?;
            Some(pipe)
        };
        *peeked = Some(Peeked {
            source: source.to_path_buf(),
            head,
            pipe,
        });
    }
    Ok(kind_of(peeked.as_ref().map_or(&[][..], |p| &p.head)))
}

/// The first bytes of a stream that [`sniff()`] read, which its copy starts with, and the pipe
/// they came from (still open: a pipe closed and opened again would lose them).
struct Peeked {
    source: PathBuf,
    head: Vec<u8>,
    pipe: Option<File>,
}

static PEEKED: Mutex<Option<Peeked>> = Mutex::new(None);

/// The input format `head` announces, by the library's one table of signatures.
fn kind_of(head: &[u8]) -> Option<Kind> {
    if sniff::is_ra(head) {
        return Some(Kind::Ra);
    }
    match sniff::sniff(head)? {
        FileKind::Png => Some(Kind::Png),
        FileKind::Npy => Some(Kind::Npy),
        _ => None,
    }
}

/// Copies the stream `source` names, read from `stdin` (after any bytes [`sniff()`] read), to an
/// anonymous temporary file, checking its start first; returns the file and the name to open
/// it by.
fn copy_stream(source: &Path, stdin: &mut dyn Read, kind: Kind) -> Result<Copy> {
    let name = stream_name(source);
    let peeked = {
        let mut p = PEEKED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if p.as_ref().is_some_and(|p| p.source == source) {
            p.take().map(|p| p.head).unwrap_or_default()
        } else {
            Vec::new()
        }
    };
    let mut stream = io::Cursor::new(peeked).chain(stdin);
    // The start, checked before a byte is copied: garbage or an endless stream is named, not
    // copied.
    let mut head = Vec::new();
    let header = match kind {
        Kind::Ra => {
            let mut tee = Tee {
                inner: &mut stream,
                seen: &mut head,
            };
            let read = Header::read_from_any(&mut tee);
            match read {
                Ok(header) => Some(header),
                // Not a .ra stream at all: say what it looks like, as `ra info` does for files.
                Err(e) => {
                    // The library's error already says what other files look like; these
                    // two `ra convert` reads.
                    let what = match sniff::sniff(&head) {
                        Some(k @ (FileKind::Png | FileKind::Npy)) => k.description(),
                        _ => return Err(Failure::file(name, e)),
                    };
                    return Err(Failure::file(
                        name,
                        format!(
                            "not a .ra file: it looks like {what}; `ra convert - OUT.ra` makes \
                             a .ra file of it"
                        ),
                    ));
                }
            }
        }
        _ => {
            (&mut stream).take(8).read_to_end(&mut head).at(name)?;
            let found = kind_of(&head);
            let ok = match kind {
                Kind::Csv => found.is_none() && !head.contains(&0),
                k => found == Some(k),
            };
            if !ok {
                let what = match kind {
                    Kind::Npy => "not a .npy file: it does not start with \\x93NUMPY",
                    Kind::Png => "not a PNG image: it does not start with the PNG signature",
                    _ => "not CSV text: it starts with binary bytes",
                };
                let seen = match (found, sniff::sniff(&head)) {
                    (Some(Kind::Ra), _) => " (it starts as a .ra file does)".to_string(),
                    (_, Some(FileKind::Empty)) => " (it is empty)".to_string(),
                    // Text is what CSV is; not worth naming after "not a .npy file".
                    (_, Some(FileKind::Text)) | (_, None) => String::new(),
                    (_, Some(k)) => format!(" (it looks like {})", k.description()),
                };
                return Err(Failure::file(name, format!("{what}{seen}")));
            }
            None
        }
    };
    let (mut file, named) = copies::new_temp()
        .map_err(|e| Failure::file(name, format!("cannot make a temporary copy: {e}")))?;
    file.write_all(&head).at(name)?;
    match header {
        Some(h) => {
            // The data section as the header counts it (a short one is named when the copy is
            // opened: "truncated"), then at most a trailer block's worth.
            let data = io::copy(&mut (&mut stream).take(h.size), &mut file).at(name)?;
            if data == h.size {
                let cap = MAX_STDIN_TRAILING;
                let tail = io::copy(&mut (&mut stream).take(cap + 1), &mut file).at(name)?;
                if tail > cap {
                    return Err(Failure::file(
                        name,
                        format!(
                            "more than {cap} bytes after the data section: no trailer is that \
                             large, and standard input is not copied without end"
                        ),
                    ));
                }
            }
        }
        None => {
            io::copy(&mut stream, &mut file).at(name)?;
        }
    }
    let path = copies::reopenable(&file, named.as_deref(), name)?;
    Ok(Copy {
        source: source.to_path_buf(),
        file,
        path,
        named,
    })
}

/// A reader that keeps what it reads.
struct Tee<'a, R: Read> {
    inner: R,
    seen: &'a mut Vec<u8>,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// The error of a command that needs a file it can seek in or rewrite, given `-` or a pipe.
pub fn needs_a_file(command: &'static str, why: &str, path: &Path) -> Failure {
    let given = if is_stdio(path) {
        "standard input (-)".to_string()
    } else {
        format!("a pipe ('{}')", path.display())
    };
    Failure::usage(
        command,
        format!("{why}: it needs a seekable file, not {given}"),
    )
}

/// Opens an input file for reading, refusing anything but a regular file first: a device has
/// no end, and a pipe reaches here only where a command needs a file (inputs that may be
/// streams are copied first, by [`input_as`]), which opening it would wait on.
pub fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path).at(path)?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a folder, not a regular file"
        } else if is_pipe(path) {
            "a FIFO (a pipe), not a regular file"
        } else {
            "a device or socket, not a regular file"
        };
        return Err(Failure::file(path, format!("is {what}")));
    }
    File::open(path).at(path)
}

/// What `ra` does with a `.ra` file by what it holds (the library's [`Holds`]): the one place
/// the commands that read n-d arrays and ragged rows alike choose between the two. A file that
/// cannot be read goes to `array`, whose reader says why.
pub fn by_holds<T>(
    path: &Path,
    out: &mut dyn Write,
    array: impl FnOnce(&mut dyn Write) -> Result<T>,
    rows: impl FnOnce(&mut dyn Write) -> Result<T>,
) -> Result<T> {
    match Holds::of_file(path) {
        Ok(Holds::Rows) => rows(out),
        _ => array(out),
    }
}

/// A `.ra` file whose header has been read and checked against the file's length, and its
/// data section opened through the library's one section reader (a chunked file's config and
/// index read and validated).
pub struct RaSource {
    path: PathBuf,
    file: File,
    /// The data section, read through its own handle of the same open file; why it cannot be
    /// read (a damaged chunked config or index), for the commands that show the header anyway.
    section: std::result::Result<Section<File>, rawarray_serde::Error>,
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
        let header = match Header::read_from_any(&mut BufReader::new(&mut file)) {
            // Say which commands read what the library says this is.
            Err(e) if matches!(e.kind(), rawarray_serde::ErrorKind::RaggedFile) => {
                return Err(Failure::file(
                    path,
                    "is a ragged file (flag bit 3: rows of different lengths); this command \
                     reads rectangular arrays only (ra info, cat, slice, convert and compress \
                     read ragged files)",
                ))
            }
            read => read.at(path)?,
        };
        header.check_input_len(file_len).at(path)?;
        let section = Section::open(&header, file.try_clone().at(path)?);
        for w in section
            .iter()
            .flat_map(rawarray_serde::section::Section::warnings)
        {
            crate::report::note(format_args!("{}: {w}", path.display()));
        }
        Ok(RaSource {
            path: path.to_path_buf(),
            file,
            section,
            header,
            file_len,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, for reads at an offset (which leave its position alone).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Byte offset of the data section.
    pub fn data_offset(&self) -> u64 {
        self.header.encoded_len() as u64
    }

    /// The header of the plain data this source hands out: uncompressed, little-endian (except
    /// user-defined elements of a big-endian file, whose scalars are unknown and stay as stored).
    pub fn plain_header(&self) -> Header {
        let mut h = self.header.clone();
        h.flags = h
            .flags
            .with(Flags::COMPRESSED, false)
            .with(Flags::CHUNKED, false);
        if self.header.eltype.swap_width(self.header.elbyte).is_some() {
            h.flags = h.flags.with(Flags::BIG_ENDIAN, false);
        }
        h.size = h.data_len();
        h
    }

    /// Whether the data section is stored exactly as [`RaSource::for_each_chunk`] hands it out,
    /// so it can be copied byte for byte (by the kernel, file to file).
    pub fn is_plain(&self) -> bool {
        !self.storage().is_coded() && self.plain_header().flags == self.header.flags
    }

    /// Whether the data section is compressed in any way: one LZ4 block or chunked.
    pub fn is_packed(&self) -> bool {
        self.storage().is_coded()
    }

    /// How the data section is stored.
    pub fn storage(&self) -> Storage {
        Storage::of(&self.header)
    }

    /// The data section's reader (a chunked one's config and index read at open; chunks
    /// decoded on demand), or why it cannot be read.
    pub fn section(&self) -> Result<&Section<File>> {
        self.section
            .as_ref()
            .map_err(|e| Failure::file(&self.path, e.to_string()))
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
    /// reading them whole (the library's `Trailer::read_open_file`, O(1)), in the file this
    /// source opened: never the path again, which may name another file by now.
    pub fn trailer_info(&self) -> TrailerInfo {
        let bytes = self.file_len - self.data_end();
        if bytes == 0 {
            return TrailerInfo::default();
        }
        let (trailer, damaged) = match rawarray_serde::Trailer::read_open_file(&self.file) {
            Ok(t) => (t, None),
            // What is wrong, without the file's name: the caller shows it beside the file.
            Err(e) => (None, Some(e.kind().to_string())),
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
        f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.for_each_chunk_in(true, limit, progress, f)
    }

    /// [`RaSource::for_each_chunk`] with the data in the file's byte order (the plain form of
    /// its data section, as `ra decompress` writes it).
    pub fn for_each_stored_chunk(
        &mut self,
        progress: &Progress,
        f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.for_each_chunk_in(false, None, progress, f)
    }

    fn for_each_chunk_in(
        &mut self,
        to_little: bool,
        limit: Option<u64>,
        progress: &Progress,
        mut f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let total = self.header.data_len().min(limit.unwrap_or(u64::MAX));
        let swap = match self.header.eltype.swap_width(self.header.elbyte) {
            Some(w) if to_little && w > 1 && self.header.is_big_endian() => w as usize,
            _ => 0,
        };
        // The callback's error, kept while the library's reader is told to stop.
        let mut failed = None;
        let mut buf = Vec::new();
        self.section()?
            .for_each_piece(total, CHUNK, |piece| {
                let piece = if swap > 0 {
                    buf.clear();
                    buf.extend_from_slice(piece);
                    buf.chunks_exact_mut(swap).for_each(<[u8]>::reverse);
                    &buf[..]
                } else {
                    piece
                };
                match f(piece) {
                    Ok(()) => {
                        progress.inc(piece.len() as u64);
                        std::ops::ControlFlow::Continue(())
                    }
                    Err(e) => {
                        failed = Some(e);
                        std::ops::ControlFlow::Break(())
                    }
                }
            })
            .at(&self.path)?;
        failed.map_or(Ok(()), Err)
    }

    /// All the plain data in memory.
    pub fn read_all(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        // Fallible: the length comes from the file, and one that does not fit is an error.
        let len = usize::try_from(self.header.data_len()).unwrap_or(usize::MAX);
        out.try_reserve_exact(len).map_err(|_| {
            Failure::file(
                &self.path,
                format!("{} data bytes do not fit in memory", self.header.data_len()),
            )
        })?;
        self.for_each_chunk(None, &Progress::hidden(), |c| {
            out.extend_from_slice(c);
            Ok(())
        })?;
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// A `.ra` file of bytes `data` with a trailer of params `params`, written by a rename
    /// over `path` (as every rewrite does).
    pub(crate) fn write_with_trailer(path: &Path, data: Vec<u8>, params: &str) {
        let mut a = rawarray_serde::DynArray::from_typed(&rawarray_serde::RawArray::from_vec(data));
        a.set_trailer(&rawarray_serde::Trailer::new(params).unwrap());
        a.write_file(path).unwrap();
    }

    /// A file renamed over the path after the source opened it: the trailer is the one of the
    /// file whose header was read, not the new file's.
    #[test]
    fn the_trailer_is_read_from_the_file_opened_not_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.ra");
        write_with_trailer(&path, vec![1, 2, 3], "old");
        let src = RaSource::open(&path).unwrap();
        write_with_trailer(&path, vec![9; 40], "a newer, longer trailer");
        let info = src.trailer_info();
        assert_eq!(info.damaged, None);
        assert_eq!(info.trailer.unwrap().params, "old");
    }
}
