//! The chunk grid: which chunk holds which elements, and the byte runs that move a box of
//! elements between two column-major buffers.
//!
//! Dim `i` has `ceil(dims[i] / chunk[i])` chunks; chunks are numbered column-major over the
//! grid (the first dim fastest), so growing the last dim adds chunk numbers at the end. An edge
//! chunk holds only its in-bounds elements: its raw bytes are those elements, column-major over
//! its own (clipped) shape.
//!
//! ```
//! use rawarray_serde::codec::Grid;
//! let g = Grid::new(&[5, 4], &[2, 3], 4).unwrap();
//! assert_eq!(g.counts(), &[3, 2]);
//! assert_eq!(g.count(), 6);
//! assert_eq!(g.shape(5), [1, 1]);             // the corner: element [4, 3] alone
//! assert_eq!(g.raw_len(5), 4);
//! // Elements [1..3, 0..1] touch chunks 0 and 1.
//! assert_eq!(g.touched(&[1..3, 0..1]).collect::<Vec<_>>(), [0, 1]);
//! ```

use std::ops::Range;

use super::config::bad;
use crate::error::Result;

/// The chunk grid of an array (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    dims: Vec<u64>,
    chunk: Vec<u64>,
    counts: Vec<u64>,
    count: u64,
    elbyte: u64,
}

impl Grid {
    /// The grid of `chunk`-shaped chunks over `dims` elements of `elbyte` bytes. `dims` and
    /// `elbyte` must be a validated header's (their byte count fits a `u64`).
    pub fn new(dims: &[u64], chunk: &[u64], elbyte: u64) -> Result<Grid> {
        if chunk.len() != dims.len() {
            return Err(bad(
                "chunk shape",
                format!("{} dims", dims.len()),
                chunk.len(),
            ));
        }
        if let Some(i) = chunk.iter().position(|&c| c == 0) {
            return Err(bad(&format!("chunk shape, dim {i}"), "at least 1", 0));
        }
        crate::header::data_len(elbyte, dims)?;
        let counts: Vec<u64> = dims
            .iter()
            .zip(chunk)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect();
        // Each count is at most its dim, so the product fits where the dims' product does.
        let count = counts.iter().product();
        Ok(Grid {
            dims: dims.to_vec(),
            chunk: chunk.to_vec(),
            counts,
            count,
            elbyte,
        })
    }

    /// The array's dims.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// The chunk shape.
    pub fn chunk(&self) -> &[u64] {
        &self.chunk
    }

    /// Bytes per element.
    pub fn elbyte(&self) -> u64 {
        self.elbyte
    }

    /// Chunks per dim.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Number of chunks.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The grid coordinates of chunk `n`.
    pub fn coords(&self, n: u64) -> Vec<u64> {
        self.coords_iter(n).collect()
    }

    /// The element index of chunk `n`'s first element.
    pub fn origin(&self, n: u64) -> Vec<u64> {
        self.coords_iter(n)
            .zip(&self.chunk)
            .map(|(i, c)| i * c)
            .collect()
    }

    /// Chunk `n`'s grid coordinates, dim by dim, without allocating: the open of a section
    /// sizes every chunk, and three vectors per chunk were a fifth of its time.
    fn coords_iter(&self, n: u64) -> impl Iterator<Item = u64> + '_ {
        let mut rest = n;
        self.counts.iter().map(move |&c| {
            let i = rest % c;
            rest /= c;
            i
        })
    }

    /// Chunk `n`'s in-bounds extent, dim by dim, without allocating.
    fn shape_iter(&self, n: u64) -> impl Iterator<Item = u64> + '_ {
        self.coords_iter(n)
            .zip(self.chunk.iter().zip(&self.dims))
            .map(|(i, (&c, &d))| c.min(d - i * c))
    }

    /// Chunk `n`'s in-bounds shape (edge chunks are clipped to the array).
    pub fn shape(&self, n: u64) -> Vec<u64> {
        self.shape_iter(n).collect()
    }

    /// Raw bytes of chunk `n`: its in-bounds elements x elbyte.
    pub fn raw_len(&self, n: u64) -> u64 {
        self.shape_iter(n).product::<u64>() * self.elbyte
    }

    /// Raw bytes of chunk `n` stored at its full extent along the last dim (an entry with
    /// [`ENTRY_FULL`](super::ENTRY_FULL)): its in-bounds shape, but the chunk's whole extent
    /// along the last dim. Its first [`Grid::raw_len`] bytes are the chunk's in-bounds
    /// elements (the last dim is outermost). `None` past `u64` (a hostile chunk shape).
    ///
    /// ```
    /// use rawarray_serde::codec::Grid;
    /// let g = Grid::new(&[3, 10], &[3, 4], 8).unwrap();
    /// assert_eq!((g.raw_len(2), g.full_raw_len(2)), (3 * 2 * 8, Some(3 * 4 * 8)));
    /// assert_eq!(g.full_raw_len(0), Some(g.raw_len(0)));
    /// ```
    pub fn full_raw_len(&self, n: u64) -> Option<u64> {
        self.stored_extent_iter(n, true)
            .try_fold(self.elbyte, u64::checked_mul)
    }

    /// [`Grid::stored_extent`], dim by dim, without allocating.
    fn stored_extent_iter(&self, n: u64, full: bool) -> impl Iterator<Item = u64> + '_ {
        let last = self.chunk.len().saturating_sub(1);
        self.shape_iter(n)
            .zip(&self.chunk)
            .enumerate()
            .map(move |(k, (s, &c))| if full && k == last { c } else { s })
    }

    /// Whether chunk `n`'s stored extent ([`Grid::stored_extent`]) is `extent`, without
    /// allocating (the open compares every chunk's with the one before).
    pub(crate) fn stored_extent_is(&self, n: u64, full: bool, extent: &[u64]) -> bool {
        self.stored_extent_iter(n, full).eq(extent.iter().copied())
    }

    /// The extent chunk `n` is stored at: its clipped shape, or with `full` (an entry with
    /// [`ENTRY_FULL`](super::ENTRY_FULL)) the chunk's whole extent along the last dim.
    pub fn stored_extent(&self, n: u64, full: bool) -> Vec<u64> {
        self.stored_extent_iter(n, full).collect()
    }

    /// Whether chunk `n`'s raw bytes are one contiguous run of the array's section: the chunk
    /// covers every dim but the last whole (the default shape, and every record file's).
    pub fn is_contiguous(&self) -> bool {
        let n = self.dims.len();
        n == 0 || (0..n - 1).all(|i| self.chunk[i] >= self.dims[i])
    }

    /// The chunks a subset (one checked range per dim) intersects, in chunk number order.
    pub fn touched(&self, ranges: &[Range<u64>]) -> Touched {
        let per_dim: Vec<Range<u64>> = ranges
            .iter()
            .zip(&self.chunk)
            .map(|(r, &c)| {
                if r.start >= r.end {
                    0..0
                } else {
                    r.start / c..(r.end - 1) / c + 1
                }
            })
            .collect();
        let empty = per_dim.iter().any(Range::is_empty);
        Touched {
            at: per_dim.iter().map(|r| r.start).collect(),
            per_dim,
            counts: self.counts.clone(),
            done: empty,
        }
    }

    /// Checks that the block `ranges` (one checked range per dim) covers whole chunks: each
    /// range starts at a multiple of its chunk and ends at one or at the dim. What a writer of
    /// blocks in any order (an [`ArrayWriter`](crate::ArrayWriter) of a chunked file, a
    /// [`StoreArrayWriter`](crate::store::StoreArrayWriter)) asks of every block.
    pub(crate) fn check_aligned(&self, ranges: &[Range<u64>]) -> Result<()> {
        let on_grid = ranges
            .iter()
            .zip(self.chunk.iter().zip(&self.dims))
            .all(|(r, (&ch, &d))| r.start % ch == 0 && (r.end % ch == 0 || r.end == d));
        if on_grid {
            return Ok(());
        }
        Err(bad(
            &format!("block {}", crate::error::block_text(ranges)),
            format!(
                "a block aligned to the chunk grid (chunks {:?} over dims {:?}: each range starts at a multiple of its chunk and ends at one or at the dim)",
                self.chunk, self.dims
            ),
            "a misaligned block",
        ))
    }

    /// The raw bytes of chunk `n` (column-major over its in-bounds shape), cut from `bytes`,
    /// the column-major bytes of the aligned block `ranges` that holds it.
    pub(crate) fn chunk_of_block(
        &self,
        n: u64,
        ranges: &[Range<u64>],
        bytes: &[u8],
    ) -> Result<Vec<u8>> {
        let shape = self.shape(n);
        let extent: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
        let at: Vec<u64> = self
            .origin(n)
            .iter()
            .zip(ranges)
            .map(|(o, r)| o - r.start)
            .collect();
        let zero = vec![0; shape.len()];
        let mut raw = vec![0u8; crate::data::to_usize(self.raw_len(n))?];
        let src = Place {
            dims: &extent,
            at: &at,
        };
        let dst = Place {
            dims: &shape,
            at: &zero,
        };
        for (s, d, len) in runs(&shape, self.elbyte, src, dst) {
            let (s, d, len) = (s as usize, d as usize, len as usize);
            raw[d..d + len].copy_from_slice(&bytes[s..s + len]);
        }
        Ok(raw)
    }

    /// Number of chunks a subset intersects.
    pub fn touched_count(&self, ranges: &[Range<u64>]) -> u64 {
        ranges
            .iter()
            .zip(&self.chunk)
            .map(|(r, &c)| {
                if r.start >= r.end {
                    0
                } else {
                    (r.end - 1) / c + 1 - r.start / c
                }
            })
            .product()
    }
}

/// The chunk numbers a subset touches ([`Grid::touched`]).
#[derive(Clone, Debug)]
pub struct Touched {
    per_dim: Vec<Range<u64>>,
    counts: Vec<u64>,
    at: Vec<u64>,
    done: bool,
}

impl Iterator for Touched {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        if self.done {
            return None;
        }
        let n = self
            .at
            .iter()
            .zip(&self.counts)
            .rev()
            .fold(0u64, |acc, (&i, &c)| acc * c + i);
        self.done = true;
        for (k, r) in self.per_dim.iter().enumerate() {
            self.at[k] += 1;
            if self.at[k] < r.end {
                self.done = false;
                break;
            }
            self.at[k] = r.start;
        }
        Some(n)
    }
}

/// A box of `extent` elements at `at` in a column-major buffer of `dims`.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    /// The buffer's dims.
    pub dims: &'a [u64],
    /// The box's first element in it.
    pub at: &'a [u64],
}

/// The runs `(src byte, dst byte, bytes)` that copy a box of `extent` elements from one
/// column-major buffer to another, in increasing order of both offsets. Leading dims the box
/// covers whole in both buffers join into one run.
///
/// The runs are yielded one at a time ([`CopyRuns`]): a box thin along its leading dims has a run
/// per element, so a collected list would cost more memory than the bytes it moves.
pub fn runs(extent: &[u64], elbyte: u64, src: Place<'_>, dst: Place<'_>) -> CopyRuns {
    let n = extent.len();
    let strides = |dims: &[u64]| {
        let mut s = Vec::with_capacity(n);
        let mut acc = elbyte;
        for &d in dims {
            s.push(acc);
            acc = acc.saturating_mul(d);
        }
        s
    };
    // Dims [0, m) are whole in both: a run spans them and `extent[m]` steps of dim m.
    let mut m = 0;
    while m < n && extent[m] == src.dims[m] && extent[m] == dst.dims[m] {
        m += 1;
    }
    let total = if extent.contains(&0) {
        0
    } else {
        extent[(m + 1).min(n)..].iter().product()
    };
    CopyRuns {
        run: extent[..n.min(m + 1)].iter().product::<u64>() * elbyte,
        first: m + 1,
        src_strides: strides(src.dims),
        dst_strides: strides(dst.dims),
        src_at: src.at.to_vec(),
        dst_at: dst.at.to_vec(),
        extent: extent.to_vec(),
        idx: vec![0; n],
        total,
        left: total,
    }
}

/// The runs of [`runs`], in order: byte runs that copy a box between two column-major buffers.
#[derive(Clone, Debug)]
pub struct CopyRuns {
    run: u64,
    /// The first dim the runs step along (dims before it are inside one run).
    first: usize,
    src_strides: Vec<u64>,
    dst_strides: Vec<u64>,
    src_at: Vec<u64>,
    dst_at: Vec<u64>,
    extent: Vec<u64>,
    idx: Vec<u64>,
    total: u64,
    left: u64,
}

impl CopyRuns {
    fn offset(at: &[u64], idx: &[u64], strides: &[u64]) -> u64 {
        at.iter()
            .zip(idx)
            .zip(strides)
            .map(|((a, i), s)| (a + i) * s)
            .sum()
    }

    /// The source bytes from the first run's start to the last run's end (all of them,
    /// whatever was already yielded), or `None` for an empty box.
    pub fn src_span(&self) -> Option<Range<u64>> {
        if self.total == 0 {
            return None;
        }
        let zero = vec![0; self.extent.len()];
        let last: Vec<u64> = (0..self.extent.len())
            .map(|k| {
                if k < self.first {
                    0
                } else {
                    self.extent[k] - 1
                }
            })
            .collect();
        Some(
            CopyRuns::offset(&self.src_at, &zero, &self.src_strides)
                ..CopyRuns::offset(&self.src_at, &last, &self.src_strides) + self.run,
        )
    }
}

impl Iterator for CopyRuns {
    type Item = (u64, u64, u64);

    fn next(&mut self) -> Option<(u64, u64, u64)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let item = (
            CopyRuns::offset(&self.src_at, &self.idx, &self.src_strides),
            CopyRuns::offset(&self.dst_at, &self.idx, &self.dst_strides),
            self.run,
        );
        for k in self.first..self.extent.len() {
            self.idx[k] += 1;
            if self.idx[k] < self.extent[k] {
                break;
            }
            self.idx[k] = 0;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).ok();
        (left.unwrap_or(usize::MAX), left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Chunk geometry, computed dim by dim without vectors, against the definitions written
    // out by hand: a chunk's origin is its coordinates times the chunk shape, its shape the
    // chunk's clipped to the array, its stored extent the shape with the last dim whole.
    #[test]
    fn chunk_geometry_matches_its_definition() {
        for (dims, chunk) in [
            (vec![7u64, 5, 3], vec![3u64, 2, 5]),
            (vec![10], vec![4]),
            (vec![4, 4], vec![4, 4]),
            (vec![9, 1, 6, 2], vec![2, 1, 4, 3]),
        ] {
            let g = Grid::new(&dims, &chunk, 4).unwrap();
            for n in 0..g.count() {
                let mut rest = n;
                let coords: Vec<u64> = g
                    .counts()
                    .iter()
                    .map(|&c| {
                        let i = rest % c;
                        rest /= c;
                        i
                    })
                    .collect();
                let origin: Vec<u64> = coords.iter().zip(&chunk).map(|(i, c)| i * c).collect();
                let shape: Vec<u64> = (0..dims.len())
                    .map(|k| chunk[k].min(dims[k] - origin[k]))
                    .collect();
                let mut full = shape.clone();
                *full.last_mut().unwrap() = *chunk.last().unwrap();
                assert_eq!(g.coords(n), coords);
                assert_eq!(g.origin(n), origin);
                assert_eq!(g.shape(n), shape);
                assert_eq!(g.raw_len(n), shape.iter().product::<u64>() * 4);
                assert_eq!(g.full_raw_len(n), Some(full.iter().product::<u64>() * 4));
                assert_eq!(g.stored_extent(n, false), shape);
                assert_eq!(g.stored_extent(n, true), full);
                assert!(g.stored_extent_is(n, false, &shape) && g.stored_extent_is(n, true, &full));
                let mut other = shape.clone();
                other[0] += 1;
                assert!(!g.stored_extent_is(n, false, &other));
                assert!(!g.stored_extent_is(n, false, &shape[1..]));
            }
        }
    }

    #[test]
    fn touched_matches_brute_force() {
        let g = Grid::new(&[7, 5, 3], &[3, 2, 5], 2).unwrap();
        let ranges = [2..7, 1..4, 0..3];
        let brute: Vec<u64> = (0..g.count())
            .filter(|&n| {
                let (o, s) = (g.origin(n), g.shape(n));
                (0..3).all(|k| o[k] < ranges[k].end && ranges[k].start < o[k] + s[k])
            })
            .collect();
        assert_eq!(g.touched(&ranges).collect::<Vec<_>>(), brute);
        assert_eq!(g.touched_count(&ranges), brute.len() as u64);
    }

    #[test]
    fn runs_copy_a_box() {
        // A 2 x 2 box at [1, 1] of a 4 x 3 array (elbyte 1) into a 2 x 2 buffer.
        let r = runs(
            &[2, 2],
            1,
            Place {
                dims: &[4, 3],
                at: &[1, 1],
            },
            Place {
                dims: &[2, 2],
                at: &[0, 0],
            },
        );
        assert_eq!(r.src_span(), Some(5..11));
        assert_eq!(r.collect::<Vec<_>>(), [(5, 0, 2), (9, 2, 2)]);
        // Whole leading dims join.
        let r = runs(
            &[4, 2],
            1,
            Place {
                dims: &[4, 3],
                at: &[0, 1],
            },
            Place {
                dims: &[4, 2],
                at: &[0, 0],
            },
        );
        assert_eq!(r.collect::<Vec<_>>(), [(4, 0, 8)]);
        // A scalar is one run of one element.
        assert_eq!(
            runs(
                &[],
                8,
                Place { dims: &[], at: &[] },
                Place { dims: &[], at: &[] }
            )
            .collect::<Vec<_>>(),
            [(0, 0, 8)]
        );
    }

    #[test]
    fn runs_of_a_thin_box_are_yielded_not_collected() {
        // A chunk one element thick along dim 0 of [2, 2^62]: 2^62 one-byte runs, which a
        // collected list (24 bytes a run) could not even reserve.
        let mut got = Vec::new();
        let dims = [1, 1u64 << 62];
        let src = Place {
            dims: &dims,
            at: &[0, 0],
        };
        let dst = Place {
            dims: &[2, 1 << 62],
            at: &[1, 0],
        };
        for r in runs(&dims, 1, src, dst) {
            got.push(r);
            if got.len() == 3 {
                break;
            }
        }
        assert_eq!(got, [(0, 1, 1), (1, 3, 1), (2, 5, 1)]);
    }
}
