//! Queries that read only what they need: a [`Predicate`] on a record file's fields (the
//! comparisons, `BETWEEN`, `IN`, and `AND`/`OR`/`NOT` of those that Parquet readers push down),
//! resolved against the file's record layout into a [`RowFilter`], which decides two things:
//!
//! - which chunks can hold a matching record, from each chunk's statistics alone
//!   (doc/chunked.md section 5.4): [`Pruning`] lists the records to read, skipping the chunks
//!   whose minimum, maximum and NaN count prove that no record of theirs matches;
//! - which of the records read match ([`RowFilter::matches`], [`RowFilter::mask`]).
//!
//! The SQL table provider (`rawarray-sql`), the Python package (`filters=`) and
//! [`RecordReader::query`](crate::RecordReader::query) all prune with this module; none has
//! its own rules.
//!
//! **Statistics only ever skip.** A chunk whose statistics are absent, damaged (their CRC
//! fails) or that holds a NaN in a field the predicate names is read, and its records are
//! tested one by one; no value is ever taken from statistics. Pruning is conservative for
//! every reading of floats an engine may filter by again: IEEE's (numpy's, pyarrow's: NaN
//! compares false, `-0.0 == 0.0`), Arrow's comparison kernels in DataFusion (NaN above every
//! number, and below every number when its sign bit is set), and IEEE's totalOrder (`-0.0 <
//! 0.0` too), so that no engine misses a record.
//!
//! **Values compare exactly**, whatever their types: a `u64` field and a float literal, an
//! `i128` field and a literal past `2^64`, a `float32` field and an integer literal all compare
//! as the numbers they are (`2^53 + 1` is not equal to the float `2^53`), and `-0.0` equals
//! `0.0`. A `bool` field compares as the 0 or 1 it stores.
//!
//! ```
//! use rawarray_serde::query::Predicate;
//! use rawarray_serde::{Codec, RaRecord, RecordOptions, RecordReader};
//! #[derive(RaRecord, Clone, Debug, PartialEq)]
//! struct Body { step: u32, energy: f64 }
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("run.ra");
//! let mut w = RecordOptions::new().codec(Codec::Zstd).chunk_records(100).create::<Body>(&path).unwrap();
//! for step in 0..1000 {
//!     w.append(&Body { step, energy: f64::from(step) * 0.5 }).unwrap();
//! }
//! w.finish().unwrap();
//!
//! let r = RecordReader::<Body>::open(&path).unwrap();
//! let q = r.query(&Predicate::between("step", 250, 252)).unwrap();
//! assert_eq!(q.pruning().ranges(), [200..300]); // one chunk of ten is read
//! let hits: Vec<Body> = q.collect::<Result<_, _>>().unwrap();
//! assert_eq!(hits.iter().map(|b| b.step).collect::<Vec<_>>(), [250, 251, 252]);
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;

use crate::codec::stats::{self, scalar_value, FieldStats, StatField};
use crate::codec::{ChunkMap, Grid};
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::layout::Layout;

pub use crate::codec::stats::Value;

/// The name of the one column of a file whose elements are plain scalars (not records), as
/// its Arrow table (`rawarray-arrow`) and SQL name it.
pub const VALUES_COLUMN: &str = "values";

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    /// The operator's symbol: `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    /// The operator of a symbol, as pyarrow's and pandas' filters write them (`=` and `==`
    /// both mean equal); `None` for any other string.
    ///
    /// ```
    /// use rawarray_serde::query::Op;
    /// assert_eq!(Op::from_symbol("="), Some(Op::Eq));
    /// assert_eq!(Op::from_symbol(">="), Some(Op::Ge));
    /// assert_eq!(Op::from_symbol("=>"), None);
    /// ```
    pub fn from_symbol(s: &str) -> Option<Op> {
        Some(match s {
            "=" | "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            _ => return None,
        })
    }

    /// The operator that holds exactly where this one does not (for ordered values).
    fn negate(self) -> Op {
        match self {
            Op::Eq => Op::Ne,
            Op::Ne => Op::Eq,
            Op::Lt => Op::Ge,
            Op::Le => Op::Gt,
            Op::Gt => Op::Le,
            Op::Ge => Op::Lt,
        }
    }

    /// `a op b` from `a`'s order to `b`.
    fn holds(self, o: Ordering) -> bool {
        match self {
            Op::Eq => o == Ordering::Equal,
            Op::Ne => o != Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
        }
    }
}

/// A condition on the fields of a record, by their names: what a query keeps.
///
/// Columns are a record's fields by name; a nested record's fields are named by their path,
/// `"outer.inner"`; a file of plain scalars has one column, [`VALUES_COLUMN`]. Build one with
/// the constructors and combine with [`Predicate::and`], [`Predicate::or`] and `!`:
///
/// ```
/// use rawarray_serde::query::Predicate;
/// let p = Predicate::between("step", 1000, 1010) & !Predicate::is_in("body", [3u32, 17]);
/// assert_eq!(p.to_string(), "step between 1000 and 1010 and not (body in (3, 17))");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// `column op value`.
    Compare {
        /// The column.
        column: String,
        /// The operator.
        op: Op,
        /// The value compared with.
        value: Value,
    },
    /// `column in (values...)`: equal to one of them (none: false).
    In {
        /// The column.
        column: String,
        /// The values.
        values: Vec<Value>,
    },
    /// `low <= column <= high`, as SQL's `BETWEEN`.
    Between {
        /// The column.
        column: String,
        /// The least value kept.
        low: Value,
        /// The greatest value kept.
        high: Value,
    },
    /// All of them hold (none: true).
    And(Vec<Predicate>),
    /// One of them holds (none: false).
    Or(Vec<Predicate>),
    /// It does not hold.
    Not(Box<Predicate>),
}

impl Predicate {
    /// `column op value`.
    pub fn compare(column: impl Into<String>, op: Op, value: impl Into<Value>) -> Predicate {
        Predicate::Compare {
            column: column.into(),
            op,
            value: value.into(),
        }
    }

    /// `column == value`.
    pub fn eq(column: impl Into<String>, value: impl Into<Value>) -> Predicate {
        Predicate::compare(column, Op::Eq, value)
    }

    /// `column != value`.
    pub fn ne(column: impl Into<String>, value: impl Into<Value>) -> Predicate {
        Predicate::compare(column, Op::Ne, value)
    }

    /// `column < value`.
    pub fn lt(column: impl Into<String>, value: impl Into<Value>) -> Predicate {
        Predicate::compare(column, Op::Lt, value)
    }

    /// `column <= value`.
    pub fn le(column: impl Into<String>, value: impl Into<Value>) -> Predicate {
        Predicate::compare(column, Op::Le, value)
    }

    /// `column > value`.
    pub fn gt(column: impl Into<String>, value: impl Into<Value>) -> Predicate {
        Predicate::compare(column, Op::Gt, value)
    }

    /// `column >= value`.
    pub fn ge(column: impl Into<String>, value: impl Into<Value>) -> Predicate {
        Predicate::compare(column, Op::Ge, value)
    }

    /// `low <= column <= high`.
    pub fn between(
        column: impl Into<String>,
        low: impl Into<Value>,
        high: impl Into<Value>,
    ) -> Predicate {
        Predicate::Between {
            column: column.into(),
            low: low.into(),
            high: high.into(),
        }
    }

    /// `column` equal to one of `values`.
    pub fn is_in<V: Into<Value>>(
        column: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Predicate {
        Predicate::In {
            column: column.into(),
            values: values.into_iter().map(Into::into).collect(),
        }
    }

    /// Both hold.
    #[must_use]
    pub fn and(self, other: Predicate) -> Predicate {
        match self {
            Predicate::And(mut all) => {
                all.push(other);
                Predicate::And(all)
            }
            p => Predicate::And(vec![p, other]),
        }
    }

    /// One of them holds.
    #[must_use]
    pub fn or(self, other: Predicate) -> Predicate {
        match self {
            Predicate::Or(mut any) => {
                any.push(other);
                Predicate::Or(any)
            }
            p => Predicate::Or(vec![p, other]),
        }
    }

    /// The columns it names, in order of appearance, each once.
    pub fn columns(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.visit_columns(&mut |c| {
            if !out.contains(&c) {
                out.push(c);
            }
        });
        out
    }

    fn visit_columns<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::In { column, .. }
            | Predicate::Between { column, .. } => f(column),
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|p| p.visit_columns(f)),
            Predicate::Not(p) => p.visit_columns(f),
        }
    }
}

impl std::ops::Not for Predicate {
    type Output = Predicate;
    fn not(self) -> Predicate {
        Predicate::Not(Box::new(self))
    }
}

impl std::ops::BitAnd for Predicate {
    type Output = Predicate;
    fn bitand(self, other: Predicate) -> Predicate {
        self.and(other)
    }
}

impl std::ops::BitOr for Predicate {
    type Output = Predicate;
    fn bitor(self, other: Predicate) -> Predicate {
        self.or(other)
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, ps: &[Predicate], word: &str| {
            for (i, p) in ps.iter().enumerate() {
                if i > 0 {
                    write!(f, " {word} ")?;
                }
                match p {
                    Predicate::And(_) | Predicate::Or(_) => write!(f, "({p})")?,
                    _ => write!(f, "{p}")?,
                }
            }
            Ok(())
        };
        match self {
            Predicate::Compare { column, op, value } => {
                write!(f, "{column} {} {value}", op.symbol())
            }
            Predicate::In { column, values } => {
                let v: Vec<String> = values.iter().map(ToString::to_string).collect();
                write!(f, "{column} in ({})", v.join(", "))
            }
            Predicate::Between { column, low, high } => {
                write!(f, "{column} between {low} and {high}")
            }
            Predicate::And(ps) if ps.is_empty() => write!(f, "true"),
            Predicate::Or(ps) if ps.is_empty() => write!(f, "false"),
            Predicate::And(ps) => list(f, ps, "and"),
            Predicate::Or(ps) => list(f, ps, "or"),
            Predicate::Not(p) => write!(f, "not ({p})"),
        }
    }
}

/// `a` compared with `b` as the numbers they are, `None` when either is NaN.
///
/// ```
/// use std::cmp::Ordering;
/// use rawarray_serde::query::{compare, Value};
/// assert_eq!(compare(Value::Uint((1 << 53) + 1), Value::Float(9007199254740992.0)), Some(Ordering::Greater));
/// assert_eq!(compare(Value::Int(-1), Value::Uint(0)), Some(Ordering::Less));
/// assert_eq!(compare(Value::Float(-0.0), Value::Int(0)), Some(Ordering::Equal));
/// assert_eq!(compare(Value::Float(f64::NAN), Value::Int(0)), None);
/// ```
pub fn compare(a: Value, b: Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(&y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(&y)),
        (Value::Int(x), Value::Uint(y)) => Some(match u128::try_from(x) {
            Ok(x) => x.cmp(&y),
            Err(_) => Ordering::Less,
        }),
        (Value::Uint(_), Value::Int(_)) => compare(b, a).map(Ordering::reverse),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(&y),
        (Value::Int(x), Value::Float(y)) => int_float(x < 0, x.unsigned_abs(), y),
        (Value::Uint(x), Value::Float(y)) => int_float(false, x, y),
        (Value::Float(_), _) => compare(b, a).map(Ordering::reverse),
    }
}

/// The integer `-m` (if `negative`) or `m` compared with the float `f`, exactly.
fn int_float(negative: bool, m: u128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // 2^128: every u128 is below it, so a float at or past it is greater than any integer.
    const TWO_128: f64 = 340_282_366_920_938_463_463_374_607_431_768_211_456.0;
    if negative != (f < 0.0) {
        // Opposite signs (-0.0 counts as not negative): the negative one is less.
        return Some(if negative {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let a = f.abs();
    // Same sign: compare magnitudes, then flip for negatives.
    let by_magnitude = if a >= TWO_128 {
        Ordering::Less
    } else {
        let t = a.trunc();
        // Exact: `t` is an integer below 2^128.
        let ti = t as u128;
        match m.cmp(&ti) {
            Ordering::Equal if a > t => Ordering::Less,
            o => o,
        }
    };
    Some(if negative {
        by_magnitude.reverse()
    } else {
        by_magnitude
    })
}

/// A scalar column of a record, where its bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Column {
    name: String,
    offset: usize,
    eltype: ElType,
    width: usize,
}

impl Column {
    fn value(&self, row: &[u8], big_endian: bool) -> Value {
        let b = &row[self.offset..self.offset + self.width];
        if big_endian {
            let mut le = [0u8; 16];
            le[..self.width].copy_from_slice(b);
            le[..self.width].reverse();
            scalar_value(self.eltype, self.width, &le)
        } else {
            scalar_value(self.eltype, self.width, b)
        }
    }

    fn is_float(&self) -> bool {
        matches!(self.eltype, ElType::Float | ElType::BFloat16)
    }

    /// The statistics field that would be kept for exactly this column (`None` past the
    /// offsets a field can name: no field is kept for it).
    fn stat_field(&self) -> Option<StatField> {
        Some(StatField {
            offset: u32::try_from(self.offset).ok()?,
            count: 1,
            eltype: self.eltype,
            width: u16::try_from(self.width).ok()?,
        })
    }
}

/// `column op value`, with what it gives when the column's value (or `value`) is NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Atom {
    column: usize,
    op: Op,
    value: Value,
    on_nan: bool,
}

impl Atom {
    fn new(column: usize, op: Op, value: Value, negated: bool) -> Atom {
        // IEEE: only `!=` holds for NaN; a negated comparison holds where it did not.
        let on_nan = op == Op::Ne;
        if negated {
            Atom {
                column,
                op: op.negate(),
                value,
                on_nan: !on_nan,
            }
        } else {
            Atom {
                column,
                op,
                value,
                on_nan,
            }
        }
    }

    fn test(&self, v: Value) -> bool {
        match compare(v, self.value) {
            Some(o) => self.op.holds(o),
            None => self.on_nan,
        }
    }

    /// Whether a chunk of statistics `s` for a column (`float`: of floats) can hold a value
    /// for which this atom holds, in any of the readings the module docs list.
    fn may_match(&self, s: &FieldStats, float: bool) -> bool {
        let v = self.value;
        if s.nan > 0 || matches!(v, Value::Float(f) if f.is_nan()) {
            return true;
        }
        let Some((lo, hi)) = s.min_max else {
            return true;
        };
        let is_zero = |x: Value| compare(x, Value::Int(0)) == Some(Ordering::Equal);
        // In IEEE's totalOrder -0.0 < 0.0: a chunk whose least (greatest) value is a zero may
        // hold a -0.0 (0.0) that is less (greater) than a zero literal.
        let zero_edge = float && is_zero(v);
        let cmp = |a: Value, b: Value| compare(a, b);
        let le = |a, b| cmp(a, b).is_none_or(|o| o != Ordering::Greater);
        let lt = |a, b| cmp(a, b).is_none_or(|o| o == Ordering::Less);
        match self.op {
            Op::Eq => le(lo, v) && le(v, hi),
            Op::Ne => {
                let all_equal =
                    cmp(lo, v) == Some(Ordering::Equal) && cmp(hi, v) == Some(Ordering::Equal);
                !all_equal || zero_edge
            }
            Op::Lt => lt(lo, v) || (zero_edge && is_zero(lo)),
            Op::Le => le(lo, v),
            Op::Gt => lt(v, hi) || (zero_edge && is_zero(hi)),
            Op::Ge => le(v, hi),
        }
    }
}

/// A predicate in negation normal form over resolved columns.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Atom(Atom),
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// A [`Predicate`] resolved against a record layout: which bytes of a record each column is,
/// checked once (a column that does not exist, is not a scalar, or whose type has no order is
/// an error naming it). It tests records ([`RowFilter::matches`], [`RowFilter::mask`]) and
/// chunks' statistics ([`RowFilter::chunk_may_match`], [`Pruning`]).
///
/// ```
/// use rawarray_serde::query::{Predicate, RowFilter};
/// use rawarray_serde::{Element, RaRecord};
/// #[derive(RaRecord, Clone)]
/// struct P { id: u16, x: f32 }
/// let f = RowFilter::new(&Predicate::gt("x", 0.5), &P::layout()).unwrap();
/// let rows: Vec<u8> = [(1u16, 0.25f32), (2, 0.75), (3, f32::NAN)]
///     .iter()
///     .flat_map(|(id, x)| [id.to_le_bytes().as_slice(), &x.to_le_bytes()].concat())
///     .collect();
/// assert_eq!(f.mask(&rows, false), [false, true, false]);
/// let err = RowFilter::new(&Predicate::gt("y", 0), &P::layout()).unwrap_err();
/// assert_eq!(err.to_string(), "filter: no column 'y': the columns are id, x");
/// ```
#[derive(Clone, Debug)]
pub struct RowFilter {
    predicate: Predicate,
    columns: Vec<Column>,
    root: Node,
    row_bytes: usize,
}

fn bad_filter(what: impl Into<String>) -> Error {
    ErrorKind::BadFilter(what.into()).into()
}

/// The names of a layout's columns, for messages: a record's fields, or [`VALUES_COLUMN`].
fn column_names(layout: &Layout) -> String {
    match layout {
        Layout::Record { fields, .. } => fields
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        _ => VALUES_COLUMN.into(),
    }
}

/// The field `name` (a path `a.b` into nested records) of `layout`, and its offset.
fn find<'a>(layout: &'a Layout, name: &str, base: u64) -> Option<(&'a Layout, u64)> {
    let Layout::Record { fields, .. } = layout else {
        return (name == VALUES_COLUMN).then_some((layout, base));
    };
    if let Some(f) = fields.iter().find(|f| f.name == name) {
        return Some((&f.layout, base + f.offset));
    }
    // A field whose own name has a dot wins over a path; otherwise every split is tried.
    name.match_indices('.').find_map(|(i, _)| {
        let f = fields.iter().find(|f| f.name == name[..i])?;
        match &f.layout {
            Layout::Record { .. } => find(&f.layout, &name[i + 1..], base + f.offset),
            _ => None,
        }
    })
}

fn resolve_column(layout: &Layout, name: &str) -> Result<Column> {
    let Some((field, offset)) = find(layout, name, 0) else {
        return Err(bad_filter(format!(
            "no column '{name}': the columns are {}",
            column_names(layout)
        )));
    };
    match field {
        Layout::Scalar { eltype, elbyte, .. } => {
            let orderable = matches!(
                eltype,
                ElType::Int | ElType::Uint | ElType::Float | ElType::BFloat16
            ) && StatField::supports(*eltype, *elbyte);
            if !orderable {
                return Err(bad_filter(format!(
                    "column '{name}' is {}, which filters cannot compare (they take integers, \
                     floats of 16, 32 and 64 bits, bfloat16 and bool)",
                    field.describe()
                )));
            }
            Ok(Column {
                name: name.into(),
                offset: usize::try_from(offset).map_err(|_| bad_filter("offset"))?,
                eltype: *eltype,
                width: *elbyte as usize,
            })
        }
        Layout::Array { .. } => Err(bad_filter(format!(
            "column '{name}' is an array ({}): filters compare scalar columns",
            field.describe()
        ))),
        Layout::Record { .. } => Err(bad_filter(format!(
            "column '{name}' is a record of the fields {}: name one of them, as '{name}.{}'",
            column_names(field),
            match field {
                Layout::Record { fields, .. } => fields[0].name.as_str(),
                _ => "",
            }
        ))),
    }
}

impl RowFilter {
    /// Resolves `predicate` against the layout of one record (a file's schema, or
    /// [`Element::layout`](crate::Element::layout)): every column it names must be a scalar
    /// field of an integer, float, bfloat16 or bool type (a nested record's field by its path
    /// `a.b`; a file of plain scalars has the one column [`VALUES_COLUMN`]).
    pub fn new(predicate: &Predicate, layout: &Layout) -> Result<RowFilter> {
        let row_bytes = usize::try_from(layout.size()).map_err(|_| bad_filter("record size"))?;
        let mut columns = Vec::new();
        let root = nnf(predicate, false, layout, &mut columns)?;
        Ok(RowFilter {
            predicate: predicate.clone(),
            columns,
            root,
            row_bytes,
        })
    }

    /// The predicate it was made of.
    pub fn predicate(&self) -> &Predicate {
        &self.predicate
    }

    /// Bytes of one record.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// Whether the record `row` (its bytes, little-endian unless `big_endian`) matches.
    pub fn matches(&self, row: &[u8], big_endian: bool) -> bool {
        eval_row(&self.root, &self.columns, row, big_endian)
    }

    /// For each record of `rows` (whole records, little-endian unless `big_endian`), whether
    /// it matches.
    pub fn mask(&self, rows: &[u8], big_endian: bool) -> Vec<bool> {
        let n = rows.len() / self.row_bytes.max(1);
        let mut out = vec![true; n];
        self.eval_mask(&self.root, rows, big_endian, &mut out);
        out
    }

    /// `out[i] &= node(row i)`, a column at a time.
    fn eval_mask(&self, node: &Node, rows: &[u8], big_endian: bool, out: &mut [bool]) {
        let rb = self.row_bytes.max(1);
        match node {
            Node::Atom(a) => {
                let c = &self.columns[a.column];
                for (keep, row) in out.iter_mut().zip(rows.chunks_exact(rb)) {
                    if *keep {
                        *keep = a.test(c.value(row, big_endian));
                    }
                }
            }
            Node::And(ns) => ns
                .iter()
                .for_each(|n| self.eval_mask(n, rows, big_endian, out)),
            Node::Or(ns) => {
                let mut any = vec![false; out.len()];
                let mut one = vec![true; out.len()];
                for n in ns {
                    // Only the rows still wanted and not yet matched are tested again.
                    for ((o, a), w) in one.iter_mut().zip(&any).zip(out.iter()) {
                        *o = *w && !*a;
                    }
                    self.eval_mask(n, rows, big_endian, &mut one);
                    for (a, o) in any.iter_mut().zip(&one) {
                        *a |= *o;
                    }
                }
                for (o, a) in out.iter_mut().zip(&any) {
                    *o &= *a;
                }
            }
        }
    }

    /// Whether chunk `n` of `map` can hold a matching record, from its statistics: `false`
    /// only when they prove none does (see the module docs).
    pub fn chunk_may_match(&self, map: &ChunkMap, n: u64) -> bool {
        let bound = self.bind(map);
        self.chunk_may_match_bound(&bound, map, n)
    }

    /// Where each column's statistics record is in a chunk's statistics bytes, if kept.
    fn bind(&self, map: &ChunkMap) -> Vec<Option<(usize, StatField)>> {
        let fields = map.config().stats.as_deref().unwrap_or(&[]);
        let mut at = Vec::with_capacity(fields.len());
        let mut pos = 0usize;
        for f in fields {
            at.push(pos);
            pos += f.record_len() as usize;
        }
        self.columns
            .iter()
            .map(|c| {
                let want = c.stat_field()?;
                fields
                    .iter()
                    .position(|f| *f == want)
                    .map(|k| (at[k], want))
            })
            .collect()
    }

    fn chunk_may_match_bound(
        &self,
        bound: &[Option<(usize, StatField)>],
        map: &ChunkMap,
        n: u64,
    ) -> bool {
        let Some(bytes) = map.index().stats(n) else {
            return true;
        };
        let stats_of = |col: usize| -> Option<FieldStats> {
            let (at, f) = bound[col]?;
            let rec = bytes.get(at..at + f.record_len() as usize)?;
            stats::parse(&[f], rec).into_iter().next()
        };
        self.may_match(&self.root, &stats_of)
    }

    fn may_match(&self, node: &Node, stats_of: &dyn Fn(usize) -> Option<FieldStats>) -> bool {
        match node {
            Node::Atom(a) => match stats_of(a.column) {
                Some(s) => a.may_match(&s, self.columns[a.column].is_float()),
                None => true,
            },
            Node::And(ns) => ns.iter().all(|n| self.may_match(n, stats_of)),
            Node::Or(ns) => ns.iter().any(|n| self.may_match(n, stats_of)),
        }
    }
}

fn eval_row(node: &Node, columns: &[Column], row: &[u8], big_endian: bool) -> bool {
    match node {
        Node::Atom(a) => a.test(columns[a.column].value(row, big_endian)),
        Node::And(ns) => ns.iter().all(|n| eval_row(n, columns, row, big_endian)),
        Node::Or(ns) => ns.iter().any(|n| eval_row(n, columns, row, big_endian)),
    }
}

/// `p` (negated if `neg`) in negation normal form, its columns resolved into `columns`.
fn nnf(p: &Predicate, neg: bool, layout: &Layout, columns: &mut Vec<Column>) -> Result<Node> {
    let mut col = |name: &str| -> Result<usize> {
        let c = resolve_column(layout, name)?;
        Ok(match columns.iter().position(|k| *k == c) {
            Some(i) => i,
            None => {
                columns.push(c);
                columns.len() - 1
            }
        })
    };
    // (all, any) as a conjunction, or under negation its De Morgan dual.
    let join = |nodes: Vec<Node>, conj: bool| -> Node {
        if conj != neg {
            Node::And(nodes)
        } else {
            Node::Or(nodes)
        }
    };
    Ok(match p {
        Predicate::Compare { column, op, value } => {
            Node::Atom(Atom::new(col(column)?, *op, *value, neg))
        }
        Predicate::In { column, values } => {
            let c = col(column)?;
            // any(x == v), negated all(x != v).
            join(
                values
                    .iter()
                    .map(|v| Node::Atom(Atom::new(c, Op::Eq, *v, neg)))
                    .collect(),
                false,
            )
        }
        Predicate::Between { column, low, high } => {
            let c = col(column)?;
            join(
                vec![
                    Node::Atom(Atom::new(c, Op::Ge, *low, neg)),
                    Node::Atom(Atom::new(c, Op::Le, *high, neg)),
                ],
                true,
            )
        }
        Predicate::And(ps) => join(
            ps.iter()
                .map(|q| nnf(q, neg, layout, columns))
                .collect::<Result<_>>()?,
            true,
        ),
        Predicate::Or(ps) => join(
            ps.iter()
                .map(|q| nnf(q, neg, layout, columns))
                .collect::<Result<_>>()?,
            false,
        ),
        Predicate::Not(q) => nnf(q, !neg, layout, columns)?,
    })
}

/// The records a query reads: the ranges of elements (records) of a file whose chunks can
/// hold a match, found from the chunks' statistics alone, and what skipping the others saves.
///
/// Records are counted as the elements of the file in its order (the first dim fastest), so a
/// record file's records are `0 .. len`. A file that is not chunked, or has no statistics, is
/// read whole. A chunk is skipped only when every chunk sharing its range of the last dim is
/// (a record file's chunks span every other dim, so each chunk is its own range).
///
/// ```
/// use rawarray_serde::query::{Predicate, Pruning, RowFilter};
/// use rawarray_serde::{ArrayReader, Codec, Element, RawArray, WriteOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.ra");
/// let a = RawArray::from_vec((0..10_000u32).collect());
/// a.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![1000])).unwrap();
/// let r = ArrayReader::open(&path).unwrap();
/// let f = RowFilter::new(&Predicate::is_in("values", [5u32, 7500]), &u32::layout()).unwrap();
/// let p = Pruning::new(&f, r.header(), r.section().chunk_map());
/// assert_eq!(p.ranges(), [0..1000, 7000..8000]);
/// assert_eq!((p.chunks(), p.chunks_read()), (10, 2));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pruning {
    ranges: Vec<Range<u64>>,
    chunks: u64,
    chunks_read: u64,
    stored: u64,
    stored_read: u64,
}

impl Pruning {
    /// The pruning of a file of `header` (the map's header for a chunked section, whose dims may
    /// be newer than the file's first header), `map` its chunk map if chunked.
    pub fn new(filter: &RowFilter, header: &Header, map: Option<&ChunkMap>) -> Pruning {
        let Some(map) = map else {
            let n = header.num_elements();
            return Pruning {
                ranges: std::iter::once(0..n).filter(|r| !r.is_empty()).collect(),
                ..Pruning::default()
            };
        };
        let bound = filter.bind(map);
        Pruning::from_chunks(map, |n| filter.chunk_may_match_bound(&bound, map, n))
    }

    /// The pruning that reads every chunk `keep` says may match, and the chunks past the
    /// file's index without asking (never written, they read as zeros, which no statistics
    /// describe): the work is bounded by the index read from the file, not by the chunk count
    /// its header claims.
    pub fn from_chunks(map: &ChunkMap, mut keep: impl FnMut(u64) -> bool) -> Pruning {
        let grid = map.grid();
        let dims = grid.dims();
        let count = grid.count();
        let mut p = Pruning {
            chunks: count,
            ..Pruning::default()
        };
        let Some((&last, lead)) = dims.split_last() else {
            // A 0-d array: one chunk of one element.
            p.stored = map.index().stored_bytes();
            if count > 0 && keep(0) {
                p.ranges.push(0..1);
                p.chunks_read = 1;
                p.stored_read = p.stored;
            }
            return p;
        };
        let per_slab: u64 = grid.counts()[..lead.len()].iter().product();
        let plane: u64 = lead.iter().product();
        let step = grid.chunk()[lead.len()];
        let slabs = count.checked_div(per_slab).unwrap_or(0);
        // Slabs holding a chunk of the index; those after it hold none.
        let entries = map.index().entries().len() as u64;
        let known = entries.div_ceil(per_slab.max(1)).min(slabs);
        // Elements of the slab range `a..b` (the last slab clipped to the dim).
        let span = |a: u64, b: u64| a * step * plane..b.saturating_mul(step).min(last) * plane;
        let push = |p: &mut Pruning, r: Range<u64>| match p.ranges.last_mut() {
            Some(prev) if prev.end == r.start => prev.end = r.end,
            _ => p.ranges.push(r),
        };
        for s in 0..known {
            // The slab's chunks in the index; one past it is read without asking.
            let chunks = s * per_slab..((s + 1) * per_slab).min(entries);
            let bytes: u64 = chunks.clone().map(|n| map.entry(n).len).sum();
            p.stored += bytes;
            let read = chunks.end < (s + 1) * per_slab || chunks.into_iter().any(&mut keep);
            if !read {
                continue;
            }
            p.chunks_read += per_slab;
            p.stored_read += bytes;
            push(&mut p, span(s, s + 1));
        }
        if known < slabs {
            p.chunks_read += (slabs - known) * per_slab;
            push(&mut p, span(known, slabs));
        }
        p
    }

    /// Drops what lies past element `len` (a reader of fewer records than the chunk map's
    /// newer dims describe).
    pub fn clip(&mut self, len: u64) {
        self.ranges.retain(|r| r.start < len);
        if let Some(r) = self.ranges.last_mut() {
            r.end = r.end.min(len);
        }
    }

    /// The element (record) ranges to read, in order, disjoint and not adjacent.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Elements (records) in those ranges.
    pub fn len(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }

    /// Whether nothing is to be read.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Chunks in the file (0 if it is not chunked).
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    /// Chunks to read (those of the ranges).
    pub fn chunks_read(&self) -> u64 {
        self.chunks_read
    }

    /// Stored (compressed) bytes of all the chunks, and of those to read.
    pub fn stored_bytes(&self) -> (u64, u64) {
        (self.stored, self.stored_read)
    }
}

/// The layout of one element of a file: its schema's record (or scalar) under any arrays of
/// record dims, or the header's scalar type for a file without a schema. `None` for a file of
/// user-defined elements without a schema (nothing names its fields).
pub fn element_layout(header: &Header, schema: Option<&Layout>) -> Option<Layout> {
    if let Some(base) = schema.and_then(|s| s.check_header(header).ok()) {
        return Some(base.clone());
    }
    (header.eltype != ElType::User).then(|| Layout::scalar(header.eltype, header.elbyte))
}

/// The name of each statistics field of a file whose elements are laid out as `layout`: its
/// column's name (a nested field's path `a.b`, a fixed-size array field's name), or
/// `@offset` where the layout names none.
pub fn stat_field_names(fields: &[StatField], layout: Option<&Layout>) -> Vec<String> {
    let mut named: Vec<(u64, String)> = Vec::new();
    if let Some(l) = layout {
        collect_names(l, 0, "", &mut named);
    }
    fields
        .iter()
        .map(|f| {
            named
                .iter()
                .find(|(at, _)| *at == u64::from(f.offset))
                .map_or_else(|| format!("@{}", f.offset), |(_, n)| n.clone())
        })
        .collect()
}

fn collect_names(layout: &Layout, base: u64, prefix: &str, out: &mut Vec<(u64, String)>) {
    match layout {
        Layout::Record { fields, .. } => {
            for f in fields {
                let name = if prefix.is_empty() {
                    f.name.clone()
                } else {
                    format!("{prefix}.{}", f.name)
                };
                match &f.layout {
                    Layout::Record { .. } => collect_names(&f.layout, base + f.offset, &name, out),
                    _ => out.push((base + f.offset, name)),
                }
            }
        }
        _ => out.push((base, VALUES_COLUMN.into())),
    }
}

/// A file's statistics, from its index alone (no data read): per statistics field, the
/// statistics of each chunk and of the whole file.
///
/// ```
/// use rawarray_serde::query::{FileStats, Value};
/// use rawarray_serde::{ArrayReader, Codec, RawArray, WriteOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.ra");
/// let a = RawArray::from_vec(vec![3.0f32, f32::NAN, -1.0, 8.0]);
/// a.write_file_with(&path, &WriteOptions::new().codec(Codec::Zstd).chunks(vec![2])).unwrap();
/// let r = ArrayReader::open(&path).unwrap();
/// let s = FileStats::of(r.section().chunk_map().unwrap(), None).unwrap();
/// assert_eq!(s.names(), ["values"]);
/// let whole = s.whole(0).unwrap();
/// assert_eq!(whole.nan, 1);
/// assert_eq!(whole.min_max, Some((Value::Float(-1.0), Value::Float(8.0))));
/// assert_eq!(s.chunk(1, 0).unwrap().min_max, Some((Value::Float(-1.0), Value::Float(8.0))));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FileStats {
    fields: Vec<StatField>,
    names: Vec<String>,
    /// The chunk grid (each chunk's element range is asked of it).
    grid: Grid,
    /// Per chunk of the index (chunks `0 .. entries`; the index knows no later chunk, so none
    /// was written): its statistics, if written and they are present and readable. What this
    /// holds is bounded by the index read from the file, not by the chunk count its header
    /// claims.
    chunks: Vec<Option<Vec<FieldStats>>>,
    /// Written chunks without readable statistics.
    missing: Vec<u64>,
}

impl FileStats {
    /// The statistics of a chunked section, its fields named by the file's record `schema`
    /// (its trailer's) or as [`VALUES_COLUMN`] for plain scalars; `None` when its entries keep
    /// none (version 1, or written without).
    pub fn of(map: &ChunkMap, schema: Option<&Layout>) -> Option<FileStats> {
        let fields = map.config().stats.clone()?;
        let names = stat_field_names(&fields, element_layout(map.header(), schema).as_ref());
        let grid = map.grid().clone();
        let known = map.index().entries().len() as u64;
        let mut chunks = Vec::new();
        let mut missing = Vec::new();
        for n in 0..known {
            let written = !map.entry(n).is_empty();
            let stats = map.index().stats(n).map(|b| stats::parse(&fields, b));
            if written && stats.is_none() {
                missing.push(n);
            }
            chunks.push(if written { stats } else { None });
        }
        Some(FileStats {
            fields,
            names,
            grid,
            chunks,
            missing,
        })
    }

    /// The statistics fields, in the config's order.
    pub fn fields(&self) -> &[StatField] {
        &self.fields
    }

    /// Their names (see [`stat_field_names`]).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Chunks in the file.
    pub fn chunk_count(&self) -> u64 {
        self.grid.count()
    }

    /// The written chunks whose statistics are absent or unreadable (damaged): the whole
    /// file's statistics cannot be told without reading them.
    pub fn missing(&self) -> &[u64] {
        &self.missing
    }

    /// Field `k`'s statistics over chunk `n`, if it was written and its statistics are
    /// present and readable.
    pub fn chunk(&self, n: u64, k: usize) -> Option<FieldStats> {
        let s = self.chunks.get(usize::try_from(n).ok()?)?;
        s.as_ref()?.get(k).copied()
    }

    /// The elements of the file chunk `n` holds, when they are one range (a record file's
    /// chunks, or any chunk of a 1-d array); `None` otherwise.
    pub fn chunk_elements(&self, n: u64) -> Option<Range<u64>> {
        (n < self.grid.count())
            .then(|| chunk_elements(&self.grid, n))
            .flatten()
    }

    /// Field `k`'s statistics over the whole file as it reads, merged from every written
    /// chunk's and, when a chunk was never written, its zeros (a chunk never written reads as
    /// zeros, doc/chunked.md section 4); `None` when a written chunk has none (see
    /// [`FileStats::missing`]). A file without elements has no NaN, no minimum or maximum.
    pub fn whole(&self, k: usize) -> Option<FieldStats> {
        if !self.missing.is_empty() || k >= self.fields.len() {
            return None;
        }
        let mut acc = FieldStats {
            nan: 0,
            min_max: None,
        };
        let field = self.fields[k];
        let zero = match field.eltype {
            ElType::Int => Some(Value::Int(0)),
            ElType::Uint => Some(Value::Uint(0)),
            ElType::Float | ElType::BFloat16 => Some(Value::Float(0.0)),
            _ => None,
        };
        // With none missing, a chunk without statistics was never written, as is every
        // chunk past the index.
        let unwritten = (self.chunks.len() as u64) < self.grid.count()
            || self.chunks.iter().any(Option::is_none);
        let zeros = FieldStats {
            nan: 0,
            min_max: zero.map(|z| (z, z)),
        };
        let written = self.chunks.iter().filter_map(|s| s.as_ref().map(|s| s[k]));
        for one in written.chain(unwritten.then_some(zeros)) {
            acc.nan = acc.nan.saturating_add(one.nan);
            acc.min_max = match (acc.min_max, one.min_max) {
                (None, m) | (m, None) => m,
                (Some((a, b)), Some((c, d))) => Some((
                    if compare(c, a) == Some(Ordering::Less) {
                        c
                    } else {
                        a
                    },
                    if compare(d, b) == Some(Ordering::Greater) {
                        d
                    } else {
                        b
                    },
                )),
            };
        }
        Some(acc)
    }
}

/// The elements chunk `n` holds as one range of the file's element order, when it is one
/// (it spans every dim but the last whole).
fn chunk_elements(grid: &Grid, n: u64) -> Option<Range<u64>> {
    let dims = grid.dims();
    let Some((&last, lead)) = dims.split_last() else {
        return Some(0..1);
    };
    let origin = grid.origin(n);
    let shape = grid.shape(n);
    let plane: u64 = lead.iter().product();
    if shape[..lead.len()] != *lead {
        return None;
    }
    let start = origin[lead.len()] * plane;
    let end = (origin[lead.len()] + shape[lead.len()]).min(last) * plane;
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Field;

    fn rec(fields: &[(&str, Layout)]) -> Layout {
        let mut at = 0;
        Layout::Record {
            name: "R".into(),
            fields: fields
                .iter()
                .map(|(n, l)| {
                    let f = Field {
                        name: (*n).into(),
                        offset: at,
                        layout: l.clone(),
                    };
                    at += l.size();
                    f
                })
                .collect(),
        }
    }

    #[test]
    fn exact_comparison_across_types() {
        use Ordering::*;
        let cases = [
            (Value::Int(i128::MIN), Value::Float(-1.7e38), Less),
            (Value::Int(i128::MAX), Value::Float(1.7e38), Greater),
            (Value::Uint(u128::MAX), Value::Float(3.5e38), Less),
            (Value::Uint(u128::MAX), Value::Float(f64::INFINITY), Less),
            (Value::Int(-3), Value::Float(-2.5), Less),
            (Value::Int(-2), Value::Float(-2.5), Greater),
            (Value::Int(2), Value::Float(2.5), Less),
            (Value::Int(0), Value::Float(-0.0), Equal),
            (Value::Uint(0), Value::Float(-0.5), Greater),
            (Value::Int(0), Value::Float(0.5), Less),
            (Value::Uint(1), Value::Int(-1), Greater),
            (Value::Float(f64::NEG_INFINITY), Value::Int(i128::MIN), Less),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare(a, b), Some(want), "{a:?} vs {b:?}");
            assert_eq!(compare(b, a), Some(want.reverse()), "{b:?} vs {a:?}");
        }
    }

    #[test]
    fn negation_keeps_numpy_nan_semantics() {
        let l = rec(&[("x", Layout::scalar(ElType::Float, 8))]);
        let rows: Vec<u8> = [1.0f64, f64::NAN, 3.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mask = |p: Predicate| RowFilter::new(&p, &l).unwrap().mask(&rows, false);
        assert_eq!(mask(Predicate::lt("x", 2.0)), [true, false, false]);
        // numpy: ~(x < 2) is True for NaN.
        assert_eq!(mask(!Predicate::lt("x", 2.0)), [false, true, true]);
        assert_eq!(mask(Predicate::ne("x", 1.0)), [false, true, true]);
        assert_eq!(mask(!Predicate::ne("x", 1.0)), [true, false, false]);
        assert_eq!(mask(!Predicate::between("x", 0, 2)), [false, true, true]);
        assert_eq!(mask(!Predicate::is_in("x", [3.0])), [true, true, false]);
        assert_eq!(mask(Predicate::eq("x", f64::NAN)), [false, false, false]);
        assert_eq!(mask(Predicate::Or(vec![])), [false, false, false]);
        assert_eq!(mask(!Predicate::And(vec![])), [false, false, false]);
    }

    #[test]
    fn statistics_prune_conservatively() {
        let float = |lo: f64, hi: f64, nan| FieldStats {
            nan,
            min_max: Some((Value::Float(lo), Value::Float(hi))),
        };
        let atom = |op, v: f64| Atom::new(0, op, Value::Float(v), false);
        // A NaN anywhere: read (NaN sorts above every number in Arrow's order).
        assert!(atom(Op::Gt, 100.0).may_match(&float(0.0, 1.0, 1), true));
        assert!(!atom(Op::Gt, 100.0).may_match(&float(0.0, 1.0, 0), true));
        // -0.0 < 0.0 in IEEE's totalOrder: a chunk whose min is a zero may hold -0.0.
        assert!(atom(Op::Lt, 0.0).may_match(&float(0.0, 5.0, 0), true));
        assert!(atom(Op::Gt, -0.0).may_match(&float(-3.0, -0.0, 0), true));
        assert!(atom(Op::Ne, 0.0).may_match(&float(0.0, 0.0, 0), true));
        assert!(!atom(Op::Lt, 0.0).may_match(&float(1.0, 5.0, 0), true));
        // A NaN literal: read.
        assert!(atom(Op::Eq, f64::NAN).may_match(&float(0.0, 1.0, 0), true));
        // Integers: exact, no zero edge.
        let ints = FieldStats {
            nan: 0,
            min_max: Some((Value::Int(0), Value::Int(0))),
        };
        assert!(!Atom::new(0, Op::Ne, Value::Int(0), false).may_match(&ints, false));
        assert!(!Atom::new(0, Op::Lt, Value::Float(0.0), false).may_match(&ints, false));
        assert!(Atom::new(0, Op::Lt, Value::Float(0.5), false).may_match(&ints, false));
        // No statistics: read.
        let none = FieldStats {
            nan: 0,
            min_max: None,
        };
        assert!(Atom::new(0, Op::Eq, Value::Int(3), false).may_match(&none, false));
    }

    #[test]
    fn the_whole_file_counts_the_zeros_of_unwritten_chunks() {
        let stats = |lo: i128, hi: i128| {
            Some(vec![FieldStats {
                nan: 0,
                min_max: Some((Value::Int(lo), Value::Int(hi))),
            }])
        };
        let mut s = FileStats {
            fields: vec![StatField::scalar(ElType::Int, 2)],
            names: vec![VALUES_COLUMN.into()],
            grid: Grid::new(&[8], &[4], 2).unwrap(),
            chunks: vec![stats(5, 9), stats(-3, 7)],
            missing: vec![],
        };
        let whole = |s: &FileStats| s.whole(0).unwrap().min_max;
        assert_eq!(whole(&s), Some((Value::Int(-3), Value::Int(9))));
        s.chunks[1] = None; // never written: reads as zeros
        assert_eq!(whole(&s), Some((Value::Int(0), Value::Int(9))));
        s.chunks.truncate(1); // chunk 1 past the index: never written
        assert_eq!(whole(&s), Some((Value::Int(0), Value::Int(9))));
        s.chunks[0] = None;
        assert_eq!(whole(&s), Some((Value::Int(0), Value::Int(0))));
        // No elements, no chunks.
        s.grid = Grid::new(&[0], &[4], 2).unwrap();
        s.chunks.clear();
        assert_eq!(whole(&s), None);
    }

    #[test]
    fn columns_are_named_in_errors() {
        let inner = rec(&[
            ("a", Layout::scalar(ElType::Int, 2)),
            ("b", Layout::scalar(ElType::Complex, 8)),
        ]);
        let l = rec(&[
            ("t", Layout::scalar(ElType::Float, 8)),
            (
                "pos",
                Layout::Array {
                    len: 3,
                    item: Box::new(Layout::scalar(ElType::Float, 4)),
                },
            ),
            ("in", inner),
        ]);
        let err = |p: Predicate| RowFilter::new(&p, &l).unwrap_err().to_string();
        assert_eq!(
            err(Predicate::eq("x", 1)),
            "filter: no column 'x': the columns are t, pos, in"
        );
        assert!(err(Predicate::eq("pos", 1)).contains("'pos' is an array ([float32; 3])"));
        assert!(err(Predicate::eq("in", 1)).contains("as 'in.a'"));
        assert!(err(Predicate::eq("in.b", 1)).contains("complex64"));
        let f = RowFilter::new(&Predicate::eq("in.a", -2), &l).unwrap();
        let mut row = vec![0u8; 8 + 12 + 2 + 8];
        row[20..22].copy_from_slice(&(-2i16).to_le_bytes());
        assert!(f.matches(&row, false));
        row[20..22].copy_from_slice(&(-2i16).to_be_bytes());
        assert!(f.matches(&row, true));
        assert!(!f.matches(&row, false));
    }
}
