//! Repairing a file after a crash: [`recover`] looks at what the file is and hands it to the
//! repair of its kind (a record file, a ragged file, a chunked array written in blocks). The
//! one entry point above the writers it repairs after.

use std::path::Path;

use crate::error::Result;
use crate::header::Header;
use crate::lock::open_locked;
use crate::records::Recovery;
use crate::section::Storage;

/// Repairs a record file after a crash: extends the header over the complete records that
/// follow it and leaves the file as [`RecordWriter::finish`](crate::RecordWriter::finish) would.
///
/// It looks for the forward trailer block of a flush whose header update was lost (see
/// [`RecordWriter`](crate::RecordWriter) for the layout): at the data end and at each record boundary after it, a
/// valid block whose `at` field is its own offset ([`Trailer`](crate::Trailer) describes the block). Finding one
/// `k` records on, it extends the header over those `k` records, which were written (and synced)
/// before the block. The spare copy has `at = 0`, so a spare that happens to sit on a record
/// boundary behind a torn flush is never taken for the end of complete records. Without a
/// forward block, the last flush was torn: the trailer is written back at the data end and
/// nothing is extended. A damaged trailer and no good copy is an error, and nothing is written.
/// The scan can only be fooled by record data that itself holds a valid forward trailer block
/// on a record boundary.
///
/// A file with bytes after its data but no trailer block (not written by [`RecordWriter`](crate::RecordWriter):
/// another program's metadata, a hole) is not changed: the error,
/// [`ErrorKind::ForeignTrailing`](crate::ErrorKind::ForeignTrailing), says how many bytes there are and what they look like.
/// [`recover_with`] and [`RecoverOptions::force`] extend its header over as many whole
/// records as follow its data all the same.
///
/// It holds the file's exclusive lock while it works: a file a writer is appending to is
/// refused with [`ErrorKind::Locked`](crate::ErrorKind::Locked) (its tail is not torn, just not committed yet).
///
/// A file written in blocks by an [`ArrayWriter`](crate::ArrayWriter) has no records to
/// extend: one whose journal holds a block that was never committed (its writer was killed) is
/// refused with [`ErrorKind::Uncommitted`](crate::ErrorKind::Uncommitted), naming the blocks, and left as it is; only writing
/// those blocks again repairs it.
///
/// Works on any uncompressed `.ra` file whose last dim counts records, on ragged files
/// (flag bit 3), whose rows count as its records: the rows of a flush whose header write was
/// lost are found through the offsets that flush wrote ([`RaggedWriter`](crate::RaggedWriter)),
/// and on chunked arrays written in blocks ([`ArrayWriter`](crate::ArrayWriter)), whose index
/// it validates, reclaiming what a killed writer left past the committed size.
///
/// ```
/// use rawarray_serde::{recover, RawArray, RecordWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("log.ra");
/// let mut w = RecordWriter::<u32>::create(&path, serde_json::Value::Null).unwrap();
/// w.append_slice(&[1, 2]).unwrap();
/// w.finish().unwrap();
///
/// let r = recover(&path).unwrap(); // nothing was lost here
/// assert_eq!((r.records_before, r.records_after, r.trailer), (2, 2, true));
/// ```
pub fn recover(path: impl AsRef<Path>) -> Result<Recovery> {
    recover_with(path, &RecoverOptions::new())
}

/// How [`recover_with`] treats a file without a record trailer.
///
/// ```
/// use rawarray_serde::{recover, recover_with, ErrorKind, RawArray, RecoverOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("log.ra");
/// // A header for 2 values, followed by 3 whole u32 values and a torn one: no trailer.
/// let mut bytes = RawArray::from_vec(vec![1u32, 2]).to_bytes();
/// bytes.extend([3u32, 4, 5].iter().flat_map(|v| v.to_le_bytes()));
/// bytes.extend([6, 0]);
/// std::fs::write(&path, &bytes).unwrap();
///
/// let refused = recover(&path).unwrap_err();
/// assert!(matches!(refused.kind(), ErrorKind::ForeignTrailing { bytes: 14, .. }));
/// assert_eq!(std::fs::read(&path).unwrap(), bytes);
///
/// let r = recover_with(&path, &RecoverOptions::new().force(true)).unwrap();
/// assert_eq!((r.records_before, r.records_after, r.trailer), (2, 5, false));
/// let a: RawArray<u32> = RawArray::read_file(&path).unwrap();
/// assert_eq!(a.as_slice(), [1, 2, 3, 4, 5]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoverOptions {
    force: bool,
}

impl RecoverOptions {
    /// The default: a file without a record trailer is refused.
    pub fn new() -> RecoverOptions {
        RecoverOptions::default()
    }

    /// Extend the header of a file without a trailer over the whole records after its data;
    /// and cut the header of a record file cut short (a partial copy) back to the complete
    /// records it holds, dropping the partial last one.
    #[must_use]
    pub fn force(mut self, on: bool) -> RecoverOptions {
        self.force = on;
        self
    }
}

/// [`recover`], as `opts` say.
pub fn recover_with(path: impl AsRef<Path>, opts: &RecoverOptions) -> Result<Recovery> {
    let path = path.as_ref();
    let file = open_locked(path)?;
    let head = crate::fileio::stable_header_bytes(&file)?;
    if crate::section::Holds::of_head(&head) == crate::section::Holds::Rows {
        return crate::ragged::recover_locked(&file);
    }
    if Storage::of(&Header::decode_any(&head)?).has_chunk_index() {
        return crate::writer::recover_locked(path, &file);
    }
    crate::records::recover_records(path, &file, opts.force)
}
