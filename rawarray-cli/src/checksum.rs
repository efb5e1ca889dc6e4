//! `ra checksum` and `ra verify`: md5 or sha256 of whole files and of `.ra` data sections.
//!
//! A file is read once, in chunks, by one thread; the digests are computed by worker threads
//! (one per core, at most one per digest), each taking every chunk, so that the digests of
//! the file and of its data section cost about one pass, not two.
//!
//! `ra checksum` writes what `md5sum -c` / `sha256sum -c` read: `HEX  NAME` lines of one
//! algorithm (md5 by default, as the reference files' `CHECKSUMS.md5`), or with `--tag` BSD
//! lines `MD5 (NAME) = HEX`; names holding a backslash, newline or carriage return are escaped
//! as coreutils escapes them (`\\`, `\n`, `\r`, and a `\` before the line). `--data` adds,
//! per file, the digest of the data section alone (the stored bytes after the header, an LZ4
//! block's compressed ones; a chunked section's decoded data, so that it agrees with a plain
//! file of the same array; trailing bytes excluded) as `MD5-DATA (NAME) = HEX`: a tag
//! coreutils does not know (it skips such lines with a warning), which only `ra verify` reads.
//! `ra verify` reads all of these, in either algorithm.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

use md5::{Digest, Md5};
use sha2::Sha256;

use crate::fail::{At, Failure, Result};
use crate::progress::Progress;
use crate::source::RaSource;
use crate::value::hex;

/// Bytes read at a time: small enough that a chunk is still in cache when the second worker
/// hashes it.
const CHUNK: usize = 256 << 10;
/// Chunks in flight between the reader and the workers.
const IN_FLIGHT: usize = 16;

/// A digest algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Algo {
    /// MD5 (128 bits).
    Md5,
    /// SHA-256.
    Sha256,
}

impl Algo {
    fn tag(self) -> &'static str {
        match self {
            Algo::Md5 => "MD5",
            Algo::Sha256 => "SHA256",
        }
    }
}

/// Which bytes a digest covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The whole file.
    File,
    /// The data section of a `.ra` file.
    Data,
}

/// One digest to compute: an algorithm over a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Job {
    /// The algorithm.
    pub algo: Algo,
    /// The bytes.
    pub scope: Scope,
}

enum Hasher {
    Md5(Md5),
    Sha256(Sha256),
}

impl Hasher {
    fn new(algo: Algo) -> Hasher {
        match algo {
            Algo::Md5 => Hasher::Md5(Md5::new()),
            Algo::Sha256 => Hasher::Sha256(Sha256::new()),
        }
    }

    fn update(&mut self, b: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(b),
            Hasher::Sha256(h) => h.update(b),
        }
    }

    fn hex(self) -> String {
        let mut s = String::new();
        match self {
            Hasher::Md5(h) => hex(&h.finalize(), &mut s),
            Hasher::Sha256(h) => hex(&h.finalize(), &mut s),
        }
        s
    }
}

/// A chunk of the file and where it starts.
struct Chunk {
    offset: u64,
    buf: Vec<u8>,
}

/// Reads `path` once and returns the lowercase hex digest of each job, in order. `data` is the
/// byte range of the data section (needed by `Scope::Data` jobs).
pub fn digest_file(
    path: &Path,
    jobs: &[Job],
    data: Option<Range<u64>>,
    progress: &Progress,
) -> Result<Vec<String>> {
    // A FIFO named as a file is refused at once, not waited on.
    let mut file: File = crate::source::open_regular(path)?;
    digest_reader(&mut file, path, jobs, data, progress)
}

/// [`digest_file`] of any reader (standard input, streamed); `path` names it in errors.
fn digest_reader(
    file: &mut dyn Read,
    path: &Path,
    jobs: &[Job],
    data: Option<Range<u64>>,
    progress: &Progress,
) -> Result<Vec<String>> {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(jobs.len())
        .max(1);
    // Deal the jobs out round robin: [md5 file, md5 data, sha file, sha data] on two workers
    // gives each one md5 and one sha256 of equal length.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (jobs[i].algo as u8, jobs[i].scope as u8));
    let lanes: Vec<Vec<usize>> = (0..workers)
        .map(|w| order.iter().copied().skip(w).step_by(workers).collect())
        .collect();
    let data = data.unwrap_or(0..0);

    std::thread::scope(|s| {
        let (free_tx, free_rx) = mpsc::channel::<Vec<u8>>();
        for _ in 0..IN_FLIGHT {
            free_tx.send(vec![0u8; CHUNK]).expect("receiver alive");
        }
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for lane in &lanes {
            let (tx, rx) = mpsc::channel::<Arc<Chunk>>();
            senders.push(tx);
            let free_tx = free_tx.clone();
            let data = data.clone();
            let lane_jobs: Vec<(usize, Job)> = lane.iter().map(|&i| (i, jobs[i])).collect();
            handles.push(s.spawn(move || {
                let mut hashers: Vec<(usize, Scope, Hasher)> = lane_jobs
                    .iter()
                    .map(|&(i, j)| (i, j.scope, Hasher::new(j.algo)))
                    .collect();
                for chunk in rx {
                    let start = chunk.offset;
                    let end = start + chunk.buf.len() as u64;
                    for (_, scope, h) in &mut hashers {
                        match scope {
                            Scope::File => h.update(&chunk.buf),
                            Scope::Data => {
                                let lo = data.start.clamp(start, end);
                                let hi = data.end.clamp(start, end);
                                if lo < hi {
                                    h.update(
                                        &chunk.buf[(lo - start) as usize..(hi - start) as usize],
                                    );
                                }
                            }
                        }
                    }
                    // The last worker done with a chunk hands its buffer back to the reader.
                    if let Some(c) = Arc::into_inner(chunk) {
                        let _ = free_tx.send(c.buf);
                    }
                }
                hashers
                    .into_iter()
                    .map(|(i, _, h)| (i, h.hex()))
                    .collect::<Vec<_>>()
            }));
        }
        drop(free_tx);

        let mut offset = 0u64;
        let read: Result<()> = loop {
            let mut buf = free_rx.recv().expect("buffers come back");
            buf.resize(CHUNK, 0);
            let n = match read_full(file, &mut buf) {
                Ok(n) => n,
                Err(e) => break Err(Failure::file(path, e)),
            };
            if n == 0 {
                break Ok(());
            }
            buf.truncate(n);
            progress.inc(n as u64);
            let chunk = Arc::new(Chunk { offset, buf });
            offset += n as u64;
            // The reader keeps no reference, so the buffer always comes back to the pool.
            let (last, others) = senders.split_last().expect("at least one worker");
            for tx in others {
                tx.send(Arc::clone(&chunk)).expect("worker alive");
            }
            last.send(chunk).expect("worker alive");
        };
        drop(senders);
        let mut out = vec![String::new(); jobs.len()];
        for h in handles {
            for (i, digest) in h.join().expect("hashing does not panic") {
                out[i] = digest;
            }
        }
        read.map(|()| out)
    })
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// What `ra checksum` writes.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// The one algorithm of the output.
    pub algo: Algo,
    /// BSD tag lines (`MD5 (NAME) = HEX`) instead of `HEX  NAME`.
    pub tag: bool,
    /// Also a `MD5-DATA (NAME) = HEX` line for each file's data section.
    pub data: bool,
}

/// `ra checksum`: one line per file (two with `--data`). A file that cannot be read is named
/// on stderr and the others are still summed; the exit status is then 1.
pub fn run(files: &[PathBuf], style: Style, out: &mut dyn Write) -> Result<()> {
    let mut failed = 0;
    for path in files {
        match checksum_one(path, style) {
            Ok(text) => out.write_all(&text).map_err(Failure::stdout)?,
            Err(e @ Failure::File { .. }) => {
                eprintln!("ra: {e}");
                failed += 1;
            }
            Err(e) => return Err(e),
        }
    }
    out.flush().map_err(Failure::stdout)?;
    if failed > 0 {
        return Err(Failure::Checks(String::new()));
    }
    Ok(())
}

fn checksum_one(name: &Path, style: Style) -> Result<Vec<u8>> {
    let mut jobs = vec![Job {
        algo: style.algo,
        scope: Scope::File,
    }];
    let digests = if crate::source::is_stdio(name) && !style.data {
        // `-` is standard input (named `-` on its line, as md5sum names it); its digest alone
        // is streamed. The data section needs the header first: --data reads a copy.
        let stdin = Path::new("<stdin>");
        let progress = Progress::hidden();
        digest_reader(&mut std::io::stdin().lock(), stdin, &jobs, None, &progress)?
    } else if crate::source::is_pipe(name) && !style.data {
        // A pipe by name (`<(...)`), streamed as standard input is.
        let mut pipe = File::open(name).at(name)?;
        digest_reader(&mut pipe, name, &jobs, None, &Progress::hidden())?
    } else {
        let source = crate::source::input(name)?;
        let path = source.as_path();
        // The header is only needed (and the file only has to be a .ra file) for the data
        // section: without --data any file can be summed, as md5sum sums it.
        if style.data {
            jobs.push(Job {
                algo: style.algo,
                scope: Scope::Data,
            });
            digest_ra(path, &jobs, "checksum")?
        } else {
            let file = crate::source::open_regular(path)?;
            let len = file.metadata().at(path)?.len();
            digest_file(path, &jobs, None, &Progress::bytes(len, "checksum"))?
        }
    };
    // The name's own bytes, as md5sum writes them (not a lossy UTF-8 rendering).
    let (name, escaped) = escape_name(&name_bytes(name));
    let mark: &[u8] = if escaped { b"\\" } else { b"" };
    let mut text = Vec::new();
    for (job, d) in jobs.iter().zip(digests) {
        text.extend_from_slice(mark);
        match (job.scope, style.tag) {
            (Scope::File, false) => {
                text.extend_from_slice(d.as_bytes());
                text.extend_from_slice(b"  ");
                text.extend_from_slice(&name);
            }
            (Scope::File, true) | (Scope::Data, _) => {
                text.extend_from_slice(job.algo.tag().as_bytes());
                if job.scope == Scope::Data {
                    text.extend_from_slice(b"-DATA");
                }
                text.extend_from_slice(b" (");
                text.extend_from_slice(&name);
                text.extend_from_slice(b") = ");
                text.extend_from_slice(d.as_bytes());
            }
        }
        text.push(b'\n');
    }
    Ok(text)
}

/// A path's bytes: on Unix exactly those of the name (which need not be UTF-8).
fn name_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        path.to_string_lossy().into_owned().into_bytes()
    }
}

/// The path a name's bytes on a sums line stand for.
fn path_of(name: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(name))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(name).into_owned())
    }
}

/// A name as coreutils writes it on a sums line: backslash, newline and carriage return
/// escaped, and whether any was (the line then starts with a backslash).
fn escape_name(name: &[u8]) -> (Vec<u8>, bool) {
    if !name.iter().any(|b| matches!(b, b'\\' | b'\n' | b'\r')) {
        return (name.to_vec(), false);
    }
    let mut out = Vec::with_capacity(name.len() + 4);
    for &c in name {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            c => out.push(c),
        }
    }
    (out, true)
}

/// The name an escaped sums line means; `None` for an escape coreutils never writes.
fn unescape_name(name: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(name.len());
    let mut bytes = name.iter();
    while let Some(&c) = bytes.next() {
        if c != b'\\' {
            out.push(c);
            continue;
        }
        out.push(match bytes.next()? {
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            _ => return None,
        });
    }
    Some(out)
}

/// One line of a sums file.
#[derive(Debug, PartialEq)]
struct Expected {
    job: Job,
    /// The name's bytes (unescaped).
    name: Vec<u8>,
    hex: String,
}

/// The tags of BSD lines (`md5sum --tag`, `ra checksum --tag`, `--data`).
const TAGS: [(&str, Algo, Scope); 4] = [
    ("MD5", Algo::Md5, Scope::File),
    ("SHA256", Algo::Sha256, Scope::File),
    ("MD5-DATA", Algo::Md5, Scope::Data),
    ("SHA256-DATA", Algo::Sha256, Scope::Data),
];

/// Reads one line: `HEX  NAME`, `HEX *NAME` (md5sum, sha256sum), or `TAG (NAME) = HEX`
/// (`md5sum --tag`, `ra checksum`). `None` if it is neither. A line is a tag line only when it
/// starts with a known tag and ` (`: `HEX  a (1).ra` is a name holding ` (`.
fn parse_line(line: &[u8]) -> Option<Expected> {
    // coreutils escapes names holding a newline, carriage return or backslash, and marks the
    // line with a leading '\'.
    let (escaped, line) = match line.strip_prefix(b"\\") {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let name_of = |name: &[u8]| {
        if escaped {
            unescape_name(name)
        } else {
            Some(name.to_vec())
        }
    };
    let is_hex = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_hexdigit);
    let digest = |hex: &[u8]| String::from_utf8_lossy(hex).to_ascii_lowercase();
    let tagged = TAGS.iter().find_map(|&(tag, algo, scope)| {
        let rest = line.strip_prefix(tag.as_bytes())?.strip_prefix(b" (")?;
        Some((algo, scope, rest))
    });
    if let Some((algo, scope, rest)) = tagged {
        let at = rest.windows(4).rposition(|w| w == b") = ")?;
        let (name, hex) = (&rest[..at], &rest[at + 4..]);
        let want = if algo == Algo::Md5 { 32 } else { 64 };
        if hex.len() != want || !is_hex(hex) {
            return None;
        }
        return Some(Expected {
            job: Job { algo, scope },
            name: name_of(name)?,
            hex: digest(hex),
        });
    }
    let space = line.iter().position(|&b| b == b' ')?;
    let (hex, rest) = (&line[..space], &line[space + 1..]);
    let name = rest
        .strip_prefix(b" ")
        .or_else(|| rest.strip_prefix(b"*"))?;
    let algo = match hex.len() {
        32 => Algo::Md5,
        64 => Algo::Sha256,
        _ => return None,
    };
    if !is_hex(hex) || name.is_empty() {
        return None;
    }
    Some(Expected {
        job: Job {
            algo,
            scope: Scope::File,
        },
        name: name_of(name)?,
        hex: digest(hex),
    })
}

/// The most bytes of a sums file `ra verify` reads: millions of lines; more is not a sums file
/// (`ra verify /dev/zero`, or endless standard input).
const MAX_SUMS_BYTES: u64 = 256 << 20;

/// `ra verify SUMS`: checks every line; names are relative to the folder of SUMS. Prints
/// `NAME: OK` or `NAME: FAILED` per line (as `md5sum -c`), and fails if any line failed or
/// could not be read.
pub fn verify(sums: &Path, out: &mut dyn Write) -> Result<()> {
    if !crate::source::is_stdio(sums) && is_ra_file(sums) {
        return verify_ra(sums, out);
    }
    // `-`: the sums come on standard input; names are relative to the current folder.
    let (text, shown) = if crate::source::is_stdio(sums) {
        (
            read_capped(&mut std::io::stdin().lock(), Path::new("<stdin>"))?,
            Path::new("<stdin>"),
        )
    } else {
        // Not open_regular: a sums file may be a pipe (`ra verify <(ssh host cat SUMS)`).
        let mut file = File::open(sums).at(sums)?;
        (read_capped(&mut file, sums)?, sums)
    };
    let base = sums.parent().unwrap_or(Path::new(""));
    let mut entries = Vec::new();
    let mut malformed = 0;
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) || line.starts_with(b"#") {
            continue;
        }
        match parse_line(line) {
            Some(e) => entries.push(e),
            None => malformed += 1,
        }
    }
    if entries.is_empty() {
        return Err(Failure::file(shown, "no checksum lines found"));
    }
    // Each file is read once for all its lines.
    let mut names: Vec<&[u8]> = Vec::new();
    for e in &entries {
        if !names.contains(&e.name.as_slice()) {
            names.push(&e.name);
        }
    }
    let mut results: Vec<Option<std::result::Result<bool, String>>> =
        (0..entries.len()).map(|_| None).collect();
    for name in names {
        let idx: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].name == name)
            .collect();
        let mut jobs: Vec<Job> = Vec::new();
        for &i in &idx {
            if !jobs.contains(&entries[i].job) {
                jobs.push(entries[i].job);
            }
        }
        let path = base.join(path_of(name));
        let digests = digests_for(&path, &jobs);
        for &i in &idx {
            results[i] = Some(match &digests {
                Ok(d) => {
                    let k = jobs
                        .iter()
                        .position(|j| *j == entries[i].job)
                        .expect("job listed");
                    Ok(d[k] == entries[i].hex)
                }
                Err(msg) => Err(msg.clone()),
            });
        }
    }
    let mut bad = 0;
    let mut report = Vec::new();
    for (e, r) in entries.iter().zip(results) {
        // The name's bytes as the sums file holds them (as md5sum -c prints them).
        report.extend_from_slice(&e.name);
        if e.job.scope == Scope::Data {
            report.extend_from_slice(b" (data)");
        }
        let verdict = match r.expect("every entry checked") {
            Ok(true) => ": OK".to_string(),
            Ok(false) => {
                bad += 1;
                ": FAILED".to_string()
            }
            Err(msg) => {
                bad += 1;
                format!(": FAILED open or read ({msg})")
            }
        };
        report.extend_from_slice(verdict.as_bytes());
        report.push(b'\n');
    }
    out.write_all(&report).map_err(Failure::stdout)?;
    out.flush().map_err(Failure::stdout)?;
    if bad > 0 || malformed > 0 {
        let mut m = format!("{}: ", shown.display());
        if bad > 0 {
            let _ = write!(m, "{bad} of {} checksums did not match", entries.len());
        }
        if malformed > 0 {
            if bad > 0 {
                m.push_str("; ");
            }
            let _ = write!(m, "{malformed} lines are not checksum lines");
        }
        return Err(Failure::Checks(m));
    }
    Ok(())
}

/// Whether `path` is a regular file starting with the `.ra` magic (a sums file never does).
fn is_ra_file(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && File::open(path).is_ok_and(|mut f| f.read_exact(&mut magic).is_ok())
        && rawarray_serde::sniff::is_ra(&magic)
}

/// `ra verify FILE.ra`: checks what a `.ra` file can say of itself: its header, that it holds
/// all its data, that a trailer block after it is intact and committed, and that no block an
/// `ArrayWriter` began was left uncommitted. Prints `NAME: OK` or `NAME: FAILED (why; ...)`.
fn verify_ra(path: &Path, out: &mut dyn Write) -> Result<()> {
    let mut problems = Vec::new();
    let reason = |f: Failure| match f {
        Failure::File { message, .. } => message,
        other => other.to_string(),
    };
    match crate::source::RaSource::open(path) {
        Ok(src) => {
            let t = src.trailer_info();
            if let Some(why) = &t.damaged {
                problems.push(format!("damaged trailer block: {why}"));
            }
            let loose = t.uncommitted();
            if loose > 0 {
                problems.push(format!(
                    "{loose} bytes after the data are not committed (a record writer is writing \
                     or was killed)"
                ));
            }
            if let Some(p) = crate::info::Journal::of(path).problem(path) {
                problems.push(reason(p));
            }
            if src.storage().has_chunk_index() {
                problems.extend(bad_chunks(&src).unwrap_or_else(|f| vec![reason(f)]));
            }
        }
        Err(e) => problems.push(reason(e)),
    }
    let verdict = if problems.is_empty() {
        "OK".to_string()
    } else {
        format!("FAILED ({})", problems.join("; "))
    };
    // A URL's local copy is named by its URL.
    let name = crate::names::shown(path);
    writeln!(out, "{name}: {verdict}").map_err(Failure::stdout)?;
    out.flush().map_err(Failure::stdout)?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::Checks(format!("{name}: FAILED")))
    }
}

/// The most chunk problems `ra verify` lists by number; more are counted.
const MAX_CHUNK_PROBLEMS: usize = 8;

/// Checks every chunk of the chunked `src`: the config and index (validated by the codec
/// layer), then each written chunk's stored bytes against its index crc32, decoding each
/// block (their own crc32s and decoded lengths), and each byte stream's own crc32 where the
/// streams carry one. Returns one problem per bad chunk, naming it.
fn bad_chunks(src: &RaSource) -> Result<Vec<String>> {
    let section = src.section()?;
    let Some(layout) = section.chunk_map() else {
        return Ok(Vec::new());
    };
    let base = src.data_offset();
    let mut problems = Vec::new();
    let mut bad = 0u64;
    let mut stored = Vec::new();
    let mut plain = Vec::new();
    // Only the index's entries can hold anything: the grid may count 2^62 chunks of which the
    // index (bounded by the file's length) lists a few.
    for n in 0..layout.index().entries().len() as u64 {
        let Some(range) = layout.chunk_range(n) else {
            continue;
        };
        // The index was checked against the section's length before: these fit the file.
        // Fallible: a hostile index can claim a chunk far larger than the file (its decoded
        // size is checked only as it is decoded).
        for (buf, len) in [
            (&mut stored, range.end - range.start),
            (&mut plain, layout.grid().raw_len(n)),
        ] {
            let want = usize::try_from(len).unwrap_or(usize::MAX);
            buf.clear();
            buf.try_reserve_exact(want).map_err(|_| {
                Failure::file(
                    src.path(),
                    format!("chunk {n}: {len} bytes do not fit in memory"),
                )
            })?;
            buf.resize(want, 0);
        }
        let read =
            rawarray_serde::io::ReadAt::read_exact_at(&src.file(), &mut stored, base + range.start);
        let checked = match read {
            Ok(()) => layout
                .verify_chunk(n, &stored, &mut plain)
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("chunk {n}: {e}")),
        };
        if let Err(why) = checked {
            bad += 1;
            if problems.len() < MAX_CHUNK_PROBLEMS {
                problems.push(why);
            }
        }
    }
    // Read as never written, so they pass the loop above: a corrupt entry (entries have no
    // crc) or a write not committed yet, as for the trailer's uncommitted bytes.
    for &n in layout.index().uncommitted() {
        bad += 1;
        if problems.len() < MAX_CHUNK_PROBLEMS {
            problems.push(format!(
                "chunk {n}: index entry points past the committed size (corrupt, or a writer \
                 is writing or was killed); it reads as zeros"
            ));
        }
    }
    if bad > problems.len() as u64 {
        problems.push(format!("{bad} bad chunks in all"));
    }
    Ok(problems)
}

/// All of a sums file, refusing one of more than [`MAX_SUMS_BYTES`].
fn read_capped(input: &mut dyn Read, name: &Path) -> Result<Vec<u8>> {
    read_at_most(input, name, MAX_SUMS_BYTES)
}

/// All of `input`, refusing more than `cap` bytes (reading no more than one past it).
fn read_at_most(input: &mut dyn Read, name: &Path, cap: u64) -> Result<Vec<u8>> {
    let mut text = Vec::new();
    input.take(cap + 1).read_to_end(&mut text).at(name)?;
    if text.len() as u64 > cap {
        return Err(Failure::file(
            name,
            format!("more than {cap} bytes: not a sums file"),
        ));
    }
    Ok(text)
}

/// The digests of `jobs` for one file; data-section jobs need it to be a `.ra` file.
fn digests_for(path: &Path, jobs: &[Job]) -> std::result::Result<Vec<String>, String> {
    let brief = |f: Failure| match f {
        Failure::File { message, .. } => message,
        other => other.to_string(),
    };
    if jobs.iter().any(|j| j.scope == Scope::Data) {
        return digest_ra(path, jobs, "verify").map_err(brief);
    }
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    digest_file(path, jobs, None, &Progress::bytes(len, "verify")).map_err(brief)
}

/// The digests of `jobs` over the `.ra` file at `path`, its data section's included.
///
/// A chunked section's data digest is of its decoded data, in the file's byte order: the bytes
/// a plain file of the same array stores, so the two agree. Its stored bytes would not do:
/// they depend on the codec, and on the order the chunks were written in (the writers of an
/// `ArrayWriter` file append them as they come). Other sections, plain or one LZ4 block, are
/// hashed as stored.
fn digest_ra(path: &Path, jobs: &[Job], what: &'static str) -> Result<Vec<String>> {
    let mut src = RaSource::open(path)?;
    let progress = Progress::bytes(src.file_len, what);
    if !src.storage().has_chunk_index() {
        let range = src.data_offset()..src.data_offset() + src.header.size;
        return digest_file(path, jobs, Some(range), &progress);
    }
    let whole: Vec<Job> = jobs
        .iter()
        .filter(|j| j.scope == Scope::File)
        .copied()
        .collect();
    let mut of_file = digest_file(path, &whole, None, &progress)?.into_iter();
    let mut hashers: Vec<Hasher> = jobs
        .iter()
        .filter(|j| j.scope == Scope::Data)
        .map(|j| Hasher::new(j.algo))
        .collect();
    src.for_each_stored_chunk(&Progress::hidden(), |b| {
        hashers.iter_mut().for_each(|h| h.update(b));
        Ok(())
    })?;
    let mut of_data = hashers.into_iter().map(Hasher::hex);
    Ok(jobs
        .iter()
        .map(|j| match j.scope {
            Scope::File => of_file.next(),
            Scope::Data => of_data.next(),
        })
        .map(|d| d.expect("one digest per job"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_md5sum_sha256sum_and_tag_lines() {
        let parse = |line: &str| parse_line(line.as_bytes());
        let md5 = "8115a9ca3dc12d0f38aa68ec0e100a4c";
        let e = parse(&format!("{md5}  mnist_8.ra")).unwrap();
        assert_eq!((e.job.algo, &e.name[..]), (Algo::Md5, &b"mnist_8.ra"[..]));
        let e = parse(&format!("{md5} *with space.ra")).unwrap();
        assert_eq!(e.name, b"with space.ra");
        let e = parse(&format!("MD5 (a (1).ra) = {}", md5.to_uppercase())).unwrap();
        assert_eq!((&e.name[..], e.hex.as_str()), (&b"a (1).ra"[..], md5));
        // A name holding " (" on a md5sum line is not a tag line; nor is an unknown tag.
        let e = parse(&format!("{md5}  x (1).ra")).unwrap();
        assert_eq!((e.job.scope, &e.name[..]), (Scope::File, &b"x (1).ra"[..]));
        let e = parse(&format!("{md5}  MD5 (x) = {md5}")).unwrap();
        assert_eq!(e.name, format!("MD5 (x) = {md5}").as_bytes());
        let sha = "a".repeat(64);
        let e = parse(&format!("SHA256-DATA (x.ra) = {sha}")).unwrap();
        assert_eq!(e.job.scope, Scope::Data);
        assert_eq!(
            parse(&format!("{sha}  x.ra")).unwrap().job.algo,
            Algo::Sha256
        );
        let e = parse(&format!("\\{md5}  a\\nb")).unwrap();
        assert_eq!(e.name, b"a\nb");
        let e = parse(&format!("\\MD5-DATA (a\\\\n\\r) = {md5}")).unwrap();
        assert_eq!(e.name, b"a\\n\r");
        // Names are bytes: not UTF-8 is fine.
        let mut line = format!("{md5}  ").into_bytes();
        line.extend_from_slice(b"caf\xe9.ra");
        assert_eq!(parse_line(&line).unwrap().name, b"caf\xe9.ra");
        for name in [&b"plain.ra"[..], b"a\\b", b"c\nd\re", b"\\n", b"\xff\\"] {
            let (escaped, marked) = escape_name(name);
            assert_eq!(marked, name != b"plain.ra");
            assert_eq!(unescape_name(&escaped).as_deref(), Some(name));
        }
        for bad in [
            "",
            "nonsense",
            &format!("{md5} x"),
            &format!("{}  x", &md5[1..]),
            &format!("SHA1 (x) = {md5}"),
            &format!("MD5 (x) = {sha}"),
            &format!("\\{md5}  a\\qb"),
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    /// An endless input (`ra verify /dev/zero`, or endless standard input) is refused after
    /// the cap, having read one byte past it, not without end.
    #[test]
    fn a_sums_file_is_read_up_to_a_cap() {
        let name = Path::new("<stdin>");
        let mut endless = std::io::repeat(b'x');
        match read_at_most(&mut endless, name, 1000) {
            Err(Failure::File { message, .. }) => {
                assert_eq!(message, "more than 1000 bytes: not a sums file");
            }
            other => panic!("{other:?}"),
        }
        let got = read_at_most(&mut &b"abc"[..], name, 3).unwrap();
        assert_eq!(got, b"abc");
    }

    #[test]
    fn one_read_gives_every_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // Several chunks, not a whole number of them.
        let bytes: Vec<u8> = (0..CHUNK * 3 + 1234).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let data = 100..(CHUNK * 2 + 17) as u64;
        let jobs = [
            Job {
                algo: Algo::Md5,
                scope: Scope::File,
            },
            Job {
                algo: Algo::Sha256,
                scope: Scope::File,
            },
            Job {
                algo: Algo::Md5,
                scope: Scope::Data,
            },
            Job {
                algo: Algo::Sha256,
                scope: Scope::Data,
            },
        ];
        let got = digest_file(&path, &jobs, Some(data.clone()), &Progress::hidden()).unwrap();
        let whole = &bytes[..];
        let part = &bytes[data.start as usize..data.end as usize];
        let want = |algo: Algo, b: &[u8]| {
            let mut h = Hasher::new(algo);
            h.update(b);
            h.hex()
        };
        assert_eq!(got[0], want(Algo::Md5, whole));
        assert_eq!(got[1], want(Algo::Sha256, whole));
        assert_eq!(got[2], want(Algo::Md5, part));
        assert_eq!(got[3], want(Algo::Sha256, part));
    }
}
