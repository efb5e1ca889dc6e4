//! Values between packed little-endian element bytes and Arrow arrays, by the element's layout:
//! [`to_array`] gathers one field of many records into a column, [`scatter`] writes a column
//! back into the records' bytes. The type of each column is [`crate::arrow_field`]'s.

use std::sync::Arc;

use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, FixedSizeBinaryArray, FixedSizeListArray,
    Float32Array, StructArray,
};
use arrow_buffer::{BooleanBuffer, Buffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field};
use half::bf16;
use rawarray_serde::Layout;

use crate::error::{Error, Result};
use crate::schema::{arrow_field, byte_array_len, Scalar};

/// The column of the values laid out as `layout` at byte offsets `starts` of `data`
/// (little-endian): one row per start. `field` is the column's Arrow field
/// ([`arrow_field`] of the layout).
pub(crate) fn gather(
    field: &Field,
    layout: &Layout,
    data: &[u8],
    starts: &[usize],
) -> Result<ArrayRef> {
    let rows = starts.len();
    let copy = |w: usize| -> Buffer { Buffer::from_vec(copy_values(data, starts, w)) };
    // A field whose Arrow form is its own bytes (numbers, fixed-size binary, fixed arrays of
    // them): one copy of the field's bytes per row, handed to Arrow as they are.
    if is_contiguous(layout) {
        let bytes = copy(layout.size() as usize);
        if let Some(a) = contiguous(field, layout, rows, &bytes)? {
            return Ok(a);
        }
    }
    match layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical,
        } => {
            let scalar =
                Scalar::of(*eltype, *elbyte, logical.as_ref()).ok_or_else(|| Error::Column {
                    column: field.name().clone(),
                    why: format!("{} has no Arrow form", layout.describe()),
                })?;
            Ok(match scalar {
                Scalar::Primitive(w) | Scalar::Binary(w) => {
                    fixed(field.data_type(), rows, copy(w))?
                }
                Scalar::Bool => Arc::new(BooleanArray::new(
                    BooleanBuffer::collect_bool(rows, |i| data[starts[i]] != 0),
                    None,
                )),
                Scalar::BFloat16 => Arc::new(Float32Array::from_iter_values(
                    starts
                        .iter()
                        .map(|&s| bf16::from_le_bytes([data[s], data[s + 1]]).to_f32()),
                )),
                Scalar::Complex(part) => {
                    let DataType::Struct(parts) = field.data_type() else {
                        unreachable!("arrow_field maps complex to a struct")
                    };
                    let part_layout = Layout::scalar(rawarray_serde::ElType::Float, part as u64);
                    let im: Vec<usize> = starts.iter().map(|s| s + part).collect();
                    let re = gather(&parts[0], &part_layout, data, starts)?;
                    let im = gather(&parts[1], &part_layout, data, &im)?;
                    Arc::new(StructArray::try_new(parts.clone(), vec![re, im], None)?)
                }
            })
        }
        Layout::Array { len, item } => {
            let len = *len as usize;
            if let Some(n) = byte_array_len(layout) {
                return fixed(field.data_type(), rows, copy(n));
            }
            let DataType::FixedSizeList(item_field, n) = field.data_type() else {
                unreachable!("arrow_field maps arrays to fixed-size lists")
            };
            let size = item.size() as usize;
            let inner: Vec<usize> = starts
                .iter()
                .flat_map(|&s| (0..len).map(move |i| s + i * size))
                .collect();
            let values = gather(item_field, item, data, &inner)?;
            Ok(Arc::new(FixedSizeListArray::try_new(
                item_field.clone(),
                *n,
                values,
                None,
            )?))
        }
        Layout::Record { fields, .. } => {
            let DataType::Struct(arrow_fields) = field.data_type() else {
                unreachable!("arrow_field maps records to structs")
            };
            let children = fields
                .iter()
                .zip(arrow_fields)
                .map(|(f, af)| {
                    let at = f.offset as usize;
                    let starts: Vec<usize> = starts.iter().map(|s| s + at).collect();
                    gather(af, &f.layout, data, &starts)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Arc::new(StructArray::try_new(
                arrow_fields.clone(),
                children,
                None,
            )?))
        }
    }
}

/// The `w` bytes at each of `starts`, one after the other. Widths of the scalars are copied as
/// fixed-size arrays: a per-value `memcpy` call of a run-time length would cost more than the
/// copy.
fn copy_values(data: &[u8], starts: &[usize], w: usize) -> Vec<u8> {
    fn fixed<const W: usize>(data: &[u8], starts: &[usize]) -> Vec<u8> {
        let mut out = Vec::with_capacity(starts.len() * W);
        for &s in starts {
            let v: &[u8; W] = data[s..s + W].try_into().expect("a slice of W bytes");
            out.extend_from_slice(v);
        }
        out
    }
    match w {
        1 => fixed::<1>(data, starts),
        2 => fixed::<2>(data, starts),
        4 => fixed::<4>(data, starts),
        8 => fixed::<8>(data, starts),
        16 => fixed::<16>(data, starts),
        _ => {
            let mut out = Vec::with_capacity(starts.len() * w);
            for &s in starts {
                out.extend_from_slice(&data[s..s + w]);
            }
            out
        }
    }
}

/// Whether [`contiguous`] takes values of this layout as they are.
fn is_contiguous(layout: &Layout) -> bool {
    match layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical,
        } => matches!(
            Scalar::of(*eltype, *elbyte, logical.as_ref()),
            Some(Scalar::Primitive(_) | Scalar::Binary(_))
        ),
        Layout::Array { item, .. } => byte_array_len(layout).is_some() || is_contiguous(item),
        Layout::Record { .. } => false,
    }
}

/// An array of fixed-width values whose bytes are `values` as Arrow lays them out.
fn fixed(t: &DataType, rows: usize, values: Buffer) -> Result<ArrayRef> {
    // A buffer Arrow would find misaligned for the type (the dangling pointer of an empty
    // `Vec<u8>`, a map offset) is copied to an aligned one; an aligned one is taken as it is.
    let data = ArrayDataBuilder::new(t.clone())
        .len(rows)
        .add_buffer(values)
        .align_buffers(true)
        .build()?;
    Ok(make_array(data))
}

/// The column of `rows` consecutive values laid out as `layout` that fill `bytes` exactly
/// (little-endian), without copying them where Arrow's layout is the same bytes: primitive
/// scalars, fixed-size binary and fixed-size lists of those. `None` where a copy is needed
/// (bool, bfloat16, complex, records).
pub(crate) fn contiguous(
    field: &Field,
    layout: &Layout,
    rows: usize,
    bytes: &Buffer,
) -> Result<Option<ArrayRef>> {
    match layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical,
        } => match Scalar::of(*eltype, *elbyte, logical.as_ref()) {
            Some(Scalar::Primitive(_) | Scalar::Binary(_)) => {
                fixed(field.data_type(), rows, bytes.clone()).map(Some)
            }
            _ => Ok(None),
        },
        Layout::Array { len, item } => {
            if byte_array_len(layout).is_some() {
                return fixed(field.data_type(), rows, bytes.clone()).map(Some);
            }
            let DataType::FixedSizeList(item_field, n) = field.data_type() else {
                unreachable!("arrow_field maps arrays to fixed-size lists")
            };
            let Some(values) = contiguous(item_field, item, rows * *len as usize, bytes)? else {
                return Ok(None);
            };
            Ok(Some(Arc::new(FixedSizeListArray::try_new(
                item_field.clone(),
                *n,
                values,
                None,
            )?)))
        }
        Layout::Record { .. } => Ok(None),
    }
}

/// The one column of the values laid out as `layout` filling `bytes`: the bytes themselves
/// where Arrow can take them ([`contiguous`]), gathered otherwise.
pub(crate) fn column(name: &str, layout: &Layout, rows: usize, bytes: &Buffer) -> Result<ArrayRef> {
    let field = arrow_field(name, layout)?;
    if let Some(a) = contiguous(&field, layout, rows, bytes)? {
        return Ok(a);
    }
    let size = layout.size() as usize;
    let starts: Vec<usize> = (0..rows).map(|r| r * size).collect();
    gather(&field, layout, bytes.as_slice(), &starts)
}

/// Writes the values of `array` (rows `index[k]`) into `out` at byte offsets `starts[k]`, laid
/// out as `layout`, little-endian. The array's type must be [`arrow_field`]'s for the layout,
/// or one that [`crate::layout_of_field`] maps to it; a null anywhere is refused.
pub(crate) fn scatter(
    column: &str,
    layout: &Layout,
    array: &dyn Array,
    index: &[usize],
    out: &mut [u8],
    starts: &[usize],
) -> Result<()> {
    if array.logical_null_count() > 0 {
        return Err(Error::Column {
            column: column.to_string(),
            why: format!(
                "{} of its values are missing (null): a record has no place for a missing value",
                array.logical_null_count()
            ),
        });
    }
    let mismatch = || Error::Column {
        column: column.to_string(),
        why: format!(
            "type {} does not match the schema's {}",
            array.data_type(),
            layout.describe()
        ),
    };
    match layout {
        Layout::Scalar {
            eltype,
            elbyte,
            logical,
        } => match Scalar::of(*eltype, *elbyte, logical.as_ref()).ok_or_else(mismatch)? {
            Scalar::Primitive(w) | Scalar::Binary(w) => {
                let data = array.to_data();
                if data.buffers().len() != 1
                    || data.data_type().primitive_width() != Some(w)
                        && !matches!(data.data_type(), DataType::FixedSizeBinary(n) if *n as usize == w)
                {
                    return Err(mismatch());
                }
                let values = data.buffers()[0].as_slice();
                let off = data.offset();
                for (&i, &s) in index.iter().zip(starts) {
                    let at = (off + i) * w;
                    out[s..s + w].copy_from_slice(&values[at..at + w]);
                }
            }
            Scalar::Bool => {
                let a = array
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(mismatch)?;
                for (&i, &s) in index.iter().zip(starts) {
                    out[s] = u8::from(a.value(i));
                }
            }
            Scalar::BFloat16 => {
                let a = array
                    .as_any()
                    .downcast_ref::<Float32Array>()
                    .ok_or_else(mismatch)?;
                for (&i, &s) in index.iter().zip(starts) {
                    out[s..s + 2].copy_from_slice(&bf16::from_f32(a.value(i)).to_le_bytes());
                }
            }
            Scalar::Complex(part) => {
                let a = array
                    .as_any()
                    .downcast_ref::<StructArray>()
                    .ok_or_else(mismatch)?;
                if a.num_columns() != 2 {
                    return Err(mismatch());
                }
                let part_layout = Layout::scalar(rawarray_serde::ElType::Float, part as u64);
                let im: Vec<usize> = starts.iter().map(|s| s + part).collect();
                scatter(column, &part_layout, a.column(0), index, out, starts)?;
                scatter(column, &part_layout, a.column(1), index, out, &im)?;
            }
        },
        Layout::Array { len, item } => {
            let len = *len as usize;
            if let Some(n) = byte_array_len(layout) {
                if let Some(a) = array.as_any().downcast_ref::<FixedSizeBinaryArray>() {
                    if a.value_length() as usize != n {
                        return Err(mismatch());
                    }
                    for (&i, &s) in index.iter().zip(starts) {
                        out[s..s + n].copy_from_slice(a.value(i));
                    }
                    return Ok(());
                }
            }
            let a = array
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .filter(|a| a.value_length() as usize == len)
                .ok_or_else(mismatch)?;
            let size = item.size() as usize;
            let mut inner_index = Vec::with_capacity(index.len() * len);
            let mut inner_starts = Vec::with_capacity(index.len() * len);
            for (&i, &s) in index.iter().zip(starts) {
                let first = a.value_offset(i) as usize;
                for j in 0..len {
                    inner_index.push(first + j);
                    inner_starts.push(s + j * size);
                }
            }
            scatter(
                &format!("{column}[]"),
                item,
                a.values().as_ref(),
                &inner_index,
                out,
                &inner_starts,
            )?;
        }
        Layout::Record { fields, .. } => {
            let a = array
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(mismatch)?;
            if a.num_columns() != fields.len() {
                return Err(mismatch());
            }
            for (k, f) in fields.iter().enumerate() {
                let at = f.offset as usize;
                let starts: Vec<usize> = starts.iter().map(|s| s + at).collect();
                scatter(
                    &format!("{column}.{}", f.name),
                    &f.layout,
                    a.column(k).as_ref(),
                    index,
                    out,
                    &starts,
                )?;
            }
        }
    }
    Ok(())
}
