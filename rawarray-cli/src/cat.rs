//! `ra cat`: every element with its index, in file (column-major) order.

use std::io::Write;
use std::path::Path;

use crate::fail::{Failure, Result};
use crate::progress::Progress;
use crate::source::RaSource;
use crate::value::{layout_text, Decoder};

/// Prints `[i, j, ...]<TAB>value` lines, or with `json` one object per line:
/// `{"index":[i,j],"value":...}`; at most `head` elements.
pub fn run(path: &Path, head: Option<u64>, json: bool, out: &mut dyn Write) -> Result<()> {
    let mut src = RaSource::open(path)?;
    let header = src.plain_header();
    let info = src.trailer_info();
    let schema = info.element_schema(&header);
    let decoder = Decoder::new(header.eltype, header.elbyte);
    let big_endian = header.is_big_endian();
    let dims = header.dims.clone();
    let elbyte = header.elbyte as usize;
    let limit = head.map(|n| n.saturating_mul(header.elbyte));

    let mut index = vec![0u64; dims.len()];
    let mut line = String::new();
    src.for_each_chunk(limit, &Progress::hidden(), |chunk| {
        line.clear();
        for element in chunk.chunks_exact(elbyte) {
            if json {
                line.push_str("{\"index\":");
                push_index(&index, ",", &mut line);
                line.push_str(",\"value\":");
            } else {
                push_index(&index, ", ", &mut line);
                line.push('\t');
            }
            match schema {
                Some(layout) => layout_text(layout, element, big_endian, json, &mut line),
                None if json => decoder.decode(element).json(&mut line),
                None => decoder.decode(element).text(&mut line),
            }
            line.push_str(if json { "}\n" } else { "\n" });
            advance(&mut index, &dims);
        }
        out.write_all(line.as_bytes()).map_err(Failure::stdout)
    })?;
    out.flush().map_err(Failure::stdout)
}

/// `[i, j, ...]` with `sep` between the indices.
pub fn push_index(index: &[u64], sep: &str, out: &mut String) {
    out.push('[');
    for (i, k) in index.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(&k.to_string());
    }
    out.push(']');
}

/// The next column-major index: the first varies fastest.
pub fn advance(index: &mut [u64], dims: &[u64]) {
    for (i, d) in index.iter_mut().zip(dims) {
        *i += 1;
        if *i < *d {
            return;
        }
        *i = 0;
    }
}
