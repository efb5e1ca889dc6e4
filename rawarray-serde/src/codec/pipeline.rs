//! One block through the codec chain: the filters in order, then the codec (encoding), or the
//! codec, then the filters in reverse (decoding). Every reader and writer of chunked files
//! goes through [`Pipeline`]; it owns the scratch buffers between the steps.
//!
//! ```
//! use rawarray_serde::codec::{Codec, Elements, Filter, Pipeline};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Float, 4, false);
//! let p = Pipeline::new(vec![Filter::Shuffle], Codec::Zstd, 3, el);
//! let raw: Vec<u8> = (0..4096u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
//! let mut stored = Vec::new();
//! p.encode_block(&raw, &mut stored).unwrap();
//! assert!(stored.len() < raw.len() / 2);
//! let mut back = vec![0u8; raw.len()];
//! p.decode_block(&stored, &mut back).unwrap();
//! assert_eq!(back, raw);
//! ```

use std::cell::RefCell;

use super::bytedelta::selects;
use super::table::{Codec, Filter};
use super::traits::Elements;
use crate::error::Result;

/// Scratch buffers above this many bytes are freed after use, so that a thread keeps no
/// large buffer after a read of large blocks.
const KEEP_SCRATCH: usize = 4 << 20;

thread_local! {
    /// Two buffers between the steps of a pipeline, per thread.
    static SCRATCH: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The filters and codec of every block of a chunked section (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    filters: Vec<Filter>,
    codec: Codec,
    level: i32,
    el: Elements,
    split: bool,
    stream_crcs: bool,
}

/// Calls `f` with this thread's first scratch buffer, `len` bytes.
fn with_one_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    SCRATCH.with(|s| {
        let a = &mut s.borrow_mut().0;
        if a.len() < len {
            a.resize(len, 0);
        }
        let r = f(&mut a[..len]);
        if a.capacity() > KEEP_SCRATCH {
            *a = Vec::new();
        }
        r
    })
}

/// Calls `f` with this thread's two scratch buffers, `len` bytes each.
fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8], &mut [u8]) -> R) -> R {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let (a, b) = &mut *s;
        if a.len() < len {
            a.resize(len, 0);
        }
        if b.len() < len {
            b.resize(len, 0);
        }
        let r = f(&mut a[..len], &mut b[..len]);
        if a.capacity() > KEEP_SCRATCH {
            *a = Vec::new();
        }
        if b.capacity() > KEEP_SCRATCH {
            *b = Vec::new();
        }
        r
    })
}

/// How many of `filters` are bytedeltas that select byte plane `j`: how many times a reader
/// undoes a delta on it.
fn deltas_on(filters: &[Filter], j: usize) -> usize {
    filters
        .iter()
        .filter(|f| f.bytedelta_mask().is_some_and(|m| selects(m, j)))
        .count()
}

impl Pipeline {
    /// A pipeline of `filters` (in the order they are applied when writing) and `codec` at
    /// `level`, for elements `el`. The caller has checked them against the elements (the
    /// config decoder and the options do).
    pub fn new(filters: Vec<Filter>, codec: Codec, level: i32, el: Elements) -> Pipeline {
        Pipeline {
            filters,
            codec,
            level,
            el,
            split: false,
            stream_crcs: false,
        }
    }

    /// This pipeline with its codec compressing each block as `elbyte` byte streams
    /// ([`split`](super::split), config features bit 1) when `split`. The caller has checked
    /// that the codec splits ([`Codec::splits`]).
    pub fn with_split(mut self, split: bool) -> Pipeline {
        debug_assert!(
            !split || self.codec.splits(),
            "{} does not split",
            self.codec
        );
        self.split = split;
        self
    }

    /// Whether each block is compressed as byte streams.
    pub fn is_split(&self) -> bool {
        self.split
    }

    /// This pipeline with each byte stream carrying its own CRC-32 ([`split`](super::split),
    /// config features bit 2) when `on`; only with [`Pipeline::with_split`].
    pub fn with_stream_crcs(mut self, on: bool) -> Pipeline {
        debug_assert!(!on || self.split, "stream CRCs without byte streams");
        self.stream_crcs = on && self.split;
        self
    }

    /// Whether each byte stream carries its own CRC-32.
    pub fn has_stream_crcs(&self) -> bool {
        self.stream_crcs
    }

    /// The filters, in the order they are applied when writing.
    pub fn filters(&self) -> &[Filter] {
        &self.filters
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The codec's level.
    pub fn level(&self) -> i32 {
        self.level
    }

    /// The elements it works on.
    pub fn elements(&self) -> &Elements {
        &self.el
    }

    /// Appends block `raw`'s stored bytes (filters, then the codec) to `out`.
    pub fn encode_block(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let codec = self.codec.block_codec();
        self.filtered(raw, |block| {
            if self.split {
                super::split::encode(codec, block, &self.el, self.level, self.stream_crcs, out)
            } else {
                codec.compress(block, &self.el, self.level, out)
            }
        })
    }

    /// Writes block `raw`'s stored bytes (filters, then the codec) at the start of `dst` and
    /// returns their length, or `None` if they do not fit in `dst`
    /// ([`BlockCodec::compress_into`](super::BlockCodec::compress_into)).
    pub fn encode_block_into(&self, raw: &[u8], dst: &mut [u8]) -> Result<Option<usize>> {
        let codec = self.codec.block_codec();
        self.filtered(raw, |block| {
            if self.split {
                super::split::encode_into(codec, block, &self.el, self.level, self.stream_crcs, dst)
            } else {
                codec.compress_into(block, &self.el, self.level, dst)
            }
        })
    }

    /// Calls `f` on block `raw` through the filters (in this thread's scratch buffers).
    fn filtered<R>(&self, raw: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        let Some((first, rest)) = self.filters.split_first() else {
            return f(raw);
        };
        with_scratch(raw.len(), |a, b| {
            first.implementation().encode(raw, &self.el, a);
            // The output of each step is the input of the next: a -> b -> a ...
            let mut in_a = true;
            for filter in rest {
                if in_a {
                    filter.implementation().encode(a, &self.el, b);
                } else {
                    filter.implementation().encode(b, &self.el, a);
                }
                in_a = !in_a;
            }
            f(if in_a { a } else { b })
        })
    }

    /// Decodes a block's stored bytes into exactly `out.len()` raw bytes: the codec, then the
    /// filters in reverse order. An error in words, for the caller to name the chunk.
    pub fn decode_block(&self, stored: &[u8], out: &mut [u8]) -> std::result::Result<(), String> {
        if self.filters.is_empty() {
            return self.decompress(stored, out);
        }
        if self.decodes_by_plane() && !out.is_empty() {
            return self.decode_shuffled_streams(stored, out);
        }
        self.decode_by_filters(stored, out)
    }

    /// [`Pipeline::decode_block`] for any pipeline: the codec into scratch, then each filter
    /// undone in turn.
    fn decode_by_filters(&self, stored: &[u8], out: &mut [u8]) -> std::result::Result<(), String> {
        if self.filters.is_empty() {
            return self.decompress(stored, out);
        }
        let len = out.len();
        with_scratch(len, |a, b| {
            self.decompress(stored, a)?;
            // a -> b -> a ... -> out: the last filter undone writes into `out`. A run of
            // bytedeltas is undone in place, each byte plane as many times as the run selects
            // it (two at a time in one pass), and not at all where none does.
            let (mut cur, mut spare) = (a, b);
            let mut rest = &self.filters[..];
            while let Some((f, before)) = rest.split_last() {
                if f.bytedelta_mask().is_some() {
                    let start = rest
                        .iter()
                        .rposition(|g| g.bytedelta_mask().is_none())
                        .map_or(0, |p| p + 1);
                    let run = &rest[start..];
                    super::bytedelta::undo_in_place(cur, self.el.elbyte, |j| deltas_on(run, j));
                    rest = &rest[..start];
                    continue;
                }
                if before.is_empty() {
                    f.implementation().decode(cur, &self.el, out);
                    return Ok(());
                }
                f.implementation().decode(cur, &self.el, spare);
                std::mem::swap(&mut cur, &mut spare);
                rest = before;
            }
            // The pipeline begins with a bytedelta: undone in place above.
            out.copy_from_slice(cur);
            Ok(())
        })
    }

    /// [`Pipeline::decode_block`] for a block stored as byte streams after a shuffle and
    /// bytedeltas ([`Pipeline::decodes_by_plane`]): each coded stream is decoded into its own
    /// plane of scratch, a stream stored as it is is read where it lies in `stored` (where the
    /// deltas are undone in place first, only a stream no delta selects), and the unshuffle
    /// gathers the planes into `out`, undoing their deltas as it loads them where this machine
    /// has the kernel ([`unshuffles_undoing`](super::shuffle::unshuffles_undoing)). Against
    /// [`Pipeline::decode_by_filters`] it saves the copy of the stored streams and the
    /// deltas' own pass; the tests below compare the two on intact and damaged blocks.
    fn decode_shuffled_streams(
        &self,
        stored: &[u8],
        out: &mut [u8],
    ) -> std::result::Result<(), String> {
        let len = out.len();
        let codec = self.codec.block_codec();
        let spans =
            super::split::streams_of(stored, stored.len(), &self.el, len, self.stream_crcs)?;
        // `streams_of` checked that the block is whole elements and `elbyte > 0`.
        let m = len / self.el.elbyte;
        let times: Vec<usize> = (0..spans.len())
            .map(|j| deltas_on(&self.filters, j))
            .collect();
        // Planes without deltas (a shuffle alone) need no kernel that undoes them.
        let fused = times.iter().any(|&t| t > 0) && super::shuffle::unshuffles_undoing(&times);
        with_one_scratch(len, |a| {
            let mut planes: Vec<&[u8]> = Vec::with_capacity(spans.len());
            for ((j, s), scratch) in spans.iter().enumerate().zip(a.chunks_exact_mut(m)) {
                let bytes = &stored[s.range.clone()];
                // A raw stream is `m` bytes (`streams_of`: raw means its length is `m`).
                if s.raw && (fused || times[j] == 0) {
                    planes.push(bytes);
                    continue;
                }
                super::split::decode_one(codec, s, j, bytes, &self.el, scratch)?;
                if !fused {
                    super::bytedelta::undo_in_place(scratch, 1, |_| times[j]);
                }
                planes.push(scratch);
            }
            if fused {
                super::shuffle::unshuffle_planes_undoing(&planes, &times, out);
            } else {
                super::shuffle::unshuffle_planes(&planes, out);
            }
            Ok(())
        })
    }

    /// The codec stage undone: `stored` into exactly `out.len()` filtered bytes.
    fn decompress(&self, stored: &[u8], out: &mut [u8]) -> std::result::Result<(), String> {
        let codec = self.codec.block_codec();
        if self.split {
            super::split::decode(codec, stored, &self.el, self.stream_crcs, out)
        } else {
            codec.decompress(stored, &self.el, out)
        }
    }

    /// Whether byte `j` of every element of a block can be decoded alone
    /// ([`Pipeline::decode_planes`]): the block is stored as byte streams, and its lossless
    /// filters are a byte shuffle followed by nothing but `bytedelta`, so that stream `j` is
    /// byte plane `j`, after nothing but filters whose decoding is a copy
    /// ([`Filter::decodes_as_copy`]: bitround, which rounds in place).
    pub fn decodes_by_plane(&self) -> bool {
        let mut undone = self.filters.iter().skip_while(|f| f.decodes_as_copy());
        self.split
            && undone.next() == Some(&Filter::Shuffle)
            && undone.all(|f| f.bytedelta_mask().is_some())
    }

    /// Decodes only byte planes `which` of a block of `len` raw bytes (its stored bytes
    /// `stored`): plane `which[k]`, byte `which[k]` of each of the block's `len / elbyte`
    /// elements in order, into `out[k m .. (k + 1) m]`. The other planes' streams are not
    /// decoded. An error in words unless [`Pipeline::decodes_by_plane`].
    pub fn decode_planes(
        &self,
        stored: &[u8],
        len: usize,
        which: &[usize],
        out: &mut [u8],
    ) -> std::result::Result<(), String> {
        if !self.decodes_by_plane() {
            return Err(format!(
                "planes decoded alone: the pipeline {:?} (split {}) does not store byte planes",
                self.filters, self.split
            ));
        }
        super::split::decode_streams(
            self.codec.block_codec(),
            stored,
            &self.el,
            len,
            self.stream_crcs,
            which,
            out,
        )?;
        self.finish_planes(len, which, out);
        Ok(())
    }

    /// Undoes the `bytedelta` filters of decoded byte planes: `out[k m .. (k + 1) m]` is plane
    /// `which[k]` of a block of `len` raw bytes (each plane one stream of bytedelta).
    pub(crate) fn finish_planes(&self, len: usize, which: &[usize], out: &mut [u8]) {
        let m = len / self.el.elbyte.max(1);
        for (&j, plane) in which.iter().zip(out.chunks_exact_mut(m.max(1))) {
            let times = deltas_on(&self.filters, j);
            super::bytedelta::undo_in_place(plane, 1, |_| times);
        }
    }

    /// `raw` with the pipeline's lossy filters applied (they lead the pipeline and work
    /// element by element, and applying one twice changes nothing), or `None` if it has none.
    pub fn round(&self, raw: &[u8]) -> Option<Vec<u8>> {
        let lossy: Vec<&Filter> = self.filters.iter().take_while(|f| f.is_lossy()).collect();
        let (first, rest) = lossy.split_first()?;
        let mut out = vec![0u8; raw.len()];
        first.implementation().encode(raw, &self.el, &mut out);
        for f in rest {
            let src = out.clone();
            f.implementation().encode(&src, &self.el, &mut out);
        }
        Some(out)
    }

    /// Whether a filter of the pipeline changes values.
    pub fn any_lossy(&self) -> bool {
        self.filters.iter().any(|f| f.is_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElType;
    use proptest::prelude::*;

    /// `n` elements of `w` bytes: byte plane `j` noise where bit `j` of `noisy` is set (a
    /// stream the codec stores as it is), else slowly varying (one it compresses).
    fn planes_of(w: usize, n: usize, noisy: u32, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n * w)
            .map(|k| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (i, j) = (k / w, k % w);
                if noisy >> j & 1 == 1 {
                    (x >> 24) as u8
                } else {
                    ((i / 7) as u8).wrapping_mul(j as u8 + 1)
                }
            })
            .collect()
    }

    /// A pipeline of byte streams: `lead` (filters whose decoding is a copy), a shuffle, then
    /// a bytedelta for each mask (0: every plane).
    fn shuffled(el: Elements, lead: &[Filter], masks: &[u32], codec: Codec) -> Pipeline {
        let w = el.elbyte;
        let mut filters = lead.to_vec();
        filters.push(Filter::Shuffle);
        for &m in masks {
            let m = m & (1u32 << w).wrapping_sub(1);
            filters.push(if m == 0 {
                Filter::ByteDelta
            } else {
                Filter::ByteDeltaPlanes(m)
            });
        }
        Pipeline::new(filters, codec, 1, el).with_split(true)
    }

    /// Decodes `stored` both ways: the read by planes and the general path give the same
    /// bytes, or both an error.
    fn both_ways(p: &Pipeline, stored: &[u8], len: usize) -> std::result::Result<Vec<u8>, String> {
        let (mut fast, mut general) = (vec![0u8; len], vec![0u8; len]);
        let a = p.decode_block(stored, &mut fast);
        let b = p.decode_by_filters(stored, &mut general);
        assert_eq!(a.is_ok(), b.is_ok(), "by planes {a:?}, by filters {b:?}");
        if a.is_ok() {
            assert!(fast == general, "the two paths differ");
        }
        a.map(|()| fast)
    }

    proptest! {
        /// Blocks stored as byte streams after a shuffle and bytedeltas (read plane by plane:
        /// the streams stored as they are read where they lie, the deltas undone as the planes
        /// are unshuffled where the kernel can) give their raw bytes back, the same as the
        /// general path: blocks past 16 elements and their tails, every codec that splits, up
        /// to three bytedeltas of any mask, records of widths with and without the kernel.
        #[test]
        fn blocks_read_by_planes_give_their_bytes_back(
            w in prop::sample::select(vec![2usize, 3, 4, 8, 12, 16]),
            n in 0usize..2000,
            masks in prop::collection::vec(any::<u32>(), 0..4),
            codec in prop::sample::select(vec![Codec::Lz4, Codec::Zstd, Codec::Huffman]),
            noisy in any::<u32>(),
            seed in any::<u64>(),
        ) {
            let p = shuffled(Elements::new(ElType::User, w, false), &[], &masks, codec);
            prop_assert!(p.decodes_by_plane());
            let raw = planes_of(w, n, noisy, seed);
            let mut stored = Vec::new();
            p.encode_block(&raw, &mut stored).unwrap();
            prop_assert_eq!(both_ways(&p, &stored, raw.len()).unwrap(), raw);
        }

        /// Floats rounded first (bitround, whose decoding is a copy, so the read by planes
        /// skips it) read back as the rounding left them.
        #[test]
        fn rounded_floats_read_by_planes_as_rounded(
            wide in any::<bool>(),
            keep in 1u32..20,
            n in 16usize..1500,
            masks in prop::collection::vec(any::<u32>(), 1..3),
            seed in any::<u64>(),
        ) {
            let w = if wide { 8 } else { 4 };
            let el = Elements::new(ElType::Float, w, false);
            let p = shuffled(el, &[Filter::BitRound(keep)], &masks, Codec::Zstd);
            prop_assert!(p.decodes_by_plane());
            let raw: Vec<u8> = (0..n)
                .flat_map(|i| {
                    let v = (i as f64 * 0.01 + seed as f64 * 1e-20).sin();
                    if wide { v.to_le_bytes().to_vec() } else { (v as f32).to_le_bytes().to_vec() }
                })
                .collect();
            let mut stored = Vec::new();
            p.encode_block(&raw, &mut stored).unwrap();
            prop_assert_eq!(both_ways(&p, &stored, raw.len()).unwrap(), p.round(&raw).unwrap());
        }

        /// A damaged block (a byte changed, cut short, or two stream lengths swapped) read by
        /// planes is an error where the general path's is (both or neither; the messages are
        /// not compared), and otherwise the same bytes (a changed byte inside a stream stored as it is reads as another value: the
        /// block's CRC, checked before either path, is what catches it).
        #[test]
        fn damaged_blocks_read_by_planes_as_by_filters(
            w in prop::sample::select(vec![2usize, 4, 8, 12]),
            n in 17usize..600,
            masks in prop::collection::vec(any::<u32>(), 1..3),
            codec in prop::sample::select(vec![Codec::Lz4, Codec::Zstd, Codec::Huffman]),
            noisy in any::<u32>(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            how in 0u8..3,
        ) {
            let p = shuffled(Elements::new(ElType::User, w, false), &[], &masks, codec);
            let raw = planes_of(w, n, noisy, 7);
            let mut stored = Vec::new();
            p.encode_block(&raw, &mut stored).unwrap();
            match how {
                0 => {
                    let i = at.index(stored.len());
                    stored[i] ^= byte | 1;
                }
                1 => stored.truncate(at.index(stored.len())),
                _ => {
                    // Stream lengths are the head's first `w` words: two swapped still add up
                    // to the payload, and move the streams' boundaries.
                    let (i, j) = (4 * at.index(w), 4 * (usize::from(byte) % w));
                    let (a, b) = (stored[i..i + 4].to_vec(), stored[j..j + 4].to_vec());
                    stored[i..i + 4].copy_from_slice(&b);
                    stored[j..j + 4].copy_from_slice(&a);
                }
            }
            let _ = both_ways(&p, &stored, raw.len());
        }
    }

    /// Plane lengths around the kernel's 16-byte vectors, every plane with one and with two
    /// deltas, for the widths the kernel takes (2 and 4) and two that undo in place first.
    #[test]
    fn lengths_around_the_vectors_read_back() {
        for w in [2usize, 4, 8, 16] {
            for n in [0usize, 1, 15, 16, 17, 31, 32, 33, 255, 256, 257] {
                for masks in [vec![0u32], vec![0, 0], vec![1, 0]] {
                    for noisy in [0u32, u32::MAX, 0b101] {
                        let p = shuffled(
                            Elements::new(ElType::User, w, false),
                            &[],
                            &masks,
                            Codec::Zstd,
                        );
                        let raw = planes_of(w, n, noisy, n as u64);
                        let mut stored = Vec::new();
                        p.encode_block(&raw, &mut stored).unwrap();
                        assert_eq!(
                            both_ways(&p, &stored, raw.len()).unwrap(),
                            raw,
                            "w {w} n {n}"
                        );
                        // What the read took: the kernel for 2 and 4 bytes (on x86_64, whose
                        // CPUs all have SSSE3), and the noise planes stored as they are (read
                        // where they lie), the others coded.
                        let times: Vec<usize> = (0..w).map(|j| deltas_on(p.filters(), j)).collect();
                        if cfg!(target_arch = "x86_64") {
                            assert_eq!(super::super::shuffle::unshuffles_undoing(&times), w <= 4);
                        }
                        if n >= 255 {
                            let spans = super::super::split::streams_of(
                                &stored,
                                stored.len(),
                                p.elements(),
                                raw.len(),
                                false,
                            )
                            .unwrap();
                            for (j, s) in spans.iter().enumerate() {
                                assert_eq!(s.raw, noisy >> j & 1 == 1, "w {w} n {n} plane {j}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// The table's `decodes_as_copy` is what each filter's decoding does: a filter marked so
    /// gives back its input, bit for bit (the read by planes relies on it).
    #[test]
    fn filters_that_decode_as_a_copy_do() {
        let el = Elements::new(ElType::Float, 4, false);
        let src: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        for info in super::super::table::FILTERS {
            let f = Filter::from_id(
                info.id,
                if info.param.is_some() && !info.param_optional {
                    10
                } else {
                    0
                },
            );
            let f = f.unwrap();
            let mut out = vec![0u8; src.len()];
            f.implementation().decode(&src, &el, &mut out);
            assert_eq!(out == src, info.decodes_as_copy, "{}", info.name);
        }
    }
}
