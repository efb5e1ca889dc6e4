//! Part of a large block, decoded as a stream (doc/chunked.md 6.3 and 8): a version 1 block may
//! hold up to 2^30 bytes, and a read of one element of it must not cost a buffer of the block.
//!
//! The codec's output is produced in pieces (zstd's streaming decoder with a bounded window,
//! or LZ4 through [`crate::section::lz4`]'s windowed decoder), and of each piece only the bytes
//! the wanted elements need are kept: for no filter, their bytes; for a byte shuffle, their
//! bytes of each of the `w` planes; for a bit shuffle, the bytes of each of the `8 w` bit planes
//! that hold their bits (whole groups of 8 elements), and the unshuffled tail. The kept bytes
//! are then unfiltered as a small block of their own. Memory: the wanted part (rounded to 8
//! elements) and one piece, whatever the block. Decoding stops once the last byte needed is
//! out.
//!
//! ```
//! use rawarray_serde::codec::stream::decode_range;
//! use rawarray_serde::codec::{Codec, Elements, Filter, Pipeline};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Uint, 4, false);
//! let p = Pipeline::new(vec![Filter::Shuffle], Codec::Zstd, 3, el);
//! let raw: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
//! let mut stored = Vec::new();
//! p.encode_block(&raw, &mut stored).unwrap();
//! let mut part = [0u8; 8];
//! decode_range(&p, &stored, raw.len() as u64, 4000..4008, &mut part).unwrap();
//! assert_eq!(part, raw[4000..4008]);
//! ```

use std::io::Read;
use std::ops::{ControlFlow, Range};

use super::pipeline::Pipeline;
use super::table::{Codec, Filter};

/// Pieces of decoded output handled at a time.
const PIECE: usize = 1 << 20;

/// The largest zstd window (log2) a streamed block may ask for: a frame asking more is refused.
const WINDOW_LOG_MAX: u32 = 24;

/// Decodes bytes `want` of a block of `len` raw bytes whose payload is `stored` (checked by
/// its CRC already), through `pipeline` (no filter, or one shuffle or bit shuffle: version 1's
/// pipelines), into `out` (`want`'s length). An error in words.
pub fn decode_range(
    pipeline: &Pipeline,
    stored: &[u8],
    len: u64,
    want: Range<u64>,
    out: &mut [u8],
) -> Result<(), String> {
    let w = pipeline.elements().elbyte as u64;
    if want.end > len || want.start > want.end || out.len() as u64 != want.end - want.start {
        return Err(format!("bytes {want:?} of a block of {len}"));
    }
    if want.is_empty() || w == 0 {
        return Ok(());
    }
    if pipeline.is_split() {
        // Byte streams are version 2's, whose blocks are at most 16 MiB and never streamed.
        return Err(format!(
            "a block of {len} bytes (over 16 MiB, a version 1 block) in byte streams"
        ));
    }
    let k = len / w;
    let (e0, e1) = (want.start / w, want.end.div_ceil(w).min(k));
    let filter = match pipeline.filters() {
        [] => None,
        [f @ (Filter::Shuffle | Filter::BitShuffle)] => Some(*f),
        other => {
            return Err(format!(
                "a block of {len} bytes (over 16 MiB, a version 1 block) with filters {other:?}"
            ))
        }
    };
    // The byte ranges of the filtered block to keep, in order, and where each goes in `kept`.
    let mut ranges: Vec<Range<u64>> = Vec::new();
    let (q0, q1, k8) = (e0 / 8, e1.min(k - k % 8).div_ceil(8), k - k % 8);
    match filter {
        None => ranges.push(e0 * w..e1 * w),
        Some(Filter::Shuffle) => {
            for j in 0..w {
                ranges.push(j * k + e0..j * k + e1);
            }
        }
        _ => {
            if e0 < k8 {
                let plane = k8 / 8;
                for p in 0..8 * w {
                    ranges.push(p * plane + q0..p * plane + q1);
                }
            }
            if e1 > k8 {
                ranges.push(k8 * w + (e0.max(k8) - k8) * w..k8 * w + (e1 - k8) * w);
            }
        }
    }
    let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let mut kept = vec![0u8; usize::try_from(total).map_err(|_| "too large".to_string())?];
    gather(pipeline.codec(), stored, len, &ranges, &mut kept)?;
    // Unfilter the kept bytes as a block of their own: raw elements from `first`.
    let (raw, first) = match filter {
        None => (kept, e0),
        Some(Filter::Shuffle) => {
            let mut raw = vec![0u8; kept.len()];
            super::shuffle::unshuffle(&kept, w as usize, &mut raw);
            (raw, e0)
        }
        _ => {
            let planes = if e0 < k8 { (q1 - q0) * 8 * w } else { 0 } as usize;
            let mut raw = vec![0u8; kept.len()];
            super::bitshuffle::bitunshuffle(&kept[..planes], w as usize, &mut raw[..planes]);
            raw[planes..].copy_from_slice(&kept[planes..]);
            // The planes hold elements from 8 q0; the tail those from max(e0, k8).
            (raw, if e0 < k8 { q0 * 8 } else { e0 })
        }
    };
    let at = (want.start - first * w) as usize;
    out.copy_from_slice(&raw[at..at + out.len()]);
    Ok(())
}

/// Decodes `stored` with `codec` as a stream and copies the bytes of `ranges` (sorted, not
/// overlapping) of its output into `kept`, back to back; stops after the last one.
fn gather(
    codec: Codec,
    stored: &[u8],
    len: u64,
    ranges: &[Range<u64>],
    kept: &mut [u8],
) -> Result<(), String> {
    let end = ranges.last().map_or(0, |r| r.end);
    let mut pos = 0u64;
    let mut at = 0usize;
    let mut next = 0usize;
    let mut take = |piece: &[u8]| -> ControlFlow<()> {
        let piece_end = pos + piece.len() as u64;
        while let Some(r) = ranges.get(next) {
            if r.start >= piece_end {
                break;
            }
            let lo = r.start.max(pos);
            let hi = r.end.min(piece_end);
            if lo < hi {
                // Where this part of the range goes: after the ranges before it and the part
                // of this one already taken.
                let done: u64 = ranges[..next].iter().map(|x| x.end - x.start).sum();
                let into = (done + (lo - r.start)) as usize;
                let n = (hi - lo) as usize;
                kept[into..into + n]
                    .copy_from_slice(&piece[(lo - pos) as usize..(hi - pos) as usize]);
                at = at.max(into + n);
            }
            if r.end <= piece_end {
                next += 1;
            } else {
                break;
            }
        }
        pos = piece_end;
        if pos >= end {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    match codec {
        Codec::None => {
            if stored.len() as u64 != len {
                return Err(format!(
                    "stored block of {} bytes, expected {len}",
                    stored.len()
                ));
            }
            for piece in stored.chunks(PIECE) {
                if take(piece).is_break() {
                    break;
                }
            }
        }
        Codec::Lz4 => {
            crate::section::lz4::decode_pieces(
                &mut &stored[..],
                stored.len() as u64,
                len,
                end,
                1,
                PIECE,
                take,
            )
            .map_err(|e| e.to_string())?;
        }
        Codec::Zstd => {
            let mut d = zstd::stream::read::Decoder::with_buffer(stored)
                .map_err(|e| format!("zstd: {e}"))?;
            d.window_log_max(WINDOW_LOG_MAX)
                .map_err(|e| format!("zstd: {e}"))?;
            let mut buf = vec![0u8; PIECE];
            let mut produced = 0u64;
            loop {
                let n = d.read(&mut buf).map_err(|e| format!("zstd: {e}"))?;
                if n == 0 {
                    break;
                }
                produced += n as u64;
                if produced > len {
                    return Err(format!("zstd frame decodes to more than {len} bytes"));
                }
                if take(&buf[..n]).is_break() {
                    break;
                }
            }
            if produced < end {
                return Err(format!(
                    "zstd frame ends at {produced} bytes, expected {len}"
                ));
            }
        }
        Codec::Pco | Codec::Huffman => return Err(format!("a {codec} block is never over 16 MiB")),
    }
    if (at as u64) < kept.len() as u64 {
        return Err(format!("the block ends before byte {end}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Elements;
    use crate::ElType;

    /// Every part of a block, every v1 pipeline, equals the part of the whole decode.
    #[test]
    fn parts_equal_the_whole() {
        let raw: Vec<u8> = (0..5003u32)
            .flat_map(|i| ((i / 3) as u16 ^ 0x5a).to_le_bytes())
            .collect();
        for filters in [vec![], vec![Filter::Shuffle], vec![Filter::BitShuffle]] {
            for codec in [Codec::None, Codec::Lz4, Codec::Zstd] {
                let p = Pipeline::new(
                    filters.clone(),
                    codec,
                    3,
                    Elements::new(ElType::Uint, 2, false),
                );
                let mut stored = Vec::new();
                p.encode_block(&raw, &mut stored).unwrap();
                for want in [0..2u64, 1..3, 10..20, 9990..10006, 0..10006, 4000..4001] {
                    let mut out = vec![0u8; (want.end - want.start) as usize];
                    decode_range(&p, &stored, raw.len() as u64, want.clone(), &mut out).unwrap();
                    assert_eq!(
                        out,
                        raw[want.start as usize..want.end as usize],
                        "{filters:?} {codec:?} {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_short_or_long_frame_is_an_error() {
        let p = Pipeline::new(
            vec![],
            Codec::Zstd,
            3,
            Elements::new(ElType::Uint, 1, false),
        );
        let mut stored = Vec::new();
        p.encode_block(&[5u8; 1000], &mut stored).unwrap();
        let mut out = [0u8; 10];
        assert!(decode_range(&p, &stored, 2000, 1990..2000, &mut out).is_err());
        assert!(decode_range(&p, &stored, 500, 0..10, &mut out).is_err());
    }
}
