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
//! Bytes go to the writer in chunks of about 256 KiB once the header is out. The header needs
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
use crate::eltype::{ElType, ScalarType as Scalar};
use crate::error::{Error, ErrorKind, Result};
use crate::header::checked_product;

mod capture;
mod check;
mod output;
mod plan;
mod signature;

pub(crate) use output::append_in_place;

use capture::{BitsCapture, BytesCapture};
use check::{check_described, header_for};
use output::extend_faulting_ahead;
use output::Output;
use plan::Plan;
use plan::{agrees, classify, Ev, ScalarSteps};
use signature::Sig;
/// Flush the pending bytes to the writer once they pass this size. Each flush is a `write`
/// call (a system call through a `BufWriter<File>`, whose buffer a large write bypasses):
/// 256 KiB chunks made records through a `BufWriter<File>` measurably faster than 64 KiB
/// ones, and the buffer still stays far below the memory bound `to_writer` promises.
const FLUSH_AT: usize = 256 << 10;

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
    /// Where the bytes go, and when.
    out: Output<W>,
    /// The first element's steps, and where a later element is in them.
    plan: Plan,
    /// What is being done with the steps: recorded, folded or replayed.
    mode: Mode,
    /// The signature of the element being written (compared with [`Plan::sig`]).
    sig: Sig,
    /// Elements of the top-level sequence done so far.
    items: u64,
    /// The top-level sequence, once one started.
    top: Option<TopSeq>,
    /// Set while a half of a complex number is serialized: its bytes go out without a step.
    half: Option<Scalar>,
    /// `mode` is [`Mode::Stream`] and `half` is `None`: the hot path, where a scalar only folds
    /// into the signature and an array of plain scalars is copied whole. One flag tested per
    /// field instead of two or three; kept by [`Serializer::set_mode`] and
    /// [`Serializer::set_half`], the only writers of `mode` and `half`.
    streaming: bool,
}

impl<W: Write> Serializer<W> {
    /// A serializer writing to `out`.
    pub fn new(out: W) -> Serializer<W> {
        Serializer::with_buffer(out, Vec::with_capacity(FLUSH_AT + 4096), false)
    }

    fn with_buffer(out: W, buf: Vec<u8>, in_place: bool) -> Serializer<W> {
        Serializer {
            out: Output {
                base: buf.len(),
                writer: out,
                buf,
                header_written: false,
                in_place,
                flush_at: if in_place { usize::MAX } else { FLUSH_AT },
                bools: 0,
                header: None,
            },
            plan: Plan::default(),
            mode: Mode::Record,
            sig: Sig::SEED,
            items: 0,
            top: None,
            half: None,
            streaming: false,
        }
    }

    fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        self.streaming = self.mode == Mode::Stream && self.half.is_none();
    }

    fn set_half(&mut self, half: Option<Scalar>) {
        self.half = half;
        self.streaming = self.mode == Mode::Stream && self.half.is_none();
    }

    /// Writes the header (if the value was not a sequence, it is only known now) and every
    /// byte still buffered, flushes, and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.write_late_header()?;
        if let Some(block) = self.bool_trailer() {
            self.out.buf.extend_from_slice(&block);
        }
        self.out.writer.write_all(&self.out.buf)?;
        self.out.buf.clear();
        self.out.writer.flush()?;
        Ok(self.out.writer)
    }

    /// The top-level sequence's first item is complete: decide dims and element type, write
    /// the header if the item count is known, and follow the plan from now on.
    #[cold]
    #[inline(never)]
    fn first_item_done(&mut self) -> Result<()> {
        let shape = classify(&self.plan.events)?;
        let (eltype, elbyte) = shape.leaf.eltype_elbyte()?;
        // The buffer holds element 0 (after the caller's bytes, in place) and nothing else.
        self.plan.item_bytes = self.out.buf.len() - self.out.base;
        let described = checked_product(elbyte, &shape.dims);
        check_described(described, self.plan.item_bytes)?;
        let top = self.top.as_mut().expect("inside the top-level sequence");
        top.dims = shape.dims;
        top.eltype = eltype;
        top.elbyte = elbyte;
        if let Some(n) = top.hint {
            let mut dims = top.dims.clone();
            dims.push(n as u64);
            let header = header_for(eltype, elbyte, dims)?;
            if self.out.in_place {
                // The file's size as the sequence tells it: one allocation for all of it. A
                // length that lies (a Serialize impl of the caller's) ends in an error naming
                // both counts; here it may only cost a reservation, skipped if it cannot be had.
                let rest = (n as u64)
                    .saturating_sub(1)
                    .saturating_mul(self.plan.item_bytes as u64);
                let want = usize::try_from(rest)
                    .ok()
                    .and_then(|r| r.checked_add(header.encoded_len()));
                if let Some(want) = want {
                    let _ = self.out.buf.try_reserve(want);
                }
            }
            self.put_header(&header)?;
        }
        self.set_mode(Mode::Stream);
        self.plan.sig = std::mem::replace(&mut self.sig, Sig::SEED).finish();
        self.items = 1;
        self.plan.pos = 0;
        self.plan.sub = 0;
        self.flush_if_full()
    }

    /// Writes a scalar's bytes and notes its step.
    #[inline]
    fn scalar(&mut self, kind: Scalar, bytes: &[u8]) -> Result<()> {
        self.out.buf.extend_from_slice(bytes);
        if self.streaming {
            self.sig.scalars(kind, 1);
            return Ok(());
        }
        if let Some(expected) = self.half {
            if expected != kind {
                return Err(Error::unrepresentable(
                    "a complex number whose halves are of different types",
                ));
            }
            return Ok(());
        }
        self.note_scalar(kind)
    }

    #[inline]
    fn note_scalar(&mut self, kind: Scalar) -> Result<()> {
        match self.mode {
            Mode::Record => {
                match self.plan.events.last_mut() {
                    Some(Ev::Scalars(k, run)) if *k == kind => *run += 1,
                    _ => self.plan.events.push(Ev::Scalars(kind, 1)),
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
                    self.plan.sub += 1;
                    if self.plan.sub == run {
                        self.plan.sub = 0;
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
                match self.plan.events.last_mut() {
                    Some(Ev::Scalars(k, run)) if *k == kind => *run += n,
                    _ => self.plan.events.push(Ev::Scalars(kind, n)),
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
            if self.streaming {
                self.out
                    .buf
                    .extend_from_slice(&a.bytes[..std::mem::size_of_val(value)]);
                self.sig.array(a.kind, a.len as u64);
                return Ok(());
            }
            if self.bulk_ok() {
                // The length as a constant of `T`, so the copy compiles to a few moves.
                self.out
                    .buf
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
        if self.top.is_none() && self.mode == Mode::Record && self.plan.events.is_empty() {
            let (eltype, elbyte) = (run.kind.eltype(), run.kind.elbyte());
            let header = header_for(eltype, elbyte, vec![run.len as u64])?;
            if self.out.in_place {
                let data: usize = run.parts.iter().map(|p| p.len()).sum();
                let capacity = self.out.buf.capacity();
                let need = header.encoded_len() + data;
                self.out
                    .buf
                    .try_reserve(need)
                    .map_err(|_| ErrorKind::TooLarge { bytes: need as u64 })?;
                // A new allocation's pages are not there yet; a reused buffer's likely are.
                let fresh = self.out.buf.capacity() != capacity;
                self.put_header(&header)?;
                for part in run.parts {
                    if fresh {
                        extend_faulting_ahead(&mut self.out.buf, part);
                    } else {
                        self.out.buf.extend_from_slice(part);
                    }
                }
            } else {
                self.put_header(&header)?;
                self.out.writer.write_all(&self.out.buf)?;
                self.out.buf.clear();
                for part in run.parts {
                    self.out.writer.write_all(part)?;
                }
            }
            self.top = Some(TopSeq {
                hint: Some(run.len),
                dims: Vec::new(),
                eltype,
                elbyte,
            });
            self.plan.events.push(Ev::Scalars(run.kind, 1));
            self.items = run.len as u64;
            self.set_mode(Mode::Stream);
            return Ok(());
        }
        self.step(Ev::SeqStart(Some(run.len)))?;
        for part in run.parts {
            self.out.buf.extend_from_slice(part);
        }
        self.note_run(run.kind, run.len as u64);
        self.step(Ev::SeqEnd)
    }

    /// The steps of an array of plain scalars written whole, in the first element.
    #[inline(never)]
    fn record_array(&mut self, kind: Scalar, len: usize) {
        // Bulk arrays have 1 to 32 items.
        self.plan.events.push(Ev::TupleStart(len));
        self.plan.events.push(Ev::Scalars(kind, len as u64));
        self.plan.events.push(Ev::SeqEnd);
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
                self.plan.events.push(ev);
                self.sig.step(ev);
                Ok(())
            }
            Mode::Stream => unreachable!("step takes Mode::Stream"),
            // Field steps are left out of the comparison as they are of the signature: a
            // field holds one value, whose own steps are compared.
            Mode::Check if matches!(ev, Ev::Field(_)) => Ok(()),
            Mode::Check => match self.planned() {
                Some(plan) if self.plan.sub == 0 && agrees(plan, ev) => self.advance(),
                _ => Err(self.mismatch(ev)),
            },
        }
    }

    /// The plan's next step in [`Mode::Check`], past its field steps (which stay in the plan
    /// for the error messages: [`Serializer::mismatch`] names the field).
    fn planned(&mut self) -> Option<Ev> {
        if self.plan.sub == 0 {
            while let Some(Ev::Field(_)) = self.plan.events.get(self.plan.pos) {
                self.plan.pos += 1;
            }
        }
        self.plan.events.get(self.plan.pos).copied()
    }

    fn advance(&mut self) -> Result<()> {
        self.plan.pos += 1;
        if self.plan.pos == self.plan.events.len() {
            // The plan is used up: the replayed element followed it once (or repeats it, which
            // `laps` tells).
            self.plan.pos = 0;
            self.plan.laps += 1;
        }
        Ok(())
    }

    /// An element of the top-level sequence is complete: check it against the first one.
    #[inline]
    fn item_done<T: ?Sized + Serialize>(&mut self, start: usize, value: &T) -> Result<()> {
        let sig = std::mem::replace(&mut self.sig, Sig::SEED).finish();
        if sig != self.plan.sig || self.out.buf.len() - start != self.plan.item_bytes {
            self.diagnose(start, value)?;
        }
        self.items += 1;
        self.flush_if_full()
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
    Error::unrepresentable(what)
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
        // An element replayed in Check mode was counted when it was first serialized.
        if !matches!(self.mode, Mode::Check) {
            self.out.bools += 1;
        }
        self.scalar(Scalar::U8, &[u8::from(v)])
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.scalar(Scalar::U32, &u32::from(v).to_le_bytes())
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        self.serialize_bytes(v.as_bytes())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        self.out.buf.extend_from_slice(v);
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
                let start = self.out.buf.len();
                value.serialize(BytesCapture(&mut self.out.buf))?;
                let len = self.out.buf.len() - start;
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
        if self.top.is_none() && self.mode == Mode::Record && self.plan.events.is_empty() {
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
                let start = self.ser.out.buf.len();
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
                            self.ser.set_half(Some(half));
                            let r = value.serialize(&mut *self.ser);
                            self.ser.set_half(None);
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

    /// Inlined into every `end`: the kind is then the caller's constant, and a record's end is
    /// one signature step instead of a call and a match.
    #[inline(always)]
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
                        return Err(ErrorKind::BrokenLength {
                            what: "the sequence",
                            unit: "items",
                            said: n as u64,
                            gave: got,
                        }
                        .into());
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
    #[inline]
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
    #[inline]
    fn end(self) -> Result<()> {
        self.end_compound()
    }
}

impl<W: Write> ser::SerializeTupleStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    #[inline]
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    #[inline]
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
    #[inline]
    fn end(self) -> Result<()> {
        self.end_compound()
    }
}
