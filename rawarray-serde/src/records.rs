//! Appending records to a `.ra` file as a simulation runs, crash-safely ([`RecordWriter`], whose
//! docs describe the file layout and the order of writes), and repairing a file whose last
//! flush was cut short ([`recover`]). The mapped reader is [`RecordReader`].

use std::fs::File;
use std::marker::PhantomData;
use std::path::Path;

use serde::Serialize;

use crate::array::RawArray;
use crate::atomic::create_atomic;
use crate::data;
use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{read_exact_at, write_all_at};
use crate::header::{checked_product, Header};
use crate::layout::{Layout, SchemaCheck};
use crate::lock::open_locked;
use crate::trailer::{
    block_len, data_end, encode_block_into, locate, probe_backward, probe_forward, Block, Probe,
    Trailer, TRAILER_FRAME, TRAILER_TAG,
};

/// Longest header updated in place: one 512-byte sector, inside the first page.
const MAX_HEADER_LEN: usize = 512;

/// Least free space left before the spare trailer copy when it moves.
const MIN_SLACK: u64 = 64 << 10;

/// Buffered record bytes at which the writer writes them out (uncommitted), unless told otherwise.
const DEFAULT_BUFFER: usize = 8 << 20;

/// Plain-old-data appends of at least this many bytes skip the buffer.
const DIRECT_WRITE: usize = 64 << 10;

/// What a completed [`RecordWriter::flush`] survives.
///
/// Either way a flush commits: readers see the records at once, and a killed process loses
/// nothing flushed. [`RecordWriter::sync`] makes what is flushed survive a power cut too,
/// whatever the setting, at the moments the caller chooses.
///
/// ```
/// use rawarray_serde::{Durability, RecordOptions};
/// let durable = RecordOptions::new().durability(Durability::Fsync);
/// assert_eq!(RecordOptions::new(), RecordOptions::new().durability(Durability::NoFsync));
/// # let _ = durable;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Each flush syncs the data, then the header (`fdatasync` twice): flushed records survive
    /// a power cut. A sync costs what the disk takes, often milliseconds, on every flush.
    Fsync,
    /// No syncs (the default): flushed records survive the writer being killed (the kernel has
    /// them, in order), not a power cut or a kernel crash, after which the header may cover
    /// records whose bytes never reached the disk.
    #[default]
    NoFsync,
}

/// How to create or reopen a record file: the dims of one record, the trailer's parameters,
/// durability, buffering, and what to do with bytes after the data that are not a trailer.
///
/// ```
/// use rawarray_serde::{Durability, RecordOptions, RecordReader, RecordWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("field.ra");
/// // A 4 x 3 field per step: the file is f64 [4, 3, steps].
/// let opts = RecordOptions::new()
///     .record_dims([4, 3])
///     .params(serde_json::json!({"dx": 0.1}))
///     .durability(Durability::NoFsync);
/// let mut w: RecordWriter<f64> = opts.create(&path).unwrap();
/// for step in 0..5 {
///     let field: Vec<f64> = (0..12).map(|k| (step * 100 + k) as f64).collect();
///     w.append_slice(&field).unwrap();
///     w.flush().unwrap();
/// }
/// assert_eq!(w.finish().unwrap().dims, [4, 3, 5]);
///
/// // Reopen with the same record dims and continue.
/// let mut w: RecordWriter<f64> = RecordOptions::new().record_dims([4, 3]).open(&path).unwrap();
/// w.append_slice(&[0.5; 12]).unwrap();
/// w.finish().unwrap();
///
/// let r = RecordReader::<f64>::open(&path).unwrap();
/// assert_eq!(r.len(), 6);
/// assert_eq!(r.slice(2..=2).unwrap()[5], 205.0); // a record of 4 x 3 values
/// assert_eq!(r.trailer().unwrap().params["dx"], 0.1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RecordOptions {
    record_dims: Vec<u64>,
    /// The parameters as JSON, or why they could not be turned into JSON (reported by
    /// `create`/`open`, so the builder stays infallible).
    params: Option<std::result::Result<serde_json::Value, String>>,
    durability: Durability,
    buffer_bytes: usize,
    drop_foreign: bool,
}

impl Default for RecordOptions {
    fn default() -> RecordOptions {
        RecordOptions::new()
    }
}

impl RecordOptions {
    /// Records of one value each, no parameters, [`Durability::NoFsync`], an 8 MiB buffer,
    /// foreign trailing bytes refused.
    pub fn new() -> RecordOptions {
        RecordOptions {
            record_dims: Vec::new(),
            params: None,
            durability: Durability::NoFsync,
            buffer_bytes: DEFAULT_BUFFER,
            drop_foreign: false,
        }
    }

    /// Whether [`RecordOptions::open`] may delete bytes after the data that are not a trailer
    /// block of this crate (another program's metadata, say). By default it refuses such a
    /// file with [`ErrorKind::ForeignTrailing`], which says how many bytes there are and what
    /// they look like.
    ///
    /// ```
    /// use rawarray_serde::{ErrorKind, RawArray, RecordOptions, RecordWriter};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// let mut bytes = RawArray::from_vec(vec![1u32, 2]).to_bytes();
    /// bytes.extend_from_slice(b"{\"note\": \"keep me\"}");
    /// std::fs::write(&path, &bytes).unwrap();
    ///
    /// let err = RecordOptions::new().open::<u32>(&path).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::ForeignTrailing { bytes: 19, .. }));
    /// assert_eq!(std::fs::read(&path).unwrap(), bytes); // untouched
    ///
    /// let mut w: RecordWriter<u32> =
    ///     RecordOptions::new().drop_foreign_trailing(true).open(&path).unwrap();
    /// w.append(&3).unwrap();
    /// w.finish().unwrap();
    /// ```
    #[must_use]
    pub fn drop_foreign_trailing(mut self, on: bool) -> RecordOptions {
        self.drop_foreign = on;
        self
    }

    /// The dims of one record in values of `T`, first fastest: `[nx, ny]` for a field per
    /// step. Empty (the default) for records of one value. The file's dims are `T`'s own dims,
    /// these, then the record count.
    #[must_use]
    pub fn record_dims(mut self, dims: impl Into<Vec<u64>>) -> RecordOptions {
        self.record_dims = dims.into();
        self
    }

    /// The trailer's parameters: any `Serialize` value (a struct of yours, a map,
    /// `serde_json::Value`), stored as JSON. On [`RecordOptions::open`] they replace the file's;
    /// unset, the file's are kept. A value JSON cannot hold (a map with non-string keys) makes
    /// `create`/`open` fail.
    #[must_use]
    pub fn params(mut self, params: impl Serialize) -> RecordOptions {
        self.params = Some(serde_json::to_value(params).map_err(|e| e.to_string()));
        self
    }

    /// The parameters as JSON, if set.
    fn params_json(&self) -> Result<Option<serde_json::Value>> {
        match &self.params {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v.clone())),
            Some(Err(why)) => Err(Error::msg(format!(
                "record parameters cannot be stored as JSON: {why}"
            ))),
        }
    }

    /// What a flush survives; see [`Durability`].
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> RecordOptions {
        self.durability = durability;
        self
    }

    /// Buffered bytes at which appending writes records out (default 8 MiB), still uncommitted
    /// until [`RecordWriter::flush`], so that memory stays bounded however long the writer goes
    /// without a flush.
    #[must_use]
    pub fn buffer_bytes(mut self, bytes: usize) -> RecordOptions {
        self.buffer_bytes = bytes.max(1);
        self
    }

    /// Creates (or replaces) a record file holding no records yet, atomically: readers that
    /// had an old file at `path` open keep reading it. The writer holds the file's exclusive
    /// lock (see [`RecordWriter`]); an existing file another writer holds is not replaced
    /// ([`ErrorKind::Locked`]), and the destination is treated as
    /// [`AtomicFile`](crate::atomic::AtomicFile) treats it (symlinks followed, special files refused).
    pub fn create<T: Element>(&self, path: impl AsRef<Path>) -> Result<RecordWriter<T>> {
        let core = self.create_core(path.as_ref(), &ElementSpec::of::<T>())?;
        Ok(RecordWriter {
            core,
            _element: PhantomData,
        })
    }

    /// [`RecordOptions::create`] for an element described at run time: a writer of packed
    /// record bytes ([`DynRecordWriter`]), for tools and bindings that learn the type late.
    ///
    /// ```
    /// use rawarray_serde::{ElementSpec, Element, RecordOptions, RecordReader};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("dyn.ra");
    /// let spec = ElementSpec::from_layout(<[u16; 2] as Element>::layout()).unwrap();
    /// let mut w = RecordOptions::new().create_dyn(&path, &spec).unwrap();
    /// w.append_bytes(&[1, 0, 2, 0, 3, 0, 4, 0]).unwrap(); // two records of [u16; 2]
    /// w.finish().unwrap();
    /// let r = RecordReader::<[u16; 2]>::open(&path).unwrap();
    /// assert_eq!(r.get(1).unwrap(), Some([3, 4]));
    /// ```
    pub fn create_dyn(
        &self,
        path: impl AsRef<Path>,
        spec: &ElementSpec,
    ) -> Result<DynRecordWriter> {
        Ok(DynRecordWriter {
            core: self.create_core(path.as_ref(), spec)?,
        })
    }

    fn create_core(&self, path: &Path, spec: &ElementSpec) -> Result<Writer> {
        let mut dims = spec.inner_dims.clone();
        dims.extend_from_slice(&self.record_dims);
        dims.push(0);
        let header = Header::new(spec.eltype, spec.elbyte, dims)?;
        check_header_len(&header)?;
        let shape = RecordShape::of_spec(spec, &header, Some(&self.record_dims))?;
        let params = self.params_json()?.unwrap_or_default();
        let trailer = Trailer::new(params)?.with_schema(spec.layout.clone());
        let json = trailer.to_json();
        let end = data_end(&header);
        let sync = self.durability == Durability::Fsync;
        let file = create_atomic(path, sync, |f| {
            let mut bytes = header.encode();
            encode_block_into(&json, end, &mut bytes);
            Ok(write_all_at(f, &bytes, 0)?)
        })?;
        Ok(Writer::new(file, header, shape, trailer, json, self))
    }

    /// Opens a record file to append to it. Its element type and leading dims must be `T`'s
    /// and these record dims, and its trailer schema (if any) `T`'s; otherwise the error names
    /// what differs. Its byte order is kept. The file is first left as [`RecordWriter::finish`]
    /// leaves it (see [`RecordWriter`]).
    ///
    /// Fails at once with [`ErrorKind::Locked`] if another writer holds the file, and with
    /// [`ErrorKind::ForeignTrailing`] if bytes after its data are not a trailer block (unless
    /// [`RecordOptions::drop_foreign_trailing`]). A symlink is followed; anything but a regular
    /// file is refused.
    pub fn open<T: Element>(&self, path: impl AsRef<Path>) -> Result<RecordWriter<T>> {
        let core = self.open_core(path.as_ref(), &ElementSpec::of::<T>(), true)?;
        Ok(RecordWriter {
            core,
            _element: PhantomData,
        })
    }

    /// [`RecordOptions::open`] for an element described at run time; see
    /// [`RecordOptions::create_dyn`]. A big-endian file is refused: [`DynRecordWriter`] takes
    /// little-endian record bytes, and only a typed writer knows how to swap them.
    pub fn open_dyn(&self, path: impl AsRef<Path>, spec: &ElementSpec) -> Result<DynRecordWriter> {
        let core = self.open_core(path.as_ref(), spec, false)?;
        Ok(DynRecordWriter { core })
    }

    fn open_core(&self, path: &Path, spec: &ElementSpec, big_endian_ok: bool) -> Result<Writer> {
        let file = open_locked(path)?;
        let header = Header::read_from(&mut &file)?;
        // Refused before anything is written (the file is settled further down).
        if header.is_big_endian() && !big_endian_ok {
            return Err(Error::unsupported(
                "the file is big-endian: append to it through RecordWriter<T>, which swaps its values",
            ));
        }
        let shape = RecordShape::of_spec(spec, &header, Some(&self.record_dims))?;
        check_header_len(&header)?;
        let file_len = file.metadata()?.len();
        header.check_input_len(file_len)?;
        let end = data_end(&header);
        let mut trailer = match locate(&file, end, file_len) {
            Probe::Valid(b) => b.trailer,
            Probe::Absent if file_len > end && !self.drop_foreign => {
                return Err(foreign_trailing(
                    &file,
                    path,
                    end,
                    file_len,
                    "appending would delete them (RecordOptions::drop_foreign_trailing allows it)",
                ))
            }
            Probe::Absent => Trailer::new(serde_json::Value::Null)?,
            Probe::Damaged(why) => {
                return Err(ErrorKind::Trailer(format!(
                    "{why}; its parameters would be lost by appending (replace the trailer with \
                     DynArray::set_trailer first)"
                ))
                .into())
            }
        };
        // The library's one schema check: fields must match, a record name may differ (a file
        // written from numpy has none), and the file keeps the schema it has.
        match trailer.schema.clone() {
            Some(schema) => {
                spec.layout.check_against(&schema, SchemaCheck::Fields)?;
                trailer = trailer.with_schema(schema);
            }
            None => trailer = trailer.with_schema(spec.layout.clone()),
        }
        if let Some(params) = self.params_json()? {
            trailer.params = params;
        }
        let json = trailer.to_json();
        let spare = probe_backward(&file, end, file_len)
            .valid()
            .map(|b| b.start);
        let sync = self.durability == Durability::Fsync;
        settle(&file, end, &json, file_len, spare, sync)?;
        Ok(Writer::new(file, header, shape, trailer, json, self))
    }
}

/// What one record is in a file: its dims, values and bytes.
#[derive(Clone, Debug)]
pub(crate) struct RecordShape {
    /// Dims of one record in values of the element type.
    pub dims: Vec<u64>,
    /// Values of the element type per record.
    pub values: usize,
    /// Bytes per record.
    pub bytes: u64,
}

impl RecordShape {
    /// The record shape of a file holding values of `T`; see [`RecordShape::of_spec`].
    pub fn of<T: Element>(header: &Header, expected: Option<&[u64]>) -> Result<RecordShape> {
        RecordShape::of_spec(&ElementSpec::of::<T>(), header, expected)
    }

    /// The record shape of a file holding values of `spec`, whose record dims must be
    /// `expected` if given. Compressed files and headers without a last dim to grow are
    /// refused.
    pub fn of_spec(
        spec: &ElementSpec,
        header: &Header,
        expected: Option<&[u64]>,
    ) -> Result<RecordShape> {
        if header.is_compressed() {
            return Err(Error::unsupported(
                "the file is LZ4-compressed: its records cannot be appended to or mapped \
                 (rewrite it uncompressed with DynArray first)",
            ));
        }
        let dims = spec.element_dims(header)?;
        let inner = &spec.inner_dims;
        let Some((_, record_dims)) = dims.split_last() else {
            return Err(ErrorKind::DimsMismatch {
                expected: format!(
                    "a record count after the element's own dims {inner:?}, as the last dim"
                ),
                found: header.dims.clone(),
            }
            .into());
        };
        if let Some(want) = expected.filter(|&w| w != record_dims) {
            let lead: Vec<u64> = inner.iter().chain(want).copied().collect();
            return Err(ErrorKind::DimsMismatch {
                expected: format!(
                    "leading dims {lead:?} (records of {want:?} values of {}), then the record count",
                    spec.name
                ),
                found: header.dims.clone(),
            }
            .into());
        }
        // Validated dims fit in a u64 byte count, but a usize may be narrower.
        let value_bytes = spec.value_bytes();
        let sizes = record_dims
            .iter()
            .try_fold(1usize, |a, &d| {
                usize::try_from(d).ok().and_then(|d| a.checked_mul(d))
            })
            .and_then(|values| Some((values, values.checked_mul(value_bytes)?)));
        let (values, bytes) = sizes.ok_or(ErrorKind::DataLenOverflow {
            elbyte: value_bytes as u64,
            dims: record_dims.to_vec(),
        })?;
        Ok(RecordShape {
            dims: record_dims.to_vec(),
            values,
            bytes: bytes as u64,
        })
    }
}

/// What one value of a record file is, known at run time: the facts [`RecordWriter<T>`] takes
/// from `T: Element` (element type, size, own dims, layout), for writers whose type is chosen
/// when the program runs ([`DynRecordWriter`]: the Python package, tools).
///
/// ```
/// use rawarray_serde::{ElType, Element, ElementSpec};
/// let spec = ElementSpec::from_layout(<[f64; 3] as Element>::layout()).unwrap();
/// assert_eq!(spec, ElementSpec::of::<[f64; 3]>());
/// assert_eq!((spec.eltype(), spec.elbyte(), spec.inner_dims()), (ElType::Float, 8, &[3][..]));
/// ```
#[derive(Clone, Debug)]
pub struct ElementSpec {
    eltype: ElType,
    elbyte: u64,
    /// The value's own dims, first fastest (`[3]` for `[f64; 3]`).
    inner_dims: Vec<u64>,
    layout: Layout,
    /// For messages: the Rust type's name, or what the layout describes.
    name: String,
}

/// Two specs are equal when they describe the same values; the names in messages may differ.
impl PartialEq for ElementSpec {
    fn eq(&self, other: &ElementSpec) -> bool {
        (self.eltype, self.elbyte, &self.inner_dims, &self.layout)
            == (other.eltype, other.elbyte, &other.inner_dims, &other.layout)
    }
}

impl ElementSpec {
    /// The spec of a Rust element type.
    pub fn of<T: Element>() -> ElementSpec {
        let mut inner_dims = Vec::new();
        T::inner_dims(&mut inner_dims);
        ElementSpec {
            eltype: T::ELTYPE,
            elbyte: T::ELBYTE as u64,
            inner_dims,
            layout: T::layout(),
            name: std::any::type_name::<T>().to_string(),
        }
    }

    /// The spec of values laid out as `layout` (validated first: a schema from a file or a
    /// user is not trusted). Fixed arrays of a scalar or record become the value's own dims, as
    /// `[T; N]` does.
    pub fn from_layout(layout: Layout) -> Result<ElementSpec> {
        layout.validate()?;
        let (base, shape) = layout.split_shape();
        let (eltype, elbyte) = match base {
            Layout::Scalar { eltype, elbyte, .. } => (*eltype, *elbyte),
            Layout::Record { .. } => (ElType::User, base.size()),
            Layout::Array { .. } => unreachable!("split_shape strips every array"),
        };
        let inner_dims: Vec<u64> = shape.into_iter().rev().collect();
        let name = match base {
            Layout::Record { name, .. } => format!("record {name}"),
            _ => crate::eltype::type_label(eltype, elbyte),
        };
        Ok(ElementSpec {
            eltype,
            elbyte,
            inner_dims,
            layout,
            name,
        })
    }

    /// The element type of the file's header.
    pub fn eltype(&self) -> ElType {
        self.eltype
    }

    /// The elbyte of the file's header.
    pub fn elbyte(&self) -> u64 {
        self.elbyte
    }

    /// The value's own dims, first fastest; they lead the file's dims.
    pub fn inner_dims(&self) -> &[u64] {
        &self.inner_dims
    }

    /// The layout stored as the trailer's schema.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Bytes of one value.
    fn value_bytes(&self) -> usize {
        self.layout.size() as usize
    }

    /// The dims of a file of these values after the value's own dims, once its element type
    /// and leading dims are checked.
    fn element_dims(&self, header: &Header) -> Result<Vec<u64>> {
        if header.eltype != self.eltype || header.elbyte != self.elbyte {
            return Err(ErrorKind::TypeMismatch {
                file_eltype: header.eltype,
                file_elbyte: header.elbyte,
                requested: self.name.clone(),
                requested_eltype: self.eltype,
                requested_elbyte: self.elbyte,
            }
            .into());
        }
        if self.value_bytes() == 0 {
            return Err(Error::unsupported(format!(
                "{} is zero-sized: a .ra element needs at least one byte",
                self.name
            )));
        }
        if !header.dims.starts_with(&self.inner_dims) {
            return Err(ErrorKind::DimsMismatch {
                expected: format!("leading dims {:?} for {}", self.inner_dims, self.name),
                found: header.dims.clone(),
            }
            .into());
        }
        Ok(header.dims[self.inner_dims.len()..].to_vec())
    }
}

/// The methods [`RecordWriter<T>`] and [`DynRecordWriter`] share, written once: both are the
/// same writer core with another way in.
macro_rules! writer_methods {
    () => {
        /// Commits the records appended so far: writes the buffer and the trailer block after them
        /// in one `pwrite`, then rewrites the header in one `pwrite` (syncing each with
        /// [`Durability::Fsync`]). When it returns, the header on disk covers every record appended.
        /// On an error the file still holds the records of the last successful flush, and flushing
        /// can be retried.
        pub fn flush(&mut self) -> Result<()> {
            self.core.flush()
        }

        /// Commits like [`Self::flush`], syncing as [`Durability::Fsync`] does (records
        /// and trailer, then the header), whatever the writer's durability: when it returns, every
        /// record appended survives a power cut.
        pub fn sync(&mut self) -> Result<()> {
            self.core.sync()
        }

        /// Flushes, then cuts the file after the trailer (dropping the free space and the spare
        /// copy) and closes it, releasing its lock. Returns the final header. The cut is after the
        /// data end of this flush: no reader has mapped anything beyond it.
        pub fn finish(mut self) -> Result<Header> {
            self.core.close()?;
            Ok(self.core.header.clone())
        }

        /// Records appended, flushed or not.
        pub fn len(&self) -> u64 {
            self.core.len()
        }

        /// Whether no record was ever appended.
        pub fn is_empty(&self) -> bool {
            self.core.len() == 0
        }

        /// Records the header on disk covers: those of the last flush.
        pub fn flushed_len(&self) -> u64 {
            self.core.flushed_len()
        }

        /// The header on disk.
        pub fn header(&self) -> &Header {
            &self.core.header
        }

        /// The dims of one record, in values of the element.
        pub fn record_dims(&self) -> &[u64] {
            &self.core.shape.dims
        }

        /// The trailer written with the records.
        pub fn trailer(&self) -> &Trailer {
            &self.core.trailer
        }
    };
}

/// Appends records to a `.ra` file crash-safely: a crash loses at most the records appended
/// since the last [`RecordWriter::flush`], and leaves a file every reader reads.
///
/// A record file is an ordinary `.ra` array whose **last dim counts records** and grows: one
/// record is one value of `T` (dims `[n]`, or `[3, n]` for `T = [f64; 3]`), or an n-d snapshot
/// of values of `T` (dims `[nx, ny, n]` for an `[nx, ny]` field per step). Every reader of
/// `size` bytes (numpy, Julia, C) reads it as it stands at any moment. Dropping the writer
/// finishes it, ignoring errors; call [`RecordWriter::finish`] to see them.
///
/// ```
/// use rawarray_serde::{RecordReader, RecordWriter, RawArray};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("orbit.ra");
/// let mut w = RecordWriter::<[f64; 3]>::create(&path, serde_json::json!({"dt": 0.1})).unwrap();
/// for step in 0..100 {
///     let t = step as f64 * 0.1;
///     w.append(&[t.cos(), t.sin(), t]).unwrap();
///     if step % 10 == 9 {
///         w.flush().unwrap(); // the header on disk now covers these records
///     }
/// }
/// w.finish().unwrap();
///
/// // Any reader of .ra files sees an f64 [3, 100] array.
/// let all: RawArray<f64> = RawArray::read_file(&path).unwrap();
/// assert_eq!(all.dims(), [3, 100]);
/// let r = RecordReader::<[f64; 3]>::open(&path).unwrap();
/// assert_eq!(r.get(10).unwrap().unwrap()[2], 1.0);
/// ```
///
/// # The file while it is written
///
/// ```text
/// header(n) | data: n records | trailer block | free space (a hole) | spare trailer block
///                              ^ the data end                        ^ the end of the file
/// ```
///
/// The [trailer](crate::Trailer) (parameters and schema) is kept twice: the *forward* copy at
/// the data end, and a *spare* copy at the end of the file (the two coincide when there is no
/// free space, as after [`RecordWriter::finish`]). Invariant: **the header is always valid and
/// describes only records written before it (and synced before it, with
/// [`Durability::Fsync`]), and at every instant at least one of the two copies is valid** (the
/// reader tries the end of the file, then the data end: both O(1)).
///
/// Appended records `R` go after the data end, uncommitted: packed into a reused buffer (one
/// copy for plain-old-data elements), or for plain-old-data slices of 64 KiB or more written
/// straight from the caller's memory. [`RecordWriter::flush`] commits them, with `B` the block:
///
/// 1. whenever bytes are about to be written that, with a block after them, would reach the
///    spare copy, a new spare copy is first written further out (leaving free space of 1/8 of
///    the data, at least 64 KiB: a sparse hole on most file systems), and synced (with
///    [`Durability::Fsync`], as the syncs below).
/// 2. the records still in the buffer, then `B`, are written after the records already written,
///    in one `pwrite`, and synced. Record writes clobber only the forward copy of the old
///    header; the spare copy lies beyond them.
/// 3. the header, with the new last dim and `size`, is written in one `pwrite` at offset 0, and
///    synced. A header is at most 512 bytes (58 dims), inside one page and one disk sector, so
///    no kill can tear it; if it is not written, the old header still describes complete data.
///
/// A process killed anywhere leaves a file whose header describes the records of the last
/// completed flush, or those of the flush under way if step 3 was reached. With
/// [`Durability::NoFsync`] (the default) the syncs are skipped: a killed process loses nothing
/// the kernel has (its page cache keeps the writes' order), but a power cut may;
/// [`RecordWriter::sync`] closes that gap when the caller chooses.
///
/// [`RecordWriter::finish`] truncates the file after the forward copy (one `ftruncate`, atomic).
/// [`RecordWriter::open`] leaves a file the same way before appending: a valid spare is made
/// if needed, the forward copy written, then the rest cut off. Records a lost header update
/// left after the data are dropped then; call [`recover`] first to keep them.
///
/// # One writer at a time
///
/// A writer holds the file's exclusive advisory lock (`flock`) from create or open until it is
/// finished or dropped. A second writer, in this process or another, fails within a fifth of a second (a
/// just-closed handle's lock can outlive it for a moment in a forked child) with
/// [`ErrorKind::Locked`]; so do [`recover`], [`RecordOptions::create`] over the file, and every
/// replacement through [`AtomicFile`](crate::atomic::AtomicFile) (`write_file`, `to_file`, `ra`'s
/// rewrites). Readers take no lock and are never blocked. Since no other writer can interleave,
/// nothing cuts the file below a data end a reader may have mapped: [`RecordWriter::finish`]
/// and `open` cut only after the data end of the latest flush.
///
/// ```
/// use rawarray_serde::{ErrorKind, RecordWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("log.ra");
/// let mut first = RecordWriter::<u64>::create(&path, serde_json::Value::Null).unwrap();
/// let second = RecordWriter::<u64>::open(&path).unwrap_err();
/// assert!(matches!(second.kind(), ErrorKind::Locked { .. }));
/// first.append(&1).unwrap();
/// first.finish().unwrap();
/// RecordWriter::<u64>::open(&path).unwrap(); // free again
/// ```
#[derive(Debug)]
pub struct RecordWriter<T: Element> {
    core: Writer,
    _element: PhantomData<fn(&T)>,
}

impl<T: Element> RecordWriter<T> {
    /// Creates (or atomically replaces) a file of records of one `T` each, with `params` in
    /// its trailer; see [`RecordOptions`] for the rest.
    pub fn create(path: impl AsRef<Path>, params: impl Serialize) -> Result<RecordWriter<T>> {
        RecordOptions::new().params(params).create(path)
    }

    /// Opens a file of records of one `T` each to append to it, keeping its parameters.
    pub fn open(path: impl AsRef<Path>) -> Result<RecordWriter<T>> {
        RecordOptions::new().open(path)
    }

    /// Appends one record (for files whose records are one value each).
    pub fn append(&mut self, record: &T) -> Result<()> {
        self.append_slice(std::slice::from_ref(record))
    }

    /// Appends whole records: `values.len()` must be a multiple of the values per record.
    ///
    /// Records are not committed until [`RecordWriter::flush`]. A slice of plain-old-data
    /// records of 64 KiB or more is written at once, straight from `values`; smaller ones are
    /// packed into the buffer, which is written out (still uncommitted) when it holds
    /// [`buffer_bytes`](RecordOptions::buffer_bytes).
    pub fn append_slice(&mut self, values: &[T]) -> Result<()> {
        let per = self.core.shape.values;
        if per == 0 || !values.len().is_multiple_of(per) {
            return Err(Error::unsupported(format!(
                "{} values are not whole records: a record of this file is {:?}, {per} values",
                values.len(),
                self.core.shape.dims
            )));
        }
        if !self.core.big_endian {
            if let Some(bytes) = T::as_pod_bytes(values).filter(|b| b.len() >= DIRECT_WRITE) {
                self.core.write_pending()?;
                self.core.write_ahead(bytes)?;
                self.core.pending_records += (values.len() / per) as u64;
                return Ok(());
            }
        }
        let chunk = (self.core.buffer_bytes / (per * T::PACKED_SIZE)).max(1) * per;
        for part in values.chunks(chunk) {
            self.pack(part);
            self.core.pending_records += (part.len() / per) as u64;
            if self.core.pending.len() >= self.core.buffer_bytes {
                self.core.write_pending()?;
            }
        }
        Ok(())
    }

    /// Appends an array of records: dims equal to the record dims (one record), or the record
    /// dims followed by a count.
    pub fn append_array(&mut self, records: &RawArray<T>) -> Result<()> {
        let (dims, want) = (records.dims(), &self.core.shape.dims[..]);
        if dims != want && !(dims.len() == want.len() + 1 && dims.starts_with(want)) {
            return Err(ErrorKind::DimsMismatch {
                expected: format!("{want:?} (one record), or {want:?} then a record count"),
                found: dims.to_vec(),
            }
            .into());
        }
        self.append_slice(records.as_slice())
    }

    fn pack(&mut self, values: &[T]) {
        if !self.core.big_endian {
            if let Some(bytes) = T::as_pod_bytes(values) {
                self.core.pending.extend_from_slice(bytes);
                return;
            }
        }
        let start = self.core.pending.len();
        self.core
            .pending
            .resize(start + values.len() * T::PACKED_SIZE, 0);
        data::pack_into(
            values,
            self.core.big_endian,
            &mut self.core.pending[start..],
        );
    }

    writer_methods!();
}

/// Appends records given as packed little-endian bytes, for an element described at run time
/// ([`ElementSpec`]): the same file, lock and crash safety as [`RecordWriter<T>`], whose docs
/// describe them. Made by [`RecordOptions::create_dyn`] and [`RecordOptions::open_dyn`].
#[derive(Debug)]
pub struct DynRecordWriter {
    core: Writer,
}

impl DynRecordWriter {
    /// Appends whole records: `bytes` holds them packed, little-endian, as the trailer's schema
    /// lays them out, and its length must be a multiple of the record size. Not committed until
    /// [`DynRecordWriter::flush`].
    pub fn append_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let record = self.core.shape.bytes;
        if record == 0 || !(bytes.len() as u64).is_multiple_of(record) {
            return Err(Error::unsupported(format!(
                "{} bytes are not whole records of {record} bytes",
                bytes.len()
            )));
        }
        let records = bytes.len() as u64 / record;
        if bytes.len() >= DIRECT_WRITE {
            self.core.write_pending()?;
            self.core.write_ahead(bytes)?;
            self.core.pending_records += records;
        } else {
            // Counted with the bytes, before writing them out: if that write fails they stay
            // pending, and the next flush must count them (as the typed writer does).
            self.core.pending.extend_from_slice(bytes);
            self.core.pending_records += records;
            if self.core.pending.len() >= self.core.buffer_bytes {
                self.core.write_pending()?;
            }
        }
        Ok(())
    }

    writer_methods!();

    /// Bytes of one record.
    pub fn record_bytes(&self) -> u64 {
        self.core.shape.bytes
    }
}

/// The writer itself, for records of any element: [`RecordWriter<T>`] packs values of `T` into
/// it, [`DynRecordWriter`] hands it packed bytes.
#[derive(Debug)]
struct Writer {
    file: File,
    /// The header on disk: the records of the last flush.
    header: Header,
    shape: RecordShape,
    big_endian: bool,
    trailer: Trailer,
    /// The trailer's JSON, encoded once; blocks are framed around it at each flush.
    json: Vec<u8>,
    /// Offset of the spare trailer copy; equal to the data end when the two copies coincide.
    spare_at: u64,
    /// Bytes of records already written after the data end, not yet committed.
    ahead: u64,
    /// Packed records not yet written (the block is appended to them while flushing).
    pending: Vec<u8>,
    /// Records not yet committed: those written ahead and those pending.
    pending_records: u64,
    durability: Durability,
    buffer_bytes: usize,
    closed: bool,
}

impl Writer {
    fn new(
        file: File,
        header: Header,
        shape: RecordShape,
        trailer: Trailer,
        json: Vec<u8>,
        opts: &RecordOptions,
    ) -> Writer {
        Writer {
            file,
            big_endian: header.is_big_endian(),
            spare_at: data_end(&header),
            header,
            shape,
            trailer,
            json,
            ahead: 0,
            pending: Vec::new(),
            pending_records: 0,
            durability: opts.durability,
            buffer_bytes: opts.buffer_bytes,
            closed: false,
        }
    }

    /// Writes the buffer after the records already written ahead, uncommitted.
    fn write_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let written = self.write_ahead(&pending);
        self.pending = pending;
        written?;
        self.pending.clear();
        Ok(())
    }

    /// Writes record bytes after those already written ahead, uncommitted (they replace the
    /// forward trailer copy; the spare copy stays valid beyond them).
    fn write_ahead(&mut self, bytes: &[u8]) -> Result<()> {
        let at = self.data_end() + self.ahead;
        self.reserve(at + bytes.len() as u64)?;
        write_all_at(&self.file, bytes, at)?;
        self.ahead += bytes.len() as u64;
        Ok(())
    }

    /// Keeps the bytes up to `end`, and a trailer block after them, clear of the spare copy:
    /// if they would reach it, a new spare copy is written (and synced) further out, leaving
    /// free space of 1/8 of the data, at least 64 KiB.
    fn reserve(&mut self, end: u64) -> Result<()> {
        let sync = self.durability == Durability::Fsync;
        let header_len = self.header.encoded_len() as u64;
        reserve_spare(
            &self.file,
            &self.json,
            header_len,
            &mut self.spare_at,
            end,
            sync,
        )
    }

    /// Commits the records appended so far: writes the buffer and the trailer block after them
    /// in one `pwrite`, syncs, then rewrites the header in one `pwrite` and syncs (with
    /// [`Durability::Fsync`]). When it returns, the header on disk covers every record appended.
    /// On an error the file still holds the records of the last successful flush, and flushing
    /// can be retried.
    fn flush(&mut self) -> Result<()> {
        if self.pending_records == 0 {
            return Ok(());
        }
        let at = self.data_end() + self.ahead;
        let buffered = self.pending.len();
        let new_end = at + buffered as u64;
        self.reserve(new_end)?;
        encode_block_into(&self.json, new_end, &mut self.pending);
        let written = write_all_at(&self.file, &self.pending, at);
        self.pending.truncate(buffered);
        written?;
        self.sync_if_durable()?;
        let mut header = self.header.clone();
        let records = header.records().expect("record files have a last dim");
        header.set_records(records + self.pending_records)?;
        debug_assert_eq!(header.size, self.header.size + self.ahead + buffered as u64);
        write_all_at(&self.file, &header.encode(), 0)?;
        self.sync_if_durable()?;
        self.header = header;
        self.ahead = 0;
        self.pending.clear();
        self.pending_records = 0;
        Ok(())
    }

    /// Commits like [`RecordWriter::flush`], syncing as [`Durability::Fsync`] does (records
    /// and trailer, then the header), whatever the writer's durability: when it returns, every
    /// record appended survives a power cut.
    fn sync(&mut self) -> Result<()> {
        if self.pending_records == 0 {
            return Ok(self.file.sync_data()?);
        }
        // Records flushed without syncs before are synced by this flush's first sync, before
        // its header is written.
        let durability = std::mem::replace(&mut self.durability, Durability::Fsync);
        let flushed = self.flush();
        self.durability = durability;
        flushed
    }

    fn close(&mut self) -> Result<()> {
        self.flush()?;
        let end = self.data_end();
        if self.spare_at != end {
            self.file.set_len(end + block_len(self.json.len()) as u64)?;
            self.sync_if_durable()?;
            self.spare_at = end;
        }
        self.closed = true;
        Ok(())
    }

    fn sync_if_durable(&self) -> Result<()> {
        if self.durability == Durability::Fsync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn data_end(&self) -> u64 {
        data_end(&self.header)
    }

    /// Records appended, flushed or not.
    fn len(&self) -> u64 {
        self.flushed_len() + self.pending_records
    }

    /// Records the header on disk covers: those of the last flush.
    fn flushed_len(&self) -> u64 {
        *self
            .header
            .dims
            .last()
            .expect("record files have a last dim")
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported here; the file is valid whatever happens.
            let _ = self.close();
        }
    }
}

/// Keeps the bytes up to `end`, and a trailer block after them, clear of the spare copy at
/// `spare_at`: if they would reach it, a new spare copy of `json` is written (and synced, if
/// `sync`) further out, leaving free space of 1/8 of the data after a header of `header_len`
/// bytes, at least 64 KiB. Shared by every appending writer (records, ragged rows).
pub(crate) fn reserve_spare(
    file: &File,
    json: &[u8],
    header_len: u64,
    spare_at: &mut u64,
    end: u64,
    sync: bool,
) -> Result<()> {
    let block = block_len(json.len()) as u64;
    if end + block <= *spare_at {
        return Ok(());
    }
    let data_len = end - header_len;
    let spare = (end + block + (data_len / 8).max(MIN_SLACK)).next_multiple_of(4096);
    let mut bytes = Vec::with_capacity(block as usize);
    encode_block_into(json, 0, &mut bytes);
    write_all_at(file, &bytes, spare)?;
    if sync {
        file.sync_data()?;
    }
    *spare_at = spare;
    Ok(())
}

/// Leaves a file as `header | data | block` with the block (for the data end) last, keeping a
/// valid trailer copy at every instant: a spare copy is written beyond the block first if
/// there is no valid one, then the block at the data end, then the rest is cut off.
/// `spare` is the start of a valid block at the end of the file, if there is one.
pub(crate) fn settle(
    file: &File,
    end: u64,
    json: &[u8],
    file_len: u64,
    spare: Option<u64>,
    sync: bool,
) -> Result<()> {
    let mut forward = Vec::with_capacity(block_len(json.len()));
    encode_block_into(json, end, &mut forward);
    let settled = end + forward.len() as u64;
    if file_len == settled {
        let mut current = vec![0u8; forward.len()];
        read_exact_at(file, &mut current, end)?;
        if current == forward {
            return Ok(());
        }
    }
    let sync = || -> Result<()> {
        if sync {
            file.sync_data()?;
        }
        Ok(())
    };
    if spare.is_none_or(|s| s < settled) {
        let mut block = Vec::with_capacity(forward.len());
        encode_block_into(json, 0, &mut block);
        write_all_at(file, &block, file_len.max(settled))?;
        sync()?;
    }
    write_all_at(file, &forward, end)?;
    sync()?;
    file.set_len(settled)?;
    sync()
}

/// A record file cut short (copied in part, a full disk): its header claims more records than
/// the file holds. Forced, the header is cut back to the complete records and the partial last
/// one dropped (their bytes are gone with the trailer anyway); unforced, the error says what
/// forcing would keep.
fn salvage_truncated(
    file: &File,
    mut header: Header,
    file_len: u64,
    record_bytes: u64,
    opts: &RecoverOptions,
    truncated: Error,
) -> Result<Recovery> {
    let start = header.encoded_len() as u64;
    let held = file_len.saturating_sub(start);
    let complete = held / record_bytes;
    let before = *header.dims.last().expect("the caller checked the dims");
    if !opts.force {
        return Err(Error::unsupported(format!(
            "{truncated}: the file holds {complete} complete records of the {before} its header \
             claims (force it: RecoverOptions::force, ra recover --force keeps those)"
        )));
    }
    header.set_records(complete)?;
    write_all_at(file, &header.encode(), 0)?;
    file.set_len(start + header.size)?;
    file.sync_data()?;
    Ok(Recovery {
        records_before: before,
        records_after: complete,
        trailer: false,
        bytes_removed: held - header.size,
    })
}

/// What [`recover`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// Records the header described before.
    pub records_before: u64,
    /// Records it describes now.
    pub records_after: u64,
    /// Whether the file has a trailer (kept).
    pub trailer: bool,
    /// Bytes cut from the end of the file (free space, spare copy, torn records).
    pub bytes_removed: u64,
}

/// Repairs a record file after a crash: extends the header over the complete records that
/// follow it and leaves the file as [`RecordWriter::finish`] would.
///
/// It looks for the forward trailer block of a flush whose header update was lost (see
/// [`RecordWriter`] for the layout): at the data end and at each record boundary after it, a
/// valid block whose `at` field is its own offset ([`Trailer`] describes the block). Finding one
/// `k` records on, it extends the header over those `k` records, which were written (and synced)
/// before the block. The spare copy has `at = 0`, so a spare that happens to sit on a record
/// boundary behind a torn flush is never taken for the end of complete records. Without a
/// forward block, the last flush was torn: the trailer is written back at the data end and
/// nothing is extended. A damaged trailer and no good copy is an error, and nothing is written.
/// The scan can only be fooled by record data that itself holds a valid forward trailer block
/// on a record boundary.
///
/// A file with bytes after its data but no trailer block (not written by [`RecordWriter`]:
/// another program's metadata, a hole) is not changed: the error,
/// [`ErrorKind::ForeignTrailing`], says how many bytes there are and what they look like.
/// [`recover_with`] and [`RecoverOptions::force`] extend its header over as many whole
/// records as follow its data all the same.
///
/// It holds the file's exclusive lock while it works: a file a writer is appending to is
/// refused with [`ErrorKind::Locked`] (its tail is not torn, just not committed yet).
///
/// A file written in blocks by an [`ArrayWriter`](crate::ArrayWriter) has no records to
/// extend: one whose journal holds a block that was never committed (its writer was killed) is
/// refused with [`ErrorKind::Uncommitted`], naming the blocks, and left as it is; only writing
/// those blocks again repairs it.
///
/// Works on any uncompressed `.ra` file whose last dim counts records, and on ragged files
/// (flag bit 3), whose rows count as its records: the rows of a flush whose header write was
/// lost are found through the offsets that flush wrote ([`RaggedWriter`](crate::RaggedWriter)).
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
    if crate::ragged::RaggedHeader::is_ragged(&crate::fileio::stable_header_bytes(&file)?) {
        return crate::ragged::recover_locked(&file);
    }
    let mut header = Header::read_from(&mut &file)?;
    // A file written in blocks (`ArrayWriter`) has no records to extend: a block its journal
    // says was never committed is reported, and nothing is changed.
    if let Some(blocks) = crate::journal::uncommitted(path, &file, &header)? {
        if !blocks.is_empty() {
            return Err(ErrorKind::Uncommitted {
                path: path.to_path_buf(),
                blocks,
            }
            .into());
        }
    }
    if header.is_compressed() {
        return Err(Error::unsupported(
            "the file is LZ4-compressed: it cannot have been appended to",
        ));
    }
    check_header_len(&header)?;
    let Some((&before, lead)) = header.dims.split_last() else {
        return Err(Error::unsupported(
            "the file is a scalar (no dims): it has no record count to extend",
        ));
    };
    let record_bytes = checked_product(header.elbyte, lead)
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            Error::unsupported(format!(
                "records of dims {lead:?} x elbyte {} are empty or too large",
                header.elbyte
            ))
        })?;
    let file_len = file.metadata()?.len();
    if let Err(truncated) = header.check_input_len(file_len) {
        return salvage_truncated(&file, header, file_len, record_bytes, opts, truncated);
    }
    let end = data_end(&header);
    // A file this crate's writer left always has a valid block at its end or at its data end
    // (see `RecordWriter`): without one, refuse before scanning what may be gigabytes.
    if file_len > end && !opts.force && matches!(locate(&file, end, file_len), Probe::Absent) {
        return Err(foreign_trailing(
            &file,
            path,
            end,
            file_len,
            "without a record trailer, records cannot be told from other data \
             (force it: RecoverOptions::force, ra recover --force)",
        ));
    }
    let spare = probe_backward(&file, end, file_len).valid();
    let limit = spare
        .as_ref()
        .filter(|b| b.start > end)
        .map_or(file_len, |b| b.start);
    let mut recovery = Recovery {
        records_before: before,
        records_after: before,
        trailer: true,
        bytes_removed: 0,
    };
    if let Some((k, block)) = scan_forward(&file, end, record_bytes, limit)? {
        if k > 0 {
            header.set_records(before + k)?;
            write_all_at(&file, &header.encode(), 0)?;
            file.sync_data()?;
        }
        if file_len > block.end() {
            file.set_len(block.end())?;
            file.sync_data()?;
        }
        recovery.records_after = before + k;
        recovery.bytes_removed = file_len - block.end();
        return Ok(recovery);
    }
    match locate(&file, end, file_len) {
        Probe::Valid(found) => {
            // The last flush was torn: keep the trailer, drop what follows the data.
            let json = found.trailer.to_json();
            settle(&file, end, &json, file_len, spare.map(|b| b.start), true)?;
            let settled = end + block_len(json.len()) as u64;
            recovery.bytes_removed = file_len.saturating_sub(settled);
            Ok(recovery)
        }
        Probe::Damaged(why) => Err(ErrorKind::Trailer(format!(
            "{why}; without a trailer copy, complete records cannot be told from torn ones"
        ))
        .into()),
        Probe::Absent => {
            let k = (file_len - end) / record_bytes;
            if k > 0 {
                header.set_records(before + k)?;
                write_all_at(&file, &header.encode(), 0)?;
                file.sync_data()?;
            }
            recovery.records_after = before + k;
            recovery.trailer = false;
            Ok(recovery)
        }
    }
}

/// The error for bytes after the data end that are no trailer block: how many, and what the
/// first of them look like.
fn foreign_trailing(file: &File, path: &Path, end: u64, len: u64, advice: &'static str) -> Error {
    let mut head = vec![0u8; (len - end).min(32) as usize];
    let looks_like = match read_exact_at(file, &mut head, end) {
        Ok(()) => describe_bytes(&head, len - end),
        Err(e) => format!("unreadable: {e}"),
    };
    ErrorKind::ForeignTrailing {
        path: path.to_path_buf(),
        bytes: len - end,
        looks_like,
        advice,
    }
    .into()
}

/// The first bytes of a run of `total`: quoted if printable text, zeros as such, hex otherwise.
fn describe_bytes(head: &[u8], total: u64) -> String {
    let more = if (head.len() as u64) < total {
        "..."
    } else {
        ""
    };
    let printable = |t: &str| {
        t.chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace())
    };
    match std::str::from_utf8(head) {
        _ if head.iter().all(|&b| b == 0) => format!("zeros{more}"),
        Ok(text) if printable(text) => format!("text {text:?}{more}"),
        _ => format!("bytes {}{more}", hex(head)),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The first forward block (its `at` its own offset) at `end + k * record_bytes`, lying
/// below `limit`: reads the region in windows, checking the tag at each record boundary.
fn scan_forward(
    file: &File,
    end: u64,
    record_bytes: u64,
    limit: u64,
) -> Result<Option<(u64, Block)>> {
    const WINDOW: u64 = 1 << 20;
    let smallest = 2 * TRAILER_FRAME as u64;
    let mut window = Vec::new();
    let mut window_start = 0u64;
    for k in 0u64.. {
        let Some(at) = k
            .checked_mul(record_bytes)
            .and_then(|o| o.checked_add(end))
            .filter(|&o| o.saturating_add(smallest) <= limit)
        else {
            break;
        };
        if at < window_start || at + 8 > window_start + window.len() as u64 {
            let n = if record_bytes >= WINDOW {
                8
            } else {
                WINDOW.min(limit - at)
            };
            window.resize(n as usize, 0);
            read_exact_at(file, &mut window, at)?;
            window_start = at;
        }
        let i = (at - window_start) as usize;
        if window[i..i + 8] == TRAILER_TAG {
            if let Probe::Valid(block) = probe_forward(file, at, limit) {
                if block.is_forward() {
                    return Ok(Some((k, block)));
                }
            }
        }
    }
    Ok(None)
}

/// Refuses headers too long to be rewritten with one untearable write.
pub(crate) fn check_header_len(header: &Header) -> Result<()> {
    if header.encoded_len() > MAX_HEADER_LEN {
        return Err(Error::unsupported(format!(
            "a header of {} dims ({} bytes) cannot be updated in one untearable write \
             (at most {MAX_HEADER_LEN} bytes, {} dims)",
            header.dims.len(),
            header.encoded_len(),
            (MAX_HEADER_LEN - crate::header::FIXED_HEADER_LEN) / 8
        )));
    }
    Ok(())
}
