//! How a record file is created or reopened: [`RecordOptions`] and [`Durability`].

use std::marker::PhantomData;
use std::path::Path;

use serde::Serialize;

use super::chunked::Chunked;
use super::commit::{check_header_len, settle};
use super::recover::foreign_trailing;
use super::spec::{ElementSpec, RecordShape};
use super::writer::{Durability, DynRecordWriter, RecordWriter, Writer};
use crate::atomic::create_atomic;
use crate::codec::{Codec, Shuffle};
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::write_all_at;
use crate::header::Header;
use crate::layout::SchemaCheck;
use crate::lock::open_locked;
use crate::options::WriteOptions;
use crate::section::Storage;
use crate::trailer::{data_end, encode_block_into, locate, probe_backward, Probe, Trailer};

/// Buffered record bytes at which the writer writes them out (uncommitted), unless told otherwise.
const DEFAULT_BUFFER: usize = 8 << 20;

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
    pub(super) record_dims: Vec<u64>,
    /// The parameters as JSON, or why they could not be turned into JSON (reported by
    /// `create`/`open`, so the builder stays infallible).
    params: Option<std::result::Result<serde_json::Value, String>>,
    pub(super) durability: Durability,
    pub(super) buffer_bytes: usize,
    pub(super) drop_foreign: bool,
    /// The chunked layout's settings, when compression is asked for.
    pub(super) chunked: Option<WriteOptions>,
    /// Threads asked for before any other compression setting.
    threads_alone: usize,
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
            chunked: None,
            threads_alone: 0,
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

    fn chunk_settings(mut self, f: impl FnOnce(WriteOptions) -> WriteOptions) -> RecordOptions {
        self.chunked = Some(f(self.chunked.take().unwrap_or_else(WriteOptions::chunked)));
        self
    }

    /// Compress the records (a new file only; [`RecordOptions::open`] keeps a file's layout):
    /// the chunked layout (flag bit 2), records compressed a chunk at a time along the last
    /// dim, each flush committing every record appended so far, as for an uncompressed file.
    /// Defaults: zstd level 3, byte shuffle (a record is shuffled whole), and chunks of the
    /// records first written out (by the first flush, or when the buffer fills), at most about
    /// 1 MiB of them: a writer that flushes at a steady pace then fills one chunk per flush,
    /// and a flush inside a chunk (which costs space, see [`RecordOptions::chunk_records`]) is
    /// rare. Until records are first written out the file is a plain empty record file. Every reader reads the file at every moment; see
    /// doc/chunked.md ("A record file's last chunk") for how a flush commits a partial chunk.
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, RawArray, RecordOptions, RecordReader, RecordWriter};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// let mut w: RecordWriter<[f32; 4]> =
    ///     RecordOptions::new().codec(Codec::Zstd).chunk_records(1000).create(&path).unwrap();
    /// for i in 0..2500u16 {
    ///     w.append(&[f32::from(i), 0.0, 1.0, 2.0]).unwrap();
    ///     if i % 700 == 0 {
    ///         w.flush().unwrap(); // readers see every record so far
    ///     }
    /// }
    /// w.finish().unwrap();
    /// assert!(std::fs::metadata(&path).unwrap().len() < 2500 * 16 / 2);
    /// let r = RecordReader::<[f32; 4]>::open(&path).unwrap();
    /// assert_eq!((r.len(), r.get(2100).unwrap().unwrap()[0]), (2500, 2100.0));
    /// assert_eq!(RawArray::<f32>::read_file(&path).unwrap().dims(), [4, 2500]);
    /// ```
    #[must_use]
    pub fn codec(self, codec: Codec) -> RecordOptions {
        self.chunk_settings(|o| o.codec(codec))
    }

    /// The codec's level (selects compression; zstd's default is 3).
    #[must_use]
    pub fn level(self, level: i32) -> RecordOptions {
        self.chunk_settings(|o| o.level(level))
    }

    /// The filter before the codec (selects compression; default byte shuffle).
    #[must_use]
    pub fn shuffle(self, shuffle: Shuffle) -> RecordOptions {
        self.chunk_settings(|o| o.shuffle(shuffle))
    }

    /// Records per chunk along the last dim (selects compression; default: the records first
    /// written out, at most about 1 MiB, see [`RecordOptions::codec`]). A flush inside a chunk writes a new version of that chunk at the end of the
    /// file, and the old one stays as dead bytes: flushing every `F` records into chunks of
    /// `C` records stores each chunk's compressed bytes about `C / 2F` extra times. A flush on
    /// a chunk boundary writes no dead bytes, so records per flush equal to (or a multiple
    /// of) `C` keep the file as small as the codec makes it.
    #[must_use]
    pub fn chunk_records(self, records: u64) -> RecordOptions {
        // One entry: the leading ones are the file's dims, set when it is created.
        self.chunk_settings(|o| o.chunks(vec![records]))
    }

    /// Threads compressing chunks (0, the default: all cores). Alone, it selects nothing.
    #[must_use]
    pub fn threads(mut self, threads: usize) -> RecordOptions {
        if let Some(o) = self.chunked.take() {
            self.chunked = Some(o.threads(threads));
        } else {
            self.threads_alone = threads;
        }
        self
    }

    /// How the records are stored ([`WriteOptions`], the one options value every writer
    /// takes): plain, or chunked with its codec, level, filters, statistics and threads (its
    /// chunk shape, if given, has the file's number of dims and covers the leading dims whole,
    /// or is one entry: the records per chunk). Whole-section LZ4 cannot be appended to and is
    /// refused when the file is created.
    ///
    /// ```
    /// use rawarray_serde::{codec::Codec, RecordOptions, RecordWriter, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let opts = RecordOptions::new().storage(WriteOptions::new().codec(Codec::Lz4).chunks(vec![256]));
    /// let mut w: RecordWriter<u64> = opts.create(&path).unwrap();
    /// w.append_slice(&[1, 2, 3]).unwrap();
    /// w.finish().unwrap();
    /// let h = rawarray_serde::Header::read_from_any(&mut std::fs::File::open(&path).unwrap()).unwrap();
    /// assert_eq!(rawarray_serde::section::Storage::of(&h).name(), "chunked");
    /// ```
    #[must_use]
    pub fn storage(mut self, opts: WriteOptions) -> RecordOptions {
        // Compressed records are always chunked: whole-section LZ4 options are kept as chunked
        // ones, and refused as compress(true) with a chunked layout where that is written.
        self.chunked = opts.storage().is_coded().then(|| opts.into_chunked());
        self
    }

    /// The chunked layout's settings in full: [`RecordOptions::storage`].
    #[deprecated(note = "use RecordOptions::storage(WriteOptions)")]
    #[doc(hidden)]
    #[must_use]
    pub fn compression(self, opts: WriteOptions) -> RecordOptions {
        self.storage(opts.into_chunked())
    }

    /// What the writer itself keeps of these options.
    fn writing(&self) -> (Durability, usize) {
        (self.durability, self.buffer_bytes)
    }

    fn chunk_options(&self) -> Option<WriteOptions> {
        self.chunked.clone().map(|o| {
            if o.get_threads() == 0 {
                o.threads(self.threads_alone)
            } else {
                o
            }
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
        let mut trailer = Trailer::new(params)?.with_schema(spec.layout.clone());
        if let Some(o) = &self.chunked {
            trailer.mark_lossy(&o.get_filters());
        }
        let json = trailer.to_json();
        let sync = self.durability == Durability::Fsync;
        let copts = self.chunk_options();
        let Some(copts) = copts.filter(|o| o.get_chunks().is_some()) else {
            // Plain, or compressed with the chunk shape chosen when records are first written
            // out: until then the file is a plain empty record file.
            let end = data_end(&header);
            let file = create_atomic(path, sync, |f| {
                let mut bytes = header.encode();
                encode_block_into(&json, end, &mut bytes);
                Ok(write_all_at(f, &bytes, 0)?)
            })?;
            let mut w = Writer::new(file, header, shape, trailer, json, self.writing(), None);
            w.deferred = self.chunk_options();
            return Ok(w);
        };
        let file = create_atomic(path, sync, |f| {
            let h = Chunked::create(f, &header, shape.bytes, &copts, Some(&spec.layout))?;
            let mut block = Vec::new();
            encode_block_into(&json, data_end(&h), &mut block);
            write_all_at(f, &block, data_end(&h))?;
            Ok(())
        })?;
        let header = Header::read_from_any(&mut &file)?;
        let chunked = Chunked::open(&file, &header, shape.bytes, copts.get_threads(), sync)?;
        Ok(Writer::new(
            file,
            header,
            shape,
            trailer,
            json,
            self.writing(),
            Some(chunked),
        ))
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
        let header = Header::read_from_any(&mut &file)?;
        let records = header.dims.last().copied().unwrap_or(0);
        // An empty plain file takes compression options (as a new one would); one that holds
        // records keeps its layout.
        let indexed = Storage::of(&header).has_chunk_index();
        let defer = self.chunked.is_some() && !indexed && records == 0;
        if self.chunked.is_some() && !indexed && !defer {
            return Err(Error::unsupported(
                "compression options given to open a file that is not compressed: a file keeps                  its layout (rewrite it compressed first, as `ra compress` does)",
            ));
        }
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
        // The chunked state first: it clears what a writer killed before its commit left in
        // the index, before `settle` cuts the bytes those entries pointed at.
        let chunked = if indexed {
            let threads = self
                .chunk_options()
                .map_or(self.threads_alone, |o| o.get_threads());
            Some(Chunked::open(&file, &header, shape.bytes, threads, sync)?)
        } else {
            None
        };
        settle(&file, end, &json, file_len, spare, sync)?;
        let mut w = Writer::new(file, header, shape, trailer, json, self.writing(), chunked);
        if defer {
            w.deferred = self.chunk_options();
        }
        Ok(w)
    }
}

/// The two shortest ways in, beside the builder.
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
}
