//! numpy's dtypes and the file's element types: how numpy sees one element of a file, and what
//! to store for one numpy element. The tables are the library's (`rawarray_serde::numpy`,
//! `Layout`); this module only asks them.

use pyo3::prelude::*;
use rawarray_serde::eltype::ScalarType;
use rawarray_serde::{ElType, ErrorKind, Header, Layout, Trailer};

use crate::errors::{ra_err, to_py};

/// How numpy should see one element of a file of header `h` (see `RawFile.element_kind`),
/// by its trailer, or why its trailer could not be read: one reading for every kind of file.
pub(crate) fn element_kind(
    h: &Header,
    trailer: Option<&Trailer>,
    trailer_error: Option<&str>,
) -> (String, String) {
    // A plain array's logical marker: a bool file is a u8 file whose schema says bool. A
    // scalar schema numpy has no type for (bfloat16, complex32; `rawarray-arrow` writes one
    // for every plain array) is read by the header, below, not as void bytes.
    if let Ok(Some(s @ Layout::Scalar { .. })) = record_layout(h, trailer) {
        let descr = s.numpy_descr_json();
        let descr = descr.as_str().unwrap_or("");
        if !descr.contains('V') {
            return ("dtype".into(), descr.into());
        }
    }
    if let Some(dt) = h.numpy_dtype() {
        return ("dtype".into(), dt.into());
    }
    match (h.eltype, h.elbyte) {
        (ElType::BFloat16, 2) => ("bfloat16".into(), "<u2".into()),
        (ElType::Complex, 4) => ("complex32".into(), "<f2".into()),
        (ElType::User, _) if trailer_error.is_some() => (
            "void".into(),
            format!(
                "the trailer is damaged ({})",
                trailer_error.unwrap_or_default()
            ),
        ),
        (ElType::User, elbyte) => match record_layout(h, trailer) {
            Ok(Some(layout)) => ("record".into(), layout.numpy_descr_json().to_string()),
            Ok(None) => (
                "void".into(),
                format!("user-defined elements of {elbyte} bytes and no record schema"),
            ),
            Err(why) => ("void".into(), why),
        },
        _ => (
            "void".into(),
            format!("{} has no numpy type", h.type_label()),
        ),
    }
}

/// The layout of one element by the trailer's schema, checked against the header by the
/// library (`Layout::check_header`, as every client checks it): `Ok(None)` without one,
/// `Err(why)` when it does not describe these elements.
fn record_layout(h: &Header, trailer: Option<&Trailer>) -> Result<Option<Layout>, String> {
    let Some(schema) = trailer.and_then(|t| t.schema.as_ref()) else {
        return Ok(None);
    };
    let layout = schema
        .check_header(h)
        .map_err(|e| format!("the trailer's record schema is damaged: {e}"))?;
    Ok(Some(layout.clone()))
}

/// How to store one numpy element: its eltype and elbyte, and the record layout if it is a
/// structured dtype. `descr_json` is `json.dumps(dtype.str)` for a plain dtype or
/// `json.dumps(dtype.descr)` for a structured one.
pub(crate) fn element_of(descr_json: &str) -> PyResult<(ElType, u64, Option<Layout>)> {
    // serde_json reads 127 levels: a structured dtype nested deeper than that (two levels per
    // record) is far past what a record schema holds (MAX_LAYOUT_DEPTH), and is refused as such.
    let descr: serde_json::Value = serde_json::from_str(descr_json).map_err(|e| {
        ra_err(format!(
            "structured dtype cannot be stored as a .ra record: it nests too deep ({e})"
        ))
    })?;
    if let Some(s) = descr.as_str() {
        if rawarray_serde::numpy::is_bool_dtype(s)
            || rawarray_serde::Logical::of_numpy_dtype(s).is_some()
        {
            // A scalar with a logical marker (bool; datetime64, timedelta64): the number it is
            // stored as, and the marker in the schema.
            let layout = Layout::from_numpy_descr_json(&descr).map_err(to_py)?;
            let Layout::Scalar { eltype, elbyte, .. } = layout else {
                unreachable!("a dtype string is a scalar")
            };
            return Ok((eltype, elbyte, Some(layout)));
        }
        if s == "bfloat16" {
            return Ok((ElType::BFloat16, 2, None));
        }
        if let Some(n) = s.strip_prefix("|V").and_then(|n| n.parse::<u64>().ok()) {
            return Ok((ElType::User, n, None));
        }
        let (eltype, elbyte, big_endian) = rawarray_serde::numpy::parse_dtype(s)
            .ok_or_else(|| ra_err(format!("numpy dtype '{s}' has no .ra element type")))?;
        if big_endian {
            return Err(ra_err(format!(
                "numpy dtype '{s}' is big-endian: pass little-endian data"
            )));
        }
        return Ok((eltype, elbyte, None));
    }
    let layout = Layout::from_numpy_descr_json(&descr).map_err(|e| {
        let padded = descr.as_array().is_some_and(|fields| {
            fields
                .iter()
                .any(|f| f.get(0).and_then(|n| n.as_str()) == Some(""))
        });
        if padded {
            ra_err(format!(
                "structured dtype has padding (unnamed void fields), which .ra records do not \
                 have: pack it with np.dtype(..., align=False) or \
                 numpy.lib.recfunctions.repack_fields ({e})"
            ))
        } else {
            to_py(e)
        }
    })?;
    // The rules every schema read from a file must pass (names, shapes, nesting): a dtype that
    // breaks one is refused here, before anything is written, rather than written into a file
    // whose trailer would read back as damaged.
    let size = layout.validate().map_err(|e| match e.kind() {
        ErrorKind::BadSchema(why) => ra_err(format!(
            "structured dtype cannot be stored as a .ra record: {why}"
        )),
        _ => to_py(e),
    })?;
    Ok((ElType::User, size, Some(layout)))
}

/// The numpy dtypes a `.ra` file stores as they are, by the library's element-type table (the
/// scalars numpy has a name for), then bool (`|b1`, stored as u8 marked bool) and ml_dtypes'
/// `bfloat16`: what a message about an unstorable dtype lists.
#[pyfunction]
pub(crate) fn storable_dtypes() -> Vec<&'static str> {
    ScalarType::ALL
        .iter()
        .filter_map(|t| t.numpy())
        .chain(["|b1", "bfloat16"])
        .collect()
}
