//! `ra watch FILE`: follow a record file as a writer appends to it, like `tail -f`.
//!
//! A `RecordWriter` commits a flush by rewriting the header (one `pwrite`) after the records
//! it covers are written, so the header's last dim is always a count of complete records.
//! This polls the header every [`POLL`], reads only the records committed since the last poll
//! (positioned reads, never the whole file) and prints them as `ra cat` does, flushing stdout
//! after each batch. It stops with an error when the file is replaced (another inode at the
//! path), cut below what was printed, or given other dims; Ctrl-C ends it (SIGINT).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rawarray_serde::section::{Section, Storage};
use rawarray_serde::{ElType, Header, Layout};

use crate::cat::push_index;
use crate::fail::{At, Failure, Result};
use crate::source::{open_regular, CHUNK};
use crate::value::{layout_text, Decoder};

/// How often the header is read.
const POLL: Duration = Duration::from_millis(100);

/// Follows `path`: first the last `last` records, then every newly committed one; with
/// `summary`, one line per poll that finds new records instead. Returns only on an error
/// (or a closed stdout).
pub fn run(path: &Path, last: u64, summary: bool, out: &mut dyn Write) -> Result<()> {
    let mut file = open_regular(path)?;
    let opened = identity(&file.metadata().at(path)?);
    let first = read_header_retrying(&mut file, path)?;
    let storage = Storage::of(&first);
    if !storage.grows_in_place() {
        return Err(Failure::file(
            path,
            format!(
                "is stored as {}, which is written once, never appended to: nothing to follow",
                storage.name()
            ),
        ));
    }
    let Some(&count) = first.dims.last() else {
        return Err(Failure::file(
            path,
            "has no dims (a scalar): there are no records to follow",
        ));
    };
    // The schema is read once: a writer never changes it (RecordWriter::open checks the type).
    // From the open file, never the path again (which may name another file by now).
    let schema_of = |file: &File, h: &Header| {
        rawarray_serde::Trailer::read_open_file(file)
            .ok()
            .flatten()
            .and_then(|t| t.schema)
            .filter(|_| h.eltype == ElType::User)
            .and_then(|s| s.check_header(h).ok().cloned())
    };
    // A trailer there but not readable yet (being rewritten as it is read): read it again a
    // few polls before the first batch, so that it does not print as hex.
    let mut schema = schema_of(&file, &first);
    let trailing = |file: &File, h: &Header| {
        file.metadata()
            .is_ok_and(|m| m.len() > h.encoded_len() as u64 + h.size)
    };
    for _ in 1..BAD_POLLS {
        if schema.is_some() || first.eltype != ElType::User || !trailing(&file, &first) {
            break;
        }
        std::thread::sleep(POLL);
        schema = schema_of(&file, &first);
    }
    let mut printer = Printer {
        decoder: Decoder::new(first.eltype, first.elbyte),
        schema,
        big_endian: first.is_big_endian(),
        swap: match first.eltype.swap_width(first.elbyte) {
            Some(w) if w > 1 && first.is_big_endian() => w as usize,
            _ => 0,
        },
        dims: first.dims.clone(),
        line: String::new(),
    };
    let per_record: u64 = first.dims[..first.dims.len() - 1].iter().product();
    let mut shown = count.saturating_sub(last);
    let mut header = first.clone();
    loop {
        let now = header.dims.last().copied().unwrap_or(0);
        if now > shown {
            if summary {
                let line = format!(
                    "{}: +{} record{} ({now} in all)\n",
                    path.display(),
                    now - shown,
                    if now - shown == 1 { "" } else { "s" }
                );
                out.write_all(line.as_bytes()).map_err(Failure::stdout)?;
            } else {
                let from = shown * per_record;
                let to = now * per_record;
                printer.print(&mut file, path, &header, from..to, out)?;
            }
            out.flush().map_err(Failure::stdout)?;
            shown = now;
        }
        std::thread::sleep(POLL);
        // Replaced (a new file renamed over the path, or deleted): the open file is no longer
        // the one the name means.
        match std::fs::metadata(path) {
            Ok(m) if identity(&m) == opened => {}
            Ok(_) => return Err(Failure::file(path, "was replaced by another file; stopped")),
            Err(e) => return Err(Failure::file(path, format!("is gone ({e}); stopped"))),
        }
        header = read_header_retrying(&mut file, path)?;
        // Records without a schema yet (a trailer being rewritten as it was first read): look
        // again, so that they print by field name as soon as it can be read.
        if printer.schema.is_none() && header.eltype == ElType::User {
            printer.schema = schema_of(&file, &header);
        }
        let now = header.dims.last().copied().unwrap_or(0);
        let same_shape = header.dims.len() == first.dims.len()
            && header.dims[..header.dims.len() - 1] == first.dims[..first.dims.len() - 1]
            && (header.eltype, header.elbyte, header.flags)
                == (first.eltype, first.elbyte, first.flags);
        if !same_shape {
            return Err(Failure::file(
                path,
                format!(
                    "was rewritten with another type or dims ({:?} -> {:?}); stopped",
                    first.dims, header.dims
                ),
            ));
        }
        if now < shown {
            return Err(Failure::file(
                path,
                format!("was cut from {shown} to {now} records; stopped"),
            ));
        }
    }
}

/// Which file a handle or a name means: (device, inode) where there are inodes.
type Identity = (u64, u64);

#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> Identity {
    // Without inodes a replacement shows as a changed header or a cut.
    (0, 0)
}

/// Polls in a row whose header cannot be decoded (or counts more than the file holds) before
/// `ra watch` gives up: a header caught mid-write is read again at the next poll.
const BAD_POLLS: u32 = 5;

/// The header of a file a writer may be rewriting, read until two reads agree
/// ([`Header::read_stable`]), and checked against the file's length.
fn read_header(file: &mut File, path: &Path) -> Result<Header> {
    let header = Header::read_stable_any(file).at(path)?;
    // The header only counts records whose bytes are written (and, for a flush, the writer
    // wrote them first): a shorter file is a cut one.
    let len = file.metadata().at(path)?.len();
    header.check_input_len(len).at(path)?;
    Ok(header)
}

/// [`read_header`], read again at the next polls (up to [`BAD_POLLS`]) while it fails: only a
/// header that stays bad stops `ra watch`.
fn read_header_retrying(file: &mut File, path: &Path) -> Result<Header> {
    let mut tries = 1;
    loop {
        match read_header(file, path) {
            Ok(h) => return Ok(h),
            Err(Failure::File { .. }) if tries < BAD_POLLS => {
                tries += 1;
                std::thread::sleep(POLL);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Prints elements as `ra cat` does.
struct Printer {
    decoder: Decoder,
    schema: Option<Layout>,
    big_endian: bool,
    /// Width of the scalars to reverse (numeric elements of a big-endian file), or 0.
    swap: usize,
    /// Dims of one record and the record count (only the first dims matter for indices).
    dims: Vec<u64>,
    line: String,
}

impl Printer {
    /// Prints elements `range` (element positions in the data section).
    fn print(
        &mut self,
        file: &mut File,
        path: &Path,
        header: &Header,
        range: std::ops::Range<u64>,
        out: &mut dyn Write,
    ) -> Result<()> {
        let elbyte = header.elbyte;
        // Read through the library's section reader, whatever the storage, whole records at a
        // time (`range` starts and ends at record boundaries), a chunked file's index as the
        // header just read commits it.
        let section = Section::open(header, &*file).at(path)?;
        let record = header.dims[..header.dims.len() - 1]
            .iter()
            .product::<u64>()
            .max(1);
        let per = ((CHUNK as u64 / elbyte).max(1) / record).max(1) * record;
        let mut ranges: Vec<std::ops::Range<u64>> = header.dims.iter().map(|&d| 0..d).collect();
        let mut buf = Vec::new();
        let mut k = range.start;
        while k < range.end {
            let n = per.min(range.end - k);
            buf.resize((n * elbyte) as usize, 0);
            *ranges.last_mut().expect("a dim") = k / record..(k + n) / record;
            section.read_box(&ranges, &mut buf).at(path)?;
            if self.swap > 0 {
                buf.chunks_exact_mut(self.swap).for_each(<[u8]>::reverse);
            }
            self.line.clear();
            for (i, element) in buf.chunks_exact(elbyte as usize).enumerate() {
                push_index(&index_of(k + i as u64, &self.dims), ", ", &mut self.line);
                self.line.push('\t');
                match &self.schema {
                    Some(layout) => {
                        layout_text(layout, element, self.big_endian, false, &mut self.line);
                    }
                    None => self.decoder.decode(element).text(&mut self.line),
                }
                self.line.push('\n');
            }
            out.write_all(self.line.as_bytes())
                .map_err(Failure::stdout)?;
            k += n;
        }
        Ok(())
    }
}

/// The column-major index of element `k`; the last dim (the record count) is unbounded.
fn index_of(mut k: u64, dims: &[u64]) -> Vec<u64> {
    let mut index = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        if i + 1 == dims.len() || d == 0 {
            index.push(k);
            k = 0;
        } else {
            index.push(k % d);
            k /= d;
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::index_of;

    #[test]
    fn indices_are_column_major_with_an_open_last_dim() {
        assert_eq!(index_of(0, &[3, 2, 1]), [0, 0, 0]);
        assert_eq!(index_of(4, &[3, 2, 1]), [1, 1, 0]);
        assert_eq!(index_of(13, &[3, 2, 1]), [1, 0, 2]);
        assert_eq!(index_of(7, &[5]), [7]);
    }
}
