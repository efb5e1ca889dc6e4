//! The checks of later elements against the first: where an element that differs differs,
//! and whether the header describes exactly the bytes written.

use std::io::Write;

use serde::ser::Serialize;

use super::plan::{children, node_end, Ev};
use super::signature::Sig;
use super::{Mode, Serializer};
use crate::eltype::{type_label, ElType};
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;

pub(super) fn describe(ev: Ev) -> String {
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
pub(super) fn check_described(described: Option<u64>, written: usize) -> Result<()> {
    if described != Some(written as u64) {
        return Err(ErrorKind::BrokenLength {
            what: "the layout",
            unit: "bytes",
            said: described.unwrap_or(u64::MAX),
            gave: written as u64,
        }
        .into());
    }
    Ok(())
}

pub(super) fn header_for(eltype: ElType, elbyte: u64, dims: Vec<u64>) -> Result<Header> {
    Header::new(eltype, elbyte, dims)
}

impl<W: Write> Serializer<W> {
    /// Serializes an element whose signature or size differs from the first one's again, step
    /// by step against the plan: `Ok` (its bytes written again) if it follows the plan exactly
    /// once after all (it took another path to the same layout), else an error saying where
    /// it differs.
    #[cold]
    #[inline(never)]
    pub(super) fn diagnose<T: ?Sized + Serialize>(
        &mut self,
        start: usize,
        value: &T,
    ) -> Result<()> {
        let bytes = self.out.buf.len() - start;
        self.out.buf.truncate(start);
        self.set_mode(Mode::Check);
        self.plan.pos = 0;
        self.plan.sub = 0;
        self.plan.laps = 0;
        let replay = value.serialize(&mut *self);
        self.set_mode(Mode::Stream);
        self.sig = Sig::SEED;
        replay?;
        let replayed = self.out.buf.len() - start;
        if self.plan.laps == 1
            && self.plan.pos == 0
            && self.plan.sub == 0
            && replayed == self.plan.item_bytes
        {
            return Ok(());
        }
        Err(ErrorKind::MixedElements {
            index: vec![self.items],
            field: None,
            found: format!("{bytes} bytes of another layout"),
            expected: format!("{} bytes", self.plan.item_bytes),
        }
        .into())
    }

    /// The error for a step of a later element that does not follow the first element.
    #[cold]
    #[inline(never)]
    pub(super) fn mismatch(&self, got: Ev) -> Error {
        let expected = self.plan.events.get(self.plan.pos).copied();
        let path = self.index_path();
        let field = self.plan.events[..self.plan.pos.min(self.plan.events.len())]
            .iter()
            .rev()
            .find_map(|e| match e {
                Ev::Field(f) => Some(*f),
                _ => None,
            });
        let inner = self
            .plan
            .events
            .iter()
            .any(|e| matches!(e, Ev::StructStart(_)));
        let field = field.filter(|_| inner).map(str::to_string);
        let ragged = |found: String, expected: u64| ErrorKind::NotRectangular {
            index: path.clone(),
            field: field.clone(),
            found,
            expected,
        };
        let kind = match (expected, got) {
            (Some(Ev::SeqStart(Some(a))), Ev::SeqStart(Some(b))) => ragged(b.to_string(), a as u64),
            (Some(Ev::SeqEnd), _) => {
                let (len, _) = self.current_seq_len();
                ragged(format!("more than {len}"), len)
            }
            (Some(_), Ev::SeqEnd) => {
                let (len, done) = self.current_seq_len();
                ragged(done.to_string(), len)
            }
            (Some(Ev::Bytes(a)), Ev::Bytes(b)) | (Some(Ev::Embedded(a)), Ev::Embedded(b)) => {
                ragged(format!("{b} bytes"), a as u64)
            }
            (e, g) => ErrorKind::MixedElements {
                index: path.clone(),
                field: field.clone(),
                found: describe(g),
                expected: e.map_or("nothing".into(), describe),
            },
        };
        kind.into()
    }

    /// The index of the current position: the top-level item, then the index in each open sequence.
    pub(super) fn index_path(&self) -> Vec<u64> {
        let mut path = vec![self.items];
        let mut counters: Vec<u64> = Vec::new();
        for ev in &self.plan.events[..self.plan.pos.min(self.plan.events.len())] {
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
            *c += self.plan.sub;
        }
        path.extend(counters);
        path
    }

    /// The plan's length of the innermost open sequence, and how many items the current one had.
    pub(super) fn current_seq_len(&self) -> (u64, u64) {
        let done = *self.index_path().last().unwrap_or(&0);
        let mut depth = 0i64;
        let mut start = 0;
        for (i, ev) in self.plan.events[..self.plan.pos].iter().enumerate().rev() {
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
        let len =
            children(&self.plan.events[start..node_end(&self.plan.events, start)]).len() as u64;
        (len, done)
    }
}
