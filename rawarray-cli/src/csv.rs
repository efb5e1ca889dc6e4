//! `.ra` -> `.csv`: a 1-D array is one value per line; a 2-D array with dims `[d0, d1]` is
//! numpy's `(d1, d0)`: `d1` lines of `d0` comma-separated values (what `numpy.savetxt` of the
//! array read through the dims rule writes, up to number formatting). Complex values are
//! `a+bj`, as Python writes them and `numpy.loadtxt(dtype=complex)` reads them.

use std::path::Path;

use crate::output::write_atomic;

use crate::fail::{At, Failure, Result};
use crate::progress::Progress;
use crate::source::RaSource;
use crate::value::Decoder;

/// Writes the CSV through a temporary file; nothing is left at `output` on failure.
pub fn ra_to_csv(input: &Path, output: &Path) -> Result<()> {
    let mut src = RaSource::open(input)?;
    let header = src.plain_header();
    let per_line = match header.dims[..] {
        [_] => 1,
        [d0, _] => d0.max(1),
        _ => {
            return Err(Failure::file(
                input,
                format!(
                    "dims {:?}: CSV holds 1-D and 2-D arrays (`ra reshape` first)",
                    header.dims
                ),
            ))
        }
    };
    let decoder = Decoder::new(header.eltype, header.elbyte);
    if !decoder.is_numeric() {
        return Err(Failure::file(
            input,
            format!("{} elements have no CSV form", header.type_label()),
        ));
    }
    let progress = Progress::bytes(header.data_len(), "convert");
    let elbyte = decoder.elbyte();
    // Failures inside the closure already name their file (input or output): keep them.
    let mut inner = None;
    let written = write_atomic(output, |w| {
        let mut column = 0u64;
        let mut text = String::new();
        let res = src.for_each_chunk(None, &progress, |chunk| {
            text.clear();
            for b in chunk.chunks_exact(elbyte) {
                decoder.decode(b).text_with_unit(&mut text, 'j');
                column += 1;
                if column == per_line {
                    text.push('\n');
                    column = 0;
                } else {
                    text.push(',');
                }
            }
            w.write_all(text.as_bytes()).at(output)
        });
        match res {
            Ok(()) => Ok(()),
            Err(e) => {
                inner = Some(e);
                Err(std::io::Error::other("conversion failed"))
            }
        }
    });
    match (inner, written) {
        (Some(e), _) => Err(e),
        (None, w) => w.at(output),
    }
}

/// The element type a CSV's values fit, the narrowest of the three in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum CsvType {
    Int64,
    Float64,
    Complex128,
}

/// `.csv` -> `.ra`: lines of comma-separated values (blank lines and `#` comments skipped),
/// all lines the same length. The type is inferred: int64 if every value is an integer, else
/// float64, else complex128 (`a+bj` as Python writes it, with or without parentheses). One
/// column is dims `[rows]`; more are `[columns, rows]`, numpy's `(rows, columns)`.
pub fn csv_to_ra(input: &Path, output: &Path) -> Result<()> {
    let file = crate::source::open_regular(input)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut &file, &mut text).at(input)?;
    let mut rows: Vec<Vec<&str>> = Vec::new();
    let mut lines = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let values: Vec<&str> = line.split(',').map(str::trim).collect();
        if let Some(first) = rows.first() {
            if values.len() != first.len() {
                return Err(Failure::file(
                    input,
                    format!(
                        "line {} has {} values, line {} has {}: not a table",
                        number + 1,
                        values.len(),
                        lines[0],
                        first.len()
                    ),
                ));
            }
        }
        rows.push(values);
        lines.push(number + 1);
    }
    if rows.is_empty() {
        return Err(Failure::file(input, "holds no values"));
    }
    let mut kind = CsvType::Int64;
    for (values, line) in rows.iter().zip(&lines) {
        for (column, v) in values.iter().enumerate() {
            let fits = |k: CsvType| match k {
                CsvType::Int64 => v.parse::<i64>().is_ok(),
                CsvType::Float64 => v.parse::<f64>().is_ok(),
                CsvType::Complex128 => parse_complex(v).is_some(),
            };
            while !fits(kind) {
                kind = match kind {
                    CsvType::Int64 => CsvType::Float64,
                    CsvType::Float64 => CsvType::Complex128,
                    CsvType::Complex128 => {
                        return Err(Failure::file(
                            input,
                            format!("line {line}, column {}: '{v}' is not a number", column + 1),
                        ))
                    }
                };
            }
        }
    }
    let columns = rows[0].len() as u64;
    let dims = if columns == 1 {
        vec![rows.len() as u64]
    } else {
        vec![columns, rows.len() as u64]
    };
    let values = rows.iter().flatten();
    let written = match kind {
        CsvType::Int64 => write_values(output, dims, values.map(|v| v.parse::<i64>().ok())),
        CsvType::Float64 => write_values(output, dims, values.map(|v| v.parse::<f64>().ok())),
        CsvType::Complex128 => write_values(output, dims, values.map(|v| parse_complex(v))),
    };
    written.at(output)
}

fn write_values<T: rawarray_serde::Element>(
    output: &Path,
    dims: Vec<u64>,
    values: impl Iterator<Item = Option<T>>,
) -> rawarray_serde::Result<()> {
    // Every value was checked to parse as `T` when the type was inferred.
    let data: Vec<T> = values.map(|v| v.expect("checked above")).collect();
    let array = rawarray_serde::RawArray::from_shape_vec(dims, data)?;
    write_atomic(output, |w| array.write_to(w))
}

/// A complex number as Python and numpy write it: `a+bj`, `a-bj`, `bj`, `a`, optionally in
/// parentheses; `inf` and `nan` parts included.
fn parse_complex(v: &str) -> Option<rawarray_serde::Complex<f64>> {
    let v = v
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(v);
    let Some(body) = v.strip_suffix('j').or_else(|| v.strip_suffix('J')) else {
        return Some(rawarray_serde::Complex::new(v.parse().ok()?, 0.0));
    };
    // The sign that starts the imaginary part: the last + or - not at the start and not the
    // sign of an exponent.
    let bytes = body.as_bytes();
    let split = (1..bytes.len())
        .rev()
        .find(|&i| matches!(bytes[i], b'+' | b'-') && !matches!(bytes[i - 1], b'e' | b'E'));
    match split {
        Some(i) => Some(rawarray_serde::Complex::new(
            body[..i].parse().ok()?,
            body[i..].parse().ok()?,
        )),
        None => Some(rawarray_serde::Complex::new(0.0, body.parse().ok()?)),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_complex;
    use rawarray_serde::Complex;

    #[test]
    fn complex_numbers_parse_as_python_writes_them() {
        let c = |re, im| Some(Complex::new(re, im));
        assert_eq!(parse_complex("1.5-2j"), c(1.5, -2.0));
        assert_eq!(parse_complex("(1+2j)"), c(1.0, 2.0));
        assert_eq!(parse_complex("-3j"), c(0.0, -3.0));
        assert_eq!(parse_complex("2.5"), c(2.5, 0.0));
        assert_eq!(parse_complex("1e-3+2E+2j"), c(1e-3, 200.0));
        assert_eq!(parse_complex("0.0-infj"), c(0.0, f64::NEG_INFINITY));
        assert!(parse_complex("NaN+NaNj").unwrap().re.is_nan());
        assert_eq!(parse_complex("1+2i"), None);
        assert_eq!(parse_complex("abc"), None);
    }
}
