//! numpy's names for `.ra` elements and shapes, for tools and bindings that talk to numpy.
//!
//! The dtype names come from the element-type table ([`ScalarType::numpy`]); a record's
//! structured dtype comes from its [`Layout`](crate::Layout) ([`Layout::numpy_descr`](crate::Layout::numpy_descr)).
//!
//! ```
//! use rawarray_serde::{numpy, ElType};
//! assert_eq!(numpy::dtype(ElType::Float, 4), Some("<f4"));
//! assert_eq!(numpy::parse_dtype(">i2"), Some((ElType::Int, 2, true)));
//! assert_eq!(numpy::shape(&[3, 2]), "(3, 2)");
//! ```

use crate::eltype::{ElType, ScalarType};

/// The numpy dtype string of a little-endian element, or `None` where numpy has no such type:
/// bfloat16, 128-bit integers, 128-bit floats (numpy's `longdouble` is not IEEE binary128),
/// complex pairs of f16 or f128, and user-defined elements (those need a record schema).
///
/// ```
/// use rawarray_serde::{numpy, ElType};
/// assert_eq!(numpy::dtype(ElType::Complex, 8), Some("<c8"));
/// assert_eq!(numpy::dtype(ElType::Uint, 1), Some("|u1"));
/// assert_eq!(numpy::dtype(ElType::BFloat16, 2), None);
/// ```
pub fn dtype(eltype: ElType, elbyte: u64) -> Option<&'static str> {
    ScalarType::of(eltype, elbyte)?.numpy()
}

/// The element type, size and byte order of a numpy dtype string, the inverse of [`dtype`]:
/// `"<f4"` is `(Float, 4, false)`, `">i2"` is `(Int, 2, true)`. `=` (native) is read as `<`;
/// the byte order of one-byte types is ignored, and numpy's `b1` (bool) is `|u1`, as this
/// crate stores `bool` (a layout marks it bool besides: [`is_bool_dtype`]). `None` for dtypes with no `.ra` element (objects, strings,
/// `longdouble`, structured dtypes).
///
/// ```
/// use rawarray_serde::{numpy, ElType};
/// assert_eq!(numpy::parse_dtype("<f4"), Some((ElType::Float, 4, false)));
/// assert_eq!(numpy::parse_dtype(">c16"), Some((ElType::Complex, 16, true)));
/// assert_eq!(numpy::parse_dtype("|b1"), Some((ElType::Uint, 1, false)));
/// assert_eq!(numpy::parse_dtype("<U8"), None);
/// ```
pub fn parse_dtype(descr: &str) -> Option<(ElType, u64, bool)> {
    let (order, kind) = match descr.as_bytes().first()? {
        b'<' | b'=' => (Some(false), &descr[1..]),
        b'>' => (Some(true), &descr[1..]),
        b'|' => (None, &descr[1..]),
        _ => (Some(false), descr),
    };
    let kind = if kind == "b1" { "u1" } else { kind };
    ScalarType::ALL.iter().find_map(|t| {
        let known = t.numpy()?;
        // The table's first character is the byte order: '<', or '|' for one byte.
        let one_byte = known.starts_with('|');
        let order_ok = order.is_some() || one_byte;
        (order_ok && &known[1..] == kind).then_some((
            t.eltype(),
            t.elbyte(),
            order.unwrap_or(false) && !one_byte,
        ))
    })
}

/// Whether a numpy dtype string is big-endian (`>`): its scalars stored most significant byte
/// first, whatever their kind (`>i2`, `>M8[ns]`); `<`, `=` (read as `<`, as [`parse_dtype`]
/// does) and `|` are not.
///
/// ```
/// use rawarray_serde::numpy;
/// assert!(numpy::is_big_endian(">M8[ns]") && numpy::is_big_endian(">i2"));
/// assert!(!numpy::is_big_endian("<M8[ns]") && !numpy::is_big_endian("|u1"));
/// ```
pub fn is_big_endian(descr: &str) -> bool {
    descr.starts_with('>')
}

/// Whether a numpy dtype string is numpy's bool (`?`, `b1`, `|b1`): the scalar
/// [`Logical::Bool`](crate::Logical::Bool) marks, stored as a `u8` of 0 or 1.
///
/// ```
/// use rawarray_serde::numpy;
/// assert!(numpy::is_bool_dtype("|b1") && numpy::is_bool_dtype("?"));
/// assert!(!numpy::is_bool_dtype("|u1"));
/// ```
pub fn is_bool_dtype(descr: &str) -> bool {
    let kind = descr.strip_prefix(['<', '>', '=', '|']).unwrap_or(descr);
    matches!(kind, "?" | "b1")
}

/// A numpy shape as Python source: `(3,)`, `(2, 3)`, `()`. numpy's shape is the `.ra` dims
/// reversed (the last dim of a `.ra` file is numpy's first axis); pass it reversed.
///
/// ```
/// use rawarray_serde::numpy;
/// assert_eq!(numpy::shape(&[12]), "(12,)");
/// assert_eq!(numpy::shape(&[4, 3]), "(4, 3)");
/// assert_eq!(numpy::shape(&[]), "()");
/// ```
pub fn shape(shape: &[u64]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// [`dtype`], or why numpy has none, in words, for messages and `ra info`.
///
/// ```
/// use rawarray_serde::{numpy, ElType};
/// assert_eq!(numpy::dtype_or_reason(ElType::Int, 16), "none (numpy has no int128)");
/// ```
pub fn dtype_or_reason(eltype: ElType, elbyte: u64) -> String {
    match dtype(eltype, elbyte) {
        Some(d) => d.to_string(),
        None => match ScalarType::of(eltype, elbyte) {
            Some(t) => format!("none (numpy has no {})", t.label()),
            None => "none (user-defined; needs a record schema)".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_dtype_inverts_the_table() {
        for t in ScalarType::ALL {
            let Some(d) = t.numpy() else { continue };
            let (eltype, elbyte) = (t.eltype(), t.elbyte());
            assert_eq!(parse_dtype(d), Some((eltype, elbyte, false)), "{d}");
            let be = format!(">{}", &d[1..]);
            assert_eq!(parse_dtype(&be), Some((eltype, elbyte, elbyte > 1)), "{be}");
            assert_eq!(parse_dtype(&d[1..]), Some((eltype, elbyte, false)));
        }
        for bad in [
            "", "<", "|f4", "<f16", "<U4", "|S3", "|O", "<V8", "<f3", "<M8[s]",
        ] {
            assert_eq!(parse_dtype(bad), None, "{bad:?}");
        }
    }
}
