//! Per-chunk statistics and the queries that skip chunks by them (doc/chunked.md section 5.4,
//! `rawarray_serde::query`), against independent truth:
//!
//! - every chunk's statistics equal a reference computed here from the typed values (the types
//!   numpy lacks: 128-bit integers, bfloat16; the others are checked against numpy in
//!   rawarray-python/tests/test_query.py), edge chunks, a record file's partial last chunk,
//!   nested records, and the rounded values of a lossy filter;
//! - a record file appended by flushes of every size and SIGKILLed at random moments never
//!   has statistics that exclude a committed record: a query for each record's exact key finds
//!   it, and its chunk's statistics hold its values;
//! - pruned and unpruned queries equal a plain filter written here, on random records and
//!   random predicates;
//! - statistics whose CRC fails are read as absent (the same results), and any damage to an
//!   entry gives the same results or an error, never missing rows.

// The reference filters here are written the plain way on purpose (a predicate as a boxed
// closure, `!(a < b)` where NaN must count as "not less"), not as the library writes them.
#![allow(
    clippy::type_complexity,
    clippy::neg_cmp_op_on_partial_ord,
    clippy::single_range_in_vec_init
)]

mod common;

use std::fs;
use std::ops::Range;
use std::path::Path;

use proptest::prelude::*;
use rawarray_serde::codec::stats::{FieldStats, Value};
use rawarray_serde::codec::{Codec, Filter};
use rawarray_serde::query::{FileStats, Predicate};
use rawarray_serde::section::Warning;
use rawarray_serde::{
    bf16, f16, ArrayReader, Complex, Element, Header, RaRecord, RawArray, RecordOptions,
    RecordReader, WriteOptions,
};

/// A value as statistics keep it, or `None` for a NaN.
trait Reference: Element + Copy + std::fmt::Debug {
    fn value(self) -> Option<Value>;
    fn extremes() -> Vec<Self>;
    fn from_seed(s: u64) -> Self;
}

macro_rules! ints {
    ($($t:ty => $wrap:ident),*) => {$(
        impl Reference for $t {
            fn value(self) -> Option<Value> {
                Some(Value::$wrap(self.into()))
            }
            fn extremes() -> Vec<Self> {
                vec![<$t>::MIN, <$t>::MAX, 0, 1]
            }
            fn from_seed(s: u64) -> Self {
                // Spread over the whole type, the upper bits of 128-bit types included.
                let wide = (u128::from(s) << 64) | u128::from(s.rotate_left(17));
                wide as $t
            }
        }
    )*};
}
ints!(i8 => Int, i16 => Int, i32 => Int, i64 => Int, i128 => Int,
      u8 => Uint, u16 => Uint, u32 => Uint, u64 => Uint, u128 => Uint);

macro_rules! floats {
    ($($t:ty: $to:expr, $from:expr),*) => {$(
        impl Reference for $t {
            fn value(self) -> Option<Value> {
                let v: f64 = $to(self);
                (!v.is_nan()).then_some(Value::Float(v))
            }
            fn extremes() -> Vec<Self> {
                [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 1e-300, -65504.0]
                    .into_iter()
                    .map($from)
                    .collect()
            }
            fn from_seed(s: u64) -> Self {
                $from((s % 20_001) as f64 / 7.0 - 1400.0)
            }
        }
    )*};
}
floats!(
    f16: |v: f16| v.to_f64(), f16::from_f64,
    bf16: |v: bf16| v.to_f64(), bf16::from_f64,
    f32: f64::from, |v: f64| v as f32,
    f64: |v| v, |v| v
);

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// The statistics of `values` computed here: NaN count, least and greatest by the type's
/// order (-0.0 and 0.0 equal, either may be kept).
fn reference<T: Reference>(values: &[T]) -> FieldStats {
    let mut nan = 0;
    let mut min_max: Option<(Value, Value)> = None;
    let less = |a: Value, b: Value| match (a, b) {
        (Value::Int(x), Value::Int(y)) => x < y,
        (Value::Uint(x), Value::Uint(y)) => x < y,
        (Value::Float(x), Value::Float(y)) => x < y,
        _ => panic!("mixed types"),
    };
    for v in values {
        match v.value() {
            None => nan += 1,
            Some(v) => {
                min_max = Some(match min_max {
                    None => (v, v),
                    Some((lo, hi)) => (
                        if less(v, lo) { v } else { lo },
                        if less(hi, v) { v } else { hi },
                    ),
                });
            }
        }
    }
    FieldStats { nan, min_max }
}

/// Chunk `n`'s values out of the whole array (`dims`, first fastest) by its grid box.
fn chunk_values<T: Copy>(all: &[T], dims: &[u64], origin: &[u64], shape: &[u64]) -> Vec<T> {
    let mut out = Vec::new();
    let count: u64 = shape.iter().product();
    for k in 0..count {
        let (mut rest, mut flat, mut stride) = (k, 0u64, 1u64);
        for d in 0..dims.len() {
            let i = origin[d] + rest % shape[d];
            rest /= shape[d];
            flat += i * stride;
            stride *= dims[d];
        }
        out.push(all[flat as usize]);
    }
    out
}

fn check_type<T: Reference>(dir: &Path, name: &str) {
    let dims = vec![7u64, 10];
    let mut rng = 0x9e37_79b9_7f4a_7c15 ^ name.len() as u64;
    let mut values: Vec<T> = (0..70).map(|_| T::from_seed(xorshift(&mut rng))).collect();
    // The extremes in some chunks, not others; one chunk of nothing but the first (NaN for
    // floats: no min and max).
    for (k, e) in T::extremes().into_iter().enumerate() {
        values[(k * 13 + 5) % 70] = e;
    }
    for i in [61, 62, 68, 69] {
        values[i] = T::extremes()[0];
    }
    let path = dir.join(format!("{name}.ra"));
    let a = RawArray::from_shape_vec(dims.clone(), values.clone()).unwrap();
    // Chunks of 3 x 4: edge chunks clipped in both dims.
    a.write_file_with(
        &path,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![3, 4]),
    )
    .unwrap();
    let r = ArrayReader::open(&path).unwrap();
    let map = r.section().chunk_map().unwrap();
    let stats = FileStats::of(map, None).unwrap();
    assert_eq!(stats.names(), ["values"], "{name}");
    for n in 0..map.grid().count() {
        let vals = chunk_values(&values, &dims, &map.grid().origin(n), &map.grid().shape(n));
        let want = reference(&vals);
        assert_eq!(stats.chunk(n, 0), Some(want), "{name}, chunk {n}: {vals:?}");
    }
    assert_eq!(
        stats.whole(0),
        Some(reference(&values)),
        "{name}, whole file"
    );
}

#[test]
fn statistics_equal_a_reference_per_chunk_for_every_scalar_type() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    check_type::<i8>(d, "i8");
    check_type::<i16>(d, "i16");
    check_type::<i32>(d, "i32");
    check_type::<i64>(d, "i64");
    check_type::<i128>(d, "i128");
    check_type::<u8>(d, "u8");
    check_type::<u16>(d, "u16");
    check_type::<u32>(d, "u32");
    check_type::<u64>(d, "u64");
    check_type::<u128>(d, "u128");
    check_type::<f16>(d, "f16");
    check_type::<bf16>(d, "bf16");
    check_type::<f32>(d, "f32");
    check_type::<f64>(d, "f64");
}

/// Complex elements keep only a NaN count: a chunk without NaN has statistics of all zero
/// bytes, which are present (their CRC is written), not absent.
#[test]
fn complex_statistics_without_nan_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.ra");
    let mut values = vec![Complex::new(1.5f64, -2.0); 10];
    values[7] = Complex::new(0.0, f64::NAN);
    let a = RawArray::from_vec(values);
    a.write_file_with(
        &path,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![4]),
    )
    .unwrap();
    let r = ArrayReader::open(&path).unwrap();
    let stats = FileStats::of(r.section().chunk_map().unwrap(), None).unwrap();
    let none = |nan| Some(FieldStats { nan, min_max: None });
    assert_eq!(
        (0..3).map(|n| stats.chunk(n, 0)).collect::<Vec<_>>(),
        [none(0), none(1), none(0)]
    );
    assert!(stats.missing().is_empty());
    assert_eq!(stats.whole(0), none(1));
}

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Inner {
    a: i128,
    b: bf16,
}

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Outer {
    id: u32,
    inner: Inner,
    pos: [f32; 2],
    ok: bool,
}

fn outer(i: u64) -> Outer {
    Outer {
        id: 1000 + i as u32,
        inner: Inner {
            a: (i128::from(i) - 100) << 70,
            b: bf16::from_f32(if i % 17 == 3 {
                f32::NAN
            } else {
                i as f32 * 0.25
            }),
        },
        pos: [i as f32, -(i as f32)],
        ok: i.is_multiple_of(3),
    }
}

/// A record file's fields flattened (nested by path, a fixed array as one field), its last
/// chunk flushed partial (full extent: its statistics are of its records, not of the zeros
/// padding it), checked field by field against the records.
#[test]
fn record_statistics_cover_nested_fields_and_a_partial_last_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested.ra");
    let mut w = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(40)
        .create::<Outer>(&path)
        .unwrap();
    let recs: Vec<Outer> = (0..105).map(outer).collect();
    w.append_slice(&recs[..90]).unwrap();
    w.flush().unwrap(); // chunk 2 partial (10 records), then grown to 25
    w.append_slice(&recs[90..]).unwrap();
    w.finish().unwrap();
    let r = ArrayReader::open(&path).unwrap();
    let map = r.section().chunk_map().unwrap();
    let schema = r.trailer().unwrap().schema.clone();
    let stats = FileStats::of(map, schema.as_ref()).unwrap();
    assert_eq!(stats.names(), ["id", "inner.a", "inner.b", "pos", "ok"]);
    for n in 0..3u64 {
        let span = stats.chunk_elements(n).unwrap();
        assert_eq!(span, n * 40..((n + 1) * 40).min(105));
        let chunk = &recs[span.start as usize..span.end as usize];
        let ids: Vec<u32> = chunk.iter().map(|r| r.id).collect();
        let a: Vec<i128> = chunk.iter().map(|r| r.inner.a).collect();
        let b: Vec<bf16> = chunk.iter().map(|r| r.inner.b).collect();
        let pos: Vec<f32> = chunk.iter().flat_map(|r| r.pos).collect();
        let ok: Vec<u8> = chunk.iter().map(|r| u8::from(r.ok)).collect();
        assert_eq!(stats.chunk(n, 0), Some(reference(&ids)), "chunk {n} id");
        assert_eq!(stats.chunk(n, 1), Some(reference(&a)), "chunk {n} inner.a");
        assert_eq!(stats.chunk(n, 2), Some(reference(&b)), "chunk {n} inner.b");
        assert_eq!(stats.chunk(n, 3), Some(reference(&pos)), "chunk {n} pos");
        assert_eq!(stats.chunk(n, 4), Some(reference(&ok)), "chunk {n} ok");
    }
    // Queries on nested and bool fields, each against a plain filter of the records.
    let q = RecordReader::<Outer>::open(&path).unwrap();
    let cases: Vec<(Predicate, Box<dyn Fn(&Outer) -> bool>)> = vec![
        (
            Predicate::ge("inner.a", (60i128 - 100) << 70),
            Box::new(|r: &Outer| r.inner.a >= (60 - 100) << 70),
        ),
        (
            Predicate::eq("ok", true) & Predicate::lt("id", 1010),
            Box::new(|r: &Outer| r.ok && r.id < 1010),
        ),
        (
            !Predicate::lt("inner.b", 5.0),
            Box::new(|r: &Outer| !(r.inner.b.to_f32() < 5.0)),
        ),
    ];
    for (p, keep) in cases {
        let got: Vec<Outer> = q.query(&p).unwrap().map(Result::unwrap).collect();
        let want: Vec<Outer> = recs.iter().copied().filter(|r| keep(r)).collect();
        assert_eq!(got.len(), want.len(), "{p}");
        assert!(got.iter().zip(&want).all(|(a, b)| a.id == b.id), "{p}");
    }
    let q1 = q
        .query(&Predicate::ge("inner.a", (60i128 - 100) << 70))
        .unwrap();
    assert_eq!(q1.pruning().ranges(), [40..105]);
}

/// With a lossy filter the statistics are of the values stored (rounded), which a query tests:
/// a value rounded up past the original maximum is still found.
#[test]
fn statistics_of_a_lossy_filter_are_of_the_stored_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rounded.ra");
    // 0.999 with 3 mantissa bits rounds to 1.0, past every original value.
    let values: Vec<f32> = (0..64).map(|i| 0.9 + 0.099 * (i as f32 / 63.0)).collect();
    RawArray::from_vec(values)
        .write_file_with(
            &path,
            &WriteOptions::new()
                .codec(Codec::Zstd)
                .filters([Filter::BitRound(3)])
                .chunks(vec![16]),
        )
        .unwrap();
    let stored: Vec<f32> = RawArray::<f32>::read_file(&path)
        .unwrap()
        .as_slice()
        .to_vec();
    assert!(stored.contains(&1.0));
    let r = ArrayReader::open(&path).unwrap();
    let stats = FileStats::of(r.section().chunk_map().unwrap(), None).unwrap();
    for n in 0..4 {
        let chunk = &stored[n * 16..(n + 1) * 16];
        assert_eq!(
            stats.chunk(n as u64, 0),
            Some(reference(chunk)),
            "chunk {n}"
        );
    }
    let q = RecordReader::<f32>::open(&path).unwrap();
    let hits = q.query(&Predicate::ge("values", 1.0)).unwrap().count();
    assert_eq!(hits, stored.iter().filter(|&&v| v >= 1.0).count());
    assert!(hits > 0);
}

// -- random records, random predicates ------------------------------------------------------

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Row {
    a: i16,
    b: u64,
    c: f32,
    d: f64,
    e: bool,
}

/// A predicate and the plain filter it stands for, written independently of the library.
#[derive(Clone, Debug)]
enum P {
    /// column index, op index (== != < <= > >=), literal as the test's own number.
    Cmp(usize, usize, Lit),
    In(usize, Vec<Lit>),
    Between(usize, Lit, Lit),
    And(Vec<P>),
    Or(Vec<P>),
    Not(Box<P>),
}

#[derive(Clone, Copy, Debug)]
enum Lit {
    I(i64),
    F(f64),
}

const COLS: [&str; 5] = ["a", "b", "c", "d", "e"];

impl Lit {
    fn value(self) -> Value {
        match self {
            Lit::I(v) => Value::Int(v.into()),
            Lit::F(v) => Value::Float(v),
        }
    }
}

/// `x op lit` as numbers, IEEE: every value here is exact in f64 except `b`'s, which meets
/// integer literals only and compares as i128.
fn cmp_ref(r: &Row, col: usize, op: usize, lit: Lit) -> bool {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (col, lit) {
        (1, Lit::I(l)) => Some(i128::from(r.b).cmp(&i128::from(l))),
        (1, Lit::F(_)) => unreachable!("b meets integer literals"),
        (_, lit) => {
            let x = match col {
                0 => f64::from(r.a),
                2 => f64::from(r.c),
                3 => r.d,
                _ => f64::from(u8::from(r.e)),
            };
            let l = match lit {
                Lit::I(v) => v as f64,
                Lit::F(v) => v,
            };
            x.partial_cmp(&l)
        }
    };
    match ord {
        None => op == 1,
        Some(o) => match op {
            0 => o.is_eq(),
            1 => o.is_ne(),
            2 => o.is_lt(),
            3 => o.is_le(),
            4 => o.is_gt(),
            _ => o.is_ge(),
        },
    }
}

impl P {
    fn eval(&self, r: &Row) -> bool {
        match self {
            P::Cmp(c, op, l) => cmp_ref(r, *c, *op, *l),
            P::In(c, ls) => ls.iter().any(|l| cmp_ref(r, *c, 0, *l)),
            P::Between(c, lo, hi) => cmp_ref(r, *c, 5, *lo) && cmp_ref(r, *c, 3, *hi),
            P::And(ps) => ps.iter().all(|p| p.eval(r)),
            P::Or(ps) => ps.iter().any(|p| p.eval(r)),
            P::Not(p) => !p.eval(r),
        }
    }

    fn predicate(&self) -> Predicate {
        use rawarray_serde::query::Op;
        let ops = [Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge];
        match self {
            P::Cmp(c, op, l) => Predicate::compare(COLS[*c], ops[*op], l.value()),
            P::In(c, ls) => Predicate::is_in(COLS[*c], ls.iter().map(|l| l.value())),
            P::Between(c, lo, hi) => Predicate::between(COLS[*c], lo.value(), hi.value()),
            P::And(ps) => Predicate::And(ps.iter().map(P::predicate).collect()),
            P::Or(ps) => Predicate::Or(ps.iter().map(P::predicate).collect()),
            P::Not(p) => !p.predicate(),
        }
    }
}

fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    // Columns that drift with the record index (so chunks differ and pruning happens), with
    // the float specials sprinkled in.
    // NaN rarely, so that many chunks hold none and can be skipped.
    let special = prop_oneof![
        60 => (-50.0f64..50.0).prop_map(|v| (v * 4.0).round() / 4.0),
        1 => Just(f64::NAN),
        6 => Just(-0.0),
        6 => Just(0.0),
        2 => Just(f64::INFINITY),
        2 => Just(f64::NEG_INFINITY),
    ];
    prop::collection::vec(
        (-3i16..4, 0u64..3, special.clone(), special, any::<bool>()),
        1..400,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (da, db, c, d, e))| {
                let i = i as i64;
                Row {
                    a: (i / 3 + i64::from(da)) as i16,
                    b: (i as u64 * 1_000_000_007) ^ (db << 61),
                    // (-0.0 + 0.0 is 0.0: the first chunks keep their -0.0.)
                    c: if i < 40 {
                        c as f32
                    } else {
                        c as f32 + (i / 40) as f32
                    },
                    d: d - (i / 25) as f64,
                    e,
                }
            })
            .collect()
    })
}

fn lit_for(col: usize) -> BoxedStrategy<Lit> {
    match col {
        1 => prop_oneof![
            (0i64..400_000_000_000).prop_map(Lit::I),
            Just(Lit::I(0)),
            Just(Lit::I(-1)),
        ]
        .boxed(),
        0 => prop_oneof![
            (-5i64..140).prop_map(Lit::I),
            (-10i64..280).prop_map(|v| Lit::F(v as f64 / 2.0)),
        ]
        .boxed(),
        4 => (0i64..2).prop_map(Lit::I).boxed(),
        _ => prop_oneof![
            6 => (-60i64..60).prop_map(|v| Lit::F(v as f64 / 2.0)),
            2 => (-20i64..20).prop_map(Lit::I),
            2 => Just(Lit::F(-0.0)),
            2 => Just(Lit::F(0.0)),
            1 => Just(Lit::I(0)),
            1 => Just(Lit::F(f64::NAN)),
            1 => Just(Lit::F(f64::INFINITY)),
        ]
        .boxed(),
    }
}

fn pred_strategy() -> impl Strategy<Value = P> {
    let atom = (0usize..5).prop_flat_map(|c| {
        prop_oneof![
            (0usize..6, lit_for(c)).prop_map(move |(op, l)| P::Cmp(c, op, l)),
            prop::collection::vec(lit_for(c), 0..4).prop_map(move |ls| P::In(c, ls)),
            (lit_for(c), lit_for(c)).prop_map(move |(lo, hi)| P::Between(c, lo, hi)),
        ]
    });
    atom.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(P::And),
            prop::collection::vec(inner.clone(), 0..3).prop_map(P::Or),
            inner.prop_map(|p| P::Not(Box::new(p))),
        ]
    })
}

fn write_rows(path: &Path, rows: &[Row], per_chunk: u64, statistics: bool) {
    let opts = RecordOptions::new().storage(
        WriteOptions::chunked()
            .codec(Codec::Lz4)
            .chunks(vec![per_chunk])
            .statistics(statistics),
    );
    let mut w = opts.create::<Row>(path).unwrap();
    // Flushed in pieces, so that last chunks grow and are replaced.
    for piece in rows.chunks(37) {
        w.append_slice(piece).unwrap();
        w.flush().unwrap();
    }
    w.finish().unwrap();
}

fn query_rows(path: &Path, p: &Predicate) -> (Vec<Row>, u64, u64) {
    let r = RecordReader::<Row>::open(path).unwrap();
    let q = r.query(p).unwrap();
    let (chunks, read) = (q.pruning().chunks(), q.pruning().chunks_read());
    (q.map(Result::unwrap).collect(), chunks, read)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Pruned (statistics) and unpruned (none) queries both equal the plain filter, and a
    /// query on a column whose chunks drift skips some of them.
    #[test]
    fn pruned_and_unpruned_queries_equal_a_plain_filter(
        rows in rows_strategy(),
        preds in prop::collection::vec(pred_strategy(), 1..6),
        per_chunk in 8u64..64,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (with, without) = (dir.path().join("with.ra"), dir.path().join("without.ra"));
        write_rows(&with, &rows, per_chunk, true);
        write_rows(&without, &rows, per_chunk, false);
        for p in &preds {
            let predicate = p.predicate();
            let want: Vec<Row> = rows.iter().copied().filter(|r| p.eval(r)).collect();
            let (pruned, chunks, read) = query_rows(&with, &predicate);
            let (unpruned, chunks2, read2) = query_rows(&without, &predicate);
            // By value: a NaN row equals itself here.
            let same = |a: &[Row], b: &[Row]| a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| format!("{x:?}") == format!("{y:?}"));
            prop_assert!(same(&pruned, &want), "{predicate}: {} rows, want {}", pruned.len(), want.len());
            prop_assert!(same(&unpruned, &want), "{predicate} (no statistics)");
            prop_assert_eq!(chunks, chunks2);
            prop_assert!(read <= chunks);
            prop_assert_eq!(read2, chunks, "no statistics: every chunk is read");
        }
        // A window of `a` (which drifts with the index) skips chunks.
        if rows.len() as u64 > 4 * per_chunk {
            let (_, chunks, read) = query_rows(&with, &Predicate::between("a", 0, 1));
            prop_assert!(read < chunks, "{read} of {chunks} chunks read");
        }
    }
}

/// A chunk whose values all fail a comparison but that holds a NaN is read for the negated
/// comparison (numpy's `~(x < 100)` is true for NaN), and `!=` finds the NaN.
#[test]
fn nan_rows_are_found_by_negated_comparisons() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nan.ra");
    let rows: Vec<Row> = (0..64)
        .map(|i| Row {
            a: i as i16,
            b: 0,
            c: if i == 37 { f32::NAN } else { 1.0 },
            d: if i == 5 { f64::NAN } else { -f64::from(i) },
            e: false,
        })
        .collect();
    write_rows(&path, &rows, 16, true);
    let ids = |p: Predicate| -> Vec<i16> { query_rows(&path, &p).0.iter().map(|r| r.a).collect() };
    assert_eq!(ids(!Predicate::lt("d", 100.0)), [5]);
    assert_eq!(ids(!Predicate::between("d", -100.0, 0.0)), [5]);
    assert_eq!(ids(Predicate::ne("c", 1.0)), [37]);
    assert_eq!(ids(!Predicate::eq("c", 1)), [37]);
    assert_eq!(ids(!Predicate::is_in("c", [1.0, 2.0])), [37]);
    assert_eq!(ids(Predicate::lt("d", -62.5)), [63]);
    // Chunks 1 and 2 are skipped; chunk 0 is read for its NaN (which Arrow's comparisons
    // put below every number when its sign bit is set).
    let (_, chunks, read) = query_rows(&path, &Predicate::lt("d", -62.5));
    assert_eq!((chunks, read), (4, 2));
}

// -- damaged statistics -----------------------------------------------------------------------

/// Where chunk `n`'s index entry is in the file (segment 0 holds them all here), and its length.
fn entry_span(path: &Path, n: u64) -> Range<usize> {
    let r = ArrayReader::open(path).unwrap();
    let map = r.section().chunk_map().unwrap();
    let base = Header::decode_any(&fs::read(path).unwrap())
        .unwrap()
        .encoded_len();
    let len = map.config().entry_len();
    let at = base as u64 + map.config().segments[0] + n * len;
    at as usize..(at + len) as usize
}

fn query_file(path: &Path, p: &Predicate) -> rawarray_serde::Result<Vec<Row>> {
    let r = RecordReader::<Row>::open(path)?;
    r.query(p)?.collect()
}

#[test]
fn damaged_statistics_are_read_as_absent_never_missing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ra");
    let rows: Vec<Row> = (0..200)
        .map(|i| Row {
            a: i as i16,
            b: i as u64,
            c: i as f32,
            d: -f64::from(i),
            e: i % 2 == 0,
        })
        .collect();
    // One flush: every chunk written whole, none replaced.
    let mut w = RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(20)
        .create::<Row>(&path)
        .unwrap();
    w.append_slice(&rows).unwrap();
    w.finish().unwrap();
    let clean = fs::read(&path).unwrap();
    let preds = [
        Predicate::between("a", 45, 47),
        Predicate::gt("d", -3.0),
        Predicate::eq("b", 199) | Predicate::lt("c", 1.0),
    ];
    let truth: Vec<Vec<Row>> = preds
        .iter()
        .map(|p| query_file(&path, p).unwrap())
        .collect();
    assert_eq!(truth[0].len(), 3);

    // Statistics bytes of chunk 2 changed, their CRC not fixed up: unreadable, reported, and
    // the chunk is read (the query finds what it holds).
    let span = entry_span(&path, 2);
    let mut bytes = clean.clone();
    bytes[span.start + 40] ^= 0x10; // inside the first field's min
    fs::write(&path, &bytes).unwrap();
    let r = ArrayReader::open(&path).unwrap();
    assert_eq!(
        r.section().warnings(),
        [Warning::StatisticsDamaged { chunk: 2 }]
    );
    let rr = RecordReader::<Row>::open(&path).unwrap();
    let q = rr.query(&Predicate::between("a", 45, 47)).unwrap();
    assert_eq!(q.pruning().ranges(), [40..60]);
    for (p, want) in preds.iter().zip(&truth) {
        assert_eq!(&query_file(&path, p).unwrap(), want, "{p}");
    }

    // Every single-bit flip in the entries of chunks 0 and 9: the same rows, or an error.
    let mut outcomes = [0usize; 2];
    for n in [0u64, 9] {
        let span = entry_span(&path, n);
        for byte in span.clone() {
            for bit in [0u8, 3, 7] {
                let mut bytes = clean.clone();
                bytes[byte] ^= 1 << bit;
                fs::write(&path, &bytes).unwrap();
                let got: rawarray_serde::Result<Vec<Vec<Row>>> =
                    preds.iter().map(|p| query_file(&path, p)).collect();
                match got {
                    Ok(got) => {
                        assert_eq!(got, truth, "entry {n} byte {} bit {bit}", byte - span.start);
                        outcomes[0] += 1;
                    }
                    Err(_) => outcomes[1] += 1,
                }
            }
        }
    }
    // Flips in the statistics are read as absent; flips in the entry itself are damage.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

// -- killed writers ---------------------------------------------------------------------------

#[derive(RaRecord, Clone, Copy, Debug, PartialEq)]
struct Keyed {
    key: u64,
    x: f32,
    n: i8,
}

/// Record `i`: a key that jumps about (so that chunks' ranges overlap), values of every sign.
fn keyed(i: u64) -> Keyed {
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    Keyed {
        key: h >> 20,
        x: match i % 11 {
            3 => -0.0,
            7 => f32::INFINITY,
            _ => (h % 2001) as f32 / 8.0 - 125.0,
        },
        n: (h >> 56) as i8,
    }
}

const CHILD: &str = "RA_QUERY_CRASH_CHILD";

/// Records per flush when the file holds `n`: every size from 1 to 3 chunks.
fn flush_size(n: u64) -> u64 {
    1 + n.wrapping_mul(2_654_435_761) % 96
}

/// The child role of the crash test: appends and flushes until killed, reporting the records
/// of each completed flush in a side file.
#[test]
fn query_crash_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let (path, side) = spec.split_once('\n').unwrap();
    let opts = RecordOptions::new().codec(Codec::Zstd).chunk_records(32);
    let mut w = if Path::new(path).exists() {
        opts.open::<Keyed>(path).unwrap()
    } else {
        opts.create::<Keyed>(path).unwrap()
    };
    let report = common::crash::reporter(side);
    let mut n = w.len();
    loop {
        let b = flush_size(n);
        w.append_slice(&(n..n + b).map(keyed).collect::<Vec<_>>())
            .unwrap();
        w.flush().unwrap();
        n += b;
        report(n);
        if n > 6000 {
            std::thread::sleep(std::time::Duration::from_secs(10));
        }
    }
}

/// A record file appended by flushes of every size, SIGKILLed at random moments (and reopened
/// by the next writer, which continues its partial last chunk): after each kill, every
/// committed record's chunk has statistics that hold its values, and a query for each record's
/// exact key (and for its exact `x`) finds it.
#[cfg(unix)]
#[test]
fn killed_writers_never_leave_statistics_that_exclude_a_committed_record() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let (dir, path, side) = common::crash::scratch("kill.ra");
    let mut below = common::crash::seeded("query crash test");
    let read_side = || common::crash::flushed(&side);
    let mut checked = 0u64;
    for round in 0..24 {
        let before = read_side();
        let err_path = dir.path().join("child.err");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "query_crash_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, format!("{}\n{}", path.display(), side.display()))
            .stdout(Stdio::null())
            .stderr(fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while read_side() == before && round % 4 != 3 {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "child exited ({status}):\n{}",
                    fs::read_to_string(&err_path).unwrap()
                );
            }
            assert!(started.elapsed() < Duration::from_secs(60), "no progress");
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(below(8000)));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status}");
        if !path.exists() {
            continue;
        }
        let r = RecordReader::<Keyed>::open(&path).unwrap();
        let n = r.len() as u64;
        assert!(
            n >= read_side(),
            "lost flushed records: {n} < {}",
            read_side()
        );
        // Statistics: every committed record's values lie within its chunk's.
        let ar = ArrayReader::open(&path).unwrap();
        let map = ar.section().chunk_map().unwrap();
        let stats = FileStats::of(map, ar.trailer().and_then(|t| t.schema.as_ref())).unwrap();
        assert!(
            stats.missing().is_empty(),
            "chunks without statistics: {:?}",
            stats.missing()
        );
        for i in 0..n {
            let rec = keyed(i);
            let k = i / 32;
            let within = |f: usize, v: Value| {
                let s = stats.chunk(k, f).unwrap();
                let (lo, hi) = s.min_max.unwrap();
                rawarray_serde::query::compare(lo, v).unwrap().is_le()
                    && rawarray_serde::query::compare(v, hi).unwrap().is_le()
            };
            assert!(within(0, Value::Uint(rec.key.into())), "record {i} key");
            assert!(within(1, Value::Float(rec.x.into())), "record {i} x");
            assert!(within(2, Value::Int(rec.n.into())), "record {i} n");
        }
        // Queries by exact key and exact x: each committed record is found (a sample per
        // round, every record over the rounds).
        let step = 1 + n / 300;
        for i in (round as u64 % step..n).step_by(step as usize) {
            let rec = keyed(i);
            let hits: Vec<Keyed> = r
                .query(&Predicate::eq("key", rec.key))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert!(hits.contains(&rec), "record {i}: key {} not found", rec.key);
            let by_x = r
                .query(&(Predicate::eq("x", rec.x) & Predicate::eq("n", rec.n)))
                .unwrap()
                .map(Result::unwrap)
                .any(|h| h == rec);
            assert!(by_x, "record {i}: x {} not found", rec.x);
            checked += 1;
        }
        if n > 6000 {
            // The child stops there: the next starts a new file.
            drop((r, ar));
            fs::remove_file(&path).unwrap();
            fs::remove_file(&side).unwrap();
        }
    }
    eprintln!("{checked} records found by their key");
    assert!(checked > 1000);
}

/// A header may claim far more chunks than its file holds (never-written chunks cost no
/// bytes): the statistics and the pruning of a query cost what the index read from the file
/// holds, not the claimed count. Here 8 `u16` in two written chunks of 4, the dim then poked
/// to 2^40 (2^38 chunks): before, `FileStats::of` built an entry per claimed chunk (hours and
/// terabytes) and `Pruning` visited each.
#[test]
fn statistics_and_pruning_cost_the_index_not_the_claimed_chunk_count() {
    use rawarray_serde::query::{Pruning, RowFilter};
    use rawarray_serde::section::Section;
    let a = RawArray::from_vec((0..8u16).collect());
    let mut bytes = Vec::new();
    a.write_to_with(
        &mut bytes,
        &WriteOptions::new().codec(Codec::Zstd).chunks(vec![4]),
    )
    .unwrap();
    // The one dim, word 6 of the header.
    bytes[48..56].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let h = Header::decode_any(&bytes).unwrap();
    let s = Section::open(&h, &bytes[..]).unwrap();
    let map = s.chunk_map().unwrap();
    let guard = std::time::Instant::now();
    let stats = FileStats::of(map, None).unwrap();
    assert_eq!(stats.chunk_count(), 1 << 38);
    assert_eq!(
        stats.chunk(1, 0).unwrap().min_max,
        Some((Value::Uint(4), Value::Uint(7)))
    );
    assert_eq!(stats.chunk(2, 0), None);
    assert_eq!(stats.chunk((1 << 38) - 1, 0), None);
    assert_eq!(stats.chunk(1 << 38, 0), None);
    assert_eq!(
        stats.chunk_elements(1 << 37),
        Some((1 << 39)..(1 << 39) + 4)
    );
    assert_eq!(stats.chunk_elements(1 << 38), None);
    // The never-written chunks read as zeros.
    assert_eq!(
        stats.whole(0).unwrap().min_max,
        Some((Value::Uint(0), Value::Uint(7)))
    );
    // The two written chunks hold nothing over 100; the rest have no statistics and are read.
    let f = RowFilter::new(&Predicate::gt("values", 100u16), &u16::layout()).unwrap();
    let p = Pruning::new(&f, &h, Some(map));
    assert_eq!(p.ranges(), [8..1 << 40]);
    assert_eq!((p.chunks(), p.chunks_read()), (1 << 38, (1 << 38) - 2));
    let f = RowFilter::new(&Predicate::lt("values", 3u16), &u16::layout()).unwrap();
    let p = Pruning::new(&f, &h, Some(map));
    assert_eq!(p.ranges(), [0..4, 8..1 << 40]);
    // A hang guard, not a timing: the old cost was days.
    assert!(guard.elapsed() < std::time::Duration::from_secs(60));
}
