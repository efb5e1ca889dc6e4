//! Reading n-d blocks of a `.ra` file without reading the file: [`ArrayReader`].

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::array::{element_dims, RawArray};
use crate::data;
use crate::element::Element;
use crate::error::{ErrorKind, Result};
use crate::fileio::reading;
use crate::header::{Flags, Header};
use crate::io::{MappedSection, PinnedFile, ReadAt};
use crate::mapped::{snapshot, Snapshot};
use crate::section::{Section, SectionStats, Storage};
use crate::subset::SubsetPlan;
use crate::trailer::{Probe, Trailer};

pub use crate::section::IoStats;

/// Where an [`ArrayReader`] reads: positioned reads of the file it opened (checked against
/// in-place rewrites), or its mapped data section.
pub(crate) enum Source {
    Pinned(PinnedFile),
    Mapped(MappedSection),
}

impl ReadAt for Source {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self {
            Source::Pinned(f) => f.read_exact_at(buf, offset),
            Source::Mapped(m) => m.read_exact_at(buf, offset),
        }
    }
    fn source_len(&self) -> std::io::Result<u64> {
        match self {
            Source::Pinned(f) => f.source_len(),
            Source::Mapped(m) => m.source_len(),
        }
    }
    fn state(&self) -> Result<Option<crate::io::FileState>> {
        match self {
            Source::Pinned(f) => f.state(),
            Source::Mapped(m) => m.state(),
        }
    }
    fn still_holds(&self, then: &crate::io::FileState, now: &crate::io::FileState) -> bool {
        match self {
            Source::Pinned(f) => f.still_holds(then, now),
            Source::Mapped(m) => m.still_holds(then, now),
        }
    }
    fn borrow_at(&self, offset: u64, len: u64) -> Option<&[u8]> {
        match self {
            Source::Pinned(_) => None,
            Source::Mapped(m) => m.borrow_at(offset, len),
        }
    }
    fn is_local(&self) -> bool {
        true
    }
}

/// A `.ra` file opened for reading blocks: the header and trailer are read at open (O(1) in
/// the file's size), and each [`read_subset`](ArrayReader::read_subset) reads only the bytes of
/// its block.
///
/// A subset is one `Range<u64>` per dim, in the file's dim order (the first varies fastest, as
/// `ra info` lists them). numpy lists the dims the other way round: the block
/// `[a0..b0, a1..b1, a2..b2]` of a file is `np_array[a2:b2, a1:b1, a0:b0]` in numpy.
///
/// The block's byte runs are computed once ([`SubsetPlan`]), adjacent runs merged, and read with
/// positioned reads ([`ArrayReader::open`], no map; safe while other processes write the file
/// with an [`ArrayWriter`](crate::ArrayWriter)) or copied out of a memory map
/// ([`ArrayReader::open_mapped`]). Big-endian data is swapped. A chunked file (flag bit 2, see
/// [`crate::codec`]) is read through the section decoder: a block reads and decodes only the
/// chunks it intersects, and in each only the codec blocks it touches, with a small cache of
/// decoded blocks so that repeated element reads decode nothing twice (it is never mapped).
/// An LZ4-compressed file has no
/// addressable runs: its data section is read and decompressed whole on the first read (within
/// the bound every reader of this crate applies: at most 255 plain bytes per compressed byte
/// present in the file), kept for the reads after it, and cut from.
///
/// ```
/// use rawarray_serde::{ArrayReader, RawArray};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("cube.ra");
/// let cube = RawArray::from_shape_vec(vec![4, 3, 2], (0..24).map(|i| i as f32).collect()).unwrap();
/// cube.write_file(&path).unwrap();
///
/// let r = ArrayReader::open(&path).unwrap();
/// assert_eq!(r.header().dims, [4, 3, 2]);
/// // The plane at the last index 1 (numpy: cube[1, :, :]).
/// let plane: RawArray<f32> = r.read_subset(&[0..4, 0..3, 1..2]).unwrap();
/// assert_eq!(plane.dims(), &[4, 3, 1]);
/// assert_eq!(plane.as_slice()[0], 12.0);
/// // One column: 2 values of dim 0 at (.., 2, 0) (numpy: cube[0, 2, 1:3]).
/// let col: RawArray<f32> = r.read_subset(&[1..3, 2..3, 0..1]).unwrap();
/// assert_eq!(col.as_slice(), &[9.0, 10.0]);
/// assert_eq!(r.io_stats().bytes, 4 * 12 + 4 * 2); // the blocks' bytes, not the file's
/// // Errors name the dim.
/// let err = r.read_subset::<f32>(&[0..4, 0..3, 2..3]).unwrap_err();
/// assert!(err.to_string().contains("dim 2"));
/// ```
pub struct ArrayReader {
    /// The path it was opened by, which its errors name.
    path: PathBuf,
    /// The data section, read through the file (or its map).
    section: Section<Source>,
    trailer: Option<Trailer>,
    trailer_error: Option<String>,
}

impl std::fmt::Debug for ArrayReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayReader")
            .field("path", &self.path)
            .field("section", &self.section)
            .finish_non_exhaustive()
    }
}

impl ArrayReader {
    /// Opens a file for positioned reads: validates the header, checks that the file holds the
    /// data section, and reads the trailer, if any (both O(1) in the file's size).
    ///
    /// A damaged trailer does not stop the array from being read: see
    /// [`trailer_error`](ArrayReader::trailer_error).
    pub fn open(path: impl AsRef<Path>) -> Result<ArrayReader> {
        reading(path.as_ref(), |path| {
            ArrayReader::from_file(File::open(path)?, path, false)
        })
    }

    /// Opens a file and maps its data section: blocks are copied out of the map, and
    /// `view` (feature `ndarray`) borrows it without copying.
    ///
    /// Like every memory map, this one assumes that nobody changes the mapped bytes in place
    /// or truncates the file while it is open. An [`ArrayWriter`](crate::ArrayWriter) writes in
    /// place, so do not map a file that is still being written: use [`ArrayReader::open`], whose
    /// positioned reads are safe at any time. A compressed file is not mapped (its reads
    /// decompress the section as [`ArrayReader::open`]'s do).
    pub fn open_mapped(path: impl AsRef<Path>) -> Result<ArrayReader> {
        reading(path.as_ref(), |path| {
            ArrayReader::from_file(File::open(path)?, path, true)
        })
    }

    /// [`ArrayReader::open`] over a file already open: every read is of that file (its inode),
    /// whatever its path names by then. A caller that holds one descriptor from open to close
    /// (so that a file renamed over the path cannot mix with the one it opened) builds its
    /// reader here. `path` is what its errors name; nothing is opened by it.
    ///
    /// ```
    /// use rawarray_serde::{ArrayReader, RawArray};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// RawArray::from_shape_vec(vec![3], vec![1.0f32, 2.0, 3.0]).unwrap().write_file(&path).unwrap();
    /// let r = ArrayReader::from_open_file(std::fs::File::open(&path).unwrap(), &path).unwrap();
    /// // A new file renamed over the path does not change what `r` reads.
    /// RawArray::from_shape_vec(vec![3], vec![7.0f32; 3]).unwrap().write_file(&path).unwrap();
    /// let a: RawArray<f32> = r.read_all().unwrap();
    /// assert_eq!(a.as_slice(), &[1.0, 2.0, 3.0]);
    /// ```
    pub fn from_open_file(file: File, path: impl AsRef<Path>) -> Result<ArrayReader> {
        let path = path.as_ref();
        reading(path, |path| ArrayReader::from_file(file, path, false))
    }

    fn from_file(file: File, path: &Path, map: bool) -> Result<ArrayReader> {
        // The header and the trailer probe of one moment, as `RecordReader` takes them.
        let Snapshot {
            header,
            probe,
            state,
        } = snapshot(&file)?;
        let (trailer, trailer_error) = match probe {
            Probe::Absent => (None, None),
            Probe::Damaged(why) => (None, Some(why)),
            Probe::Valid(block) => (Some(block.trailer), None),
        };
        // A compressed or chunked section is read by positioned reads (its reads decode); an
        // empty one has nothing to map.
        let mut taken = None;
        let source = if map && !Storage::of(&header).is_coded() && header.size > 0 {
            // SAFETY: memmap2 requires that the mapped bytes are not modified or truncated away
            // while mapped. The map covers the data section of the header just read, which
            // `snapshot` checked the file to hold. This crate changes those bytes in place only
            // through an `ArrayWriter`, and `open_mapped` documents that a file being written
            // that way must not be mapped (positioned reads are the way to read it meanwhile);
            // every other writer of this crate writes after the data end or renames a new file
            // over the path, leaving this one alone. Other programs editing the data in place
            // break this, as they would for any mapped file.
            Source::Mapped(unsafe { MappedSection::new(&file, &header)? })
        } else {
            let pinned = PinnedFile::pin_snapshot(file, path, &header, state)?;
            taken = Some(pinned.opened_state().clone());
            Source::Pinned(pinned)
        };
        let base = header.encoded_len() as u64;
        Ok(ArrayReader {
            path: path.to_path_buf(),
            section: Section::open_in_state(&header, source, base, taken)?,
            trailer,
            trailer_error,
        })
    }

    /// The header, as it was at open.
    pub fn header(&self) -> &Header {
        self.section.header()
    }

    /// The data section (its storage, chunks and codec: [`Section::describe`]).
    pub fn section(&self) -> &Section<impl ReadAt> {
        &self.section
    }

    /// The trailer read at open, if the file has a valid one.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Why the bytes after the data look like a trailer block but cannot be read (torn,
    /// corrupt), if so.
    pub fn trailer_error(&self) -> Option<&str> {
        self.trailer_error.as_deref()
    }

    /// Whether the data section is read through a memory map.
    pub fn is_mapped(&self) -> bool {
        matches!(self.section.source(), Source::Mapped(_))
    }

    /// The reads made so far and their bytes. For a chunked file, `reads` counts the chunks
    /// read (once per chunk per call) and `bytes` their stored (compressed) bytes read, block
    /// tables included; the config and index read at open are not counted.
    ///
    /// ```
    /// use rawarray_serde::{ArrayReader, Codec, RawArray, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let a = RawArray::from_shape_vec(vec![64, 64], (0..4096u32).collect()).unwrap();
    /// a.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![16, 16])).unwrap();
    /// let r = ArrayReader::open(&path).unwrap();
    /// let one: RawArray<u32> = r.read_subset(&[5..6, 40..41]).unwrap();
    /// assert_eq!(one.as_slice(), &[5 + 40 * 64]);
    /// assert_eq!(r.io_stats().reads, 1); // one chunk of sixteen
    /// assert!(r.io_stats().bytes < 16 * 16 * 4);
    /// ```
    pub fn io_stats(&self) -> IoStats {
        self.section.io_stats()
    }

    /// What the section has read and decoded so far (`None` for a file that is not chunked).
    pub fn section_stats(&self) -> Option<SectionStats> {
        self.section.chunk_map().map(|_| self.section.stats())
    }

    /// The plan of a subset in the file's dims and elements (see [`SubsetPlan`]): its runs and
    /// the bytes reading it costs.
    pub fn plan(&self, ranges: &[Range<u64>]) -> Result<SubsetPlan> {
        SubsetPlan::new(&self.header().dims, self.header().elbyte, ranges)
    }

    /// Reads the block `ranges` (one per dim of the array of `T`, first fastest) as an array.
    ///
    /// The element type is checked against the header as [`RawArray::read_file`] checks it.
    /// For a fixed-array element such as `[f32; 3]`, the ranges cover the array's dims after
    /// the element's own (those of [`RawArray::dims`]).
    pub fn read_subset<T: Element>(&self, ranges: &[Range<u64>]) -> Result<RawArray<T>> {
        reading(&self.path, |_| self.read_subset_of_file(ranges))
    }

    fn read_subset_of_file<T: Element>(&self, ranges: &[Range<u64>]) -> Result<RawArray<T>> {
        let plan = typed_plan::<T>(self.header(), ranges)?;
        let n = data::to_usize(plan.len())?;
        let data = match data::zeroed_pod::<T>(n)? {
            Some(mut v) => {
                self.read_planned_into(&plan, &mut v)?;
                v
            }
            None => {
                let mut bytes = data::try_zeroed_bytes(plan.bytes())?;
                self.fill(&plan, &mut bytes)?;
                data::decode_values(&bytes, self.header().is_big_endian())?
            }
        };
        RawArray::from_shape_vec(plan.dims(), data)
    }

    /// Reads the block `ranges` into `out`, which must hold exactly its number of elements, in
    /// column-major order.
    ///
    /// ```
    /// use rawarray_serde::{ArrayReader, RawArray};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("m.ra");
    /// RawArray::from_shape_vec(vec![3, 2], vec![1u16, 2, 3, 4, 5, 6]).unwrap().write_file(&path).unwrap();
    /// let r = ArrayReader::open(&path).unwrap();
    /// let mut row = [0u16; 2];
    /// r.read_subset_into(&[1..2, 0..2], &mut row).unwrap();
    /// assert_eq!(row, [2, 5]);
    /// ```
    pub fn read_subset_into<T: Element>(&self, ranges: &[Range<u64>], out: &mut [T]) -> Result<()> {
        reading(&self.path, |_| {
            let plan = typed_plan::<T>(self.header(), ranges)?;
            self.read_planned_into(&plan, out)
        })
    }

    /// Reads the whole array (one run).
    pub fn read_all<T: Element>(&self) -> Result<RawArray<T>> {
        reading(&self.path, |_| {
            // An empty array's section is still decoded (a few bytes), as every whole read
            // decodes it: damaged, it is refused, not read as no elements.
            if self.header().data_len() == 0 {
                self.section.read_all_into(&mut [])?;
            }
            let dims = element_dims::<T>(self.header())?;
            let ranges: Vec<Range<u64>> = dims.iter().map(|&d| 0..d).collect();
            self.read_subset_of_file(&ranges)
        })
    }

    fn read_planned_into<T: Element>(&self, plan: &SubsetPlan, out: &mut [T]) -> Result<()> {
        check_out_len(plan, out.len())?;
        let big_endian = self.header().is_big_endian();
        if let Some(bytes) = T::as_pod_bytes_mut(out) {
            self.fill(plan, bytes)?;
            if big_endian {
                data::swap_values::<T>(bytes);
            }
            return Ok(());
        }
        let mut bytes = data::try_zeroed_bytes(plan.bytes())?;
        self.fill(plan, &mut bytes)?;
        decode_into_slice(&bytes, big_endian, out)
    }

    /// Reads the block `ranges` of any element type: the block's header (its dims; little-endian
    /// and uncompressed) and its data bytes, little-endian (user-defined elements of a
    /// big-endian file keep their bytes, and the header says big-endian, as
    /// [`DynArray`](crate::DynArray) does). The pair is a valid `.ra` file once encoded.
    ///
    /// ```
    /// use rawarray_serde::{ArrayReader, RawArray, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("be.ra");
    /// let a = RawArray::from_shape_vec(vec![2, 2], vec![1i32, 2, 3, 4]).unwrap();
    /// a.write_file_with(&path, &WriteOptions::new().big_endian(true)).unwrap();
    /// let (h, bytes) = ArrayReader::open(&path).unwrap().read_subset_bytes(&[0..2, 1..2]).unwrap();
    /// assert_eq!(h.dims, [2, 1]);
    /// assert!(!h.is_big_endian());
    /// assert_eq!(bytes, [3, 0, 0, 0, 4, 0, 0, 0]);
    /// ```
    pub fn read_subset_bytes(&self, ranges: &[Range<u64>]) -> Result<(Header, Vec<u8>)> {
        reading(&self.path, |_| {
            let plan = self.plan(ranges)?;
            let mut bytes = data::try_zeroed_bytes(plan.bytes())?;
            self.fill(&plan, &mut bytes)?;
            Ok(block_header_and_bytes(self.header(), &plan, bytes))
        })
    }

    /// The bytes `fields` (`(offset, width)` inside an element) of every element of the
    /// block `ranges` (as [`ArrayReader::read_subset_bytes`] takes them), one buffer per
    /// field, as stored; or `None` when the file's storage cannot decode fields alone
    /// ([`Section::read_box_fields`](crate::section::Section::read_box_fields)): then read
    /// whole elements.
    ///
    /// # Byte order
    ///
    /// The bytes are the file's, in its byte order (unlike [`ArrayReader::read_subset_bytes`],
    /// which swaps scalar elements to little-endian): a big-endian file's fields are big-endian.
    ///
    /// ```
    /// use rawarray_serde::{ArrayReader, Codec, RaRecord, RecordOptions, WriteOptions};
    /// #[derive(RaRecord, Clone)]
    /// struct Body { step: u64, mass: f64, energy: f64 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let opts = WriteOptions::chunked().codec(Codec::Zstd).split(true);
    /// let mut w = RecordOptions::new().storage(opts).create::<Body>(&path).unwrap();
    /// for step in 0..100 { w.append(&Body { step, mass: 1.0, energy: 0.5 }).unwrap(); }
    /// w.finish().unwrap();
    ///
    /// let r = ArrayReader::open(&path).unwrap();
    /// let cols = r.read_subset_fields(&[5..7], &[(0, 8)]).unwrap().unwrap();
    /// assert_eq!(cols[0], [5u64, 6].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    /// ```
    pub fn read_subset_fields(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        reading(&self.path, |_| {
            let plan = self.plan(ranges)?;
            self.section
                .read_box_fields(&header_ranges(self.header(), &plan), fields)
        })
    }

    /// Reads the plan's block, as stored (byte order unchanged), into `dst`: the plan is over
    /// the dims of its element type, the section's over the header's.
    fn fill(&self, plan: &SubsetPlan, dst: &mut [u8]) -> Result<()> {
        debug_assert_eq!(dst.len() as u64, plan.bytes());
        if plan.is_empty() {
            return Ok(());
        }
        if plan.is_whole() {
            return self.section.read_all_into(dst);
        }
        self.section
            .read_box(&header_ranges(self.header(), plan), dst)
    }
}

/// The plan of `ranges` over the array of `T` a file with `header` holds, the type checked.
pub(crate) fn typed_plan<T: Element>(header: &Header, ranges: &[Range<u64>]) -> Result<SubsetPlan> {
    let dims = element_dims::<T>(header)?;
    SubsetPlan::new(&dims, T::PACKED_SIZE as u64, ranges)
}

/// The plan's ranges over the header's dims: the plan is over the dims of its element type,
/// and a fixed-array element's own dims, which lead the header's, are read whole.
pub(crate) fn header_ranges(header: &Header, plan: &SubsetPlan) -> Vec<Range<u64>> {
    let inner = header.dims.len() - plan.array_dims().len();
    header.dims[..inner]
        .iter()
        .map(|&d| 0..d)
        .chain(plan.ranges().iter().cloned())
        .collect()
}

/// An error unless a buffer of `len` values holds the plan's block exactly.
pub(crate) fn check_out_len(plan: &SubsetPlan, len: usize) -> Result<()> {
    if plan.len() != len as u64 {
        return Err(ErrorKind::ShapeMismatch {
            dims: plan.dims(),
            expected: plan.len(),
            len: len as u64,
        }
        .into());
    }
    Ok(())
}

/// Decodes packed values (of a file in the given byte order) into `out`, which holds exactly
/// as many; an invalid value's error gives its index in the block.
pub(crate) fn decode_into_slice<T: Element>(
    bytes: &[u8],
    big_endian: bool,
    out: &mut [T],
) -> Result<()> {
    let size = T::PACKED_SIZE.max(1);
    let mut scratch = vec![0u8; size];
    for (i, (chunk, slot)) in bytes.chunks_exact(size).zip(out.iter_mut()).enumerate() {
        let value = if big_endian {
            scratch.copy_from_slice(chunk);
            T::swap_bytes(&mut scratch);
            T::read_le(&scratch)
        } else {
            T::read_le(chunk)
        };
        *slot = value.map_err(|e| data::shift_index(e, i as u64))?;
    }
    Ok(())
}

/// The header of a block cut from a file with `header`, and its bytes put in little-endian
/// order where the element type says how (see [`ArrayReader::read_subset_bytes`]).
pub(crate) fn block_header_and_bytes(
    header: &Header,
    plan: &SubsetPlan,
    mut bytes: Vec<u8>,
) -> (Header, Vec<u8>) {
    let mut flags = Flags::NONE;
    if header.is_big_endian() && !data::swap_by_eltype(&mut bytes, header.eltype, header.elbyte) {
        flags = Flags::BIG_ENDIAN;
    }
    let h = Header {
        flags,
        eltype: header.eltype,
        elbyte: header.elbyte,
        size: bytes.len() as u64,
        dims: plan.dims(),
    };
    (h, bytes)
}

#[cfg(feature = "ndarray")]
mod nd {
    use ndarray::{ArrayD, ArrayViewD, IxDyn, ShapeBuilder, SliceInfoElem};

    use super::*;
    use crate::error::Error;

    impl ArrayReader {
        /// The whole array as an `ndarray` view of the mapped file, without copying (Fortran
        /// order: the view's axis `i` is the file's dim `i`).
        ///
        /// Needs a reader from [`ArrayReader::open_mapped`], a little-endian uncompressed file
        /// of plain-old-data elements (integers, floats, complex numbers), and data aligned for
        /// `T` (a header is a multiple of 8 bytes, so elements of up to 8 bytes always are).
        ///
        /// ```
        /// use rawarray_serde::{ArrayReader, RawArray};
        /// let dir = tempfile::tempdir().unwrap();
        /// let path = dir.path().join("v.ra");
        /// RawArray::from_shape_vec(vec![2, 3], vec![1.0f64, 2., 3., 4., 5., 6.]).unwrap().write_file(&path).unwrap();
        /// let r = ArrayReader::open_mapped(&path).unwrap();
        /// let v = r.view::<f64>().unwrap();
        /// assert_eq!(v.shape(), &[2, 3]);
        /// assert_eq!(v[[1, 2]], 6.0);
        /// ```
        #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
        pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
            let dims = element_dims::<T>(self.header())?;
            let shape = dims
                .iter()
                .map(|&d| data::to_usize(d))
                .collect::<Result<Vec<usize>>>()?;
            let h = self.header();
            let storage = Storage::of(h);
            if storage.is_coded() || h.is_big_endian() {
                return Err(Error::unsupported(format!(
                    "a view needs a little-endian plain file; this one is {}, {}{}",
                    if h.is_big_endian() {
                        "big-endian"
                    } else {
                        "little-endian"
                    },
                    storage.name(),
                    if storage.is_coded() {
                        " (read boxes of it with read_subset)"
                    } else {
                        ""
                    },
                )));
            }
            let bytes: &[u8] =
                match self.section.source() {
                    Source::Mapped(m) => m.bytes(),
                    _ if h.size == 0 => &[],
                    _ => return Err(Error::unsupported(
                        "a view needs a mapped reader: open the file with ArrayReader::open_mapped",
                    )),
                };
            let values: &[T] = if bytes.is_empty() {
                &[]
            } else {
                T::cast_pod_slice(bytes).ok_or_else(|| {
                    Error::unsupported(format!(
                        "{} cannot be viewed in place: not plain old data, or the data is not aligned for it",
                        std::any::type_name::<T>()
                    ))
                })?
            };
            ArrayViewD::from_shape(IxDyn(&shape).f(), values).map_err(Error::unsupported)
        }

        /// Reads a block given as ndarray's `s![]`, one element per dim in the file's order
        /// (Fortran order: `s![.., .., 42]` is the plane at index 42 of the last dim). An index
        /// removes its axis from the result; negative indices count from the end, as in
        /// ndarray. Steps other than 1 and new axes are errors naming the dim.
        ///
        /// ```
        /// use ndarray::s;
        /// use rawarray_serde::{ArrayReader, RawArray};
        /// let dir = tempfile::tempdir().unwrap();
        /// let path = dir.path().join("c.ra");
        /// RawArray::from_shape_vec(vec![4, 3, 2], (0..24u32).collect()).unwrap().write_file(&path).unwrap();
        /// let r = ArrayReader::open(&path).unwrap();
        /// let plane = r.read_slice::<u32, _>(s![.., .., 1]).unwrap();
        /// assert_eq!(plane.shape(), &[4, 3]);
        /// assert_eq!(plane[[1, 2]], 12 + 1 + 2 * 4);
        /// let tail = r.read_slice::<u32, _>(s![-2.., 0, ..]).unwrap();
        /// assert_eq!(tail.shape(), &[2, 2]);
        /// assert!(r.read_slice::<u32, _>(s![..;2, .., ..]).unwrap_err().to_string().contains("dim 0"));
        /// ```
        #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
        pub fn read_slice<T, I>(&self, info: I) -> Result<ArrayD<T>>
        where
            T: Element,
            I: AsRef<[SliceInfoElem]>,
        {
            let dims = element_dims::<T>(self.header())?;
            let (ranges, kept) = slice_ranges(&dims, info.as_ref())?;
            let block = self.read_subset::<T>(&ranges)?;
            let shape = kept
                .iter()
                .map(|&d| data::to_usize(ranges[d].end - ranges[d].start))
                .collect::<Result<Vec<usize>>>()?;
            ArrayD::from_shape_vec(IxDyn(&shape).f(), block.into_vec()).map_err(Error::unsupported)
        }
    }

    /// The ranges of a slice of ndarray, and the dims it keeps (those not indexed).
    pub(crate) fn slice_ranges(
        dims: &[u64],
        elems: &[SliceInfoElem],
    ) -> Result<(Vec<Range<u64>>, Vec<usize>)> {
        let axes = elems
            .iter()
            .filter(|e| !matches!(e, SliceInfoElem::NewAxis))
            .count();
        if axes != dims.len() || axes != elems.len() {
            if let Some(dim) = elems
                .iter()
                .position(|e| matches!(e, SliceInfoElem::NewAxis))
            {
                return Err(Error::unsupported(format!(
                    "subset dim {dim}: new axes are not supported"
                )));
            }
            return Err(ErrorKind::SubsetRank {
                expected: dims.len(),
                found: axes,
            }
            .into());
        }
        // An index counted from the end (negative) or from the start, as ndarray does.
        let resolve = |i: isize, len: u64| -> Option<u64> {
            if i < 0 {
                len.checked_sub(i.unsigned_abs() as u64)
            } else {
                Some(i as u64)
            }
        };
        let mut ranges = Vec::with_capacity(dims.len());
        let mut kept = Vec::with_capacity(dims.len());
        for (dim, (e, &len)) in elems.iter().zip(dims).enumerate() {
            let bad = |start: u64, end: u64| -> Error {
                ErrorKind::SubsetOutOfBounds {
                    dim,
                    start,
                    end,
                    len,
                }
                .into()
            };
            let r = match *e {
                SliceInfoElem::Slice { start, end, step } => {
                    if step != 1 {
                        return Err(Error::unsupported(format!(
                            "subset dim {dim}: step {step} is not supported (only 1)"
                        )));
                    }
                    let s = resolve(start, len).ok_or_else(|| bad(0, len))?;
                    let e = match end {
                        None => len,
                        Some(e) => resolve(e, len).ok_or_else(|| bad(s, 0))?,
                    };
                    kept.push(dim);
                    s..e
                }
                SliceInfoElem::Index(i) => {
                    let s = resolve(i, len).ok_or_else(|| bad(0, 0))?;
                    s..s.saturating_add(1)
                }
                SliceInfoElem::NewAxis => unreachable!("counted above"),
            };
            ranges.push(r);
        }
        Ok((ranges, kept))
    }
}
