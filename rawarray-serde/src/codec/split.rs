//! Byte streams: a block's filtered bytes cut in `w` equal streams (`w` is elbyte), each
//! compressed alone (config features bit 1, doc/chunked.md 5.3).
//!
//! After a byte shuffle the `w` streams are the block's byte planes. They compress very
//! differently: the sign and exponent planes of a smooth float field shrink many times, the
//! low mantissa planes are nearly noise. One frame over all of them pays for the noise with
//! slower entropy decoding and a worse ratio at small blocks; a frame per plane lets each plane
//! find its own statistics, and a plane that does not shrink is stored as it is and decoded by
//! a copy. This is what c-blosc2 does by default for shuffled blocks of fast codecs
//! (`BLOSC_AUTO_SPLIT`), and it is why its 128 KiB blocks reach the ratio that one frame
//! reaches only at 256 KiB (doc/benchmarks.md, "A frame per byte plane").
//!
//! The payload is `w` lengths (`u32`, little-endian), then, with stream CRCs (config features
//! bit 2), `w` CRC-32s of the streams' stored bytes, then the `w` streams in order. A stream of
//! exactly its raw length (`block bytes / w`) is stored as it is; any other stream is the
//! codec's payload of that many bytes. Writers store a stream raw whenever the codec does not
//! make it smaller, so a coded stream is always shorter than its raw bytes.
//!
//! Stream CRCs are for readers of some fields of records: they read the head, then only the
//! streams of the bytes they need, and check each against its own CRC (the block's CRC covers
//! the whole payload, which such a read does not hold). Records split by default carry them.
//!
//! ```
//! use rawarray_serde::codec::{split, Codec, Elements};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Uint, 2, false);
//! // Two planes of 4096 bytes: one of zeros (it shrinks), one of noise (it is kept raw).
//! let mut planes = vec![0u8; 8192];
//! let mut x = 1u32;
//! for b in &mut planes[4096..] {
//!     x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
//!     *b = (x >> 24) as u8;
//! }
//! let codec = Codec::Lz4.block_codec();
//! let mut stored = vec![0u8; 9000];
//! let n = split::encode_into(codec, &planes, &el, 0, false, &mut stored).unwrap().unwrap();
//! let first = u32::from_le_bytes(stored[0..4].try_into().unwrap());
//! let second = u32::from_le_bytes(stored[4..8].try_into().unwrap());
//! assert!(first < 100 && second == 4096 && n == 8 + first as usize + 4096);
//! let mut back = vec![0u8; 8192];
//! split::decode(codec, &stored[..n], &el, false, &mut back).unwrap();
//! assert_eq!(back, planes);
//! ```

use super::{BlockCodec, Elements};
use crate::error::Result;

/// The most streams a block may be cut in: elements of at most this many bytes may be split
/// (doc/chunked.md 5.1).
pub const MAX_STREAMS: u64 = 256;

/// The bytes before the streams of a block of `el`'s elements: their lengths, and their CRCs
/// when `crcs` (config features bit 2).
pub fn head_len(el: &Elements, crcs: bool) -> usize {
    if crcs {
        8 * el.elbyte
    } else {
        4 * el.elbyte
    }
}

/// One stream of a split payload, as its head describes it ([`streams_of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// Its stored bytes, as offsets in the payload.
    pub range: std::ops::Range<usize>,
    /// Whether they are the stream itself (stored as it is) rather than the codec's payload.
    pub raw: bool,
    /// The CRC-32 of its stored bytes, when the payload carries them (features bit 2).
    pub crc: Option<u32>,
}

/// The streams of a block of `len` bytes: `(w, m)`, `w` streams of `m` bytes; an error unless
/// the block is whole elements (every version 2 block is; this guards the public API).
fn streams(len: usize, el: &Elements) -> std::result::Result<(usize, usize), String> {
    let w = el.elbyte;
    if w == 0 || !len.is_multiple_of(w) {
        return Err(format!(
            "byte streams of a block of {len} bytes: expected whole elements of {w} bytes"
        ));
    }
    Ok((w, len / w))
}

/// Writes block `src`'s split payload at the start of `dst` with `codec` at `level` and
/// returns its length, or `None` if it does not fit in `dst`.
pub fn encode_into(
    codec: &dyn BlockCodec,
    src: &[u8],
    el: &Elements,
    level: i32,
    crcs: bool,
    dst: &mut [u8],
) -> Result<Option<usize>> {
    let (w, m) = streams(src.len(), el).map_err(crate::Error::msg)?;
    let head = head_len(el, crcs);
    if dst.len() < head {
        return Ok(None);
    }
    let mut pos = head;
    for j in 0..w {
        let stream = &src[j * m..(j + 1) * m];
        let room = &mut dst[pos..];
        // The codec writes in place; a stream it does not shrink is overwritten by its raw
        // bytes (a coded stream is always shorter than them: the reader tells the two apart by
        // length alone).
        let n = match codec.compress_into(stream, el, level, room)? {
            Some(n) if n < m => n,
            _ if room.len() >= m => {
                room[..m].copy_from_slice(stream);
                m
            }
            _ => return Ok(None),
        };
        dst[4 * j..4 * j + 4].copy_from_slice(&(n as u32).to_le_bytes());
        if crcs {
            let crc = crc32fast::hash(&dst[pos..pos + n]);
            dst[4 * (w + j)..4 * (w + j) + 4].copy_from_slice(&crc.to_le_bytes());
        }
        pos += n;
    }
    Ok(Some(pos))
}

/// Appends block `src`'s split payload to `out` (see [`encode_into`]).
pub fn encode(
    codec: &dyn BlockCodec,
    src: &[u8],
    el: &Elements,
    level: i32,
    crcs: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (w, m) = streams(src.len(), el).map_err(crate::Error::msg)?;
    let start = out.len();
    out.resize(start + head_len(el, crcs), 0);
    for j in 0..w {
        let stream = &src[j * m..(j + 1) * m];
        let at = out.len();
        codec.compress(stream, el, level, out)?;
        if out.len() - at >= m {
            out.truncate(at);
            out.extend_from_slice(stream);
        }
        let n = (out.len() - at) as u32;
        out[start + 4 * j..start + 4 * j + 4].copy_from_slice(&n.to_le_bytes());
        if crcs {
            let crc = crc32fast::hash(&out[at..]);
            out[start + 4 * (w + j)..start + 4 * (w + j) + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    Ok(())
}

/// Decodes a split payload `src` into exactly `dst.len()` bytes (a block of whole elements),
/// each stream with `codec`; `crcs` says whether its head holds stream CRCs (they are not
/// checked here: a whole payload is checked by its block's CRC). Lengths that do not add up to
/// the payload, a stream longer than its raw bytes, or a stream the codec refuses is an error
/// (in words, naming the stream).
pub fn decode(
    codec: &dyn BlockCodec,
    src: &[u8],
    el: &Elements,
    crcs: bool,
    dst: &mut [u8],
) -> std::result::Result<(), String> {
    let streams = streams_of(src, src.len(), el, dst.len(), crcs)?;
    let m = dst.len() / el.elbyte.max(1);
    for (j, s) in streams.iter().enumerate() {
        decode_one(
            codec,
            s,
            j,
            &src[s.range.clone()],
            el,
            &mut dst[j * m..(j + 1) * m],
        )?;
    }
    Ok(())
}

/// The streams of a split payload of `payload` bytes, of a block of `len` raw bytes, from its
/// head (`head`: at least [`head_len`] bytes, the payload's start), checked as [`decode`]
/// checks them: the lengths add up to the payload after its head, and none exceeds its raw
/// bytes. With `crcs` each stream has the CRC its head gives.
pub fn streams_of(
    head: &[u8],
    payload: usize,
    el: &Elements,
    len: usize,
    crcs: bool,
) -> std::result::Result<Vec<Stream>, String> {
    let (w, m) = streams(len, el)?;
    let hl = head_len(el, crcs);
    if head.len() < hl || payload < hl {
        return Err(format!(
            "split payload of {payload} bytes: expected at least {hl} ({w} stream lengths{})",
            if crcs { " and CRCs" } else { "" }
        ));
    }
    let word = |i: usize| u32::from_le_bytes(head[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    // Summed as u64: a hostile length is compared, never used to index.
    let total: u64 = (0..w).map(|j| u64::from(word(j))).sum();
    if total != (payload - hl) as u64 {
        return Err(format!(
            "split streams: lengths add up to {total}, expected the payload's {} bytes after \
             its head of {hl}",
            payload - hl
        ));
    }
    let mut pos = hl;
    let mut out = Vec::with_capacity(w);
    for j in 0..w {
        let n = word(j) as usize;
        if n > m {
            return Err(format!(
                "split stream {j}: {n} bytes, expected at most its raw {m}"
            ));
        }
        out.push(Stream {
            range: pos..pos + n,
            raw: n == m,
            crc: crcs.then(|| word(w + j)),
        });
        pos += n;
    }
    Ok(out)
}

/// Checks each stream of a whole split payload `src` with stream CRCs (of a block of `len` raw
/// bytes) against its CRC: what a read of some streams alone relies on, which a whole decode
/// does not look at (the block's CRC covers it). An error names the first stream that differs.
pub fn check_stream_crcs(src: &[u8], el: &Elements, len: usize) -> std::result::Result<(), String> {
    for (j, s) in streams_of(src, src.len(), el, len, true)?
        .iter()
        .enumerate()
    {
        let found = crc32fast::hash(&src[s.range.clone()]);
        if Some(found) != s.crc {
            return Err(format!(
                "split stream {j}: CRC-32 {found:#010x}, expected {:#010x}",
                s.crc.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// Decodes stream `j` (`s`, from [`streams_of`]) from its stored bytes `bytes` into `out` (its
/// raw bytes), after checking its CRC when it has one: a CRC that does not match, or a stream
/// the codec refuses, is an error naming the stream.
pub fn decode_stream(
    codec: &dyn BlockCodec,
    s: &Stream,
    j: usize,
    bytes: &[u8],
    el: &Elements,
    out: &mut [u8],
) -> std::result::Result<(), String> {
    if bytes.len() != s.range.len() {
        return Err(format!(
            "split stream {j}: {} bytes read, expected its {}",
            bytes.len(),
            s.range.len()
        ));
    }
    if let Some(expected) = s.crc {
        let found = crc32fast::hash(bytes);
        if found != expected {
            return Err(format!(
                "split stream {j}: CRC-32 {found:#010x}, expected {expected:#010x}"
            ));
        }
    }
    decode_one(codec, s, j, bytes, el, out)
}

/// Stream `j`'s stored bytes `bytes` into `out`: a copy when stored as it is, else the codec;
/// its CRC is its caller's to check (a whole payload's is covered by its block's).
pub(crate) fn decode_one(
    codec: &dyn BlockCodec,
    s: &Stream,
    j: usize,
    bytes: &[u8],
    el: &Elements,
    out: &mut [u8],
) -> std::result::Result<(), String> {
    if s.raw {
        if out.len() != bytes.len() {
            return Err(format!(
                "split stream {j}: {} raw bytes, expected {}",
                bytes.len(),
                out.len()
            ));
        }
        out.copy_from_slice(bytes);
        Ok(())
    } else {
        codec
            .decompress(bytes, el, out)
            .map_err(|e| format!("split stream {j}: {e}"))
    }
}

/// Decodes only the streams `which` (indices, each below `elbyte`) of a split payload `src` of
/// a block of `len` raw bytes: stream `which[k]` into `dst[k m .. (k + 1) m]`, where `m` is
/// `len / elbyte`. The lengths are checked as [`decode`] checks them; the other streams are not
/// decoded. After a byte shuffle stream `j` is byte `j` of every element, so a reader of some
/// fields of records decodes only their bytes' planes (doc/chunked.md 5.3).
pub fn decode_streams(
    codec: &dyn BlockCodec,
    src: &[u8],
    el: &Elements,
    len: usize,
    crcs: bool,
    which: &[usize],
    dst: &mut [u8],
) -> std::result::Result<(), String> {
    let spans = streams_of(src, src.len(), el, len, crcs)?;
    let m = len / el.elbyte.max(1);
    if dst.len() != which.len() * m {
        return Err(format!(
            "{} streams of {m} bytes decoded into {} bytes",
            which.len(),
            dst.len()
        ));
    }
    for (k, &j) in which.iter().enumerate() {
        let Some(s) = spans.get(j) else {
            return Err(format!("split stream {j} of {}", spans.len()));
        };
        decode_one(
            codec,
            s,
            j,
            &src[s.range.clone()],
            el,
            &mut dst[k * m..(k + 1) * m],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Codec;
    use crate::eltype::ElType;

    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (x >> 24) as u8
            })
            .collect()
    }

    // Vec and slice encoders write the same bytes, and both decode, for every codec that
    // splits, planes that shrink and planes that do not.
    #[test]
    fn both_encoders_agree_and_decode() {
        for codec in [Codec::Lz4, Codec::Zstd] {
            for w in [1usize, 2, 4, 8, 16] {
                let el = Elements::new(ElType::Uint, w, false);
                let m = 3000;
                let mut src = Vec::new();
                for j in 0..w {
                    if j % 2 == 0 {
                        src.extend(std::iter::repeat_n(j as u8, m));
                    } else {
                        src.extend(noise(m, j as u32));
                    }
                }
                let c = codec.block_codec();
                let mut v = Vec::new();
                encode(c, &src, &el, 3, false, &mut v).unwrap();
                let mut d = vec![0u8; src.len() + 4 * w + 64];
                let n = encode_into(c, &src, &el, 3, false, &mut d)
                    .unwrap()
                    .unwrap();
                assert_eq!(&d[..n], &v[..], "{codec} w {w}");
                let mut back = vec![0u8; src.len()];
                decode(c, &v, &el, false, &mut back).unwrap();
                assert_eq!(back, src);
            }
        }
    }

    // Hand-made payloads: the lengths are read as the spec says, and every inconsistency is an
    // error naming what is wrong.
    #[test]
    fn hostile_payloads_are_errors() {
        let el = Elements::new(ElType::Uint, 2, false);
        let c = Codec::Lz4.block_codec();
        let mut out = [0u8; 8];
        // Two raw streams of 4 bytes each, by hand.
        let good = [4, 0, 0, 0, 4, 0, 0, 0, 1, 3, 5, 7, 2, 4, 6, 8];
        decode(c, &good, &el, false, &mut out).unwrap();
        assert_eq!(out, [1, 3, 5, 7, 2, 4, 6, 8]);
        let e = decode(c, &good[..6], &el, false, &mut out).unwrap_err();
        assert!(e.contains("at least 8"), "{e}");
        let mut bad = good;
        bad[0] = 5;
        let e = decode(c, &bad, &el, false, &mut out).unwrap_err();
        assert!(e.contains("add up to 9"), "{e}");
        let mut bad = good.to_vec();
        bad[0] = 5;
        bad[4] = 3;
        let e = decode(c, &bad, &el, false, &mut out).unwrap_err();
        assert!(e.contains("stream 0: 5 bytes"), "{e}");
        // A huge claimed length is compared, never allocated.
        let mut bad = good;
        bad[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(c, &bad, &el, false, &mut out).is_err());
        // A coded stream that is not LZ4 names its stream.
        let bad = [3, 0, 0, 0, 4, 0, 0, 0, 0xff, 0xff, 0xff, 2, 4, 6, 8];
        let e = decode(c, &bad, &el, false, &mut out).unwrap_err();
        assert!(e.starts_with("split stream 0: "), "{e}");
    }

    // No room for the lengths, or for a stream: None, never a panic.
    #[test]
    fn too_little_room_is_none() {
        let el = Elements::new(ElType::Uint, 4, false);
        let src = noise(4000, 7);
        let c = Codec::Zstd.block_codec();
        for room in [0usize, 3, 16, 100, 4015] {
            let mut d = vec![0u8; room];
            assert_eq!(
                encode_into(c, &src, &el, 3, false, &mut d).unwrap(),
                None,
                "{room}"
            );
        }
        let mut d = vec![0u8; 4016];
        assert_eq!(
            encode_into(c, &src, &el, 3, false, &mut d).unwrap(),
            Some(4016)
        );
    }

    // With stream CRCs: both encoders write the same bytes, the head holds each stream's
    // CRC-32 of its stored bytes, a whole decode gives the block back, and each stream decoded
    // from its own bytes alone checks its CRC: one flipped bit in a stream is an error naming
    // it, and the other streams still decode.
    #[test]
    fn stream_crcs_cover_each_stream() {
        for codec in [Codec::Lz4, Codec::Zstd] {
            let w = 6;
            let el = Elements::new(ElType::User, w, false);
            let m = 2000;
            let mut src = Vec::new();
            for j in 0..w {
                if j % 2 == 0 {
                    src.extend(std::iter::repeat_n(j as u8, m));
                } else {
                    src.extend(noise(m, j as u32));
                }
            }
            let c = codec.block_codec();
            let mut v = Vec::new();
            encode(c, &src, &el, 3, true, &mut v).unwrap();
            let mut d = vec![0u8; src.len() + 8 * w + 64];
            let n = encode_into(c, &src, &el, 3, true, &mut d).unwrap().unwrap();
            assert_eq!(&d[..n], &v[..], "{codec}");
            let mut plain = Vec::new();
            encode(c, &src, &el, 3, false, &mut plain).unwrap();
            assert_eq!(
                v.len(),
                plain.len() + 4 * w,
                "{codec}: 4 bytes a stream more"
            );
            assert_eq!(&v[..4 * w], &plain[..4 * w], "{codec}: the same lengths");
            assert_eq!(&v[8 * w..], &plain[4 * w..], "{codec}: the same streams");
            let mut back = vec![0u8; src.len()];
            decode(c, &v, &el, true, &mut back).unwrap();
            assert_eq!(back, src);
            let streams = streams_of(&v[..8 * w], v.len(), &el, src.len(), true).unwrap();
            let mut pos = 8 * w;
            for (j, s) in streams.iter().enumerate() {
                let len = u32::from_le_bytes(v[4 * j..4 * j + 4].try_into().unwrap()) as usize;
                let crc = u32::from_le_bytes(v[4 * (w + j)..4 * (w + j) + 4].try_into().unwrap());
                assert_eq!(s.range, pos..pos + len);
                assert_eq!(s.crc, Some(crc));
                assert_eq!(
                    crc,
                    crc32fast::hash(&v[pos..pos + len]),
                    "{codec} stream {j}"
                );
                assert_eq!(s.raw, j % 2 == 1, "{codec}: noise is stored as it is");
                pos += len;
                let mut out = vec![0u8; m];
                decode_stream(c, s, j, &v[s.range.clone()], &el, &mut out).unwrap();
                assert_eq!(out, src[j * m..(j + 1) * m]);
            }
            for (j, s) in streams.iter().enumerate() {
                let mut bytes = v[s.range.clone()].to_vec();
                bytes[s.range.len() / 2] ^= 0x10;
                let mut out = vec![0u8; m];
                let e = decode_stream(c, s, j, &bytes, &el, &mut out).unwrap_err();
                assert!(e.starts_with(&format!("split stream {j}: CRC-32 ")), "{e}");
                let e = decode_stream(c, s, j, &bytes[1..], &el, &mut out).unwrap_err();
                assert!(e.contains("bytes read"), "{e}");
            }
            // A head too short for the CRCs, and lengths counted without them, are errors.
            let e = streams_of(&v[..8 * w - 1], v.len(), &el, src.len(), true).unwrap_err();
            assert!(e.contains("lengths and CRCs"), "{e}");
            let e = streams_of(&v, v.len(), &el, src.len(), false).unwrap_err();
            assert!(e.contains("add up to"), "{e}");
        }
    }
}
