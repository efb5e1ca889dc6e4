//! One type for every storage kind of a data section: [`Section`].
//!
//! A data section is stored plain (either byte order), as one raw LZ4 block (flag bit 1), or in
//! the chunked layout (flag bit 2, doc/chunked.md); a ragged file's offsets and values are each
//! such a section. A [`Section`] is opened once from a header and a positioned reader ([`ReadAt`]:
//! a file, a map, bytes in memory, an object store's ranges) and offers what every reader
//! needs: read it all into a caller's buffer, read an n-d box, stream it in file order, verify
//! every checksum, and describe itself. Every reader of the crate (and of `ra` and the Python
//! package) is a shell over it, and no other code asks which storage kind a file has.
//!
//! Bytes come out in the file's byte order (flag bit 0); readers that hand out values swap
//! them. Every read takes the source's state ([`ReadAt::state`]) before and after, so a read
//! returns the bytes of one state of the file or an error, and decoded bytes kept from a read
//! in another state are dropped first.
//!
//! ```
//! use rawarray_serde::section::{Section, Storage};
//! use rawarray_serde::{codec::Codec, Header, RawArray, WriteOptions};
//! let a = RawArray::from_shape_vec(vec![100, 30], (0..3000).map(|i| i as u16).collect()).unwrap();
//! for opts in [WriteOptions::new(), WriteOptions::new().compress(true), WriteOptions::new().codec(Codec::Zstd)] {
//!     let mut file = Vec::new();
//!     a.write_to_with(&mut file, &opts).unwrap();
//!     let header = Header::decode_any(&file).unwrap();
//!     let s = Section::open(&header, &file[..]).unwrap();
//!     let mut col = vec![0u8; 100 * 2];
//!     s.read_box(&[0..100, 7..8], &mut col).unwrap();
//!     assert_eq!(col[..2], 700u16.to_le_bytes());
//!     assert_eq!(s.read_all().unwrap().len(), 6000);
//! }
//! ```

pub mod chunked;
pub mod lz4;
mod plain;
pub mod stream;
pub mod write;

use std::ops::{ControlFlow, Range};

pub use chunked::SectionStats;
pub use plain::read_exact_at_split;

use crate::codec::map::ChunkMap;
use crate::codec::{Blocks, Codec, Filter};
use crate::error::{ErrorKind, Result};
use crate::header::Header;
use crate::io::{ReadAt, ReadAtCursor};
use crate::subset::SubsetPlan;
use chunked::{Chunked, Counters, Io};

/// Reads a reader made of its data source, and their bytes: runs read (a plain section, one
/// per run, or copies out of a map), the section read once (whole-section LZ4), or chunks read
/// (once per chunk per call) and their stored bytes, block tables included (chunked; the config
/// and index read at open are not counted). A test or a benchmark sees that a block costs its
/// own bytes, not the file's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Reads made.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// How a data section is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Storage {
    /// The elements as they are.
    Plain,
    /// One raw LZ4 block (flag bit 1).
    Lz4Whole,
    /// The chunked layout (flag bit 2).
    Chunked,
}

impl Storage {
    /// The storage kind a header says, or an error naming flag bits no reader of arrays knows
    /// (bit 3, ragged, is read by the ragged readers, which open its parts as sections).
    pub fn of(header: &Header) -> Storage {
        if header.flags.is_chunked() {
            Storage::Chunked
        } else if header.flags.is_compressed() {
            Storage::Lz4Whole
        } else {
            Storage::Plain
        }
    }

    /// Whether a read decodes its stored bytes. A plain section's bytes are its values at
    /// their offsets, so a reader maps them, reads a byte range of them or streams them as
    /// they are; a coded one (LZ4, chunked) is read through [`Section`]. Front ends ask this
    /// property, not which kind a file has, so that a storage kind is added here alone.
    ///
    /// ```
    /// use rawarray_serde::section::Storage;
    /// use rawarray_serde::{Header, RawArray, WriteOptions};
    /// let a = RawArray::from_vec(vec![1.5f32; 64]);
    /// let (mut plain, mut lz4) = (Vec::new(), Vec::new());
    /// a.write_to_with(&mut plain, &WriteOptions::new()).unwrap();
    /// a.write_to_with(&mut lz4, &WriteOptions::new().compress(true)).unwrap();
    /// assert!(!Storage::of(&Header::decode_any(&plain).unwrap()).is_coded());
    /// assert!(Storage::of(&Header::decode_any(&lz4).unwrap()).is_coded());
    /// ```
    pub fn is_coded(self) -> bool {
        self != Storage::Plain
    }

    /// Whether values are added to it in place after it was written: records appended,
    /// blocks written by an `ArrayWriter`. Plain and chunked sections are; one LZ4 block of
    /// the whole section is written once (rewrite such a file to append to it).
    ///
    /// ```
    /// use rawarray_serde::section::Storage;
    /// assert!(Storage::Plain.grows_in_place() && Storage::Chunked.grows_in_place());
    /// assert!(!Storage::Lz4Whole.grows_in_place());
    /// ```
    pub fn grows_in_place(self) -> bool {
        self != Storage::Lz4Whole
    }

    /// Refuses this storage, if it is written once (not [`Storage::grows_in_place`]), for
    /// `what`: the file of a writer that adds values to it in place after creating it, named
    /// by its writer (`"an ArrayWriter's array"`). The one wording of that refusal for every
    /// writer, so that a storage kind written once is refused by its own name and description.
    ///
    /// ```
    /// use rawarray_serde::section::Storage;
    /// use rawarray_serde::WriteOptions;
    /// assert!(Storage::Chunked.check_grows_in_place("an ArrayWriter's array").is_ok());
    /// let lz4 = WriteOptions::new().compress(true).storage();
    /// let e = lz4.check_grows_in_place("an ArrayWriter's array").unwrap_err().to_string();
    /// assert!(e.contains("an ArrayWriter's array grows in place, and lz4-whole"), "{e}");
    /// ```
    pub fn check_grows_in_place(self, what: &str) -> Result<()> {
        if self.grows_in_place() {
            return Ok(());
        }
        Err(crate::error::Error::unsupported(format!(
            "{what} grows in place, and {} ({}) is written once: choose plain or a chunked codec",
            self.name(),
            self.stored_as(),
        )))
    }

    /// Whether the section is stored as chunks behind a config and an index (doc/chunked.md).
    /// The index is what a reader opens and validates first (from an object store, fetched
    /// before any chunk), what a writer adding chunks keeps consistent and commits through the
    /// header's `size` (so a block journal is tied to the header as created, size 0), what
    /// recovery repairs and `ra verify` checks chunk by chunk. Its chunks are n-d boxes of
    /// the dims (new dims over the same bytes would be wrong), read in batches of whole
    /// chunks, and stored in the order they were written (a digest of the data is of its
    /// decoded bytes). Callers ask this, not which kind a file has, so that a storage kind
    /// with an index of its own is added here alone.
    ///
    /// ```
    /// use rawarray_serde::section::{Section, Storage};
    /// use rawarray_serde::{codec::Codec, Header, RawArray, WriteOptions};
    /// let a = RawArray::from_vec(vec![7u32; 1000]);
    /// for (opts, indexed) in [
    ///     (WriteOptions::new(), false),
    ///     (WriteOptions::new().compress(true), false),
    ///     (WriteOptions::new().codec(Codec::Zstd), true),
    /// ] {
    ///     let mut file = Vec::new();
    ///     a.write_to_with(&mut file, &opts).unwrap();
    ///     let header = Header::decode_any(&file).unwrap();
    ///     assert_eq!(Storage::of(&header).has_chunk_index(), indexed);
    ///     // The section opened reads the index: its chunk map.
    ///     let section = Section::open(&header, &file[..]).unwrap();
    ///     assert_eq!(section.chunk_map().is_some(), indexed);
    /// }
    /// ```
    pub fn has_chunk_index(self) -> bool {
        self == Storage::Chunked
    }

    /// What its stored bytes are, in words, for messages.
    fn stored_as(self) -> &'static str {
        match self {
            Storage::Plain => "the elements as they are",
            Storage::Lz4Whole => "one LZ4 block over the whole data section",
            Storage::Chunked => "chunks behind a config and an index",
        }
    }

    /// How `ra info` names it with its flag bit: `none`, `LZ4 block (flag bit 1)`, `chunked
    /// (flag bit 2)`.
    pub fn flag_text(self) -> &'static str {
        match self {
            Storage::Plain => "none",
            Storage::Lz4Whole => "LZ4 block (flag bit 1)",
            Storage::Chunked => "chunked (flag bit 2)",
        }
    }

    /// The codec its header alone names: `lz4-whole` for one LZ4 block of the whole section
    /// (flag bit 1 says it all); none for a plain section, and none for a chunked one, whose
    /// codec is in its config ([`Description::codec`]).
    pub fn header_codec(self) -> Option<&'static str> {
        (self == Storage::Lz4Whole).then(|| self.name())
    }

    /// Its name: `plain`, `lz4-whole`, or `chunked`.
    pub fn name(self) -> &'static str {
        match self {
            Storage::Plain => "plain",
            Storage::Lz4Whole => crate::codec::table::LZ4_WHOLE,
            Storage::Chunked => "chunked",
        }
    }
}

/// What a `.ra` file holds: an n-d array (plain, LZ4 or chunked: a [`Section`]) or ragged rows
/// (flag bit 3: an offsets section and a values section, read by the ragged readers).
///
/// The one place a file's kind is told from its bytes: every front end (serde's `from_*`,
/// `rawarray-arrow`, `ra`, the C API, the Python package) asks this instead of reading flags.
/// A flag word with bits no reader knows is an `Array`, whose reader names them all.
///
/// ```
/// use rawarray_serde::section::Holds;
/// use rawarray_serde::{Ragged, RawArray};
/// assert_eq!(Holds::of_head(&RawArray::from_vec(vec![1u8]).to_bytes()), Holds::Array);
/// assert_eq!(Holds::of_head(&Ragged::from_rows([[1u8]]).to_bytes().unwrap()), Holds::Rows);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holds {
    /// An n-d array, records included.
    Array,
    /// Ragged rows.
    Rows,
}

impl Holds {
    /// What the file whose first bytes are `head` holds (16 bytes suffice; fewer are an
    /// `Array`, whose reader reports the file too short).
    pub fn of_head(head: &[u8]) -> Holds {
        use crate::header::{le_u64, Flags, MAGIC, RAGGED};
        // Bit 3 and no bit this version does not know: a flag word with unknown bits goes to
        // the array reader, which names them all, so every reader reports them alike.
        let flags = || le_u64(&head[8..16]);
        if head.len() >= 16
            && le_u64(&head[..8]) == MAGIC
            && flags() & RAGGED != 0
            && flags() & !(RAGGED | Flags::KNOWN.bits()) == 0
        {
            Holds::Rows
        } else {
            Holds::Array
        }
    }

    /// What the file at `path` holds, by its first 16 bytes; an error names the path.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("r.ra");
    /// use rawarray_serde::{section::Holds, Ragged};
    /// Ragged::from_rows([vec![1.5f32], vec![2.5, 3.5]]).write_file(&path).unwrap();
    /// assert_eq!(Holds::of_file(&path).unwrap(), Holds::Rows);
    /// ```
    pub fn of_file(path: impl AsRef<std::path::Path>) -> Result<Holds> {
        let path = path.as_ref();
        let read = || -> std::io::Result<Vec<u8>> {
            let mut head = Vec::with_capacity(16);
            std::io::Read::read_to_end(
                &mut std::io::Read::take(std::fs::File::open(path)?, 16),
                &mut head,
            )?;
            Ok(head)
        };
        let head = read().map_err(|e| crate::Error::from(e).in_file(path))?;
        Ok(Holds::of_head(&head))
    }

    /// What the open `file` holds, by its first 16 bytes (read at offset 0, its position left
    /// alone): for a caller that opens the file once and reads it by what it holds, so that a
    /// file replaced in between cannot be told by one file and read as another.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("a.ra");
    /// use rawarray_serde::{section::Holds, RawArray};
    /// RawArray::from_vec(vec![1u8, 2]).write_file(&path).unwrap();
    /// let file = std::fs::File::open(&path).unwrap();
    /// assert_eq!(Holds::of_open_file(&file).unwrap(), Holds::Array);
    /// ```
    pub fn of_open_file(file: &std::fs::File) -> Result<Holds> {
        let len = crate::io::ReadAt::source_len(file)?.min(16) as usize;
        let mut head = [0u8; 16];
        crate::io::ReadAt::read_exact_at(file, &mut head[..len], 0)?;
        Ok(Holds::of_head(&head[..len]))
    }
}

/// What a section says about itself (`ra info`, Python's `File.compression`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// The storage kind.
    pub storage: Storage,
    /// The layout version of a chunked section (1 or 2).
    pub version: Option<u32>,
    /// The codec of a chunked section.
    pub codec: Option<Codec>,
    /// Its level.
    pub level: Option<i32>,
    /// Its filters, in the order they were applied.
    pub filters: Vec<Filter>,
    /// Its chunk shape, in the file's dim order.
    pub chunks: Option<Vec<u64>>,
    /// Its blocks.
    pub blocks: Option<Blocks>,
    /// Chunks in the grid.
    pub chunk_count: Option<u64>,
    /// Chunks written (the others read as zeros).
    pub chunks_written: Option<u64>,
    /// Whether its entries carry statistics.
    pub statistics: bool,
    /// Whether its blocks are byte streams (config features bit 1).
    pub split: bool,
    /// Whether each byte stream carries its own CRC-32 (config features bit 2).
    pub stream_crcs: bool,
    /// The bits a lossy filter kept (`bitround`), if one was applied.
    pub rounded_to: Option<u32>,
    /// Bytes of the section as stored.
    pub stored_bytes: u64,
    /// Bytes of the elements it holds.
    pub data_bytes: u64,
}

/// Something a reader noticed that is not an error but that a user should hear of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A version 1 chunk whose index entry points past the committed size: a writer that has
    /// not committed it, or a damaged entry (version 1 entries carry no CRC to tell). It reads
    /// as zeros.
    Uncommitted {
        /// The chunk.
        chunk: u64,
    },
    /// A chunk whose statistics fail their CRC: queries read it rather than skip it.
    StatisticsDamaged {
        /// The chunk.
        chunk: u64,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Uncommitted { chunk } => write!(
                f,
                "chunk {chunk}: its index entry points past the committed data (a writer still \
                 appending, or a damaged entry: RACHUNK1 entries carry no CRC to tell); it reads as zeros"
            ),
            Warning::StatisticsDamaged { chunk } => write!(
                f,
                "chunk {chunk}: its statistics fail their CRC; queries read it instead of skipping it"
            ),
        }
    }
}

enum Kind {
    Plain,
    /// The decoded section, kept once a box was read (boxes of one LZ4 block have no
    /// addressable runs; within the bound of 255 plain bytes a stored byte).
    Lz4Whole(std::sync::Mutex<Option<std::sync::Arc<Vec<u8>>>>),
    Chunked(Box<Chunked>),
}

/// A data section of any storage kind, read through a positioned reader (see the module docs).
pub struct Section<S> {
    header: Header,
    source: S,
    base: u64,
    kind: Kind,
    threads: usize,
    warnings: Vec<Warning>,
    counters: Counters,
    /// The source's state at the last read: caches belong to it.
    last_state: std::sync::Mutex<Option<crate::io::FileState>>,
}

impl<S: ReadAt> Section<S> {
    /// Opens the data section of the file `source`, whose header (already read from it) is
    /// `header`: for a chunked section, reads and validates its config and index.
    pub fn open(header: &Header, source: S) -> Result<Section<S>> {
        let base = header.encoded_len() as u64;
        Section::open_at(header, source, base)
    }

    /// [`Section::open`] for a source whose data section starts at `base` (0 for a source
    /// holding the section alone).
    pub fn open_at(header: &Header, source: S, base: u64) -> Result<Section<S>> {
        Section::open_in_state(header, source, base, None)
    }

    /// [`Section::open_at`] of a source whose state its caller has just taken (`taken`: a
    /// file pinned at open, [`PinnedFile::pin_snapshot`](crate::io::PinnedFile::pin_snapshot)),
    /// which is then not taken again; `None`: taken here.
    pub(crate) fn open_in_state(
        header: &Header,
        source: S,
        base: u64,
        taken: Option<crate::io::FileState>,
    ) -> Result<Section<S>> {
        let (state, len) = match taken {
            Some(s) => {
                let len = s.len();
                (Some(s), len)
            }
            None => (source.state()?, source.source_len()?),
        };
        let have = len.saturating_sub(base);
        if have < header.size {
            return Err(ErrorKind::Truncated {
                expected: header.size,
                found: have,
            }
            .into());
        }
        let mut warnings = Vec::new();
        let (kind, header) = match Storage::of(header) {
            Storage::Plain => (Kind::Plain, header.clone()),
            Storage::Lz4Whole => (Kind::Lz4Whole(std::sync::Mutex::default()), header.clone()),
            Storage::Chunked => {
                let c = Chunked::open(header, &source, base)?;
                let map = c.map();
                if map.config().version == 1 {
                    warnings.extend(
                        map.index()
                            .uncommitted()
                            .iter()
                            .map(|&chunk| Warning::Uncommitted { chunk }),
                    );
                }
                warnings.extend(
                    map.index()
                        .stats_damaged()
                        .iter()
                        .map(|&chunk| Warning::StatisticsDamaged { chunk }),
                );
                let h = map.header().clone();
                (Kind::Chunked(Box::new(c)), h)
            }
        };
        Ok(Section {
            header,
            source,
            base,
            kind,
            threads: 0,
            warnings,
            counters: Counters::default(),
            last_state: std::sync::Mutex::new(state),
        })
    }

    /// Decode whole reads on `threads` threads (0: rayon's global pool). A plain section's
    /// reads of 32 MiB or more in runs of 64 KiB or more from a local source (a file, a map,
    /// bytes in memory) are copied in 4 MiB pieces on that many threads too, at most 4, the
    /// caller's among them (0: `RAYON_NUM_THREADS` where it is set, else one a core; 1: the
    /// caller's alone).
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> Section<S> {
        self.threads = threads;
        self
    }

    /// The header (for a chunked section being appended to, with the newest committed `size`
    /// its index was read with).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The storage kind.
    pub fn storage(&self) -> Storage {
        match self.kind {
            Kind::Plain => Storage::Plain,
            Kind::Lz4Whole(_) => Storage::Lz4Whole,
            Kind::Chunked(_) => Storage::Chunked,
        }
    }

    /// The chunk map of a chunked section.
    pub fn chunk_map(&self) -> Option<&ChunkMap> {
        match &self.kind {
            Kind::Chunked(c) => Some(c.map()),
            _ => None,
        }
    }

    /// What the section says about itself.
    pub fn describe(&self) -> Description {
        let h = &self.header;
        let mut d = Description {
            storage: self.storage(),
            version: None,
            codec: None,
            level: None,
            filters: Vec::new(),
            chunks: None,
            blocks: None,
            chunk_count: None,
            chunks_written: None,
            statistics: false,
            split: false,
            stream_crcs: false,
            rounded_to: None,
            stored_bytes: h.size,
            data_bytes: h.data_len(),
        };
        if let Some(map) = self.chunk_map() {
            let c = map.config();
            d.version = Some(c.version);
            d.codec = Some(c.codec);
            d.level = Some(c.level);
            d.filters.clone_from(&c.filters);
            d.chunks = Some(c.chunk.clone());
            d.blocks = Some(c.blocks.clone());
            d.chunk_count = Some(map.grid().count());
            d.chunks_written = Some(
                map.index()
                    .entries()
                    .iter()
                    .filter(|e| !e.is_empty())
                    .count() as u64,
            );
            d.statistics = c.stats.is_some();
            d.split = c.split;
            d.stream_crcs = c.stream_crcs;
            d.rounded_to = c.filters.iter().find_map(|f| f.kept_bits());
        }
        d
    }

    /// What the reader noticed (see [`Warning`]).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// What has been read and decoded so far.
    pub fn stats(&self) -> SectionStats {
        self.counters.stats()
    }

    /// The reads made of the source so far (see [`IoStats`]).
    pub fn io_stats(&self) -> IoStats {
        self.counters
            .io_stats(matches!(self.kind, Kind::Chunked(_)))
    }

    fn io(&self) -> Io<'_, S> {
        self.io_from(&self.source)
    }

    fn io_from<'a, T: ReadAt + ?Sized>(&'a self, source: &'a T) -> Io<'a, T> {
        Io {
            source,
            base: self.base,
            threads: self.threads,
            counters: &self.counters,
        }
    }

    /// Runs a read between two takes of the source's state: an error if it changed during the
    /// read, and caches of another state dropped before it.
    fn checked<T>(&self, read: impl FnOnce() -> Result<T>) -> Result<T> {
        let before = self.source.state()?;
        {
            let mut last = self.last_state.lock().expect("state lock");
            if *last != before {
                self.drop_caches();
                last.clone_from(&before);
            }
        }
        // A read that fails may have failed because the file changed under it (cut short by
        // a rewrite in place): then the change is the error, not the short read. Any change
        // counts here, growth too: a reader opened on a half-written file sees the rest of it
        // as growth, and a rewrite that cuts it short next is still a change (CI met a short
        // read reported as such in tests/rewrite_rounds.rs).
        let out = match read() {
            Ok(out) => out,
            Err(e) => {
                let after = self.source.state()?;
                if let (Some(b), Some(a)) = (&before, &after) {
                    if b != a {
                        self.drop_caches();
                        return Err(b.changed_to(a));
                    }
                }
                return Err(e);
            }
        };
        let after = self.source.state()?;
        if let (Some(b), Some(a)) = (&before, &after) {
            // Grown during the read (a writer appending) leaves what was read alone; any other
            // change may have mixed two states in it.
            if !self.source.still_holds(b, a) {
                self.drop_caches();
                return Err(b.changed_to(a));
            }
        }
        Ok(out)
    }

    fn drop_caches(&self) {
        match &self.kind {
            Kind::Lz4Whole(cache) => *cache.lock().expect("cache lock") = None,
            Kind::Chunked(c) => c.drop_caches(),
            Kind::Plain => {}
        }
    }

    /// The whole section decoded: `dims x elbyte` bytes in the file's byte order.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let mut out = crate::data::try_zeroed_bytes(self.header.data_len())?;
        self.checked(|| self.fill_all(&mut out, true))?;
        Ok(out)
    }

    /// [`Section::read_all`] into the caller's buffer of exactly `dims x elbyte` bytes
    /// (whatever it holds: chunks never written are zeroed).
    pub fn read_all_into(&self, out: &mut [u8]) -> Result<()> {
        let h = &self.header;
        if out.len() as u64 != h.data_len() {
            return Err(chunked::shape_mismatch(
                h.dims.clone(),
                h.data_len(),
                out.len(),
            ));
        }
        self.checked(|| self.fill_all(out, false))
    }

    fn fill_all(&self, out: &mut [u8], zeroed: bool) -> Result<()> {
        let size = self.header.size;
        match &self.kind {
            Kind::Plain => {
                let (at, len) = (self.base, out.len() as u64);
                plain::read_runs(
                    &self.source,
                    std::iter::once(at..at + len),
                    len,
                    out,
                    self.threads,
                )?;
                self.counters.read(len);
                Ok(())
            }
            Kind::Lz4Whole(cache) => {
                if let Some(plain) = cache.lock().expect("cache lock").as_ref() {
                    out.copy_from_slice(plain);
                    return Ok(());
                }
                let mut r = ReadAtCursor::new(&self.source, self.base, size);
                self.counters.read(size);
                lz4::decode_into(&mut r, size, out)
            }
            Kind::Chunked(c) => c.read_all_into(&self.io(), out, zeroed),
        }
    }

    /// Decodes the box `ranges` (one range per dim, first varying fastest) into `out`,
    /// column-major over the box's shape, in the file's byte order. Plain sections read the
    /// box's runs; chunked sections only the blocks the box crosses; a whole-section LZ4 block
    /// is decoded as far as the box's last byte, keeping 64 KiB of it at a time.
    pub fn read_box(&self, ranges: &[Range<u64>], out: &mut [u8]) -> Result<()> {
        let plan = self.box_plan(ranges, out.len())?;
        self.checked(|| self.fill_plan(&plan, out))
    }

    /// The plan of the box `ranges`, checked against an output buffer of `len` bytes.
    fn box_plan(&self, ranges: &[Range<u64>], len: usize) -> Result<SubsetPlan> {
        let h = &self.header;
        let plan = SubsetPlan::new(&h.dims, h.elbyte, ranges)?;
        if len as u64 != plan.bytes() {
            return Err(chunked::shape_mismatch(plan.dims(), plan.bytes(), len));
        }
        Ok(plan)
    }

    /// The bytes `fields` (`(offset, width)` inside an element) of every element of the box
    /// `ranges`, one buffer per field (the box's elements in order, column-major, `width` bytes
    /// each, in the file's byte order), or `None` when this section cannot decode them alone:
    /// then read whole elements with [`Section::read_box`]. A chunked section whose blocks
    /// are stored as byte streams after a byte shuffle (record files written with zstd, and
    /// any `split` file) holds each byte of an element in a stream of its own (doc/chunked.md
    /// 5.3), so a query over two fields of a wide record decodes their streams only. Every
    /// block read is checked as [`Section::read_box`] checks it.
    ///
    /// ```
    /// use rawarray_serde::section::Section;
    /// use rawarray_serde::{codec, Codec, ElType, Header, WriteOptions};
    /// // 1000 elements of 8 bytes: a u32 counter, then a constant u32.
    /// let raw: Vec<u8> = (0..1000u32).flat_map(|i| [i.to_le_bytes(), 7u32.to_le_bytes()].concat()).collect();
    /// let h = Header::new(ElType::Uint, 8, vec![1000]).unwrap();
    /// let opts = WriteOptions::chunked().codec(Codec::Zstd).split(true);
    /// let (h, section) = codec::encode(&h, &raw, &opts).unwrap();
    /// let mut file = h.encode();
    /// file.extend_from_slice(&section);
    /// let s = Section::open(&h, &file[..]).unwrap();
    /// let cols = s.read_box_fields(&[10..13], &[(0, 4)]).unwrap().unwrap();
    /// assert_eq!(cols[0], [10u32, 11, 12].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    /// ```
    pub fn read_box_fields(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        self.read_box_fields_from(&self.source, ranges, fields)
    }

    /// [`Section::read_box_fields`] through `source`, another reader of the same file's bytes
    /// (the pieces an object-store reader fetched for this read; see
    /// [`Section::box_fields_fetches`]).
    pub fn read_box_fields_from<T: ReadAt + ?Sized>(
        &self,
        source: &T,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let Some((c, plan)) = self.fields_plan(ranges, fields)? else {
            return Ok(None);
        };
        let count = plan.bytes() / self.header.elbyte.max(1);
        let mut outs = fields
            .iter()
            .map(|&(_, w)| crate::data::try_zeroed_bytes(count.saturating_mul(w as u64)))
            .collect::<Result<Vec<Vec<u8>>>>()?;
        self.checked(|| {
            let mut views: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            c.read_box_fields(&self.io_from(source), ranges, fields, &mut views)
        })?;
        Ok(Some(outs))
    }

    /// The byte ranges of the file that [`Section::read_box_fields`] of the box `ranges` and
    /// `fields` would read and that `source` does not hold: as [`Section::box_fetches`] for a
    /// whole box, asked again until empty (a chunk's block table, then each block's head, then
    /// the streams of those fields it places, where each byte stream has its own CRC; whole
    /// blocks otherwise). `None` where fields are not decoded alone (then read the box whole).
    /// Chunks of at most `whole` stored bytes are named whole.
    pub fn box_fields_fetches<T: ReadAt + ?Sized>(
        &self,
        source: &T,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
        whole: u64,
    ) -> Result<Option<Vec<Range<u64>>>> {
        let Some((c, plan)) = self.fields_plan(ranges, fields)? else {
            return Ok(None);
        };
        if plan.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let need = c.box_needs(&self.io_from(source), plan.ranges(), whole, Some(fields))?;
        Ok(Some(
            need.into_iter()
                .map(|r| self.base + r.start..self.base + r.end)
                .collect(),
        ))
    }

    /// The chunked layout and the plan of a read of `fields` of the box `ranges`, the fields
    /// checked against the element; `None` where fields are not decoded alone.
    fn fields_plan(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> Result<Option<(&chunked::Chunked, SubsetPlan)>> {
        let Kind::Chunked(c) = &self.kind else {
            return Ok(None);
        };
        if !c.reads_fields() {
            return Ok(None);
        }
        let h = &self.header;
        for &(o, w) in fields {
            if w == 0 || o.checked_add(w).is_none_or(|end| end as u64 > h.elbyte) {
                return Err(crate::Error::msg(format!(
                    "field of {w} bytes at offset {o}: expected 1 or more bytes inside an \
                     element of {} bytes",
                    h.elbyte
                )));
            }
        }
        Ok(Some((c, SubsetPlan::new(&h.dims, h.elbyte, ranges)?)))
    }

    /// [`Section::read_box`], by its old name.
    #[deprecated(note = "use Section::read_box")]
    #[doc(hidden)]
    pub fn read_subset(&self, ranges: &[Range<u64>], out: &mut [u8]) -> Result<()> {
        self.read_box(ranges, out)
    }

    /// [`Section::read_box`] of a plan made beforehand.
    pub fn read_plan(&self, plan: &SubsetPlan, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 != plan.bytes() || plan.array_dims() != self.header.dims {
            return Err(chunked::shape_mismatch(
                plan.dims(),
                plan.bytes(),
                out.len(),
            ));
        }
        self.checked(|| self.fill_plan(plan, out))
    }

    /// The byte ranges of the file (offsets from its first byte, in no particular order) that
    /// a read of the box `ranges` would read and that `source` does not hold
    /// ([`ReadAt::has`]) and the section's caches do not spare: how a reader with I/O of its
    /// own (the object-store reader) drives the section. It fetches these into `source`, asks
    /// again (a chunk's blocks are named once its block table was fetched) until the answer is
    /// empty, then reads with [`Section::read_box_from`]. Chunks of at most `whole` stored
    /// bytes, and those the box covers, are named whole rather than table first.
    pub fn box_fetches<T: ReadAt + ?Sized>(
        &self,
        source: &T,
        ranges: &[Range<u64>],
        whole: u64,
    ) -> Result<Vec<Range<u64>>> {
        let h = &self.header;
        let plan = SubsetPlan::new(&h.dims, h.elbyte, ranges)?;
        if plan.is_empty() {
            return Ok(Vec::new());
        }
        let base = self.base;
        let need = match &self.kind {
            Kind::Plain => plan
                .runs()
                .filter(|r| !source.has(base + r.start..base + r.end))
                .collect(),
            Kind::Lz4Whole(cache) => {
                let all = 0..h.size;
                if cache.lock().expect("cache lock").is_some() || source.has(base..base + h.size) {
                    Vec::new()
                } else {
                    vec![all]
                }
            }
            Kind::Chunked(c) => c.box_needs(&self.io_from(source), plan.ranges(), whole, None)?,
        };
        Ok(need
            .into_iter()
            .map(|r| base + r.start..base + r.end)
            .collect())
    }

    /// [`Section::read_box`] through `source`, another reader of the same file's bytes (the
    /// pieces an object-store reader fetched for this read; see [`Section::box_fetches`]).
    pub fn read_box_from<T: ReadAt + ?Sized>(
        &self,
        source: &T,
        ranges: &[Range<u64>],
        out: &mut [u8],
    ) -> Result<()> {
        let plan = self.box_plan(ranges, out.len())?;
        self.checked(|| self.fill_plan_from(source, &plan, out))
    }

    fn fill_plan(&self, plan: &SubsetPlan, out: &mut [u8]) -> Result<()> {
        self.fill_plan_from(&self.source, plan, out)
    }

    fn fill_plan_from<T: ReadAt + ?Sized>(
        &self,
        source: &T,
        plan: &SubsetPlan,
        out: &mut [u8],
    ) -> Result<()> {
        if plan.is_empty() {
            return Ok(());
        }
        match &self.kind {
            Kind::Plain => {
                let base = self.base;
                let runs = plan.runs().map(|r| base + r.start..base + r.end);
                plain::read_runs(source, runs, plan.run_len(), out, self.threads)?;
                self.counters.read_runs(plan.run_count(), plan.bytes());
                Ok(())
            }
            Kind::Lz4Whole(cache) => {
                let held = cache.lock().expect("cache lock").clone();
                let plain = match held {
                    Some(p) => p,
                    None => {
                        let size = self.header.size;
                        let mut p = crate::data::try_zeroed_bytes(self.header.data_len())?;
                        let mut r = ReadAtCursor::new(source, self.base, size);
                        self.counters.read(size);
                        lz4::decode_into(&mut r, size, &mut p)?;
                        let p = std::sync::Arc::new(p);
                        *cache.lock().expect("cache lock") = Some(std::sync::Arc::clone(&p));
                        p
                    }
                };
                let mut at = 0usize;
                for run in plan.runs() {
                    let len = (run.end - run.start) as usize;
                    out[at..at + len].copy_from_slice(&plain[run.start as usize..run.end as usize]);
                    at += len;
                }
                Ok(())
            }
            Kind::Chunked(c) => c.read_box(&self.io_from(source), plan.ranges(), out),
        }
    }

    /// Calls `f` with the section's bytes in file order, in pieces of whole elements of about
    /// `piece` bytes, until `limit` bytes were handed out or `f` breaks. Memory stays near one
    /// piece (a chunked section: one slab of chunks along the last dim, cut in pieces; a
    /// whole-section LZ4 block: 64 KiB of window), whatever the section's size.
    pub fn for_each_piece(
        &self,
        limit: u64,
        piece: usize,
        mut f: impl FnMut(&[u8]) -> ControlFlow<()>,
    ) -> Result<()> {
        let h = &self.header;
        let total = h.data_len().min(limit);
        let elbyte = h.elbyte.max(1) as usize;
        let per = ((piece / elbyte).max(1) * elbyte) as u64;
        self.checked(|| match &self.kind {
            Kind::Plain => {
                let mut buf = crate::data::try_zeroed_bytes(per.min(total))?;
                let mut at = 0u64;
                while at < total {
                    let n = per.min(total - at) as usize;
                    self.source.read_exact_at(&mut buf[..n], self.base + at)?;
                    at += n as u64;
                    if f(&buf[..n]).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            Kind::Lz4Whole(_) => {
                let mut r = ReadAtCursor::new(&self.source, self.base, h.size);
                lz4::decode_pieces(&mut r, h.size, h.data_len(), total, elbyte, piece, f)
            }
            Kind::Chunked(c) => {
                if total == 0 {
                    return Ok(());
                }
                let Some((&last, lead)) = h.dims.split_last() else {
                    let one = {
                        let mut b = crate::data::try_zeroed_bytes(h.data_len())?;
                        c.read_all_into(&self.io(), &mut b, true)?;
                        b
                    };
                    let _ = f(&one);
                    return Ok(());
                };
                let plane = lead.iter().product::<u64>() * h.elbyte;
                if plane > per.max(total.min(SLAB_BYTES)) {
                    // A plane (every dim but the last) larger than a piece: a slab would hold
                    // the plane whole, whatever `limit` asked (a header of huge leading dims
                    // cost gigabytes for `ra cat --head 2`). Runs of the file order instead.
                    return for_each_run(c, &self.io(), &h.dims, h.elbyte, per, total, f);
                }
                // Slabs of whole chunks along the last dim (a slab is a run of the plain data
                // and each chunk is decoded once), as few planes at a time as a piece allows.
                let step = c.map().config().chunk[h.dims.len() - 1].min(last).max(1);
                let planes = (per / plane.max(1)).clamp(1, step);
                let mut ranges: Vec<Range<u64>> = lead.iter().map(|&d| 0..d).collect();
                ranges.push(0..0);
                let mut buf = Vec::new();
                let (mut done, mut at) = (0u64, 0u64);
                while at < last && done < total {
                    let end = (at + planes).min(last);
                    let want = (end - at) * plane;
                    buf.clear();
                    crate::data::try_reserve(&mut buf, crate::data::to_usize(want)?)?;
                    buf.resize(want as usize, 0);
                    ranges[h.dims.len() - 1] = at..end;
                    c.read_box(&self.io(), &ranges, &mut buf)?;
                    let keep = want.min(total - done) as usize;
                    done += keep as u64;
                    at = end;
                    if f(&buf[..keep]).is_break() {
                        break;
                    }
                }
                Ok(())
            }
        })
    }

    /// Reads the whole section checking every checksum it has (a chunked section: each
    /// chunk's entry CRC and each block's CRC, by decoding every written chunk, and each byte
    /// stream's own CRC where streams carry one; a
    /// whole-section LZ4 block: by decoding it), and returns how many chunks were checked.
    /// Warnings ([`Section::warnings`]) are not errors here; `ra verify` reports them too.
    pub fn verify(&self) -> Result<u64> {
        self.checked(|| match &self.kind {
            Kind::Plain => Ok(0),
            Kind::Lz4Whole(_) => {
                let h = &self.header;
                let mut r = ReadAtCursor::new(&self.source, self.base, h.size);
                lz4::decode_pieces(&mut r, h.size, h.data_len(), u64::MAX, 1, 1 << 20, |_| {
                    ControlFlow::Continue(())
                })?;
                Ok(0)
            }
            Kind::Chunked(c) => c.verify(&self.io()),
        })
    }
}

/// Bytes of a slab of planes [`Section::for_each_piece`] holds at most for a chunked section
/// read whole (a plane is every dim but the last): larger planes are read in runs.
const SLAB_BYTES: u64 = 16 << 20;

/// Calls `f` with the first `total` bytes of chunked section `c` (of `dims`, elements of
/// `elbyte` bytes) in file order, in runs of about `per` bytes (at least one element), each
/// read as one box: whole along the leading dims whose elements fit in `per`, a run of the
/// next dim, one index along each dim after it. Holds one run, whatever the dims.
fn for_each_run<S: ReadAt + ?Sized>(
    c: &Chunked,
    io: &Io<'_, S>,
    dims: &[u64],
    elbyte: u64,
    per: u64,
    total: u64,
    mut f: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> Result<()> {
    // Dims `..k` fit whole in a run of `inner` bytes.
    let (mut k, mut inner) = (0, elbyte);
    while k + 1 < dims.len() && inner.saturating_mul(dims[k]) <= per {
        inner *= dims[k];
        k += 1;
    }
    let run = (per / inner).max(1);
    let mut ranges: Vec<Range<u64>> = dims.iter().map(|&d| 0..d).collect();
    // Where the next run starts along dims `k..`.
    let mut at = vec![0u64; dims.len()];
    let mut buf = Vec::new();
    let mut done = 0u64;
    while done < total {
        let end = (at[k] + run).min(dims[k]);
        ranges[k] = at[k]..end;
        for j in k + 1..dims.len() {
            ranges[j] = at[j]..at[j] + 1;
        }
        let want = (end - at[k]) * inner;
        buf.clear();
        crate::data::try_reserve(&mut buf, crate::data::to_usize(want)?)?;
        buf.resize(want as usize, 0);
        c.read_box(io, &ranges, &mut buf)?;
        let keep = want.min(total - done) as usize;
        done += keep as u64;
        if f(&buf[..keep]).is_break() {
            break;
        }
        // The next run: along dim `k`, then on to the next index of the dims after it.
        at[k] = end;
        let mut j = k;
        while at[j] == dims[j] {
            at[j] = 0;
            j += 1;
            if j == dims.len() {
                return Ok(());
            }
            at[j] += 1;
        }
    }
    Ok(())
}

impl<S> std::fmt::Debug for Section<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Section")
            .field("header", &self.header)
            .field("base", &self.base)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}
