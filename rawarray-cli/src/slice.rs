//! `ra slice IN OUT RANGES`: one n-d block of a file as a new `.ra` file, reading only the
//! block's bytes (the library's `ArrayReader`), written atomically.

use std::io::Write;
use std::ops::Range;
use std::path::Path;

use rawarray_serde::atomic::AtomicFile;
use rawarray_serde::ArrayReader;

use crate::fail::{At, Failure, Result};

/// One comma-separated item of RANGES: `a:b`, `a:`, `:b`, `:` or a single index `a`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    start: Option<u64>,
    end: Option<u64>,
    /// A single index (`a`), which `--squeeze` drops from the dims.
    index: bool,
}

/// Parses RANGES: one item per dim, in the file's dim order (first fastest, as `ra info` lists
/// the dims), separated by commas. An empty string is a scalar's zero ranges.
pub fn parse(ranges: &str) -> std::result::Result<Vec<Spec>, String> {
    if ranges.trim().is_empty() {
        return Ok(Vec::new());
    }
    ranges
        .split(',')
        .enumerate()
        .map(|(dim, item)| {
            let item = item.trim();
            let num = |s: &str| -> std::result::Result<Option<u64>, String> {
                let s = s.trim();
                if s.is_empty() {
                    return Ok(None);
                }
                s.parse::<u64>().map(Some).map_err(|_| {
                    format!("dim {dim}: '{item}' is not a range: expected a:b, a:, :b, : or a, with a and b whole numbers")
                })
            };
            match item.split_once(':') {
                Some((a, b)) => Ok(Spec {
                    start: num(a)?,
                    end: num(b)?,
                    index: false,
                }),
                None => {
                    let i = num(item)?.ok_or_else(|| format!("dim {dim}: empty range (use ':' for the whole dim)"))?;
                    Ok(Spec {
                        start: Some(i),
                        end: Some(i.saturating_add(1)),
                        index: true,
                    })
                }
            }
        })
        .collect()
}

/// The ranges of `specs` over `dims` (an open end is the dim's length); checking them against
/// the dims is left to the library, whose errors name the dim.
fn resolve(specs: &[Spec], dims: &[u64]) -> Vec<Range<u64>> {
    specs
        .iter()
        .zip(dims.iter().copied().chain(std::iter::repeat(0)))
        .map(|(s, len)| s.start.unwrap_or(0)..s.end.unwrap_or(len))
        .collect()
}

/// Writes the block `ranges` of `input` to `output`.
pub fn run(input: &Path, output: &Path, ranges: &str, squeeze: bool) -> Result<()> {
    let specs = parse(ranges).map_err(|m| Failure::usage("slice", m))?;
    // A FIFO named as a file is refused at once, not waited on.
    drop(crate::source::open_regular(input)?);
    let reader = ArrayReader::open(input).at(input)?;
    let dims = reader.header().dims.clone();
    if specs.len() != dims.len() {
        return Err(Failure::file(
            input,
            format!(
                "{} ranges for {} dims {dims:?}: give one per dim, in the order ra info lists them",
                specs.len(),
                dims.len()
            ),
        ));
    }
    let ranges = resolve(&specs, &dims);
    let (mut header, data) = reader.read_subset_bytes(&ranges).at(input)?;
    if squeeze {
        header.dims = header
            .dims
            .iter()
            .zip(&specs)
            .filter(|(_, s)| !s.index)
            .map(|(&d, _)| d)
            .collect();
    }
    // The trailer (params, record schema) describes the elements, which the block keeps: it is
    // placed again at the block's data end. Other trailing bytes are not carried over.
    let trailing = reader
        .trailer()
        .map(|t| t.encode_block(header.encoded_len() as u64 + header.size))
        .unwrap_or_default();
    let mut out = AtomicFile::create(output).at(output)?;
    out.file().write_all(&header.encode()).at(output)?;
    out.file().write_all(&data).at(output)?;
    out.file().write_all(&trailing).at(output)?;
    out.commit().at(output)?;
    crate::report::done(format_args!(
        "{} -> {}: dims {:?}",
        crate::source::shown(input),
        output.display(),
        header.dims
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_syntax() {
        let s = parse(":,2:5, 7 ,3:,:4").unwrap();
        let r = resolve(&s, &[10, 10, 10, 10, 10]);
        assert_eq!(r, [0..10, 2..5, 7..8, 3..10, 0..4]);
        assert_eq!(s.iter().filter(|s| s.index).count(), 1);
        assert!(parse("").unwrap().is_empty());
        assert!(parse("1,x").unwrap_err().contains("dim 1"));
        assert!(parse("1,,2").unwrap_err().contains("dim 1"));
        assert!(parse("-1").is_err());
        assert!(parse("1:2:3").is_err());
    }
}
