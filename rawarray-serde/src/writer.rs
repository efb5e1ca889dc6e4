//! Writing n-d blocks of one array from many threads and processes: [`ArrayWriter`].

use std::borrow::Cow;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::atomic::AtomicFile;
use crate::codec::{Chain, ChunkWriter, Grid};
use crate::data;
use crate::element::Element;
use crate::error::block_text;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{stable_header_any, write_all_at};
use crate::header::Header;
use crate::journal::Journal;
use crate::lock::open_locked_shared;
use crate::options::WriteOptions;
use crate::reader::{check_out_len, typed_plan};
use crate::section::{Section, Storage};
use crate::subset::SubsetPlan;

/// A `.ra` file whose blocks are written in place, by any number of threads and processes at
/// once: each rank of a parallel simulation writes its own part of one array on a shared
/// filesystem.
///
/// A writer is opened through one builder, [`ArrayWriter::options`]: the array (its element
/// and dims, or a header), its storage ([`WriteOptions`]: plain, or chunked with its codec and
/// filters), and the mode: [`create`](ArrayWriterOptions::create),
/// [`open`](ArrayWriterOptions::open) or [`open_or_create`](ArrayWriterOptions::open_or_create).
///
/// Creating writes the header of the whole array and sizes the file to hold its
/// data (sparse where the filesystem allows: unwritten blocks take no disk and read as zeros);
/// the file appears at its path complete, by a rename, so it is a valid `.ra` file at every
/// moment, before, during and after the writes. Others then open it and write their blocks with
/// [`write_subset`](ArrayWriter::write_subset): one positioned write per run of the block, no
/// shared cursor, so writers of disjoint blocks never disturb each other (writers of
/// overlapping blocks leave either's bytes in the overlap). The writer is `Sync`: threads share
/// one by reference. [`finish`](ArrayWriter::finish) syncs the data to disk.
///
/// On a network filesystem, what one node wrote is seen by the others once it has synced
/// ([`finish`](ArrayWriter::finish) or [`sync`](ArrayWriter::sync)) and they open the file
/// after that (NFS's close-to-open consistency); parallel filesystems (Lustre, GPFS) lock byte
/// ranges themselves. Blocks that share a filesystem page are safe on local and parallel
/// filesystems; on NFS, aligning blocks to pages avoids relying on the client's write-back.
///
/// Only little-endian plain or chunked files can be written in place: a big-endian or
/// LZ4 file is refused with an error saying so. A chunked file is written in chunk-aligned
/// blocks, each compressed by its writer and committed whole.
///
/// Of several processes creating one path at once, exactly one creates the file; the others
/// are told [`ErrorKind::Locked`](crate::ErrorKind::Locked) (a file no writer holds is
/// replaced; one a writer holds never is). [`open_or_create`](ArrayWriterOptions::open_or_create)
/// is the call for ranks that race: the first creates the file, the others open it.
///
/// Each block is entered in a journal beside the file (`NAME.journal`) before its bytes are
/// written, and marked committed once they all are, so that a block a killed writer left half
/// written is known: [`uncommitted_blocks`](ArrayWriter::uncommitted_blocks), `ra info`,
/// `ra verify FILE.ra` and [`recover`](crate::recover) report it, until the block is written
/// again. The last writer's [`finish`](ArrayWriter::finish) removes a journal with nothing
/// uncommitted. (The journal's on-disk form is documented in the crate's `journal` module.)
///
/// Every `ArrayWriter` holds the file's shared advisory lock (`flock`) until it is dropped or
/// finished: block writers share it, and the crate's exclusive writers (a `RecordWriter`,
/// `recover`, `write_file` or [`ArrayWriter::create`] over the file, `ra`'s in-place rewrites)
/// fail at once with [`ErrorKind::Locked`](crate::ErrorKind::Locked) while any block writer has
/// it open, as an `ArrayWriter` does on a file one of them holds. Readers take no lock.
///
/// ```
/// use rawarray_serde::{ArrayWriter, RawArray};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("field.ra");
/// let w = ArrayWriter::options().array::<f32>(&[4, 3, 2]).create(&path).unwrap();
/// std::thread::scope(|s| {
///     for z in 0..2u64 {
///         let w = &w;
///         s.spawn(move || {
///             let plane = vec![z as f32; 12];
///             w.write_subset(&[0..4, 0..3, z..z + 1], &plane).unwrap();
///         });
///     }
/// });
/// w.finish().unwrap();
/// let a: RawArray<f32> = RawArray::read_file(&path).unwrap();
/// assert_eq!(a.dims(), &[4, 3, 2]);
/// assert_eq!(a.as_slice()[11..13], [0.0, 1.0]);
/// ```
#[derive(Debug)]
pub struct ArrayWriter {
    file: File,
    header: Header,
    /// The path as given, for the journal and errors.
    path: PathBuf,
    journal: Journal,
    created: bool,
    /// How blocks of a chunked file are coded and committed; `None` for a plain file.
    chunked: Option<Chunked>,
}

/// What an [`ArrayWriter`] of a chunked file (flag bit 2) keeps: the file's chain and grid
/// (dims are fixed), the pool its blocks' chunks are compressed on, and the turn its threads
/// take to commit.
struct Chunked {
    chain: Chain,
    grid: Grid,
    /// The fields statistics are kept for (`None`: the file keeps none).
    stats: Option<Vec<crate::codec::stats::StatField>>,
    elbyte: u64,
    big_endian: bool,
    /// `None`: rayon's global pool (all cores).
    pool: Option<rayon::ThreadPool>,
    /// Threads sharing this writer commit in turn here, then across processes under the
    /// journal's lock (a `flock` is its open file's, which those threads share).
    turn: Mutex<()>,
}

impl std::fmt::Debug for Chunked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunked")
            .field("chain", &self.chain)
            .field("grid", &self.grid)
            .field(
                "threads",
                &self
                    .pool
                    .as_ref()
                    .map(rayon::ThreadPool::current_num_threads),
            )
            .finish_non_exhaustive()
    }
}

impl Chunked {
    /// The chunked state of `file` (header `header`), its config and index validated as a
    /// reader would; compressing on `threads` threads (0: all cores).
    fn open(file: &File, header: &Header, threads: usize) -> Result<Chunked> {
        let section = Section::open(header, file)?;
        let layout = section.chunk_map().expect("a chunked header");
        Ok(Chunked {
            chain: layout.chain().clone(),
            grid: layout.grid().clone(),
            stats: layout.config().stats.clone(),
            elbyte: header.elbyte,
            big_endian: header.flags.is_big_endian(),
            pool: pool(threads)?,
            turn: Mutex::new(()),
        })
    }
}

impl Chunked {
    /// The statistics bytes of a chunk of raw bytes `raw` (of the values stored: rounded ones
    /// where a lossy filter runs), empty where the file keeps none.
    fn stats_of(&self, raw: &[u8]) -> Vec<u8> {
        match &self.stats {
            Some(fields) => {
                let rounded = self.chain.pipeline().round(raw);
                crate::codec::stats::compute(
                    fields,
                    rounded.as_deref().unwrap_or(raw),
                    self.elbyte,
                    self.big_endian,
                )
            }
            None => Vec::new(),
        }
    }
}

/// A pool of `threads` threads; `None` (rayon's global pool) for 0.
fn pool(threads: usize) -> Result<Option<rayon::ThreadPool>> {
    if threads == 0 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map(Some)
        .map_err(|e| Error::msg(format!("thread pool of {threads}: {e}")))
}

/// How an [`ArrayWriter`] is opened: the array, its storage and the threads compressing its
/// blocks, then the mode ([`create`](ArrayWriterOptions::create),
/// [`open`](ArrayWriterOptions::open), [`open_or_create`](ArrayWriterOptions::open_or_create)).
///
/// ```
/// use rawarray_serde::codec::{Codec, Shuffle};
/// use rawarray_serde::{ArrayWriter, RawArray, WriteOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("field.ra");
/// let opts = WriteOptions::new().codec(Codec::Zstd).shuffle(Shuffle::Byte).chunks(vec![8, 4]);
/// let w = ArrayWriter::options().array::<f32>(&[8, 8]).storage(opts).create(&path).unwrap();
/// std::thread::scope(|s| {
///     for half in 0..2u64 {
///         let w = &w;
///         s.spawn(move || w.write_subset(&[0..8, half * 4..half * 4 + 4], &[half as f32; 32]).unwrap());
///     }
/// });
/// // Not on the grid of chunks [8, 4]: refused, naming the block and the grid.
/// assert!(w.write_subset(&[0..8, 2..6], &[9.0f32; 32]).is_err());
/// w.finish().unwrap();
/// let a: RawArray<f32> = RawArray::read_file(&path).unwrap();
/// assert_eq!((a.as_slice()[0], a.as_slice()[63]), (0.0, 1.0));
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ArrayWriterOptions {
    array: Option<ArraySpec>,
    storage: WriteOptions,
    threads: usize,
}

impl ArrayWriterOptions {
    /// The array: `dims` of elements of `T` (first fastest; a fixed-array element adds its
    /// own dims in front).
    pub fn array<T: Element>(mut self, dims: &[u64]) -> ArrayWriterOptions {
        let mut file_dims = Vec::with_capacity(dims.len() + 1);
        T::inner_dims(&mut file_dims);
        file_dims.extend_from_slice(dims);
        self.array = Some(ArraySpec::Typed {
            name: std::any::type_name::<T>(),
            zero_sized: T::PACKED_SIZE == 0,
            eltype: T::ELTYPE,
            elbyte: T::ELBYTE as u64,
            dims: file_dims,
        });
        self
    }

    /// The array a little-endian plain `header` describes (any element type: what a binding
    /// that knows the element only at run time gives).
    pub fn header(mut self, header: Header) -> ArrayWriterOptions {
        self.array = Some(ArraySpec::Header(header));
        self
    }

    /// How the array is stored (default plain): a chunked file is created with its dims fixed
    /// and its whole index in place, every chunk never written (zeros to a reader); blocks
    /// must then be aligned to the chunk grid, and each chunk is written once. An existing
    /// file opened by [`open_or_create`](ArrayWriterOptions::open_or_create) must have this
    /// storage: the same chunks, filters and codec (its own level and byte streams are kept).
    pub fn storage(mut self, opts: WriteOptions) -> ArrayWriterOptions {
        self.storage = opts;
        self
    }

    /// Threads compressing a chunked file's blocks (0, the default: all cores; a plain file
    /// ignores it). The storage's own thread count is used when this is not set.
    pub fn threads(mut self, threads: usize) -> ArrayWriterOptions {
        self.threads = threads;
        self
    }

    fn threads_or_storage(&self) -> usize {
        if self.threads == 0 {
            self.storage.get_threads()
        } else {
            self.threads
        }
    }

    fn array_header(&self) -> Result<Header> {
        match &self.array {
            Some(ArraySpec::Header(h)) => Ok(h.clone()),
            Some(ArraySpec::Typed {
                name,
                zero_sized,
                eltype,
                elbyte,
                dims,
            }) => {
                if *zero_sized {
                    return Err(Error::unsupported(format!(
                        "{name} is zero-sized: a .ra element needs at least one byte"
                    )));
                }
                Header::new(*eltype, *elbyte, dims.clone())
            }
            None => Err(Error::unsupported(
                "ArrayWriter::options(): give the array (.array::<T>(dims) or .header(h)) before create or open_or_create",
            )),
        }
    }

    /// Refuses the one storage no writer of blocks can write, whichever way the writer is
    /// opened (a binding passes the user's options to `open` too).
    fn writable_storage(&self) -> Result<()> {
        self.storage
            .storage()
            .check_grows_in_place("an ArrayWriter's array")
    }

    fn chunked(&self) -> Option<WriteOptions> {
        self.storage
            .chunk_settings()
            .map(|o| o.clone().threads(self.threads_or_storage()))
    }

    /// Creates (or replaces) the file at `path`: its header, then a data section of zeros (or
    /// a chunked section with no chunk written), written to a temporary file beside it and
    /// renamed over the path, so no one ever sees a partial file there.
    ///
    /// A file no writer holds is replaced (a job run again starts afresh). A file a writer
    /// holds, or a new path another creator wins, is [`ErrorKind::Locked`]: of any number of
    /// creators racing for one path, exactly one gets a writer.
    pub fn create(&self, path: impl AsRef<Path>) -> Result<ArrayWriter> {
        let path = path.as_ref();
        self.writable_storage()?;
        ArrayWriter::create_inner(path, self.array_header()?, false, self.chunked().as_ref())?
            .ok_or_else(|| unreachable_existing(path))
    }

    /// Opens a file made by [`create`](ArrayWriterOptions::create) (or any little-endian
    /// plain or chunked `.ra` file) to write blocks into it, from another thread or process.
    /// The file must hold its whole data section; its own header and storage are used (the
    /// array and storage given here, if any, are not checked: [`open_or_create`] checks them).
    ///
    /// [`open_or_create`]: ArrayWriterOptions::open_or_create
    pub fn open(&self, path: impl AsRef<Path>) -> Result<ArrayWriter> {
        self.writable_storage()?;
        ArrayWriter::open_inner(path.as_ref(), self.threads_or_storage())
    }

    /// Opens the file at `path` if there is one, else creates it as
    /// [`create`](ArrayWriterOptions::create) would: the call for ranks that race to start one
    /// array. Exactly one of them creates it ([`ArrayWriter::created`] says which); the others
    /// open the winner's file. An existing file is opened, never replaced, and must hold this
    /// array with this storage (chunk shape, filters, codec; else an error saying what it
    /// has).
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, ArrayWriter, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let opts = ArrayWriter::options().array::<u32>(&[4]).storage(WriteOptions::new().codec(Codec::Lz4).chunks(vec![2]));
    /// let first = opts.open_or_create(&path).unwrap();
    /// let second = opts.open_or_create(&path).unwrap();
    /// assert!(first.created() && !second.created());
    /// second.write_subset(&[2..4], &[7u32, 8]).unwrap();
    /// let other = ArrayWriter::options().array::<u32>(&[4]).storage(WriteOptions::new().codec(Codec::Lz4).chunks(vec![4]));
    /// assert!(other.open_or_create(&path).is_err());
    /// assert!(ArrayWriter::options().array::<u32>(&[5]).open_or_create(&dir.path().join("run.ra")).is_err());
    /// ```
    pub fn open_or_create(&self, path: impl AsRef<Path>) -> Result<ArrayWriter> {
        self.writable_storage()?;
        ArrayWriter::open_or_create_inner(
            path.as_ref(),
            self.array_header()?,
            self.chunked().as_ref(),
            self.threads_or_storage(),
        )
    }
}

/// The array an [`ArrayWriterOptions`] was given.
#[derive(Clone, Debug)]
enum ArraySpec {
    Header(Header),
    Typed {
        name: &'static str,
        zero_sized: bool,
        eltype: crate::eltype::ElType,
        elbyte: u64,
        dims: Vec<u64>,
    },
}

impl ArrayWriter {
    /// The builder every writer is opened through (see [`ArrayWriterOptions`]).
    pub fn options() -> ArrayWriterOptions {
        ArrayWriterOptions::default()
    }

    /// [`ArrayWriterOptions::create`] of a plain array of `T`.
    #[deprecated(note = "use ArrayWriter::options().array::<T>(dims).create(path)")]
    #[doc(hidden)]
    pub fn create<T: Element>(path: impl AsRef<Path>, dims: &[u64]) -> Result<ArrayWriter> {
        ArrayWriter::options().array::<T>(dims).create(path)
    }

    /// [`ArrayWriterOptions::create`] of a plain array of `header`.
    #[deprecated(note = "use ArrayWriter::options().header(header).create(path)")]
    #[doc(hidden)]
    pub fn create_with_header(path: impl AsRef<Path>, header: Header) -> Result<ArrayWriter> {
        ArrayWriter::options().header(header).create(path)
    }

    /// [`ArrayWriterOptions::create`] of a chunked array of `T`.
    #[deprecated(note = "use ArrayWriter::options().array::<T>(dims).storage(opts).create(path)")]
    #[doc(hidden)]
    pub fn create_chunked<T: Element>(
        path: impl AsRef<Path>,
        dims: &[u64],
        opts: &WriteOptions,
    ) -> Result<ArrayWriter> {
        ArrayWriter::options()
            .array::<T>(dims)
            .storage(opts.clone().into_chunked())
            .create(path)
    }

    /// [`ArrayWriterOptions::create`] of a chunked array of `header`.
    #[deprecated(note = "use ArrayWriter::options().header(header).storage(opts).create(path)")]
    #[doc(hidden)]
    pub fn create_chunked_with_header(
        path: impl AsRef<Path>,
        header: Header,
        opts: &WriteOptions,
    ) -> Result<ArrayWriter> {
        ArrayWriter::options()
            .header(header)
            .storage(opts.clone().into_chunked())
            .create(path)
    }

    /// [`ArrayWriterOptions::open_or_create`] of a plain array of `T`.
    #[deprecated(note = "use ArrayWriter::options().array::<T>(dims).open_or_create(path)")]
    #[doc(hidden)]
    pub fn open_or_create<T: Element>(path: impl AsRef<Path>, dims: &[u64]) -> Result<ArrayWriter> {
        ArrayWriter::options().array::<T>(dims).open_or_create(path)
    }

    /// [`ArrayWriterOptions::open_or_create`] of a plain array of `header`.
    #[deprecated(note = "use ArrayWriter::options().header(header).open_or_create(path)")]
    #[doc(hidden)]
    pub fn open_or_create_with_header(
        path: impl AsRef<Path>,
        header: Header,
    ) -> Result<ArrayWriter> {
        ArrayWriter::options().header(header).open_or_create(path)
    }

    /// [`ArrayWriterOptions::open_or_create`] of a chunked array of `T`.
    #[deprecated(
        note = "use ArrayWriter::options().array::<T>(dims).storage(opts).open_or_create(path)"
    )]
    #[doc(hidden)]
    pub fn open_or_create_chunked<T: Element>(
        path: impl AsRef<Path>,
        dims: &[u64],
        opts: &WriteOptions,
    ) -> Result<ArrayWriter> {
        ArrayWriter::options()
            .array::<T>(dims)
            .storage(opts.clone().into_chunked())
            .open_or_create(path)
    }

    /// [`ArrayWriterOptions::open_or_create`] of a chunked array of `header`.
    #[deprecated(
        note = "use ArrayWriter::options().header(header).storage(opts).open_or_create(path)"
    )]
    #[doc(hidden)]
    pub fn open_or_create_chunked_with_header(
        path: impl AsRef<Path>,
        header: Header,
        opts: &WriteOptions,
    ) -> Result<ArrayWriter> {
        ArrayWriter::options()
            .header(header)
            .storage(opts.clone().into_chunked())
            .open_or_create(path)
    }

    /// [`ArrayWriterOptions::open`].
    #[deprecated(note = "use ArrayWriter::options().open(path)")]
    #[doc(hidden)]
    pub fn open(path: impl AsRef<Path>) -> Result<ArrayWriter> {
        ArrayWriter::options().open(path)
    }

    /// [`ArrayWriterOptions::open`] with `threads` compressing.
    #[deprecated(note = "use ArrayWriter::options().threads(n).open(path)")]
    #[doc(hidden)]
    pub fn open_with_threads(path: impl AsRef<Path>, threads: usize) -> Result<ArrayWriter> {
        ArrayWriter::options().threads(threads).open(path)
    }

    fn open_or_create_inner(
        path: &Path,
        header: Header,
        chunks: Option<&WriteOptions>,
        threads: usize,
    ) -> Result<ArrayWriter> {
        // Each turn either opens a file or finds the path free and tries to create one; losing
        // that race means a file is there now, opened on the next turn.
        for _ in 0..RACE_TRIES {
            match ArrayWriter::open_inner(path, threads) {
                Ok(w) => {
                    w.check_holds(&header, chunks)?;
                    return Ok(w);
                }
                Err(e) if is_not_found(&e) => {}
                // The winner holds its new file alone until the file's journal is in place: a
                // moment, unless the machine is loaded; try again rather than fail a rank.
                Err(e) if matches!(e.kind(), ErrorKind::Locked { .. }) => continue,
                Err(e) => return Err(e),
            }
            match ArrayWriter::create_inner(path, header.clone(), true, chunks) {
                Ok(Some(w)) => return Ok(w),
                Ok(None) => {}
                Err(e) if matches!(e.kind(), ErrorKind::Locked { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Err(ErrorKind::Locked {
            path: path.to_path_buf(),
        }
        .into())
    }

    /// Creates the file; `None` if `new_only` and a file is at `path` (left alone).
    fn create_inner(
        path: &Path,
        mut header: Header,
        new_only: bool,
        chunks: Option<&WriteOptions>,
    ) -> Result<Option<ArrayWriter>> {
        header.validate()?;
        check_writable(&header)?;
        if Storage::of(&header).has_chunk_index() && chunks.is_none() {
            return Err(Error::unsupported(
                "a chunked header (flag bit 2) needs its chunked storage: ArrayWriter::options().storage(..)",
            ));
        }
        // Checked before anything is made: a chunk grid the index could not hold is refused
        // here, before its index is allocated.
        let config = chunks.map(|o| o.chunk_config(&header, None)).transpose()?;
        // The path's rules for replacing a file: a file another writer holds (block writers
        // included) is not replaced, nor a special file; a new file gets ordinary permissions.
        let mut atomic = AtomicFile::create(path)?;
        if new_only && atomic.replaces_existing() {
            return Ok(None);
        }
        let chunked = match (chunks, config) {
            (Some(opts), Some(mut config)) => {
                // The whole index in segment 0: the dims never change, so no segment is ever
                // allocated (or moved) while blocks are written.
                config.s0 = config.s0.max(1);
                let w = ChunkWriter::create(atomic.file(), &header, config)?;
                header = w.header().clone();
                Some(Chunked::open(atomic.file(), &header, opts.get_threads())?)
            }
            _ => {
                write_all_at(atomic.file(), &header.encode(), 0)?;
                atomic
                    .file()
                    .set_len(header.encoded_len() as u64 + header.size)?;
                None
            }
        };
        // Not synced: a power cut can lose only this new, still empty array (`finish` syncs).
        // The file comes out holding the shared lock block writers hold, taken before it
        // appears at the path: no creator racing for the path can take its exclusive lock and
        // replace it under this writer (a lock turned from exclusive into shared is let go for
        // a moment, which is how two creators both won before).
        let file = atomic.commit_open_shared(false)?;
        let journal = Journal::attach(path, &file, &header, false)?;
        Ok(Some(ArrayWriter {
            file,
            header,
            path: path.to_path_buf(),
            journal,
            created: true,
            chunked,
        }))
    }

    fn open_inner(path: &Path, threads: usize) -> Result<ArrayWriter> {
        let file = open_locked_shared(path)?;
        let header = stable_header_any(&file)?;
        check_writable(&header)?;
        header.check_input_len(file.metadata()?.len())?;
        let chunked = if Storage::of(&header).has_chunk_index() {
            Some(Chunked::open(&file, &header, threads)?)
        } else {
            None
        };
        let journal = Journal::attach(path, &file, &header, false)?;
        Ok(ArrayWriter {
            file,
            header,
            path: path.to_path_buf(),
            journal,
            created: false,
            chunked,
        })
    }

    /// Whether this writer created the file (rather than opened it).
    pub fn created(&self) -> bool {
        self.created
    }

    /// The blocks of the file at `path` that were begun and never committed, each as one range
    /// per dim of the file (first fastest): blocks a writer was killed (or failed) in the
    /// middle of, or is writing now. Empty for a file every writer finished, and for a file
    /// not written by an `ArrayWriter`. A damaged journal is an error
    /// ([`ErrorKind::BadJournal`](crate::ErrorKind::BadJournal)).
    ///
    /// ```
    /// use rawarray_serde::ArrayWriter;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("field.ra");
    /// let w = ArrayWriter::create::<f32>(&path, &[4, 2]).unwrap();
    /// w.write_subset(&[0..4, 1..2], &[1.0f32; 4]).unwrap();
    /// w.finish().unwrap();
    /// assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
    /// ```
    pub fn uncommitted_blocks(path: impl AsRef<Path>) -> Result<Vec<Vec<Range<u64>>>> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| {
            Error::from(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", path.display()),
            ))
        })?;
        let header = stable_header_any(&file)?;
        Ok(crate::journal::uncommitted(path, &file, &header)?.unwrap_or_default())
    }

    /// Repairs what a killed writer left in the file at `path`: [`recover`](crate::recover)
    /// for a file written in blocks, plain or chunked.
    ///
    /// A block the file's journal says was begun and never committed is reported
    /// ([`ErrorKind::Uncommitted`](crate::ErrorKind::Uncommitted), naming the blocks) and
    /// nothing is changed, as `recover` does for a plain file: only writing the block again
    /// repairs it. A chunked file's block is committed by one header write, all its chunks at
    /// once: a killed writer's block is whole or absent, so it is reported only while absent.
    ///
    /// A chunked file's index needs no rebuilding: an entry is written before the commit that
    /// makes it count, so the committed header and index always agree. Its config and index
    /// are validated as a reader would (an error names the field or chunk), and what a killed
    /// writer left past the committed size (entries, index segment slots, chunk bytes) is
    /// reclaimed: the entries and slots zeroed, as the next writer would. It holds the file's
    /// exclusive lock, so a file block writers have open is
    /// [`ErrorKind::Locked`](crate::ErrorKind::Locked).
    ///
    /// ```
    /// use rawarray_serde::codec::ChunkOptions;
    /// use rawarray_serde::ArrayWriter;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("c.ra");
    /// let w = ArrayWriter::create_chunked::<u8>(&path, &[4, 4], &ChunkOptions::new().chunks(vec![4, 2])).unwrap();
    /// w.write_subset(&[0..4, 0..2], &[1u8; 8]).unwrap();
    /// w.finish().unwrap();
    /// let r = ArrayWriter::recover(&path).unwrap();
    /// assert_eq!((r.records_before, r.records_after, r.bytes_removed), (4, 4, 0));
    /// ```
    pub fn recover(path: impl AsRef<Path>) -> Result<crate::Recovery> {
        let path = path.as_ref();
        recover_locked(path, &crate::lock::open_locked(path)?)
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Writes `values`, the block `ranges` in column-major order (one range per dim of the
    /// array of `T`, first fastest, as for [`ArrayReader::read_subset`](crate::ArrayReader::read_subset)).
    ///
    /// The element type is checked against the header, the ranges against the dims (errors name
    /// the dim), and `values` must hold exactly the block's elements. A failed write may have
    /// written some of the block's runs.
    pub fn write_subset<T: Element>(&self, ranges: &[Range<u64>], values: &[T]) -> Result<()> {
        let plan = typed_plan::<T>(&self.header, ranges)?;
        check_out_len(&plan, values.len())?;
        let bytes = match T::as_pod_bytes(values) {
            Some(b) => Cow::Borrowed(b),
            None => Cow::Owned(data::encode_values(values, false)),
        };
        self.write_block(&plan, &bytes)
    }

    /// Writes the block `ranges` (one per dim of the file) from its little-endian bytes, for
    /// elements of any type.
    ///
    /// ```
    /// use rawarray_serde::{ArrayWriter, ElType, Header, RawArray};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("b.ra");
    /// let w = ArrayWriter::create_with_header(&path, Header::new(ElType::Uint, 2, vec![2, 2]).unwrap()).unwrap();
    /// w.write_subset_bytes(&[0..2, 1..2], &[7, 0, 8, 0]).unwrap();
    /// w.finish().unwrap();
    /// assert_eq!(RawArray::<u16>::read_file(&path).unwrap().as_slice(), &[0, 0, 7, 8]);
    /// ```
    pub fn write_subset_bytes(&self, ranges: &[Range<u64>], bytes: &[u8]) -> Result<()> {
        let plan = SubsetPlan::new(&self.header.dims, self.header.elbyte, ranges)?;
        if plan.bytes() != bytes.len() as u64 {
            return Err(crate::error::ErrorKind::ShapeMismatch {
                dims: plan.dims(),
                expected: plan.bytes(),
                len: bytes.len() as u64,
            }
            .into());
        }
        self.write_block(&plan, bytes)
    }

    /// Writes the block's runs between its journal entries: begun before the first byte,
    /// committed after the last. A failed write leaves it begun, and so reported.
    fn write_block(&self, plan: &SubsetPlan, bytes: &[u8]) -> Result<()> {
        let run = data::to_usize(plan.run_len())?;
        if run == 0 || plan.is_empty() {
            return Ok(());
        }
        // The journal names blocks in the file's dims: a typed plan leaves out the leading
        // dims its element type holds whole.
        let lead = self.header.dims.len() - plan.ranges().len();
        let ranges: Vec<Range<u64>> = self.header.dims[..lead]
            .iter()
            .map(|&d| 0..d)
            .chain(plan.ranges().iter().cloned())
            .collect();
        if let Some(c) = &self.chunked {
            return self.write_chunks(c, &ranges, bytes);
        }
        let id = self.journal.begin(&ranges)?;
        let base = self.header.encoded_len() as u64;
        for (r, chunk) in plan.runs().zip(bytes.chunks_exact(run)) {
            write_all_at(&self.file, chunk, base + r.start)?;
        }
        self.journal.end(id, &ranges)
    }

    /// Writes the chunk-aligned block `ranges` (one per dim of the file) of a chunked file
    /// from its `bytes`: begun in the journal, its chunks compressed in parallel, then
    /// appended, entered and committed in this writer's turn (module docs of
    /// [`crate::codec::writer`]), then ended in the journal.
    fn write_chunks(&self, c: &Chunked, ranges: &[Range<u64>], bytes: &[u8]) -> Result<()> {
        let grid = &c.grid;
        grid.check_aligned(ranges)?;
        let chunks: Vec<u64> = grid.touched(ranges).collect();
        // A block holding a committed chunk is refused before it is begun or compressed, by
        // reading the index (not `ChunkWriter::open`, which reclaims what lies past the
        // committed size: another writer may be appending there now). It is checked again in
        // this writer's turn: another may commit the chunk meanwhile.
        let header = stable_header_any(&self.file)?;
        let section = Section::open(&header, &self.file)?;
        let map = section.chunk_map().expect("a chunked header");
        check_unwritten(ranges, grid, &chunks, |n| Ok(!map.entry(n).is_empty()))?;
        // Begun before the slow part, so a writer killed while it compresses is reported.
        let id = self.journal.begin(ranges)?;
        let encode = |&n: &u64| -> Result<(u64, Vec<u8>, u32, Vec<u8>)> {
            let raw = grid.chunk_of_block(n, ranges, bytes)?;
            let (stored, flags) = c.chain.encode_chunk(&raw, &grid.shape(n))?;
            Ok((n, stored, flags, c.stats_of(&raw)))
        };
        let compress = || chunks.par_iter().map(encode).collect::<Result<Vec<_>>>();
        let encoded = match &c.pool {
            Some(p) => p.install(compress),
            None => compress(),
        }?;
        {
            // A poisoned turn only means another thread panicked between commits: the file
            // is re-read under the lock, so nothing it held is trusted.
            let _turn = c
                .turn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let _lock = self.journal.lock_commits()?;
            let mut w = ChunkWriter::open(&self.file)?;
            check_unwritten(ranges, grid, &chunks, |n| w.is_committed(&self.file, n))?;
            for (n, stored, flags, stats) in &encoded {
                w.write_stored(&self.file, *n, stored, *flags, stats)?;
            }
            w.commit(&self.file, false)?;
        }
        self.journal.end(id, ranges)
    }

    /// Syncs what this writer wrote (and the file's size) to disk, keeping the writer open;
    /// and the journal, so that after a power cut it still tells its blocks.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_all()?;
        self.journal.sync()
    }

    /// Syncs and closes the file. Each process syncs its own writes; once every writer has
    /// finished, the file holds the whole array.
    ///
    /// The last writer to finish (no other holds the file) removes the file's journal if every
    /// block in it was committed. If a block another writer left (killed in the middle) is
    /// still uncommitted, the journal stays, so the damage stays known, and that last `finish`
    /// returns [`ErrorKind::Uncommitted`](crate::ErrorKind::Uncommitted) naming the blocks: the
    /// array is not whole, though this writer's own blocks are synced all the same.
    pub fn finish(self) -> Result<()> {
        self.sync()?;
        // Taking the exclusive lock gives up the shared one (a failed attempt too): this writer
        // is done either way. Held, no writer can be using the journal.
        match self.file.try_lock() {
            Ok(()) => {
                let left = self
                    .journal
                    .remove_if_clean(&self.path, &self.file, &self.header)?;
                if left.is_empty() {
                    return Ok(());
                }
                Err(ErrorKind::Uncommitted {
                    path: self.path,
                    blocks: left,
                }
                .into())
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(()),
            Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
        }
    }

    /// An error unless the file holds the array `want` describes, chunked as `chunks` say
    /// (or plain, for `None`).
    fn check_holds(&self, want: &Header, chunks: Option<&WriteOptions>) -> Result<()> {
        let h = &self.header;
        match (&self.chunked, chunks) {
            (None, None) => {}
            (Some(c), Some(opts)) => {
                let cfg = opts.chunk_config(h, None)?;
                let p = c.chain.pipeline();
                let have = (c.grid.chunk(), p.filters(), p.codec());
                let asked = (&cfg.chunk[..], &cfg.filters[..], cfg.codec);
                if have != asked {
                    let say =
                        |(ch, f, co): (&[u64], &[crate::codec::Filter], crate::codec::Codec)| {
                            format!(
                                "chunks {ch:?}, filters [{}], codec {co}",
                                f.iter()
                                    .map(ToString::to_string)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        };
                    return Err(crate::codec::config::bad(
                        "chunking of the array to open or create",
                        say(asked),
                        say(have),
                    ));
                }
            }
            (have, _) => {
                let what = |c: bool| if c { "chunked" } else { "plain (not chunked)" };
                return Err(crate::codec::config::bad(
                    "layout of the array to open or create",
                    what(chunks.is_some()),
                    what(have.is_some()),
                ));
            }
        }
        if (h.eltype, h.elbyte) != (want.eltype, want.elbyte) {
            return Err(ErrorKind::TypeMismatch {
                file_eltype: h.eltype,
                file_elbyte: h.elbyte,
                requested: want.type_label(),
                requested_eltype: want.eltype,
                requested_elbyte: want.elbyte,
            }
            .into());
        }
        if h.dims != want.dims {
            return Err(ErrorKind::DimsMismatch {
                expected: format!("{:?} (the array to open or create)", want.dims),
                found: h.dims.clone(),
            }
            .into());
        }
        Ok(())
    }
}

/// Turns an `open_or_create` takes (each waiting up to the lock's grace for a file held)
/// before it gives up: a file held for seconds is another kind of writer's.
const RACE_TRIES: usize = 16;

fn is_not_found(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

/// `create_inner` returns `None` only when asked for a new file only.
fn unreachable_existing(path: &Path) -> Error {
    ErrorKind::Locked {
        path: path.to_path_buf(),
    }
    .into()
}

/// [`ArrayWriter::recover`] of the file at `path`, open in `file` with its exclusive lock
/// held: for `recover`, which finds a chunked file (flag bit 2) after taking the lock.
pub(crate) fn recover_locked(path: &Path, file: &File) -> Result<crate::Recovery> {
    let header = stable_header_any(file)?;
    if let Some(blocks) = crate::journal::uncommitted(path, file, &header)? {
        if !blocks.is_empty() {
            return Err(ErrorKind::Uncommitted {
                path: path.to_path_buf(),
                blocks,
            }
            .into());
        }
    }
    header.check_input_len(file.metadata()?.len())?;
    let reclaimed = if Storage::of(&header).has_chunk_index() {
        // Validates config and index; zeroes (and syncs) what lies past the committed size,
        // and says what that was: the recovery reports it, by chunk.
        ChunkWriter::open(file)?.reclaimed().clone()
    } else {
        crate::codec::Reclaimed::default()
    };
    let end = crate::trailer::data_end(&header);
    let trailer = matches!(
        crate::trailer::locate(file, end, file.metadata()?.len()),
        crate::trailer::Probe::Valid(_)
    );
    let n = header.dims.last().copied().unwrap_or(1);
    Ok(crate::Recovery {
        records_before: n,
        records_after: n,
        trailer,
        bytes_removed: 0,
        dropped_chunks: reclaimed.chunks,
        dropped_segments: reclaimed.segments,
        holds: crate::section::Holds::Array,
    })
}

/// An error naming the block `ranges` and the chunk if one of its `chunks` (of `grid`) is
/// committed.
fn check_unwritten(
    ranges: &[Range<u64>],
    grid: &Grid,
    chunks: &[u64],
    committed: impl Fn(u64) -> Result<bool>,
) -> Result<()> {
    for &n in chunks {
        if committed(n)? {
            return Err(crate::codec::config::bad(
                &format!("block {}", block_text(ranges)),
                "chunks not written yet (a chunk of a chunked file is written once)",
                format!(
                    "chunk {n} (grid coordinates {:?} of chunks {:?}) already committed",
                    grid.coords(n),
                    grid.chunk()
                ),
            ));
        }
    }
    Ok(())
}

/// An error unless blocks of a file with `header` can be written in place.
fn check_writable(header: &Header) -> Result<()> {
    let storage = Storage::of(header);
    let once = !storage.grows_in_place();
    if once || header.is_big_endian() {
        let stored = format!("stored as {} (written once)", storage.name());
        let what = match (header.is_big_endian(), once) {
            (true, true) => format!("big-endian and {stored}"),
            (true, false) => "big-endian".to_string(),
            _ => stored,
        };
        return Err(Error::unsupported(format!(
            "blocks can be written in place only in little-endian plain or chunked files; this one is {what} (rewrite it first: ra decompress, ra convert)"
        )));
    }
    Ok(())
}
