//! Per-chunk statistics (doc/chunked.md section 5.4): for each statistics field, the NaN count
//! and the least and greatest value over a chunk's elements, stored in the chunk's index entry.
//! Queries use them to skip chunks; nothing ever takes a value from them.
//!
//! ```
//! use rawarray_serde::codec::stats::{compute, parse, StatField, Value};
//! use rawarray_serde::ElType;
//! let field = StatField::scalar(ElType::Float, 4);
//! let raw: Vec<u8> = [3.5f32, f32::NAN, -1.0, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let bytes = compute(&[field], &raw, 4, false);
//! let s = &parse(&[field], &bytes)[0];
//! assert_eq!(s.nan, 1);
//! assert_eq!(s.min_max, Some((Value::Float(-1.0), Value::Float(8.0))));
//! ```

use crate::eltype::ElType;
use crate::error::Result;
use crate::layout::Layout;

use crate::error::chunk_layout as bad;

/// The most statistics fields a version 2 config holds.
pub const MAX_STAT_FIELDS: usize = 4096;

/// A part of each element that statistics are kept for (16 bytes in the config).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatField {
    /// Byte offset of its first scalar in an element.
    pub offset: u32,
    /// Scalars in the field (a fixed-size array field has several, kept as a whole).
    pub count: u32,
    /// The scalars' element type (int, uint, float, complex or bfloat16).
    pub eltype: ElType,
    /// Bytes of each scalar (of a whole complex number for eltype 4).
    pub width: u16,
}

/// A scalar value of a statistic, exact for every type statistics are kept for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A signed integer.
    Int(i128),
    /// An unsigned integer.
    Uint(u128),
    /// A float (float16, bfloat16 and float32 convert to it exactly).
    Float(f64),
}

/// The statistics of one field over one chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldStats {
    /// Scalars that are NaN (floats; complex numbers with a NaN part).
    pub nan: u64,
    /// The least and greatest scalars, NaN ignored; `None` when every scalar is NaN, there is
    /// none, or the type keeps no order (complex).
    pub min_max: Option<(Value, Value)>,
}

impl StatField {
    /// The one field of a plain array of `eltype`/`elbyte`.
    pub fn scalar(eltype: ElType, elbyte: u64) -> StatField {
        StatField {
            offset: 0,
            count: 1,
            eltype,
            width: elbyte as u16,
        }
    }

    /// Whether statistics can be kept for scalars of this type: ints of 1 to 16 bytes,
    /// float16/32/64, bfloat16, complex of float16/32/64 parts.
    pub fn supports(eltype: ElType, width: u64) -> bool {
        match eltype {
            ElType::Int | ElType::Uint => matches!(width, 1 | 2 | 4 | 8 | 16),
            ElType::Float => matches!(width, 2 | 4 | 8),
            ElType::BFloat16 => width == 2,
            ElType::Complex => matches!(width, 4 | 8 | 16),
            ElType::User => false,
        }
    }

    /// The fields of elements of `eltype`/`elbyte` with record schema `layout`, if any: one
    /// for a plain scalar, one per scalar field of a record (nested records flattened, a
    /// fixed-size array of scalars one field of its `count` scalars, bytes and arrays of
    /// records skipped).
    pub fn for_elements(eltype: ElType, elbyte: u64, layout: Option<&Layout>) -> Vec<StatField> {
        let mut out = Vec::new();
        match layout {
            Some(l) if eltype == ElType::User => flatten(l, 0, &mut out),
            _ if StatField::supports(eltype, elbyte) => out.push(StatField::scalar(eltype, elbyte)),
            _ => {}
        }
        // The schema comes from the file's trailer: a field that does not lie inside the
        // element (a damaged or hostile schema) gets no statistics, rather than a read past
        // the element's bytes.
        out.retain(|f| u64::from(f.offset) + u64::from(f.count) * u64::from(f.width) <= elbyte);
        out.truncate(MAX_STAT_FIELDS);
        out
    }

    /// Bytes of min and max each: the scalar's width, or 0 for complex (no order).
    pub fn min_max_width(&self) -> usize {
        if self.eltype == ElType::Complex {
            0
        } else {
            usize::from(self.width)
        }
    }

    /// Bytes of this field's statistics record: `8 + round8(2 x min_max_width)`.
    pub fn record_len(&self) -> u64 {
        8 + (2 * self.min_max_width() as u64).div_ceil(8) * 8
    }

    /// The field's 16 config bytes.
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&self.offset.to_le_bytes());
        b[4..8].copy_from_slice(&self.count.to_le_bytes());
        b[8..10].copy_from_slice(&(self.eltype.code() as u16).to_le_bytes());
        b[10..12].copy_from_slice(&self.width.to_le_bytes());
        b
    }

    /// Field `k` from its 16 config bytes, checked against elements of `elbyte` bytes.
    pub fn decode(b: &[u8], k: usize, elbyte: u64) -> Result<StatField> {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u16_at = |i: usize| u16::from_le_bytes(b[i..i + 2].try_into().expect("2 bytes"));
        let field = || format!("config statistics field {k}");
        let code = u16_at(8);
        let eltype = ElType::from_code(u64::from(code))
            .map_err(|_| bad(&field(), "eltype 1 ..= 5", code))?;
        let (offset, count, width) = (u32_at(0), u32_at(4), u16_at(10));
        if !StatField::supports(eltype, u64::from(width)) {
            return Err(bad(
                &field(),
                "a scalar type statistics are kept for",
                format!("eltype {code}, width {width}"),
            ));
        }
        let end = u64::from(offset) + u64::from(count) * u64::from(width);
        if count == 0 || end > elbyte || u32_at(12) != 0 {
            return Err(bad(
                &field(),
                format!("1 or more scalars inside an element of {elbyte} bytes, reserved 0"),
                format!(
                    "offset {offset}, count {count}, width {width}, reserved {}",
                    u32_at(12)
                ),
            ));
        }
        Ok(StatField {
            offset,
            count,
            eltype,
            width,
        })
    }
}

fn flatten(layout: &Layout, base: u64, out: &mut Vec<StatField>) {
    let Ok(at) = u32::try_from(base) else { return };
    match layout {
        Layout::Scalar { eltype, elbyte, .. } if StatField::supports(*eltype, *elbyte) => {
            out.push(StatField {
                offset: at,
                count: 1,
                eltype: *eltype,
                width: *elbyte as u16,
            });
        }
        Layout::Record { fields, .. } => {
            for f in fields {
                flatten(&f.layout, base + f.offset, out);
            }
        }
        Layout::Array { .. } => {
            // An array (of arrays) of one scalar type is one field of all its scalars.
            let mut count = 1u64;
            let mut item = layout;
            while let Layout::Array { len, item: inner } = item {
                count = count.saturating_mul(*len);
                item = inner;
            }
            if let Layout::Scalar { eltype, elbyte, .. } = item {
                if StatField::supports(*eltype, *elbyte) && count > 0 {
                    if let Ok(count) = u32::try_from(count) {
                        out.push(StatField {
                            offset: at,
                            count,
                            eltype: *eltype,
                            width: *elbyte as u16,
                        });
                    }
                }
            }
        }
        Layout::Scalar { .. } => {}
    }
}

/// Running statistics of one field.
#[derive(Clone, Copy)]
struct Acc {
    nan: u64,
    min_max: Option<(Value, Value)>,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            nan: 0,
            min_max: None,
        }
    }

    fn merge(&mut self, lo: Value, hi: Value) {
        self.min_max = Some(match self.min_max {
            None => (lo, hi),
            Some((a, b)) => (
                if less(lo, a) { lo } else { a },
                if less(b, hi) { hi } else { b },
            ),
        });
    }
}

fn less(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x < y,
        (Value::Uint(x), Value::Uint(y)) => x < y,
        (Value::Float(x), Value::Float(y)) => x < y,
        _ => false,
    }
}

/// Independent accumulators a field of contiguous scalars is folded into, so that the loop
/// over it vectorizes (their order of combining does not matter: doc/chunked.md section 5.4
/// lets either zero be stored).
const LANES: usize = 8;

/// Folds `step` over the scalars of `N` bytes of one field (`per` of them at byte `start` of
/// each whole element of `elbyte` bytes in `raw`), in one pass and without allocating: a field
/// that is the whole element (a plain array) is one run of scalars, folded in [`LANES`]
/// accumulators joined by `join`; a field of a record is read element by element.
#[inline(always)]
fn fold_scalars<const N: usize, A: Copy>(
    raw: &[u8],
    elbyte: usize,
    (start, per): (usize, usize),
    init: A,
    step: impl Fn(A, [u8; N]) -> A,
    join: impl Fn(A, A) -> A,
) -> A {
    let span = per * N;
    let whole = &raw[..raw.len() / elbyte * elbyte];
    let scalar = |b: &[u8]| -> [u8; N] { b.try_into().expect("N bytes") };
    if span == elbyte {
        let mut lanes = [init; LANES];
        let mut blocks = whole.chunks_exact(N * LANES);
        for block in &mut blocks {
            for (lane, b) in lanes.iter_mut().zip(block.chunks_exact(N)) {
                *lane = step(*lane, scalar(b));
            }
        }
        let rest = blocks
            .remainder()
            .chunks_exact(N)
            .fold(init, |a, b| step(a, scalar(b)));
        lanes.into_iter().fold(rest, join)
    } else {
        let mut acc = init;
        for el in whole.chunks_exact(elbyte) {
            for b in el[start..start + span].chunks_exact(N) {
                acc = step(acc, scalar(b));
            }
        }
        acc
    }
}

/// The least and greatest float and the NaN count of a run of float scalars (`whole`, each
/// `N` bytes read by `conv`), the fold of [`fold_scalars`] over a plain array of floats: the
/// same scalars in the same [`LANES`] lanes, joined in the same order, so the same zero is kept.
/// The lanes are arrays of floats and of `u32` counts rather than of tuples, which the
/// compiler turns into vector compares and selects; a lane of tuples with a `u64` count it
/// left scalar (about 1 GB/s on f32, in the `lz4` codec's profile the largest cost after LZ4).
macro_rules! float_run {
    ($name:ident, $t:ty) => {
        fn $name<const N: usize>(whole: &[u8], conv: impl Fn([u8; N]) -> $t) -> ($t, $t, u64) {
            let step = |(lo, hi, nan): ($t, $t, u64), v: $t| {
                (
                    if v < lo { v } else { lo },
                    if v > hi { v } else { hi },
                    nan + u64::from(v.is_nan()),
                )
            };
            let mut lo = [<$t>::INFINITY; LANES];
            let mut hi = [<$t>::NEG_INFINITY; LANES];
            let mut nan = 0u64;
            let full = whole.len() / (N * LANES) * (N * LANES);
            // The counts are added up every 2^24 steps, before a `u32` can overflow.
            for part in whole[..full].chunks(N * LANES << 24) {
                let mut count = [0u32; LANES];
                for block in part.chunks_exact(N * LANES) {
                    for k in 0..LANES {
                        let v = conv(block[k * N..(k + 1) * N].try_into().expect("N bytes"));
                        lo[k] = if v < lo[k] { v } else { lo[k] };
                        hi[k] = if v > hi[k] { v } else { hi[k] };
                        count[k] += u32::from(v.is_nan());
                    }
                }
                nan += count.iter().map(|&c| u64::from(c)).sum::<u64>();
            }
            let rest = whole[full..]
                .chunks_exact(N)
                .fold((<$t>::INFINITY, <$t>::NEG_INFINITY, 0), |a, b| {
                    step(a, conv(b.try_into().expect("N bytes")))
                });
            let (l, h, n) = (0..LANES).fold(rest, |(l, h, n), k| {
                (
                    if lo[k] < l { lo[k] } else { l },
                    if hi[k] > h { hi[k] } else { h },
                    n,
                )
            });
            (l, h, n + nan)
        }
    };
}

float_run!(float_run_f32, f32);
float_run!(float_run_f64, f64);

/// Statistics of one field over the whole elements of `raw` (elements of `elbyte` bytes).
fn field_stats(f: &StatField, raw: &[u8], elbyte: usize, big_endian: bool) -> Acc {
    let mut acc = Acc::new();
    let at = (f.offset as usize, f.count as usize);
    let scalars = (raw.len() / elbyte) as u64 * u64::from(f.count);
    // Integers: the least and greatest, in the scalar's own type.
    macro_rules! ints {
        ($t:ty, $wrap:ident) => {{
            const N: usize = std::mem::size_of::<$t>();
            let step = |(lo, hi): ($t, $t), v: $t| (lo.min(v), hi.max(v));
            let run = |conv: fn([u8; N]) -> $t| {
                fold_scalars::<N, _>(
                    raw,
                    elbyte,
                    at,
                    (<$t>::MAX, <$t>::MIN),
                    |a, b| step(a, conv(b)),
                    |(lo, hi), (l, h)| (lo.min(l), hi.max(h)),
                )
            };
            let (lo, hi) = if big_endian {
                run(<$t>::from_be_bytes)
            } else {
                run(<$t>::from_le_bytes)
            };
            if scalars > 0 {
                acc.min_max = Some((Value::$wrap(lo.into()), Value::$wrap(hi.into())));
            }
        }};
    }
    // Floats: NaNs counted, the least and greatest of the others in `$t` (exact for the type
    // read: f16 and bf16 widen to f32 exactly). A NaN compares false, so it never replaces a
    // bound: the selects below are branch-free.
    macro_rules! floats {
        ($n:literal, $t:ty, $run:ident, $conv:expr) => {{
            let step = |(lo, hi, nan): ($t, $t, u64), v: $t| {
                (
                    if v < lo { v } else { lo },
                    if v > hi { v } else { hi },
                    nan + u64::from(v.is_nan()),
                )
            };
            let join = |(lo, hi, nan): ($t, $t, u64), (l, h, n): ($t, $t, u64)| {
                (
                    if l < lo { l } else { lo },
                    if h > hi { h } else { hi },
                    nan + n,
                )
            };
            let conv = $conv;
            let init = (<$t>::INFINITY, <$t>::NEG_INFINITY, 0u64);
            let whole = &raw[..raw.len() / elbyte * elbyte];
            let (lo, hi, nan) = if at.1 * $n == elbyte && big_endian {
                $run(whole, |mut b: [u8; $n]| {
                    b.reverse();
                    conv(b)
                })
            } else if at.1 * $n == elbyte {
                $run(whole, conv)
            } else if big_endian {
                fold_scalars::<$n, _>(
                    raw,
                    elbyte,
                    at,
                    init,
                    |a, mut b| {
                        b.reverse();
                        step(a, conv(b))
                    },
                    join,
                )
            } else {
                fold_scalars::<$n, _>(raw, elbyte, at, init, |a, b| step(a, conv(b)), join)
            };
            acc.nan = nan;
            // Some scalar was not NaN: the bounds moved (to it, or one of them was it).
            if nan < scalars {
                acc.min_max = Some((Value::Float(f64::from(lo)), Value::Float(f64::from(hi))));
            }
        }};
    }
    // Complex numbers: those with a NaN part counted (they keep no order).
    macro_rules! complex {
        ($n:literal, $part:ty) => {{
            const P: usize = $n / 2;
            let nan = |b: [u8; P]| {
                if big_endian {
                    <$part>::from_be_bytes(b).is_nan()
                } else {
                    <$part>::from_le_bytes(b).is_nan()
                }
            };
            acc.nan = fold_scalars::<$n, _>(
                raw,
                elbyte,
                at,
                0u64,
                |a, b: [u8; $n]| {
                    let (re, im) = b.split_at(P);
                    let (re, im) = (re.try_into().expect("P"), im.try_into().expect("P"));
                    a + u64::from(nan(re) || nan(im))
                },
                |a, b| a + b,
            );
        }};
    }
    match (f.eltype, usize::from(f.width)) {
        (ElType::Int, 1) => ints!(i8, Int),
        (ElType::Int, 2) => ints!(i16, Int),
        (ElType::Int, 4) => ints!(i32, Int),
        (ElType::Int, 8) => ints!(i64, Int),
        (ElType::Int, 16) => ints!(i128, Int),
        (ElType::Uint, 1) => ints!(u8, Uint),
        (ElType::Uint, 2) => ints!(u16, Uint),
        (ElType::Uint, 4) => ints!(u32, Uint),
        (ElType::Uint, 8) => ints!(u64, Uint),
        (ElType::Uint, 16) => ints!(u128, Uint),
        (ElType::Float, 2) => floats!(2, f32, float_run_f32, |b: [u8; 2]| {
            half::f16::from_le_bytes(b).to_f32()
        }),
        (ElType::Float, 4) => floats!(4, f32, float_run_f32, f32::from_le_bytes),
        (ElType::Float, 8) => floats!(8, f64, float_run_f64, f64::from_le_bytes),
        (ElType::BFloat16, 2) => {
            floats!(2, f32, float_run_f32, |b: [u8; 2]| {
                half::bf16::from_le_bytes(b).to_f32()
            });
        }
        (ElType::Complex, 4) => complex!(4, half::f16),
        (ElType::Complex, 8) => complex!(8, f32),
        (ElType::Complex, 16) => complex!(16, f64),
        _ => {}
    }
    acc
}

/// The statistics bytes of a chunk whose raw bytes are `raw` (whole elements of `elbyte`
/// bytes, in the file's byte order): one record per field, in order.
pub fn compute(fields: &[StatField], raw: &[u8], elbyte: u64, big_endian: bool) -> Vec<u8> {
    let mut folder = Folder::new(fields, elbyte, big_endian);
    folder.fold(raw);
    folder.finish()
}

/// Statistics folded piece by piece: a chunk's blocks, each as it is encoded, while its bytes
/// are still in the processor's cache (a separate pass over the chunk read it from memory
/// once more, 13% of an lz4 write). The bytes [`Folder::finish`] gives do not depend on how
/// the elements were cut into pieces nor in which order they came: counts add up, and the
/// least and greatest values are unique but for the sign of a zero, which
/// [`encode_record`] makes `+0.0` always.
pub(crate) struct Folder<'a> {
    fields: &'a [StatField],
    elbyte: usize,
    big_endian: bool,
    accs: Vec<Acc>,
}

impl<'a> Folder<'a> {
    /// Nothing folded yet, for elements of `elbyte` bytes in the given byte order.
    pub(crate) fn new(fields: &'a [StatField], elbyte: u64, big_endian: bool) -> Folder<'a> {
        Folder {
            fields,
            elbyte: elbyte as usize,
            big_endian,
            accs: vec![Acc::new(); fields.len()],
        }
    }

    /// Adds the whole elements of `raw`.
    pub(crate) fn fold(&mut self, raw: &[u8]) {
        for (f, acc) in self.fields.iter().zip(&mut self.accs) {
            let piece = field_stats(f, raw, self.elbyte, self.big_endian);
            acc.nan += piece.nan;
            if let Some((lo, hi)) = piece.min_max {
                acc.merge(lo, hi);
            }
        }
    }

    /// Forgets what was folded (a writer that starts the chunk over).
    pub(crate) fn reset(&mut self) {
        self.accs.fill(Acc::new());
    }

    /// The statistics bytes of everything folded: one record per field, in order.
    pub(crate) fn finish(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (f, acc) in self.fields.iter().zip(&self.accs) {
            encode_record(f, acc, &mut out);
        }
        out
    }
}

/// Merges statistics bytes `b` into `a` (both of `fields`): the statistics of the union of
/// their elements. A writer whose chunk grows (a record file's last chunk) merges what it
/// adds into what it had.
pub fn merge(fields: &[StatField], a: &[u8], b: &[u8]) -> Vec<u8> {
    let (pa, pb) = (parse(fields, a), parse(fields, b));
    let mut out = Vec::new();
    for ((f, x), y) in fields.iter().zip(pa).zip(pb) {
        let mut acc = Acc {
            nan: x.nan + y.nan,
            min_max: x.min_max,
        };
        if let Some((lo, hi)) = y.min_max {
            acc.merge(lo, hi);
        }
        encode_record(f, &acc, &mut out);
    }
    out
}

fn encode_record(f: &StatField, acc: &Acc, out: &mut Vec<u8>) {
    let start = out.len();
    let m = f.min_max_width();
    let mut head = acc.nan.min((1 << 62) - 1);
    if acc.min_max.is_some() && m > 0 {
        head |= 1 << 63;
    }
    out.extend_from_slice(&head.to_le_bytes());
    if m > 0 {
        let (lo, hi) = acc.min_max.unwrap_or((Value::Uint(0), Value::Uint(0)));
        for v in [lo, hi] {
            // A zero bound is stored as +0.0: which zero a fold kept depends on the order it
            // met them (they compare equal), and the stored bytes must not, so that every
            // writer, folding whole chunks or block by block, writes the same file.
            let v = match v {
                Value::Float(x) => Value::Float(if x == 0.0 { 0.0 } else { x }),
                v => v,
            };
            let bytes = to_le(f, v);
            out.extend_from_slice(&bytes[..m]);
        }
    }
    out.resize(start + f.record_len() as usize, 0);
}

fn to_le(f: &StatField, v: Value) -> [u8; 16] {
    let mut b = [0u8; 16];
    match (f.eltype, v) {
        (ElType::Int, Value::Int(x)) => b.copy_from_slice(&x.to_le_bytes()),
        (ElType::Uint, Value::Uint(x)) => b.copy_from_slice(&x.to_le_bytes()),
        (ElType::Float, Value::Float(x)) => match f.width {
            2 => b[..2].copy_from_slice(&half::f16::from_f64(x).to_le_bytes()),
            // Exact: the value came from a float of this width.
            4 => b[..4].copy_from_slice(&(x as f32).to_le_bytes()),
            _ => b[..8].copy_from_slice(&x.to_le_bytes()),
        },
        (ElType::BFloat16, Value::Float(x)) => {
            b[..2].copy_from_slice(&half::bf16::from_f64(x).to_le_bytes());
        }
        _ => {}
    }
    b
}

fn from_le(f: &StatField, b: &[u8]) -> Value {
    scalar_value(f.eltype, usize::from(f.width), b)
}

/// The value of one little-endian scalar of `eltype` and `width` bytes (int, uint, float,
/// bfloat16) at the start of `b`.
pub(crate) fn scalar_value(eltype: ElType, w: usize, b: &[u8]) -> Value {
    let mut wide = [0u8; 16];
    wide[..w].copy_from_slice(&b[..w]);
    match eltype {
        ElType::Int => {
            // Sign-extend from the scalar's width.
            let shift = 128 - 8 * w as u32;
            Value::Int((i128::from_le_bytes(wide) << shift) >> shift)
        }
        ElType::Uint => Value::Uint(u128::from_le_bytes(wide)),
        ElType::BFloat16 => Value::Float(half::bf16::from_le_bytes([b[0], b[1]]).to_f64()),
        _ => Value::Float(match w {
            2 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            4 => f64::from(f32::from_le_bytes(b[..4].try_into().expect("4 bytes"))),
            _ => f64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        }),
    }
}

impl std::fmt::Display for Value {
    /// Integers as they are; floats as Rust prints an `f64` (the shortest form that reads
    /// back the same value: `0.1`, `-0`, `inf`, `NaN`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Uint(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

macro_rules! value_from {
    ($wrap:ident: $($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$wrap(v.into())
            }
        }
    )*};
}
value_from!(Int: i8, i16, i32, i64, i128);
value_from!(Uint: u8, u16, u32, u64, u128);
value_from!(Float: f32, f64);

impl From<bool> for Value {
    /// A `bool` is stored as a `u8` of 0 or 1, and compares as that number.
    fn from(v: bool) -> Value {
        Value::Uint(u128::from(v))
    }
}

impl From<half::f16> for Value {
    fn from(v: half::f16) -> Value {
        Value::Float(v.to_f64())
    }
}

impl From<half::bf16> for Value {
    fn from(v: half::bf16) -> Value {
        Value::Float(v.to_f64())
    }
}

/// The statistics of each field from a chunk's statistics bytes (as [`compute`] makes them;
/// bytes cut short read as no statistics).
pub fn parse(fields: &[StatField], bytes: &[u8]) -> Vec<FieldStats> {
    let mut at = 0usize;
    fields
        .iter()
        .map(|f| {
            let len = f.record_len() as usize;
            let Some(rec) = bytes.get(at..at + len) else {
                return FieldStats {
                    nan: 0,
                    min_max: None,
                };
            };
            at += len;
            let head = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
            let m = f.min_max_width();
            let min_max = (head >> 63 == 1 && m > 0)
                .then(|| (from_le(f, &rec[8..]), from_le(f, &rec[8 + m..])));
            FieldStats {
                nan: head & ((1 << 62) - 1),
                min_max,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The statistics as first written: one field at a time, element by element, each scalar
    // widened to the type of its `Value`, in order. The faster `field_stats` must agree.
    /// Reads scalar `i` (of `w` bytes, in the given byte order) of `bytes` as a little-endian
    /// array of 16 bytes, sign- or zero-extended is not needed: callers read typed values.
    fn scalar<const W: usize>(b: &[u8], big_endian: bool) -> [u8; W] {
        let mut a: [u8; W] = b[..W].try_into().expect("W bytes");
        if big_endian {
            a.reverse();
        }
        a
    }

    /// Statistics of one field over `n` elements of `raw` (elements of `elbyte` bytes).
    fn field_stats_reference(f: &StatField, raw: &[u8], elbyte: usize, big_endian: bool) -> Acc {
        let mut acc = Acc::new();
        let w = usize::from(f.width);
        let per = f.count as usize;
        let start = f.offset as usize;
        macro_rules! ints {
            ($t:ty, $wrap:ident, $n:literal) => {{
                let mut lo = <$t>::MAX;
                let mut hi = <$t>::MIN;
                let mut any = false;
                for el in raw.chunks_exact(elbyte) {
                    for k in 0..per {
                        let at = start + k * $n;
                        let v = <$t>::from_le_bytes(scalar::<$n>(&el[at..], big_endian));
                        lo = lo.min(v);
                        hi = hi.max(v);
                        any = true;
                    }
                }
                if any {
                    acc.merge(Value::$wrap(lo.into()), Value::$wrap(hi.into()));
                }
            }};
        }
        macro_rules! floats {
            ($n:literal, $conv:expr) => {{
                let mut lo = f64::INFINITY;
                let mut hi = f64::NEG_INFINITY;
                let mut any = false;
                let conv = $conv;
                for el in raw.chunks_exact(elbyte) {
                    for k in 0..per {
                        let at = start + k * $n;
                        let v: f64 = conv(scalar::<$n>(&el[at..], big_endian));
                        if v.is_nan() {
                            acc.nan += 1;
                        } else {
                            any = true;
                            if v < lo {
                                lo = v;
                            }
                            if v > hi {
                                hi = v;
                            }
                        }
                    }
                }
                if any {
                    acc.merge(Value::Float(lo), Value::Float(hi));
                }
            }};
        }
        match (f.eltype, w) {
            (ElType::Int, 1) => ints!(i8, Int, 1),
            (ElType::Int, 2) => ints!(i16, Int, 2),
            (ElType::Int, 4) => ints!(i32, Int, 4),
            (ElType::Int, 8) => ints!(i64, Int, 8),
            (ElType::Int, 16) => ints!(i128, Int, 16),
            (ElType::Uint, 1) => ints!(u8, Uint, 1),
            (ElType::Uint, 2) => ints!(u16, Uint, 2),
            (ElType::Uint, 4) => ints!(u32, Uint, 4),
            (ElType::Uint, 8) => ints!(u64, Uint, 8),
            (ElType::Uint, 16) => ints!(u128, Uint, 16),
            (ElType::Float, 2) => floats!(2, |b: [u8; 2]| half::f16::from_le_bytes(b).to_f64()),
            (ElType::Float, 4) => floats!(4, |b: [u8; 4]| f64::from(f32::from_le_bytes(b))),
            (ElType::Float, 8) => floats!(8, f64::from_le_bytes),
            (ElType::BFloat16, 2) => floats!(2, |b: [u8; 2]| half::bf16::from_le_bytes(b).to_f64()),
            (ElType::Complex, _) => {
                let part = w / 2;
                for el in raw.chunks_exact(elbyte) {
                    for k in 0..per {
                        let at = start + k * w;
                        let nan = |b: &[u8]| -> bool {
                            match part {
                                2 => half::f16::from_le_bytes(scalar::<2>(b, big_endian)).is_nan(),
                                4 => f32::from_le_bytes(scalar::<4>(b, big_endian)).is_nan(),
                                _ => f64::from_le_bytes(scalar::<8>(b, big_endian)).is_nan(),
                            }
                        };
                        if nan(&el[at..]) || nan(&el[at + part..]) {
                            acc.nan += 1;
                        }
                    }
                }
            }
            _ => {}
        }
        acc
    }

    fn stats_of<T: Copy>(field: StatField, vals: &[T], to: impl Fn(T) -> Vec<u8>) -> FieldStats {
        let raw: Vec<u8> = vals.iter().flat_map(|&v| to(v)).collect();
        let bytes = compute(&[field], &raw, u64::from(field.width), false);
        assert_eq!(bytes.len() as u64, field.record_len());
        parse(&[field], &bytes)[0]
    }

    #[test]
    fn integer_extremes_are_exact() {
        let s = stats_of(
            StatField::scalar(ElType::Int, 16),
            &[i128::MIN, 5, i128::MAX],
            |v| v.to_le_bytes().to_vec(),
        );
        assert_eq!(
            s.min_max,
            Some((Value::Int(i128::MIN), Value::Int(i128::MAX)))
        );
        let s = stats_of(StatField::scalar(ElType::Int, 1), &[-128i8, 3, 127], |v| {
            v.to_le_bytes().to_vec()
        });
        assert_eq!(s.min_max, Some((Value::Int(-128), Value::Int(127))));
        let s = stats_of(StatField::scalar(ElType::Uint, 8), &[u64::MAX, 0], |v| {
            v.to_le_bytes().to_vec()
        });
        assert_eq!(
            s.min_max,
            Some((Value::Uint(0), Value::Uint(u64::MAX.into())))
        );
    }

    #[test]
    fn floats_ignore_nan_and_count_it() {
        let s = stats_of(
            StatField::scalar(ElType::Float, 8),
            &[f64::NAN, f64::INFINITY, -0.0, f64::NEG_INFINITY, f64::NAN],
            |v: f64| v.to_le_bytes().to_vec(),
        );
        assert_eq!(s.nan, 2);
        assert_eq!(
            s.min_max,
            Some((Value::Float(f64::NEG_INFINITY), Value::Float(f64::INFINITY)))
        );
        let s = stats_of(
            StatField::scalar(ElType::Float, 4),
            &[f32::NAN],
            |v: f32| v.to_le_bytes().to_vec(),
        );
        assert_eq!((s.nan, s.min_max), (1, None));
        let s = stats_of(
            StatField::scalar(ElType::BFloat16, 2),
            &[half::bf16::from_f32(1.5), half::bf16::from_f32(-3.0)],
            |v| v.to_le_bytes().to_vec(),
        );
        assert_eq!(s.min_max, Some((Value::Float(-3.0), Value::Float(1.5))));
    }

    #[test]
    fn complex_keeps_only_the_nan_count() {
        let f = StatField::scalar(ElType::Complex, 8);
        assert_eq!(f.record_len(), 8);
        let s = stats_of(
            f,
            &[(1.0f32, f32::NAN), (2.0, 3.0), (f32::NAN, 0.0)],
            |(a, b)| [a.to_le_bytes(), b.to_le_bytes()].concat(),
        );
        assert_eq!((s.nan, s.min_max), (2, None));
    }

    #[test]
    fn big_endian_scalars_are_read_in_their_order() {
        let f = StatField::scalar(ElType::Int, 4);
        let raw: Vec<u8> = [-7i32, 9].iter().flat_map(|v| v.to_be_bytes()).collect();
        let s = parse(&[f], &compute(&[f], &raw, 4, true))[0];
        assert_eq!(s.min_max, Some((Value::Int(-7), Value::Int(9))));
    }

    #[test]
    fn record_fields_are_flattened_and_arrays_kept_whole() {
        let layout = Layout::Record {
            name: "R".into(),
            fields: vec![
                crate::layout::Field {
                    name: "step".into(),
                    offset: 0,
                    layout: Layout::scalar(ElType::Uint, 8),
                },
                crate::layout::Field {
                    name: "pos".into(),
                    offset: 8,
                    layout: Layout::Array {
                        len: 3,
                        item: Box::new(Layout::scalar(ElType::Float, 4)),
                    },
                },
            ],
        };
        let fields = StatField::for_elements(ElType::User, 20, Some(&layout));
        assert_eq!(fields.len(), 2);
        assert_eq!(
            (fields[1].offset, fields[1].count, fields[1].width),
            (8, 3, 4)
        );
        let mut raw = Vec::new();
        for (step, p) in [(4u64, [1.0f32, -2.0, 3.0]), (9, [0.5, 7.0, f32::NAN])] {
            raw.extend_from_slice(&step.to_le_bytes());
            p.iter()
                .for_each(|v| raw.extend_from_slice(&v.to_le_bytes()));
        }
        let s = parse(&fields, &compute(&fields, &raw, 20, false));
        assert_eq!(s[0].min_max, Some((Value::Uint(4), Value::Uint(9))));
        assert_eq!(s[1].min_max, Some((Value::Float(-2.0), Value::Float(7.0))));
        assert_eq!(s[1].nan, 1);
        // Merging halves gives the whole.
        let a = compute(&fields, &raw[..20], 20, false);
        let b = compute(&fields, &raw[20..], 20, false);
        assert_eq!(parse(&fields, &merge(&fields, &a, &b)), s);
    }

    /// Every supported type, as a plain array and as a field of a record (count 1 and 3, at an
    /// odd offset), both byte orders, from 0 to 70 elements (the lanes and their remainder),
    /// random bits, with zeros of both signs, all-ones (a NaN, or -1) and a sign bit alone
    /// (-0.0, or the least integer) forced in:
    /// `compute` gives what the reference gives, value for value.
    #[test]
    fn one_pass_statistics_agree_with_the_reference() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let types = [
            (ElType::Int, 1),
            (ElType::Int, 2),
            (ElType::Int, 4),
            (ElType::Int, 8),
            (ElType::Int, 16),
            (ElType::Uint, 1),
            (ElType::Uint, 2),
            (ElType::Uint, 4),
            (ElType::Uint, 8),
            (ElType::Uint, 16),
            (ElType::Float, 2),
            (ElType::Float, 4),
            (ElType::Float, 8),
            (ElType::BFloat16, 2),
            (ElType::Complex, 4),
            (ElType::Complex, 8),
            (ElType::Complex, 16),
        ];
        let mut checked = 0;
        for (eltype, width) in types {
            for (offset, count, pad) in [(0u32, 1u32, 0usize), (3, 1, 5), (3, 3, 2)] {
                let field = StatField {
                    offset,
                    count,
                    eltype,
                    width,
                };
                let elbyte = offset as usize + count as usize * usize::from(width) + pad;
                for n in [0usize, 1, 7, 8, 9, 31, 70] {
                    for big_endian in [false, true] {
                        let mut raw: Vec<u8> = (0..n * elbyte).map(|_| next() as u8).collect();
                        // Special scalars at random places.
                        for _ in 0..n / 3 {
                            let el = (next() as usize) % n.max(1);
                            let k = (next() as usize) % count as usize;
                            let at = el * elbyte + offset as usize + k * usize::from(width);
                            let w = usize::from(width);
                            let s = &mut raw[at..at + w];
                            let top = if big_endian { 0 } else { w - 1 };
                            match next() % 4 {
                                0 => s.fill(0),
                                1 => {
                                    s.fill(0);
                                    s[top] = 0x80;
                                }
                                2 => s.fill(0xff),
                                _ => {
                                    s.fill(0xff);
                                    s[top] = 0x7f;
                                }
                            }
                        }
                        let got = parse(
                            &[field],
                            &compute(&[field], &raw, elbyte as u64, big_endian),
                        );
                        let mut want = Vec::new();
                        encode_record(
                            &field,
                            &field_stats_reference(&field, &raw, elbyte, big_endian),
                            &mut want,
                        );
                        assert_eq!(
                            got,
                            parse(&[field], &want),
                            "{eltype:?} {width} offset {offset} count {count} n {n} big-endian {big_endian}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 17 * 3 * 7 * 2);
    }

    /// The bytes of statistics folded piece by piece (random cuts at whole elements, the
    /// pieces in a shuffled order) are those of the whole chunk's, for floats with zeros of
    /// both signs and NaN, integers and a record of both; and a zero bound is +0.0 whatever
    /// zeros were met first.
    #[test]
    fn folded_pieces_give_the_bytes_of_the_whole_chunk() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // A record of an f32 at 0, an i16 at 4 and two f64 at 6 (elbyte 22), or each alone.
        let record = [
            StatField::scalar(ElType::Float, 4),
            StatField {
                offset: 4,
                count: 1,
                eltype: ElType::Int,
                width: 2,
            },
            StatField {
                offset: 6,
                count: 2,
                eltype: ElType::Float,
                width: 8,
            },
        ];
        let cases: [(&[StatField], usize); 4] = [
            (&record[..1], 4),
            (&[StatField::scalar(ElType::Float, 8)], 8),
            (&[StatField::scalar(ElType::Int, 2)], 2),
            (&record, 22),
        ];
        let zeros_nan: [&[u8]; 3] = [&[0, 0, 0, 0x80], &[0; 4], &[0, 0, 0xc0, 0x7f]];
        for (fields, elbyte) in cases {
            for n in [0usize, 1, 9, 100, 333] {
                for _ in 0..8 {
                    let mut raw: Vec<u8> = (0..n * elbyte).map(|_| next() as u8).collect();
                    // Most f32s become -0.0, 0.0 or NaN, so that a zero is often a bound.
                    if fields[0].width == 4 {
                        for el in raw.chunks_exact_mut(elbyte) {
                            if next() % 4 != 0 {
                                el[..4].copy_from_slice(zeros_nan[(next() % 3) as usize]);
                            }
                        }
                    }
                    let whole = compute(fields, &raw, elbyte as u64, false);
                    let mut pieces: Vec<&[u8]> = Vec::new();
                    let mut rest = &raw[..];
                    while !rest.is_empty() {
                        let k = (1 + next() as usize % 40).min(rest.len() / elbyte) * elbyte;
                        let (a, b) = rest.split_at(k);
                        pieces.push(a);
                        rest = b;
                    }
                    for i in (1..pieces.len()).rev() {
                        pieces.swap(i, next() as usize % (i + 1));
                    }
                    let mut folder = Folder::new(fields, elbyte as u64, false);
                    for p in &pieces {
                        folder.fold(p);
                    }
                    assert_eq!(folder.finish(), whole, "{fields:?} n {n}");
                    // A folder that starts over gives the same bytes again.
                    folder.reset();
                    folder.fold(&raw);
                    assert_eq!(folder.finish(), whole);
                }
            }
        }
        for zeros in [[-0.0f32, 0.0], [0.0, -0.0], [-0.0, -0.0]] {
            let raw: Vec<u8> = zeros.iter().flat_map(|v| v.to_le_bytes()).collect();
            let b = compute(&record[..1], &raw, 4, false);
            assert_eq!(&b[8..16], &[0; 8], "{zeros:?}: min and max +0.0");
        }
    }

    #[test]
    fn hostile_fields_are_refused_naming_them() {
        let mut b = StatField::scalar(ElType::Float, 4).encode();
        b[4..8].copy_from_slice(&2u32.to_le_bytes()); // 2 floats in a 4-byte element
        let e = StatField::decode(&b, 3, 4).unwrap_err().to_string();
        assert!(e.contains("statistics field 3"), "{e}");
        let mut b = StatField::scalar(ElType::Float, 4).encode();
        b[10..12].copy_from_slice(&3u16.to_le_bytes());
        assert!(StatField::decode(&b, 0, 16).is_err());
    }
}
