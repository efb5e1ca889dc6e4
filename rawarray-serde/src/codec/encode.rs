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

use super::chain::Chain;
use super::config::bad;
use super::grid::{runs, Grid, Place};
use super::index::Entry;
use super::stats;
use crate::error::Result;
use crate::header::{Flags, Header};
use crate::layout::Layout;
use crate::memory::{advise_huge_pages, try_zeroed_bytes};
use crate::options::WriteOptions;
use crate::section::chunked::in_pool;

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
    let big_endian = header.flags.is_big_endian();
    let layout_runs = |n: u64| {
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
    let to_usize = crate::data::to_usize;
    let base = to_usize(config.encoded_len() + grid.count() * config.entry_len())?;
    let bounds = (0..grid.count())
        .map(|n| {
            chain
                .stored_bound(&grid.shape(n))
                .ok_or_else(|| bad("chunk", "blocks that fit usize", n))
        })
        .collect::<Result<Vec<usize>>>()?;
    // One chunk: its raw bytes (borrowed where the chunk is one run of the array, else
    // gathered into `gathered`) through the pipeline into `dst`, and its statistics.
    let encode_one = |n: u64, gathered: &mut Vec<u8>, dst: &mut [u8]| {
        let len = to_usize(grid.raw_len(n))?;
        let mut it = layout_runs(n);
        let chunk: &[u8] = match (it.next(), it.next()) {
            (Some((s, 0, l)), None) if l as usize == len => &raw[s as usize..s as usize + len],
            _ => {
                gathered.clear();
                gathered.resize(len, 0);
                for (s, d, l) in layout_runs(n) {
                    gathered[d as usize..(d + l) as usize]
                        .copy_from_slice(&raw[s as usize..(s + l) as usize]);
                }
                gathered
            }
        };
        // Statistics of the values stored: rounded ones, if a lossy filter ran.
        let rounded = chain.pipeline().round(chunk);
        let vals = rounded.as_deref().unwrap_or(chunk);
        let st = match &config.stats {
            Some(fields) => stats::compute(fields, vals, header.elbyte, big_endian),
            None => Vec::new(),
        };
        let stored = chain.encode_rounded_into(vals, &grid.shape(n), dst)?;
        Ok::<_, crate::Error>((stored, st))
    };
    let threads = match opts.get_threads() {
        0 => rayon::current_num_threads(),
        t => t,
    };
    // Chunks are written into one zeroed buffer (the allocator's fresh pages: those never
    // written are never touched; a refusal, not an abort, where it cannot be had), so that no
    // chunk has a buffer of its own.
    let (mut section, chunks) = if threads <= 1 || grid.count() <= 1 {
        // In order, each chunk where it belongs: it is at most its raw length, so chunk `n`
        // starts by `base` + the raw bytes of those before it, and its bound fits after that.
        let spare = (0..grid.count())
            .map(|n| bounds[n as usize] - grid.raw_len(n) as usize)
            .max()
            .unwrap_or(0);
        let mut section = try_zeroed_bytes((base + raw.len() + spare) as u64)?;
        advise_huge_pages(&mut section);
        let mut at = base;
        let mut gathered = Vec::new();
        let mut chunks = Vec::with_capacity(bounds.len());
        for (n, &bound) in bounds.iter().enumerate() {
            let (s, st) = encode_one(n as u64, &mut gathered, &mut section[at..at + bound])?;
            chunks.push((at, s, st));
            at += s.len;
        }
        (section, chunks)
    } else {
        // In parallel, each chunk in a region of its bound, then moved down into place.
        let mut section = try_zeroed_bytes((base + bounds.iter().sum::<usize>()) as u64)?;
        advise_huge_pages(&mut section);
        let mut regions = Vec::with_capacity(bounds.len());
        let mut rest = &mut section[base..];
        for &b in &bounds {
            let (region, r) = rest.split_at_mut(b);
            regions.push(region);
            rest = r;
        }
        let encoded = in_pool(threads, || {
            regions
                .into_par_iter()
                .enumerate()
                .map_init(Vec::new, |g, (n, dst)| encode_one(n as u64, g, dst))
                .collect::<Result<Vec<_>>>()
        })??;
        let (mut at, mut from) = (base, base);
        let mut chunks = Vec::with_capacity(bounds.len());
        for ((s, st), &bound) in encoded.into_iter().zip(&bounds) {
            section.copy_within(from..from + s.len, at);
            chunks.push((at, s, st));
            at += s.len;
            from += bound;
        }
        (section, chunks)
    };
    section[..config.encoded_len() as usize].copy_from_slice(&config.encode());
    let entry_len = config.entry_len() as usize;
    let mut end = base;
    for (n, (at, s, st)) in chunks.iter().enumerate() {
        let e = Entry {
            offset: *at as u64,
            len: s.len as u64,
            crc: s.crc,
            flags: s.flags,
        };
        let i = config.encoded_len() as usize + n * entry_len;
        section[i..i + entry_len].copy_from_slice(&e.encode_for(&config, n as u64, st));
        end = at + s.len;
    }
    section.truncate(end);
    // Keeps what was written (a large buffer shrinks in place).
    section.shrink_to_fit();
    let mut h = header.clone();
    h.flags = h.flags.with(Flags::CHUNKED, true);
    h.size = section.len() as u64;
    Ok((h, section))
}
