//! How a chunk is cut in blocks that decode alone (doc/chunked.md sections 5.5 and 6.3):
//! n-d blocks of a block shape (version 2), or runs of a number of raw bytes (version 1).
//!
//! [`BlockGrid`] is the one place that knows where a block's raw bytes sit in its chunk: the
//! encoder gathers them from there, a whole-chunk decode scatters them back, and a read of a
//! box asks which blocks it crosses and which bytes of each it needs.
//!
//! ```
//! use rawarray_serde::codec::{BlockGrid, Blocks};
//! // A chunk of 4 x 3 elements of 2 bytes in blocks of 2 x 2: 2 x 2 blocks, the last row clipped.
//! let g = BlockGrid::new(&Blocks::Shape(vec![2, 2]), &[4, 3], 2).unwrap();
//! assert_eq!(g.count(), 4);
//! assert_eq!((g.raw_len(0), g.raw_len(3)), (8, 4));
//! // Elements [1..3, 2..3] of the chunk cross blocks 2 and 3.
//! assert_eq!(g.touched(&[1..3, 2..3]).collect::<Vec<_>>(), [2, 3]);
//! ```

use std::ops::Range;

use super::config::Blocks;
use super::grid::{runs, CopyRuns, Place};

/// Bytes of one block table entry: `end u64, crc32 u32`.
pub const BLOCK_ENTRY_LEN: u64 = 12;

/// The blocks of one chunk, whose stored extent is `extent` (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockGrid {
    extent: Vec<u64>,
    elbyte: u64,
    raw_len: u64,
    /// Version 1: raw bytes per block.
    bytes: Option<u64>,
    /// Version 2: the block shape and blocks per dim.
    shape: Vec<u64>,
    counts: Vec<u64>,
    count: u64,
}

impl BlockGrid {
    /// The blocks of a chunk of `extent` elements of `elbyte` bytes, or `None` where their
    /// number or bytes do not fit a `u64` (a hostile config).
    pub fn new(blocks: &Blocks, extent: &[u64], elbyte: u64) -> Option<BlockGrid> {
        let raw_len = extent
            .iter()
            .try_fold(elbyte, |acc, &d| acc.checked_mul(d))?;
        match blocks {
            Blocks::Bytes(b) => Some(BlockGrid {
                extent: extent.to_vec(),
                elbyte,
                raw_len,
                bytes: Some((*b).max(1)),
                shape: Vec::new(),
                counts: Vec::new(),
                count: raw_len.div_ceil((*b).max(1)),
            }),
            Blocks::Shape(shape) => {
                let counts: Vec<u64> = extent
                    .iter()
                    .zip(shape)
                    .map(|(&e, &b)| e.div_ceil(b.max(1)))
                    .collect();
                let count = counts.iter().try_fold(1u64, |acc, &c| acc.checked_mul(c))?;
                Some(BlockGrid {
                    extent: extent.to_vec(),
                    elbyte,
                    raw_len,
                    bytes: None,
                    shape: shape.clone(),
                    counts,
                    count,
                })
            }
        }
    }

    /// The chunk's raw bytes.
    pub fn chunk_raw_len(&self) -> u64 {
        self.raw_len
    }

    /// Number of blocks.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Bytes of the block table.
    pub fn table_len(&self) -> Option<u64> {
        self.count.checked_mul(BLOCK_ENTRY_LEN)
    }

    /// Block `b`'s origin (element index in the chunk) and clipped shape (version 2).
    fn block_box(&self, b: u64) -> (Vec<u64>, Vec<u64>) {
        let mut rest = b;
        let mut origin = Vec::with_capacity(self.counts.len());
        let mut shape = Vec::with_capacity(self.counts.len());
        for ((&c, &bs), &e) in self.counts.iter().zip(&self.shape).zip(&self.extent) {
            let i = rest % c.max(1);
            rest /= c.max(1);
            origin.push(i * bs);
            shape.push(bs.min(e - i * bs));
        }
        (origin, shape)
    }

    /// Raw bytes of block `b`.
    pub fn raw_len(&self, b: u64) -> u64 {
        match self.bytes {
            Some(bb) => ((b + 1) * bb).min(self.raw_len) - b * bb,
            None => self.block_box(b).1.iter().product::<u64>() * self.elbyte,
        }
    }

    /// Whether every block is one run of the chunk's raw bytes, block `b` right after block
    /// `b - 1`: version 1 always; version 2 when the blocks span the chunk's first dims whole,
    /// then any part of one dim, then one element along every later dim (as the default
    /// blocks do: `[512, 64, 1]` in a `[512, 512, 1]` chunk). Encoders then read each block
    /// where it is, and a whole-chunk decode decodes each block in place, with no copy.
    pub fn is_contiguous(&self) -> bool {
        match self.bytes {
            Some(_) => true,
            None => {
                let n = self.extent.len();
                match (0..n).find(|&i| self.shape[i] < self.extent[i]) {
                    None => true,
                    // A block clipped to one element along a dim (an edge chunk) is one there.
                    Some(k) => (k + 1..n).all(|j| self.shape[j].min(self.extent[j]) <= 1),
                }
            }
        }
    }

    /// Where block `b`'s raw bytes start in the chunk's raw bytes: its origin's offset,
    /// column-major over the extent (for contiguous blocks, [`BlockGrid::is_contiguous`], the
    /// start of its one run).
    pub fn contiguous_start(&self, b: u64) -> u64 {
        match self.bytes {
            Some(bb) => b * bb,
            None => {
                let (mut rest, mut stride, mut start) = (b, self.elbyte, 0);
                for ((&c, &bs), &e) in self.counts.iter().zip(&self.shape).zip(&self.extent) {
                    start += rest % c.max(1) * bs * stride;
                    rest /= c.max(1);
                    stride *= e;
                }
                start
            }
        }
    }

    /// The runs `(block byte, chunk byte, bytes)` that place block `b` in the chunk's raw
    /// bytes.
    pub fn block_to_chunk(&self, b: u64) -> BlockRuns {
        match self.bytes {
            Some(_) => {
                let len = self.raw_len(b);
                BlockRuns::List(vec![(0, self.contiguous_start(b), len)].into_iter())
            }
            None => {
                let (origin, shape) = self.block_box(b);
                let zero = vec![0; shape.len()];
                BlockRuns::Grid(runs(
                    &shape,
                    self.elbyte,
                    Place {
                        dims: &shape,
                        at: &zero,
                    },
                    Place {
                        dims: &self.extent,
                        at: &origin,
                    },
                ))
            }
        }
    }

    /// The blocks a box of the chunk (element ranges in the chunk's own coordinates, each
    /// inside its extent) crosses, in block order. Version 1 blocks are byte runs: the
    /// blocks holding any byte of the box's runs.
    pub fn touched(&self, local: &[Range<u64>]) -> Box<dyn Iterator<Item = u64> + '_> {
        if local.iter().any(|r| r.start >= r.end) {
            return Box::new(std::iter::empty());
        }
        match self.bytes {
            Some(bb) => {
                let zero = vec![0; self.extent.len()];
                let extent: Vec<u64> = local.iter().map(|r| r.end - r.start).collect();
                let dst = Place {
                    dims: &extent,
                    at: &zero,
                };
                let mut blocks: Vec<u64> = self
                    .box_runs(local, dst)
                    .flat_map(|(s, _, len)| s / bb..(s + len - 1) / bb + 1)
                    .collect();
                blocks.dedup();
                Box::new(blocks.into_iter())
            }
            None => {
                let per: Vec<Range<u64>> = local
                    .iter()
                    .zip(&self.shape)
                    .map(|(r, &b)| r.start / b..(r.end - 1) / b + 1)
                    .collect();
                Box::new(Coords::new(per).map(move |c| {
                    c.iter()
                        .zip(&self.counts)
                        .rev()
                        .fold(0u64, |acc, (&i, &n)| acc * n + i)
                }))
            }
        }
    }

    /// The runs `(chunk byte, dst byte, bytes)` that copy the box `local` (the chunk's
    /// coordinates) out of the chunk's raw bytes into `dst`.
    fn box_runs(&self, local: &[Range<u64>], dst: Place<'_>) -> CopyRuns {
        let extent: Vec<u64> = local.iter().map(|r| r.end - r.start).collect();
        let at: Vec<u64> = local.iter().map(|r| r.start).collect();
        let src = Place {
            dims: &self.extent,
            at: &at,
        };
        runs(&extent, self.elbyte, src, dst)
    }

    /// The runs `(block byte, out byte, bytes)` that move block `b`'s part of a box of the
    /// chunk (`local`, the chunk's coordinates) into a column-major buffer of shape `out_dims`
    /// at `out_at` (the element where the chunk's part of the box starts in it).
    pub fn block_to_box(
        &self,
        b: u64,
        local: &[Range<u64>],
        out_dims: &[u64],
        out_at: &[u64],
    ) -> BlockRuns {
        match self.bytes {
            Some(bb) => {
                // Byte-run blocks: the box's runs in the chunk, cut at block `b`'s bounds.
                let start = b * bb;
                let end = start + self.raw_len(b);
                let dst = Place {
                    dims: out_dims,
                    at: out_at,
                };
                let pieces: Vec<(u64, u64, u64)> = self
                    .box_runs(local, dst)
                    .filter_map(|(s, d, len)| {
                        let lo = s.max(start);
                        let hi = (s + len).min(end);
                        (lo < hi).then(|| (lo - start, d + (lo - s), hi - lo))
                    })
                    .collect();
                BlockRuns::List(pieces.into_iter())
            }
            None => {
                let (origin, shape) = self.block_box(b);
                let lo: Vec<u64> = local
                    .iter()
                    .zip(&origin)
                    .map(|(r, &o)| r.start.max(o))
                    .collect();
                let extent: Vec<u64> = (0..lo.len())
                    .map(|k| local[k].end.min(origin[k] + shape[k]).saturating_sub(lo[k]))
                    .collect();
                let at_src: Vec<u64> = lo.iter().zip(&origin).map(|(l, o)| l - o).collect();
                let at_dst: Vec<u64> = lo
                    .iter()
                    .zip(local)
                    .zip(out_at)
                    .map(|((l, r), &a)| l - r.start + a)
                    .collect();
                BlockRuns::Grid(runs(
                    &extent,
                    self.elbyte,
                    Place {
                        dims: &shape,
                        at: &at_src,
                    },
                    Place {
                        dims: out_dims,
                        at: &at_dst,
                    },
                ))
            }
        }
    }

    /// The blocks that hold the first `prefix` raw bytes of the chunk (a full-extent chunk's
    /// used part, whose elements are those before some index along the last dim).
    pub fn prefix_blocks(&self, prefix: u64) -> u64 {
        if prefix >= self.raw_len {
            return self.count;
        }
        match self.bytes {
            Some(bb) => prefix.div_ceil(bb),
            None => {
                let n = self.extent.len();
                if n == 0 {
                    return self.count;
                }
                let plane: u64 = self.extent[..n - 1].iter().product::<u64>() * self.elbyte;
                let used = prefix.div_ceil(plane.max(1));
                let last_blocks = used.div_ceil(self.shape[n - 1]);
                let per: u64 = self.counts[..n - 1].iter().product();
                per * last_blocks
            }
        }
    }
}

/// The runs `(src byte, dst byte, bytes)` of one block ([`BlockGrid::block_to_chunk`],
/// [`BlockGrid::block_to_box`]).
#[derive(Clone, Debug)]
pub enum BlockRuns {
    /// An n-d block's runs, computed as they are yielded.
    Grid(CopyRuns),
    /// A byte-run block's few runs.
    List(std::vec::IntoIter<(u64, u64, u64)>),
}

impl Iterator for BlockRuns {
    type Item = (u64, u64, u64);
    fn next(&mut self) -> Option<(u64, u64, u64)> {
        match self {
            BlockRuns::Grid(r) => r.next(),
            BlockRuns::List(r) => r.next(),
        }
    }
}

/// Column-major iteration over the cartesian product of ranges (the first fastest).
struct Coords {
    ranges: Vec<Range<u64>>,
    at: Vec<u64>,
    done: bool,
}

impl Coords {
    fn new(ranges: Vec<Range<u64>>) -> Coords {
        let done = ranges.iter().any(|r| r.start >= r.end);
        Coords {
            at: ranges.iter().map(|r| r.start).collect(),
            ranges,
            done,
        }
    }
}

impl Iterator for Coords {
    type Item = Vec<u64>;
    fn next(&mut self) -> Option<Vec<u64>> {
        if self.done {
            return None;
        }
        let out = self.at.clone();
        let mut k = 0;
        loop {
            if k == self.at.len() {
                self.done = true;
                break;
            }
            self.at[k] += 1;
            if self.at[k] < self.ranges[k].end {
                break;
            }
            self.at[k] = self.ranges[k].start;
            k += 1;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where blocks say they are contiguous, each is one run at `contiguous_start`, right after
    /// the block before it; and every block's origin is `contiguous_start`, contiguous or not.
    #[test]
    fn contiguous_blocks_are_one_run_each_in_order() {
        let mut contiguous = 0;
        for e0 in 1..6u64 {
            for e1 in 1..5u64 {
                for e2 in 1..4u64 {
                    for (b0, b1, b2) in [
                        (e0, e1, 1),
                        (e0, 1, 1),
                        (e0, e1.div_ceil(2), 1),
                        (2, 1, 1),
                        (e0, e1, e2),
                        (e0, 2, 2),
                        (1, 1, 3),
                        (e0, e1, 2),
                    ] {
                        let (b0, b1, b2) = (b0.min(e0), b1.min(e1), b2.min(e2));
                        for elbyte in [1u64, 4] {
                            let g = BlockGrid::new(
                                &Blocks::Shape(vec![b0, b1, b2]),
                                &[e0, e1, e2],
                                elbyte,
                            )
                            .unwrap();
                            let mut next = 0;
                            for b in 0..g.count() {
                                let runs: Vec<_> = g.block_to_chunk(b).collect();
                                assert_eq!(runs[0].1, g.contiguous_start(b), "origin of {b}");
                                if g.is_contiguous() {
                                    let start = g.contiguous_start(b);
                                    let len: u64 = runs.iter().map(|r| r.2).sum();
                                    assert_eq!((start, len), (next, g.raw_len(b)));
                                    for w in runs.windows(2) {
                                        assert_eq!(w[0].1 + w[0].2, w[1].1, "one run");
                                    }
                                    next = start + len;
                                }
                            }
                            if g.is_contiguous() {
                                assert_eq!(next, g.chunk_raw_len());
                                contiguous += 1;
                            }
                        }
                    }
                }
            }
        }
        // The default shape of a slab: whole first dims, part of one, then 1.
        let g = BlockGrid::new(&Blocks::Shape(vec![512, 64, 1]), &[512, 512, 1], 4).unwrap();
        assert!(g.is_contiguous() && g.contiguous_start(3) == 3 * 512 * 64 * 4);
        let g = BlockGrid::new(&Blocks::Shape(vec![256, 128, 1]), &[256, 256, 4], 4).unwrap();
        assert!(g.is_contiguous());
        assert!(
            !BlockGrid::new(&Blocks::Shape(vec![256, 128, 2]), &[256, 256, 4], 4)
                .unwrap()
                .is_contiguous()
        );
        assert!(contiguous > 100);
    }

    /// Scatter every block of a chunk through `block_to_chunk` and compare with a naive
    /// placement computed element by element.
    #[test]
    fn blocks_tile_the_chunk_exactly_once() {
        for (extent, shape) in [
            (vec![5u64, 3, 4], vec![2u64, 3, 3]),
            (vec![7], vec![3]),
            (vec![4, 4], vec![4, 1]),
            (vec![1, 1, 1], vec![1, 1, 1]),
        ] {
            let g = BlockGrid::new(&Blocks::Shape(shape.clone()), &extent, 1).unwrap();
            let total: u64 = extent.iter().product();
            let mut seen = vec![0u32; total as usize];
            for b in 0..g.count() {
                let mut covered = 0;
                for (s, d, len) in g.block_to_chunk(b) {
                    assert!(s + len <= g.raw_len(b));
                    for k in 0..len {
                        seen[(d + k) as usize] += 1;
                    }
                    covered += len;
                }
                assert_eq!(covered, g.raw_len(b));
            }
            assert!(seen.iter().all(|&c| c == 1), "{extent:?} {shape:?}");
        }
    }

    #[test]
    fn a_box_crosses_only_the_blocks_it_touches() {
        let g = BlockGrid::new(&Blocks::Shape(vec![4, 4, 4]), &[16, 16, 16], 4).unwrap();
        assert_eq!(g.touched(&[0..16, 0..16, 5..6]).count(), 16); // a plane: 4 x 4 blocks
        assert_eq!(g.touched(&[3..4, 0..16, 0..16]).count(), 16);
        assert_eq!(g.touched(&[3..4, 9..10, 0..1]).collect::<Vec<_>>(), [8]);
    }

    #[test]
    fn byte_run_blocks_split_a_box_at_their_bounds() {
        let g = BlockGrid::new(&Blocks::Bytes(6), &[4, 3], 1).unwrap();
        assert_eq!(g.count(), 2);
        // Column 1 (bytes 4..8) crosses both blocks.
        assert_eq!(g.touched(&[0..4, 1..2]).collect::<Vec<_>>(), [0, 1]);
        let r0: Vec<_> = g.block_to_box(0, &[0..4, 1..2], &[4, 1], &[0, 0]).collect();
        let r1: Vec<_> = g.block_to_box(1, &[0..4, 1..2], &[4, 1], &[0, 0]).collect();
        assert_eq!(r0, [(4, 0, 2)]);
        assert_eq!(r1, [(0, 2, 2)]);
    }

    #[test]
    fn prefix_blocks_count_the_used_planes() {
        let g = BlockGrid::new(&Blocks::Shape(vec![2, 3]), &[2, 10], 1).unwrap();
        assert_eq!(g.prefix_blocks(2), 1); // one plane: the first block along the last dim
        assert_eq!(g.prefix_blocks(7), 2); // four planes
        assert_eq!(g.prefix_blocks(20), 4);
        let g = BlockGrid::new(&Blocks::Bytes(8), &[2, 10], 1).unwrap();
        assert_eq!(g.prefix_blocks(9), 2);
    }
}
