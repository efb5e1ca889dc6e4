//! The type mapping, written once: a `.ra` element [`Layout`] as Arrow fields, and Arrow fields
//! back as a layout (refusing, by column name, what has no fixed width).
//!
//! | `.ra` | Arrow |
//! |---|---|
//! | `int8`..`int64`, `uint8`..`uint64` | `Int8`..`Int64`, `UInt8`..`UInt64` |
//! | `bool` (a `uint8` with the schema's bool marker) | `Boolean` |
//! | `float16`, `float32`, `float64` | `Float16`, `Float32`, `Float64` |
//! | `timestamp[unit, tz=zone]` (an `int64` marked) | `Timestamp(unit, zone)` |
//! | `duration[unit]` (an `int64` marked) | `Duration(unit)` |
//! | `date` (an `int32` marked: days since 1970-01-01) | `Date32` |
//! | `bfloat16` | `Float32` (exact: every bfloat16 is a float32), marked `rawarray.eltype = bfloat16` |
//! | `int128`, `uint128`, `float128` | `FixedSizeBinary(16)`, little-endian, marked `rawarray.eltype` |
//! | complex (`complex32`..`complex256`) | `Struct{re, im}` of the part's float type, marked `rawarray.eltype` |
//! | `[u8; N]` (text or bytes) | `FixedSizeBinary(N)`: the bytes as stored, padding included |
//! | other `[T; N]` | `FixedSizeList(T, N)` |
//! | a record | one column per field (top level), `Struct` (nested) |
//!
//! The marks are field metadata (`rawarray.eltype`); the table's schema metadata holds the
//! element's layout as JSON (`rawarray.schema`), the header's dims (`rawarray.dims`) and the
//! trailer's parameters (`rawarray.params`), so that a table read back becomes the same file.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit as ArrowUnit};
use rawarray_serde::eltype::{type_label, ScalarType};
use rawarray_serde::time::TimeUnit;
use rawarray_serde::{ElType, Layout, Logical};

use crate::error::{Error, Result};

/// Field metadata key: the `.ra` scalar type a column holds when Arrow's type does not say it.
pub const ELTYPE_KEY: &str = "rawarray.eltype";
/// Schema metadata key: the element's [`Layout`] as JSON.
pub const SCHEMA_KEY: &str = "rawarray.schema";
/// Schema metadata key: the `.ra` header's dims as a JSON list.
pub const DIMS_KEY: &str = "rawarray.dims";
/// Schema metadata key: the trailer's parameters as JSON.
pub const PARAMS_KEY: &str = "rawarray.params";
/// The column name of an element that is not a record (a plain array's values): the name
/// queries give it too.
pub use rawarray_serde::query::VALUES_COLUMN;

/// How one scalar of a layout is stored in Arrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// A primitive of the same width and byte order: copied as it is.
    Primitive(usize),
    /// `Boolean`, bit-packed: any non-zero byte is true (as numpy reads `?`).
    Bool,
    /// bfloat16 widened to `Float32`.
    BFloat16,
    /// `FixedSizeBinary(width)`.
    Binary(usize),
    /// A complex number: a struct of two floats of half the width each.
    Complex(usize),
}

impl Scalar {
    pub(crate) fn of(eltype: ElType, elbyte: u64, logical: Option<&Logical>) -> Option<Scalar> {
        let w = usize::try_from(elbyte).ok()?;
        Some(match (eltype, elbyte, logical) {
            (ElType::Uint, 1, Some(Logical::Bool)) => Scalar::Bool,
            (ElType::Int | ElType::Uint, 1 | 2 | 4 | 8, _) | (ElType::Float, 2 | 4 | 8, _) => {
                Scalar::Primitive(w)
            }
            (ElType::Int | ElType::Uint | ElType::Float, 16, _) => Scalar::Binary(16),
            (ElType::BFloat16, 2, _) => Scalar::BFloat16,
            (ElType::Complex, 4 | 8 | 16 | 32, _) => Scalar::Complex(w / 2),
            _ => return None,
        })
    }
}

/// The Arrow type of a primitive scalar (never complex or bool).
fn primitive_type(eltype: ElType, elbyte: u64) -> Option<DataType> {
    Some(match (eltype, elbyte) {
        (ElType::Int, 1) => DataType::Int8,
        (ElType::Int, 2) => DataType::Int16,
        (ElType::Int, 4) => DataType::Int32,
        (ElType::Int, 8) => DataType::Int64,
        (ElType::Uint, 1) => DataType::UInt8,
        (ElType::Uint, 2) => DataType::UInt16,
        (ElType::Uint, 4) => DataType::UInt32,
        (ElType::Uint, 8) => DataType::UInt64,
        (ElType::Float, 2) => DataType::Float16,
        (ElType::Float, 4) => DataType::Float32,
        (ElType::Float, 8) => DataType::Float64,
        _ => return None,
    })
}

/// Arrow's temporal type of a date or time marker (the stored integer is Arrow's own value):
/// `Timestamp(unit, tz)`, `Duration(unit)`, `Date32`.
fn temporal_type(logical: &Logical) -> Option<DataType> {
    let unit = |u: TimeUnit| match u {
        TimeUnit::Second => ArrowUnit::Second,
        TimeUnit::Millisecond => ArrowUnit::Millisecond,
        TimeUnit::Microsecond => ArrowUnit::Microsecond,
        TimeUnit::Nanosecond => ArrowUnit::Nanosecond,
    };
    Some(match logical {
        Logical::Timestamp { unit: u, tz } => {
            DataType::Timestamp(unit(*u), tz.as_deref().map(Arc::from))
        }
        Logical::Duration { unit: u } => DataType::Duration(unit(*u)),
        Logical::Date => DataType::Date32,
        _ => return None,
    })
}

/// The layout of an Arrow temporal type: the marker on the integer Arrow stores. `Err` (the
/// reason) for the temporal types `.ra` has no marker for.
fn temporal_layout(t: &DataType) -> Option<std::result::Result<Layout, String>> {
    let unit = |u: &ArrowUnit| match u {
        ArrowUnit::Second => TimeUnit::Second,
        ArrowUnit::Millisecond => TimeUnit::Millisecond,
        ArrowUnit::Microsecond => TimeUnit::Microsecond,
        ArrowUnit::Nanosecond => TimeUnit::Nanosecond,
    };
    let logical = match t {
        DataType::Timestamp(u, tz) => {
            let tz = tz.as_deref().map(str::to_string);
            if let Some(zone) = &tz {
                if !rawarray_serde::time::valid_time_zone(zone) {
                    return Some(Err(format!(
                        "type {t}: time zone \"{zone}\" is not an IANA name or a UTC offset"
                    )));
                }
            }
            Logical::Timestamp { unit: unit(u), tz }
        }
        DataType::Duration(u) => Logical::Duration { unit: unit(u) },
        DataType::Date32 => Logical::Date,
        DataType::Date64 | DataType::Time32(_) | DataType::Time64(_) | DataType::Interval(_) => {
            return Some(Err(format!(
                "type {t} has no .ra form: a record field holds timestamps, durations and \
                 date32 (cast the column to one of them)"
            )))
        }
        _ => return None,
    };
    let ((eltype, elbyte), _) = logical.stored_as();
    Some(Ok(Layout::Scalar {
        eltype,
        elbyte,
        logical: Some(logical),
    }))
}

/// Whether a layout is a `[u8; N]` stored as `FixedSizeBinary(N)`.
pub(crate) fn byte_array_len(layout: &Layout) -> Option<usize> {
    match layout {
        Layout::Array { len, item } => match **item {
            Layout::Scalar {
                eltype: ElType::Uint,
                elbyte: 1,
                logical: None,
            } => usize::try_from(*len).ok(),
            _ => None,
        },
        _ => None,
    }
}

fn marked(field: Field, label: String) -> Field {
    field.with_metadata(HashMap::from([(ELTYPE_KEY.to_string(), label)]))
}

/// The Arrow field of one value laid out as `layout`, named `name`. Non-nullable: a `.ra`
/// value is always there.
///
/// ```
/// use arrow_schema::DataType;
/// use rawarray_serde::Element;
/// let f = rawarray_arrow::arrow_field("pos", &<[f32; 3] as Element>::layout()).unwrap();
/// assert!(matches!(f.data_type(), DataType::FixedSizeList(item, 3) if item.data_type() == &DataType::Float32));
/// ```
pub fn arrow_field(name: &str, layout: &Layout) -> Result<Field> {
    let unsupported = |what: String| Error::Column {
        column: name.to_string(),
        why: format!("{what} has no Arrow form"),
    };
    Ok(match layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical,
        } => {
            let label = type_label(*eltype, *elbyte);
            match Scalar::of(*eltype, *elbyte, logical.as_ref())
                .ok_or_else(|| unsupported(label.clone()))?
            {
                Scalar::Bool => Field::new(name, DataType::Boolean, false),
                Scalar::Primitive(_) => {
                    let t = match logical.as_ref().and_then(temporal_type) {
                        Some(t) => t,
                        None => {
                            primitive_type(*eltype, *elbyte).ok_or_else(|| unsupported(label))?
                        }
                    };
                    Field::new(name, t, false)
                }
                Scalar::BFloat16 => marked(Field::new(name, DataType::Float32, false), label),
                Scalar::Binary(w) => marked(
                    Field::new(name, DataType::FixedSizeBinary(w as i32), false),
                    label,
                ),
                Scalar::Complex(part) => {
                    let part_layout = Layout::scalar(ElType::Float, part as u64);
                    let fields = Fields::from(vec![
                        arrow_field("re", &part_layout)?,
                        arrow_field("im", &part_layout)?,
                    ]);
                    marked(Field::new(name, DataType::Struct(fields), false), label)
                }
            }
        }
        Layout::Array { len, item } => {
            let n = i32::try_from(*len).map_err(|_| {
                unsupported(format!("an array of {len} items (Arrow's limit is 2^31)"))
            })?;
            if byte_array_len(layout).is_some() {
                Field::new(name, DataType::FixedSizeBinary(n), false)
            } else {
                let item = arrow_field("item", item)?;
                Field::new(name, DataType::FixedSizeList(Arc::new(item), n), false)
            }
        }
        Layout::Record { fields, .. } => Field::new(
            name,
            DataType::Struct(record_fields(fields, Some(name))?),
            false,
        ),
    })
}

fn record_fields(fields: &[rawarray_serde::Field], outer: Option<&str>) -> Result<Fields> {
    fields
        .iter()
        .map(|f| {
            arrow_field(&f.name, &f.layout).map_err(|e| match (e, outer) {
                (Error::Column { column, why }, Some(outer)) => Error::Column {
                    column: format!("{outer}.{column}"),
                    why,
                },
                (e, _) => e,
            })
        })
        .collect()
}

/// The columns of a table whose rows are elements laid out as `layout`: one per field of a
/// record (in the schema's order, by its names), or one column [`VALUES_COLUMN`] otherwise.
///
/// ```
/// use rawarray_serde::{Element, Layout};
/// let s = rawarray_arrow::arrow_schema(&<f64 as Element>::layout()).unwrap();
/// assert_eq!(s.field(0).name(), "values");
/// ```
pub fn arrow_schema(layout: &Layout) -> Result<Schema> {
    let fields = match layout {
        Layout::Record { fields, .. } => record_fields(fields, None)?,
        other => Fields::from(vec![arrow_field(VALUES_COLUMN, other)?]),
    };
    Ok(Schema::new(fields))
}

fn refuse(column: &str, t: &DataType) -> Error {
    Error::Column {
        column: column.to_string(),
        why: format!(
            "type {t} has no fixed width: a record field is a number, a bool, a fixed-size list, \
             fixed-size binary or a struct of those"
        ),
    }
}

/// The layout of one value of an Arrow field: the reverse of [`arrow_field`], for fixed-width
/// types only; any other type is refused naming the column and its type.
///
/// ```
/// use arrow_schema::{DataType, Field};
/// let err = rawarray_arrow::layout_of_field(&Field::new("name", DataType::Utf8, false)).unwrap_err();
/// assert!(err.to_string().starts_with("column 'name': type Utf8 has no fixed width"), "{err}");
/// ```
pub fn layout_of_field(field: &Field) -> Result<Layout> {
    layout_of(field.name(), field)
}

fn layout_of(column: &str, field: &Field) -> Result<Layout> {
    let mark = field.metadata().get(ELTYPE_KEY).map(String::as_str);
    let marked_scalar = |want: &[ElType]| {
        ScalarType::ALL
            .iter()
            .find(|t| Some(t.label()) == mark && want.contains(&t.eltype()))
            .map(|t| Layout::scalar(t.eltype(), t.elbyte()))
    };
    Ok(match field.data_type() {
        DataType::Boolean => Layout::Scalar {
            eltype: ElType::Uint,
            elbyte: 1,
            logical: Some(Logical::Bool),
        },
        DataType::Int8 => Layout::scalar(ElType::Int, 1),
        DataType::Int16 => Layout::scalar(ElType::Int, 2),
        DataType::Int32 => Layout::scalar(ElType::Int, 4),
        DataType::Int64 => Layout::scalar(ElType::Int, 8),
        DataType::UInt8 => Layout::scalar(ElType::Uint, 1),
        DataType::UInt16 => Layout::scalar(ElType::Uint, 2),
        DataType::UInt32 => Layout::scalar(ElType::Uint, 4),
        DataType::UInt64 => Layout::scalar(ElType::Uint, 8),
        DataType::Float16 => Layout::scalar(ElType::Float, 2),
        DataType::Float32 => {
            marked_scalar(&[ElType::BFloat16]).unwrap_or(Layout::scalar(ElType::Float, 4))
        }
        DataType::Float64 => Layout::scalar(ElType::Float, 8),
        DataType::FixedSizeBinary(n) => {
            match marked_scalar(&[ElType::Int, ElType::Uint, ElType::Float]) {
                Some(l) if *n == 16 => l,
                _ => Layout::Array {
                    len: u64::try_from(*n).map_err(|_| refuse(column, field.data_type()))?,
                    item: Box::new(Layout::scalar(ElType::Uint, 1)),
                },
            }
        }
        DataType::FixedSizeList(item, n) if *n > 0 => Layout::Array {
            len: u64::try_from(*n).map_err(|_| refuse(column, field.data_type()))?,
            item: Box::new(layout_of(&format!("{column}[]"), item)?),
        },
        DataType::Struct(fields) => {
            if let Some(complex) = marked_scalar(&[ElType::Complex]) {
                complex
            } else {
                let mut out = Vec::with_capacity(fields.len());
                let mut offset = 0u64;
                for f in fields {
                    let layout = layout_of(&format!("{column}.{}", f.name()), f)?;
                    let size = layout.size();
                    out.push(rawarray_serde::Field {
                        name: f.name().clone(),
                        offset,
                        layout,
                    });
                    offset += size;
                }
                Layout::Record {
                    name: field.name().clone(),
                    fields: out,
                }
            }
        }
        other => match temporal_layout(other) {
            Some(Ok(layout)) => layout,
            Some(Err(why)) => {
                return Err(Error::Column {
                    column: column.to_string(),
                    why,
                })
            }
            None => return Err(refuse(column, other)),
        },
    })
}

/// The element layout a table of these columns is stored as: the layout recorded in its
/// metadata ([`SCHEMA_KEY`]) when that still describes exactly these columns (so names,
/// markers and the record's name come back as they were), a record of one field per column
/// otherwise. Columns that cannot be record fields are refused by name.
///
/// ```
/// use arrow_schema::{DataType, Field, Schema};
/// use rawarray_serde::Layout;
/// let s = Schema::new(vec![Field::new("step", DataType::UInt32, false), Field::new("e", DataType::Float64, false)]);
/// let l = rawarray_arrow::layout_of_schema(&s).unwrap();
/// assert_eq!(l.size(), 12);
/// assert!(matches!(l, Layout::Record { ref fields, .. } if fields[1].offset == 4));
/// ```
pub fn layout_of_schema(schema: &Schema) -> Result<Layout> {
    if let Some(recorded) = schema
        .metadata()
        .get(SCHEMA_KEY)
        .and_then(|json| serde_json::from_str::<Layout>(json).ok())
        .filter(|l| l.validate().is_ok())
    {
        if let Ok(expected) = arrow_schema(&recorded) {
            let same = expected.fields().len() == schema.fields().len()
                && expected
                    .fields()
                    .iter()
                    .zip(schema.fields())
                    .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
            if same {
                return Ok(recorded);
            }
        }
    }
    if schema.fields().is_empty() {
        return Err(Error::NoTable(
            "a table without columns has no records".into(),
        ));
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut offset = 0u64;
    for f in schema.fields() {
        let layout = layout_of(f.name(), f)?;
        let size = layout.size();
        fields.push(rawarray_serde::Field {
            name: f.name().clone(),
            offset,
            layout,
        });
        offset += size;
    }
    let layout = Layout::Record {
        name: String::new(),
        fields,
    };
    layout.validate()?;
    Ok(layout)
}
