//! Reading `.ra` files and blocks of them from object storage (S3, GCS, Azure, HTTP, local
//! files) through the `object_store` crate: [`StoreArrayReader`] (feature `object_store`).

use std::cell::Cell;
use std::io;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore};

use crate::array::{element_dims, RawArray};
use crate::data;
use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::header::{Header, FIXED_HEADER_LEN, MAX_NDIMS};
use crate::reader::{
    block_header_and_bytes, check_out_len, copy_runs, decode_into_slice, typed_plan, Counter,
    IoStats,
};
use crate::subset::SubsetPlan;
use crate::trailer::{data_end, locate, Probe, Source, Trailer};

/// Bytes of the first request: at least every header up to [`MAX_NDIMS`] dims (so a second
/// header request is never needed), and enough that a small file comes whole in one request.
const FIRST_FETCH: u64 = 64 << 10;

/// Bytes of the suffix request for the trailer: a trailer block larger than this (params of
/// more than about 64 KiB of JSON) costs one more request.
const TAIL_FETCH: u64 = 64 << 10;

/// Most ranges asked for in one `get_ranges` call, and most bytes, so that a block of a
/// million tiny runs is fetched in batches whose buffers stay small.
const BATCH_RANGES: usize = 1 << 16;
const BATCH_BYTES: u64 = 64 << 20;

const _: () = assert!(FIRST_FETCH >= FIXED_HEADER_LEN as u64 + 8 * MAX_NDIMS);

/// A `.ra` file in an object store, opened for reading blocks: what
/// [`ArrayReader`](crate::ArrayReader) does for a local file, by ranged requests.
///
/// [`open`](StoreArrayReader::open) costs at most two requests for any file whose trailer is
/// under 64 KiB: one ranged request for the first 64 KiB (every valid header fits; the whole
/// file if it is small) and one suffix request for the trailer, only if the file has bytes
/// after its data that the first did not bring. A block's runs are fetched with `get_ranges`
/// (which the store may coalesce further), in batches of at most 65536 runs; a block that is
/// one run (a whole array, or whole leading planes) is streamed into its buffer with one
/// request. An LZ4 file's data section is fetched with one request and decompressed whole, as
/// [`ArrayReader`](crate::ArrayReader) does.
///
/// The object is assumed not to change while the reader is open; a shorter object than the
/// header describes is an error (`Truncated`), never a panic.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, path::Path, ObjectStore, PutPayload};
/// use rawarray_serde::{RawArray, StoreArrayReader};
///
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let a = RawArray::from_shape_vec(vec![4, 3, 2], (0..24).map(|i| i as f32).collect()).unwrap();
/// let path = Path::from("data/cube.ra");
/// store.put(&path, PutPayload::from(a.to_bytes())).await.unwrap();
///
/// let r = StoreArrayReader::open(store, path).await.unwrap();
/// assert_eq!(r.header().dims, [4, 3, 2]);
/// let col: RawArray<f32> = r.read_subset(&[1..3, 2..3, 0..2]).await.unwrap();
/// assert_eq!(col.as_slice(), &[9.0, 10.0, 21.0, 22.0]);
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "object_store")))]
#[derive(Debug)]
pub struct StoreArrayReader {
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    header: Header,
    object_len: u64,
    trailer: Option<Trailer>,
    trailer_error: Option<String>,
    /// The decompressed data section of an LZ4 file, once fetched.
    plain: OnceLock<Vec<u8>>,
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
    /// requests; see the type's docs).
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
        let (first, object_len) = match store.get_opts(&path, opts).await {
            Ok(got) => {
                let len = got.meta.size;
                (got.bytes().await.map_err(store_error)?, len)
            }
            // An empty object has no byte 0 to start a range at: say so as for a file.
            Err(e) => match store.head(&path).await {
                Ok(meta) if meta.size == 0 => (Bytes::new(), 0),
                _ => return Err(store_error(e)),
            },
        };
        counter.add(first.len() as u64);
        let header = Header::decode(&first)?;
        header.check_input_len(object_len)?;
        let end = data_end(&header);
        let mut pieces = vec![(0u64, first)];
        let mut probe = Probe::Absent;
        if object_len > end {
            // The trailer is found from the end: one suffix request unless the first brought it.
            let have = pieces[0].1.len() as u64;
            if have < object_len {
                let want = TAIL_FETCH.min(object_len - end);
                let tail = fetch(&*store, &path, GetRange::Suffix(want), &counter).await?;
                pieces.push((object_len - tail.len() as u64, tail));
            }
            // A block larger than what was fetched: fetch what the probe missed, and look again.
            for _ in 0..3 {
                let missed = {
                    let src = Pieces {
                        pieces: &pieces,
                        missed: Cell::new(None),
                    };
                    probe = locate(&src, end, object_len);
                    src.missed.get().map(|(s, e)| s..e)
                };
                match (&probe, missed) {
                    (Probe::Valid(_), _) | (_, None) => break,
                    (_, Some(r)) => {
                        let r = r.start.max(end)..r.end.min(object_len);
                        if r.start >= r.end {
                            break;
                        }
                        let got =
                            fetch(&*store, &path, GetRange::Bounded(r.clone()), &counter).await?;
                        pieces.push((r.start, got));
                    }
                }
            }
        }
        let (trailer, trailer_error) = match probe {
            Probe::Absent => (None, None),
            Probe::Damaged(why) => (None, Some(why)),
            Probe::Valid(block) => (Some(block.trailer), None),
        };
        Ok(StoreArrayReader {
            store,
            path,
            header,
            object_len,
            trailer,
            trailer_error,
            plain: OnceLock::new(),
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

    /// The object's length in bytes, as the store said at open.
    pub fn object_len(&self) -> u64 {
        self.object_len
    }

    /// The requests made so far (open included) and the bytes they brought.
    pub fn io_stats(&self) -> IoStats {
        self.counter.get()
    }

    /// The plan of a subset in the file's dims and elements (see [`SubsetPlan`]).
    pub fn plan(&self, ranges: &[Range<u64>]) -> Result<SubsetPlan> {
        SubsetPlan::new(&self.header.dims, self.header.elbyte, ranges)
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
        let mut bytes = vec![0u8; data::to_usize(plan.bytes())?];
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
        let mut bytes = vec![0u8; data::to_usize(plan.bytes())?];
        self.fill(plan, &mut bytes).await?;
        decode_into_slice(&bytes, big_endian, out)
    }

    /// Fetches the plan's runs, as stored, into `dst`.
    async fn fill(&self, plan: &SubsetPlan, dst: &mut [u8]) -> Result<()> {
        let run = data::to_usize(plan.run_len())?;
        if plan.run_count() == 0 || run == 0 {
            return Ok(());
        }
        if self.header.is_compressed() {
            let plain = self.plain().await?;
            copy_runs(plan, plain, dst, run);
            return Ok(());
        }
        let base = self.header.encoded_len() as u64;
        if plan.run_count() == 1 {
            let r = plan.runs().next().expect("one run");
            return self.stream_into(base + r.start..base + r.end, dst).await;
        }
        let mut runs = plan.runs();
        let mut chunks = dst.chunks_exact_mut(run);
        let per_batch = usize::try_from(BATCH_BYTES / plan.run_len())
            .unwrap_or(usize::MAX)
            .clamp(1, BATCH_RANGES);
        loop {
            let batch: Vec<Range<u64>> = runs
                .by_ref()
                .take(per_batch)
                .map(|r| base + r.start..base + r.end)
                .collect();
            if batch.is_empty() {
                return Ok(());
            }
            let got = self
                .store
                .get_ranges(&self.path, &batch)
                .await
                .map_err(store_error)?;
            let bytes: u64 = got.iter().map(|b| b.len() as u64).sum();
            self.counter.add(bytes);
            if got.len() != batch.len() {
                return Err(std::io::Error::other(format!(
                    "the store answered {} ranges for {} asked",
                    got.len(),
                    batch.len()
                ))
                .into());
            }
            for ((r, b), chunk) in batch.iter().zip(&got).zip(chunks.by_ref()) {
                if b.len() != chunk.len() {
                    return Err(self.truncated(r.start + b.len() as u64));
                }
                chunk.copy_from_slice(b);
            }
        }
    }

    /// One ranged request, streamed into `dst` (exactly the range's length).
    async fn stream_into(&self, range: Range<u64>, dst: &mut [u8]) -> Result<()> {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        let got = self
            .store
            .get_opts(&self.path, opts)
            .await
            .map_err(store_error)?;
        let mut stream = got.into_stream();
        let mut filled = 0usize;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(store_error)?;
            let end = filled + chunk.len();
            if end > dst.len() {
                return Err(std::io::Error::other(format!(
                    "the store answered more than the {} bytes asked",
                    dst.len()
                ))
                .into());
            }
            dst[filled..end].copy_from_slice(&chunk);
            filled = end;
        }
        self.counter.add(filled as u64);
        if filled != dst.len() {
            return Err(self.truncated(range.start + filled as u64));
        }
        Ok(())
    }

    /// The decompressed data section, fetched with one request and decompressed on first use.
    async fn plain(&self) -> Result<&[u8]> {
        if let Some(p) = self.plain.get() {
            return Ok(p);
        }
        let mut packed = vec![0u8; data::to_usize(self.header.size)?];
        let base = self.header.encoded_len() as u64;
        self.stream_into(base..base + self.header.size, &mut packed)
            .await?;
        let plain = data::decompress(&packed, &self.header)?;
        Ok(self.plain.get_or_init(|| plain))
    }

    /// The error for an object that ended at `at`, inside the data section.
    fn truncated(&self, at: u64) -> Error {
        ErrorKind::Truncated {
            expected: self.header.size,
            found: at.saturating_sub(self.header.encoded_len() as u64),
        }
        .into()
    }
}

/// One ranged request's bytes.
async fn fetch(
    store: &dyn ObjectStore,
    path: &StorePath,
    range: GetRange,
    counter: &Counter,
) -> Result<Bytes> {
    let opts = GetOptions {
        range: Some(range),
        ..GetOptions::default()
    };
    let got = store.get_opts(path, opts).await.map_err(store_error)?;
    let bytes = got.bytes().await.map_err(store_error)?;
    counter.add(bytes.len() as u64);
    Ok(bytes)
}

/// An object store's error as an I/O error (`NotFound` stays `NotFound`).
fn store_error(e: object_store::Error) -> Error {
    Error::from(io::Error::from(e))
}

/// The parts of an object fetched so far, addressed by offset for the trailer probes; a read
/// outside them fails and is remembered, so the caller can fetch it and look again.
struct Pieces<'a> {
    pieces: &'a [(u64, Bytes)],
    missed: Cell<Option<(u64, u64)>>,
}

impl Source for Pieces<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        for (start, bytes) in self.pieces {
            let piece_end = start + bytes.len() as u64;
            if *start <= offset && end <= piece_end {
                let at = (offset - start) as usize;
                buf.copy_from_slice(&bytes[at..at + buf.len()]);
                return Ok(());
            }
        }
        let missed = match self.missed.get() {
            Some((s, e)) => (s.min(offset), e.max(end)),
            None => (offset, end),
        };
        self.missed.set(Some(missed));
        Err(io::ErrorKind::UnexpectedEof.into())
    }
}
