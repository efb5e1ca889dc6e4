//! Queries for Python: `filters=` in the convention of `pyarrow.parquet.read_table` and pandas'
//! `read_parquet` (a list of `(column, op, value)` tuples, AND-ed, or a list of such lists,
//! OR-ed) as the library's [`Predicate`], the matching records of a file, and its per-chunk
//! statistics (`File.stats()`). The rules (columns, types, comparisons, which chunks are read)
//! are the library's `query` module's; this one only converts.

use std::ops::Range;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use rawarray_serde::codec::stats::FieldStats;
use rawarray_serde::query::{element_layout, FileStats, Op, Predicate, Pruning, RowFilter, Value};
use rawarray_serde::{ArrayReader, Header, Layout, Logical};

use crate::errors::ra_err;

/// What `filters=` of a reader is, for messages that tell it apart from a writer's.
const READER_FILTERS: &str = "filters= of a reader selects rows: a list of (column, op, value) \
     tuples, AND-ed, such as [(\"step\", \">=\", 1000), (\"step\", \"<\", 1010)], or a list of \
     such lists, OR-ed (pyarrow.parquet.read_table's convention)";

/// `filters` (pyarrow's convention) as a predicate; `None` for `None`. `layout`, the records'
/// layout if known, gives the values for date and time fields their stored integers: a
/// `datetime`, `date`, `numpy.datetime64`, `pandas.Timestamp` or ISO string for a timestamp
/// or date field, a `timedelta` for a duration (an `int` is the stored count itself).
pub(crate) fn predicate_from_py(
    filters: &Bound<'_, PyAny>,
    layout: Option<&Layout>,
) -> PyResult<Option<Predicate>> {
    if filters.is_none() {
        return Ok(None);
    }
    let codec_form = |found: &Bound<'_, PyAny>| {
        ra_err(format!(
            "{READER_FILTERS}; found {}, which looks like a codec pipeline: that is the \
             filters= of a writer (rawarray.write, RecordWriter, ArrayWriter)",
            found.repr().map_or_else(|_| "?".into(), |r| r.to_string())
        ))
    };
    if filters.is_instance_of::<PyString>() {
        return Err(codec_form(filters));
    }
    let Ok(items) = filters.try_iter() else {
        return Err(ra_err(format!(
            "{READER_FILTERS}; found a {}",
            filters.get_type().name()?
        )));
    };
    let items: Vec<Bound<'_, PyAny>> = items.collect::<PyResult<_>>()?;
    if items.iter().any(|i| i.is_instance_of::<PyString>()) {
        return Err(codec_form(filters));
    }
    // A list of lists is OR-ed conjunctions; a list of tuples one conjunction.
    if !items.is_empty() && items.iter().all(|i| i.is_instance_of::<PyList>()) {
        let any = items
            .iter()
            .map(|c| conjunction(c, layout))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Some(Predicate::Or(any)));
    }
    Ok(Some(conjunction(filters, layout)?))
}

fn conjunction(list: &Bound<'_, PyAny>, layout: Option<&Layout>) -> PyResult<Predicate> {
    let mut all = Vec::new();
    for item in list.try_iter()? {
        let item = item?;
        let Ok(t) = item.cast::<PyTuple>() else {
            return Err(ra_err(format!(
                "{READER_FILTERS}; found {} in the list, not a tuple",
                item.repr()?
            )));
        };
        if t.len() == 2 && t.get_item(0)?.is_instance_of::<PyString>() {
            // A writer's ("bitround", 10).
            return Err(ra_err(format!(
                "{READER_FILTERS}; found {}, which looks like a filter of a codec pipeline \
                 (name, param): that is the filters= of a writer (rawarray.write, \
                 RecordWriter, ArrayWriter)",
                t.repr()?
            )));
        }
        if t.len() != 3 {
            return Err(ra_err(format!(
                "{READER_FILTERS}; found {}, a tuple of {} items",
                t.repr()?,
                t.len()
            )));
        }
        let column: String = t.get_item(0)?.extract().map_err(|_| {
            ra_err(format!(
                "filter {}: the column must be a name (a str)",
                t.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ))
        })?;
        let op: String = t
            .get_item(1)?
            .extract()
            .map_err(|_| ra_err(format!("filter on column '{column}': the op must be a str")))?;
        let value = t.get_item(2)?;
        let op_l = op.trim().to_lowercase();
        all.push(match op_l.as_str() {
            "in" | "not in" => {
                if value.is_instance_of::<PyString>() || value.try_iter().is_err() {
                    return Err(ra_err(format!(
                        "filter on column '{column}': '{op}' takes a collection of values, \
                         found {}",
                        value.repr()?
                    )));
                }
                let time = time_marker(layout, &column);
                let mut values = Vec::new();
                for v in value.try_iter()? {
                    let v = v?;
                    match time {
                        // A time between two stored counts equals none of them: left out.
                        Some(l) => values.extend(time_count(&column, &v, l)?.exact()),
                        None => values.push(value_of(&column, &v)?),
                    }
                }
                let p = Predicate::is_in(column, values);
                if op_l == "in" {
                    p
                } else {
                    !p
                }
            }
            _ => {
                let Some(op) = Op::from_symbol(op_l.as_str()) else {
                    return Err(ra_err(format!(
                        "filter on column '{column}': op {op:?} is not one of =, ==, !=, <, <=, \
                         >, >=, in, not in"
                    )));
                };
                match time_marker(layout, &column) {
                    Some(l) => time_count(&column, &value, l)?.compare(column.clone(), op),
                    None => Predicate::compare(column.clone(), op, value_of(&column, &value)?),
                }
            }
        });
    }
    if all.is_empty() {
        // As pyarrow: an empty list is a slip (an empty AND would keep every row, and make an
        // OR it is part of keep every row too), not a request for the whole file.
        return Err(ra_err(format!(
            "{READER_FILTERS}; found an empty list: filters=None reads every row"
        )));
    }
    Ok(Predicate::And(all))
}

/// The date or time marker of the top-level field `column` of `layout`, if it has one.
fn time_marker<'a>(layout: Option<&'a Layout>, column: &str) -> Option<&'a Logical> {
    let Some(Layout::Record { fields, .. }) = layout else {
        return None;
    };
    match &fields.iter().find(|f| f.name == column)?.layout {
        Layout::Scalar {
            logical:
                Some(l @ (Logical::Timestamp { .. } | Logical::Duration { .. } | Logical::Date)),
            ..
        } => Some(l),
        _ => None,
    }
}

/// A date or time a filter compares a time field with, in the field's units: exactly
/// `num / den` of them (`den > 0`), which need not be a whole count (a millisecond against a
/// field of seconds).
struct TimeCount {
    num: i128,
    den: i128,
}

impl TimeCount {
    /// The count, if the value is a whole number of the field's units.
    fn exact(&self) -> Option<Value> {
        (self.num.rem_euclid(self.den) == 0).then(|| Value::Int(self.num.div_euclid(self.den)))
    }

    /// `column op value` over the field's integers: the value rounded the way that keeps the
    /// comparison exact (`>=`, `<` the next count up; `>`, `<=` the count below), and `==`
    /// (`!=`) of a value between two counts matching no row (every row).
    fn compare(&self, column: String, op: Op) -> Predicate {
        let floor = self.num.div_euclid(self.den);
        let ceil = floor + i128::from(self.num.rem_euclid(self.den) != 0);
        match (op, self.exact()) {
            (Op::Eq, None) => Predicate::is_in(column, Vec::<Value>::new()),
            (Op::Ne, None) => !Predicate::is_in(column, Vec::<Value>::new()),
            (Op::Eq | Op::Ne, Some(v)) => Predicate::compare(column, op, v),
            (Op::Lt | Op::Ge, _) => Predicate::compare(column, op, Value::Int(ceil)),
            (Op::Le | Op::Gt, _) => Predicate::compare(column, op, Value::Int(floor)),
        }
    }
}

/// A filter's value for a field marked `l` (a timestamp, duration or date): a Python `int` is
/// the stored count itself; anything else is turned into an exact fraction of the field's unit
/// by numpy (`rawarray._dtype._time_count`): no rounding, and no wrap past the `int64` range.
fn time_count(column: &str, v: &Bound<'_, PyAny>, l: &Logical) -> PyResult<TimeCount> {
    if v.is_instance_of::<PyBool>() {
        return Err(ra_err(format!(
            "filter on column '{column}' ({l}): the value {} is a bool, not a time",
            v.repr()?
        )));
    }
    if v.is_exact_instance_of::<PyInt>() {
        return Ok(TimeCount {
            num: v.extract::<i128>().map_err(|_| {
                ra_err(format!(
                    "filter on column '{column}': the value {} does not fit in 128 bits",
                    v.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))
            })?,
            den: 1,
        });
    }
    let (kind, unit) = match l {
        Logical::Timestamp { unit, .. } => ("timestamp", unit.name()),
        Logical::Duration { unit } => ("duration", unit.name()),
        _ => ("date", "D"),
    };
    let (num, den): (i128, i128) = v
        .py()
        .import("rawarray._dtype")?
        .getattr("_time_count")?
        .call1((v, kind, unit))
        .and_then(|r| r.extract())
        .map_err(|e| {
            ra_err(format!(
                "filter on column '{column}' ({l}): the value {} is not a {kind}: {e}",
                v.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ))
        })?;
    if den <= 0 {
        return Err(ra_err(format!(
            "filter on column '{column}': the value {} gave a unit of {den}",
            v.repr()?
        )));
    }
    Ok(TimeCount { num, den })
}

/// A filter's value as a number: a bool (numpy's too) as 0 or 1, an integer (Python's, or any
/// with `__index__`, such as numpy's) exactly, up to 128 bits, a float (with `__float__`).
fn value_of(column: &str, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if v.is_instance_of::<PyBool>() || v.get_type().name()? == "bool" {
        return Ok(Value::from(v.is_truthy()?));
    }
    let int_like = v.is_instance_of::<PyInt>() || v.hasattr("__index__")?;
    if int_like && !v.is_instance_of::<PyFloat>() {
        if let Ok(i) = v.extract::<i128>() {
            return Ok(Value::Int(i));
        }
        if let Ok(u) = v.extract::<u128>() {
            return Ok(Value::Uint(u));
        }
        return Err(ra_err(format!(
            "filter on column '{column}': the value {} does not fit in 128 bits",
            v.repr()?
        )));
    }
    if v.hasattr("__float__")? && !v.is_instance_of::<PyString>() {
        if let Ok(f) = v.extract::<f64>() {
            return Ok(Value::Float(f));
        }
    }
    Err(ra_err(format!(
        "filter on column '{column}': the value {} is not a number or bool",
        v.repr()?
    )))
}

/// The layout of a record file's records (elements with named fields), or an error saying
/// that filters take record files and what this file holds.
pub(crate) fn record_layout(
    header: &Header,
    schema: Option<&Layout>,
    path: &str,
) -> PyResult<Layout> {
    match element_layout(header, schema) {
        Some(l @ Layout::Record { .. }) => Ok(l),
        _ => Err(ra_err(format!(
            "{path}: filters= takes record files (elements with named fields, as RecordWriter \
             and rawarray.write of a structured array store them); this file holds {} values \
             of dims {:?}: filter its array with numpy instead (a[a > 0])",
            header.type_label(),
            header.dims
        ))),
    }
}

/// The records (laid out as `layout`) of `reader`'s file that match `filter`, little-endian,
/// read from only the chunks whose statistics allow a match, a piece of about 4 MiB at a time.
pub(crate) fn select(
    reader: &ArrayReader,
    filter: &RowFilter,
    layout: &Layout,
) -> rawarray_serde::Result<Vec<u8>> {
    let header = reader.header();
    let section = reader.section();
    let mut pruning = Pruning::new(filter, header, section.chunk_map());
    pruning.clip(header.num_elements());
    let rb = filter.row_bytes().max(1);
    let Some((_, lead)) = header.dims.split_last() else {
        return Ok(Vec::new());
    };
    let plane: u64 = lead.iter().product::<u64>().max(1);
    let per = ((4usize << 20) / (rb * plane as usize).max(1)).max(1) as u64;
    let big_endian = header.is_big_endian();
    let mut out = Vec::new();
    for r in pruning.ranges() {
        // Ranges are whole steps of the last dim (its chunks span every other dim).
        let (first, end) = (r.start / plane, r.end.div_ceil(plane));
        let mut at = first;
        while at < end {
            let stop = (at + per).min(end);
            let ranges: Vec<Range<u64>> = lead
                .iter()
                .map(|&d| 0..d)
                .chain(std::iter::once(at..stop))
                .collect();
            let (_, bytes) = reader.read_subset_bytes(&ranges)?;
            for row in bytes.chunks_exact(rb) {
                if filter.matches(row, big_endian) {
                    let start = out.len();
                    out.extend_from_slice(row);
                    if big_endian {
                        layout.swap_byte_order(&mut out[start..]);
                    }
                }
            }
            at = stop;
        }
    }
    Ok(out)
}

/// One field's statistics as a dict: `min`, `max` (None when unknown, or every value is NaN)
/// and `nan` (None when unknown).
fn stats_dict<'py>(
    py: Python<'py>,
    s: Option<FieldStats>,
    is_bool: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let value = |v: Value| -> PyResult<Bound<'py, PyAny>> {
        Ok(match v {
            Value::Int(i) => i.into_pyobject(py)?.into_any(),
            Value::Uint(u) if is_bool => PyBool::new(py, u != 0).to_owned().into_any(),
            Value::Uint(u) => u.into_pyobject(py)?.into_any(),
            Value::Float(f) => PyFloat::new(py, f).into_any(),
        })
    };
    match s {
        Some(s) => {
            let (lo, hi) = match s.min_max {
                Some((lo, hi)) => (Some(value(lo)?), Some(value(hi)?)),
                None => (None, None),
            };
            d.set_item("min", lo)?;
            d.set_item("max", hi)?;
            d.set_item("nan", s.nan)?;
        }
        None => {
            d.set_item("min", py.None())?;
            d.set_item("max", py.None())?;
            d.set_item("nan", py.None())?;
        }
    }
    Ok(d)
}

/// Whether the scalar at byte `offset` of an element laid out as `layout` is a `bool`.
fn is_bool_at(layout: &Layout, offset: u64) -> bool {
    match layout {
        Layout::Scalar { logical, .. } => offset == 0 && *logical == Some(Logical::Bool),
        Layout::Array { item, .. } => is_bool_at(item, offset % item.size().max(1)),
        Layout::Record { fields, .. } => fields
            .iter()
            .rev()
            .find(|f| f.offset <= offset)
            .is_some_and(|f| is_bool_at(&f.layout, offset - f.offset)),
    }
}

/// `File.stats()`: per statistics field (by name), the whole file's `{min, max, nan}`, or with
/// `per_chunk` a list of them, one per chunk (None for a chunk never written or whose
/// statistics are absent or damaged). `None` for a file without statistics.
pub(crate) fn file_stats<'py>(
    py: Python<'py>,
    reader: &ArrayReader,
    per_chunk: bool,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(map) = reader.section().chunk_map() else {
        return Ok(None);
    };
    let schema = reader.trailer().and_then(|t| t.schema.as_ref());
    let Some(stats) = FileStats::of(map, schema) else {
        return Ok(None);
    };
    let layout = element_layout(map.header(), schema);
    let out = PyDict::new(py);
    for (k, (name, field)) in stats.names().iter().zip(stats.fields()).enumerate() {
        let is_bool = layout
            .as_ref()
            .is_some_and(|l| is_bool_at(l, u64::from(field.offset)));
        if per_chunk {
            let list = PyList::empty(py);
            for n in 0..stats.chunk_count() {
                match stats.chunk(n, k) {
                    Some(s) => list.append(stats_dict(py, Some(s), is_bool)?)?,
                    None => list.append(py.None())?,
                }
            }
            out.set_item(name, list)?;
        } else {
            out.set_item(name, stats_dict(py, stats.whole(k), is_bool)?)?;
        }
    }
    Ok(Some(out))
}
