//! The signature of an element: the 64-bit fold of its layout-deciding steps by which later
//! elements are checked against the first one.

use super::plan::Ev;
use crate::eltype::ScalarType as Scalar;

/// The signature of an element: what [`Mode::Stream`] checks later elements by. It is folded
/// from the steps that decide the layout, as they are taken: the scalars, with consecutive
/// scalars of one type folded as one run; the sequence, tuple and struct boundaries; the
/// byte-run lengths; and, as one step, an array of plain scalars that a bulk path wrote whole.
/// Names (of structs and fields) are left out, as the replay's [`agrees`] leaves them out, and
/// so are field steps: a field holds exactly one value, whose own steps follow.
///
/// The first element's signature is folded the same way while it is recorded, so an element
/// that takes the same path (every element of one Rust type does) has the same signature. An
/// element of the same layout that arrives by another path (an untagged enum whose variants
/// hold `[f32; 3]` and `(f32, f32, f32)`) has another signature; it is then replayed step by
/// step against the first element's steps and accepted when it follows them exactly.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sig {
    hash: u64,
    /// The run of scalars being folded: its scalar code and length. With no run (`len` 0),
    /// `code` may keep a stale code; the next scalar of that code starts a run from 0.
    run_code: u64,
    run_len: u64,
}

/// The low byte of a step's code: what the step is (the length goes above it, so no two
/// distinct steps share a code for lengths below 2^56). Scalar runs use `1 + kind` (below 32).
mod tag {
    pub const BYTES: u64 = 32;
    pub const EMBEDDED: u64 = 33;
    pub const SEQ_START: u64 = 34;
    pub const TUPLE_START: u64 = 35;
    pub const SEQ_END: u64 = 36;
    pub const STRUCT_START: u64 = 37;
    pub const STRUCT_END: u64 = 38;
    /// An array of plain scalars written whole: `ARRAY + 1 + kind`.
    pub const ARRAY: u64 = 64;
}

impl Sig {
    pub(super) const SEED: Sig = Sig {
        hash: 0x243f_6a88_85a3_08d3,
        run_code: 0,
        run_len: 0,
    };

    /// Folds one code into the hash (FxHash's mix).
    #[inline(always)]
    pub(super) fn mix(&mut self, code: u64) {
        self.hash = (self.hash.rotate_left(5) ^ code).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    /// `n` more scalars of `kind`.
    #[inline(always)]
    pub(super) fn scalars(&mut self, kind: Scalar, n: u64) {
        let code = 1 + kind as u64;
        if code == self.run_code {
            self.run_len += n;
        } else {
            self.end_run();
            self.run_code = code;
            self.run_len = n;
        }
    }

    #[inline(always)]
    pub(super) fn end_run(&mut self) {
        if self.run_len != 0 {
            self.mix(self.run_code | self.run_len.wrapping_shl(8));
            self.run_len = 0;
        }
    }

    /// An array of `n` plain scalars of `kind`, written whole: one step.
    #[inline(always)]
    pub(super) fn array(&mut self, kind: Scalar, n: u64) {
        self.end_run();
        self.mix((tag::ARRAY + 1 + kind as u64) | n.wrapping_shl(8));
    }

    /// A step other than scalars. Sequence length hints are left out (an iterator may not
    /// give one); the lengths show in the runs and the number of steps.
    #[inline(always)]
    pub(super) fn step(&mut self, ev: Ev) {
        let code = match ev {
            Ev::Scalars(k, run) => return self.scalars(k, run),
            Ev::Field(_) => return,
            Ev::StructStart(_) => tag::STRUCT_START,
            Ev::StructEnd => tag::STRUCT_END,
            Ev::Bytes(n) => tag::BYTES | (n as u64).wrapping_shl(8),
            Ev::Embedded(n) => tag::EMBEDDED | (n as u64).wrapping_shl(8),
            Ev::SeqStart(_) => tag::SEQ_START,
            Ev::TupleStart(n) => tag::TUPLE_START | (n as u64).wrapping_shl(8),
            Ev::SeqEnd => tag::SEQ_END,
        };
        self.end_run();
        self.mix(code);
    }

    /// The signature of the element folded so far.
    #[inline(always)]
    pub(super) fn finish(mut self) -> u64 {
        self.end_run();
        self.hash
    }
}
