//! The section decoder: a chunked data section read whole or by subset, from any source
//! that reads at an offset.
//!
//! [`Layout`] is the sans-IO core: given the header and the bytes it names (the config, then
//! the index segments of [`index::segment_reads`](super::index::segment_reads)), it validates
//! them and says which stored bytes a chunk occupies and how to decode and place them. A
//! reader that does its own I/O (object storage) drives it directly; [`SectionReader`] drives
//! it over a [`ReadAt`] source (a `File`, a byte slice, a map) with a small cache of decoded
//! blocks, so repeated element reads decode nothing twice.
//!
//! ```
//! use rawarray_serde::codec::{self, ChunkOptions, Codec, SectionReader};
//! use rawarray_serde::{ElType, Header};
//! let header = Header::new(ElType::Uint, 1, vec![64, 64]).unwrap();
//! let raw: Vec<u8> = (0..4096u32).map(|i| (i / 64) as u8).collect();
//! let (h, section) = codec::encode(&header, &raw, &ChunkOptions::new().chunks(vec![16, 16])).unwrap();
//! let mut file = h.encode();
//! file.extend_from_slice(&section);
//! let r = SectionReader::open(&h, &file[..]).unwrap();
//! let mut row = vec![0u8; 64];
//! r.read_subset(&[0..64, 5..6], &mut row).unwrap();
//! assert_eq!(row, [5u8; 64]);
//! assert_eq!(r.stats().chunks_read, 4);    // the four chunks along that row, no others
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::chain::{corrupt, BlockRef, Chain};
use super::config::{bad, Config};
use super::grid::{runs, Grid, Place, Runs};
use super::index::{segment_reads, Entry, Index, SegmentRead};
use crate::error::{ErrorKind, Result};
use crate::header::Header;

/// A source of bytes read at an offset (a whole `.ra` file: offsets count from its first
/// byte). `&[u8]` and `File` are sources; an object store reader fetches the same ranges.
pub trait ReadAt: Sync {
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The source's length in bytes.
    fn source_len(&self) -> io::Result<u64>;
}

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        crate::fileio::read_exact_at(self, buf, offset)
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(buf.len())?))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn source_len(&self) -> io::Result<u64> {
        (**self).source_len()
    }
}

/// The validated metadata of a chunked section: config, grid, chain and index.
#[derive(Clone, Debug)]
pub struct Layout {
    header: Header,
    config: Config,
    grid: Grid,
    chain: Chain,
    index: Index,
}

/// A config read and checked, waiting for its index segments ([`Layout::start`]).
#[derive(Clone, Debug)]
pub struct PendingIndex {
    header: Header,
    config: Config,
    grid: Grid,
    reads: Vec<SegmentRead>,
}

impl PendingIndex {
    /// The byte ranges of the data section to fetch next, one per index segment.
    pub fn segment_reads(&self) -> &[SegmentRead] {
        &self.reads
    }

    /// The layout, from the bytes of [`PendingIndex::segment_reads`], in order.
    pub fn finish(self, segments: &[&[u8]]) -> Result<Layout> {
        let index = Index::decode(
            &self.config,
            &self.grid,
            self.header.size,
            &self.reads,
            segments,
        )?;
        let chain = Chain::from_config(&self.config, self.header.elbyte)?;
        Ok(Layout {
            header: self.header,
            config: self.config,
            grid: self.grid,
            chain,
            index,
        })
    }
}

impl Layout {
    /// The config's bytes in the data section: what to read first after the header.
    pub fn config_range(header: &Header) -> Range<u64> {
        0..(Config::encoded_len(header.dims.len()) as u64).min(header.size)
    }

    /// Checks a chunked header and its config's bytes (from [`Layout::config_range`]).
    pub fn start(header: &Header, config_bytes: &[u8]) -> Result<PendingIndex> {
        if !header.flags.is_chunked() {
            return Err(bad(
                "header flags",
                "bit 2 (chunked) set",
                header.flags.bits(),
            ));
        }
        let config = Config::decode(header, config_bytes)?;
        let grid = Grid::new(&header.dims, &config.chunk, header.elbyte)?;
        let reads = segment_reads(&config, &grid, header.size);
        Ok(PendingIndex {
            header: header.clone(),
            config,
            grid,
            reads,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The chunk grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The filter and codec.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Chunk `n`'s stored bytes in the data section, `None` if it was never written.
    pub fn chunk_range(&self, n: u64) -> Option<Range<u64>> {
        let e = self.index.entry(n);
        (!e.is_empty()).then(|| e.offset..e.offset + e.len)
    }

    /// Decodes chunk `n` from all its stored bytes into `out` (its raw length), checking the
    /// entry's CRC first.
    pub fn decode_chunk(&self, n: u64, stored: &[u8], out: &mut [u8]) -> Result<()> {
        let e = self.index.entry(n);
        self.check_stored(n, stored)?;
        let raw_len = self.stored_raw_len(n);
        self.chain
            .decode_chunk_prefix(n, stored, e.flags, raw_len, out)
    }

    /// Checks chunk `n`'s stored bytes against its index entry: their length and CRC-32.
    pub fn check_stored(&self, n: u64, stored: &[u8]) -> Result<()> {
        let e = self.index.entry(n);
        let crc = crc32fast::hash(stored);
        if stored.len() as u64 != e.len || crc != e.crc {
            return Err(corrupt(
                n,
                format!(
                    "crc32 {crc:#010x} of {} stored bytes, index says {:#010x} of {}",
                    stored.len(),
                    e.crc,
                    e.len
                ),
            ));
        }
        Ok(())
    }

    /// Raw bytes chunk `n`'s stored bytes decode to: [`Grid::raw_len`], or more for a chunk
    /// stored at its full extent ([`super::ENTRY_FULL`]; its entry was validated with it).
    pub fn stored_raw_len(&self, n: u64) -> u64 {
        super::index::stored_raw_len(&self.grid, n, &self.index.entry(n))
            .unwrap_or_else(|| self.grid.raw_len(n))
    }

    /// The runs `(chunk raw byte, out byte, bytes)` that place chunk `n`'s part of the subset
    /// `ranges` in a buffer of the subset's shape.
    pub fn subset_runs(&self, n: u64, ranges: &[Range<u64>]) -> Runs {
        let (o, s) = (self.grid.origin(n), self.grid.shape(n));
        let lo: Vec<u64> = ranges
            .iter()
            .zip(&o)
            .map(|(r, &o)| r.start.max(o))
            .collect();
        let extent: Vec<u64> = (0..o.len())
            .map(|k| ranges[k].end.min(o[k] + s[k]).saturating_sub(lo[k]))
            .collect();
        let at_src: Vec<u64> = lo.iter().zip(&o).map(|(l, o)| l - o).collect();
        let at_dst: Vec<u64> = lo.iter().zip(ranges).map(|(l, r)| l - r.start).collect();
        let sub: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        runs(
            &extent,
            self.grid.elbyte(),
            Place {
                dims: &s,
                at: &at_src,
            },
            Place {
                dims: &sub,
                at: &at_dst,
            },
        )
    }
}

/// What a [`SectionReader`] has read so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectionStats {
    /// Stored (compressed) bytes read, block tables included; index and config excluded.
    pub compressed_bytes: u64,
    /// Chunks whose stored bytes were read (once per chunk per read call).
    pub chunks_read: u64,
    /// Blocks decoded (whole-chunk decodes count their blocks).
    pub blocks_decoded: u64,
}

/// A decoded block and the tick of its last use.
type CachedBlock = (Arc<Vec<u8>>, u64);

/// The decoded blocks (and block tables) kept for repeated access.
#[derive(Default)]
struct BlockCache {
    /// By (chunk, block).
    blocks: HashMap<(u64, u64), CachedBlock>,
    tables: HashMap<u64, Arc<Vec<BlockRef>>>,
    bytes: usize,
    tick: u64,
}

/// Decoded bytes a reader keeps, at most.
const CACHE_BYTES: usize = 32 << 20;
/// Block tables a reader keeps, at most.
const CACHE_TABLES: usize = 1024;

impl BlockCache {
    fn get(&mut self, key: (u64, u64)) -> Option<Arc<Vec<u8>>> {
        self.tick += 1;
        let tick = self.tick;
        self.blocks.get_mut(&key).map(|(b, t)| {
            *t = tick;
            Arc::clone(b)
        })
    }

    fn put(&mut self, key: (u64, u64), block: Arc<Vec<u8>>) {
        if block.len() > CACHE_BYTES / 4 {
            return;
        }
        while self.bytes + block.len() > CACHE_BYTES {
            let Some((&old, _)) = self.blocks.iter().min_by_key(|(_, (_, t))| *t) else {
                break;
            };
            let (b, _) = self.blocks.remove(&old).expect("found above");
            self.bytes -= b.len();
        }
        self.tick += 1;
        self.bytes += block.len();
        if let Some((b, _)) = self.blocks.insert(key, (block, self.tick)) {
            self.bytes -= b.len();
        }
    }
}

/// Times [`SectionReader::open_at`] takes a later size for entries past its header's.
const LATER_SIZE_TRIES: usize = 8;

/// The config and index of the section at `base` in `source`, as `header` describes it.
fn read_layout<S: ReadAt>(header: &Header, source: &S, base: u64) -> Result<Layout> {
    let cr = Layout::config_range(header);
    let mut config = vec![0u8; (cr.end - cr.start) as usize];
    source.read_exact_at(&mut config, base + cr.start)?;
    let pending = Layout::start(header, &config)?;
    // One read for the segments in the common case (segment 0 only).
    let mut bufs = Vec::with_capacity(pending.segment_reads().len());
    for r in pending.segment_reads() {
        let mut b = vec![0u8; (r.bytes.end - r.bytes.start) as usize];
        source.read_exact_at(&mut b, base + r.bytes.start)?;
        bufs.push(b);
    }
    let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
    pending.finish(&refs)
}

/// The size of the header now in `source` before `base`, if it is `header`'s file grown since:
/// the same type and number of dims, leading dims equal, a last dim and a size no smaller, and
/// a larger size. `None` when there is no header there (a section alone) or it is anything else.
fn later_size<S: ReadAt>(header: &Header, source: &S, base: u64) -> Option<u64> {
    let hlen = header.encoded_len() as u64;
    let at = base.checked_sub(hlen)?;
    let mut bytes = vec![0u8; hlen as usize];
    source.read_exact_at(&mut bytes, at).ok()?;
    let now = Header::decode_any(&bytes).ok()?;
    let n = header.dims.len();
    let grown = now.flags == header.flags
        && now.eltype == header.eltype
        && now.elbyte == header.elbyte
        && now.dims.len() == n
        && n > 0
        && now.dims[..n - 1] == header.dims[..n - 1]
        && now.dims[n - 1] >= header.dims[n - 1]
        && now.size > header.size;
    grown.then_some(now.size)
}

/// A chunked data section read through a [`ReadAt`] source (see the module docs).
pub struct SectionReader<S> {
    layout: Layout,
    source: S,
    base: u64,
    threads: usize,
    cache: Mutex<BlockCache>,
    compressed_bytes: AtomicU64,
    chunks_read: AtomicU64,
    blocks_decoded: AtomicU64,
}

impl<S: ReadAt> SectionReader<S> {
    /// Reads and validates the config and index of the chunked file `source` whose header
    /// (already read from it) is `header`: two reads.
    pub fn open(header: &Header, source: S) -> Result<SectionReader<S>> {
        SectionReader::open_at(header, source, header.encoded_len() as u64)
    }

    /// [`SectionReader::open`] for a source whose data section starts at `base` (0 for a
    /// source holding the section alone, as a stream reader has it).
    pub fn open_at(header: &Header, source: S, base: u64) -> Result<SectionReader<S>> {
        let have = source.source_len()?.saturating_sub(base);
        if have < header.size {
            return Err(ErrorKind::Truncated {
                expected: header.size,
                found: have,
            }
            .into());
        }
        let mut layout = read_layout(header, &source, base)?;
        // An entry past `size` may be a chunk a writer moved after this header was read: a
        // record writer's last chunk, whose new version it commits with a larger size (old
        // dims) before it points the entry there. A later header's size read with this
        // header's dims is a state of the file too (see doc/chunked.md), so it is taken.
        let mut h = header.clone();
        for _ in 0..LATER_SIZE_TRIES {
            if layout.index().uncommitted().is_empty() {
                break;
            }
            let Some(size) = later_size(&h, &source, base) else {
                break;
            };
            h.size = size;
            layout = read_layout(&h, &source, base)?;
        }
        Ok(SectionReader {
            layout,
            source,
            base,
            threads: 0,
            cache: Mutex::new(BlockCache::default()),
            compressed_bytes: AtomicU64::new(0),
            chunks_read: AtomicU64::new(0),
            blocks_decoded: AtomicU64::new(0),
        })
    }

    /// Decode whole reads on `threads` threads (0: rayon's global pool).
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> SectionReader<S> {
        self.threads = threads;
        self
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// What has been read so far.
    pub fn stats(&self) -> SectionStats {
        SectionStats {
            compressed_bytes: self.compressed_bytes.load(Ordering::Relaxed),
            chunks_read: self.chunks_read.load(Ordering::Relaxed),
            blocks_decoded: self.blocks_decoded.load(Ordering::Relaxed),
        }
    }

    fn read_at(&self, len: u64, offset: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; crate::data::to_usize(len)?];
        self.source.read_exact_at(&mut b, self.base + offset)?;
        self.compressed_bytes.fetch_add(len, Ordering::Relaxed);
        Ok(b)
    }

    /// Reads and decodes chunk `n` whole into `out` (its raw length; zeros if never written).
    fn read_chunk_into(&self, n: u64, out: &mut [u8], zeroed: bool) -> Result<()> {
        let e = self.layout.index.entry(n);
        if e.is_empty() {
            // A fresh zeroed buffer's pages stay untouched: a sparse array costs no memory
            // where its chunks were never written.
            if !zeroed {
                out.fill(0);
            }
            return Ok(());
        }
        let stored = self.read_at(e.len, e.offset)?;
        self.chunks_read.fetch_add(1, Ordering::Relaxed);
        self.blocks_decoded.fetch_add(
            if e.is_raw() {
                0
            } else {
                self.layout.chain.block_count(self.layout.stored_raw_len(n))
            },
            Ordering::Relaxed,
        );
        self.layout.decode_chunk(n, &stored, out)
    }

    /// The whole section decoded: `dims x elbyte` bytes in the file's byte order. Chunks are
    /// decoded in parallel.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let h = &self.layout.header;
        let total = crate::data::to_usize(h.data_len())?;
        // The caller asked for all of it, chunks never written included (they read as zeros);
        // an allocation the system refuses is an error, not an abort.
        Vec::<u8>::new()
            .try_reserve_exact(total)
            .map_err(|_| ErrorKind::TooLarge {
                bytes: h.data_len(),
            })?;
        let mut out = vec![0u8; total];
        self.decode_all_into(&mut out, true)?;
        Ok(out)
    }

    /// [`SectionReader::read_all`] into the caller's buffer of exactly `dims x elbyte` bytes
    /// (whatever it holds: chunks never written are zeroed), chunks decoded in parallel.
    pub fn read_all_into(&self, out: &mut [u8]) -> Result<()> {
        let h = &self.layout.header;
        if out.len() as u64 != h.data_len() {
            return Err(ErrorKind::ShapeMismatch {
                dims: h.dims.clone(),
                expected: h.data_len(),
                len: out.len() as u64,
            }
            .into());
        }
        self.decode_all_into(out, false)
    }

    /// Decodes every chunk into `out` (the section's length); `zeroed`: it is known to hold
    /// zeros, so chunks never written are left alone.
    fn decode_all_into(&self, out: &mut [u8], zeroed: bool) -> Result<()> {
        let total = out.len();
        if total == 0 {
            return Ok(());
        }
        let grid = &self.layout.grid;
        in_pool(self.threads, || {
            if grid.is_contiguous() {
                // Chunk n is bytes n x stride .. of the section: decode in place. The stride
                // is chunk 0's raw length, clipped to the array (the config's chunk shape may
                // exceed the dims by any amount), so it is at most `total` and never 0 here.
                let stride = grid.raw_len(0) as usize;
                out.par_chunks_mut(stride)
                    .enumerate()
                    .try_for_each(|(i, dst)| self.read_chunk_into(i as u64, dst, zeroed))
            } else if let Some(slab) = self.slab_bytes(out.len()) {
                // Slabs of whole chunks along the last dim are disjoint runs of `out`: each
                // thread decodes a slab's chunks and places them itself.
                out.par_chunks_mut(slab)
                    .enumerate()
                    .try_for_each(|(k, dst)| self.decode_slab(k as u64, slab as u64, dst, zeroed))
            } else {
                // Chunks never written are left alone below: a used buffer is zeroed first.
                if !zeroed {
                    out.fill(0);
                }
                let batch = rayon::current_num_threads().max(1) * 4;
                let all: Vec<Range<u64>> =
                    (0..grid.dims().len()).map(|k| 0..grid.dims()[k]).collect();
                let mut first = 0;
                while first < grid.count() {
                    let last = (first + batch as u64).min(grid.count());
                    // Chunks never written stay as the zeros `out` starts with.
                    let decoded: Vec<Option<Vec<u8>>> = (first..last)
                        .into_par_iter()
                        .map(|c| {
                            if self.layout.index.entry(c).is_empty() {
                                return Ok(None);
                            }
                            let mut buf = vec![0u8; grid.raw_len(c) as usize];
                            self.read_chunk_into(c, &mut buf, true).map(|()| Some(buf))
                        })
                        .collect::<Result<_>>()?;
                    for (c, buf) in (first..last).zip(decoded) {
                        let Some(buf) = buf else { continue };
                        for (s, d, len) in self.layout.subset_runs(c, &all) {
                            out[d as usize..(d + len) as usize]
                                .copy_from_slice(&buf[s as usize..(s + len) as usize]);
                        }
                    }
                    first = last;
                }
                Ok(())
            }
        })?
    }

    /// The bytes of a slab of `out` (`total` bytes) that holds one row of chunks along the
    /// last dim, when there are enough slabs to keep every thread busy; else `None`.
    fn slab_bytes(&self, total: usize) -> Option<usize> {
        let grid = &self.layout.grid;
        let last = grid.dims().len().checked_sub(1)?;
        let slabs = grid.counts()[last] as usize;
        if slabs < rayon::current_num_threads().max(2) {
            return None;
        }
        let plane = total as u64 / grid.dims()[last].max(1);
        usize::try_from(plane * grid.chunk()[last]).ok()
    }

    /// Decodes the chunks of slab `k` (`slab` bytes of the output each) into `dst`, through
    /// one buffer of a chunk for the whole slab (a fresh buffer per chunk cost its page faults
    /// and zeroing, more than decoding LZ4; the buffer goes with the slab, so no thread keeps
    /// memory after the read); chunks never written become zeros unless `zeroed`.
    fn decode_slab(&self, k: u64, slab: u64, dst: &mut [u8], zeroed: bool) -> Result<()> {
        let grid = &self.layout.grid;
        let last = grid.dims().len() - 1;
        let per: u64 = grid.counts()[..last].iter().product();
        let all: Vec<Range<u64>> = grid.dims().iter().map(|&d| 0..d).collect();
        let base = k * slab;
        let mut buf: Vec<u8> = Vec::new();
        for c in k * per..(k + 1) * per {
            let empty = self.layout.index.entry(c).is_empty();
            if empty && zeroed {
                continue;
            }
            let len = grid.raw_len(c) as usize;
            if buf.len() < len {
                buf.resize(len, 0);
            }
            if empty {
                buf[..len].fill(0);
            } else {
                self.read_chunk_into(c, &mut buf[..len], true)?;
            }
            for (s, d, n) in self.layout.subset_runs(c, &all) {
                let d = (d - base) as usize;
                dst[d..d + n as usize].copy_from_slice(&buf[s as usize..(s + n) as usize]);
            }
        }
        Ok(())
    }

    /// The block table of chunk `n` (cached).
    fn table(&self, n: u64, e: &Entry) -> Result<Arc<Vec<BlockRef>>> {
        if let Some(t) = self.cache.lock().expect("cache lock").tables.get(&n) {
            return Ok(Arc::clone(t));
        }
        let raw_len = self.layout.stored_raw_len(n);
        let tlen = super::block_table_len(raw_len, self.layout.chain.block_bytes())
            .map_or(e.len, |t| t.min(e.len));
        let bytes = self.read_at(tlen, e.offset)?;
        let t = Arc::new(self.layout.chain.block_table(n, &bytes, raw_len, e.len)?);
        let mut cache = self.cache.lock().expect("cache lock");
        if cache.tables.len() >= CACHE_TABLES {
            cache.tables.clear();
        }
        cache.tables.insert(n, Arc::clone(&t));
        Ok(t)
    }

    /// The stored bytes of chunk `n`, stored raw, checked against its entry (cached, under the
    /// block key `u64::MAX`, which no block of a chunk has).
    fn raw_chunk(&self, n: u64, e: &Entry) -> Result<Arc<Vec<u8>>> {
        if let Some(chunk) = self.cache.lock().expect("cache lock").get((n, u64::MAX)) {
            return Ok(chunk);
        }
        let stored = self.read_at(e.len, e.offset)?;
        self.layout.check_stored(n, &stored)?;
        let chunk = Arc::new(stored);
        self.cache
            .lock()
            .expect("cache lock")
            .put((n, u64::MAX), Arc::clone(&chunk));
        Ok(chunk)
    }

    /// Block `b` of chunk `n`, decoded (cached).
    fn block(&self, n: u64, b: u64, e: &Entry, table: &[BlockRef]) -> Result<Arc<Vec<u8>>> {
        if let Some(block) = self.cache.lock().expect("cache lock").get((n, b)) {
            return Ok(block);
        }
        let r = &table[b as usize];
        let stored = self.read_at(r.len, e.offset + r.start)?;
        let range = self
            .layout
            .chain
            .block_range(self.layout.stored_raw_len(n), b);
        let mut out = vec![0u8; (range.end - range.start) as usize];
        self.layout.chain.decode_block(n, b, r, &stored, &mut out)?;
        self.blocks_decoded.fetch_add(1, Ordering::Relaxed);
        let out = Arc::new(out);
        self.cache
            .lock()
            .expect("cache lock")
            .put((n, b), Arc::clone(&out));
        Ok(out)
    }

    /// Decodes the subset `ranges` (one per dim, first varying fastest) into `out`, column-major
    /// over the subset's shape, in the file's byte order. Only the chunks the subset intersects
    /// are read, and in each only the blocks it touches.
    pub fn read_subset(&self, ranges: &[Range<u64>], out: &mut [u8]) -> Result<()> {
        let h = &self.layout.header;
        let plan = crate::SubsetPlan::new(&h.dims, h.elbyte, ranges)?;
        if out.len() as u64 != plan.bytes() {
            return Err(ErrorKind::ShapeMismatch {
                dims: plan.dims(),
                expected: plan.bytes(),
                len: out.len() as u64,
            }
            .into());
        }
        for n in self.layout.grid.touched(ranges) {
            let rows = self.layout.subset_runs(n, ranges);
            let e = self.layout.index.entry(n);
            if e.is_empty() {
                for (_, d, len) in rows {
                    out[d as usize..(d + len) as usize].fill(0);
                }
                continue;
            }
            self.chunks_read.fetch_add(1, Ordering::Relaxed);
            if e.is_raw() {
                // Its CRC covers the whole chunk, so the whole chunk is read and checked (and
                // kept for the next read): a part read alone could not be.
                let chunk = self.raw_chunk(n, &e)?;
                for (s, d, len) in rows {
                    out[d as usize..(d + len) as usize]
                        .copy_from_slice(&chunk[s as usize..(s + len) as usize]);
                }
                continue;
            }
            let table = self.table(n, &e)?;
            let bb = self.layout.chain.block_bytes();
            let mut current: Option<(u64, Arc<Vec<u8>>)> = None;
            for (s, d, len) in rows {
                let mut done = 0;
                while done < len {
                    let at = s + done;
                    let b = at / bb;
                    if current.as_ref().is_none_or(|(cb, _)| *cb != b) {
                        current = Some((b, self.block(n, b, &e, &table)?));
                    }
                    let block = &current.as_ref().expect("set above").1;
                    let off = at - b * bb;
                    let take = (len - done).min(block.len() as u64 - off);
                    let d0 = (d + done) as usize;
                    out[d0..d0 + take as usize]
                        .copy_from_slice(&block[off as usize..(off + take) as usize]);
                    done += take;
                }
            }
        }
        Ok(())
    }
}

impl<S> std::fmt::Debug for SectionReader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SectionReader")
            .field("layout", &self.layout)
            .field("base", &self.base)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// Runs `f` on a pool of `threads` threads, or on rayon's global pool for 0.
pub(crate) fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    if threads == 0 {
        return Ok(f());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| crate::Error::msg(format!("thread pool of {threads}: {e}")))?;
    Ok(pool.install(f))
}

/// The whole chunked section of `source` (a whole file whose header is `header`) decoded.
pub fn decode_all<S: ReadAt>(header: &Header, source: S) -> Result<Vec<u8>> {
    SectionReader::open(header, source)?.read_all()
}

/// Decodes the subset `ranges` of the chunked file `source` into `out` (see
/// [`SectionReader::read_subset`]).
pub fn decode_subset<S: ReadAt>(
    header: &Header,
    source: S,
    ranges: &[Range<u64>],
    out: &mut [u8],
) -> Result<()> {
    SectionReader::open(header, source)?.read_subset(ranges, out)
}
