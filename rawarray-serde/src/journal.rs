//! The block journal of an [`ArrayWriter`](crate::ArrayWriter): which blocks were begun and
//! never finished, so that a block torn by a killed writer is reported, never read as clean
//! data.
//!
//! A block is written in place, by one positioned write per run: a writer killed (or failing)
//! in the middle leaves part of the block written and the rest as it was, which no check of
//! the `.ra` file alone can see. So every block write is entered in a journal beside the file
//! first (`begin`), and marked done once all its bytes are written (`end`). A block with a
//! `begin` and no `end` was never committed. A later complete write of the same ranges commits
//! it (a rerun of the killed rank repairs the file); the superseded write's own `end`, should
//! it still come (a slow writer, a retried task), is accepted.
//!
//! # On-disk form
//!
//! The journal of `DIR/NAME` (symlinks followed) is `DIR/NAME.journal`. All integers are
//! little-endian; CRC-32 is IEEE (as `zlib.crc32`, the trailer's).
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 8 | magic | `rajournl` |
//! | 4 | version | 1 |
//! | 4 | header_crc | CRC-32 of the array file's encoded header (48 + 8 x ndims bytes); a chunked file's with its `size` 0 |
//! | 8 | ino | the array file's inode number |
//! | 8 | ndims | the array's ndims (as its header) |
//!
//! then entries, each `16 + 16 x ndims` bytes, appended (`O_APPEND`, one write each):
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 4 | kind | 1 = begin, 2 = end |
//! | 4 | crc | CRC-32 of kind, id and ranges (every byte of the entry but this field) |
//! | 8 | id | the block write's id, unique per write (random per writer, then counted) |
//! | 16 x ndims | ranges | `start`, `end` (u64 each) per dim of the file, first dim first |
//!
//! An `end` repeats its `begin`'s id and ranges. A journal whose `ino` or `header_crc` is not
//! the array file's belongs to a file that was replaced since: it is ignored, and replaced by
//! the next writer. Anything else that is not as above (magic, version, ndims, a length that
//! ends inside an entry, a CRC, a kind, a range past its dim, an `end` without a `begin`, an id
//! begun twice) makes the journal unreadable: an error, since which blocks were committed
//! cannot then be told.
//!
//! [`ArrayWriter::create`](crate::ArrayWriter::create) replaces the journal with an empty one
//! while it still holds the new file alone (its exclusive lock, released once the journal is in
//! place); [`ArrayWriter::open`](crate::ArrayWriter::open) uses the file's journal, making one
//! if there is none. [`ArrayWriter::finish`](crate::ArrayWriter::finish) of the last writer
//! (the one that can take the file's exclusive lock) removes a journal with no uncommitted
//! block; one with an uncommitted block stays (and that `finish` returns
//! [`ErrorKind::Uncommitted`]), and is reported by `ra info`, `ra verify`,
//! `recover` and [`ArrayWriter::uncommitted_blocks`](crate::ArrayWriter::uncommitted_blocks).
//!
//! A chunked file's block is committed by one header write, all its chunks at once; so a begun
//! block without an `end` whose chunks all count in the file's index was committed (its writer
//! died between the commit and the `end`), and is not reported.
//!
//! The journal records what a killed process left; it is synced with the data by
//! [`ArrayWriter::sync`](crate::ArrayWriter::sync) and `finish`, not block by block, so after a
//! power cut the blocks written since the last sync may be torn unreported. Appends from several machines
//! to one journal on NFS are not atomic (NFS has no `O_APPEND` across clients): entries may be
//! overwritten, which makes the journal unreadable (an error), never a torn block clean.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufReader, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{ErrorKind, Result};
use crate::header::Header;
use crate::lock::{is_at_path, lock_exclusive};
use crate::section::Storage;

/// The journal's first eight bytes.
pub(crate) const MAGIC: &[u8; 8] = b"rajournl";
/// The version of the on-disk form written and read.
const VERSION: u32 = 1;
/// Bytes of the journal's header.
const HEADER_LEN: usize = 32;
/// Entry kinds.
const BEGIN: u32 = 1;
const END: u32 = 2;
/// Times a journal that others replace while we look is looked at again.
const TRIES: usize = 16;

/// The path of the journal of the array file at `path` (symlinks followed).
pub(crate) fn journal_path(path: &Path) -> io::Result<PathBuf> {
    let target = crate::target::resolve(path)?;
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".journal");
    Ok(target.with_file_name(name))
}

/// What ties a journal to one array file: its inode and its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    ino: u64,
    header_crc: u32,
    ndims: u64,
}

impl Identity {
    fn of(file: &File, header: &Header) -> io::Result<Identity> {
        // A chunked file's size grows with every block committed: its journal is tied to the
        // header as it was created, size 0, which each commit leaves as it was.
        let mut fixed = header.clone();
        if Storage::of(header).has_chunk_index() {
            fixed.size = 0;
        }
        Ok(Identity {
            ino: inode(&file.metadata()?),
            header_crc: crc32fast::hash(&fixed.encode()),
            ndims: header.dims.len() as u64,
        })
    }

    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.header_crc.to_le_bytes());
        b[16..24].copy_from_slice(&self.ino.to_le_bytes());
        b[24..32].copy_from_slice(&self.ndims.to_le_bytes());
        b
    }
}

fn inode(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::ino(meta)
    }
    #[cfg(not(unix))]
    {
        // No inode number: the header alone ties a journal to its file.
        let _ = meta;
        0
    }
}

/// An error about the journal at `path`.
fn bad(path: &Path, why: impl Into<String>) -> crate::Error {
    ErrorKind::BadJournal {
        path: path.to_path_buf(),
        why: why.into(),
    }
    .into()
}

/// What the journal's header says of the file it belongs to: `None` if another file's.
fn read_header(path: &Path, bytes: &[u8], own: &Identity) -> Result<Option<()>> {
    if bytes.len() < HEADER_LEN {
        return Err(bad(
            path,
            format!(
                "truncated header: expected {HEADER_LEN} bytes, found {}",
                bytes.len()
            ),
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err(bad(
            path,
            format!(
                "bad magic: expected \"rajournl\", found {:02x?}",
                &bytes[..8]
            ),
        ));
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version != VERSION {
        return Err(bad(
            path,
            format!("version is {version}: expected {VERSION}"),
        ));
    }
    if u64_at(16) != own.ino || u32_at(12) != own.header_crc {
        return Ok(None);
    }
    let ndims = u64_at(24);
    if ndims != own.ndims {
        return Err(bad(
            path,
            format!("ndims is {ndims}: the array has {}", own.ndims),
        ));
    }
    Ok(Some(()))
}

/// One entry's bytes.
fn encode_entry(kind: u32, id: u64, ranges: &[Range<u64>]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + 16 * ranges.len());
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&id.to_le_bytes());
    for r in ranges {
        b.extend_from_slice(&r.start.to_le_bytes());
        b.extend_from_slice(&r.end.to_le_bytes());
    }
    let crc = entry_crc(&b);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
    b
}

fn entry_crc(entry: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&entry[..4]);
    h.update(&entry[8..]);
    h.finalize()
}

/// The blocks of the array file `file` (header `header`, at `path`) that its journal says were
/// begun and never committed; `None` if it has no journal of its own (none, or another file's).
pub(crate) fn uncommitted(
    path: &Path,
    file: &File,
    header: &Header,
) -> Result<Option<Vec<Vec<Range<u64>>>>> {
    let jpath = journal_path(path)?;
    let Some(journal) = open_journal(&jpath, false)? else {
        return Ok(None);
    };
    let own = Identity::of(file, header)?;
    let Some(mut blocks) = scan(&jpath, &mut BufReader::new(journal), &own, &header.dims)? else {
        return Ok(None);
    };
    if Storage::of(header).has_chunk_index() && !blocks.is_empty() {
        // A chunked file's block is committed by one header write, all its chunks at once: a
        // block whose chunks all count in the index was committed, whether or not its writer
        // lived to enter its `end` (or lost a race to write them to another writer).
        // The header as it is now: a writer's own copy has the size it opened the file at.
        let now = crate::fileio::stable_header_any(file)?;
        let section = crate::section::Section::open(&now, file)?;
        let map = section.chunk_map().expect("a chunked header");
        let grid = map.grid();
        blocks.retain(|b| grid.touched(b).any(|n| map.entry(n).is_empty()));
    }
    Ok(Some(blocks))
}

/// Opens the journal at `jpath` (for appending if `append`); `None` if there is none. Anything
/// but a regular file is refused, and opened without blocking on the way (a FIFO put there
/// would block an ordinary open).
fn open_journal(jpath: &Path, append: bool) -> Result<Option<File>> {
    let mut open = OpenOptions::new();
    open.read(true).append(append);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NONBLOCK);
    let f = match open.open(jpath) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", jpath.display())).into()),
    };
    if !f.metadata()?.is_file() {
        return Err(bad(jpath, "not a regular file"));
    }
    Ok(Some(f))
}

/// Reads a journal from `r` (named `path` in errors), checking every byte.
fn scan(
    path: &Path,
    r: &mut dyn Read,
    own: &Identity,
    dims: &[u64],
) -> Result<Option<Vec<Vec<Range<u64>>>>> {
    let mut head = Vec::with_capacity(HEADER_LEN);
    r.take(HEADER_LEN as u64).read_to_end(&mut head)?;
    if read_header(path, &head, own)?.is_none() {
        return Ok(None);
    }
    let entry_len = 16 + 16 * dims.len();
    let mut entry = vec![0u8; entry_len];
    // Begun blocks by id: their ranges and the entry index of their begin.
    let mut open: HashMap<u64, (Vec<Range<u64>>, u64)> = HashMap::new();
    // Writes of a block that a later complete write of the same ranges committed: their own
    // `end` may still come (a slow writer, a retried task), and is then no damage.
    let mut superseded: HashMap<u64, Vec<Range<u64>>> = HashMap::new();
    let mut index = 0u64;
    loop {
        let got = read_full(r, &mut entry)?;
        if got == 0 {
            break;
        }
        if got < entry_len {
            return Err(bad(
                path,
                format!("entry {index} is cut short: {got} of its {entry_len} bytes"),
            ));
        }
        let kind = u32::from_le_bytes(entry[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(entry[4..8].try_into().expect("4 bytes"));
        if crc != entry_crc(&entry) {
            return Err(bad(path, format!("entry {index}: CRC mismatch")));
        }
        let id = u64::from_le_bytes(entry[8..16].try_into().expect("8 bytes"));
        let mut ranges = Vec::with_capacity(dims.len());
        for (dim, (pair, &len)) in entry[16..].chunks_exact(16).zip(dims).enumerate() {
            let start = u64::from_le_bytes(pair[..8].try_into().expect("8 bytes"));
            let end = u64::from_le_bytes(pair[8..].try_into().expect("8 bytes"));
            if start > end || end > len {
                return Err(bad(
                    path,
                    format!(
                        "entry {index}: dim {dim}: range {start}..{end} is out of bounds for \
                         length {len}"
                    ),
                ));
            }
            ranges.push(start..end);
        }
        match kind {
            BEGIN => {
                if open.insert(id, (ranges, index)).is_some() {
                    return Err(bad(
                        path,
                        format!("entry {index}: block {id:#x} begun twice"),
                    ));
                }
            }
            END => {
                if let Some(begun) = superseded.remove(&id) {
                    if begun != ranges {
                        return Err(bad(
                            path,
                            format!(
                                "entry {index}: block {id:#x} ends with other ranges than it began"
                            ),
                        ));
                    }
                    index += 1;
                    continue;
                }
                let Some((begun, at)) = open.remove(&id) else {
                    return Err(bad(
                        path,
                        format!("entry {index}: block {id:#x} ends without a begin"),
                    ));
                };
                if begun != ranges {
                    return Err(bad(
                        path,
                        format!(
                            "entry {index}: block {id:#x} ends with other ranges than it began"
                        ),
                    ));
                }
                // A complete write of the same block, begun after a torn one, commits it.
                let done: Vec<u64> = open
                    .iter()
                    .filter(|(_, (r, i))| *r == ranges && *i < at)
                    .map(|(&id, _)| id)
                    .collect();
                for id in done {
                    if let Some((r, _)) = open.remove(&id) {
                        superseded.insert(id, r);
                    }
                }
            }
            _ => {
                return Err(bad(
                    path,
                    format!("entry {index}: kind {kind}: expected 1 (begin) or 2 (end)"),
                ))
            }
        }
        index += 1;
    }
    let mut left: Vec<(u64, Vec<Range<u64>>)> = open.into_values().map(|(r, i)| (i, r)).collect();
    left.sort_by_key(|(i, _)| *i);
    Ok(Some(left.into_iter().map(|(_, r)| r).collect()))
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The journal a writer appends its blocks to.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
    path: PathBuf,
    /// Where this writer's block ids start: random, so that writers never share one.
    salt: u64,
    next: AtomicU64,
}

impl Journal {
    /// The journal of the array file `file` at `path`: a new empty one if `fresh` (the caller
    /// holds the file's exclusive lock: no one else can be using its journal), else the one
    /// there if it is the file's own, or a new one in place of none or another file's. The
    /// caller holds the file's lock (shared or exclusive) for as long as it uses the journal.
    pub(crate) fn attach(
        path: &Path,
        file: &File,
        header: &Header,
        fresh: bool,
    ) -> Result<Journal> {
        let jpath = journal_path(path)?;
        let own = Identity::of(file, header)?;
        let named = |e: io::Error| -> crate::Error {
            io::Error::new(e.kind(), format!("{}: {e}", jpath.display())).into()
        };
        let salt = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
            ^ u64::from(std::process::id()).rotate_left(32);
        let make = |jpath: &Path| -> Result<tempfile::NamedTempFile> {
            let dir = jpath.parent().unwrap_or(Path::new("."));
            let name = jpath.file_name().unwrap_or_default().to_string_lossy();
            let mut t = crate::temp::named_builder(&format!(".{name}-tmp-"))
                .tempfile_in(if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                })
                .map_err(named)?;
            t.as_file_mut().write_all(&own.encode()).map_err(named)?;
            Ok(t)
        };
        let journal = |file: File| Journal {
            file,
            path: jpath.clone(),
            salt,
            next: AtomicU64::new(0),
        };
        if fresh {
            make(&jpath)?.persist(&jpath).map_err(|e| named(e.error))?;
        }
        for _ in 0..TRIES {
            let Some(f) = open_journal(&jpath, true)? else {
                // None yet: ours, unless another writer's appeared meanwhile.
                match make(&jpath)?.persist_noclobber(&jpath) {
                    Ok(_) => {}
                    Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(named(e.error)),
                }
                continue;
            };
            // Checked whole before it is used: a damaged journal would hide what is appended.
            if scan(&jpath, &mut BufReader::new(&f), &own, &header.dims)?.is_some() {
                return Ok(journal(f));
            }
            // Another file's journal: replaced under its lock, so that of two writers finding
            // it, one replaces it and the other then finds the new one.
            lock_exclusive(&f, &jpath)?;
            if is_at_path(&f, &jpath).unwrap_or(false) {
                make(&jpath)?.persist(&jpath).map_err(|e| named(e.error))?;
            }
        }
        Err(ErrorKind::Locked { path: jpath }.into())
    }

    /// Enters the block `ranges` (one per dim of the file) as begun; its id.
    pub(crate) fn begin(&self, ranges: &[Range<u64>]) -> Result<u64> {
        let id = self
            .salt
            .wrapping_add(self.next.fetch_add(1, Ordering::Relaxed));
        self.append(&encode_entry(BEGIN, id, ranges))?;
        Ok(id)
    }

    /// Enters the block begun as `id` as committed.
    pub(crate) fn end(&self, id: u64, ranges: &[Range<u64>]) -> Result<()> {
        self.append(&encode_entry(END, id, ranges))
    }

    fn append(&self, entry: &[u8]) -> Result<()> {
        // One write per entry: with O_APPEND, entries of several writers never interleave.
        let n = (&self.file).write(entry).map_err(|e| {
            crate::Error::from(io::Error::new(
                e.kind(),
                format!("{}: {e}", self.path.display()),
            ))
        })?;
        if n != entry.len() {
            return Err(bad(
                &self.path,
                format!("wrote {n} of an entry's {} bytes", entry.len()),
            ));
        }
        Ok(())
    }

    /// Takes the journal's exclusive lock, until the guard is dropped: the writers of a
    /// chunked file, each in its own process, commit in turn under it (threads sharing one
    /// writer take turns before they ask for it: the lock is its open file's, which they share).
    pub(crate) fn lock_commits(&self) -> Result<CommitTurn<'_>> {
        self.file.lock().map_err(|e| {
            crate::Error::from(io::Error::new(
                e.kind(),
                format!("{}: {e}", self.path.display()),
            ))
        })?;
        Ok(CommitTurn { file: &self.file })
    }

    /// Syncs the journal's entries to disk.
    pub(crate) fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())).into())
    }

    /// Removes the journal if it is the file's own and every block in it was committed. The
    /// caller holds the file's exclusive lock: no writer is using the journal.
    /// The blocks left uncommitted otherwise.
    pub(crate) fn remove_if_clean(
        self,
        path: &Path,
        file: &File,
        header: &Header,
    ) -> Result<Vec<Vec<Range<u64>>>> {
        let left = uncommitted(path, file, header)?.unwrap_or_default();
        if left.is_empty() && is_at_path(&self.file, &self.path).unwrap_or(false) {
            std::fs::remove_file(&self.path)?;
        }
        Ok(left)
    }
}

/// A writer's turn to commit ([`Journal::lock_commits`]): the lock goes with it.
#[derive(Debug)]
pub(crate) struct CommitTurn<'a> {
    file: &'a File,
}

impl Drop for CommitTurn<'_> {
    fn drop(&mut self) {
        // Closing the journal would release it as well; an error leaves it to that.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> Identity {
        Identity {
            ino: 7,
            header_crc: 9,
            ndims: 2,
        }
    }

    fn journal(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut b = own().encode().to_vec();
        for e in entries {
            b.extend_from_slice(e);
        }
        b
    }

    fn scan_bytes(b: &[u8]) -> Result<Option<Vec<Vec<Range<u64>>>>> {
        scan(Path::new("j"), &mut &b[..], &own(), &[4, 3])
    }

    #[test]
    fn begun_blocks_without_an_end_are_uncommitted_and_a_rewrite_commits_them() {
        let a = vec![0..4, 1..2];
        let b = vec![0..4, 2..3];
        let j = journal(&[
            encode_entry(BEGIN, 1, &a),
            encode_entry(BEGIN, 2, &b),
            encode_entry(END, 1, &a),
        ]);
        assert_eq!(scan_bytes(&j).unwrap(), Some(vec![b.clone()]));
        let mut j2 = j.clone();
        j2.extend(encode_entry(BEGIN, 3, &b));
        j2.extend(encode_entry(END, 3, &b));
        assert_eq!(scan_bytes(&j2).unwrap(), Some(vec![]));
        // The slow write that block 3 superseded ends after all (a retried task): still no
        // damage, and the journal stays readable.
        let mut j3 = j2.clone();
        j3.extend(encode_entry(END, 2, &b));
        assert_eq!(scan_bytes(&j3).unwrap(), Some(vec![]));
        // Its end must still name the ranges it began.
        let mut j4 = j2.clone();
        j4.extend(encode_entry(END, 2, &a));
        assert!(scan_bytes(&j4).is_err());
        // Another file's journal is not this file's record.
        let mut other = j.clone();
        other[16] ^= 1;
        assert_eq!(scan_bytes(&other).unwrap(), None);
    }

    #[test]
    // A reversed range is one of the hostile inputs.
    #[allow(clippy::reversed_empty_ranges)]
    fn a_hostile_journal_is_an_error_naming_what_is_wrong() {
        let a = vec![0..4, 1..2];
        let good = journal(&[encode_entry(BEGIN, 1, &a)]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..20].to_vec(), "truncated header"),
            ([b"rajournX".as_slice(), &good[8..]].concat(), "bad magic"),
            (
                [&good[..8], &2u32.to_le_bytes()[..], &good[12..]].concat(),
                "version is 2",
            ),
            (
                [&good[..24], &5u64.to_le_bytes()[..], &good[32..]].concat(),
                "ndims is 5",
            ),
            (good[..good.len() - 1].to_vec(), "cut short"),
            (
                {
                    let mut b = good.clone();
                    b[40] ^= 1;
                    b
                },
                "CRC mismatch",
            ),
            (journal(&[encode_entry(3, 1, &a)]), "kind 3"),
            (
                journal(&[encode_entry(BEGIN, 1, &[0..5, 0..1])]),
                "dim 0: range 0..5",
            ),
            (
                journal(&[encode_entry(BEGIN, 1, &[2..1, 0..1])]),
                "range 2..1",
            ),
            (journal(&[encode_entry(END, 1, &a)]), "without a begin"),
            (
                journal(&[encode_entry(BEGIN, 1, &a), encode_entry(BEGIN, 1, &a)]),
                "begun twice",
            ),
            (
                journal(&[
                    encode_entry(BEGIN, 1, &a),
                    encode_entry(END, 1, &[0..4, 0..1]),
                ]),
                "other ranges",
            ),
        ];
        for (bytes, want) in cases {
            let e = scan_bytes(&bytes).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::BadJournal { .. }), "{e}");
            assert!(e.to_string().contains(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn a_block_is_shown_as_half_open_ranges() {
        assert_eq!(crate::error::block_text(&[0..4, 2..3]), "[0..4, 2..3)");
    }
}
