//! The one error type of this crate: format errors, I/O errors and serde errors.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::eltype::{type_label, ElType};
use crate::sniff::FileKind;

/// A specialized `Result` for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing a `.ra` file.
///
/// Small (one pointer) so that `Result<T>` stays cheap on hot paths; [`Error::kind`] tells
/// what went wrong, [`Error::category`] how to react, and [`Error::path`] which file it
/// happened in: every function that takes a path names it in its errors (`x.ra: truncated:
/// ...`), once, however deep the error began.
///
/// ```
/// use rawarray_serde::{DynArray, ErrorKind};
/// let err = DynArray::from_bytes(b"not a rawarray file at all, but long enough to hold a header")
///     .unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::BadMagic { .. }));
/// assert!(err.to_string().starts_with("bad magic"));
/// ```
pub struct Error(Box<Repr>);

struct Repr {
    kind: ErrorKind,
    /// The file the error happened in, when a function given a path returned it.
    path: Option<PathBuf>,
}

/// What went wrong; every variant names the field, what was expected and what was found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing failed in the operating system.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The first eight bytes are not `rawarray`.
    #[error("bad magic: expected 0x7961727261776172 (\"rawarray\"), found {found:#018x}{}", looks_like.map_or(String::new(), |k| format!("; it looks like {}", k.description())))]
    BadMagic {
        /// The magic word found.
        found: u64,
        /// What the bytes look like instead, where they are recognised ([`crate::sniff`]).
        looks_like: Option<FileKind>,
    },
    /// Flag bits other than 0 (big-endian) and 1 (LZ4) are set.
    #[error("unknown flag bits {bits:#x} (known: bit 0 big-endian, bit 1 LZ4-compressed, bit 2 chunked where the reader goes through the codec layer)")]
    UnknownFlags {
        /// The unknown bits.
        bits: u64,
    },
    /// A ragged file (flag bit 3, rows of different lengths, doc/format.md section 10) given
    /// to a reader of n-d arrays. Its own variant, not [`ErrorKind::UnknownFlags`]: the bit is
    /// known, to the ragged readers, and front ends word the next step for their users by it
    /// instead of reading the file's flags again.
    /// (The message names no Rust type: front ends pass it on to their users. Rust's ragged
    /// readers are [`crate::RaggedReader`] and [`crate::ragged::DynRagged`].)
    #[error("a ragged array (flag bit 3: rows of different lengths), not an n-d array: read it with a reader of ragged rows")]
    RaggedFile,
    /// The eltype code is above 5.
    #[error("unknown eltype {code}: expected 0 (user), 1 (int), 2 (uint), 3 (float), 4 (complex) or 5 (bfloat16)")]
    UnknownElType {
        /// The code found.
        code: u64,
    },
    /// elbyte is 0.
    #[error("elbyte is 0 for eltype {} ({eltype}): every element needs at least one byte", eltype.code())]
    ZeroElbyte {
        /// The element type.
        eltype: ElType,
    },
    /// elbyte is not a size this eltype can have.
    #[error("elbyte {elbyte} is impossible for eltype {} ({eltype}): expected one of {:?}", eltype.code(), eltype.valid_elbytes().unwrap_or(&[]))]
    ImpossibleElbyte {
        /// The element type.
        eltype: ElType,
        /// The size found.
        elbyte: u64,
    },
    /// product(dims) x elbyte does not fit in 64 bits.
    #[error("dims {dims:?} x elbyte {elbyte} overflow a 64-bit byte count")]
    DataLenOverflow {
        /// The element size.
        elbyte: u64,
        /// The dims.
        dims: Vec<u64>,
    },
    /// An uncompressed file's size field disagrees with its dims.
    #[error("size is {size} but dims x elbyte is {expected}")]
    SizeMismatch {
        /// The size field.
        size: u64,
        /// product(dims) x elbyte.
        expected: u64,
    },
    /// A compressed file claims more plain bytes than LZ4 can expand its compressed size to.
    #[error("compressed size {size} cannot hold {plain} plain bytes (LZ4 expands at most 255x)")]
    CompressionRatio {
        /// The compressed size field.
        size: u64,
        /// product(dims) x elbyte.
        plain: u64,
    },
    /// The header claims more dims than [`MAX_NDIMS`](crate::header::MAX_NDIMS).
    #[error("ndims is {ndims}: at most {max} dims are read")]
    TooManyDims {
        /// The ndims field.
        ndims: u64,
        /// The limit.
        max: u64,
    },
    /// The input ends inside the header.
    #[error("truncated header: expected {needed} header bytes, found {found}")]
    HeaderTruncated {
        /// Bytes the header needs (48 + 8 x ndims).
        needed: u64,
        /// Bytes present.
        found: u64,
    },
    /// The input ends inside the data section.
    #[error("truncated: expected {expected} data bytes, found {found}")]
    Truncated {
        /// The size field.
        expected: u64,
        /// Data bytes present.
        found: u64,
    },
    /// The data does not fit in this machine's address space, or the memory for it could not
    /// be allocated (a size read from a file is allocated fallibly, never aborting).
    #[error("{bytes} bytes do not fit in memory: the allocation failed or exceeds this platform's address space")]
    TooLarge {
        /// The byte count.
        bytes: u64,
    },
    /// The LZ4 block is corrupt or does not decompress to product(dims) x elbyte bytes.
    #[error("LZ4 data: {0}")]
    Lz4(String),
    /// The file holds another element type than the one asked for.
    #[error("file holds {} (eltype {}, elbyte {file_elbyte}); asked for {requested} (eltype {}, elbyte {requested_elbyte})", type_label(*file_eltype, *file_elbyte), file_eltype.code(), requested_eltype.code())]
    TypeMismatch {
        /// The file's eltype.
        file_eltype: ElType,
        /// The file's elbyte.
        file_elbyte: u64,
        /// The Rust type asked for.
        requested: String,
        /// Its eltype.
        requested_eltype: ElType,
        /// Its elbyte.
        requested_elbyte: u64,
    },
    /// The file's dims do not fit the shape the element type needs (e.g. `[f32; 3]` needs dims `[3, ...]`).
    #[error("dims mismatch: expected {expected}, found {found:?}")]
    DimsMismatch {
        /// What was expected, in words.
        expected: String,
        /// The dims found.
        found: Vec<u64>,
    },
    /// A byte that must be 0 or 1 (a `bool`) or a `char` code point is invalid.
    #[error("invalid {what} at element {index}: {value:#x}")]
    InvalidValue {
        /// `bool` or `char`.
        what: &'static str,
        /// The element's index in the data.
        index: u64,
        /// The value found.
        value: u64,
    },
    /// The number of elements does not match the dims.
    #[error("{len} elements do not fill dims {dims:?} ({expected} elements)")]
    ShapeMismatch {
        /// The dims asked for.
        dims: Vec<u64>,
        /// Their product.
        expected: u64,
        /// The elements there are.
        len: u64,
    },
    /// Records asked for beyond the end of a file.
    #[error("records {start}..{end} are out of bounds: the file holds {len} records")]
    OutOfBounds {
        /// First record asked for.
        start: u64,
        /// One past the last record asked for.
        end: u64,
        /// Records in the file.
        len: u64,
    },
    /// A subset ([`SubsetPlan`](crate::SubsetPlan)) has another number of ranges than the
    /// array has dims.
    #[error("subset has {found} ranges; the array has {expected} dims")]
    SubsetRank {
        /// The array's number of dims.
        expected: usize,
        /// The number of ranges given.
        found: usize,
    },
    /// A subset's range starts after it ends, or ends past its dim.
    #[error("subset dim {dim}: range {start}..{end} is out of bounds for length {len}")]
    SubsetOutOfBounds {
        /// The dim (0 is the first, fastest-varying one).
        dim: usize,
        /// The range's start.
        start: u64,
        /// The range's end.
        end: u64,
        /// The dim's length.
        len: u64,
    },
    /// The operation cannot be done on this file.
    #[error("{0}")]
    Unsupported(String),
    /// A malformed trailer or schema.
    #[error("trailer: {0}")]
    Trailer(String),
    /// Any other message: serde's own `custom` errors (from a `Serialize` or `Deserialize`
    /// impl).
    #[error("{0}")]
    Message(String),
    /// The value has no `.ra` form: an `Option`, a map, an enum variant with data, a record of
    /// 0 bytes, ... (serializing). Every element of a `.ra` array has one fixed size.
    #[error("{what} cannot be stored in .ra: every element must have the same fixed size")]
    Unrepresentable {
        /// What the value is.
        what: String,
    },
    /// A sequence of another length than the same sequence in element 0 (serializing): a
    /// ragged `Vec<Vec<_>>`, a `Vec` field of another length.
    #[error(
        "not rectangular: element {index:?}{} has length {found}, expected {expected}",
        in_field(field)
    )]
    NotRectangular {
        /// The element's index, outermost first, down to the sequence that differs.
        index: Vec<u64>,
        /// The struct field it is in, if any.
        field: Option<String>,
        /// The length it has (`more than N` when it goes on past element 0's length).
        found: String,
        /// The length of the same sequence in element 0 (or of the first sequence beside it).
        expected: u64,
    },
    /// An element of another layout than element 0 (serializing): another scalar type where
    /// element 0 has one, a sequence where it has a scalar, another number of bytes.
    #[error(
        "mixed element types: element {index:?}{} has {found} where element 0 has {expected}",
        in_field(field)
    )]
    MixedElements {
        /// The element's index, outermost first.
        index: Vec<u64>,
        /// The struct field it is in, if any.
        field: Option<String>,
        /// What it has, in words.
        found: String,
        /// What element 0 has there, in words.
        expected: String,
    },
    /// The Rust type cannot be read from `.ra` at all (deserializing): an `Option`, a map,
    /// `()`, a struct field of no stored length, field names.
    #[error("{what}")]
    Unreadable {
        /// What cannot be read, and why, in words.
        what: String,
    },
    /// The file's elements or dims are not what the Rust type reads (deserializing): a string
    /// from a file that is not uint8, a record from numbers, a sequence where no dim is left.
    #[error("a {rust} {expected}; the file holds {found}")]
    WrongShape {
        /// The Rust type asked for.
        rust: String,
        /// What it reads from, in words.
        expected: String,
        /// What the file holds there, in words.
        found: String,
    },
    /// A record's fields read another number of bytes than its elbyte (deserializing).
    #[error("record {record}: elbyte is {elbyte} but the fields consume {consumed} bytes")]
    RecordSize {
        /// The Rust type's name.
        record: String,
        /// The file's elbyte.
        elbyte: u64,
        /// The bytes the fields read.
        consumed: u64,
    },
    /// The value was complete before the data was (deserializing): a `Deserialize` impl
    /// that stops early, or a type smaller than the file.
    #[error("the value read used {used} of the {len} data bytes (dims {dims:?})")]
    TrailingData {
        /// Data bytes read.
        used: u64,
        /// Data bytes in the file.
        len: u64,
        /// The file's dims.
        dims: Vec<u64>,
    },
    /// A file without data (a dim is 0) whose other dims ask for more empty sequences than a
    /// read makes (deserializing): their cost is not paid for by any byte of the input.
    #[error("the outermost {level} dims describe {items} empty {rust}s but the file holds no data (a dim is 0); at most {max} empty sequences per level are read")]
    TooManyEmpty {
        /// How many of the outermost dims.
        level: usize,
        /// The empty sequences they describe.
        items: u64,
        /// The Rust type of one.
        rust: String,
        /// The most read.
        max: u64,
    },
    /// More nested dims than a self-describing read (`deserialize_any`) follows.
    #[error("{depth} nested dims are too deep for a self-describing read (at most {max})")]
    TooDeep {
        /// The dims left.
        depth: usize,
        /// The most followed.
        max: usize,
    },
    /// A string's bytes are not UTF-8 (deserializing).
    #[error("a string is not UTF-8: the bytes from {valid_up_to} on are invalid")]
    InvalidUtf8 {
        /// The length of the valid prefix.
        valid_up_to: u64,
    },
    /// A `Serialize` impl gave another number of items than it said (serializing): the file
    /// would not hold what its header says.
    #[error("{what} said it had {said} {unit} but gave {gave}")]
    BrokenLength {
        /// What said it: `the sequence`, `the layout`.
        what: &'static str,
        /// What it counts: `items`, `bytes`.
        unit: &'static str,
        /// The number it said (`u64::MAX`: more than 2^64).
        said: u64,
        /// The number it gave.
        gave: u64,
    },
    /// Another writer (in this process or another) holds the file's exclusive lock: a
    /// `RecordWriter`, `recover`, or a rewrite in place.
    #[error("{} is being written by another writer", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// A record schema read from a file describes no valid element: damaged metadata. The
    /// data is still readable as bytes.
    #[error("damaged metadata: record schema {0}")]
    BadSchema(String),
    /// The file's record schema does not describe the element type it is read as (see
    /// [`Layout::check_against`](crate::Layout::check_against)): a field renamed, moved or of
    /// another type. Reading would give wrong values.
    #[error("the file's record schema differs from {reader}'s at {at}: the file has {file}, {reader} has {expected}")]
    SchemaMismatch {
        /// Where they differ: `field 'x'`, `the record's name`, `the element`.
        at: String,
        /// What the file's schema has there.
        file: String,
        /// The type read as.
        reader: String,
        /// What that type has there.
        expected: String,
    },
    /// A file has bytes after its data that are not a trailer block written by this crate;
    /// appending or repairing would destroy them.
    #[error("{path}: the {bytes} bytes after the data are not a record trailer ({looks_like}); {advice}", path = path.display())]
    ForeignTrailing {
        /// The file.
        path: PathBuf,
        /// How many bytes follow the data.
        bytes: u64,
        /// What their first bytes look like: quoted text or hex.
        looks_like: String,
        /// What to do about it.
        advice: &'static str,
    },
    /// The destination of a write is not a regular file (a FIFO, a device, a folder): it is
    /// not replaced by one.
    #[error("{}: is a {what}, not a regular file; refusing to replace it", path.display())]
    NotRegularFile {
        /// The destination (after following symlinks).
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// The destination has other hard links, which replacing it would split from it.
    #[error("{}: has {links} hard links; replacing it would split them (write in place instead)", path.display())]
    HardLinked {
        /// The destination.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// The destination is a file the caller may not write (no write permission bit, or
    /// `access(W_OK)` refuses), or one owned by someone else whose owner a replacement could
    /// not keep; it is replaced only when forced.
    #[error("{}: {why}; refusing to replace it unless forced", path.display())]
    Protected {
        /// The destination.
        path: PathBuf,
        /// Why: read-only, or another owner.
        why: String,
    },
    /// An [`ArrayWriter`](crate::ArrayWriter)'s journal says blocks were begun and never
    /// committed: a writer was killed (or failed) in the middle of them, or is still writing
    /// them. Their elements hold some of the new values and some of the old.
    #[error("{}: {} never committed (a writer was killed or failed while writing, or is still writing; write {} again)", path.display(), blocks_text(blocks), if blocks.len() == 1 { "it" } else { "them" })]
    Uncommitted {
        /// The array file.
        path: PathBuf,
        /// The blocks, one range per dim of the file each.
        blocks: Vec<Vec<std::ops::Range<u64>>>,
    },
    /// An [`ArrayWriter`](crate::ArrayWriter)'s journal (`NAME.journal` beside the file) is
    /// damaged: which blocks were committed cannot be told.
    #[error("{}: damaged block journal: {why}", path.display())]
    BadJournal {
        /// The journal.
        path: PathBuf,
        /// What is wrong, naming the field or entry.
        why: String,
    },
    /// The chunked layout's config or index is invalid (see [`crate::codec`]).
    #[error("chunked data section: {field}: expected {expected}, found {found}")]
    ChunkLayout {
        /// The field: `config magic`, `index entry of chunk 7`, ...
        field: String,
        /// What was expected.
        expected: String,
        /// What was found.
        found: String,
    },
    /// One chunk's stored bytes are corrupt (checksum, codec, decoded size).
    #[error("chunk {chunk}: {what}")]
    ChunkCorrupt {
        /// The chunk's number (column-major over the chunk grid).
        chunk: u64,
        /// What is wrong.
        what: String,
    },
    /// A file read through an open reader is no longer the file it opened: rewritten in
    /// place (or truncated) since. Nothing of the read is returned; open it again.
    #[error("the file changed while it was open ({what}); nothing was read from the new state: open it again")]
    Changed {
        /// How it changed.
        what: String,
    },
    /// A filter or codec id this crate does not know.
    #[error("unknown {what} id {id} in the chunked config (known: {known})")]
    UnknownCodecId {
        /// `filter` or `codec`.
        what: &'static str,
        /// The id found.
        id: u64,
        /// The ids known, in words.
        known: String,
    },
    /// A ragged file's header or offsets break the format's rules (doc/format.md, ragged
    /// arrays): offsets not starting at 0, decreasing, past the value count, a region too small.
    #[error("ragged array: {why}")]
    BadRagged {
        /// What is wrong, naming the field or the row.
        why: String,
    },
    /// A query's filter ([`crate::query::Predicate`]) that cannot apply to a file: a column
    /// it does not have, a column that is not a scalar, an operator its type cannot take.
    #[error("filter: {0}")]
    BadFilter(String),
}

/// A [`ErrorKind::ChunkLayout`] error.
pub(crate) fn chunk_layout(
    field: &str,
    expected: impl std::fmt::Display,
    found: impl std::fmt::Display,
) -> Error {
    ErrorKind::ChunkLayout {
        field: field.to_string(),
        expected: expected.to_string(),
        found: found.to_string(),
    }
    .into()
}

/// Words for a block: `[0..4, 2..3)`.
pub(crate) fn block_text(ranges: &[std::ops::Range<u64>]) -> String {
    let dims: Vec<String> = ranges
        .iter()
        .map(|r| format!("{}..{}", r.start, r.end))
        .collect();
    format!("[{})", dims.join(", "))
}

/// `block [0..4, 1..2) was`, `blocks [..), [..) were`.
fn blocks_text(blocks: &[Vec<std::ops::Range<u64>>]) -> String {
    let list: Vec<String> = blocks.iter().map(|b| block_text(b)).collect();
    if list.len() == 1 {
        format!("block {} was", list[0])
    } else {
        format!("blocks {} were", list.join(", "))
    }
}

/// How to react to an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// The operating system failed to read or write.
    Io,
    /// The bytes are not a valid `.ra` file (or not the type asked for).
    Data,
    /// The input ended early.
    Eof,
    /// The value cannot be stored in `.ra`, or the call was not possible.
    Usage,
}

impl Error {
    /// An error of this kind.
    pub fn new(kind: ErrorKind) -> Error {
        Error(Box::new(Repr { kind, path: None }))
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The kind, by value.
    pub fn into_kind(self) -> ErrorKind {
        self.0.kind
    }

    /// The file the error happened in, if the function that returned it was given a path.
    ///
    /// ```
    /// use rawarray_serde::RawArray;
    /// let err = RawArray::<f32>::read_file("no/such/file.ra").unwrap_err();
    /// assert_eq!(err.path(), Some(std::path::Path::new("no/such/file.ra")));
    /// assert!(err.to_string().starts_with("no/such/file.ra: "), "{err}");
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// The error, as one that happened in the file at `path`, unless it names a file already.
    /// The one place a path is joined to an error: [`crate::fileio`]'s `reading` calls it for
    /// every public function that takes a path.
    pub(crate) fn in_file(mut self, path: &Path) -> Error {
        if self.0.path.is_none() {
            self.0.path = Some(path.to_path_buf());
        }
        self
    }

    /// Whether the kind's own message names its file already.
    fn kind_names_path(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Locked { .. }
                | ErrorKind::ForeignTrailing { .. }
                | ErrorKind::NotRegularFile { .. }
                | ErrorKind::HardLinked { .. }
                | ErrorKind::Protected { .. }
        )
    }

    /// How to react to the error.
    pub fn category(&self) -> Category {
        match self.kind() {
            ErrorKind::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => Category::Eof,
            ErrorKind::Io(_) => Category::Io,
            ErrorKind::HeaderTruncated { .. } | ErrorKind::Truncated { .. } => Category::Eof,
            ErrorKind::Unsupported(_)
            | ErrorKind::Locked { .. }
            | ErrorKind::ForeignTrailing { .. }
            | ErrorKind::NotRegularFile { .. }
            | ErrorKind::HardLinked { .. }
            | ErrorKind::Protected { .. }
            | ErrorKind::ShapeMismatch { .. }
            | ErrorKind::Unrepresentable { .. }
            | ErrorKind::NotRectangular { .. }
            | ErrorKind::MixedElements { .. }
            | ErrorKind::BrokenLength { .. }
            | ErrorKind::Unreadable { .. }
            | ErrorKind::OutOfBounds { .. }
            | ErrorKind::SubsetRank { .. }
            | ErrorKind::SubsetOutOfBounds { .. }
            | ErrorKind::BadFilter(_)
            | ErrorKind::TooLarge { .. } => Category::Usage,
            _ => Category::Data,
        }
    }

    pub(crate) fn msg(m: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Message(m.to_string()))
    }

    pub(crate) fn unrepresentable(what: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Unrepresentable {
            what: what.to_string(),
        })
    }

    pub(crate) fn unsupported(m: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Unsupported(m.to_string()))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.path {
            Some(path) => f
                .debug_struct("Error")
                .field("path", path)
                .field("kind", &self.0.kind)
                .finish(),
            None => fmt::Debug::fmt(&self.0.kind, f),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.path {
            Some(path) if !self.kind_names_path() => {
                write!(f, "{}: {}", path.display(), self.0.kind)
            }
            _ => fmt::Display::fmt(&self.0.kind, f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.kind() {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::new(ErrorKind::Io(e))
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error::new(kind)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let e = match *e.0 {
            // An OS error without a file to name is passed on as it is.
            Repr {
                kind: ErrorKind::Io(io),
                path: None,
            } => return io,
            repr => Error(Box::new(repr)),
        };
        let k = match e.kind() {
            ErrorKind::Io(io) => io.kind(),
            ErrorKind::Locked { .. } => io::ErrorKind::ResourceBusy,
            ErrorKind::Protected { .. } => io::ErrorKind::PermissionDenied,
            _ => match e.category() {
                Category::Eof => io::ErrorKind::UnexpectedEof,
                Category::Usage => io::ErrorKind::InvalidInput,
                _ => io::ErrorKind::InvalidData,
            },
        };
        io::Error::new(k, e)
    }
}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error::msg(msg)
    }
}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error::msg(msg)
    }
}

/// `, field `name`` for a message, or nothing.
fn in_field(field: &Option<String>) -> String {
    field
        .as_ref()
        .map_or(String::new(), |f| format!(", field `{f}`"))
}

/// `text` as a message may show it: a URL's password (`scheme://user:password@host/...`)
/// replaced by `***`, the rest unchanged; anything else as it is. Every message of the store
/// module names a URL this way, and so should a program's own messages about one.
///
/// ```
/// use rawarray_serde::error::shown_url;
/// assert_eq!(shown_url("https://me:hunter2@host/a.ra"), "https://me:***@host/a.ra");
/// assert_eq!(shown_url("https://me@host/a.ra?x=1"), "https://me@host/a.ra?x=1");
/// assert_eq!(shown_url("s3://bucket/a@b.ra"), "s3://bucket/a@b.ra");
/// assert_eq!(shown_url("run.ra"), "run.ra");
/// ```
pub fn shown_url(text: &str) -> std::borrow::Cow<'_, str> {
    shown_urls_in(text)
}

/// `text` (a message, say another library's) with every URL in it shown as [`shown_url`]
/// shows one: the password of each `scheme://user:password@host` replaced by `***`. The store
/// module passes object_store's messages through it, since they name the URL they requested
/// as given.
///
/// ```
/// use rawarray_serde::error::shown_urls_in;
/// assert_eq!(
///     shown_urls_in("Error performing GET https://me:hunter2@host/a.ra in 2s, after 10 retries"),
///     "Error performing GET https://me:***@host/a.ra in 2s, after 10 retries"
/// );
/// assert_eq!(shown_urls_in("no URL here: a:b@c"), "no URL here: a:b@c");
/// ```
pub fn shown_urls_in(text: &str) -> std::borrow::Cow<'_, str> {
    // The authority of `scheme://authority/...` ends where the path, query or fragment
    // begins, or where the URL ends in running text; an `@` after it is not a user's.
    let ends = |c: char| {
        matches!(
            c,
            '/' | '?' | '#' | '"' | '\'' | '`' | ')' | ']' | '>' | ','
        ) || c.is_whitespace()
    };
    let has_password = |authority: &str| {
        authority
            .rfind('@')
            .is_some_and(|at| authority[..at].contains(':'))
    };
    if !text
        .split("://")
        .skip(1)
        .any(|after| has_password(&after[..after.find(ends).unwrap_or(after.len())]))
    {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        let end = after.find(ends).unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(at) if authority[..at].contains(':') => {
                let colon = authority.find(':').expect("checked");
                out.push_str(&authority[..colon]);
                out.push_str(":***");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out.into()
}
