//! `.ra` files in object storage (S3, GCS, Azure, HTTP, local files) through the
//! `object_store` crate (feature `object_store`): [`StoreArrayReader`] reads arrays and blocks
//! of them by ranged requests; with feature `cloud`, [`StoreUrl`] opens a URL's store.

use std::fmt;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, GetResult, ObjectMeta, ObjectStore, ObjectStoreExt};

mod many;
mod pieces;
#[cfg(feature = "cloud")]
mod s3;
mod source;
#[cfg(feature = "cloud")]
mod url;
mod write;

pub use many::{Finished, StoreArrayWriter};
pub use source::StoreSource;
pub use write::{put_atomic, put_atomic_to, UploadOptions, MAX_PARTS, MIN_PART};

pub use crate::error::{shown_url, shown_urls_in};
#[cfg(feature = "cloud")]
#[cfg_attr(docsrs, doc(cfg(feature = "cloud")))]
pub use url::{is_url, StorageOptions, StoreUrl, SCHEMES};

use crate::array::{element_dims, RawArray};
use crate::codec::{ChunkMap as Layout, Config};
use crate::data;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::header::{Header, FIXED_HEADER_LEN, MAX_NDIMS};
use crate::io::ReadAt;
use crate::reader::{
    block_header_and_bytes, check_out_len, decode_into_slice, header_ranges, typed_plan, IoStats,
};
use crate::section::{Section, Storage};
use crate::subset::SubsetPlan;
use crate::trailer::{data_end, locate, Probe, Trailer};
use pieces::{Call, Fetched};

/// Bytes of the first request: at least every header up to [`MAX_NDIMS`] dims (so a second
/// header request is never needed), and enough that a small file comes whole in one request.
const FIRST_FETCH: u64 = 64 << 10;

/// Bytes of the request for the end of the object, where the trailer is: a trailer block
/// larger than this (params of more than about 64 KiB of JSON) costs one more request.
const TAIL_FETCH: u64 = 64 << 10;

/// Most runs planned into requests at once, so that a block of a million tiny runs never
/// holds all their ranges.
const BATCH_RANGES: usize = 1 << 16;

/// Runs whose gap is at most this are fetched by one request, the gap's bytes dropped as they
/// stream past: object_store's own choice for `get_ranges`, where a request costs about as
/// much time as a mebibyte of transfer.
const COALESCE_GAP: u64 = 1 << 20;

/// The gap of [`COALESCE_GAP`] for a read of some fields of records: such a read exists to
/// skip the other fields' streams, which lie between the fields' streams of consecutive blocks
/// (a few hundred KiB apart); its requests run [`PARALLEL`] at once, so more of them cost less
/// than fetching what it skips.
const FIELDS_GAP: u64 = 64 << 10;

/// Most bytes one request of several runs spans, so that a large block of many runs is
/// fetched by several requests at once (one run longer than this is still one request).
const COALESCE_SPAN: u64 = 64 << 20;

/// Requests in flight at once for one block, as in object_store's `get_ranges`.
const PARALLEL: usize = 10;

const _: () = assert!(FIRST_FETCH >= FIXED_HEADER_LEN as u64 + 8 * MAX_NDIMS);

/// A `.ra` file in an object store, opened for reading blocks: what
/// [`ArrayReader`](crate::ArrayReader) does for a local file, by ranged requests.
///
/// [`open`](StoreArrayReader::open) costs at most two requests for any file whose trailer is
/// under 64 KiB: one ranged request for the first 64 KiB (every valid header fits; the whole
/// file if it is small) and one for the end of the object, only if the file has bytes after
/// its data that the first did not bring. A block's runs are fetched by ranged requests, up to
/// ten at once: runs less than 1 MiB apart share one request (spanning at most 64 MiB), whose
/// body is streamed into the block's buffer, the bytes between runs dropped as they pass. An
/// LZ4 file's data section is fetched with one request and decompressed whole, as
/// [`ArrayReader`](crate::ArrayReader) does.
///
/// A chunked object (flag bit 2, see [`crate::codec`]) costs no more at open for its config
/// and index: they come with the first 64 KiB when they fit there (an index of up to about
/// 2,600 chunks), else by one more request (more only for an index grown in segments far
/// apart), besides the trailer's. A block then fetches the stored bytes of the chunks it
/// intersects and nothing else, coalesced as runs are (chunks less than 1 MiB apart share a
/// request), checks each chunk's checksum and decodes it; chunks never written read as zeros.
///
/// The server is not trusted. Every body must be exactly the length asked: a shorter or
/// longer one is an error naming the object and the range, and nothing beyond the range asked
/// is ever held. The reader is pinned to the object it opened: every request after the first
/// carries the object's ETag (`If-Match`) and version, if the store gave them, and every
/// response must describe the same object (size, ETag and version). A store without ETags gets
/// `If-Unmodified-Since` and must answer with the same size and modification time; an object
/// replaced by one of the same size within the store's clock resolution (a second, for HTTP
/// dates) cannot be told apart there. An object overwritten or deleted after open is then an
/// error naming it, never the new object's bytes read under the old header; a store with
/// versions (S3 or GCS with versioning on) goes on serving the version that was opened.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt, PutPayload};
/// use rawarray_serde::{RawArray, StoreArrayReader};
///
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let a = RawArray::from_shape_vec(vec![4, 3, 2], (0..24).map(|i| i as f32).collect()).unwrap();
/// let path = Path::from("data/cube.ra");
/// store.put(&path, PutPayload::from(a.to_bytes())).await.unwrap();
///
/// let r = StoreArrayReader::open(store.clone(), path.clone()).await.unwrap();
/// assert_eq!(r.header().dims, [4, 3, 2]);
/// let col: RawArray<f32> = r.read_subset(&[1..3, 2..3, 0..2]).await.unwrap();
/// assert_eq!(col.as_slice(), &[9.0, 10.0, 21.0, 22.0]);
///
/// // Overwritten after open: an error naming the object, not the new bytes.
/// store.put(&path, PutPayload::from(a.to_bytes())).await.unwrap();
/// let err = r.read_all::<f32>().await.unwrap_err();
/// assert!(err.to_string().contains("data/cube.ra changed since it was opened"), "{err}");
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
#[derive(Debug)]
pub struct StoreArrayReader {
    object: Object,
    header: Header,
    trailer: Option<Trailer>,
    trailer_error: Option<String>,
    /// A compressed object's section (whole-section LZ4 or chunked), read through the pieces
    /// fetched for each read over those shared by all reads (`None` for a plain object, whose
    /// runs are fetched straight into the caller's buffer).
    section: Option<Section<Fetched>>,
    /// What was fetched at open: the first bytes, a chunked object's config and index, the
    /// trailer's pieces.
    held: Vec<(u64, Bytes)>,
    counter: Counter,
}

impl crate::reader::ArrayReader {
    /// Opens a `.ra` object in an object store: the same as [`StoreArrayReader::open`].
    #[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
    pub async fn open_store(
        store: Arc<dyn ObjectStore>,
        path: impl Into<StorePath>,
    ) -> Result<StoreArrayReader> {
        StoreArrayReader::open(store, path).await
    }
}

impl StoreArrayReader {
    /// Opens the object at `path`: validates its header and reads its trailer (at most two
    /// requests; see the type's docs), and pins the reader to this object.
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        path: impl Into<StorePath>,
    ) -> Result<StoreArrayReader> {
        let path = path.into();
        let counter = Counter::default();
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..FIRST_FETCH)),
            ..GetOptions::default()
        };
        // The first response says what the object is; every later request is pinned to it.
        let (object, first) = match store.get_opts(&path, opts).await {
            Ok(got) => {
                let object = Object {
                    store,
                    path,
                    pinned: got.meta.clone(),
                };
                let want = 0..FIRST_FETCH.min(object.pinned.size);
                let mut first = vec![0u8; data::to_usize(want.end)?];
                object.receive(got, &[want], &mut first, &counter).await?;
                (object, Bytes::from(first))
            }
            // An empty object has no byte 0 to start a range at: say so as for a file.
            Err(e) => match store.head(&path).await {
                Ok(meta) if meta.size == 0 => {
                    let object = Object {
                        store,
                        path,
                        pinned: meta,
                    };
                    (object, Bytes::new())
                }
                _ => return Err(store_error(e)),
            },
        };
        let object_len = object.pinned.size;
        let header = Header::decode_any(&first)?;
        header.check_input_len(object_len)?;
        // The section is opened over what was fetched: the first bytes, and for a chunked
        // object its config and index segments, fetched as the chunk map names them.
        let mut kept = vec![(0u64, first.clone())];
        if Storage::of(&header).has_chunk_index() {
            kept.extend(chunked_layout(&object, &header, &first, &counter).await?);
        }
        let end = data_end(&header);
        let mut pieces = vec![(0u64, first)];
        let mut probe = Probe::Absent;
        if object_len > end {
            // The trailer is found from the end: one more request unless the first brought it.
            let have = pieces[0].1.len() as u64;
            if have < object_len {
                let want = TAIL_FETCH.min(object_len - end);
                let tail = object
                    .bytes(object_len - want..object_len, &counter)
                    .await?;
                pieces.push((object_len - want, tail));
            }
            // A block larger than what was fetched: fetch what the probes missed, and look again.
            for _ in 0..3 {
                let missed = {
                    let src = Pieces {
                        pieces: &pieces,
                        missed: std::sync::Mutex::new(Vec::new()),
                    };
                    probe = locate(&src, end, object_len);
                    src.missed.into_inner().expect("missed lock")
                };
                if matches!(probe, Probe::Valid(_)) || missed.is_empty() {
                    break;
                }
                let mut fetched = false;
                for r in missed {
                    let r = r.start.max(end)..r.end.min(object_len);
                    if r.start < r.end {
                        let got = object.bytes(r.clone(), &counter).await?;
                        pieces.push((r.start, got));
                        fetched = true;
                    }
                }
                if !fetched {
                    break;
                }
            }
        }
        let (trailer, trailer_error) = match probe {
            Probe::Absent => (None, None),
            Probe::Damaged(why) => (None, Some(why)),
            Probe::Valid(block) => (Some(block.trailer), None),
        };
        kept.extend(pieces.into_iter().skip(1));
        let section = if Storage::of(&header).is_coded() {
            Some(Section::open(
                &header,
                Fetched::new(object_len, kept.clone()),
            )?)
        } else {
            None
        };
        Ok(StoreArrayReader {
            object,
            header,
            trailer,
            trailer_error,
            section,
            held: kept,
            counter,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The trailer, if the object has a valid one.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Why the bytes after the data look like a trailer block but cannot be read, if so.
    pub fn trailer_error(&self) -> Option<&str> {
        self.trailer_error.as_deref()
    }

    /// The chunked layout's settings (codec, level, filter, chunk shape in the file's dim
    /// order), validated at open; `None` for an object that is not chunked.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use object_store::{memory::InMemory, ObjectStore, ObjectStoreExt, PutPayload};
    /// use rawarray_serde::{codec::Codec, RawArray, StoreArrayReader, WriteOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = dir.path().join("z.ra");
    /// let a = RawArray::from_shape_vec(vec![4, 6], (0..24).map(|i| i as f32).collect()).unwrap();
    /// a.write_file_with(&file, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![4, 2]))
    ///     .unwrap();
    /// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    /// store.put(&"z.ra".into(), PutPayload::from(std::fs::read(&file).unwrap())).await.unwrap();
    /// store.put(&"a.ra".into(), PutPayload::from(a.to_bytes())).await.unwrap();
    ///
    /// let c = StoreArrayReader::open(store.clone(), "z.ra").await.unwrap();
    /// let config = c.chunk_config().unwrap();
    /// assert_eq!((config.codec, config.chunk.as_slice()), (Codec::Zstd, &[4, 2][..]));
    /// assert!(StoreArrayReader::open(store, "a.ra").await.unwrap().chunk_config().is_none());
    /// # }
    /// ```
    pub fn chunk_config(&self) -> Option<&Config> {
        self.section
            .as_ref()
            .and_then(Section::chunk_map)
            .map(Layout::config)
    }

    /// The chunk map read at open (config, index, statistics) of a chunked object, which a
    /// query prunes chunks by (`rawarray_serde::query::Pruning`); `None` for an object that is
    /// not chunked.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use object_store::{memory::InMemory, ObjectStore, ObjectStoreExt, PutPayload};
    /// use rawarray_serde::{codec::Codec, RawArray, StoreArrayReader, WriteOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = dir.path().join("z.ra");
    /// let a = RawArray::from_shape_vec(vec![4, 6], (0..24).map(|i| i as f32).collect()).unwrap();
    /// a.write_file_with(&file, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![4, 2]))
    ///     .unwrap();
    /// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    /// store.put(&"z.ra".into(), PutPayload::from(std::fs::read(&file).unwrap())).await.unwrap();
    /// let r = StoreArrayReader::open(store, "z.ra").await.unwrap();
    /// assert_eq!(r.chunk_map().unwrap().config().chunk, [4, 2]);
    /// # }
    /// ```
    pub fn chunk_map(&self) -> Option<&Layout> {
        self.section.as_ref().and_then(Section::chunk_map)
    }

    /// The object's length in bytes, as the store said at open.
    pub fn object_len(&self) -> u64 {
        self.object.pinned.size
    }

    /// What the store said the object was at open (its size, ETag, version and time): the
    /// object every later request of this reader is pinned to, and what another process can
    /// compare with to tell whether it opened the same object.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use object_store::{memory::InMemory, ObjectStore, ObjectStoreExt, PutPayload};
    /// use rawarray_serde::{RawArray, StoreArrayReader};
    ///
    /// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    /// let a = RawArray::from_shape_vec(vec![3], vec![1u8, 2, 3]).unwrap();
    /// store.put(&"a.ra".into(), PutPayload::from(a.to_bytes())).await.unwrap();
    /// let r = StoreArrayReader::open(store, "a.ra").await.unwrap();
    /// assert_eq!(r.object_meta().size, r.object_len());
    /// assert!(r.object_meta().e_tag.is_some());
    /// # }
    /// ```
    pub fn object_meta(&self) -> &ObjectMeta {
        &self.object.pinned
    }

    /// The requests made so far (open included) and the bytes they brought (the gaps between
    /// runs that share a request included). For a chunked object, the bytes are the stored
    /// (compressed) bytes of the chunks fetched.
    pub fn io_stats(&self) -> IoStats {
        self.counter.get()
    }

    /// The plan of a subset in the file's dims and elements (see [`SubsetPlan`]).
    pub fn plan(&self, ranges: &[Range<u64>]) -> Result<SubsetPlan> {
        SubsetPlan::new(&self.header.dims, self.header.elbyte, ranges)
    }

    /// The pieces of the object (offset, bytes) that hold what a read of the box `ranges` (one
    /// range per dim, over the header's dims) reads, fetched as that read fetches them, and
    /// those fetched at open (header, a chunked object's config and index, the trailer): all a
    /// local reader needs of the object to read that box, its header and its trailer, written
    /// at their offsets into a sparse local file (`ra slice` of a URL does so). Call it on a
    /// reader that has read nothing yet: bytes earlier reads left in its caches are not
    /// fetched again, so not handed out.
    pub async fn fetch_box(&self, ranges: &[Range<u64>]) -> Result<Vec<(u64, Bytes)>> {
        let mut out = self.held.clone();
        let plan = self.plan(ranges)?;
        if plan.is_empty() {
            return Ok(out);
        }
        let Some(section) = &self.section else {
            let base = self.header.encoded_len() as u64;
            let mut runs = plan.runs().map(|r| base + r.start..base + r.end);
            loop {
                let batch: Vec<Range<u64>> = runs.by_ref().take(BATCH_RANGES).collect();
                if batch.is_empty() {
                    return Ok(out);
                }
                let spans: Vec<Range<u64>> = coalesce(&batch, COALESCE_GAP, COALESCE_SPAN)
                    .into_iter()
                    .map(|g| batch[g.start].start..batch[g.end - 1].end)
                    .collect();
                let got: Vec<(u64, Bytes)> =
                    futures::stream::iter(spans.into_iter().map(|s| async move {
                        let b = self.object.bytes(s.clone(), &self.counter).await?;
                        Ok::<_, Error>((s.start, b))
                    }))
                    .buffer_unordered(PARALLEL)
                    .try_collect()
                    .await?;
                out.extend(got);
            }
        };
        let mut call = Call::new(section.source());
        for _ in 0..MAX_ROUNDS {
            let need = section.box_fetches(&call, ranges, COALESCE_GAP)?;
            if need.is_empty() {
                out.extend(call.into_pieces());
                return Ok(out);
            }
            self.fetch(&mut call, need, COALESCE_GAP).await?;
        }
        Err(io::Error::other(format!(
            "object {}: a read still missed bytes after {MAX_ROUNDS} rounds of requests",
            self.object.path
        ))
        .into())
    }

    /// Reads the block `ranges` (one per dim of the array of `T`, first fastest), as
    /// [`ArrayReader::read_subset`](crate::ArrayReader::read_subset) does.
    pub async fn read_subset<T: Element>(&self, ranges: &[Range<u64>]) -> Result<RawArray<T>> {
        let plan = typed_plan::<T>(&self.header, ranges)?;
        let n = data::to_usize(plan.len())?;
        let data = match data::zeroed_pod::<T>(n)? {
            Some(mut v) => {
                self.read_planned_into(&plan, &mut v).await?;
                v
            }
            None => {
                let mut bytes = data::try_zeroed_bytes(plan.bytes())?;
                self.fill(&plan, &mut bytes).await?;
                data::decode_values(&bytes, self.header.is_big_endian())?
            }
        };
        RawArray::from_shape_vec(plan.dims(), data)
    }

    /// Reads the block `ranges` into `out`, which must hold exactly its elements.
    pub async fn read_subset_into<T: Element>(
        &self,
        ranges: &[Range<u64>],
        out: &mut [T],
    ) -> Result<()> {
        let plan = typed_plan::<T>(&self.header, ranges)?;
        self.read_planned_into(&plan, out).await
    }

    /// Reads the whole array, streamed into its buffer with one request.
    pub async fn read_all<T: Element>(&self) -> Result<RawArray<T>> {
        let dims = element_dims::<T>(&self.header)?;
        let ranges: Vec<Range<u64>> = dims.iter().map(|&d| 0..d).collect();
        self.read_subset(&ranges).await
    }

    /// Reads the block `ranges` of any element type: its header and little-endian bytes, as
    /// [`ArrayReader::read_subset_bytes`](crate::ArrayReader::read_subset_bytes) does.
    pub async fn read_subset_bytes(&self, ranges: &[Range<u64>]) -> Result<(Header, Vec<u8>)> {
        let plan = self.plan(ranges)?;
        let mut bytes = data::try_zeroed_bytes(plan.bytes())?;
        self.fill(&plan, &mut bytes).await?;
        Ok(block_header_and_bytes(&self.header, &plan, bytes))
    }

    async fn read_planned_into<T: Element>(&self, plan: &SubsetPlan, out: &mut [T]) -> Result<()> {
        check_out_len(plan, out.len())?;
        let big_endian = self.header.is_big_endian();
        if let Some(bytes) = T::as_pod_bytes_mut(out) {
            self.fill(plan, bytes).await?;
            if big_endian {
                data::swap_values::<T>(bytes);
            }
            return Ok(());
        }
        let mut bytes = data::try_zeroed_bytes(plan.bytes())?;
        self.fill(plan, &mut bytes).await?;
        decode_into_slice(&bytes, big_endian, out)
    }

    /// Fetches the plan's runs, as stored, into `dst`: runs near each other by one request.
    async fn fill(&self, plan: &SubsetPlan, dst: &mut [u8]) -> Result<()> {
        let run = data::to_usize(plan.run_len())?;
        if plan.run_count() == 0 || run == 0 {
            return Ok(());
        }
        if let Some(section) = &self.section {
            return self
                .fill_section(section, &header_ranges(&self.header, plan), dst)
                .await;
        }
        let base = self.header.encoded_len() as u64;
        let mut runs = plan.runs().map(|r| base + r.start..base + r.end);
        let mut rest = dst;
        loop {
            let batch: Vec<Range<u64>> = runs.by_ref().take(BATCH_RANGES).collect();
            if batch.is_empty() {
                return Ok(());
            }
            let mut requests = Vec::new();
            for group in coalesce(&batch, COALESCE_GAP, COALESCE_SPAN) {
                let group = &batch[group];
                // The block's buffer holds the runs back to back, in the plan's order.
                let (mine, more) = std::mem::take(&mut rest).split_at_mut(group.len() * run);
                rest = more;
                requests.push(self.object.read_runs(group, mine, &self.counter));
            }
            futures::stream::iter(requests)
                .buffer_unordered(PARALLEL)
                .try_collect::<()>()
                .await?;
        }
    }

    /// Reads the box `ranges` (over the header's dims) of a compressed object through the
    /// section's own reader: asks it which bytes the read needs ([`Section::box_fetches`]),
    /// fetches them (neighbours by one request, several at once), asks again until nothing
    /// is missing (a chunk's blocks are known once its block table came), then decodes. A box
    /// whose chunks hold more than [`SLAB_BYTES`] stored bytes is read in slabs along the
    /// last dim, so that the stored bytes held at once stay near that bound.
    async fn fill_section(
        &self,
        section: &Section<Fetched>,
        ranges: &[Range<u64>],
        dst: &mut [u8],
    ) -> Result<()> {
        let slabs = slabs(section, ranges, SLAB_BYTES);
        if slabs.len() <= 1 {
            return self.fill_box(section, ranges, dst).await;
        }
        // Each slab is a run of `dst`: the last dim varies slowest.
        let plane: u64 = ranges[..ranges.len() - 1]
            .iter()
            .map(|r| r.end - r.start)
            .product::<u64>()
            * self.header.elbyte;
        let last = ranges.len() - 1;
        let mut rest = dst;
        let mut part = ranges.to_vec();
        for slab in slabs {
            let len = data::to_usize((slab.end - slab.start) * plane)?;
            let (mine, more) = std::mem::take(&mut rest).split_at_mut(len);
            rest = more;
            part[last] = slab;
            self.fill_box(section, &part, mine).await?;
        }
        Ok(())
    }

    async fn fill_box(
        &self,
        section: &Section<Fetched>,
        ranges: &[Range<u64>],
        dst: &mut [u8],
    ) -> Result<()> {
        self.rounds(
            section,
            COALESCE_GAP,
            |call| section.box_fetches(call, ranges, COALESCE_GAP),
            |call| section.read_box_from(call, ranges, dst),
        )
        .await
    }

    /// The bytes `fields` (`(offset, width)` inside an element) of each element of the box
    /// `ranges` (one range per dim of the header), one buffer per field in the object's byte
    /// order, as [`ArrayReader::read_subset_fields`](crate::ArrayReader::read_subset_fields)
    /// reads them; `None` when the object's storage cannot decode fields alone (then read
    /// whole elements). Only those fields' byte planes are decoded. Where each byte stream has
    /// its own CRC (records split in byte streams, by default), a chunk of more than 1 MiB of
    /// stored bytes is fetched in three rounds of requests, its block table, then each
    /// block's head, then the streams it places (each checked against its CRC); the other
    /// streams are skipped where they span more than 64 KiB (runs nearer than that share a
    /// request; the requests of a round run ten at once). Smaller chunks are fetched whole in
    /// one round, as a read of whole elements fetches them. Without stream CRCs, the blocks
    /// the box crosses are fetched.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt};
    /// use rawarray_serde::{codec, ElType, Header, StoreArrayReader, WriteOptions};
    /// // 5000 records of 32 bytes: a u64 counter, then 24 bytes of noise.
    /// let raw: Vec<u8> = (0..5000u64)
    ///     .flat_map(|i| [i.to_le_bytes(), i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes(),
    ///                    (i ^ 0x5555).to_le_bytes(), (i * 31).to_le_bytes()].concat())
    ///     .collect();
    /// let h = Header::new(ElType::User, 32, vec![5000]).unwrap();
    /// let (h, section) = codec::encode(&h, &raw, &WriteOptions::chunked().split(true)).unwrap();
    /// let mut object = h.encode();
    /// object.extend_from_slice(&section);
    /// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    /// store.put(&Path::from("r.ra"), object.into()).await.unwrap();
    ///
    /// let r = StoreArrayReader::open(store, Path::from("r.ra")).await.unwrap();
    /// let cols = r.read_subset_fields(&[10..12], &[(0, 8)]).await.unwrap().unwrap();
    /// assert_eq!(cols[0], [10u64, 11].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    /// # }
    /// ```
    pub async fn read_subset_fields(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        self.fields_in_slabs(ranges, fields, SLAB_BYTES).await
    }

    /// [`StoreArrayReader::read_subset_fields`] in slabs of chunks of about `slab_bytes`
    /// stored bytes each.
    async fn fields_in_slabs(
        &self,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
        slab_bytes: u64,
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let Some(section) = &self.section else {
            return Ok(None);
        };
        let plan = self.plan(ranges)?;
        let ranges = plan.ranges();
        // Where fields are not read alone the first question says so, before any request.
        if section
            .box_fields_fetches(&Call::new(section.source()), ranges, fields, COALESCE_GAP)?
            .is_none()
        {
            return Ok(None);
        }
        // As `fill_section`: a box of many stored bytes in slabs along the last dim, so that
        // the fetched bytes held at once stay near `slab_bytes` (small chunks come whole).
        // Each slab is a run of every field's column: the last dim varies slowest.
        let slabs = slabs(section, ranges, slab_bytes);
        if slabs.len() <= 1 {
            return self.fields_box(section, ranges, fields).await;
        }
        let count = plan.bytes() / self.header.elbyte.max(1);
        let mut outs = Vec::with_capacity(fields.len());
        for &(_, w) in fields {
            let mut col = Vec::new();
            col.try_reserve_exact(data::to_usize(count.saturating_mul(w as u64))?)
                .map_err(|_| Error::msg(format!("{count} fields of {w} bytes: out of memory")))?;
            outs.push(col);
        }
        let mut part = ranges.to_vec();
        let last = part.len() - 1;
        for slab in slabs {
            part[last] = slab;
            let Some(cols) = self.fields_box(section, &part, fields).await? else {
                return Ok(None);
            };
            for (out, col) in outs.iter_mut().zip(cols) {
                out.extend_from_slice(&col);
            }
        }
        Ok(Some(outs))
    }

    /// [`StoreArrayReader::read_subset_fields`] of one slab: its rounds of requests.
    async fn fields_box(
        &self,
        section: &Section<Fetched>,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        self.rounds(
            section,
            FIELDS_GAP,
            |call| {
                Ok(section
                    .box_fields_fetches(call, ranges, fields, COALESCE_GAP)?
                    .unwrap_or_default())
            },
            |call| section.read_box_fields_from(call, ranges, fields),
        )
        .await
    }

    /// Drives a read through the section's own reader: asks `needs` which bytes are missing,
    /// fetches them (neighbours at most `gap` apart by one request, several at once), asks
    /// again until nothing is, then `read`s from what was fetched; up to [`MAX_ROUNDS`]
    /// rounds.
    async fn rounds<R>(
        &self,
        section: &Section<Fetched>,
        gap: u64,
        needs: impl Fn(&Call<'_>) -> Result<Vec<Range<u64>>>,
        mut read: impl FnMut(&Call<'_>) -> Result<R>,
    ) -> Result<R> {
        let mut call = Call::new(section.source());
        for _ in 0..MAX_ROUNDS {
            let mut need = needs(&call)?;
            if need.is_empty() {
                // Misses the questions met (a head a shared cache dropped) were named again
                // and fetched: only the read's own misses say what to fetch after it.
                call.take_missed();
                match read(&call) {
                    Ok(r) => return Ok(r),
                    // Bytes the plan had in the shared cache, dropped since by another read.
                    Err(e) => {
                        need = call.take_missed();
                        if need.is_empty() {
                            return Err(e);
                        }
                    }
                }
            }
            self.fetch(&mut call, need, gap).await?;
        }
        Err(io::Error::other(format!(
            "object {}: a read still missed bytes after {MAX_ROUNDS} rounds of requests",
            self.object.path
        ))
        .into())
    }

    /// Fetches `need` (ranges of the object in any order, perhaps overlapping) into `call`:
    /// neighbours at most `gap` apart by one request over their span (the gap's
    /// bytes kept: they are often the next round's blocks), up to [`PARALLEL`] at once.
    async fn fetch(&self, call: &mut Call<'_>, mut need: Vec<Range<u64>>, gap: u64) -> Result<()> {
        need.sort_by_key(|r| r.start);
        let mut spans: Vec<Range<u64>> = Vec::new();
        for r in need {
            match spans.last_mut() {
                Some(s)
                    if r.start <= s.end.saturating_add(gap)
                        && r.end.max(s.end) - s.start <= COALESCE_SPAN =>
                {
                    s.end = s.end.max(r.end);
                }
                _ => spans.push(r),
            }
        }
        let got: Vec<(u64, Bytes)> = futures::stream::iter(spans.into_iter().map(|s| async move {
            let b = self.object.bytes(s.clone(), &self.counter).await?;
            Ok::<_, Error>((s.start, b))
        }))
        .buffer_unordered(PARALLEL)
        .try_collect()
        .await?;
        for (start, b) in got {
            call.add(start, b);
        }
        Ok(())
    }
}

/// Rounds of requests one box read may take: the bytes at open, then tables, then blocks;
/// more only when another read's bytes the plan counted on were dropped from the shared cache.
const MAX_ROUNDS: usize = 6;

/// Stored bytes a box read holds at once, about: a larger box is read in slabs.
const SLAB_BYTES: u64 = 256 << 20;

/// The slabs (ranges of the last dim, at chunk boundaries) the box `ranges` is read in, each
/// of chunks holding about [`SLAB_BYTES`] stored bytes; one slab for a small box or a section
/// that is not chunked.
fn slabs(section: &Section<Fetched>, ranges: &[Range<u64>], limit: u64) -> Vec<Range<u64>> {
    let (Some(map), Some(last)) = (section.chunk_map(), ranges.last()) else {
        return vec![];
    };
    let n = ranges.len() - 1;
    let step = map.grid().chunk()[n].max(1);
    let mut out = Vec::new();
    let mut start = last.start;
    let mut bytes = 0u64;
    let mut part = ranges.to_vec();
    let mut at = last.start;
    while at < last.end {
        let end = ((at / step + 1) * step).min(last.end);
        part[n] = at..end;
        let here: u64 = map
            .grid()
            .touched(&part)
            .filter_map(|c| map.chunk_range(c))
            .map(|r| r.end - r.start)
            .sum();
        if bytes > 0 && bytes + here > limit {
            out.push(start..at);
            start = at;
            bytes = 0;
        }
        bytes += here;
        at = end;
    }
    out.push(start..last.end);
    out
}

/// The config and index segments of the chunked object whose header is `header`, as pieces
/// of the object (offset, bytes) for its section to be opened over, validated: taken from
/// `first` (the object's first bytes, already fetched) where it holds them, the rest fetched
/// (the config, then the index segments the config names, neighbours by one request), as
/// the chunk map's sans-I/O steps name them.
async fn chunked_layout(
    object: &Object,
    header: &Header,
    first: &Bytes,
    counter: &Counter,
) -> Result<Vec<(u64, Bytes)>> {
    let base = header.encoded_len() as u64;
    let probe = Layout::config_probe(header);
    let mut config = fetch_ranges(
        object,
        first,
        std::slice::from_ref(&(base + probe.start..base + probe.end)),
        counter,
    )
    .await?;
    let len = Layout::config_len(header, &config[0])?;
    if len > probe.end {
        // A version 2 config with statistics fields past the probe: fetched whole.
        config = fetch_ranges(
            object,
            first,
            std::slice::from_ref(&(base..base + len)),
            counter,
        )
        .await?;
    }
    let pending = Layout::start(header, &config[0][..len as usize])?;
    let reads: Vec<Range<u64>> = pending
        .segment_reads()
        .iter()
        .map(|r| base + r.bytes.start..base + r.bytes.end)
        .collect();
    let segments = fetch_ranges(object, first, &reads, counter).await?;
    let refs: Vec<&[u8]> = segments.iter().map(|b| &b[..]).collect();
    pending.finish(&refs)?;
    let mut pieces = vec![(base, config[0].slice(..len as usize))];
    pieces.extend(reads.iter().map(|r| r.start).zip(segments));
    Ok(pieces)
}

/// The bytes of each of `ranges` (in the object): sliced from `first` (the object's first
/// bytes) where it holds them, the others fetched, neighbours coalesced into one request.
async fn fetch_ranges(
    object: &Object,
    first: &Bytes,
    ranges: &[Range<u64>],
    counter: &Counter,
) -> Result<Vec<Bytes>> {
    let held = first.len() as u64;
    let mut out: Vec<Bytes> = ranges
        .iter()
        .map(|r| {
            if r.end <= held {
                first.slice(r.start as usize..r.end as usize)
            } else {
                Bytes::new()
            }
        })
        .collect();
    let mut missing: Vec<usize> = (0..ranges.len())
        .filter(|&i| ranges[i].end > held && ranges[i].start < ranges[i].end)
        .collect();
    missing.sort_by_key(|&i| ranges[i].start);
    let runs: Vec<Range<u64>> = missing.iter().map(|&i| ranges[i].clone()).collect();
    for group in coalesce(&runs, COALESCE_GAP, COALESCE_SPAN) {
        let len: u64 = runs[group.clone()].iter().map(|r| r.end - r.start).sum();
        let mut buf = data::try_zeroed_bytes(len)?;
        object
            .read_runs(&runs[group.clone()], &mut buf, counter)
            .await?;
        let buf = Bytes::from(buf);
        let mut at = 0usize;
        for k in group {
            let n = (runs[k].end - runs[k].start) as usize;
            out[missing[k]] = buf.slice(at..at + n);
            at += n;
        }
    }
    Ok(out)
}

/// The object a reader opened: where it is, and what the store said it was at open, so that
/// every later request is pinned to it and every response checked against it.
#[derive(Debug)]
struct Object {
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    pinned: ObjectMeta,
}

impl Object {
    /// Streams the body of one request over `runs` (ascending, not overlapping) into `dst`,
    /// which holds the runs back to back; the gaps between runs are dropped as they pass.
    async fn read_runs(
        &self,
        runs: &[Range<u64>],
        dst: &mut [u8],
        counter: &Counter,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
            return Ok(());
        };
        let span = first.start..last.end;
        if span.is_empty() {
            return Ok(());
        }
        let got = self
            .store
            .get_opts(&self.path, self.options(span.clone()))
            .await
            .map_err(|e| self.error(e))?;
        self.check_same(&got.meta)?;
        self.receive(got, runs, dst, counter).await
    }

    /// `runs`' bytes from a response to the request for their span, which must be exactly
    /// that span: a longer body is refused at its first byte too many, so an endless one
    /// costs nothing more than the range asked.
    async fn receive(
        &self,
        got: GetResult,
        runs: &[Range<u64>],
        dst: &mut [u8],
        counter: &Counter,
    ) -> Result<()> {
        let span = match (runs.first(), runs.last()) {
            (Some(first), Some(last)) => first.start..last.end,
            _ => return Ok(()),
        };
        if got.range != span {
            return Err(self.misanswered(&span, format!("bytes {:?}", got.range)));
        }
        let mut body = got.into_stream();
        // The object offset of the body's next byte, the run it may belong to, and where in
        // `dst` that run goes.
        let mut at = span.start;
        let mut next = 0;
        let mut out = 0;
        let result = loop {
            let chunk = match body.next().await {
                None => break Ok(()),
                Some(Err(e)) => break Err(self.error(e)),
                Some(Ok(chunk)) => chunk,
            };
            let chunk_end = at.saturating_add(chunk.len() as u64);
            if chunk_end > span.end {
                break Err(
                    self.misanswered(&span, format!("more than {} bytes", span.end - span.start))
                );
            }
            while let Some(r) = runs.get(next) {
                let (from, to) = (r.start.max(at), r.end.min(chunk_end));
                if from < to {
                    // Offsets within a chunk and within `dst`, both in memory already.
                    let d = out + (from - r.start) as usize;
                    let c = (from - at) as usize;
                    let n = (to - from) as usize;
                    dst[d..d + n].copy_from_slice(&chunk[c..c + n]);
                }
                if r.end > chunk_end {
                    break;
                }
                out += (r.end - r.start) as usize;
                next += 1;
            }
            at = chunk_end;
        };
        counter.add(at - span.start);
        result?;
        if at != span.end {
            return Err(self.misanswered(&span, format!("{} bytes", at - span.start)));
        }
        Ok(())
    }

    /// The bytes of `range` (inside the object), by one pinned request.
    async fn bytes(&self, range: Range<u64>, counter: &Counter) -> Result<Bytes> {
        let mut buf = data::try_zeroed_bytes(range.end - range.start)?;
        self.read_runs(std::slice::from_ref(&range), &mut buf, counter)
            .await?;
        Ok(Bytes::from(buf))
    }

    /// A request for `range` of the pinned object: its ETag as `If-Match` and its version when
    /// the store gave them; from a store without ETags, its time as `If-Unmodified-Since`.
    fn options(&self, range: Range<u64>) -> GetOptions {
        let pinned = &self.pinned;
        GetOptions {
            range: Some(GetRange::Bounded(range)),
            if_match: pinned.e_tag.clone(),
            if_unmodified_since: pinned.e_tag.is_none().then_some(pinned.last_modified),
            version: pinned.version.clone(),
            ..GetOptions::default()
        }
    }

    /// Whether a response describes the object opened. Its time is compared only when there
    /// is no ETag: a store may touch an object's time without changing its bytes.
    fn check_same(&self, now: &ObjectMeta) -> Result<()> {
        let was = &self.pinned;
        if now.size != was.size {
            return Err(self.changed(format!("{} bytes then, {} now", was.size, now.size)));
        }
        if let (Some(then), Some(now)) = (&was.e_tag, &now.e_tag) {
            if then != now {
                return Err(self.changed(format!("ETag {then} then, {now} now")));
            }
        }
        if let (Some(then), Some(now)) = (&was.version, &now.version) {
            if then != now {
                return Err(self.changed(format!("version {then} then, {now} now")));
            }
        }
        if was.e_tag.is_none() && now.last_modified != was.last_modified {
            return Err(self.changed(format!(
                "modified {} then, {} now",
                was.last_modified, now.last_modified
            )));
        }
        Ok(())
    }

    /// The store's error for a pinned request; a failed precondition means the object changed.
    fn error(&self, e: object_store::Error) -> Error {
        match e {
            object_store::Error::Precondition { source, .. } => self.changed(format!(
                "the store refused the pinned request: {}",
                store_text(&source)
            )),
            e => store_error(e),
        }
    }

    fn changed(&self, how: impl fmt::Display) -> Error {
        io::Error::other(format!(
            "object {} changed since it was opened ({how})",
            self.path
        ))
        .into()
    }

    /// The error for a response that is not the range asked.
    fn misanswered(&self, asked: &Range<u64>, found: impl fmt::Display) -> Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "object {}: the store answered {found} for bytes {asked:?} ({} asked)",
                self.path,
                asked.end - asked.start
            ),
        )
        .into()
    }
}

/// Groups of neighbouring runs that one request each fetches: runs in ascending order at most
/// `gap` bytes apart, spanning at most `span` bytes (one longer run alone). Index ranges into
/// `runs`, in order, covering each run once; runs out of order or overlapping start new groups.
fn coalesce(runs: &[Range<u64>], gap: u64, span: u64) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..=runs.len() {
        let joins = runs.get(i).is_some_and(|next| {
            let prev = &runs[i - 1];
            next.start >= prev.end
                && next.start - prev.end <= gap
                && next.end - runs[start].start <= span
        });
        if !joins {
            groups.push(start..i);
            start = i;
        }
    }
    groups
}

/// An object store's error as an I/O error (`NotFound` stays `NotFound`), its text with any
/// URL's password shown as `***` (object_store names the URL it requested as given).
fn store_error(e: object_store::Error) -> Error {
    Error::from(store_io(e))
}

/// [`store_error`] as an `io::Error`.
pub(crate) fn store_io(e: object_store::Error) -> io::Error {
    let io = io::Error::from(e);
    io::Error::new(
        io.kind(),
        crate::error::shown_urls_in(&io.to_string()).into_owned(),
    )
}

/// An object store's message (or any other that may name a URL), as messages show it.
pub(crate) fn store_text(e: &impl fmt::Display) -> String {
    crate::error::shown_urls_in(&e.to_string()).into_owned()
}

/// Requests made of the object and their bytes.
#[derive(Debug, Default)]
pub(crate) struct Counter {
    reads: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

impl Counter {
    pub(crate) fn add(&self, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.reads.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn get(&self) -> IoStats {
        use std::sync::atomic::Ordering::Relaxed;
        IoStats {
            reads: self.reads.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
        }
    }
}

/// The parts of an object fetched so far, addressed by offset for the trailer probes; a read
/// outside them fails and is remembered, so the caller can fetch it and look again.
struct Pieces<'a> {
    pieces: &'a [(u64, Bytes)],
    missed: std::sync::Mutex<Vec<Range<u64>>>,
}

impl ReadAt for Pieces<'_> {
    fn source_len(&self) -> io::Result<u64> {
        Ok(self
            .pieces
            .iter()
            .map(|(s, b)| s + b.len() as u64)
            .max()
            .unwrap_or(0))
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        for (start, bytes) in self.pieces {
            let piece_end = start + bytes.len() as u64;
            if *start <= offset && end <= piece_end {
                let at = (offset - start) as usize;
                buf.copy_from_slice(&bytes[at..at + buf.len()]);
                return Ok(());
            }
        }
        // Each miss is fetched alone: one range over all of them could span the whole object.
        let mut missed = self.missed.lock().expect("missed lock");
        if !missed.iter().any(|m| m.start <= offset && end <= m.end) {
            missed.push(offset..end);
        }
        Err(io::ErrorKind::UnexpectedEof.into())
    }
}

#[cfg(test)]
mod tests {
    use super::coalesce;

    /// A read of fields in many slabs (one chunk along the last dim each) gives the columns
    /// of one read in a single slab, and those of the whole records.
    #[tokio::test]
    async fn fields_read_in_slabs_are_the_columns_of_one_read() {
        use crate::{codec, ElType, Header, WriteOptions};
        use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt};
        let (w, n) = (24usize, [30u64, 700]);
        let raw: Vec<u8> = (0..n[0] * n[1])
            .flat_map(|i| {
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                [
                    i.to_le_bytes(),
                    x.to_le_bytes(),
                    (i as f64).sqrt().to_le_bytes(),
                ]
                .concat()
            })
            .collect();
        let h = Header::new(ElType::User, w as u64, n.to_vec()).unwrap();
        let opts = WriteOptions::chunked().split(true).chunks(vec![30, 64]);
        let (h, section) = codec::encode(&h, &raw, &opts).unwrap();
        let mut object = h.encode();
        object.extend_from_slice(&section);
        let store: std::sync::Arc<dyn ObjectStore> = std::sync::Arc::new(InMemory::new());
        store.put(&Path::from("r.ra"), object.into()).await.unwrap();
        let r = super::StoreArrayReader::open(store, Path::from("r.ra"))
            .await
            .unwrap();
        let section = r.section.as_ref().unwrap();
        let b = [3..29, 50..650];
        assert!(super::slabs(section, &b, 1).len() > 5, "a slab a chunk");
        let fields = [(16, 8), (0, 4)];
        let one = r
            .fields_in_slabs(&b, &fields, u64::MAX)
            .await
            .unwrap()
            .unwrap();
        let many = r.fields_in_slabs(&b, &fields, 1).await.unwrap().unwrap();
        assert_eq!(one, many);
        for (col, &(o, fw)) in one.iter().zip(&fields) {
            let want: Vec<u8> = b[1]
                .clone()
                .flat_map(|j| b[0].clone().map(move |i| (i + n[0] * j) as usize))
                .flat_map(|e| raw[e * w + o..e * w + o + fw].to_vec())
                .collect();
            assert_eq!(col, &want, "field at {o}");
        }
    }

    #[test]
    fn coalesce_joins_near_runs_within_a_span() {
        // Gaps of 2, 5, 0 and 1 bytes; gap 3 joins the first two and the last three.
        let runs = [0..4, 6..8, 13..14, 14..20, 21..22];
        assert_eq!(coalesce(&runs, 3, 100), [0..2, 2..5]);
        // A span of 8 bytes holds 0..8 and 13..20, not 13..22.
        assert_eq!(coalesce(&runs, 3, 8), [0..2, 2..4, 4..5]);
        // A run longer than the span is a group of its own.
        assert_eq!(coalesce(&[0..50, 50..51], 0, 10), [0..1, 1..2]);
        // Gap 0 joins only touching runs; out of order or overlapping runs are never joined.
        assert_eq!(coalesce(&runs, 0, 100), [0..1, 1..2, 2..4, 4..5]);
        assert_eq!(coalesce(&[8..9, 0..2, 1..3], 100, 100), [0..1, 1..2, 2..3]);
        assert_eq!(coalesce(&[], 3, 10), Vec::<std::ops::Range<usize>>::new());
    }
}
