//! Blocks of an array as byte runs: which bytes of a data section an n-d subset occupies.
//!
//! A `.ra` data section is column-major with no chunking, so the block `ranges[0] x ranges[1] x
//! ...` of an array is a computable list of contiguous runs. The first dim varies fastest, so
//! the first range is contiguous; when it covers its whole dim, the next range joins it, and so
//! on: a block that covers whole leading dims is one run per step of the first partial dim after
//! them. The runs are never stored: [`SubsetPlan::runs`] walks them with an odometer, so a plan
//! costs `O(ndims)` memory whatever the block's size, and a hostile subset allocates nothing.

use std::ops::Range;

use crate::error::{ErrorKind, Result};

/// The byte runs of one n-d block of an array's data section, computed once.
///
/// Offsets are relative to the first byte of the data section. Adjacent runs are merged: a
/// block covering whole leading dims is one run per step of the dims after them, and the whole
/// array is one run.
///
/// ```
/// use rawarray_serde::SubsetPlan;
/// // f32 [4, 3, 2]: the plane [.., .., 1] is one run of 4 x 3 values.
/// let plane = SubsetPlan::new(&[4, 3, 2], 4, &[0..4, 0..3, 1..2]).unwrap();
/// assert_eq!(plane.dims(), &[4, 3, 1]);
/// assert_eq!(plane.runs().collect::<Vec<_>>(), [48..96]);
/// // The column [1..3, 2, ..]: one run of 2 values per step of the last dim.
/// let col = SubsetPlan::new(&[4, 3, 2], 4, &[1..3, 2..3, 0..2]).unwrap();
/// assert_eq!(col.runs().collect::<Vec<_>>(), [36..44, 84..92]);
/// assert_eq!((col.run_count(), col.run_len(), col.bytes()), (2, 8, 16));
/// // Errors name the dim, the range and the dim's length.
/// let err = SubsetPlan::new(&[4, 3, 2], 4, &[0..4, 0..5, 0..1]).unwrap_err();
/// assert_eq!(err.to_string(), "subset dim 1: range 0..5 is out of bounds for length 3");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubsetPlan {
    /// The array's dims.
    array: Vec<u64>,
    /// The ranges asked for, checked.
    ranges: Vec<Range<u64>>,
    /// Bytes per element.
    elbyte: u64,
    /// Index of the dim whose range ends a run: the ranges before it cover whole dims.
    split: usize,
    /// Bytes of one run.
    run_len: u64,
    /// Number of runs (0 for an empty block).
    run_count: u64,
}

impl SubsetPlan {
    /// The plan of `ranges` (one per dim, first varying fastest) in an array of `dims`
    /// elements of `elbyte` bytes each.
    ///
    /// Errors, naming the dim: a number of ranges other than the number of dims, a range that
    /// starts after it ends or ends past its dim. `dims` and `elbyte` must describe a data
    /// section whose byte count fits in a `u64` (every validated [`Header`](crate::Header)
    /// does); otherwise this is an error too.
    pub fn new(dims: &[u64], elbyte: u64, ranges: &[Range<u64>]) -> Result<SubsetPlan> {
        if ranges.len() != dims.len() {
            return Err(ErrorKind::SubsetRank {
                expected: dims.len(),
                found: ranges.len(),
            }
            .into());
        }
        for (dim, (r, &len)) in ranges.iter().zip(dims).enumerate() {
            if r.start > r.end || r.end > len {
                return Err(ErrorKind::SubsetOutOfBounds {
                    dim,
                    start: r.start,
                    end: r.end,
                    len,
                }
                .into());
            }
        }
        // Checked once here so that every offset below fits: each is below the section's size.
        crate::header::data_len(elbyte, dims)?;
        let empty = ranges.iter().any(|r| r.start == r.end);
        // The first dim whose range does not cover it whole ends the contiguous prefix.
        let split = ranges
            .iter()
            .zip(dims)
            .position(|(r, &d)| r.end - r.start != d)
            .unwrap_or(dims.len().saturating_sub(1));
        let (run_len, run_count) = if empty {
            (0, 0)
        } else {
            let run_elems: u64 = ranges
                .iter()
                .take(split + 1)
                .map(|r| r.end - r.start)
                .product();
            let count: u64 = ranges
                .iter()
                .skip(split + 1)
                .map(|r| r.end - r.start)
                .product();
            (run_elems * elbyte, count)
        };
        Ok(SubsetPlan {
            array: dims.to_vec(),
            ranges: ranges.to_vec(),
            elbyte,
            split,
            run_len,
            run_count,
        })
    }

    /// The block's dims: the length of each range.
    pub fn dims(&self) -> Vec<u64> {
        self.ranges.iter().map(|r| r.end - r.start).collect()
    }

    /// The ranges the plan was made for.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// The dims of the array the block is cut from.
    pub fn array_dims(&self) -> &[u64] {
        &self.array
    }

    /// Bytes per element.
    pub fn elbyte(&self) -> u64 {
        self.elbyte
    }

    /// Number of elements in the block.
    pub fn len(&self) -> u64 {
        self.bytes() / self.elbyte.max(1)
    }

    /// Whether the block has no elements.
    pub fn is_empty(&self) -> bool {
        self.run_count == 0
    }

    /// Bytes of each run (all runs have the same length).
    pub fn run_len(&self) -> u64 {
        self.run_len
    }

    /// Number of runs: the product of the ranges after the contiguous prefix.
    pub fn run_count(&self) -> u64 {
        self.run_count
    }

    /// Bytes of the block: what reading it reads.
    pub fn bytes(&self) -> u64 {
        // Both factors come from ranges within a section whose size fits in a u64.
        self.run_len * self.run_count
    }

    /// Whether the block is the whole array.
    pub fn is_whole(&self) -> bool {
        self.ranges
            .iter()
            .zip(&self.array)
            .all(|(r, &d)| r.start == 0 && r.end == d)
    }

    /// The runs, in file order: byte ranges relative to the start of the data section, each
    /// [`run_len`](SubsetPlan::run_len) long, each after the one before. Their concatenation is
    /// the block in column-major order.
    pub fn runs(&self) -> Runs<'_> {
        let n = self.array.len();
        // Strides in bytes: elbyte x the product of the dims before.
        let mut strides = Vec::with_capacity(n);
        let mut stride = self.elbyte;
        for &d in &self.array {
            strides.push(stride);
            stride = stride.saturating_mul(d);
        }
        // The first element's offset; an empty block has none (its starts may be at the ends
        // of their dims, whose offsets need not fit).
        let first = if self.run_count == 0 {
            0
        } else {
            self.ranges
                .iter()
                .zip(&strides)
                .map(|(r, s)| r.start * s)
                .sum()
        };
        Runs {
            plan: self,
            strides,
            index: vec![0; n],
            offset: first,
            left: self.run_count,
        }
    }
}

/// The runs of a [`SubsetPlan`], walked in file order without storing them.
#[derive(Clone, Debug)]
pub struct Runs<'a> {
    plan: &'a SubsetPlan,
    strides: Vec<u64>,
    /// Position of the next run in each dim after the split, relative to its range's start.
    index: Vec<u64>,
    /// Byte offset of the next run.
    offset: u64,
    left: u64,
}

impl Iterator for Runs<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let run = self.offset..self.offset + self.plan.run_len;
        if self.left > 0 {
            // The odometer: step the first dim after the split; carry into the next on wrap.
            // Every offset a run starts at is within the section, but the one past a dim's
            // range, taken back at once by the carry, need not fit: wrapping arithmetic gives
            // the same result either way.
            for d in self.plan.split + 1..self.index.len() {
                let len = self.plan.ranges[d].end - self.plan.ranges[d].start;
                self.index[d] += 1;
                self.offset = self.offset.wrapping_add(self.strides[d]);
                if self.index[d] < len {
                    break;
                }
                self.offset = self.offset.wrapping_sub(len.wrapping_mul(self.strides[d]));
                self.index[d] = 0;
            }
        }
        Some(run)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, usize::try_from(self.left).ok())
    }
}

#[cfg(test)]
// A block of a 1-D array is a slice of one range: what this lint takes for a typo.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn whole_array_is_one_run() {
        let p = SubsetPlan::new(&[3, 4, 5], 2, &[0..3, 0..4, 0..5]).unwrap();
        assert!(p.is_whole());
        assert_eq!(p.runs().collect::<Vec<_>>(), [0..120]);
    }

    #[test]
    fn scalar_is_one_run() {
        let p = SubsetPlan::new(&[], 8, &[]).unwrap();
        assert_eq!(p.runs().collect::<Vec<_>>(), [0..8]);
        assert_eq!(p.dims(), Vec::<u64>::new());
    }

    #[test]
    fn empty_ranges_have_no_runs() {
        let p = SubsetPlan::new(&[3, 4], 1, &[1..1, 0..4]).unwrap();
        assert_eq!(p.run_count(), 0);
        assert_eq!(p.runs().count(), 0);
        let p = SubsetPlan::new(&[3, 0], 1, &[0..3, 0..0]).unwrap();
        assert_eq!(p.runs().count(), 0);
    }

    #[test]
    fn runs_carry_across_dims() {
        // [2, 3, 2] u8, block [1..2, 1..3, 0..2]: runs at (1, 1, 0), (1, 2, 0), (1, 1, 1), (1, 2, 1).
        let p = SubsetPlan::new(&[2, 3, 2], 1, &[1..2, 1..3, 0..2]).unwrap();
        let starts: Vec<u64> = p.runs().map(|r| r.start).collect();
        assert_eq!(starts, [3, 5, 9, 11]);
    }

    #[test]
    fn bad_subsets_name_the_dim() {
        let e = SubsetPlan::new(&[3, 4], 1, &[0..3]).unwrap_err();
        assert_eq!(e.to_string(), "subset has 1 ranges; the array has 2 dims");
        #[allow(clippy::reversed_empty_ranges)]
        let e = SubsetPlan::new(&[3, 4], 1, &[0..3, 3..2]).unwrap_err();
        assert!(e.to_string().starts_with("subset dim 1: range 3..2"), "{e}");
        let e = SubsetPlan::new(&[3, 4], 1, &[0..u64::MAX, 0..1]).unwrap_err();
        assert!(e.to_string().contains("dim 0"), "{e}");
        assert!(SubsetPlan::new(&[u64::MAX, 4], 1, &[0..1, 0..1]).is_err());
    }

    #[test]
    fn the_largest_sections_walk_without_overflow() {
        // 2^63 bytes: the carry past the last run of a dim goes beyond u64::MAX / 2.
        let dims = [1u64 << 31, 1 << 31, 2];
        let p = SubsetPlan::new(&dims, 1, &[5..6, (1 << 31) - 2..1 << 31, 1..2]).unwrap();
        let starts: Vec<u64> = p.runs().map(|r| r.start).collect();
        let at = |x: u64, y: u64, z: u64| x + (y << 31) + (z << 62);
        assert_eq!(starts, [at(5, (1 << 31) - 2, 1), at(5, (1 << 31) - 1, 1)]);
        let empty = SubsetPlan::new(&dims, 1, &[1 << 31..1 << 31, 1 << 31..1 << 31, 2..2]).unwrap();
        assert_eq!(empty.runs().count(), 0);
    }
}
