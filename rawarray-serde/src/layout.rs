//! The layout of one element as a schema (scalars, fixed arrays, named records), its checks,
//! and its numpy dtype.

use serde::{Deserialize, Serialize};

use crate::eltype::ElType;
use crate::error::{ErrorKind, Result};
use crate::numpy;
use crate::time::TimeUnit;

/// The layout of one element, as a schema: scalars, fixed arrays and named records.
///
/// Serialized (JSON in the trailer) with a `kind` tag. [`Layout::numpy_descr`] turns it into
/// a numpy dtype.
///
/// ```
/// use rawarray_serde::{Element, Layout};
/// let l = <[f64; 3] as Element>::layout();
/// assert_eq!(l.size(), 24);
/// assert_eq!(l.numpy_descr(), "('<f8', (3,))");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Layout {
    /// One scalar of a primitive eltype.
    Scalar {
        /// The element type (never `user`).
        eltype: ElType,
        /// Its size in bytes.
        elbyte: u64,
        /// What the stored number means beyond its type, if more: [`Logical::Bool`],
        /// [`Logical::Text`]. Omitted
        /// from the JSON when `None`, so older readers, which ignore the key, see the number.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logical: Option<Logical>,
    },
    /// `len` consecutive items.
    Array {
        /// Number of items.
        len: u64,
        /// The item's layout.
        item: Box<Layout>,
    },
    /// Named fields at byte offsets, packed in declaration order.
    Record {
        /// The Rust type's name.
        name: String,
        /// The fields.
        fields: Vec<Field>,
    },
}

/// A logical type: a meaning given to a scalar's stored number, marked in the schema.
///
/// The data stays what the scalar's eltype and elbyte say, so a reader that does not know
/// the marker still reads true numbers; one that does gives them their meaning.
///
/// ```
/// use rawarray_serde::{ElType, Element, Layout, Logical};
/// let b = <bool as Element>::layout();
/// assert_eq!(b, Layout::Scalar { eltype: ElType::Uint, elbyte: 1, logical: Some(Logical::Bool) });
/// assert_eq!(
///     serde_json::to_string(&b).unwrap(),
///     r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"bool"}"#
/// );
/// assert_eq!(b.numpy_descr(), "'|b1'");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Logical {
    /// A boolean: a `uint` of one byte holding 0 (false) or 1 (true); numpy's `?` (`|b1`).
    Bool,
    /// UTF-8 text: a `uint` of one byte, one byte of a string. In a ragged file (flag bit 3)
    /// each row is one string, validated on read; numpy has no such type (`|u1`), and elsewhere
    /// (a plain array, a record field) the bytes read as `u8`.
    ///
    /// ```
    /// use rawarray_serde::{ElType, Layout, Logical};
    /// let t = Layout::Scalar { eltype: ElType::Uint, elbyte: 1, logical: Some(Logical::Text) };
    /// assert_eq!(
    ///     serde_json::to_string(&t).unwrap(),
    ///     r#"{"kind":"scalar","eltype":"uint","elbyte":1,"logical":"text"}"#
    /// );
    /// assert_eq!(t.numpy_descr(), "'|u1'");
    /// ```
    Text,
    /// A point in time: a signed count of `unit`s since 1970-01-01T00:00:00 UTC, stored as an
    /// `int` of 8 bytes (Arrow's `Timestamp(unit, tz)`, numpy's `datetime64[unit]`). `tz`, if
    /// any, is the time zone the values are shown in (Arrow's); the values are UTC either way.
    /// In the JSON: `"timestamp[ns]"`, `"timestamp[us, tz=Europe/Paris]"`.
    ///
    /// ```
    /// use rawarray_serde::{time::TimeUnit, ElType, Layout, Logical};
    /// let t = Layout::Scalar {
    ///     eltype: ElType::Int,
    ///     elbyte: 8,
    ///     logical: Some(Logical::Timestamp { unit: TimeUnit::Microsecond, tz: Some("UTC".into()) }),
    /// };
    /// assert_eq!(
    ///     serde_json::to_string(&t).unwrap(),
    ///     r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[us, tz=UTC]"}"#
    /// );
    /// assert_eq!(t.numpy_descr(), "'<M8[us]'");
    /// ```
    Timestamp {
        /// What the stored integer counts.
        unit: TimeUnit,
        /// The time zone to show the values in: an IANA name or a UTC offset.
        tz: Option<String>,
    },
    /// A length of time: a signed count of `unit`s, stored as an `int` of 8 bytes (Arrow's
    /// `Duration(unit)`, numpy's `timedelta64[unit]`). In the JSON: `"duration[ms]"`.
    Duration {
        /// What the stored integer counts.
        unit: TimeUnit,
    },
    /// A calendar date: a signed count of days since 1970-01-01, stored as an `int` of 4 bytes
    /// (Arrow's `Date32`). numpy has no 4-byte date: it reads the day count (`<i4`), which
    /// `.astype("M8[D]")` makes dates. In the JSON: `"date"`.
    Date,
}

impl std::fmt::Display for Logical {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Logical::Timestamp { unit, tz: None } => write!(f, "timestamp[{unit}]"),
            Logical::Timestamp { unit, tz: Some(tz) } => write!(f, "timestamp[{unit}, tz={tz}]"),
            Logical::Duration { unit } => write!(f, "duration[{unit}]"),
            other => f.write_str(other.name()),
        }
    }
}

impl std::str::FromStr for Logical {
    type Err = String;

    /// The JSON's string: `bool`, `text`, `date`, `timestamp[UNIT]`,
    /// `timestamp[UNIT, tz=ZONE]`, `duration[UNIT]`; anything else names what is wrong.
    fn from_str(s: &str) -> std::result::Result<Logical, String> {
        let unit_in = |rest: &str| -> std::result::Result<(TimeUnit, Option<String>), String> {
            let inner = rest
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .ok_or_else(|| format!("logical \"{s}\": expected [UNIT] after the name"))?;
            let (unit, tz) = match inner.split_once(", tz=") {
                Some((u, tz)) => (u, Some(tz)),
                None if inner.contains("tz=") => {
                    return Err(format!(
                        "logical \"{s}\": a time zone follows the unit as \", tz=ZONE\" (a comma, \
                         one space)"
                    ))
                }
                None => (inner, None),
            };
            let unit = unit
                .parse::<TimeUnit>()
                .map_err(|e| format!("logical \"{s}\": {e}"))?;
            if let Some(tz) = tz {
                if !crate::time::valid_time_zone(tz) {
                    return Err(format!(
                        "logical \"{s}\": time zone \"{tz}\" is not an IANA name or a UTC offset \
                         (1 to 64 of A-Z a-z 0-9 / _ + - :)"
                    ));
                }
            }
            Ok((unit, tz.map(str::to_string)))
        };
        Ok(match s {
            "bool" => Logical::Bool,
            "text" => Logical::Text,
            "date" => Logical::Date,
            _ => {
                if let Some(rest) = s.strip_prefix("timestamp") {
                    let (unit, tz) = unit_in(rest)?;
                    Logical::Timestamp { unit, tz }
                } else if let Some(rest) = s.strip_prefix("duration") {
                    match unit_in(rest)? {
                        (unit, None) => Logical::Duration { unit },
                        (_, Some(_)) => {
                            return Err(format!("logical \"{s}\": a duration has no time zone"))
                        }
                    }
                } else {
                    return Err(format!(
                        "logical \"{s}\" is not one of bool, text, timestamp[UNIT], \
                         duration[UNIT], date"
                    ));
                }
            }
        })
    }
}

impl Serialize for Logical {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Logical {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Logical, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One field of a [`Layout::Record`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// The field's name (its index for tuple structs).
    pub name: String,
    /// Byte offset from the start of the record.
    pub offset: u64,
    /// The field's layout.
    pub layout: Layout,
}

/// How strictly an element type must match a file's record schema before the file is read as
/// that type ([`Layout::check_against`]).
///
/// A file without a schema (a plain array, or records written without a trailer) cannot be
/// checked: it is read whatever the mode, by its header's eltype and elbyte alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SchemaCheck {
    /// Field names, types and offsets must match; the record's own name may differ (files
    /// written from numpy have none), and a logical marker (`bool`, `timestamp[ns]`) may be
    /// missing on one side: both are reported as notes. Two different markers are a mismatch.
    /// The default.
    #[default]
    Fields,
    /// Everything must match, the record's name and logical markers too.
    Strict,
    /// No check: the bytes are reinterpreted as the type, for a user who means to.
    Off,
}

/// Deepest nesting a layout may have: on any path from the layout's root to a scalar, at most
/// this many arrays and records (doc/format.md, section 6.3). A scalar nests 0 levels,
/// `[f64; 3]` 1, a record of `[f32; 3]` fields 2. 64 is numpy's limit on a sub-array's dims
/// (NPY_MAXDIMS); a schema read from a file is walked recursively, so its depth must be
/// bounded, and the trailer's JSON reader reads every layout this bound admits
/// ([`crate::trailer::MAX_JSON_DEPTH`]).
pub const MAX_LAYOUT_DEPTH: usize = 64;

impl Layout {
    /// Checks a layout, as every schema read from a file is checked before use: scalars of a
    /// primitive eltype and a width it has; arrays of at least one item; records of at least
    /// one field, named (uniquely, without quotes, backslashes or control characters) and
    /// packed in order (each field at the offset where the one before ends); at most
    /// [`MAX_LAYOUT_DEPTH`] arrays and records on any path to a scalar; a size that fits in 64
    /// bits. Returns the packed size.
    ///
    /// Every item is then at least one byte, so walking one element's layout visits at most
    /// its size in nodes. A failing layout is [`ErrorKind::BadSchema`], naming the field.
    ///
    /// ```
    /// use rawarray_serde::{ElType, ErrorKind, Field, Layout};
    /// let f = |name: &str, offset, elbyte| Field {
    ///     name: name.into(),
    ///     offset,
    ///     layout: Layout::scalar(ElType::Float, elbyte),
    /// };
    /// let good = Layout::Record { name: "P".into(), fields: vec![f("t", 0, 8), f("x", 8, 4)] };
    /// assert_eq!(good.validate().unwrap(), 12);
    /// let gap = Layout::Record { name: "P".into(), fields: vec![f("t", 0, 8), f("x", 30, 4)] };
    /// assert!(matches!(gap.validate().unwrap_err().kind(), ErrorKind::BadSchema(_)));
    /// let wide = Layout::Record { name: "P".into(), fields: vec![f("t", 0, 3)] };
    /// assert!(wide.validate().is_err()); // no float is 3 bytes
    /// ```
    pub fn validate(&self) -> Result<u64> {
        self.check(0, "the element")
    }

    /// [`Layout::validate`], and the packed size must be `elbyte`: the layout of the elements
    /// of a file whose header says `elbyte`.
    pub fn validate_for(&self, elbyte: u64) -> Result<()> {
        let size = self.validate()?;
        if size != elbyte {
            return Err(bad_schema(format!(
                "of {size} bytes describes elements of elbyte {elbyte}"
            )));
        }
        Ok(())
    }

    /// Whether this schema, read from a file's trailer, describes the elements its header
    /// counts: the one check of a schema against a file, which every reader and tool makes
    /// before trusting it. Its base (under the arrays a record file's inner dims stand for) must
    /// be a record over user-defined (eltype 0) elements, or a scalar of the header's eltype and
    /// elbyte (a plain array's `bool` marker); and valid ([`Layout::validate`]) with the
    /// header's elbyte. Returns that base: the layout of one element the header counts.
    /// Otherwise [`ErrorKind::BadSchema`], saying what differs.
    ///
    /// ```
    /// use rawarray_serde::{Element, Header, ElType};
    /// let bools = Header::new(ElType::Uint, 1, vec![4]).unwrap();
    /// assert_eq!(bool::layout().check_header(&bools).unwrap(), &bool::layout());
    /// assert_eq!(<[bool; 3]>::layout().check_header(&bools).unwrap(), &bool::layout());
    /// let floats = Header::new(ElType::Float, 4, vec![4]).unwrap();
    /// assert!(bool::layout().check_header(&floats).is_err());
    /// ```
    pub fn check_header(&self, header: &crate::header::Header) -> Result<&Layout> {
        let base = self.split_shape().0;
        let fits = match base {
            Layout::Record { .. } => header.eltype == ElType::User,
            Layout::Scalar { eltype, elbyte, .. } => {
                (*eltype, *elbyte) == (header.eltype, header.elbyte)
            }
            Layout::Array { .. } => unreachable!("split_shape strips every array"),
        };
        if !fits {
            return Err(bad_schema(format!(
                "{} does not describe elements of eltype {} ({}) and elbyte {}",
                base.describe(),
                header.eltype.code(),
                header.eltype,
                header.elbyte
            )));
        }
        base.validate_for(header.elbyte)?;
        Ok(base)
    }

    fn check(&self, depth: usize, at: &str) -> Result<u64> {
        // `depth`: the arrays and records around `self`. Each of them has at least one item or
        // field, so one past the bound is reached before any scalar below it.
        if depth > MAX_LAYOUT_DEPTH {
            return Err(bad_schema(format!(
                "nests too deep at {at}: a schema nests at most {MAX_LAYOUT_DEPTH} arrays and \
                 records"
            )));
        }
        match self {
            Layout::Scalar {
                eltype,
                elbyte,
                logical,
            } => {
                if let Some(l) = logical {
                    let (want, words) = l.stored_as();
                    if (*eltype, *elbyte) != want {
                        return Err(bad_schema(format!(
                            "{at}: logical \"{l}\" marks {words}, not eltype {} ({eltype}) of \
                             {elbyte} bytes",
                            eltype.code()
                        )));
                    }
                }
                if *eltype == ElType::User || !eltype.is_valid_elbyte(*elbyte) {
                    return Err(bad_schema(format!(
                        "{at}: a scalar of eltype {} ({eltype}) cannot be {elbyte} bytes \
                         (expected one of {:?})",
                        eltype.code(),
                        eltype.valid_elbytes().unwrap_or(&[])
                    )));
                }
                Ok(*elbyte)
            }
            Layout::Array { len, item } => {
                if *len == 0 {
                    return Err(bad_schema(format!("{at}: an array of 0 items")));
                }
                let size = item.check(depth + 1, &format!("{at}'s items"))?;
                size.checked_mul(*len).ok_or_else(|| {
                    bad_schema(format!(
                        "{at}: {len} items of {size} bytes overflow 64 bits"
                    ))
                })
            }
            Layout::Record { fields, .. } => {
                if fields.is_empty() {
                    return Err(bad_schema(format!("{at}: a record with no fields")));
                }
                let mut names = std::collections::HashSet::new();
                let mut end = 0u64;
                for f in fields {
                    let name = &f.name;
                    if name.is_empty()
                        || name
                            .chars()
                            .any(|c| c.is_control() || c == '\'' || c == '\\')
                    {
                        return Err(bad_schema(format!("{at}: a field named {name:?}")));
                    }
                    if !names.insert(name.as_str()) {
                        return Err(bad_schema(format!("{at}: two fields named '{name}'")));
                    }
                    if f.offset != end {
                        return Err(bad_schema(format!(
                            "field '{name}' is at offset {}; packed in order, it would be at {end}",
                            f.offset
                        )));
                    }
                    let size = f.layout.check(depth + 1, &format!("field '{name}'"))?;
                    end = end
                        .checked_add(size)
                        .ok_or_else(|| bad_schema(format!("field '{name}' ends past 64 bits")))?;
                }
                Ok(end)
            }
        }
    }

    /// Checks that `file`, the schema a file stores, describes the same elements as `self`, the
    /// layout of the type a reader reads them as: the one check every reader and tool makes
    /// before reading records by a schema. Both are compared as the elements a header counts:
    /// arrays around them are inner dims, which the header's dims check. Returns notes on differences `mode` allows (a
    /// record name, a logical marker); a difference it does not allow is
    /// [`ErrorKind::SchemaMismatch`] naming the field. [`SchemaCheck::Off`] checks nothing.
    ///
    /// ```
    /// use rawarray_serde::{ElType, ErrorKind, Field, Layout, SchemaCheck};
    /// let rec = |name: &str, fields: &[&str]| Layout::Record {
    ///     name: name.into(),
    ///     fields: fields.iter().enumerate().map(|(i, f)| Field {
    ///         name: f.to_string(),
    ///         offset: 4 * i as u64,
    ///         layout: Layout::scalar(ElType::Float, 4),
    ///     }).collect(),
    /// };
    /// let ours = rec("Point", &["x", "y"]);
    /// // A file written from numpy: no record name. A note, not an error.
    /// let notes = ours.check_against(&rec("", &["x", "y"]), SchemaCheck::Fields).unwrap();
    /// assert_eq!(notes.len(), 1);
    /// assert!(ours.check_against(&rec("", &["x", "y"]), SchemaCheck::Strict).is_err());
    /// // Fields swapped: refused, naming the field.
    /// let err = ours.check_against(&rec("Point", &["y", "x"]), SchemaCheck::Fields).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::SchemaMismatch { .. }));
    /// assert!(err.to_string().contains("field 0"), "{err}");
    /// assert!(ours.check_against(&rec("", &["y", "x"]), SchemaCheck::Off).unwrap().is_empty());
    /// ```
    pub fn check_against(&self, file: &Layout, mode: SchemaCheck) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        if mode != SchemaCheck::Off {
            // Arrays around the elements are the file's inner dims, which its header checks.
            let (ours, file) = (self.split_shape().0, file.split_shape().0);
            let who = match ours {
                Layout::Record { name, .. } if !name.is_empty() => name.as_str(),
                _ => "the type read",
            };
            compare(ours, file, (mode, who), "the element", &mut notes)?;
        }
        Ok(notes)
    }

    /// The layout in words, for messages: `uint16`, `bool`, `[float32; 3]`, `record 'P' (x, y)`.
    pub fn describe(&self) -> String {
        match self {
            Layout::Scalar {
                logical: Some(l), ..
            } => l.to_string(),
            Layout::Scalar { eltype, elbyte, .. } => crate::eltype::type_label(*eltype, *elbyte),
            Layout::Array { len, item } => format!("[{}; {len}]", item.describe()),
            Layout::Record { name, fields } => {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                format!("record '{name}' ({})", names.join(", "))
            }
        }
    }

    /// Reverses the byte order of every scalar of one element laid out as `self`, in place:
    /// a big-endian file's records to little-endian and back (complex numbers part by part).
    /// The layout must have been validated for the element's size; parts of one that would
    /// reach past `element` are left alone.
    ///
    /// ```
    /// use rawarray_serde::{Element, Layout};
    /// let mut e = [1, 2, 3, 4];
    /// <[u16; 2] as Element>::layout().swap_byte_order(&mut e);
    /// assert_eq!(e, [2, 1, 4, 3]);
    /// <[u8; 4] as Element>::layout().swap_byte_order(&mut e);
    /// assert_eq!(e, [2, 1, 4, 3]); // bytes have no order
    /// ```
    pub fn swap_byte_order(&self, element: &mut [u8]) {
        let Some(b) = usize::try_from(self.size())
            .ok()
            .and_then(|n| element.get_mut(..n))
        else {
            return;
        };
        match self {
            Layout::Scalar { eltype, elbyte, .. } => {
                if let Some(w) = eltype.swap_width(*elbyte).filter(|&w| w > 1) {
                    b.chunks_exact_mut(w as usize).for_each(<[u8]>::reverse);
                }
            }
            Layout::Array { len, item } => {
                let size = usize::try_from(item.size()).unwrap_or(usize::MAX);
                for i in 0..usize::try_from(*len).unwrap_or(usize::MAX) {
                    let Some(part) = i.checked_mul(size).and_then(|at| b.get_mut(at..)) else {
                        break;
                    };
                    item.swap_byte_order(part);
                }
            }
            Layout::Record { fields, .. } => {
                for f in fields {
                    let at = usize::try_from(f.offset).unwrap_or(usize::MAX);
                    if let Some(part) = b.get_mut(at..) {
                        f.layout.swap_byte_order(part);
                    }
                }
            }
        }
    }

    /// Packed size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Layout::Scalar { elbyte, .. } => *elbyte,
            Layout::Array { len, item } => len.saturating_mul(item.size()),
            Layout::Record { fields, .. } => fields
                .last()
                .map_or(0, |f| f.offset.saturating_add(f.layout.size())),
        }
    }

    /// The numpy dtype as Python source: `'<f8'`, `('<f8', (3,))`, or for a record
    /// `[('info', '|u1', (12,)), ('index', '<u4'), ('v', '<f8', (8,))]`.
    /// Scalars numpy has no type for (bfloat16, 128-bit) become raw bytes `'V2'`, `'V16'`.
    pub fn numpy_descr(&self) -> String {
        match self.split_shape() {
            (base, shape) if shape.is_empty() => base.numpy_base(),
            (base, shape) => format!("({}, {})", base.numpy_base(), numpy::shape(&shape)),
        }
    }

    /// The numpy dtype as JSON that `numpy.dtype` accepts once lists become tuples:
    /// a string for scalars, `[[name, dtype], [name, dtype, [shape...]], ...]` for records.
    pub fn numpy_descr_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Layout::Record { fields, .. } => Value::Array(
                fields
                    .iter()
                    .map(|f| {
                        let (base, shape) = f.layout.split_shape();
                        let mut entry = vec![Value::from(f.name.clone()), base.numpy_descr_json()];
                        if !shape.is_empty() {
                            entry.push(Value::from(shape));
                        }
                        Value::Array(entry)
                    })
                    .collect(),
            ),
            Layout::Array { .. } => {
                let (base, shape) = self.split_shape();
                Value::Array(vec![base.numpy_descr_json(), Value::from(shape)])
            }
            Layout::Scalar { .. } => Value::from(self.scalar_dtype()),
        }
    }

    /// The layout a numpy dtype describes, given as [`Layout::numpy_descr_json`] writes it (the
    /// `descr` of a `.npy` header, with tuples as lists): the inverse of that function, except
    /// that records come back with an empty `name` (numpy has none) and raw `V` bytes are
    /// refused (they have no element type). Big-endian fields are refused too: a layout's
    /// scalars are little-endian. So are sub-arrays of more than 64 dims in all, as numpy
    /// refuses them: each dim nests the layout one level deeper.
    ///
    /// ```
    /// use rawarray_serde::{ElType, Layout};
    /// let descr = serde_json::json!([["t", "<f8"], ["xyz", "<f4", [3]]]);
    /// let l = Layout::from_numpy_descr_json(&descr).unwrap();
    /// assert_eq!(l.size(), 8 + 12);
    /// assert_eq!(l.numpy_descr_json(), descr);
    /// assert!(Layout::from_numpy_descr_json(&serde_json::json!("|V4")).is_err());
    /// ```
    pub fn from_numpy_descr_json(descr: &serde_json::Value) -> Result<Layout> {
        use serde_json::Value;
        let bad = |what: String| crate::error::Error::from(ErrorKind::Unsupported(what));
        let big_endian = |s: &str| {
            bad(format!(
                "numpy dtype '{s}' is big-endian: layouts hold little-endian scalars"
            ))
        };
        let shape_of =
            |v: &Value| -> Option<Vec<u64>> { v.as_array()?.iter().map(Value::as_u64).collect() };
        // numpy's NPY_MAXDIMS. A hostile header's shape of 10^5 dims would nest the layout
        // deeper than its recursive methods, and its drop, can go on a thread's stack.
        const MAX_SUBARRAY_DIMS: usize = 64;
        let wrap = |mut item: Layout, shape: &[u64]| {
            let depth = item.split_shape().1.len() + shape.len();
            if depth > MAX_SUBARRAY_DIMS {
                return Err(bad(format!(
                    "a sub-array of {depth} dims (numpy allows {MAX_SUBARRAY_DIMS})"
                )));
            }
            for &len in shape.iter().rev() {
                item = Layout::Array {
                    len,
                    item: Box::new(item),
                };
            }
            Ok(item)
        };
        match descr {
            Value::String(s) if numpy::is_bool_dtype(s) => Ok(Layout::Scalar {
                eltype: ElType::Uint,
                elbyte: 1,
                logical: Some(Logical::Bool),
            }),
            Value::String(s) if Logical::of_numpy_dtype(s).is_some() => {
                let logical = Logical::of_numpy_dtype(s).expect("checked").map_err(bad)?;
                if numpy::is_big_endian(s) {
                    return Err(big_endian(s));
                }
                let ((eltype, elbyte), _) = logical.stored_as();
                Ok(Layout::Scalar {
                    eltype,
                    elbyte,
                    logical: Some(logical),
                })
            }
            Value::String(s) => match numpy::parse_dtype(s) {
                Some((eltype, elbyte, false)) => Ok(Layout::scalar(eltype, elbyte)),
                Some((_, _, true)) => Err(big_endian(s)),
                None => Err(bad(format!("numpy dtype '{s}' has no .ra element type"))),
            },
            // [base, [shape...]]: a sub-array, as `numpy_descr_json` writes `Layout::Array`.
            Value::Array(v)
                if v.len() == 2
                    && !matches!(&v[0], Value::Array(e) if e.first().is_some_and(Value::is_string))
                    && shape_of(&v[1]).is_some() =>
            {
                let item = Layout::from_numpy_descr_json(&v[0])?;
                wrap(item, &shape_of(&v[1]).expect("checked"))
            }
            Value::Array(entries) => {
                let mut fields = Vec::with_capacity(entries.len());
                let mut offset = 0u64;
                for e in entries {
                    let (name, base, shape) = match e.as_array().map(Vec::as_slice) {
                        Some([Value::String(n), base]) => (n, base, Vec::new()),
                        Some([Value::String(n), base, shape]) => (
                            n,
                            base,
                            shape_of(shape)
                                .ok_or_else(|| bad(format!("field '{n}': bad shape {shape}")))?,
                        ),
                        _ => return Err(bad(format!("not a numpy record field: {e}"))),
                    };
                    let layout = wrap(Layout::from_numpy_descr_json(base)?, &shape)?;
                    let size = layout.size();
                    fields.push(Field {
                        name: name.clone(),
                        offset,
                        layout,
                    });
                    offset = offset
                        .checked_add(size)
                        .ok_or_else(|| bad("record size overflows".into()))?;
                }
                if fields.is_empty() {
                    return Err(bad("a record with no fields".into()));
                }
                Ok(Layout::Record {
                    name: String::new(),
                    fields,
                })
            }
            other => Err(bad(format!("not a numpy dtype: {other}"))),
        }
    }

    /// A scalar with no logical type.
    ///
    /// ```
    /// use rawarray_serde::{ElType, Element, Layout};
    /// assert_eq!(Layout::scalar(ElType::Float, 4), f32::layout());
    /// ```
    pub fn scalar(eltype: ElType, elbyte: u64) -> Layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical: None,
        }
    }

    /// The schema a plain (non-record) array of elements of this layout keeps in its trailer:
    /// its base scalar, when that scalar carries a logical type a reader must be told of
    /// (`bool`); `None` when the header says all there is. A file of `[bool; 3]` values is a
    /// `u8` file with one more dim, so its schema is the bool scalar, not the array.
    ///
    /// ```
    /// use rawarray_serde::Element;
    /// assert_eq!(<[bool; 3]>::layout().plain_schema(), Some(bool::layout()));
    /// assert_eq!(u8::layout().plain_schema(), None);
    /// ```
    pub fn plain_schema(&self) -> Option<Layout> {
        match self.split_shape().0 {
            s @ Layout::Scalar {
                logical: Some(_), ..
            } => Some(s.clone()),
            _ => None,
        }
    }

    /// The same layout with every logical type dropped (a bool becomes its `u8`): the dtype
    /// readers that predate logical types compute from it, which a trailer's `numpy_descr`
    /// keeps so that they still find it consistent.
    pub(crate) fn without_logical(&self) -> Layout {
        match self {
            Layout::Scalar { eltype, elbyte, .. } => Layout::scalar(*eltype, *elbyte),
            Layout::Array { len, item } => Layout::Array {
                len: *len,
                item: Box::new(item.without_logical()),
            },
            Layout::Record { name, fields } => Layout::Record {
                name: name.clone(),
                fields: fields
                    .iter()
                    .map(|f| Field {
                        name: f.name.clone(),
                        offset: f.offset,
                        layout: f.layout.without_logical(),
                    })
                    .collect(),
            },
        }
    }

    /// numpy's name of a scalar layout: `'|b1'` for a bool, raw bytes `V{elbyte}` where numpy
    /// has no such type.
    fn scalar_dtype(&self) -> String {
        match self {
            Layout::Scalar {
                logical: Some(l), ..
            } if l.numpy_dtype().is_some() => l.numpy_dtype().unwrap_or_default(),
            Layout::Scalar { eltype, elbyte, .. } => {
                numpy::dtype(*eltype, *elbyte).map_or_else(|| format!("V{elbyte}"), str::to_string)
            }
            _ => unreachable!("called on scalars only"),
        }
    }

    /// The base layout under nested arrays, and their lengths outermost first (numpy's order).
    pub(crate) fn split_shape(&self) -> (&Layout, Vec<u64>) {
        let mut shape = Vec::new();
        let mut l = self;
        while let Layout::Array { len, item } = l {
            shape.push(*len);
            l = item;
        }
        (l, shape)
    }

    fn numpy_base(&self) -> String {
        match self {
            Layout::Scalar { .. } => format!("'{}'", self.scalar_dtype()),
            Layout::Record { fields, .. } => {
                let items: Vec<String> = fields
                    .iter()
                    .map(|f| {
                        let (base, shape) = f.layout.split_shape();
                        if shape.is_empty() {
                            format!("('{}', {})", f.name, base.numpy_base())
                        } else {
                            format!(
                                "('{}', {}, {})",
                                f.name,
                                base.numpy_base(),
                                numpy::shape(&shape)
                            )
                        }
                    })
                    .collect();
                format!("[{}]", items.join(", "))
            }
            Layout::Array { .. } => self.numpy_descr(),
        }
    }
}

/// [`Layout::check_against`]'s walk: `ours` the reader's, `file` the file's, at `at`; `who`
/// names the type read, for messages.
fn compare(
    ours: &Layout,
    file: &Layout,
    (mode, who): (SchemaCheck, &str),
    at: &str,
    notes: &mut Vec<String>,
) -> Result<()> {
    let differ = |at: &str, file: String, expected: String| -> crate::error::Error {
        ErrorKind::SchemaMismatch {
            at: at.to_string(),
            file,
            reader: who.to_string(),
            expected,
        }
        .into()
    };
    let mismatch = || differ(at, file.describe(), ours.describe());
    match (ours, file) {
        (
            Layout::Scalar {
                eltype: a,
                elbyte: na,
                logical: la,
            },
            Layout::Scalar {
                eltype: b,
                elbyte: nb,
                logical: lb,
            },
        ) => {
            if (a, na) != (b, nb) {
                return Err(mismatch());
            }
            if la != lb {
                // The bytes are the same numbers either way; the marker only names their meaning.
                // Two different meanings (milliseconds and microseconds, a time and a length
                // of time) are not the same values, whatever the mode.
                if mode == SchemaCheck::Strict || (la.is_some() && lb.is_some()) {
                    return Err(mismatch());
                }
                notes.push(format!(
                    "{at}: the file has {}, {who} has {}",
                    file.describe(),
                    ours.describe()
                ));
            }
            Ok(())
        }
        (Layout::Array { len: a, item: ia }, Layout::Array { len: b, item: ib }) => {
            if a != b {
                return Err(mismatch());
            }
            compare(ia, ib, (mode, who), &format!("{at}'s items"), notes)
        }
        (
            Layout::Record {
                name: na,
                fields: fa,
            },
            Layout::Record {
                name: nb,
                fields: fb,
            },
        ) => {
            for (i, (x, y)) in fa.iter().zip(fb).enumerate() {
                if x.name != y.name || x.offset != y.offset {
                    return Err(differ(
                        &format!("field {i}"),
                        format!("'{}' at offset {}", y.name, y.offset),
                        format!("'{}' at offset {}", x.name, x.offset),
                    ));
                }
                let at = format!("field '{}'", x.name);
                compare(&x.layout, &y.layout, (mode, who), &at, notes)?;
            }
            if fa.len() != fb.len() {
                return Err(differ(
                    at,
                    format!("{} fields", fb.len()),
                    format!("{} fields", fa.len()),
                ));
            }
            if na != nb {
                if mode == SchemaCheck::Strict {
                    return Err(differ(
                        "the record's name",
                        format!("'{nb}'"),
                        format!("'{na}'"),
                    ));
                }
                notes.push(format!(
                    "the record's name: the file's is '{nb}', {who}'s '{na}' (not compared)"
                ));
            }
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

fn bad_schema(why: String) -> crate::error::Error {
    ErrorKind::BadSchema(why).into()
}

impl Logical {
    /// Its name, the JSON's string up to its `[`: `bool`, `text`, `timestamp`, `duration`,
    /// `date`.
    pub fn name(&self) -> &'static str {
        match self {
            Logical::Bool => "bool",
            Logical::Text => "text",
            Logical::Timestamp { .. } => "timestamp",
            Logical::Duration { .. } => "duration",
            Logical::Date => "date",
        }
    }

    /// The scalar it marks (eltype and elbyte), and that in words for messages. The one table
    /// of which marker goes on which number.
    ///
    /// ```
    /// use rawarray_serde::{ElType, Logical};
    /// assert_eq!(Logical::Date.stored_as().0, (ElType::Int, 4));
    /// ```
    pub fn stored_as(&self) -> ((ElType, u64), &'static str) {
        match self {
            Logical::Bool | Logical::Text => ((ElType::Uint, 1), "a uint of 1 byte"),
            Logical::Timestamp { .. } | Logical::Duration { .. } => {
                ((ElType::Int, 8), "an int of 8 bytes")
            }
            Logical::Date => ((ElType::Int, 4), "an int of 4 bytes"),
        }
    }

    /// The logical marker of a numpy `datetime64`/`timedelta64` dtype string (`<M8[ns]`,
    /// `m8[s]`), `None` for any other dtype. Units other than Arrow's four (`D`, `h`, `ps`, ...)
    /// are the error, in words. The marker says what the values mean, not their byte order:
    /// `>M8[ns]` is `timestamp[ns]` too, of big-endian values
    /// ([`crate::numpy::is_big_endian`]), which whoever copies them
    /// swaps (a layout, of little-endian scalars, refuses the dtype).
    ///
    /// ```
    /// use rawarray_serde::{time::TimeUnit, Logical};
    /// assert_eq!(Logical::of_numpy_dtype("<M8[ns]"), Some(Ok(Logical::Timestamp { unit: TimeUnit::Nanosecond, tz: None })));
    /// assert_eq!(Logical::of_numpy_dtype(">M8[ns]"), Logical::of_numpy_dtype("<M8[ns]"));
    /// assert_eq!(Logical::of_numpy_dtype("<m8[s]"), Some(Ok(Logical::Duration { unit: TimeUnit::Second })));
    /// assert!(Logical::of_numpy_dtype("<M8[D]").unwrap().unwrap_err().contains("astype"));
    /// assert_eq!(Logical::of_numpy_dtype("<i8"), None);
    /// ```
    pub fn of_numpy_dtype(descr: &str) -> Option<std::result::Result<Logical, String>> {
        let kind = descr.strip_prefix(['<', '>', '=', '|']).unwrap_or(descr);
        let (timestamp, rest) = if let Some(r) = kind.strip_prefix("M8") {
            (true, r)
        } else {
            (false, kind.strip_prefix("m8")?)
        };
        let what = if timestamp {
            "datetime64"
        } else {
            "timedelta64"
        };
        let unit = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
        let Some(Ok(unit)) = unit.map(str::parse::<TimeUnit>) else {
            return Some(Err(format!(
                "numpy dtype {what}{rest} has no .ra element type: a .ra file stores \
                     {what} in s, ms, us or ns (Arrow's units); convert with \
                     a.astype('{}8[s]') or another of them",
                if timestamp { 'M' } else { 'm' }
            )));
        };
        Some(Ok(if timestamp {
            Logical::Timestamp { unit, tz: None }
        } else {
            Logical::Duration { unit }
        }))
    }

    /// One stored value it marks (`le`: its little-endian bytes, as many as
    /// [`Logical::stored_as`] says) as text, for tools that print values: ISO 8601 for a
    /// timestamp (in UTC, `Z`; the zone only says how to show it, and showing it in that zone
    /// would need the time zone database) and a date, the count and unit for a duration.
    /// `None` for markers whose values print as numbers (bool, text) and bytes of another length.
    ///
    /// ```
    /// use rawarray_serde::{time::TimeUnit, Logical};
    /// let t = Logical::Timestamp { unit: TimeUnit::Second, tz: None };
    /// assert_eq!(t.value_text(&86_400i64.to_le_bytes()).unwrap(), "1970-01-02T00:00:00Z");
    /// assert_eq!(Logical::Date.value_text(&(-1i32).to_le_bytes()).unwrap(), "1969-12-31");
    /// assert_eq!(Logical::Bool.value_text(&[1]), None);
    /// ```
    pub fn value_text(&self, le: &[u8]) -> Option<String> {
        let i64_of = || Some(i64::from_le_bytes(le.try_into().ok()?));
        Some(match self {
            Logical::Timestamp { unit, .. } => crate::time::timestamp_text(i64_of()?, *unit),
            Logical::Duration { unit } => crate::time::duration_text(i64_of()?, *unit),
            Logical::Date => {
                crate::time::date_text(i64::from(i32::from_le_bytes(le.try_into().ok()?)))
            }
            Logical::Bool | Logical::Text => return None,
        })
    }

    /// numpy's dtype for the values it marks, where numpy has one that views the stored bytes
    /// as they are: `|b1`, `<M8[ns]`, `<m8[s]`.
    pub(crate) fn numpy_dtype(&self) -> Option<String> {
        match self {
            Logical::Bool => Some("|b1".into()),
            Logical::Timestamp { unit, .. } => Some(format!("<M8[{unit}]")),
            Logical::Duration { unit } => Some(format!("<m8[{unit}]")),
            Logical::Text | Logical::Date => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    #[test]
    fn numpy_descr_json_round_trips_through_from_numpy_descr_json() {
        let scalar = Layout::scalar;
        let inner = Layout::Record {
            name: String::new(),
            fields: vec![
                Field {
                    name: "a".into(),
                    offset: 0,
                    layout: scalar(ElType::Int, 2),
                },
                Field {
                    name: "b".into(),
                    offset: 2,
                    layout: scalar(ElType::Complex, 16),
                },
            ],
        };
        let grid = Layout::Array {
            len: 2,
            item: Box::new(Layout::Array {
                len: 3,
                item: Box::new(scalar(ElType::Float, 4)),
            }),
        };
        let outer = Layout::Record {
            name: String::new(),
            fields: vec![
                Field {
                    name: "id".into(),
                    offset: 0,
                    layout: scalar(ElType::Uint, 8),
                },
                Field {
                    name: "grid".into(),
                    offset: 8,
                    layout: grid.clone(),
                },
                Field {
                    name: "inner".into(),
                    offset: 32,
                    layout: inner.clone(),
                },
                Field {
                    name: "many".into(),
                    offset: 50,
                    layout: Layout::Array {
                        len: 4,
                        item: Box::new(inner.clone()),
                    },
                },
            ],
        };
        for l in [scalar(ElType::Float, 8), grid, inner, outer] {
            let json = l.numpy_descr_json();
            assert_eq!(Layout::from_numpy_descr_json(&json).unwrap(), l, "{json}");
        }
        for bad in [
            serde_json::json!("|V2"),
            serde_json::json!(">f8"),
            serde_json::json!([["a", ">i4"]]),
            serde_json::json!([]),
            serde_json::json!([["a"]]),
            serde_json::json!([[["title", "a"], "<f4"]]),
            serde_json::json!(3),
        ] {
            assert!(Layout::from_numpy_descr_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn foo_like_descr() {
        let rec = Layout::Record {
            name: "Foo".into(),
            fields: vec![
                Field {
                    name: "info".into(),
                    offset: 0,
                    layout: <[u8; 12]>::layout(),
                },
                Field {
                    name: "index".into(),
                    offset: 12,
                    layout: u32::layout(),
                },
                Field {
                    name: "v".into(),
                    offset: 16,
                    layout: <[f64; 8]>::layout(),
                },
            ],
        };
        assert_eq!(rec.size(), 80);
        assert_eq!(
            rec.numpy_descr(),
            "[('info', '|u1', (12,)), ('index', '<u4'), ('v', '<f8', (8,))]"
        );
    }

    /// A record chain `n` records deep, and an array chain `n` arrays deep, over one float.
    fn chains(n: usize) -> (Layout, Layout) {
        let mut record = f64::layout();
        let mut array = f64::layout();
        for k in 0..n {
            record = Layout::Record {
                name: String::new(),
                fields: vec![Field {
                    name: format!("l{k}"),
                    offset: 0,
                    layout: record,
                }],
            };
            array = Layout::Array {
                len: 1,
                item: Box::new(array),
            };
        }
        (record, array)
    }

    #[test]
    fn every_layout_validate_accepts_reads_back_from_a_trailer() {
        let reads_back = |l: &Layout| {
            let t = crate::Trailer::new(()).unwrap().with_schema(l.clone());
            let back = crate::Trailer::from_trailing_bytes(&t.encode_block(0));
            back.map(|t| t.unwrap().schema == Some(l.clone()))
        };
        // Arrays and records count alike: 64 of either, the deepest JSON a schema makes
        // (three levels a record) read back from a trailer.
        let (deepest_record, deepest_array) = chains(MAX_LAYOUT_DEPTH);
        for l in [&deepest_record, &deepest_array] {
            assert!(l.validate().is_ok());
            assert!(reads_back(l).unwrap(), "{l:?}");
        }
        // One level more is refused up front, naming where, and a trailer holding it is damaged.
        let (record, array) = chains(MAX_LAYOUT_DEPTH + 1);
        for l in [&record, &array] {
            let err = l.validate().unwrap_err().to_string();
            assert!(
                err.contains("nests too deep at field 'l0'") || err.contains("items"),
                "{err}"
            );
            let err = reads_back(l).unwrap_err().to_string();
            assert!(err.contains("nests too deep"), "{err}");
        }
    }
}
