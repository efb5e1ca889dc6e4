//! Serialize any serde value as a `.ra` file.
//!
//! The serializer streams. It records the events of the first element (the first item of the
//! outermost sequence, or the whole value when it is not a sequence), decides from them the
//! dims and the element type (see the README's mapping table), writes the header, and then
//! checks every later element against the first one while writing its bytes. A later element
//! of another shape (a ragged sequence, a `Vec` field of another length) is an error naming
//! its index or field.
//!
//! The check is cheap: each element folds its steps into a 64-bit signature (see [`Sig`]),
//! compared with the first element's signature and byte count once the element is complete.
//! Only an element whose signature or size differs is serialized a second time, step by step
//! against the first one's: it is written if it follows them exactly (the same layout, reached
//! by another path), and otherwise the error says precisely where it differs.
//!
//! Bytes go to the writer in chunks of about 64 KiB once the header is out. The header needs
//! the element count and type, so a top-level sequence that does not tell its length (an
//! iterator without an exact size), or a value that is not a sequence, is held whole until it
//! ends. [`append_in_place`] builds the file inside the caller's `Vec` instead, with nothing
//! staged.
//!
//! `num_complex::Complex<f32>` and `[f32; 2]` both serialize as a 2-tuple; serde's data model
//! cannot tell them apart. They differ in one way the serializer can see: `Complex` serializes
//! the tuple `(&re, &im)`, so its elements arrive as `&f32` (or `&f64`, `&f16`), while arrays
//! and tuples of floats hand over `f32` values. A 2-tuple whose elements are references to the
//! same float type is therefore written as one complex element (eltype 4). A user type that
//! serializes itself as a tuple of two float references is written as complex too.

use std::io::Write;

use half::f16;
use serde::ser::{self, Serialize};

use crate::array::EMBEDDED;
use crate::bulk;
use crate::eltype::{type_label, ElType, ScalarType as Scalar};
use crate::error::{Error, ErrorKind, Result};
use crate::header::{checked_product, Header};


/// Flush the pending bytes to the writer once they pass this size.
const FLUSH_AT: usize = 64 << 10;

/// The serializer's scalar steps are the rows of the element-type table; `bool`, `char`
/// and unit variant indices are stored as `u8`, `u32` and `u32`.
trait ScalarSteps {
    fn size(self) -> u64;
    fn complex_of(self) -> Option<Scalar>;
}

impl ScalarSteps for Scalar {
    fn size(self) -> u64 {
        self.elbyte()
    }

    /// The complex type whose halves are this float.
    fn complex_of(self) -> Option<Scalar> {
        Scalar::ALL
            .iter()
            .copied()
            .find(|c| c.eltype() == ElType::Complex && c.elbyte() == 2 * self.elbyte())
            .filter(|_| self.eltype() == ElType::Float)
    }
}

/// One step of a value's serialization; the first element's steps are the plan the others follow.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ev {
    /// `run` consecutive scalars of one type.
    Scalars(Scalar, u64),
    /// A string or byte buffer of this length.
    Bytes(usize),
    /// A whole `.ra` file of this length, as one element.
    Embedded(usize),
    /// A sequence (`Vec`, slice, ...) with its length hint.
    SeqStart(Option<usize>),
    /// A tuple or fixed array of this length.
    TupleStart(usize),
    SeqEnd,
    StructStart(&'static str),
    Field(&'static str),
    StructEnd,
}

/// Whether a step of a later element agrees with the plan's step.
fn agrees(plan: Ev, got: Ev) -> bool {
    match (plan, got) {
        (Ev::SeqStart(a), Ev::SeqStart(b)) => a.is_none() || b.is_none() || a == b,
        (Ev::StructStart(_), Ev::StructStart(_)) | (Ev::Field(_), Ev::Field(_)) => true,
        _ => plan == got,
    }
}

/// Where the serializer is.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Recording the first element's steps.
    Record,
    /// Folding later elements' steps into a signature.
    Stream,
    /// Replaying an element whose signature differed, step by step against the plan.
    Check,
}

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
struct Sig {
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
    const SEED: Sig = Sig {
        hash: 0x243f_6a88_85a3_08d3,
        run_code: 0,
        run_len: 0,
    };

    /// Folds one code into the hash (FxHash's mix).
    #[inline(always)]
    fn mix(&mut self, code: u64) {
        self.hash = (self.hash.rotate_left(5) ^ code).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    /// `n` more scalars of `kind`.
    #[inline(always)]
    fn scalars(&mut self, kind: Scalar, n: u64) {
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
    fn end_run(&mut self) {
        if self.run_len != 0 {
            self.mix(self.run_code | self.run_len.wrapping_shl(8));
            self.run_len = 0;
        }
    }

    /// An array of `n` plain scalars of `kind`, written whole: one step.
    #[inline(always)]
    fn array(&mut self, kind: Scalar, n: u64) {
        self.end_run();
        self.mix((tag::ARRAY + 1 + kind as u64) | n.wrapping_shl(8));
    }

    /// A step other than scalars. Sequence length hints are left out (an iterator may not
    /// give one); the lengths show in the runs and the number of steps.
    #[inline(always)]
    fn step(&mut self, ev: Ev) {
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
    fn finish(mut self) -> u64 {
        self.end_run();
        self.hash
    }
}

/// Appends `value` as a `.ra` file to `vec`, built in place: no staging buffer copied into it,
/// and one allocation once the sequence's length and its first element are known. However
/// serializing ends (an error, or a panic in a `Serialize` impl), `vec` keeps the bytes it
/// had: with the whole file after them, or alone.
pub(crate) fn append_in_place<T: ?Sized + Serialize>(vec: &mut Vec<u8>, value: &T) -> Result<()> {
    /// Puts the buffer back into the caller's `Vec` when dropped: cut back to the caller's
    /// bytes unless the file is complete.
    struct Guard<'a> {
        ser: Serializer<std::io::Sink>,
        home: &'a mut Vec<u8>,
        capacity: usize,
        complete: bool,
    }
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            let mut buf = std::mem::take(&mut self.ser.buf);
            if !self.complete {
                buf.truncate(self.ser.base);
                buf.shrink_to(self.capacity);
            }
            *self.home = buf;
        }
    }
    let mut guard = Guard {
        capacity: vec.capacity(),
        ser: Serializer::with_buffer(std::io::sink(), std::mem::take(vec), true),
        home: vec,
        complete: false,
    };
    let result = value
        .serialize(&mut guard.ser)
        .and_then(|()| guard.ser.write_late_header());
    guard.complete = result.is_ok();
    result
}

/// The outermost sequence, whose items are the elements.
#[derive(Debug)]
struct TopSeq {
    hint: Option<usize>,
    dims: Vec<u64>,
    eltype: ElType,
    elbyte: u64,
}

/// A serde `Serializer` that writes one `.ra` file to a `Write`.
///
/// Use [`to_writer`](crate::to_writer) and friends; or serialize into `&mut Serializer` and
/// call [`Serializer::finish`], which writes what is still buffered and returns the writer.
///
/// ```
/// use serde::Serialize;
/// let mut ser = rawarray_serde::Serializer::new(Vec::new());
/// vec![1u16, 2, 3].serialize(&mut ser).unwrap();
/// let bytes = ser.finish().unwrap();
/// assert_eq!(bytes.len(), 48 + 8 + 6);
/// ```
pub struct Serializer<W> {
    out: W,
    buf: Vec<u8>,
    mode: Mode,
    events: Vec<Ev>,
    pos: usize,
    sub: u64,
    items: u64,
    top: Option<TopSeq>,
    header_written: bool,
    /// Set while a half of a complex number is serialized: its bytes go out without a step.
    half: Option<Scalar>,
    /// The signature of the element being written, and the first element's.
    sig: Sig,
    plan_sig: u64,
    /// Bytes of one element.
    item_bytes: usize,
    /// How many times a replay in [`Mode::Check`] went through the whole plan.
    laps: u64,
    /// The file is built in `buf` itself, after its first `base` bytes, and never flushed
    /// ([`to_vec`](crate::to_vec), [`to_writer`](crate::to_writer) into a `Vec`): the header
    /// goes in front of what is buffered, and `out` is not used.
    in_place: bool,
    base: usize,
    /// Flush `buf` to `out` once it holds this many bytes (after the header is out).
    flush_at: usize,
}

impl<W: Write> Serializer<W> {
    /// A serializer writing to `out`.
    pub fn new(out: W) -> Serializer<W> {
        Serializer::with_buffer(out, Vec::with_capacity(FLUSH_AT + 4096), false)
    }

    fn with_buffer(out: W, buf: Vec<u8>, in_place: bool) -> Serializer<W> {
        Serializer {
            base: buf.len(),
            out,
            buf,
            mode: Mode::Record,
            events: Vec::new(),
            pos: 0,
            sub: 0,
            items: 0,
            top: None,
            header_written: false,
            half: None,
            sig: Sig::SEED,
            plan_sig: 0,
            item_bytes: 0,
            laps: 0,
            in_place,
            flush_at: if in_place { usize::MAX } else { FLUSH_AT },
        }
    }

    /// Writes the header (if the value was not a sequence, it is only known now) and every
    /// byte still buffered, flushes, and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.write_late_header()?;
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()?;
        Ok(self.out)
    }

    /// Writes the header now if it could not be written when the first element was complete
    /// (the value was not a sequence, or the sequence did not tell its length).
    fn write_late_header(&mut self) -> Result<()> {
        if !self.header_written {
            let header = match self.top.take() {
                Some(top) => {
                    let mut dims = top.dims;
                    dims.push(self.items);
                    header_for(top.eltype, top.elbyte, dims)?
                }
                None => {
                    if self.events.is_empty() {
                        return Err(Error::msg("nothing was serialized"));
                    }
                    let shape = classify(&self.events)?;
                    let (eltype, elbyte) = shape.leaf.eltype_elbyte()?;
                    header_for(eltype, elbyte, shape.dims)?
                }
            };
            // Nothing was flushed: the header was not out.
            check_described(Some(header.size), self.buf.len() - self.base)?;
            self.put_header(&header)?;
        }
        Ok(())
    }

    /// Writes the header: before everything buffered (in place, in front of it).
    fn put_header(&mut self, header: &Header) -> Result<()> {
        let bytes = header.encode();
        if self.in_place {
            self.buf.splice(self.base..self.base, bytes);
        } else {
            self.out.write_all(&bytes)?;
        }
        self.header_written = true;
        Ok(())
    }

    /// The top-level sequence's first item is complete: decide dims and element type, write
    /// the header if the item count is known, and follow the plan from now on.
    #[cold]
    #[inline(never)]
    fn first_item_done(&mut self) -> Result<()> {
        let shape = classify(&self.events)?;
        let (eltype, elbyte) = shape.leaf.eltype_elbyte()?;
        // The buffer holds element 0 (after the caller's bytes, in place) and nothing else.
        self.item_bytes = self.buf.len() - self.base;
        let described = checked_product(elbyte, &shape.dims);
        check_described(described, self.item_bytes)?;
        let top = self.top.as_mut().expect("inside the top-level sequence");
        top.dims = shape.dims;
        top.eltype = eltype;
        top.elbyte = elbyte;
        if let Some(n) = top.hint {
            let mut dims = top.dims.clone();
            dims.push(n as u64);
            let header = header_for(eltype, elbyte, dims)?;
            if self.in_place {
                // The file's size as the sequence tells it: one allocation for all of it. A
                // length that lies (a Serialize impl of the caller's) ends in an error naming
                // both counts; here it may only cost a reservation, skipped if it cannot be had.
                let rest = (n as u64)
                    .saturating_sub(1)
                    .saturating_mul(self.item_bytes as u64);
                let want = usize::try_from(rest)
                    .ok()
                    .and_then(|r| r.checked_add(header.encoded_len()));
                if let Some(want) = want {
                    let _ = self.buf.try_reserve(want);
                }
            }
            self.put_header(&header)?;
        }
        self.mode = Mode::Stream;
        self.plan_sig = std::mem::replace(&mut self.sig, Sig::SEED).finish();
        self.items = 1;
        self.pos = 0;
        self.sub = 0;
        self.flush_if_full()
    }

    #[inline(always)]
    fn flush_if_full(&mut self) -> Result<()> {
        if self.header_written && self.buf.len() >= self.flush_at {
            return self.flush();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn flush(&mut self) -> Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes a scalar's bytes and notes its step.
    #[inline]
    fn scalar(&mut self, kind: Scalar, bytes: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.mode == Mode::Stream && self.half.is_none() {
            self.sig.scalars(kind, 1);
            return Ok(());
        }
        if let Some(expected) = self.half {
            if expected != kind {
                return Err(Error::msg("complex number halves of different types"));
            }
            return Ok(());
        }
        self.note_scalar(kind)
    }

    #[inline]
    fn note_scalar(&mut self, kind: Scalar) -> Result<()> {
        match self.mode {
            Mode::Record => {
                match self.events.last_mut() {
                    Some(Ev::Scalars(k, run)) if *k == kind => *run += 1,
                    _ => self.events.push(Ev::Scalars(kind, 1)),
                }
                self.sig.scalars(kind, 1);
                Ok(())
            }
            Mode::Stream => {
                self.sig.scalars(kind, 1);
                Ok(())
            }
            Mode::Check => match self.planned() {
                Some(Ev::Scalars(k, run)) if k == kind => {
                    self.sub += 1;
                    if self.sub == run {
                        self.sub = 0;
                        self.advance()?;
                    }
                    Ok(())
                }
                _ => Err(self.mismatch(Ev::Scalars(kind, 1))),
            },
        }
    }

    /// Notes `n` scalars of `kind` written whole (by a bulk path: never in [`Mode::Check`]).
    #[inline(always)]
    fn note_run(&mut self, kind: Scalar, n: u64) {
        if self.mode == Mode::Stream {
            self.sig.scalars(kind, n);
            return;
        }
        self.record_run(kind, n);
    }

    #[inline(never)]
    fn record_run(&mut self, kind: Scalar, n: u64) {
        if n == 0 {
            return;
        }
        match self.mode {
            Mode::Record => {
                match self.events.last_mut() {
                    Some(Ev::Scalars(k, run)) if *k == kind => *run += n,
                    _ => self.events.push(Ev::Scalars(kind, n)),
                }
                self.sig.scalars(kind, n);
            }
            Mode::Stream => self.sig.scalars(kind, n),
            Mode::Check => unreachable!("bulk paths are not taken in Mode::Check"),
        }
    }

    /// Whether a bulk path may write the next value whole: not while an element that differed
    /// is replayed step by step, nor inside a complex number.
    #[inline(always)]
    fn bulk_ok(&self) -> bool {
        self.mode != Mode::Check && self.half.is_none()
    }

    /// Serializes a value inside an element: an array of plain scalars whole, anything else
    /// through its `Serialize` impl.
    #[inline(always)]
    fn value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if let Some(a) = bulk::plain_array(value) {
            if self.bulk_ok() {
                // The length as a constant of `T`, so the copy compiles to a few moves.
                self.buf
                    .extend_from_slice(&a.bytes[..std::mem::size_of_val(value)]);
                self.sig.array(a.kind, a.len as u64);
                if self.mode == Mode::Record {
                    self.record_array(a.kind, a.len);
                }
                return Ok(());
            }
        }
        value.serialize(self)
    }

    /// A slice, `Vec` or `VecDeque` of plain scalars, whole: the whole file's data when it is
    /// the value serialized, else a sequence inside an element.
    fn run(&mut self, run: bulk::Run<'_>) -> Result<()> {
        if self.top.is_none() && self.mode == Mode::Record && self.events.is_empty() {
            let (eltype, elbyte) = (run.kind.eltype(), run.kind.elbyte());
            let header = header_for(eltype, elbyte, vec![run.len as u64])?;
            if self.in_place {
                let data: usize = run.parts.iter().map(|p| p.len()).sum();
                let capacity = self.buf.capacity();
                let need = header.encoded_len() + data;
                self.buf.try_reserve(need).map_err(|e| {
                    Error::msg(format!("cannot allocate the {need} bytes of the file: {e}"))
                })?;
                // A new allocation's pages are not there yet; a reused buffer's likely are.
                let fresh = self.buf.capacity() != capacity;
                self.put_header(&header)?;
                for part in run.parts {
                    if fresh {
                        extend_faulting_ahead(&mut self.buf, part);
                    } else {
                        self.buf.extend_from_slice(part);
                    }
                }
            } else {
                self.put_header(&header)?;
                self.out.write_all(&self.buf)?;
                self.buf.clear();
                for part in run.parts {
                    self.out.write_all(part)?;
                }
            }
            self.top = Some(TopSeq {
                hint: Some(run.len),
                dims: Vec::new(),
                eltype,
                elbyte,
            });
            self.events.push(Ev::Scalars(run.kind, 1));
            self.items = run.len as u64;
            self.mode = Mode::Stream;
            return Ok(());
        }
        self.step(Ev::SeqStart(Some(run.len)))?;
        for part in run.parts {
            self.buf.extend_from_slice(part);
        }
        self.note_run(run.kind, run.len as u64);
        self.step(Ev::SeqEnd)
    }

    /// The steps of an array of plain scalars written whole, in the first element.
    #[inline(never)]
    fn record_array(&mut self, kind: Scalar, len: usize) {
        // Bulk arrays have 1 to 32 items.
        self.events.push(Ev::TupleStart(len));
        self.events.push(Ev::Scalars(kind, len as u64));
        self.events.push(Ev::SeqEnd);
    }

    /// Notes a structural step.
    #[inline(always)]
    fn step(&mut self, ev: Ev) -> Result<()> {
        if self.mode == Mode::Stream {
            self.sig.step(ev);
            return Ok(());
        }
        self.step_slow(ev)
    }

    /// A step while recording the first element or replaying one that differed.
    #[inline(never)]
    fn step_slow(&mut self, ev: Ev) -> Result<()> {
        match self.mode {
            Mode::Record => {
                self.events.push(ev);
                self.sig.step(ev);
                Ok(())
            }
            Mode::Stream => unreachable!("step takes Mode::Stream"),
            // Field steps are left out of the comparison as they are of the signature: a
            // field holds one value, whose own steps are compared.
            Mode::Check if matches!(ev, Ev::Field(_)) => Ok(()),
            Mode::Check => match self.planned() {
                Some(plan) if self.sub == 0 && agrees(plan, ev) => self.advance(),
                _ => Err(self.mismatch(ev)),
            },
        }
    }

    /// The plan's next step in [`Mode::Check`], past its field steps (which stay in the plan
    /// for the error messages: [`Serializer::mismatch`] names the field).
    fn planned(&mut self) -> Option<Ev> {
        if self.sub == 0 {
            while let Some(Ev::Field(_)) = self.events.get(self.pos) {
                self.pos += 1;
            }
        }
        self.events.get(self.pos).copied()
    }

    fn advance(&mut self) -> Result<()> {
        self.pos += 1;
        if self.pos == self.events.len() {
            // The plan is used up: the replayed element followed it once (or repeats it, which
            // `laps` tells).
            self.pos = 0;
            self.laps += 1;
        }
        Ok(())
    }

    /// An element of the top-level sequence is complete: check it against the first one.
    #[inline]
    fn item_done<T: ?Sized + Serialize>(&mut self, start: usize, value: &T) -> Result<()> {
        let sig = std::mem::replace(&mut self.sig, Sig::SEED).finish();
        if sig != self.plan_sig || self.buf.len() - start != self.item_bytes {
            self.diagnose(start, value)?;
        }
        self.items += 1;
        self.flush_if_full()
    }

    /// Serializes an element whose signature or size differs from the first one's again, step
    /// by step against the plan: `Ok` (its bytes written again) if it follows the plan exactly
    /// once after all (it took another path to the same layout), else an error saying where
    /// it differs.
    #[cold]
    #[inline(never)]
    fn diagnose<T: ?Sized + Serialize>(&mut self, start: usize, value: &T) -> Result<()> {
        let bytes = self.buf.len() - start;
        self.buf.truncate(start);
        self.mode = Mode::Check;
        self.pos = 0;
        self.sub = 0;
        self.laps = 0;
        let replay = value.serialize(&mut *self);
        self.mode = Mode::Stream;
        self.sig = Sig::SEED;
        replay?;
        let replayed = self.buf.len() - start;
        if self.laps == 1 && self.pos == 0 && self.sub == 0 && replayed == self.item_bytes {
            return Ok(());
        }
        Err(Error::msg(format!(
            "element [{}] has {bytes} bytes of another layout than element 0 ({} bytes)",
            self.items, self.item_bytes
        )))
    }

    /// The error for a step of a later element that does not follow the first element.
    #[cold]
    #[inline(never)]
    fn mismatch(&self, got: Ev) -> Error {
        let expected = self.events.get(self.pos).copied();
        let path = self.index_path();
        let field = self.events[..self.pos.min(self.events.len())]
            .iter()
            .rev()
            .find_map(|e| match e {
                Ev::Field(f) => Some(*f),
                _ => None,
            });
        let inner = self.events.iter().any(|e| matches!(e, Ev::StructStart(_)));
        let what = match (expected, got) {
            (Some(Ev::SeqStart(Some(a))), Ev::SeqStart(Some(b))) => {
                format!("length {b}, expected {a} (the length in element 0)")
            }
            (Some(Ev::SeqEnd), _) => "longer than in element 0".to_string(),
            (Some(_), Ev::SeqEnd) => {
                let (len, done) = self.current_seq_len();
                format!("length {done}, expected {len} (the length in element 0)")
            }
            (Some(Ev::Bytes(a)), Ev::Bytes(b)) | (Some(Ev::Embedded(a)), Ev::Embedded(b)) => {
                format!("length {b} bytes, expected {a} (the length in element 0)")
            }
            (e, g) => format!(
                "{} where element 0 has {}",
                describe(g),
                e.map_or("nothing".into(), describe)
            ),
        };
        let place = match field {
            Some(f) if inner => format!("element {path:?}, field `{f}`"),
            _ => format!("element {path:?}"),
        };
        Error::new(ErrorKind::Message(format!(
            "not rectangular: {place} has {what}"
        )))
    }

    /// The index of the current position: the top-level item, then the index in each open sequence.
    fn index_path(&self) -> Vec<u64> {
        let mut path = vec![self.items];
        let mut counters: Vec<u64> = Vec::new();
        for ev in &self.events[..self.pos.min(self.events.len())] {
            match ev {
                Ev::SeqStart(_) | Ev::TupleStart(_) => counters.push(0),
                Ev::SeqEnd => {
                    counters.pop();
                    if let Some(c) = counters.last_mut() {
                        *c += 1;
                    }
                }
                Ev::Scalars(_, run) => {
                    if let Some(c) = counters.last_mut() {
                        *c += run;
                    }
                }
                Ev::Bytes(_) | Ev::Embedded(_) | Ev::StructEnd => {
                    if let Some(c) = counters.last_mut() {
                        *c += 1;
                    }
                }
                _ => {}
            }
        }
        if let Some(c) = counters.last_mut() {
            *c += self.sub;
        }
        path.extend(counters);
        path
    }

    /// The plan's length of the innermost open sequence, and how many items the current one had.
    fn current_seq_len(&self) -> (u64, u64) {
        let done = *self.index_path().last().unwrap_or(&0);
        let mut depth = 0i64;
        let mut start = 0;
        for (i, ev) in self.events[..self.pos].iter().enumerate().rev() {
            match ev {
                Ev::SeqEnd => depth += 1,
                Ev::SeqStart(_) | Ev::TupleStart(_) if depth == 0 => {
                    start = i;
                    break;
                }
                Ev::SeqStart(_) | Ev::TupleStart(_) => depth -= 1,
                _ => {}
            }
        }
        let len = children(&self.events[start..node_end(&self.events, start)]).len() as u64;
        (len, done)
    }
}

/// Appends `bytes` to `buf`, whose capacity already holds them, a 64 KiB piece at a time, each
/// piece's pages written once just before the piece is copied. Into a new allocation (pages
/// not yet touched), one `memcpy` of 256 MiB to 56 bytes past a page offset of its source (a
/// 1-D header) ran at 1.4 GB/s on this project's machine against 1.8 GB/s this way: the page
/// faults are taken here rather than inside the copy loop. Into pages already there, one
/// `memcpy` is faster (glibc's non-temporal stores for large copies: 11.6 against 8.3 GB/s),
/// so this is for new allocations only (a caller's `Vec::with_capacity` whose pages were never
/// touched takes the plain copy). Pages are taken as 4 KiB; larger pages get a few more stores.
fn extend_faulting_ahead(buf: &mut Vec<u8>, bytes: &[u8]) {
    const PIECE: usize = 64 << 10;
    const PAGE: usize = 4096;
    if bytes.len() < 4 * PIECE {
        buf.extend_from_slice(bytes);
        return;
    }
    buf.reserve(bytes.len());
    for piece in bytes.chunks(PIECE) {
        let spare = &mut buf.spare_capacity_mut()[..piece.len()];
        let first = (PAGE - spare.as_ptr() as usize % PAGE) % PAGE;
        for byte in spare.iter_mut().skip(first).step_by(PAGE) {
            byte.write(0);
        }
        // The stores are the point: kept although the copy overwrites them.
        std::hint::black_box(&*spare);
        buf.extend_from_slice(piece);
    }
}

fn describe(ev: Ev) -> String {
    match ev {
        Ev::Scalars(k, _) => {
            let (t, b) = (k.eltype(), k.elbyte());
            format!("a {} value", type_label(t, b))
        }
        Ev::Bytes(n) => format!("{n} bytes"),
        Ev::Embedded(n) => format!("an embedded .ra file of {n} bytes"),
        Ev::SeqStart(_) | Ev::TupleStart(_) => "a sequence".into(),
        Ev::SeqEnd => "the end of a sequence".into(),
        Ev::StructStart(n) => format!("a struct {n}"),
        Ev::Field(f) => format!("field `{f}`"),
        Ev::StructEnd => "the end of a struct".into(),
    }
}

/// Refuses to write a header that does not describe exactly the bytes written: a
/// `Serialize` impl that breaks serde's contract (a tuple that gives another number of items
/// than it said) must not make a file whose readers see its data shifted.
fn check_described(described: Option<u64>, written: usize) -> Result<()> {
    if described != Some(written as u64) {
        return Err(Error::msg(format!(
            "the layout describes {} bytes but {written} were written (does a Serialize impl give \
             another number of items than it said?)",
            described.map_or("more than 2^64".to_string(), |n| n.to_string())
        )));
    }
    Ok(())
}

fn header_for(eltype: ElType, elbyte: u64, dims: Vec<u64>) -> Result<Header> {
    Header::new(eltype, elbyte, dims)
}

/// What one element is, as far as the header is concerned.
#[derive(Debug)]
enum Leaf {
    Scalar(Scalar),
    /// A struct, heterogeneous tuple or embedded file of this many bytes.
    Composite(u64),
    /// No element was seen (an empty sequence).
    Unknown,
}

impl Leaf {
    fn eltype_elbyte(&self) -> Result<(ElType, u64)> {
        match self {
            Leaf::Scalar(k) => Ok((k.eltype(), k.elbyte())),
            Leaf::Composite(0) => Err(Error::msg("a record of 0 bytes cannot be an element")),
            Leaf::Composite(n) => Ok((ElType::User, *n)),
            // Documented default: an empty sequence is an empty uint8 array.
            Leaf::Unknown => Ok((ElType::Uint, 1)),
        }
    }
}

struct Shape {
    /// Dims inside the element, first varying fastest.
    dims: Vec<u64>,
    leaf: Leaf,
}

/// Index just past the node that starts at `i`.
fn node_end(evs: &[Ev], i: usize) -> usize {
    match evs[i] {
        Ev::SeqStart(_) | Ev::TupleStart(_) | Ev::StructStart(_) => {
            let mut depth = 0usize;
            for (j, ev) in evs.iter().enumerate().skip(i) {
                match ev {
                    Ev::SeqStart(_) | Ev::TupleStart(_) | Ev::StructStart(_) => depth += 1,
                    Ev::SeqEnd | Ev::StructEnd => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
            }
            evs.len()
        }
        _ => i + 1,
    }
}

/// The children of a sequence node, a run of `n` scalars counting as `n` children.
fn children(node: &[Ev]) -> Vec<Child<'_>> {
    let mut out = Vec::new();
    let mut i = 1;
    while i + 1 < node.len() {
        match node[i] {
            Ev::Scalars(k, run) => {
                out.extend((0..run).map(|_| Child::Scalar(k)));
                i += 1;
            }
            _ => {
                let end = node_end(node, i);
                out.push(Child::Node(&node[i..end]));
                i = end;
            }
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Child<'a> {
    Scalar(Scalar),
    Node(&'a [Ev]),
}

impl Child<'_> {
    fn slice(&self) -> Vec<Ev> {
        match self {
            Child::Scalar(k) => vec![Ev::Scalars(*k, 1)],
            Child::Node(n) => n.to_vec(),
        }
    }
}

fn byte_size(evs: &[Ev]) -> u64 {
    evs.iter()
        .map(|e| match e {
            Ev::Scalars(k, run) => k.size() * run,
            Ev::Bytes(n) | Ev::Embedded(n) => *n as u64,
            _ => 0,
        })
        .sum()
}

/// Decides the dims and element type of one recorded element.
fn classify(evs: &[Ev]) -> Result<Shape> {
    match evs {
        [Ev::Scalars(k, 1)] => Ok(Shape {
            dims: vec![],
            leaf: Leaf::Scalar(*k),
        }),
        [Ev::Bytes(n)] => Ok(Shape {
            dims: vec![*n as u64],
            leaf: if *n == 0 {
                Leaf::Unknown
            } else {
                Leaf::Scalar(Scalar::U8)
            },
        }),
        [Ev::Embedded(n)] => Ok(Shape {
            dims: vec![],
            leaf: Leaf::Composite(*n as u64),
        }),
        [Ev::StructStart(_), ..] => Ok(Shape {
            dims: vec![],
            leaf: Leaf::Composite(byte_size(evs)),
        }),
        [start @ (Ev::SeqStart(_) | Ev::TupleStart(_)), ..] => {
            let kids = children(evs);
            let Some(first) = kids.first() else {
                return Ok(Shape {
                    dims: vec![0],
                    leaf: Leaf::Unknown,
                });
            };
            if let Some(j) = kids.iter().position(|c| c != first) {
                if matches!(start, Ev::TupleStart(_)) {
                    // A heterogeneous tuple is a record.
                    return Ok(Shape {
                        dims: vec![],
                        leaf: Leaf::Composite(byte_size(evs)),
                    });
                }
                return Err(differing_child(first, &kids[j], j));
            }
            let inner = classify(&first.slice())?;
            let mut dims = inner.dims;
            dims.push(kids.len() as u64);
            Ok(Shape {
                dims,
                leaf: inner.leaf,
            })
        }
        _ => Err(Error::msg(format!("cannot map {evs:?} to an array"))),
    }
}

/// The error for a sequence inside the first element whose items differ.
fn differing_child(first: &Child<'_>, other: &Child<'_>, j: usize) -> Error {
    let len = |c: &Child<'_>| match c {
        Child::Node(n @ [Ev::SeqStart(_) | Ev::TupleStart(_), ..]) => Some(children(n).len()),
        Child::Node([Ev::Bytes(n)]) => Some(*n),
        _ => None,
    };
    match (len(first), len(other)) {
        (Some(a), Some(b)) if a != b => Error::msg(format!(
            "not rectangular: element [0, {j}] has length {b}, expected {a} (the length of [0, 0])"
        )),
        _ => Error::msg(format!(
            "mixed element types: element [0, {j}] is not of the type of element [0, 0]"
        )),
    }
}

/// The float type whose reference `T` is, if it is one: the sign of a `Complex` half.
fn float_ref<T: ?Sized>() -> Option<Scalar> {
    let id = typeid::of::<T>();
    if id == typeid::of::<&f32>() {
        Some(Scalar::F32)
    } else if id == typeid::of::<&f64>() {
        Some(Scalar::F64)
    } else if id == typeid::of::<&f16>() {
        Some(Scalar::F16)
    } else {
        None
    }
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Message(format!(
        "{what} cannot be stored in .ra: every element must have the same fixed size"
    )))
}

macro_rules! scalars {
    ($($method:ident($t:ty) => $kind:ident),* $(,)?) => {$(
        #[inline]
        fn $method(self, v: $t) -> Result<()> {
            self.scalar(Scalar::$kind, &v.to_le_bytes())
        }
    )*};
}

impl<'a, W: Write> ser::Serializer for &'a mut Serializer<W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, W>;
    type SerializeTuple = Compound<'a, W>;
    type SerializeTupleStruct = Compound<'a, W>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = Compound<'a, W>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    scalars! {
        serialize_i8(i8) => I8, serialize_i16(i16) => I16, serialize_i32(i32) => I32,
        serialize_i64(i64) => I64, serialize_i128(i128) => I128,
        serialize_u8(u8) => U8, serialize_u16(u16) => U16, serialize_u32(u32) => U32,
        serialize_u64(u64) => U64, serialize_u128(u128) => U128,
        serialize_f32(f32) => F32, serialize_f64(f64) => F64,
    }

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.scalar(Scalar::U8, &[u8::from(v)])
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.scalar(Scalar::U32, &u32::from(v).to_le_bytes())
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        self.serialize_bytes(v.as_bytes())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(v);
        self.step(Ev::Bytes(v.len()))
    }

    fn serialize_none(self) -> Result<()> {
        Err(unsupported("Option (None)"))
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<()> {
        Err(unsupported("Option (Some)"))
    }

    fn serialize_unit(self) -> Result<()> {
        Err(unsupported("unit `()`"))
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<()> {
        Err(unsupported(format_args!("unit struct {name}")))
    }

    fn serialize_unit_variant(self, _: &'static str, index: u32, _: &'static str) -> Result<()> {
        self.scalar(Scalar::U32, &index.to_le_bytes())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        match name {
            // half's f16 and bf16 serialize as newtypes holding their bits.
            "f16" | "bf16" => {
                let kind = if name == "f16" {
                    Scalar::F16
                } else {
                    Scalar::BF16
                };
                let bits = value.serialize(BitsCapture)?;
                let bytes = bits.to_le_bytes();
                self.scalar(kind, &bytes)
            }
            EMBEDDED => {
                let start = self.buf.len();
                value.serialize(BytesCapture(&mut self.buf))?;
                let len = self.buf.len() - start;
                self.step(Ev::Embedded(len))
            }
            _ => value.serialize(self),
        }
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(unsupported(format_args!(
            "enum variant with data {name}::{variant}"
        )))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a, W>> {
        if self.top.is_none() && self.mode == Mode::Record && self.events.is_empty() {
            self.top = Some(TopSeq {
                hint: len,
                dims: Vec::new(),
                eltype: ElType::Uint,
                elbyte: 1,
            });
            return Ok(Compound::top(self));
        }
        self.step(Ev::SeqStart(len))?;
        Ok(Compound::seq(self))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, W>> {
        Ok(Compound::tuple(self, len))
    }

    fn serialize_tuple_struct(self, name: &'static str, _: usize) -> Result<Compound<'a, W>> {
        self.step(Ev::StructStart(name))?;
        Ok(Compound::record(self))
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(unsupported(format_args!(
            "enum variant with data {name}::{variant}"
        )))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(unsupported("a map"))
    }

    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound<'a, W>> {
        self.step(Ev::StructStart(name))?;
        Ok(Compound::record(self))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(unsupported(format_args!(
            "enum variant with data {name}::{variant}"
        )))
    }

    fn collect_seq<I>(self, iter: I) -> Result<()>
    where
        I: IntoIterator,
        I::Item: Serialize,
    {
        if let Some(run) = bulk::plain_run(&iter) {
            if self.bulk_ok() {
                return self.run(run);
            }
        }
        let iter = iter.into_iter();
        let len = match iter.size_hint() {
            (lo, Some(hi)) if lo == hi => Some(lo),
            _ => None,
        };
        let mut seq = self.serialize_seq(len)?;
        for item in iter {
            ser::SerializeSeq::serialize_element(&mut seq, &item)?;
        }
        ser::SerializeSeq::end(seq)
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// What a compound value is.
enum Kind {
    /// The outermost sequence: its items are the elements.
    Top,
    Seq,
    /// A tuple or fixed array; its start step waits for the first element, which tells
    /// whether it is a complex number.
    Tuple {
        len: usize,
        index: usize,
        complex: Option<Scalar>,
    },
    Record,
}

/// The state of a sequence, tuple or struct being serialized.
#[doc(hidden)]
pub struct Compound<'a, W> {
    ser: &'a mut Serializer<W>,
    kind: Kind,
}

impl<'a, W: Write> Compound<'a, W> {
    fn top(ser: &'a mut Serializer<W>) -> Self {
        Compound {
            ser,
            kind: Kind::Top,
        }
    }

    fn seq(ser: &'a mut Serializer<W>) -> Self {
        Compound {
            ser,
            kind: Kind::Seq,
        }
    }

    fn tuple(ser: &'a mut Serializer<W>, len: usize) -> Self {
        Compound {
            ser,
            kind: Kind::Tuple {
                len,
                index: 0,
                complex: None,
            },
        }
    }

    fn record(ser: &'a mut Serializer<W>) -> Self {
        Compound {
            ser,
            kind: Kind::Record,
        }
    }

    #[inline]
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        match &mut self.kind {
            Kind::Top => {
                let start = self.ser.buf.len();
                self.ser.value(value)?;
                if self.ser.mode == Mode::Record {
                    self.ser.first_item_done()
                } else {
                    self.ser.item_done(start, value)
                }
            }
            Kind::Seq | Kind::Record => self.ser.value(value),
            Kind::Tuple {
                len,
                index,
                complex,
            } => {
                let i = *index;
                *index += 1;
                if *len == 2 && i < 2 {
                    if let Some(half) = float_ref::<T>() {
                        if i == 0 || *complex == Some(half) {
                            *complex = Some(half);
                            self.ser.half = Some(half);
                            let r = value.serialize(&mut *self.ser);
                            self.ser.half = None;
                            return r;
                        }
                    }
                }
                if let Some(half) = complex.take() {
                    // The items so far looked like the halves of a complex number but this one
                    // is not one (another type, or a third item): the tuple is an ordinary one,
                    // and the items already written are noted now.
                    self.ser.step(Ev::TupleStart(*len))?;
                    for _ in 0..i {
                        self.ser.note_scalar(half)?;
                    }
                } else if i == 0 {
                    self.ser.step(Ev::TupleStart(*len))?;
                }
                self.ser.value(value)
            }
        }
    }

    #[inline]
    fn end_compound(self) -> Result<()> {
        match self.kind {
            Kind::Top => {
                let ser = self.ser;
                let top = ser.top.as_ref().expect("top-level sequence");
                if let Some(n) = top.hint {
                    let got = if ser.mode == Mode::Record {
                        0
                    } else {
                        ser.items
                    };
                    if got != n as u64 {
                        return Err(Error::msg(format!(
                            "the sequence said it had {n} items but gave {got}"
                        )));
                    }
                }
                if ser.mode == Mode::Record {
                    // No item at all: an empty array of the documented default type.
                    ser.items = 0;
                }
                Ok(())
            }
            Kind::Seq => self.ser.step(Ev::SeqEnd),
            Kind::Tuple {
                len,
                index,
                complex,
            } => match complex {
                Some(half) if index == 2 => {
                    let c = half.complex_of().expect("float half");
                    self.ser.note_scalar(c)
                }
                // One float reference alone: an ordinary tuple of one item after all.
                Some(half) => {
                    self.ser.step(Ev::TupleStart(len))?;
                    self.ser.note_scalar(half)?;
                    self.ser.step(Ev::SeqEnd)
                }
                None => {
                    if index == 0 {
                        self.ser.step(Ev::TupleStart(len))?;
                    }
                    self.ser.step(Ev::SeqEnd)
                }
            },
            Kind::Record => self.ser.step(Ev::StructEnd),
        }
    }
}

impl<W: Write> ser::SerializeSeq for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    #[inline]
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.end_compound()
    }
}

impl<W: Write> ser::SerializeTuple for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    #[inline]
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.end_compound()
    }
}

impl<W: Write> ser::SerializeTupleStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.end_compound()
    }
}

impl<W: Write> ser::SerializeStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    #[inline]
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.ser.step(Ev::Field(key))?;
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.end_compound()
    }
}

/// Takes the `u16` bits out of half's `f16`/`bf16` newtypes.
struct BitsCapture;

/// Appends the bytes of an embedded `.ra` file.
struct BytesCapture<'a>(&'a mut Vec<u8>);

macro_rules! refuse {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<Self::Ok> {
            Err(Error::msg(concat!("internal: unexpected ", stringify!($method))))
        }
    )*};
}

macro_rules! capture_impl {
    ($name:ty, $ok:ty, $($keep:tt)*) => {
        impl ser::Serializer for $name {
            type Ok = $ok;
            type Error = Error;
            type SerializeSeq = ser::Impossible<$ok, Error>;
            type SerializeTuple = ser::Impossible<$ok, Error>;
            type SerializeTupleStruct = ser::Impossible<$ok, Error>;
            type SerializeTupleVariant = ser::Impossible<$ok, Error>;
            type SerializeMap = ser::Impossible<$ok, Error>;
            type SerializeStruct = ser::Impossible<$ok, Error>;
            type SerializeStructVariant = ser::Impossible<$ok, Error>;
            $($keep)*
            refuse! {
                serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
                serialize_i64(i64), serialize_u8(u8), serialize_u32(u32), serialize_u64(u64),
                serialize_f32(f32), serialize_f64(f64), serialize_char(char), serialize_str(&str),
                serialize_none(), serialize_unit(), serialize_unit_struct(&'static str),
                serialize_unit_variant(&'static str, u32, &'static str),
            }
            fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<$ok> {
                Err(Error::msg("internal: unexpected Some"))
            }
            fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<$ok> {
                Err(Error::msg("internal: unexpected newtype"))
            }
            fn serialize_newtype_variant<T: ?Sized + Serialize>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<$ok> {
                Err(Error::msg("internal: unexpected variant"))
            }
            fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> { Err(Error::msg("internal: unexpected seq")) }
            fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> { Err(Error::msg("internal: unexpected tuple")) }
            fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct> { Err(Error::msg("internal: unexpected tuple struct")) }
            fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant> { Err(Error::msg("internal: unexpected variant")) }
            fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> { Err(Error::msg("internal: unexpected map")) }
            fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> { Err(Error::msg("internal: unexpected struct")) }
            fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant> { Err(Error::msg("internal: unexpected variant")) }
        }
    };
}

capture_impl! {
    BitsCapture, u16,
    fn serialize_u16(self, v: u16) -> Result<u16> { Ok(v) }
    fn serialize_bytes(self, _: &[u8]) -> Result<u16> { Err(Error::msg("internal: unexpected bytes")) }
}

capture_impl! {
    BytesCapture<'_>, (),
    fn serialize_u16(self, _: u16) -> Result<()> { Err(Error::msg("internal: unexpected u16")) }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> { self.0.extend_from_slice(v); Ok(()) }
}
