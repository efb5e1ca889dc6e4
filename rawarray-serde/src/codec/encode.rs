//! The encoder: a whole array's raw bytes to a chunked data section, chunks compressed in
//! parallel.
//!
//! The section is written as `[config][index segment 0 of S0 = chunk count entries][chunks in
//! chunk order]`: a fixed-size array has one index segment and no gaps.
//!
//! ```
//! use rawarray_serde::codec::{self, Codec, Shuffle};
//! use rawarray_serde::{ElType, Header, WriteOptions};
//! let header = Header::new(ElType::Float, 8, vec![1000]).unwrap();
//! let raw: Vec<u8> = (0..1000).flat_map(|i| f64::from(i).to_le_bytes()).collect();
//! let opts = WriteOptions::new().codec(Codec::Lz4).shuffle(Shuffle::Bit).chunks(vec![300]).threads(2);
//! let (h, section) = codec::encode(&header, &raw, &opts).unwrap();
//! assert!(h.size < raw.len() as u64);
//! let mut file = h.encode();
//! file.extend_from_slice(&section);
//! assert_eq!(codec::decode_all(&h, &file[..]).unwrap(), raw);
//! ```

use rayon::prelude::*;

use super::chain::{Chain, StoredChunk};
use super::config::bad;
use super::config::Config;
use super::grid::{runs, Grid, Place};
use super::index::Entry;
use super::stats;
use crate::error::Result;
use crate::header::{Flags, Header};
use crate::layout::Layout;
use crate::memory::{advise_huge_pages, try_zeroed_bytes};
use crate::options::WriteOptions;

/// Encodes a whole array: `raw` is its data section uncompressed (`header.data_len()` bytes, in
/// the byte order `header` says), `header` a plain (not compressed, not chunked) header, in the
/// chunked layout `opts` gives (whatever storage they select). Returns the chunked header (flag
/// bit 2, `size` the section's length) and the section.
pub fn encode(header: &Header, raw: &[u8], opts: &WriteOptions) -> Result<(Header, Vec<u8>)> {
    encode_with(header, raw, opts, None)
}

/// [`encode`] of records whose schema is `schema`: statistics are kept per scalar field.
pub fn encode_with(
    header: &Header,
    raw: &[u8],
    opts: &WriteOptions,
    schema: Option<&Layout>,
) -> Result<(Header, Vec<u8>)> {
    let c = Chunks::new(header, raw, opts, schema)?;
    let (base, bounds) = (c.base, &c.bounds);
    let count = bounds.len();
    // Chunks are written into one zeroed buffer (the allocator's fresh pages: those never
    // written are never touched; a refusal, not an abort, where it cannot be had), so that no
    // chunk has a buffer of its own.
    let (mut section, chunks) = if c.threads <= 1 || count <= 1 {
        // In order, each chunk where it belongs: it is at most its raw length, so chunk `n`
        // starts by `base` + the raw bytes of those before it, and its bound fits after that.
        let spare = (0..count)
            .map(|n| bounds[n] - c.grid.raw_len(n as u64) as usize)
            .max()
            .unwrap_or(0);
        let mut section = try_zeroed_bytes((base + raw.len() + spare) as u64)?;
        advise_huge_pages(&mut section);
        let mut at = base;
        let mut gathered = Vec::new();
        let mut chunks = Vec::with_capacity(count);
        for (n, &bound) in bounds.iter().enumerate() {
            let (s, st) = c.encode_one(n as u64, &mut gathered, &mut section[at..at + bound])?;
            let len = s.len;
            chunks.push((at, s, st));
            at += len;
        }
        (section, chunks)
    } else {
        // In parallel, each chunk in a region of its bound, then moved down into place.
        let mut section = try_zeroed_bytes((base + bounds.iter().sum::<usize>()) as u64)?;
        advise_huge_pages(&mut section);
        let encoded = c.encode_batch(0..count, &mut section[base..], c.pool()?.as_ref())?;
        let (mut at, mut from) = (base, base);
        let mut chunks = Vec::with_capacity(count);
        for ((s, st), &bound) in encoded.into_iter().zip(bounds) {
            section.copy_within(from..from + s.len, at);
            let len = s.len;
            chunks.push((at, s, st));
            at += len;
            from += bound;
        }
        (section, chunks)
    };
    let end = chunks.last().map_or(base, |(at, s, _)| at + s.len);
    section[..base].copy_from_slice(&c.head(&chunks));
    section.truncate(end);
    // Keeps what was written (a large buffer shrinks in place).
    section.shrink_to_fit();
    Ok((c.chunked_header(section.len() as u64), section))
}

/// Raw bytes of the chunks [`encode_streamed`] encodes at once, unless a chunk each thread is
/// more: with the stored bound of those chunks, the memory it holds beyond the array.
const STREAM_BATCH: usize = 32 << 20;

/// [`encode_with`] for an output that takes a file's first bytes last (an object-store upload
/// whose parts are numbered): the chunks' stored bytes go to `out` in order as they are
/// encoded, a batch at a time (chunks of about 32 MiB of the array, or one chunk a thread if
/// that is more), and the section's first
/// [`section_head_len`] bytes (the config and the index, which name every chunk's stored
/// length) are returned with the chunked header, to be put before them. Memory holds one
/// batch's stored bound, not the section.
///
/// ```
/// use rawarray_serde::codec::{self, Codec};
/// use rawarray_serde::{ElType, Header, WriteOptions};
/// let header = Header::new(ElType::Float, 8, vec![1000]).unwrap();
/// let raw: Vec<u8> = (0..1000).flat_map(|i| f64::from(i).to_le_bytes()).collect();
/// let opts = WriteOptions::new().codec(Codec::Lz4).chunks(vec![300]);
/// let mut chunks = Vec::new();
/// let (h, head) = codec::encode_streamed(&header, &raw, &opts, None, &mut |b| {
///     chunks.extend_from_slice(b);
///     Ok(())
/// })
/// .unwrap();
/// assert_eq!(head.len() as u64, codec::section_head_len(&header, &opts, None).unwrap());
/// // The same section as the one-piece encoder's.
/// assert_eq!([head, chunks].concat(), codec::encode(&header, &raw, &opts).unwrap().1);
/// # let _ = h;
/// ```
pub fn encode_streamed(
    header: &Header,
    raw: &[u8],
    opts: &WriteOptions,
    schema: Option<&Layout>,
    out: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<(Header, Vec<u8>)> {
    encode_streamed_in(header, raw, opts, schema, out, STREAM_BATCH)
}

/// [`encode_streamed`] in batches of about `batch` raw bytes.
fn encode_streamed_in(
    header: &Header,
    raw: &[u8],
    opts: &WriteOptions,
    schema: Option<&Layout>,
    out: &mut dyn FnMut(&[u8]) -> Result<()>,
    batch: usize,
) -> Result<(Header, Vec<u8>)> {
    let c = Chunks::new(header, raw, opts, schema)?;
    let count = c.bounds.len();
    let pool = c.pool()?;
    let mut chunks = Vec::with_capacity(count);
    let mut buf: Vec<u8> = Vec::new();
    let (mut n, mut at) = (0, c.base);
    while n < count {
        // At least a chunk a thread, then chunks up to the batch's bytes.
        let mut end = n;
        let mut raw_bytes = 0usize;
        while end < count && (end - n < c.threads || raw_bytes < batch) {
            raw_bytes += c.grid.raw_len(end as u64) as usize;
            end += 1;
        }
        let room: usize = c.bounds[n..end].iter().sum();
        if buf.len() < room {
            // The smaller buffer goes before the larger one is had.
            drop(std::mem::take(&mut buf));
            buf = try_zeroed_bytes(room as u64)?;
        }
        let encoded = c.encode_batch(n..end, &mut buf[..room], pool.as_ref())?;
        let mut from = 0;
        for ((s, st), &bound) in encoded.into_iter().zip(&c.bounds[n..end]) {
            out(&buf[from..from + s.len])?;
            let len = s.len;
            chunks.push((at, s, st));
            at += len;
            from += bound;
        }
        n = end;
    }
    Ok((c.chunked_header(at as u64), c.head(&chunks)))
}

/// Bytes of a chunked section's config and index for `header` (plain) written with `opts`:
/// where its first chunk starts, known before any chunk is encoded.
pub fn section_head_len(
    header: &Header,
    opts: &WriteOptions,
    schema: Option<&Layout>,
) -> Result<u64> {
    let config = opts.chunk_config(header, schema)?;
    let grid = Grid::new(&header.dims, &config.chunk, header.elbyte)?;
    Ok(config.encoded_len() + grid.count() * config.entry_len())
}

/// What every chunk of one encode shares: the grid, the chain, where the chunks start.
struct Chunks<'a> {
    header: &'a Header,
    raw: &'a [u8],
    config: Config,
    grid: Grid,
    chain: Chain,
    /// Bytes of the config and the index: the first chunk's offset in the section.
    base: usize,
    /// Each chunk's most stored bytes.
    bounds: Vec<usize>,
    threads: usize,
}

impl<'a> Chunks<'a> {
    fn new(
        header: &'a Header,
        raw: &'a [u8],
        opts: &WriteOptions,
        schema: Option<&Layout>,
    ) -> Result<Chunks<'a>> {
        if header.flags.is_compressed() || header.flags.is_chunked() {
            return Err(crate::Error::unsupported(
                "encode takes a plain data section: the header says compressed or chunked",
            ));
        }
        if raw.len() as u64 != header.data_len() {
            return Err(bad(
                "raw data",
                format!("{} bytes (dims x elbyte)", header.data_len()),
                raw.len(),
            ));
        }
        let config = opts.chunk_config(header, schema)?;
        let grid = Grid::new(&header.dims, &config.chunk, header.elbyte)?;
        let chain = Chain::from_config(&config, header)?;
        let base = crate::data::to_usize(config.encoded_len() + grid.count() * config.entry_len())?;
        let bounds = (0..grid.count())
            .map(|n| {
                chain
                    .stored_bound(&grid.shape(n))
                    .ok_or_else(|| bad("chunk", "blocks that fit usize", n))
            })
            .collect::<Result<Vec<usize>>>()?;
        let threads = match opts.get_threads() {
            0 => rayon::current_num_threads(),
            t => t,
        };
        Ok(Chunks {
            header,
            raw,
            config,
            grid,
            chain,
            base,
            bounds,
            threads,
        })
    }

    /// One chunk: its raw bytes (borrowed where the chunk is one run of the array, else
    /// gathered into `gathered`) through the pipeline into `dst`, and its statistics.
    fn encode_one(
        &self,
        n: u64,
        gathered: &mut Vec<u8>,
        dst: &mut [u8],
    ) -> Result<(StoredChunk, Vec<u8>)> {
        let (header, raw, grid) = (self.header, self.raw, &self.grid);
        let len = crate::data::to_usize(grid.raw_len(n))?;
        let layout_runs = || {
            let (o, s) = (grid.origin(n), grid.shape(n));
            runs(
                &s,
                header.elbyte,
                Place {
                    dims: &header.dims,
                    at: &o,
                },
                Place {
                    dims: &s,
                    at: &vec![0; s.len()],
                },
            )
        };
        let mut it = layout_runs();
        let chunk: &[u8] = match (it.next(), it.next()) {
            (Some((s, 0, l)), None) if l as usize == len => &raw[s as usize..s as usize + len],
            _ => {
                gathered.clear();
                gathered.resize(len, 0);
                for (s, d, l) in layout_runs() {
                    gathered[d as usize..(d + l) as usize]
                        .copy_from_slice(&raw[s as usize..(s + l) as usize]);
                }
                gathered
            }
        };
        // Statistics of the values stored: rounded ones, if a lossy filter ran.
        let rounded = self.chain.pipeline().round(chunk);
        let vals = rounded.as_deref().unwrap_or(chunk);
        let mut folder = self
            .config
            .stats
            .as_deref()
            .map(|f| stats::Folder::new(f, header.elbyte, header.flags.is_big_endian()));
        let stored = self
            .chain
            .encode_rounded_into(vals, &grid.shape(n), dst, folder.as_mut())?;
        Ok((stored, folder.map_or_else(Vec::new, |f| f.finish())))
    }

    /// Encodes the chunks `range`, each into its region of `buf` (at least the sum of their
    /// bounds), in chunk order: in parallel on `pool` (the global one if `None`), or in this
    /// thread when one thread is asked for.
    fn encode_batch(
        &self,
        range: std::ops::Range<usize>,
        buf: &mut [u8],
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<Vec<(StoredChunk, Vec<u8>)>> {
        let mut regions = Vec::with_capacity(range.len());
        let mut rest = buf;
        for &b in &self.bounds[range.clone()] {
            let (region, r) = rest.split_at_mut(b);
            regions.push(region);
            rest = r;
        }
        let start = range.start;
        if self.threads <= 1 {
            let mut g = Vec::new();
            return regions
                .into_iter()
                .enumerate()
                .map(|(i, dst)| self.encode_one((start + i) as u64, &mut g, dst))
                .collect();
        }
        let run = || {
            regions
                .into_par_iter()
                .enumerate()
                .map_init(Vec::new, |g, (i, dst)| {
                    self.encode_one((start + i) as u64, g, dst)
                })
                .collect::<Result<Vec<_>>>()
        };
        match pool {
            Some(p) => p.install(run),
            None => run(),
        }
    }

    /// The thread pool of `threads` when it is not the global one (made once per encode).
    fn pool(&self) -> Result<Option<rayon::ThreadPool>> {
        if self.threads <= 1 || self.threads == rayon::current_num_threads() {
            return Ok(None);
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .build()
            .map(Some)
            .map_err(|e| crate::Error::msg(format!("thread pool of {}: {e}", self.threads)))
    }

    /// The config and the index of chunks stored at `(offset, stored, statistics)`: the
    /// section's first `base` bytes.
    fn head(&self, chunks: &[(usize, StoredChunk, Vec<u8>)]) -> Vec<u8> {
        let mut head = Vec::with_capacity(self.base);
        head.extend_from_slice(&self.config.encode());
        for (n, (at, s, st)) in chunks.iter().enumerate() {
            let e = Entry {
                offset: *at as u64,
                len: s.len as u64,
                crc: s.crc,
                flags: s.flags,
            };
            head.extend_from_slice(&e.encode_for(&self.config, n as u64, st));
        }
        debug_assert_eq!(head.len(), self.base);
        head
    }

    /// The chunked header of a section of `len` bytes.
    fn chunked_header(&self, len: u64) -> Header {
        let mut h = self.header.clone();
        h.flags = h.flags.with(Flags::CHUNKED, true);
        h.size = len;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eltype::ElType;

    #[test]
    fn the_streamed_section_is_the_one_piece_section() {
        // Edge chunks in both dims, statistics (version 2), byte streams and a gather per
        // chunk; batches of one chunk to all of them, one to three threads.
        let header = Header::new(ElType::Float, 4, vec![37, 23, 5]).unwrap();
        let raw: Vec<u8> = (0..37 * 23 * 5)
            .flat_map(|i| ((i as f32 * 0.37).sin() * 100.0).to_le_bytes())
            .collect();
        for name in ["zstd", "lz4", "none"] {
            for threads in [1, 2, 3] {
                let opts = WriteOptions::for_name(name)
                    .unwrap()
                    .chunks(vec![16, 10, 2])
                    .threads(threads);
                let (h1, whole) = encode(&header, &raw, &opts).unwrap();
                for batch in [1, 3000, 20_000, usize::MAX] {
                    let mut chunks = Vec::new();
                    let mut calls = 0;
                    let (h2, head) = encode_streamed_in(
                        &header,
                        &raw,
                        &opts,
                        None,
                        &mut |b| {
                            calls += 1;
                            chunks.extend_from_slice(b);
                            Ok(())
                        },
                        batch,
                    )
                    .unwrap();
                    let what = format!("{name}, {threads} threads, batch {batch}");
                    assert_eq!(h1, h2, "{what}");
                    assert_eq!(calls, 3 * 3 * 3, "{what}: one call a chunk");
                    assert_eq!(
                        head.len() as u64,
                        section_head_len(&header, &opts, None).unwrap(),
                        "{what}"
                    );
                    assert_eq!([head, chunks].concat(), whole, "{what}");
                }
            }
        }
    }

    #[test]
    fn an_output_error_stops_the_encode() {
        let header = Header::new(ElType::Uint, 1, vec![1000]).unwrap();
        let raw = vec![5u8; 1000];
        let opts = WriteOptions::for_name("lz4").unwrap().chunks(vec![100]);
        let mut calls = 0;
        let err = encode_streamed_in(
            &header,
            &raw,
            &opts,
            None,
            &mut |_| {
                calls += 1;
                Err(std::io::Error::other("the disk is full").into())
            },
            1,
        )
        .unwrap_err();
        assert!(err.to_string().contains("the disk is full"), "{err}");
        assert_eq!(calls, 1);
    }
}
