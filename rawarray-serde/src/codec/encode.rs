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
    let stored: Vec<(Vec<u8>, u32, Vec<u8>)> = in_pool(opts.get_threads(), || {
        (0..grid.count())
            .into_par_iter()
            .map(|n| {
                let len = grid.raw_len(n) as usize;
                let mut buf = vec![0u8; len];
                for (s, d, l) in layout_runs(n) {
                    buf[d as usize..(d + l) as usize]
                        .copy_from_slice(&raw[s as usize..(s + l) as usize]);
                }
                let (bytes, flags) = chain.encode_chunk(&buf, &grid.shape(n))?;
                let st = match &config.stats {
                    // Statistics of the values stored: rounded ones, if a lossy filter ran.
                    Some(fields) => {
                        let vals = chain.pipeline().round(&buf);
                        stats::compute(
                            fields,
                            vals.as_deref().unwrap_or(&buf),
                            header.elbyte,
                            big_endian,
                        )
                    }
                    None => Vec::new(),
                };
                Ok((bytes, flags, st))
            })
            .collect::<Result<Vec<_>>>()
    })??;
    let config_len = config.encoded_len();
    let index_len = grid.count() * config.entry_len();
    let total: u64 =
        config_len + index_len + stored.iter().map(|(s, _, _)| s.len() as u64).sum::<u64>();
    let mut section = Vec::with_capacity(crate::data::to_usize(total)?);
    section.extend_from_slice(&config.encode());
    let mut at = config_len + index_len;
    for (n, (s, flags, st)) in stored.iter().enumerate() {
        let e = Entry {
            offset: at,
            len: s.len() as u64,
            crc: crc32fast::hash(s),
            flags: *flags,
        };
        section.extend_from_slice(&e.encode_for(&config, n as u64, st));
        at += s.len() as u64;
    }
    for (s, _, _) in &stored {
        section.extend_from_slice(s);
    }
    let mut h = header.clone();
    h.flags = h.flags.with(Flags::CHUNKED, true);
    h.size = section.len() as u64;
    Ok((h, section))
}
