//! The mapping rules: the steps a value's serialization takes (its plan) and how the first
//! element's steps decide the file's dims and element type ([`classify`]). Pure functions of
//! the steps, testable without serde.

use crate::eltype::{ElType, ScalarType as Scalar};
use crate::error::{Error, ErrorKind, Result};

/// The serializer's scalar steps are the rows of the element-type table; `bool`, `char`
/// and unit variant indices are stored as `u8`, `u32` and `u32`.
pub(super) trait ScalarSteps {
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

/// The first element's steps (the plan every later element follows), and where the element
/// being checked step by step is in them.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) events: Vec<Ev>,
    /// The next step of the plan.
    pub(super) pos: usize,
    /// Within a run of scalars at `pos`, how many are done.
    pub(super) sub: u64,
    /// How many times a replay in `Mode::Check` went through the whole plan.
    pub(super) laps: u64,
    /// Bytes of one element.
    pub(super) item_bytes: usize,
    /// The first element's signature.
    pub(super) sig: u64,
}

/// One step of a value's serialization; the first element's steps are the plan the others follow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Ev {
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
pub(super) fn agrees(plan: Ev, got: Ev) -> bool {
    match (plan, got) {
        (Ev::SeqStart(a), Ev::SeqStart(b)) => a.is_none() || b.is_none() || a == b,
        (Ev::StructStart(_), Ev::StructStart(_)) | (Ev::Field(_), Ev::Field(_)) => true,
        _ => plan == got,
    }
}

/// What one element is, as far as the header is concerned.
#[derive(Debug)]
pub(super) enum Leaf {
    Scalar(Scalar),
    /// A struct, heterogeneous tuple or embedded file of this many bytes.
    Composite(u64),
    /// No element was seen (an empty sequence).
    Unknown,
}

impl Leaf {
    pub(super) fn eltype_elbyte(&self) -> Result<(ElType, u64)> {
        match self {
            Leaf::Scalar(k) => Ok((k.eltype(), k.elbyte())),
            Leaf::Composite(0) => Err(Error::unrepresentable("a record of 0 bytes")),
            Leaf::Composite(n) => Ok((ElType::User, *n)),
            // Documented default: an empty sequence is an empty uint8 array.
            Leaf::Unknown => Ok((ElType::Uint, 1)),
        }
    }
}

#[derive(Debug)]
pub(super) struct Shape {
    /// Dims inside the element, first varying fastest.
    pub(super) dims: Vec<u64>,
    pub(super) leaf: Leaf,
}

/// Index just past the node that starts at `i`.
pub(super) fn node_end(evs: &[Ev], i: usize) -> usize {
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
pub(super) fn children(node: &[Ev]) -> Vec<Child<'_>> {
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
pub(super) enum Child<'a> {
    Scalar(Scalar),
    Node(&'a [Ev]),
}

impl Child<'_> {
    pub(super) fn slice(&self) -> Vec<Ev> {
        match self {
            Child::Scalar(k) => vec![Ev::Scalars(*k, 1)],
            Child::Node(n) => n.to_vec(),
        }
    }
}

pub(super) fn byte_size(evs: &[Ev]) -> u64 {
    evs.iter()
        .map(|e| match e {
            Ev::Scalars(k, run) => k.size() * run,
            Ev::Bytes(n) | Ev::Embedded(n) => *n as u64,
            _ => 0,
        })
        .sum()
}

/// Decides the dims and element type of one recorded element.
pub(super) fn classify(evs: &[Ev]) -> Result<Shape> {
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
        _ => Err(Error::unrepresentable(format!("a value of steps {evs:?}"))),
    }
}

/// The error for a sequence inside the first element whose items differ.
pub(super) fn differing_child(first: &Child<'_>, other: &Child<'_>, j: usize) -> Error {
    let len = |c: &Child<'_>| match c {
        Child::Node(n @ [Ev::SeqStart(_) | Ev::TupleStart(_), ..]) => Some(children(n).len()),
        Child::Node([Ev::Bytes(n)]) => Some(*n),
        _ => None,
    };
    match (len(first), len(other)) {
        (Some(a), Some(b)) if a != b => ErrorKind::NotRectangular {
            index: vec![0, j as u64],
            field: None,
            found: b.to_string(),
            expected: a as u64,
        }
        .into(),
        _ => ErrorKind::MixedElements {
            index: vec![0, j as u64],
            field: None,
            found: "another element type".into(),
            expected: "the type of element [0, 0]".into(),
        }
        .into(),
    }
}

#[cfg(test)]
mod tests {
    //! The mapping rules on hand-built steps, without serde.
    use super::*;

    fn leaf_type(evs: &[Ev]) -> (Vec<u64>, (ElType, u64)) {
        let shape = classify(evs).unwrap();
        (shape.dims, shape.leaf.eltype_elbyte().unwrap())
    }

    #[test]
    fn sequences_become_dims_innermost_first() {
        // vec![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]: the outer sequence is the last dim.
        let evs = [
            Ev::SeqStart(Some(2)),
            Ev::TupleStart(3),
            Ev::Scalars(Scalar::F32, 3),
            Ev::SeqEnd,
            Ev::TupleStart(3),
            Ev::Scalars(Scalar::F32, 3),
            Ev::SeqEnd,
            Ev::SeqEnd,
        ];
        assert_eq!(leaf_type(&evs), (vec![3, 2], (ElType::Float, 4)));
        // A lone scalar has no dims; a string is its bytes; an empty sequence is uint8.
        assert_eq!(
            leaf_type(&[Ev::Scalars(Scalar::I16, 1)]),
            (vec![], (ElType::Int, 2))
        );
        assert_eq!(leaf_type(&[Ev::Bytes(5)]), (vec![5], (ElType::Uint, 1)));
        assert_eq!(
            leaf_type(&[Ev::SeqStart(Some(0)), Ev::SeqEnd]),
            (vec![0], (ElType::Uint, 1))
        );
    }

    #[test]
    fn structs_and_mixed_tuples_are_records_of_their_packed_size() {
        let s = [
            Ev::StructStart("P"),
            Ev::Field("t"),
            Ev::Scalars(Scalar::F64, 1),
            Ev::Field("id"),
            Ev::Scalars(Scalar::U32, 1),
            Ev::StructEnd,
        ];
        assert_eq!(leaf_type(&s), (vec![], (ElType::User, 12)));
        let t = [
            Ev::TupleStart(2),
            Ev::Scalars(Scalar::U8, 1),
            Ev::Scalars(Scalar::F64, 1),
            Ev::SeqEnd,
        ];
        assert_eq!(leaf_type(&t), (vec![], (ElType::User, 9)));
    }

    #[test]
    fn ragged_and_mixed_sequences_are_refused_with_the_index() {
        let ragged = [
            Ev::SeqStart(Some(2)),
            Ev::SeqStart(Some(2)),
            Ev::Scalars(Scalar::U8, 2),
            Ev::SeqEnd,
            Ev::SeqStart(Some(1)),
            Ev::Scalars(Scalar::U8, 1),
            Ev::SeqEnd,
            Ev::SeqEnd,
        ];
        let e = classify(&ragged).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::NotRectangular { index, found, expected: 2, .. }
                if index == &[0, 1] && found == "1"),
            "{e:?}"
        );
        let mixed = [
            Ev::SeqStart(Some(2)),
            Ev::Scalars(Scalar::U8, 1),
            Ev::Scalars(Scalar::U16, 1),
            Ev::SeqEnd,
        ];
        let e = classify(&mixed).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::MixedElements { .. }), "{e:?}");
        // A record of no bytes cannot be an element.
        let empty = [Ev::StructStart("E"), Ev::StructEnd];
        let e = classify(&empty).unwrap().leaf.eltype_elbyte().unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Unrepresentable { .. }),
            "{e:?}"
        );
    }
}
