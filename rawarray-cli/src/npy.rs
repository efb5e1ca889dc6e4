//! The `.npy` format (numpy's NEP 1), both ways, and the `.ra` <-> `.npy` conversions.
//!
//! A `.npy` file is the magic `\x93NUMPY`, a version (1.0, 2.0 or 3.0), the length of a header
//! (u16 in 1.0, u32 after), the header, a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }` padded with spaces to a
//! multiple of 64 bytes and ended by `\n`, and the data.
//!
//! The dims rule: a `.ra` with dims `[d0, d1, ..]` (d0 fastest) is the numpy array of shape
//! `(.., d1, d0)` in C order, so the data bytes are the same and only the shape is reversed.
//! A Fortran-order `.npy` of shape `S` holds its elements with the first axis fastest; its
//! `.ra` is still dims `reverse(S)` (numpy must see the same array), so its data is transposed
//! (all axes reversed) on the way, in memory.
//!
//! Records: a `.ra` of user-defined (eltype 0) elements whose trailer holds a record schema is
//! a structured dtype (`[('t', '<f8'), ('xyz', '<f4', (3,))]`), and a structured `.npy` becomes
//! such a `.ra`, its schema in a trailer block. The trailer's params have no place in `.npy`.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use rawarray_serde::numpy::{
    dtype as numpy_dtype, dtype_or_reason as numpy_dtype_or_reason,
    parse_dtype as parse_numpy_dtype,
};
use rawarray_serde::{ElType, Header, Layout, Trailer};

use crate::output::OutFile;

use crate::fail::{At, Failure, Result};
use crate::progress::Progress;
use crate::source::{RaSource, CHUNK};
use crate::value::swap_by_layout;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// numpy refuses headers longer than this unless told otherwise (`max_header_size`); so do we,
/// so that a hostile length costs nothing.
const MAX_HEADER: usize = 1 << 20;

/// The dtype of a `.npy` file.
#[derive(Debug, PartialEq)]
pub enum Descr {
    /// A dtype string (`'<f4'`).
    Simple(String),
    /// A structured dtype, its list of fields with tuples as lists (what
    /// `Layout::from_numpy_descr_json` reads).
    Structured(serde_json::Value),
}

/// The parsed header of a `.npy` file.
#[derive(Debug, PartialEq)]
pub struct NpyHeader {
    /// The dtype.
    pub descr: Descr,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// numpy's shape, slowest axis first (C order's reading).
    pub shape: Vec<u64>,
}

/// The bytes of a `.npy` header for `descr` (Python source: `'<f4'` quoted, or a list of
/// fields) and `shape`, C order, version 1.0 unless the header needs 2.0's longer length field.
pub fn encode_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let shape_text = rawarray_serde::numpy::shape(shape);
    let dict = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': {shape_text}, }}");
    let mut out = Vec::with_capacity(dict.len() + 80);
    out.extend_from_slice(MAGIC);
    for (version, len_bytes) in [(1u8, 2usize), (2, 4)] {
        let prefix = MAGIC.len() + 2 + len_bytes;
        let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
        let header_len = total - prefix;
        if version == 1 && header_len > usize::from(u16::MAX) {
            continue;
        }
        out.extend_from_slice(&[version, 0]);
        if version == 1 {
            out.extend_from_slice(&(header_len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(header_len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        break;
    }
    out
}

/// Reads a `.npy` header, leaving `r` at the first data byte.
pub fn read_header<R: Read>(r: &mut R) -> std::result::Result<NpyHeader, String> {
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|e| format!("not a .npy file: {e}"))?;
    if &pre[..6] != MAGIC {
        return Err("not a .npy file: the first bytes are not \\x93NUMPY".into());
    }
    let (major, minor) = (pre[6], pre[7]);
    let len = match major {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).map_err(|e| e.to_string())?;
            usize::from(u16::from_le_bytes(b))
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|e| e.to_string())?;
            u32::from_le_bytes(b) as usize
        }
        _ => {
            return Err(format!(
                ".npy format version {major}.{minor} is not 1.0, 2.0 or 3.0"
            ))
        }
    };
    if len > MAX_HEADER {
        return Err(format!(
            ".npy header of {len} bytes is longer than {MAX_HEADER}"
        ));
    }
    let mut text = vec![0u8; len];
    r.read_exact(&mut text)
        .map_err(|e| format!("truncated .npy header: {e}"))?;
    // 1.0 and 2.0 headers are latin-1; 3.0 is utf-8 (the dict we need is ASCII either way).
    let text: String = if major == 3 {
        String::from_utf8(text).map_err(|_| "the .npy 3.0 header is not utf-8".to_string())?
    } else {
        text.iter().map(|&b| char::from(b)).collect()
    };
    parse_dict(&text)
}

/// A value of the Python literal subset `.npy` headers use.
#[derive(Debug, Clone, PartialEq)]
enum Py {
    Str(String),
    Bool(bool),
    None,
    Int(u64),
    Seq(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

fn parse_dict(text: &str) -> std::result::Result<NpyHeader, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    // Quote the header in messages, but not all of a long one.
    let quoted: String = text.trim_end().chars().take(200).collect();
    let more = if text.trim_end().chars().count() > 200 {
        "..."
    } else {
        ""
    };
    let bad = |what: &str| format!("malformed .npy header ({what}): {quoted}{more}");
    let v = p.value().map_err(|e| bad(&e))?;
    p.ws();
    if p.i != p.s.len() {
        return Err(bad("text after the dict"));
    }
    let Py::Dict(items) = v else {
        return Err(bad("not a dict"));
    };
    let get = |k: &str| {
        items
            .iter()
            .find(|(key, _)| *key == Py::Str(k.into()))
            .map(|(_, v)| v)
    };
    let descr = match get("descr") {
        Some(Py::Str(s)) => Descr::Simple(s.clone()),
        Some(list @ Py::Seq(_)) => Descr::Structured(
            to_json(list).ok_or_else(|| bad("a structured 'descr' holds something not a dtype"))?,
        ),
        _ => return Err(bad("no 'descr'")),
    };
    let fortran_order = match get("fortran_order") {
        Some(Py::Bool(b)) => *b,
        _ => return Err(bad("no 'fortran_order' bool")),
    };
    let shape = match get("shape") {
        Some(Py::Seq(items)) => items
            .iter()
            .map(|x| match x {
                Py::Int(n) => Ok(*n),
                _ => Err(bad("a shape entry is not an integer")),
            })
            .collect::<std::result::Result<Vec<u64>, String>>()?,
        _ => return Err(bad("no 'shape' tuple")),
    };
    Ok(NpyHeader {
        descr,
        fortran_order,
        shape,
    })
}

/// A dtype description as JSON: strings, integers and lists (tuples become lists).
fn to_json(v: &Py) -> Option<serde_json::Value> {
    Some(match v {
        Py::Str(s) => serde_json::Value::from(s.as_str()),
        Py::Int(n) => serde_json::Value::from(*n),
        Py::Seq(items) => {
            serde_json::Value::Array(items.iter().map(to_json).collect::<Option<Vec<_>>>()?)
        }
        Py::Bool(_) | Py::None | Py::Dict(_) => return None,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> std::result::Result<Py, String> {
        self.ws();
        self.depth += 1;
        if self.depth > 32 {
            return Err("nested too deep".into());
        }
        let v = match self.s.get(self.i).copied() {
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                while !self.eat(b'}') {
                    let k = self.value()?;
                    if !self.eat(b':') {
                        return Err("expected ':'".into());
                    }
                    items.push((k, self.value()?));
                    if !self.eat(b',') && !self.eat(b'}') {
                        return Err("expected ',' or '}'".into());
                    } else if self.s[self.i - 1] == b'}' {
                        break;
                    }
                }
                Py::Dict(items)
            }
            Some(open @ (b'(' | b'[')) => {
                self.i += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                while !self.eat(close) {
                    items.push(self.value()?);
                    if !self.eat(b',') && !self.eat(close) {
                        return Err(format!("expected ',' or '{}'", char::from(close)));
                    } else if self.s[self.i - 1] == close {
                        break;
                    }
                }
                Py::Seq(items)
            }
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.s.get(self.i).is_some_and(|&c| c != q && c != b'\\') {
                    self.i += 1;
                }
                if self.s.get(self.i) != Some(&q) {
                    return Err("unterminated or escaped string".into());
                }
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Py::Str(s)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                let n = std::str::from_utf8(&self.s[start..self.i])
                    .expect("digits")
                    .parse::<u64>()
                    .map_err(|e| e.to_string())?;
                // Python 2 wrote long integers with an L.
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                Py::Int(n)
            }
            _ => {
                let rest = &self.s[self.i..];
                let word = |w: &str| rest.starts_with(w.as_bytes());
                let (v, n) = if word("True") {
                    (Py::Bool(true), 4)
                } else if word("False") {
                    (Py::Bool(false), 5)
                } else if word("None") {
                    (Py::None, 4)
                } else {
                    return Err(format!("unexpected text at byte {}", self.i));
                };
                self.i += n;
                v
            }
        };
        self.depth -= 1;
        Ok(v)
    }
}

/// A JSON value for a warning: at most 80 characters of it.
fn one_line_json(v: &serde_json::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// `.ra` -> `.npy`: the numpy dtype of the element (a structured one for records with a
/// schema), the reversed dims as the shape, C order; the data bytes are copied as they are
/// when stored plain and little-endian. Trailer params are not kept (a warning says so).
pub fn ra_to_npy(input: &Path, output: &Path) -> Result<()> {
    let mut src = RaSource::open(input)?;
    let header = src.plain_header();
    let info = src.trailer_info();
    let schema = info.element_schema(&header);
    // A schema says more than the header (records; bool, datetime64 and timedelta64 marks on
    // their numbers), so its dtype goes first.
    let descr = match (schema, numpy_dtype(header.eltype, header.elbyte)) {
        (Some(schema), _) => schema
            .plain_schema()
            .unwrap_or_else(|| schema.clone())
            .numpy_descr(),
        (None, Some(d)) => format!("'{d}'"),
        (None, None) => {
            let why = info.damaged.map_or_else(
                || numpy_dtype_or_reason(header.eltype, header.elbyte),
                |why| format!("unknown: {why}"),
            );
            return Err(Failure::file(
                input,
                format!("no .npy for {}: numpy dtype {why}", header.type_label()),
            ));
        }
    };
    // numpy's .npy header takes exactly descr, fortran_order and shape: parameters have no
    // place there. Say so rather than drop them in silence (the dtype carries the schema).
    if let Some(params) = info
        .trailer
        .as_ref()
        .map(|t| &t.params)
        .filter(|p| !p.is_null())
    {
        eprintln!(
            "ra: warning: {}: the trailer's params ({}) are not kept in {}: a .npy file has no \
             place for them (keep the .ra, or save them beside it)",
            input.display(),
            one_line_json(params),
            output.display()
        );
    }
    let shape: Vec<u64> = header.dims.iter().rev().copied().collect();
    let progress = Progress::bytes(header.data_len(), "convert");
    let mut out = OutFile::create(output).at(output)?;
    out.file()
        .write_all(&encode_header(&descr, &shape))
        .at(output)?;
    match schema {
        // Records of a big-endian file: the schema says where their scalars are.
        Some(layout) if header.is_big_endian() => {
            let elbyte = header.elbyte as usize;
            let mut w = BufWriter::with_capacity(CHUNK, out.file());
            let mut buf = Vec::new();
            src.for_each_chunk(None, &progress, |chunk| {
                buf.clear();
                buf.extend_from_slice(chunk);
                buf.chunks_exact_mut(elbyte)
                    .for_each(|e| swap_by_layout(layout, e));
                w.write_all(&buf).at(output)
            })?;
            w.flush().at(output)?;
        }
        _ => write_data(&mut src, &mut out, output, &progress)?,
    }
    // A new output is not synced, as with `cp`; one that replaces a file is.
    out.commit_relaxed().at(output)
}

/// Writes the plain data of `src` to `out`: copied by the kernel when it is stored plain,
/// decoded chunk by chunk otherwise.
pub fn write_data(
    src: &mut RaSource,
    out: &mut OutFile,
    output: &Path,
    progress: &Progress,
) -> Result<()> {
    let output = output.to_path_buf();
    if src.is_plain() {
        let input = src.path().to_path_buf();
        let (file, len) = src.data_file()?;
        return copy_exact(file, &input, out.file(), &output, len, progress);
    }
    let mut w = BufWriter::with_capacity(CHUNK, out.file());
    src.for_each_chunk(None, progress, |chunk| w.write_all(chunk).at(&output))?;
    w.flush().at(&output)
}

/// Copies exactly `len` bytes from `from` to `to` (the kernel copies file to file where it
/// can), in steps so a progress bar moves; a short input is an error naming it.
pub fn copy_exact(
    from: &mut File,
    input: &Path,
    to: &mut File,
    output: &Path,
    len: u64,
    progress: &Progress,
) -> Result<()> {
    const STEP: u64 = 64 << 20;
    let mut left = len;
    while left > 0 {
        let want = left.min(STEP);
        let got = io::copy(&mut from.take(want), to).map_err(|e| {
            // io::copy does not say which side failed; a read error names the input.
            if e.kind() == io::ErrorKind::UnexpectedEof {
                Failure::file(input, e)
            } else {
                Failure::file(output, e)
            }
        })?;
        if got < want {
            return Err(Failure::file(
                input,
                format!(
                    "truncated: expected {len} data bytes, found {}",
                    len - left + got
                ),
            ));
        }
        progress.inc(got);
        left -= got;
    }
    Ok(())
}

/// `.npy` -> `.ra`: dims are the shape reversed; C-order little-endian data is copied as it
/// is, big-endian data is swapped, Fortran-order data is transposed.
pub fn npy_to_ra(input: &Path, output: &Path) -> Result<()> {
    let mut file = crate::source::open_regular(input)?;
    let file_len = file.metadata().at(input)?.len();
    let mut reader = BufReader::new(&mut file);
    let npy = read_header(&mut reader).map_err(|e| Failure::file(input, e))?;
    let (eltype, elbyte, big_endian, schema) = match &npy.descr {
        Descr::Simple(d) if rawarray_serde::Logical::of_numpy_dtype(d).is_some() => {
            // datetime64/timedelta64: the int64 they are, marked in a trailer's schema. A
            // big-endian one (`>M8[ns]`) holds the same instants, its int64s swapped below.
            let logical = rawarray_serde::Logical::of_numpy_dtype(d)
                .expect("checked")
                .map_err(|e| Failure::file(input, e))?;
            let ((eltype, elbyte), _) = logical.stored_as();
            let layout = Layout::Scalar {
                eltype,
                elbyte,
                logical: Some(logical),
            };
            let big_endian = rawarray_serde::numpy::is_big_endian(d);
            (eltype, elbyte, big_endian, Some(layout))
        }
        Descr::Simple(d) => {
            let (eltype, elbyte, big_endian) = parse_numpy_dtype(d).ok_or_else(|| {
                Failure::file(input, format!("numpy dtype '{d}' has no .ra element type"))
            })?;
            // numpy's bool: bytes 0 and 1, marked bool as the library writes it.
            let bool_mark = rawarray_serde::numpy::is_bool_dtype(d)
                .then(|| Layout::from_numpy_descr_json(&serde_json::json!(d)).ok())
                .flatten();
            (eltype, elbyte, big_endian, bool_mark)
        }
        Descr::Structured(json) => {
            let layout = Layout::from_numpy_descr_json(json).map_err(|e| {
                Failure::file(
                    input,
                    padding_problem(json).unwrap_or_else(|| e.to_string()),
                )
            })?;
            // What we write as a schema must pass the checks every reader applies to one.
            layout.validate().at(input)?;
            (ElType::User, layout.size(), false, Some(layout))
        }
    };
    let dims: Vec<u64> = npy.shape.iter().rev().copied().collect();
    let header = Header::new(eltype, elbyte, dims).at(input)?;
    // The buffered reader has read ahead: the data starts where it says it stands.
    let consumed = reader.stream_position().at(input)?;
    drop(reader);
    file.seek(io::SeekFrom::Start(consumed)).at(input)?;
    let available = file_len.saturating_sub(consumed);
    if available < header.size {
        return Err(Failure::file(
            input,
            format!(
                "truncated: expected {} data bytes, found {available}",
                header.size
            ),
        ));
    }
    let swap = match eltype.swap_width(elbyte) {
        Some(w) if big_endian && w > 1 => w as usize,
        _ => 0,
    };
    let transpose = npy.fortran_order && npy.shape.iter().filter(|&&d| d > 1).count() > 1;
    let progress = Progress::bytes(header.size, "convert");
    let mut out = OutFile::create(output).at(output)?;
    out.file().write_all(&header.encode()).at(output)?;
    if swap == 0 && !transpose {
        copy_exact(&mut file, input, out.file(), output, header.size, &progress)?;
    } else if !transpose {
        let mut w = BufWriter::with_capacity(CHUNK, out.file());
        let mut buf = vec![0u8; (CHUNK / elbyte as usize) * elbyte as usize];
        let mut left = header.size;
        while left > 0 {
            let n = (buf.len() as u64).min(left) as usize;
            file.read_exact(&mut buf[..n]).at(input)?;
            buf[..n].chunks_exact_mut(swap).for_each(<[u8]>::reverse);
            w.write_all(&buf[..n]).at(output)?;
            progress.inc(n as u64);
            left -= n as u64;
        }
        w.flush().at(output)?;
    } else {
        let len = usize::try_from(header.size)
            .map_err(|_| Failure::file(input, "too large for memory"))?;
        let mut data = vec![0u8; len];
        file.read_exact(&mut data).at(input)?;
        if swap > 0 {
            data.chunks_exact_mut(swap).for_each(<[u8]>::reverse);
        }
        let c_order = fortran_to_c(&data, &npy.shape, elbyte as usize);
        out.file().write_all(&c_order).at(output)?;
        progress.inc(header.size);
    }
    if let Some(layout) = schema {
        let t = Trailer::new(serde_json::Value::Null)
            .at(input)?
            .with_schema(layout);
        let block = t.encode_block(header.encoded_len() as u64 + header.size);
        out.file().write_all(&block).at(output)?;
    }
    // A new output is not synced, as with `cp`; one that replaces a file is.
    out.commit_relaxed().at(output)
}

/// The elements of a Fortran-order array of `shape` (first axis fastest) in C order (last
/// axis fastest): all axes reversed.
pub fn fortran_to_c(data: &[u8], shape: &[u64], elbyte: usize) -> Vec<u8> {
    let n = shape.len();
    let mut out = Vec::with_capacity(data.len());
    if data.is_empty() {
        return out;
    }
    // Fortran strides in elements: axis k steps over the product of the axes before it.
    let mut stride = vec![0usize; n];
    let mut s = 1usize;
    for k in 0..n {
        stride[k] = s;
        s *= shape[k] as usize;
    }
    let mut index = vec![0usize; n];
    let mut offset = 0usize;
    loop {
        out.extend_from_slice(&data[offset * elbyte..(offset + 1) * elbyte]);
        // C order: the last axis moves fastest.
        let mut k = n;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            index[k] += 1;
            offset += stride[k];
            if index[k] < shape[k] as usize {
                break;
            }
            offset -= stride[k] * index[k];
            index[k] = 0;
        }
    }
}

/// Why a structured dtype cannot be records, when the cause is padding: numpy writes the
/// gaps of an aligned dtype (`align=True`, a C struct) as unnamed void fields,
/// `('', '|V7')`, and `.ra` records are packed. Names each gap (after which field, at which
/// offsets) and the fix. `None` if the top-level fields hold no such gap.
fn padding_problem(descr: &serde_json::Value) -> Option<String> {
    let fields = descr.as_array()?;
    let mut offset = Some(0u64);
    let mut packed = Some(0u64);
    let mut previous: Option<&str> = None;
    let mut gaps = Vec::new();
    for field in fields {
        let name = field.get(0)?.as_str()?;
        let dtype = field.get(1).and_then(|d| d.as_str());
        let void = dtype
            .and_then(|d| d.trim_start_matches(['|', '<', '>', '=']).strip_prefix('V'))
            .and_then(|n| n.parse::<u64>().ok());
        let size = match (name, void) {
            ("", Some(n)) => {
                let place = match previous {
                    Some(p) => format!("after field '{p}'"),
                    None => "before the first field".to_string(),
                };
                // Checked: a hostile header may claim any size (`|V18446744073709551615`).
                let end = offset.and_then(|o| o.checked_add(n));
                let at = offset
                    .zip(end)
                    .map_or_else(String::new, |(o, e)| format!(" (offsets {o}..{e})"));
                gaps.push(format!("{n} bytes {place}{at}"));
                offset = end;
                continue;
            }
            _ => Layout::from_numpy_descr_json(&serde_json::Value::Array(vec![field.clone()]))
                .ok()
                .map(|l| l.size()),
        };
        offset = offset.zip(size).and_then(|(o, s)| o.checked_add(s));
        packed = packed.zip(size).and_then(|(o, s)| o.checked_add(s));
        previous = Some(name);
    }
    if gaps.is_empty() {
        return None;
    }
    let sizes = match (packed, offset) {
        (Some(p), Some(o)) => format!(" (numpy's itemsize {o}, packed {p})"),
        _ => String::new(),
    };
    Some(format!(
        "the numpy structured dtype has padding, which .ra records do not have: {}{sizes}; \
         save a packed copy: numpy.lib.recfunctions.repack_fields(a), or a dtype built with \
         align=False",
        gaps.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_what_numpy_writes() {
        let h = encode_header("'<f4'", &[4, 3]);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }"));
        assert!(text.ends_with(" \n"));
        let back = read_header(&mut &h[..]).unwrap();
        assert_eq!(back.shape, vec![4, 3]);
        for shape in [vec![], vec![5]] {
            let h = encode_header("'|u1'", &shape);
            assert_eq!(read_header(&mut &h[..]).unwrap().shape, shape);
        }
    }

    #[test]
    fn long_headers_take_version_2() {
        let shape = vec![1u64; 30_000];
        let h = encode_header("'<f8'", &shape);
        assert_eq!(&h[6..8], &[2, 0]);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(read_header(&mut &h[..]).unwrap().shape, shape);
    }

    #[test]
    fn parses_the_dict_forms_numpy_has_written() {
        let parse = |t: &str| parse_dict(t);
        let h = parse("{'descr': '>i2', 'fortran_order': True, 'shape': (2L, 3L), }   \n").unwrap();
        assert_eq!(h.descr, Descr::Simple(">i2".into()));
        assert!(h.fortran_order);
        assert_eq!(h.shape, vec![2, 3]);
        let h = parse("{\"shape\": (), \"fortran_order\": False, \"descr\": \"<c16\"}").unwrap();
        assert!(h.shape.is_empty());
        let h = parse(
            "{'descr': [('a', '<f4'), ('b', '|u1', (3,))], 'fortran_order': False, 'shape': (1,)}",
        )
        .unwrap();
        assert_eq!(
            h.descr,
            Descr::Structured(serde_json::json!([["a", "<f4"], ["b", "|u1", [3]]]))
        );
        for bad in [
            "",
            "{",
            "{'descr': '<f4'",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': '<f4', 'fortran_order': Nope, 'shape': (1,)}",
            &"[".repeat(1000),
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fortran_to_c_reverses_every_axis() {
        // shape (2, 3), Fortran order holds a[0,0] a[1,0] a[0,1] a[1,1] a[0,2] a[1,2].
        let f = [0u8, 10, 1, 11, 2, 12];
        assert_eq!(fortran_to_c(&f, &[2, 3], 1), vec![0, 1, 2, 10, 11, 12]);
        // 3-D, two-byte elements: value = 100*i + 10*j + k at (i, j, k), shape (2, 3, 4).
        let shape = [2u64, 3, 4];
        let mut f = Vec::new();
        for k in 0..4u16 {
            for j in 0..3u16 {
                for i in 0..2u16 {
                    f.extend((100 * i + 10 * j + k).to_le_bytes());
                }
            }
        }
        let c = fortran_to_c(&f, &shape, 2);
        let want: Vec<u8> = (0..2u16)
            .flat_map(|i| (0..3u16).flat_map(move |j| (0..4u16).map(move |k| 100 * i + 10 * j + k)))
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(c, want);
    }
}
