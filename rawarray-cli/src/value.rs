//! One element of a data section, decoded from its little-endian bytes by the header's
//! eltype and elbyte, for printing (`cat`, `csv`) and for scaling (`png`).

use std::fmt::Write as _;

use half::{bf16, f16};
use rawarray_serde::eltype::{ScalarType, ScalarValue};
use rawarray_serde::{ElType, Layout};

/// A float kept at its own precision, so that it prints as the shortest decimal that reads
/// back to it at that precision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Float {
    /// IEEE half.
    F16(f16),
    /// bfloat16.
    BF16(bf16),
    /// f32.
    F32(f32),
    /// f64.
    F64(f64),
}

impl Float {
    /// The value as an f64 (exact).
    pub fn to_f64(self) -> f64 {
        match self {
            Float::F16(x) => x.to_f64(),
            Float::BF16(x) => x.to_f64(),
            Float::F32(x) => f64::from(x),
            Float::F64(x) => x,
        }
    }

    /// Shortest decimal that reads back to the same value; `NaN`, `inf`, `-inf`.
    fn text(self, out: &mut String) {
        let _ = match self {
            Float::F16(x) => write!(
                out,
                "{:?}",
                shortest_16(x.to_f32(), |y| f16::from_f32(y).to_f32())
            ),
            Float::BF16(x) => {
                write!(
                    out,
                    "{:?}",
                    shortest_16(x.to_f32(), |y| bf16::from_f32(y).to_f32())
                )
            }
            Float::F32(x) => write!(out, "{x:?}"),
            Float::F64(x) => write!(out, "{x:?}"),
        };
    }

    /// As JSON: a number, or a string for the non-finite values JSON has no number for.
    fn json(self, out: &mut String) {
        if self.to_f64().is_finite() {
            self.text(out);
        } else {
            out.push('"');
            self.text(out);
            out.push('"');
        }
    }
}

/// The f32 nearest to the shortest decimal that rounds (through `narrow`) back to `x`, a
/// 16-bit float widened: its f32 `Debug` is then that decimal (`0.6816`, not `0.6816406`).
fn shortest_16(x: f32, narrow: impl Fn(f32) -> f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    for digits in 0..9 {
        let candidate: f32 = format!("{x:.digits$e}").parse().expect("a formatted float");
        if narrow(candidate) == x {
            return candidate;
        }
    }
    x
}

/// One decoded element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// A signed integer.
    Int(i128),
    /// An unsigned integer.
    Uint(u128),
    /// A float of any width Rust has.
    Float(Float),
    /// Real and imaginary parts.
    Complex(Float, Float),
    /// Bytes with no Rust type here (f128, complex of f128, user-defined elements).
    Raw(&'a [u8]),
}

/// Decodes elements of one eltype and elbyte, by the library's element-type table.
#[derive(Clone, Copy, Debug)]
pub struct Decoder {
    /// The table's row; `None` for user-defined elements.
    scalar: Option<ScalarType>,
    elbyte: usize,
}

impl Decoder {
    /// A decoder for elements of `eltype`, `elbyte` bytes each.
    pub fn new(eltype: ElType, elbyte: u64) -> Decoder {
        Decoder {
            scalar: ScalarType::of(eltype, elbyte),
            elbyte: elbyte as usize,
        }
    }

    /// Bytes per element.
    pub fn elbyte(&self) -> usize {
        self.elbyte
    }

    /// Whether elements decode to numbers (not raw bytes).
    pub fn is_numeric(&self) -> bool {
        self.scalar.is_some_and(ScalarType::has_rust_type)
    }

    /// The element in `b` (exactly `elbyte` little-endian bytes).
    pub fn decode<'a>(&self, b: &'a [u8]) -> Value<'a> {
        use ScalarValue as S;
        // Exhaustive on purpose: a row added to the table must be given its printed form here.
        match self.scalar.and_then(|t| t.read_le(b)) {
            Some(S::I8(v)) => Value::Int(v.into()),
            Some(S::I16(v)) => Value::Int(v.into()),
            Some(S::I32(v)) => Value::Int(v.into()),
            Some(S::I64(v)) => Value::Int(v.into()),
            Some(S::I128(v)) => Value::Int(v),
            Some(S::U8(v)) => Value::Uint(v.into()),
            Some(S::U16(v)) => Value::Uint(v.into()),
            Some(S::U32(v)) => Value::Uint(v.into()),
            Some(S::U64(v)) => Value::Uint(v.into()),
            Some(S::U128(v)) => Value::Uint(v),
            Some(S::F16(v)) => Value::Float(Float::F16(v)),
            Some(S::F32(v)) => Value::Float(Float::F32(v)),
            Some(S::F64(v)) => Value::Float(Float::F64(v)),
            Some(S::BF16(v)) => Value::Float(Float::BF16(v)),
            Some(S::Complex32(c)) => Value::Complex(Float::F16(c.re), Float::F16(c.im)),
            Some(S::Complex64(c)) => Value::Complex(Float::F32(c.re), Float::F32(c.im)),
            Some(S::Complex128(c)) => Value::Complex(Float::F64(c.re), Float::F64(c.im)),
            Some(S::F128(_) | S::Complex256(_)) | None => Value::Raw(b),
        }
    }
}

impl Value<'_> {
    /// A real number for scaling: complex by magnitude; `None` for raw bytes.
    pub fn magnitude(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Uint(u) => Some(u as f64),
            Value::Float(x) => Some(x.to_f64()),
            Value::Complex(re, im) => Some(re.to_f64().hypot(im.to_f64())),
            Value::Raw(_) => None,
        }
    }

    /// As text: integers, shortest decimals, complex as `a+bi`, raw bytes as hex.
    pub fn text(&self, out: &mut String) {
        self.text_with_unit(out, 'i');
    }

    /// As [`Value::text`], with `unit` after a complex number's imaginary part: `j` is what
    /// Python and numpy's `loadtxt(dtype=complex)` read.
    pub fn text_with_unit(&self, out: &mut String, unit: char) {
        match *self {
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Uint(u) => {
                let _ = write!(out, "{u}");
            }
            Value::Float(x) => x.text(out),
            Value::Complex(re, im) => {
                re.text(out);
                // `-` comes with a negative imaginary part; NaN gets a `+`.
                if !im.to_f64().is_sign_negative() || im.to_f64().is_nan() {
                    out.push('+');
                }
                im.text(out);
                out.push(unit);
            }
            Value::Raw(b) => hex(b, out),
        }
    }

    /// As JSON: numbers, `{"re": .., "im": ..}` for complex, a hex string for raw bytes.
    pub fn json(&self, out: &mut String) {
        match *self {
            Value::Float(x) => x.json(out),
            Value::Complex(re, im) => {
                out.push_str("{\"re\":");
                re.json(out);
                out.push_str(",\"im\":");
                im.json(out);
                out.push('}');
            }
            Value::Raw(b) => {
                out.push('"');
                hex(b, out);
                out.push('"');
            }
            Value::Int(_) | Value::Uint(_) => self.text(out),
        }
    }
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8], out: &mut String) {
    for x in b {
        let _ = write!(out, "{x:02x}");
    }
}

/// Formats one element whose layout a record schema describes: `{x: 1.0, tags: [1, 2]}` as
/// text, or a JSON object keyed by field name. Scalars of a big-endian file are swapped here,
/// since the schema is what says where they are.
///
/// The layout must have passed `Layout::validate_for` the element's size (the tool takes
/// schemas only through `TrailerInfo::element_schema`): every field then lies inside `b`, and
/// the walk visits at most `b.len()` nodes. Should one not, its bytes print as `?` rather than
/// panic.
pub fn layout_text(layout: &Layout, b: &[u8], big_endian: bool, json: bool, out: &mut String) {
    let Some(b) = usize::try_from(layout.size()).ok().and_then(|n| b.get(..n)) else {
        out.push_str(if json { "null" } else { "?" });
        return;
    };
    match layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical,
        } => {
            let mut scalar = b.to_vec();
            if big_endian {
                swap_by_layout(layout, &mut scalar);
            }
            // Dates and times as ISO 8601 (a string in JSON), by the schema's marker.
            if let Some(text) = logical.as_ref().and_then(|l| l.value_text(&scalar)) {
                if json {
                    out.push_str(&serde_json::Value::from(text).to_string());
                } else {
                    out.push_str(&text);
                }
                return;
            }
            let v = Decoder::new(*eltype, *elbyte).decode(&scalar);
            if json {
                v.json(out);
            } else {
                v.text(out);
            }
        }
        Layout::Array { len, item } => {
            let size = item.size() as usize;
            out.push('[');
            for i in 0..*len as usize {
                if i > 0 {
                    out.push_str(if json { "," } else { ", " });
                }
                layout_text(
                    item,
                    b.get(i * size..).unwrap_or_default(),
                    big_endian,
                    json,
                    out,
                );
            }
            out.push(']');
        }
        Layout::Record { fields, .. } => {
            out.push('{');
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(if json { "," } else { ", " });
                }
                if json {
                    out.push_str(&serde_json::Value::from(f.name.as_str()).to_string());
                    out.push(':');
                } else {
                    let _ = write!(out, "{}: ", f.name);
                }
                let at = usize::try_from(f.offset).unwrap_or(usize::MAX);
                layout_text(
                    &f.layout,
                    b.get(at..).unwrap_or_default(),
                    big_endian,
                    json,
                    out,
                );
            }
            out.push('}');
        }
    }
}

/// Reverses the byte order of every scalar of one element laid out as `layout`, in place. As
/// for [`layout_text`], the layout must have been validated for the element's size; parts of
/// one that would reach past `b` are left alone.
pub fn swap_by_layout(layout: &Layout, b: &mut [u8]) {
    layout.swap_byte_order(b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rawarray_serde::Field;

    fn text(v: Value) -> String {
        let mut s = String::new();
        v.text(&mut s);
        s
    }

    fn json(v: Value) -> String {
        let mut s = String::new();
        v.json(&mut s);
        s
    }

    #[test]
    fn numbers_print_as_their_shortest_decimals() {
        let d = Decoder::new(ElType::Float, 4);
        assert_eq!(text(d.decode(&0.1f32.to_le_bytes())), "0.1");
        let d = Decoder::new(ElType::Float, 2);
        assert_eq!(text(d.decode(&f16::from_f32(0.5).to_le_bytes())), "0.5");
        assert_eq!(
            text(d.decode(&f16::from_f32(0.6816).to_le_bytes())),
            "0.6816"
        );
        assert_eq!(text(d.decode(&f16::MAX.to_le_bytes())), "65500.0");
        assert_eq!(
            text(d.decode(&f16::MIN_POSITIVE_SUBNORMAL.to_le_bytes())),
            "6e-8"
        );
        assert_eq!(text(d.decode(&f16::NEG_INFINITY.to_le_bytes())), "-inf");
        for bits in 0..=u16::MAX {
            let x = f16::from_bits(bits);
            let t = text(d.decode(&bits.to_le_bytes()));
            let back = f16::from_f32(t.parse::<f32>().unwrap());
            assert!(back == x || x.is_nan() && back.is_nan(), "{bits:#x}: {t}");
        }
        let d = Decoder::new(ElType::BFloat16, 2);
        assert_eq!(text(d.decode(&bf16::from_f32(-2.0).to_le_bytes())), "-2.0");
        assert_eq!(text(d.decode(&bf16::from_f32(0.1).to_le_bytes())), "0.1");
        let d = Decoder::new(ElType::Int, 8);
        assert_eq!(text(d.decode(&(-5i64).to_le_bytes())), "-5");
        let d = Decoder::new(ElType::Float, 16);
        assert_eq!(text(d.decode(&[0xab; 16])), "ab".repeat(16));
    }

    #[test]
    fn complex_prints_as_a_plus_bi() {
        let d = Decoder::new(ElType::Complex, 8);
        let c = |re: f32, im: f32| [re.to_le_bytes(), im.to_le_bytes()].concat();
        assert_eq!(text(d.decode(&c(1.0, -1.0))), "1.0-1.0i");
        assert_eq!(text(d.decode(&c(2.0, 0.5))), "2.0+0.5i");
        assert_eq!(text(d.decode(&c(0.0, f32::NEG_INFINITY))), "0.0-infi");
        assert_eq!(
            json(d.decode(&c(0.0, f32::NEG_INFINITY))),
            r#"{"re":0.0,"im":"-inf"}"#
        );
        let d = Decoder::new(ElType::Complex, 4);
        let h = [
            f16::from_f32(1.5).to_le_bytes(),
            f16::from_f32(2.0).to_le_bytes(),
        ]
        .concat();
        assert_eq!(text(d.decode(&h)), "1.5+2.0i");
    }

    #[test]
    fn records_print_by_field_name() {
        let layout = Layout::Record {
            name: "P".into(),
            fields: vec![
                Field {
                    name: "id".into(),
                    offset: 0,
                    layout: Layout::scalar(ElType::Uint, 2),
                },
                Field {
                    name: "xy".into(),
                    offset: 2,
                    layout: Layout::Array {
                        len: 2,
                        item: Box::new(Layout::scalar(ElType::Float, 4)),
                    },
                },
            ],
        };
        let mut b = 7u16.to_le_bytes().to_vec();
        b.extend(1.5f32.to_le_bytes());
        b.extend(f32::NAN.to_le_bytes());
        let mut s = String::new();
        layout_text(&layout, &b, false, false, &mut s);
        assert_eq!(s, "{id: 7, xy: [1.5, NaN]}");
        let mut s = String::new();
        layout_text(&layout, &b, false, true, &mut s);
        assert_eq!(s, r#"{"id":7,"xy":[1.5,"NaN"]}"#);
        let mut be = 7u16.to_be_bytes().to_vec();
        be.extend(1.5f32.to_be_bytes());
        be.extend(2.0f32.to_be_bytes());
        let mut s = String::new();
        layout_text(&layout, &be, true, false, &mut s);
        assert_eq!(s, "{id: 7, xy: [1.5, 2.0]}");
    }
}
