//! The chunked storage kind (flag bit 2) behind [`Section`](super::Section): a [`ChunkMap`]
//! driven over a [`ReadAt`] source, with a small cache of decoded blocks, so repeated element
//! reads decode nothing twice.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::codec::chain::BlockRef;
use crate::codec::map::ChunkMap;
use crate::codec::Entry;
use crate::error::{ErrorKind, Result};
use crate::header::Header;
use crate::io::ReadAt;

/// What a section has read so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectionStats {
    /// Stored (compressed) bytes read, block tables included; index and config excluded.
    pub compressed_bytes: u64,
    /// Chunks whose stored bytes were read (once per chunk per read call).
    pub chunks_read: u64,
    /// Blocks decoded (whole-chunk decodes count their blocks).
    pub blocks_decoded: u64,
    /// Raw bytes the decoded blocks hold (doc/chunked.md section 8's bound is on this).
    pub decoded_bytes: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    /// Positioned reads of a plain or whole-LZ4 section, and their bytes.
    pub(crate) reads: AtomicU64,
    pub(crate) bytes: AtomicU64,
    compressed_bytes: AtomicU64,
    chunks_read: AtomicU64,
    blocks_decoded: AtomicU64,
    decoded_bytes: AtomicU64,
}

impl Counters {
    pub(crate) fn stats(&self) -> SectionStats {
        SectionStats {
            compressed_bytes: self.compressed_bytes.load(Ordering::Relaxed),
            chunks_read: self.chunks_read.load(Ordering::Relaxed),
            blocks_decoded: self.blocks_decoded.load(Ordering::Relaxed),
            decoded_bytes: self.decoded_bytes.load(Ordering::Relaxed),
        }
    }

    /// What a reader of `storage` calls its I/O: runs read (plain), the section read (LZ4),
    /// chunks read and their stored bytes (chunked).
    pub(crate) fn io_stats(&self, chunked: bool) -> super::IoStats {
        if chunked {
            super::IoStats {
                reads: self.chunks_read.load(Ordering::Relaxed),
                bytes: self.compressed_bytes.load(Ordering::Relaxed),
            }
        } else {
            super::IoStats {
                reads: self.reads.load(Ordering::Relaxed),
                bytes: self.bytes.load(Ordering::Relaxed),
            }
        }
    }

    pub(crate) fn read(&self, bytes: u64) {
        self.read_runs(1, bytes);
    }

    /// `runs` positioned reads of a plain section, `bytes` in all (a run counts as one read,
    /// however many pieces it was copied in).
    pub(crate) fn read_runs(&self, runs: u64, bytes: u64) {
        self.reads.fetch_add(runs, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn blocks(&self, n: u64, bytes: u64) {
        self.blocks_decoded.fetch_add(n, Ordering::Relaxed);
        self.decoded_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
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

/// Decoded-block buffers of dropped readers (and blocks evicted from a cache), taken by the
/// next block decoded at the same length. A read of one element opens a file, decodes one
/// block and drops the reader: with a fresh buffer each time, zero-filling it and the page
/// faults of its first touch were about a fifth of the read (a default block is 128 to 256 KiB).
///
/// Sound to hand out with old contents: every block decoder writes all of its output or fails
/// (each codec checks the decoded length; each filter writes every byte of its output, as the
/// pipeline's reused scratch buffers already rely on), and the buffer of a failed decode is
/// dropped, never cached: a block read never shows bytes of another block.
///
/// The lock is only tried, never waited for: a busy pool (or one a forked child inherited
/// locked) means a fresh buffer, or a buffer dropped.
static SPARE_BLOCKS: Mutex<VecDeque<Vec<u8>>> = Mutex::new(VecDeque::new());
/// Buffers kept spare, at most: the oldest goes when another comes (blocks at the edges of an
/// array have lengths of their own, which must not keep the pool full for good).
const SPARE_MAX: usize = 8;
/// The largest buffer kept spare (blocks of version 1 may be much larger than the default).
const SPARE_MAX_BYTES: usize = 4 << 20;

/// A buffer of `len` bytes for a decoder that writes all of them (contents unspecified).
fn block_buffer(len: u64) -> Result<Vec<u8>> {
    if let Ok(mut spare) = SPARE_BLOCKS.try_lock() {
        if let Some(i) = spare.iter().rposition(|b| b.len() as u64 == len) {
            if let Some(b) = spare.remove(i) {
                return Ok(b);
            }
        }
    }
    crate::data::try_zeroed_bytes(len)
}

/// Gives `block` back for reuse if no reader holds it any more.
fn give_back(block: Arc<Vec<u8>>) {
    if let Ok(b) = Arc::try_unwrap(block) {
        if b.len() <= SPARE_MAX_BYTES && !b.is_empty() {
            if let Ok(mut spare) = SPARE_BLOCKS.try_lock() {
                if spare.len() == SPARE_MAX {
                    spare.pop_front();
                }
                spare.push_back(b);
            }
        }
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for (_, (block, _)) in self.blocks.drain() {
            give_back(block);
        }
    }
}

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
            give_back(b);
        }
        self.tick += 1;
        self.bytes += block.len();
        if let Some((b, _)) = self.blocks.insert(key, (block, self.tick)) {
            self.bytes -= b.len();
        }
    }
}

/// Times [`Chunked::open`] takes a later size for entries past its header's.
const LATER_SIZE_TRIES: usize = 8;

/// Reads of the config and index [`Chunked::open`] makes before it takes a failure as the
/// file's. A writer appending to a record file rewrites its last chunk's entry with one
/// `pwrite` (doc/chunked.md 7.1, step (c)), and a concurrent read may copy that entry half
/// before and half after the write: its CRC then fails, and the next read finds it whole.
/// Damage fails every read.
const MAP_TRIES: usize = 3;

/// [`read_map`], read again (up to [`MAP_TRIES`] reads) while it fails: an entry torn by a
/// concurrent read of a writer's entry write is whole on the next read; an entry that passes
/// its CRC is one a writer wrote, so no read again can yield a value no writer wrote.
fn read_map_settled<S: ReadAt + ?Sized>(
    header: &Header,
    source: &S,
    base: u64,
) -> Result<ChunkMap> {
    let mut last = read_map(header, source, base);
    for _ in 1..MAP_TRIES {
        if last.is_ok() {
            break;
        }
        std::thread::yield_now();
        last = read_map(header, source, base);
    }
    last
}

/// The config and index of the section at `base` in `source`, as `header` describes it.
pub(crate) fn read_map<S: ReadAt + ?Sized>(
    header: &Header,
    source: &S,
    base: u64,
) -> Result<ChunkMap> {
    let probe = ChunkMap::config_probe(header);
    let mut head = vec![0u8; (probe.end - probe.start) as usize];
    source.read_exact_at(&mut head, base + probe.start)?;
    let len = ChunkMap::config_len(header, &head)?;
    if len as usize > head.len() {
        let at = head.len();
        head.resize(len as usize, 0);
        source.read_exact_at(&mut head[at..], base + at as u64)?;
    }
    let pending = ChunkMap::start(header, &head[..len as usize])?;
    // One read for the segments in the common case (segment 0 only).
    let mut bufs = Vec::with_capacity(pending.segment_reads().len());
    for r in pending.segment_reads() {
        let mut b = crate::data::try_zeroed_bytes(r.bytes.end - r.bytes.start)?;
        source.read_exact_at(&mut b, base + r.bytes.start)?;
        bufs.push(b);
    }
    let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
    pending.finish(&refs)
}

/// The size of the header now in `source` before `base`, if it is `header`'s file grown since
/// ([`Header::is_grown_from`]); for the values section of a ragged file (doc/format.md section
/// 10.2), the section's size by the ragged header now at the file's start. `None` when there is
/// no header there (a section alone) or it is anything else.
fn later_size<S: ReadAt + ?Sized>(header: &Header, source: &S, base: u64) -> Option<u64> {
    let hlen = header.encoded_len() as u64;
    let at = base.checked_sub(hlen)?;
    let mut bytes = vec![0u8; hlen as usize];
    // No later size (a read error, or a header that would not settle) leaves the section as
    // its own header says: the state it was opened in, in which entries past `size` are not
    // committed yet. That is a state the file was in, never a mix, so the error is not passed
    // on: the read that follows meets the file as it is.
    crate::io::read_settled_at(source, &mut bytes, at).ok()?;
    match Header::decode_any(&bytes) {
        Ok(now) => (now.is_grown_from(header) && now.size > header.size).then_some(now.size),
        Err(_) => crate::ragged::later_values_size(header, source, base),
    }
}

/// A chunked data section being read (see the module docs).
pub(crate) struct Chunked {
    map: ChunkMap,
    cache: Mutex<BlockCache>,
}

impl Chunked {
    /// Reads and validates the config and index (and, for entries past `size`, a later
    /// header's size: see doc/chunked.md section 7.1).
    pub(crate) fn open<S: ReadAt + ?Sized>(
        header: &Header,
        source: &S,
        base: u64,
    ) -> Result<Chunked> {
        let mut map = read_map_settled(header, source, base)?;
        let mut h = header.clone();
        for _ in 0..LATER_SIZE_TRIES {
            if map.index().uncommitted().is_empty() {
                break;
            }
            let Some(size) = later_size(&h, source, base) else {
                break;
            };
            h.size = size;
            map = read_map_settled(&h, source, base)?;
        }
        Ok(Chunked {
            map,
            cache: Mutex::new(BlockCache::default()),
        })
    }

    pub(crate) fn map(&self) -> &ChunkMap {
        &self.map
    }

    /// Forgets the decoded blocks and block tables (they may be of another state of the file).
    pub(crate) fn drop_caches(&self) {
        let mut c = self.cache.lock().expect("cache lock");
        *c = BlockCache::default();
    }

    fn read_at<'s, S: ReadAt + ?Sized>(
        &self,
        io: &Io<'s, S>,
        len: u64,
        offset: u64,
    ) -> Result<std::borrow::Cow<'s, [u8]>> {
        io.counters
            .compressed_bytes
            .fetch_add(len, Ordering::Relaxed);
        // Bytes in memory or a map are decoded where they are (every decoder checks the
        // CRCs of what it reads, and the state check around a read covers a map as it covers
        // a copy); a file's are read into a buffer.
        if let Some(b) = io.source.borrow_at(io.base + offset, len) {
            return Ok(std::borrow::Cow::Borrowed(b));
        }
        let mut b = crate::data::try_zeroed_bytes(len)?;
        io.source.read_exact_at(&mut b, io.base + offset)?;
        Ok(std::borrow::Cow::Owned(b))
    }

    /// Reads and decodes chunk `n` whole into `out` (its raw length; zeros if never written).
    fn read_chunk_into<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        n: u64,
        out: &mut [u8],
        zeroed: bool,
    ) -> Result<()> {
        self.read_chunk_checked(io, n, out, zeroed, false)
    }

    /// [`Chunked::read_chunk_into`]; with `verify`, also each byte stream's own CRC
    /// ([`crate::codec::ChunkMap::verify_chunk`]), from the same read.
    fn read_chunk_checked<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        n: u64,
        out: &mut [u8],
        zeroed: bool,
        verify: bool,
    ) -> Result<()> {
        let e = self.map.entry(n);
        if e.is_empty() {
            // A fresh zeroed buffer's pages stay untouched: a sparse array costs no memory
            // where its chunks were never written.
            if !zeroed {
                out.fill(0);
            }
            return Ok(());
        }
        let stored = self.read_at(io, e.len, e.offset)?;
        io.counters.chunks_read.fetch_add(1, Ordering::Relaxed);
        if !e.is_raw() {
            let g = self.map.block_grid(n)?;
            let used = g.prefix_blocks(out.len() as u64);
            let bytes: u64 = (0..used).map(|b| g.raw_len(b)).sum();
            io.counters.blocks(used, bytes);
        }
        if verify {
            self.map.verify_chunk(n, &stored, out)
        } else {
            self.map.decode_chunk(n, &stored, out)
        }
    }

    /// Decodes every chunk into `out` (the section's length); `zeroed`: it is known to hold
    /// zeros, so chunks never written are left alone.
    pub(crate) fn read_all_into<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        out: &mut [u8],
        zeroed: bool,
    ) -> Result<()> {
        let total = out.len();
        if total == 0 {
            return Ok(());
        }
        let grid = self.map.grid();
        in_pool(io.threads, || {
            let written: Vec<u64> = (0..self.map.index().entries().len() as u64)
                .filter(|&c| !self.map.entry(c).is_empty())
                .collect();
            if grid.is_contiguous() && zeroed && (written.len() as u64) < grid.count() / 2 {
                // Mostly never written (a sparse array, or a header claiming far more chunks
                // than the file holds): only the written ones are visited, each at its place.
                let stride = grid.raw_len(0);
                for &c in &written {
                    let at = (c * stride) as usize;
                    let len = grid.raw_len(c) as usize;
                    self.read_chunk_into(io, c, &mut out[at..at + len], true)?;
                }
                Ok(())
            } else if grid.is_contiguous() {
                // Chunk n is bytes n x stride .. of the section: decode in place. The stride
                // is chunk 0's raw length, clipped to the array (the config's chunk shape may
                // exceed the dims by any amount), so it is at most `total` and never 0 here.
                let stride = grid.raw_len(0) as usize;
                out.par_chunks_mut(stride)
                    .enumerate()
                    .try_for_each(|(i, dst)| self.read_chunk_into(io, i as u64, dst, zeroed))
            } else if let Some(slab) = self.slab_bytes(out.len()) {
                // Slabs of whole chunks along the last dim are disjoint runs of `out`: each
                // thread decodes a slab's chunks and places them itself.
                out.par_chunks_mut(slab)
                    .enumerate()
                    .try_for_each(|(k, dst)| {
                        self.decode_slab(io, k as u64, slab as u64, dst, zeroed)
                    })
            } else {
                // Chunks never written are left alone below: a used buffer is zeroed first.
                if !zeroed {
                    out.fill(0);
                }
                let batch = rayon::current_num_threads().max(1) * 4;
                let all: Vec<Range<u64>> = grid.dims().iter().map(|&d| 0..d).collect();
                for group in written.chunks(batch) {
                    let decoded: Vec<Vec<u8>> = group
                        .par_iter()
                        .map(|&c| {
                            let mut buf = crate::data::try_zeroed_bytes(grid.raw_len(c))?;
                            self.read_chunk_into(io, c, &mut buf, true).map(|()| buf)
                        })
                        .collect::<Result<_>>()?;
                    for (&c, buf) in group.iter().zip(decoded) {
                        for (s, d, len) in self.map.subset_runs(c, &all) {
                            out[d as usize..(d + len) as usize]
                                .copy_from_slice(&buf[s as usize..(s + len) as usize]);
                        }
                    }
                }
                Ok(())
            }
        })?
    }

    /// The bytes of a slab of `out` (`total` bytes) that holds one row of chunks along the
    /// last dim, when there are enough slabs to keep every thread busy; else `None`.
    fn slab_bytes(&self, total: usize) -> Option<usize> {
        let grid = self.map.grid();
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
    fn decode_slab<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        k: u64,
        slab: u64,
        dst: &mut [u8],
        zeroed: bool,
    ) -> Result<()> {
        let grid = self.map.grid();
        let last = grid.dims().len() - 1;
        let per: u64 = grid.counts()[..last].iter().product();
        let all: Vec<Range<u64>> = grid.dims().iter().map(|&d| 0..d).collect();
        let base = k * slab;
        let mut buf: Vec<u8> = Vec::new();
        for c in k * per..(k + 1) * per {
            let empty = self.map.entry(c).is_empty();
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
                self.read_chunk_into(io, c, &mut buf[..len], true)?;
            }
            for (s, d, n) in self.map.subset_runs(c, &all) {
                let d = (d - base) as usize;
                dst[d..d + n as usize].copy_from_slice(&buf[s as usize..(s + n) as usize]);
            }
        }
        Ok(())
    }

    /// The block table of chunk `n` (cached).
    fn table<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        n: u64,
        e: &Entry,
    ) -> Result<Arc<Vec<BlockRef>>> {
        if let Some(t) = self.cache.lock().expect("cache lock").tables.get(&n) {
            return Ok(Arc::clone(t));
        }
        let g = self.map.block_grid(n)?;
        let tlen = g.table_len().map_or(e.len, |t| t.min(e.len));
        let bytes = self.read_at(io, tlen, e.offset)?;
        let t = Arc::new(self.map.chain().block_table(n, &bytes, &g, e.len)?);
        let mut cache = self.cache.lock().expect("cache lock");
        if cache.tables.len() >= CACHE_TABLES {
            cache.tables.clear();
        }
        cache.tables.insert(n, Arc::clone(&t));
        Ok(t)
    }

    /// The stored bytes of chunk `n`, stored raw, checked against its entry (cached, under the
    /// block key `u64::MAX`, which no block of a chunk has).
    fn raw_chunk<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        n: u64,
        e: &Entry,
    ) -> Result<Arc<Vec<u8>>> {
        if let Some(chunk) = self.cache.lock().expect("cache lock").get((n, u64::MAX)) {
            return Ok(chunk);
        }
        let stored = self.read_at(io, e.len, e.offset)?.into_owned();
        self.map.check_stored(n, &stored)?;
        let chunk = Arc::new(stored);
        self.cache
            .lock()
            .expect("cache lock")
            .put((n, u64::MAX), Arc::clone(&chunk));
        Ok(chunk)
    }

    /// Block `b` of chunk `n`, decoded (cached).
    fn block<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        n: u64,
        b: u64,
        e: &Entry,
        table: &[BlockRef],
        len: u64,
    ) -> Result<Arc<Vec<u8>>> {
        if let Some(block) = self.cache.lock().expect("cache lock").get((n, b)) {
            return Ok(block);
        }
        let r = &table[b as usize];
        let stored = self.read_at(io, r.len, e.offset + r.start)?;
        let mut out = block_buffer(len)?;
        self.map.chain().decode_block(n, b, r, &stored, &mut out)?;
        io.counters.blocks(1, len);
        let out = Arc::new(out);
        self.cache
            .lock()
            .expect("cache lock")
            .put((n, b), Arc::clone(&out));
        Ok(out)
    }

    /// Decodes the box `ranges` (one checked range per dim, first varying fastest) into `out`,
    /// column-major over the box's shape, in the file's byte order. Only the chunks the box
    /// intersects are read, and in each only the blocks it crosses.
    pub(crate) fn read_box<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        ranges: &[Range<u64>],
        out: &mut [u8],
    ) -> Result<()> {
        let out_dims: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        for n in self.map.grid().touched(ranges) {
            let e = self.map.entry(n);
            if e.is_empty() {
                for (_, d, len) in self.map.subset_runs(n, ranges) {
                    out[d as usize..(d + len) as usize].fill(0);
                }
                continue;
            }
            io.counters.chunks_read.fetch_add(1, Ordering::Relaxed);
            if e.is_raw() {
                // Its CRC covers the whole chunk, so the whole chunk is read and checked (and
                // kept for the next read): a part read alone could not be.
                let chunk = self.raw_chunk(io, n, &e)?;
                for (s, d, len) in self.map.subset_runs(n, ranges) {
                    out[d as usize..(d + len) as usize]
                        .copy_from_slice(&chunk[s as usize..(s + len) as usize]);
                }
                continue;
            }
            let table = self.table(io, n, &e)?;
            let g = self.map.block_grid(n)?;
            let (local, at) = self.map.local_box(n, ranges);
            for b in g.touched(&local) {
                let len = g.raw_len(b);
                if len > crate::codec::chain::STREAM_BLOCK_BYTES {
                    let runs: Vec<(u64, u64, u64)> =
                        g.block_to_box(b, &local, &out_dims, &at).collect();
                    // A version 1 block over 16 MiB: only the span the box needs, streamed,
                    // never cached.
                    let lo = runs.iter().map(|r| r.0).min().unwrap_or(0);
                    let hi = runs.iter().map(|r| r.0 + r.2).max().unwrap_or(0);
                    let mut part = crate::data::try_zeroed_bytes(hi - lo)?;
                    let r = &table[b as usize];
                    let stored = self.read_at(io, r.len, e.offset + r.start)?;
                    self.map.chain().decode_block_range(
                        n,
                        b,
                        r,
                        &stored,
                        len,
                        lo..hi,
                        &mut part,
                    )?;
                    io.counters.blocks(1, len);
                    for (s, d, l) in runs {
                        out[d as usize..(d + l) as usize]
                            .copy_from_slice(&part[(s - lo) as usize..(s - lo + l) as usize]);
                    }
                    continue;
                }
                let block = self.block(io, n, b, &e, &table, len)?;
                for (s, d, l) in g.block_to_box(b, &local, &out_dims, &at) {
                    out[d as usize..(d + l) as usize]
                        .copy_from_slice(&block[s as usize..(s + l) as usize]);
                }
            }
        }
        Ok(())
    }

    /// Whether [`Chunked::read_box_fields`] decodes fields alone: every block is stored as
    /// byte planes ([`Pipeline::decodes_by_plane`](crate::codec::Pipeline::decodes_by_plane)).
    pub(crate) fn reads_fields(&self) -> bool {
        self.map.chain().pipeline().decodes_by_plane()
    }

    /// The byte planes the fields `(offset, width)` of an element cover, sorted and distinct,
    /// and for each field the index in them of its first plane (a field's planes are
    /// consecutive there: each field is a run of bytes).
    fn planes_of(&self, fields: &[(usize, usize)]) -> Result<(Vec<usize>, Vec<usize>)> {
        let elbyte = self.map.chain().pipeline().elements().elbyte;
        let mut which: Vec<usize> = fields.iter().flat_map(|&(o, w)| o..o + w).collect();
        which.sort_unstable();
        which.dedup();
        if which.last().is_some_and(|&j| j >= elbyte) || elbyte == 0 {
            return Err(crate::Error::msg(format!(
                "fields {fields:?} of elements of {elbyte} bytes"
            )));
        }
        let first = fields
            .iter()
            .map(|&(o, _)| which.partition_point(|&j| j < o))
            .collect();
        Ok((which, first))
    }

    /// Decodes the bytes `fields` (`(offset, width)` inside an element) of each element of the
    /// box `ranges` into `outs` (one per field: the box's elements in order, column-major,
    /// `width` bytes each, in the file's byte order), reading the blocks the box crosses and
    /// decoding only the byte planes of those bytes. Where each stream has its own CRC (config
    /// features bit 2) only those planes' streams are read, each checked; otherwise each block
    /// is read whole and its CRC checked. A chunk stored raw is checked whole, as
    /// [`Chunked::read_box`] checks it. Only when [`Chunked::reads_fields`].
    pub(crate) fn read_box_fields<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        ranges: &[Range<u64>],
        fields: &[(usize, usize)],
        outs: &mut [&mut [u8]],
    ) -> Result<()> {
        let elbyte = self.map.chain().pipeline().elements().elbyte;
        let (which, first) = self.planes_of(fields)?;
        let out_dims: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        let mut planes = Vec::new();
        let mut cols: Vec<Vec<u8>> = vec![Vec::new(); fields.len()];
        let checked_streams = self.map.chain().pipeline().has_stream_crcs();
        for n in self.map.grid().touched(ranges) {
            let e = self.map.entry(n);
            if e.is_empty() {
                for (_, d, len) in self.map.subset_runs(n, ranges) {
                    let (d, l) = (d as usize / elbyte, len as usize / elbyte);
                    for (k, &(_, w)) in fields.iter().enumerate() {
                        outs[k][d * w..(d + l) * w].fill(0);
                    }
                }
                continue;
            }
            io.counters.chunks_read.fetch_add(1, Ordering::Relaxed);
            if e.is_raw() {
                let chunk = self.raw_chunk(io, n, &e)?;
                for (s, d, len) in self.map.subset_runs(n, ranges) {
                    let (s, d, l) = (s as usize, d as usize / elbyte, len as usize / elbyte);
                    for (k, &(o, w)) in fields.iter().enumerate() {
                        for i in 0..l {
                            let at = s + i * elbyte + o;
                            outs[k][(d + i) * w..(d + i + 1) * w]
                                .copy_from_slice(&chunk[at..at + w]);
                        }
                    }
                }
                continue;
            }
            let table = self.table(io, n, &e)?;
            let g = self.map.block_grid(n)?;
            let (local, at) = self.map.local_box(n, ranges);
            for b in g.touched(&local) {
                let len = crate::data::to_usize(g.raw_len(b))?;
                let m = len / elbyte;
                let r = &table[b as usize];
                planes.resize(which.len() * m, 0);
                if checked_streams {
                    // Each stream has its CRC: read the head and the streams of these bytes.
                    let at = e.offset + r.start;
                    self.map.chain().read_block_planes(
                        n,
                        b,
                        r,
                        len,
                        &which,
                        &mut |o, l| self.read_at(io, l, at + o),
                        &mut planes,
                    )?;
                } else {
                    let stored = self.read_at(io, r.len, e.offset + r.start)?;
                    self.map.chain().decode_block_planes(
                        n,
                        b,
                        r,
                        &stored,
                        len,
                        &which,
                        &mut planes,
                    )?;
                }
                io.counters.blocks(1, g.raw_len(b));
                let runs: Vec<(u64, u64, u64)> =
                    g.block_to_box(b, &local, &out_dims, &at).collect();
                if let [(0, d, l)] = runs[..] {
                    if l as usize == len {
                        // The whole block is one run of the box: its planes go back to the
                        // fields' bytes right where they belong.
                        let d = d as usize / elbyte;
                        for (k, &(_, w)) in fields.iter().enumerate() {
                            let p = first[k];
                            crate::codec::shuffle::unshuffle(
                                &planes[p * m..(p + w) * m],
                                w,
                                &mut outs[k][d * w..(d + m) * w],
                            );
                        }
                        continue;
                    }
                }
                for (k, &(_, w)) in fields.iter().enumerate() {
                    // The field's planes, back to its bytes element by element.
                    cols[k].resize(m * w, 0);
                    let p = first[k];
                    crate::codec::shuffle::unshuffle(&planes[p * m..(p + w) * m], w, &mut cols[k]);
                }
                // The box's runs of this block, in elements, field by field.
                for (s, d, l) in runs {
                    let (s, d, l) = (
                        s as usize / elbyte,
                        d as usize / elbyte,
                        l as usize / elbyte,
                    );
                    for (k, &(_, w)) in fields.iter().enumerate() {
                        outs[k][d * w..(d + l) * w].copy_from_slice(&cols[k][s * w..(s + l) * w]);
                    }
                }
            }
        }
        Ok(())
    }

    /// The stored bytes (offsets in the section) that [`Chunked::read_box`] of `ranges` would
    /// read and that neither this section's caches nor `io.source` hold ([`ReadAt::has`]). A
    /// chunk's blocks can be named only once its block table is in hand: until then its table
    /// is named, or the whole chunk when it has at most `whole` stored bytes or the box covers
    /// it (one request instead of two, and no bytes the read does not decode but the table's
    /// and the blocks' of a small chunk). Tables the source holds are read (and cached) here.
    ///
    /// With `fields`, what [`Chunked::read_box_fields`] of them would read instead: a chunk of
    /// at most `whole` stored bytes whole; otherwise, where each byte stream has its CRC, each
    /// block's head, then (once it is held) the runs of those fields' streams it places; the
    /// stored blocks else (never the decoded blocks kept, which that read does not use).
    pub(crate) fn box_needs<S: ReadAt + ?Sized>(
        &self,
        io: &Io<'_, S>,
        ranges: &[Range<u64>],
        whole: u64,
        fields: Option<&[(usize, usize)]>,
    ) -> Result<Vec<Range<u64>>> {
        // A read of some fields ([`Chunked::read_box_fields`]) reads, where each byte stream
        // has its CRC, each block's head and then only those fields' streams: a box it covers
        // is not a reason to fetch a chunk whole.
        let planes = match fields {
            Some(f) => Some(self.planes_of(f)?.0),
            None => None,
        };
        let streams_alone = planes.is_some() && self.map.chain().pipeline().has_stream_crcs();
        let mut need = Vec::new();
        let has = |r: &Range<u64>| io.source.has(io.base + r.start..io.base + r.end);
        for n in self.map.grid().touched(ranges) {
            let e = self.map.entry(n);
            if e.is_empty() {
                continue;
            }
            let all = e.offset..e.offset + e.len;
            if has(&all) {
                continue;
            }
            if e.is_raw() {
                let cached = self
                    .cache
                    .lock()
                    .expect("cache lock")
                    .blocks
                    .contains_key(&(n, u64::MAX));
                if !cached {
                    need.push(all);
                }
                continue;
            }
            // A read of fields fetches a small chunk whole whether or not its table is cached:
            // one round, not heads then streams.
            if planes.is_some() && e.len <= whole {
                need.push(all);
                continue;
            }
            let (local, _) = self.map.local_box(n, ranges);
            let cached = self
                .cache
                .lock()
                .expect("cache lock")
                .tables
                .get(&n)
                .cloned();
            let table = match cached {
                Some(t) => t,
                None => {
                    let shape = self.map.grid().shape(n);
                    let covers = local
                        .iter()
                        .zip(&shape)
                        .all(|(r, &s)| r.start == 0 && r.end >= s);
                    if e.len <= whole || (covers && !streams_alone) {
                        need.push(all);
                        continue;
                    }
                    let g = self.map.block_grid(n)?;
                    let tlen = g.table_len().map_or(e.len, |t| t.min(e.len));
                    let t = e.offset..e.offset + tlen;
                    if !has(&t) {
                        need.push(t);
                        continue;
                    }
                    self.table(io, n, &e)?
                }
            };
            let g = self.map.block_grid(n)?;
            for b in g.touched(&local) {
                let r = &table[b as usize];
                let at = e.offset + r.start;
                if let (true, Some(which)) = (streams_alone, &planes) {
                    // The head first; once it is held, the runs of streams it places.
                    let hl = (self.map.chain().stream_head_len() as u64).min(r.len);
                    let mut head = vec![0; crate::data::to_usize(hl)?];
                    // Not held, or dropped from a shared cache since `has` said so: fetched.
                    if !has(&(at..at + hl))
                        || io.source.read_exact_at(&mut head, io.base + at).is_err()
                    {
                        need.push(at..at + hl);
                        continue;
                    }
                    let len = crate::data::to_usize(g.raw_len(b))?;
                    for run in self
                        .map
                        .chain()
                        .block_plane_reads(n, b, r, len, which, &head)?
                    {
                        let run = at + run.start as u64..at + run.end as u64;
                        if !has(&run) {
                            need.push(run);
                        }
                    }
                    continue;
                }
                // A read of fields reads stored blocks, never the decoded ones kept.
                let kept = planes.is_none()
                    && g.raw_len(b) <= crate::codec::chain::STREAM_BLOCK_BYTES
                    && self
                        .cache
                        .lock()
                        .expect("cache lock")
                        .blocks
                        .contains_key(&(n, b));
                let stored = at..at + r.len;
                if !kept && !has(&stored) {
                    need.push(stored);
                }
            }
        }
        Ok(need)
    }

    /// Reads every written chunk whole, checking its entry's CRC and every block's, and
    /// decodes it, then checks each byte stream's own CRC where streams carry one: what
    /// `verify` reports.
    pub(crate) fn verify<S: ReadAt + ?Sized>(&self, io: &Io<'_, S>) -> Result<u64> {
        let grid = self.map.grid();
        let mut checked = 0;
        for n in 0..self.map.index().entries().len() as u64 {
            if self.map.entry(n).is_empty() {
                continue;
            }
            let mut buf = crate::data::try_zeroed_bytes(grid.raw_len(n))?;
            // A whole decode does not look at the streams' own CRCs (the block's covers them);
            // a read of some fields relies on them, so they are checked here too.
            self.read_chunk_checked(io, n, &mut buf, true, true)?;
            checked += 1;
        }
        Ok(checked)
    }
}

/// What a read needs of its section: the source, where its data section starts, the threads
/// and the counters.
pub(crate) struct Io<'a, S: ?Sized> {
    pub(crate) source: &'a S,
    pub(crate) base: u64,
    pub(crate) threads: usize,
    pub(crate) counters: &'a Counters,
}

/// Runs `f` on a pool of `threads` threads, or on rayon's global pool for 0 or for as many
/// threads as it has (the current pool's, when called from inside one).
///
/// A pool is not kept between calls: a record writer appending with `threads(2)` calls this
/// for every batch it compresses, and pools of its own kept for it made the reads after it
/// (on the global pool) lose their second thread on a 2-core machine (`benches/compress.rs`,
/// doc/benchmarks.md). The global pool's size is the usual count asked for (the cores), and
/// then no thread is started at all.
pub(crate) fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    if threads == 0 || threads == rayon::current_num_threads() {
        return Ok(f());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| crate::Error::msg(format!("thread pool of {threads}: {e}")))?;
    Ok(pool.install(f))
}

/// An error of a buffer of the wrong length for `dims`.
pub(crate) fn shape_mismatch(dims: Vec<u64>, expected: u64, len: usize) -> crate::Error {
    ErrorKind::ShapeMismatch {
        dims,
        expected,
        len: len as u64,
    }
    .into()
}
