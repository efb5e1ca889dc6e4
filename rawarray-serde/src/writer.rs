//! Writing n-d blocks of one array from many threads and processes: [`ArrayWriter`].

use std::borrow::Cow;
use std::fs::File;
use std::ops::Range;
use std::path::Path;

use crate::atomic::AtomicFile;
use crate::data;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::fileio::{stable_header, write_all_at};
use crate::header::Header;
use crate::lock::open_locked_shared;
use crate::reader::{check_out_len, typed_plan};
use crate::subset::SubsetPlan;

/// A `.ra` file whose blocks are written in place, by any number of threads and processes at
/// once: each rank of a parallel simulation writes its own part of one array on a shared
/// filesystem.
///
/// [`ArrayWriter::create`] writes the header of the whole array and sizes the file to hold its
/// data (sparse where the filesystem allows: unwritten blocks take no disk and read as zeros);
/// the file appears at its path complete, by a rename, so it is a valid `.ra` file at every
/// moment, before, during and after the writes. Others then open it with
/// [`ArrayWriter::open`] and write their blocks with
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
/// Only little-endian uncompressed files can be written in place: a big-endian or LZ4 file is
/// refused with an error saying so.
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
/// let w = ArrayWriter::create::<f32>(&path, &[4, 3, 2]).unwrap();
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
}

impl ArrayWriter {
    /// Creates (or replaces) the file at `path` for an array of `T` with `dims` (first fastest):
    /// its header, then a data section of zeros, written to a temporary file beside it and
    /// renamed over the path, so no one ever sees a partial file there.
    pub fn create<T: Element>(path: impl AsRef<Path>, dims: &[u64]) -> Result<ArrayWriter> {
        if T::PACKED_SIZE == 0 {
            return Err(Error::unsupported(format!(
                "{} is zero-sized: a .ra element needs at least one byte",
                std::any::type_name::<T>()
            )));
        }
        let mut file_dims = Vec::with_capacity(dims.len() + 1);
        T::inner_dims(&mut file_dims);
        file_dims.extend_from_slice(dims);
        let header = Header::new(T::ELTYPE, T::ELBYTE as u64, file_dims)?;
        ArrayWriter::create_with_header(path.as_ref(), header)
    }

    /// Creates the file at `path` for the array a little-endian uncompressed `header` describes
    /// (any element type: see [`create`](ArrayWriter::create)).
    pub fn create_with_header(path: impl AsRef<Path>, header: Header) -> Result<ArrayWriter> {
        let path = path.as_ref();
        header.validate()?;
        check_writable(&header)?;
        // The path's rules for replacing a file: a file another writer holds (block writers
        // included) is not replaced, nor a special file; a new file gets ordinary permissions.
        let mut atomic = AtomicFile::create(path)?;
        write_all_at(atomic.file(), &header.encode(), 0)?;
        atomic
            .file()
            .set_len(header.encoded_len() as u64 + header.size)?;
        // Not synced: a power cut can lose only this new, still empty array (`finish` syncs).
        let file = atomic.commit_open_shared(false)?;
        Ok(ArrayWriter { file, header })
    }

    /// Opens a file made by [`ArrayWriter::create`] (or any little-endian uncompressed `.ra`
    /// file) to write blocks into it, from another thread or process. The file must hold its
    /// whole data section.
    pub fn open(path: impl AsRef<Path>) -> Result<ArrayWriter> {
        let file = open_locked_shared(path.as_ref())?;
        let header = stable_header(&file)?;
        check_writable(&header)?;
        header.check_input_len(file.metadata()?.len())?;
        Ok(ArrayWriter { file, header })
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
        self.write_runs(&plan, &bytes)
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
        self.write_runs(&plan, bytes)
    }

    fn write_runs(&self, plan: &SubsetPlan, bytes: &[u8]) -> Result<()> {
        let run = data::to_usize(plan.run_len())?;
        if run == 0 {
            return Ok(());
        }
        let base = self.header.encoded_len() as u64;
        for (r, chunk) in plan.runs().zip(bytes.chunks_exact(run)) {
            write_all_at(&self.file, chunk, base + r.start)?;
        }
        Ok(())
    }

    /// Syncs what this writer wrote (and the file's size) to disk, keeping the writer open.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_all()?;
        Ok(())
    }

    /// Syncs and closes the file. Each process syncs its own writes; once every writer has
    /// finished, the file holds the whole array.
    pub fn finish(self) -> Result<()> {
        self.sync()
    }
}

/// An error unless blocks of a file with `header` can be written in place.
fn check_writable(header: &Header) -> Result<()> {
    if header.is_compressed() || header.is_big_endian() {
        let what = match (header.is_big_endian(), header.is_compressed()) {
            (true, true) => "big-endian and LZ4-compressed",
            (true, false) => "big-endian",
            _ => "LZ4-compressed",
        };
        return Err(Error::unsupported(format!(
            "blocks can be written in place only in little-endian uncompressed files; this one is {what} (rewrite it first: ra decompress, ra convert)"
        )));
    }
    Ok(())
}
