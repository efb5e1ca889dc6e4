//! `ra diff A B`: do two `.ra` files hold the same array? Values are compared, not bytes: a
//! big-endian or LZ4-compressed file equals its plain little-endian twin. Both files are
//! streamed (B read by a second thread, a few chunks ahead), so memory stays independent of
//! their size.
//!
//! Exit status as `diff`'s: 0 equal, 1 different, 2 a file could not be read.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc;

use rawarray_serde::{ElType, ErrorKind, Header, Layout, SchemaCheck};

use crate::cat::{advance, push_index};
use crate::fail::{Failure, Result};
use crate::progress::Progress;
use crate::source::RaSource;
use crate::value::{swap_by_layout, Decoder, Value};

/// How values are compared.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Relative tolerance, against B's value (numpy's `isclose`: |a - b| <= atol + rtol * |b|).
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// NaN equals NaN (for complex: a NaN in both, anywhere).
    pub equal_nan: bool,
    /// Differing elements printed (all are counted).
    pub show: u64,
    /// Record schemas must match in full (`--strict-schema`): the record's name too, not only
    /// the fields' names, types and offsets.
    pub strict_schema: bool,
}

/// Compares `a` and `b`; prints the differences to `out`. `Ok(true)` when they differ.
pub fn run(a: &Path, b: &Path, tol: Tolerance, out: &mut dyn Write) -> Result<bool> {
    let mut src_a = RaSource::open(a)?;
    let mut src_b = RaSource::open(b)?;
    let (ha, hb) = (src_a.plain_header(), src_b.plain_header());
    let mut text = String::new();
    let (ta, tb) = (src_a.trailer_info(), src_b.trailer_info());
    let mut differ = false;

    if (ha.eltype, ha.elbyte) != (hb.eltype, hb.elbyte) {
        let _ = writeln!(
            text,
            "element type: {} vs {}",
            type_name(&ha),
            type_name(&hb)
        );
        differ = true;
    }
    if ha.dims != hb.dims {
        let _ = writeln!(text, "dims: {:?} vs {:?}", ha.dims, hb.dims);
        differ = true;
    }
    // The trailer's params and record schema are part of what a file says; where the trailer
    // sits and the storage (byte order, compression) are not.
    // A damaged trailer is not "no trailer": it differs from any other, and is named so.
    let params = |t: &crate::trailer::TrailerInfo| match (&t.trailer, &t.damaged) {
        (Some(t), _) => Ok(Some(t.params.clone())),
        (None, Some(why)) => Err(why.clone()),
        (None, None) => Ok(None),
    };
    let (pa, pb) = (params(&ta), params(&tb));
    if pa != pb {
        let show = |p: &std::result::Result<Option<serde_json::Value>, String>| match p {
            Ok(Some(v)) => v.to_string(),
            Ok(None) => "(no trailer)".to_string(),
            Err(why) => format!("(damaged trailer: {why})"),
        };
        let _ = writeln!(text, "trailer params: {} vs {}", show(&pa), show(&pb));
        differ = true;
    }
    // The library's one schema check, A's schema as the one B's must match: values compare
    // when the fields do; a record name differs only as a note unless --strict-schema.
    let schema =
        |t: &crate::trailer::TrailerInfo| t.trailer.as_ref().and_then(|t| t.schema.clone());
    let mode = if tol.strict_schema {
        SchemaCheck::Strict
    } else {
        SchemaCheck::Fields
    };
    match (schema(&ta), schema(&tb)) {
        (Some(sa), Some(sb)) => match sa.check_against(&sb, mode) {
            Ok(notes) => notes
                .iter()
                .for_each(|n| crate::report::note(format_args!("diff: {n}"))),
            Err(e) => {
                let why = match e.kind() {
                    ErrorKind::SchemaMismatch {
                        at, file, expected, ..
                    } => format!("{at}: {expected} vs {file}"),
                    _ => e.to_string(),
                };
                let _ = writeln!(text, "record schema differs at {why}");
                differ = true;
            }
        },
        (None, None) => {}
        (a, _) => {
            let (has, lacks, other) = match a {
                Some(_) => ("A", "B", &tb),
                None => ("B", "A", &ta),
            };
            // A damaged trailer was named with the params: its schema is unknown, not absent.
            if other.damaged.is_none() {
                let _ = writeln!(text, "record schema differs: {has} has one, {lacks} none");
            }
            differ = true;
        }
    }
    let same_type = (ha.eltype, ha.elbyte) == (hb.eltype, hb.elbyte);
    let tolerant = tol.rtol > 0.0 || tol.atol > 0.0 || tol.equal_nan;
    if same_type && tolerant && byte_compared_non_integer(&ha) {
        // A tolerance that would be silently ignored where one is expected is refused: f128,
        // complex256 and records compare exactly, by their bytes. (Integers compare exactly
        // as documented, tolerances being for floats.)
        return Err(Failure::usage(
            "diff",
            format!(
                "--rtol, --atol and --equal-nan apply to float and complex values; {} \
                 elements are compared exactly, by their bytes",
                type_name(&ha)
            ),
        ));
    }
    out.write_all(text.as_bytes()).map_err(Failure::stdout)?;
    if (ha.eltype, ha.elbyte, &ha.dims) != (hb.eltype, hb.elbyte, &hb.dims) {
        // Values of other types or shapes have no element-by-element comparison.
        return Ok(true);
    }

    let layout = ta.element_schema(&ha).cloned();
    let big_endian = [src_a.header.is_big_endian(), src_b.header.is_big_endian()];
    let mut cmp = Comparer::new(&ha, layout, tol, big_endian);
    let b_path = b.to_path_buf();
    std::thread::scope(|s| -> Result<()> {
        // B runs ahead by at most two chunks; the channel carries its failure too.
        let (tx, rx) = mpsc::sync_channel::<Result<Vec<u8>>>(2);
        s.spawn(move || {
            let sent = src_b.for_each_chunk(None, &Progress::hidden(), |c| {
                // A receiver gone means A stopped (an error): stop reading B.
                tx.send(Ok(c.to_vec()))
                    .map_err(|_| Failure::Checks(String::new()))
            });
            if let Err(e @ Failure::File { .. }) = sent {
                let _ = tx.send(Err(e));
            }
        });
        let mut pending: Vec<u8> = Vec::new();
        let mut pos = 0;
        let progress = Progress::bytes(ha.data_len(), "diff");
        let compared = src_a.for_each_chunk(None, &progress, |chunk| {
            while pending.len() - pos < chunk.len() {
                match rx.recv() {
                    Ok(Ok(c)) => {
                        pending.drain(..pos);
                        pos = 0;
                        pending.extend_from_slice(&c);
                    }
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Err(Failure::file(&b_path, "the data ended early")),
                }
            }
            cmp.compare(chunk, &pending[pos..pos + chunk.len()], out)?;
            pos += chunk.len();
            Ok(())
        });
        drop(rx);
        compared
    })?;
    differ |= cmp.differing > 0;
    let mut tail = String::new();
    if cmp.differing > 0 {
        let total = ha.num_elements();
        if cmp.differing > tol.show {
            let _ = writeln!(tail, "... ({} more)", cmp.differing - tol.show);
        }
        let _ = write!(tail, "{} of {total} elements differ", cmp.differing);
        if cmp.numeric_float && cmp.finite_differing > 0 {
            let _ = write!(
                tail,
                "; max abs difference {:?}, max rel difference {:?}",
                cmp.max_abs, cmp.max_rel
            );
        }
        if cmp.non_finite > 0 {
            let _ = write!(tail, "; {} with NaN or infinity", cmp.non_finite);
        }
        tail.push('\n');
    }
    out.write_all(tail.as_bytes()).map_err(Failure::stdout)?;
    out.flush().map_err(Failure::stdout)?;
    Ok(differ)
}

/// Whether elements of `h` are floats that do not decode here (f128, complex256) or records:
/// compared by their bytes, where a tolerance could be expected to apply.
fn byte_compared_non_integer(h: &Header) -> bool {
    match h.eltype {
        ElType::Int | ElType::Uint => false,
        _ => !Decoder::new(h.eltype, h.elbyte).is_numeric(),
    }
}

/// As `ra info` names the type: `float32`, `complex64`, ...
fn type_name(h: &Header) -> String {
    h.type_label().clone()
}

/// Compares elements chunk by chunk, keeping the index and the running statistics.
struct Comparer {
    decoder: Decoder,
    elbyte: usize,
    dims: Vec<u64>,
    index: Vec<u64>,
    tol: Tolerance,
    /// Record schema (user-defined elements): names the first differing field.
    layout: Option<Layout>,
    /// Records of a big-endian file (A, B): swapped by their schema into little-endian before
    /// comparing. Records without a schema compare as stored.
    swap: [bool; 2],
    differing: u64,
    numeric_float: bool,
    /// Differing elements with finite values on both sides: the statistics are theirs.
    finite_differing: u64,
    /// Differing elements with a NaN or an infinity on either side.
    non_finite: u64,
    max_abs: f64,
    max_rel: f64,
    line: String,
    buf_a: Vec<u8>,
    buf_b: Vec<u8>,
}

impl Comparer {
    fn new(h: &Header, layout: Option<Layout>, tol: Tolerance, big_endian: [bool; 2]) -> Comparer {
        let records = h.eltype == ElType::User && layout.is_some();
        Comparer {
            decoder: Decoder::new(h.eltype, h.elbyte),
            elbyte: h.elbyte as usize,
            dims: h.dims.clone(),
            index: vec![0; h.dims.len()],
            tol,
            swap: big_endian.map(|b| b && records),
            layout,
            differing: 0,
            numeric_float: matches!(h.eltype, ElType::Float | ElType::BFloat16 | ElType::Complex),
            finite_differing: 0,
            non_finite: 0,
            max_abs: 0.0,
            max_rel: 0.0,
            line: String::new(),
            buf_a: Vec::new(),
            buf_b: Vec::new(),
        }
    }

    fn compare(&mut self, a: &[u8], b: &[u8], out: &mut dyn Write) -> Result<()> {
        self.line.clear();
        let elbyte = self.elbyte.max(1);
        for (ea, eb) in a.chunks_exact(elbyte).zip(b.chunks_exact(elbyte)) {
            if !self.same(ea, eb) {
                self.differing += 1;
                if self.differing <= self.tol.show {
                    self.describe(ea, eb);
                }
            }
            advance(&mut self.index, &self.dims);
        }
        out.write_all(self.line.as_bytes()).map_err(Failure::stdout)
    }

    /// Whether two elements are equal within the tolerance; updates the float statistics.
    fn same(&mut self, a: &[u8], b: &[u8]) -> bool {
        let (va, vb) = (self.decoder.decode(a), self.decoder.decode(b));
        let (re_im_a, re_im_b) = match (va, vb) {
            (Value::Float(x), Value::Float(y)) => ((x.to_f64(), 0.0), (y.to_f64(), 0.0)),
            (Value::Complex(xr, xi), Value::Complex(yr, yi)) => {
                ((xr.to_f64(), xi.to_f64()), (yr.to_f64(), yi.to_f64()))
            }
            // Integers (and f128 and records, as bytes) are equal when their bytes are.
            _ => return self.same_bytes(a, b),
        };
        let nan_a = re_im_a.0.is_nan() || re_im_a.1.is_nan();
        let nan_b = re_im_b.0.is_nan() || re_im_b.1.is_nan();
        if nan_a || nan_b {
            let same = nan_a && nan_b && self.tol.equal_nan;
            self.non_finite += u64::from(!same);
            return same;
        }
        if re_im_a == re_im_b {
            // Also equal infinities, and 0.0 and -0.0.
            return true;
        }
        let finite = |(re, im): (f64, f64)| re.is_finite() && im.is_finite();
        if !finite(re_im_a) || !finite(re_im_b) {
            // As numpy's isclose: an infinity equals only the same infinity, whatever the
            // tolerance (inf <= atol + rtol * inf would hold). Kept out of the statistics.
            self.non_finite += 1;
            return false;
        }
        let abs = (re_im_a.0 - re_im_b.0).hypot(re_im_a.1 - re_im_b.1);
        let mag_b = re_im_b.0.hypot(re_im_b.1);
        let rel = if mag_b == 0.0 {
            f64::INFINITY
        } else {
            abs / mag_b
        };
        let close = abs <= self.tol.atol + self.tol.rtol * mag_b;
        if !close {
            self.finite_differing += 1;
            self.max_abs = self.max_abs.max(abs);
            self.max_rel = self.max_rel.max(rel);
        }
        close
    }

    /// Records compare in little-endian order (`buf_a`, `buf_b` hold them after this call);
    /// everything else as stored.
    fn same_bytes(&mut self, a: &[u8], b: &[u8]) -> bool {
        if self.swap == [false, false] {
            return a == b;
        }
        let layout = self.layout.as_ref().expect("swap only with a schema");
        for (buf, e, swap) in [
            (&mut self.buf_a, a, self.swap[0]),
            (&mut self.buf_b, b, self.swap[1]),
        ] {
            buf.clear();
            buf.extend_from_slice(e);
            if swap {
                swap_by_layout(layout, buf);
            }
        }
        self.buf_a == self.buf_b
    }

    /// `[i, j]<TAB>A<TAB>B`, and for records the first field that differs.
    fn describe(&mut self, a: &[u8], b: &[u8]) {
        push_index(&self.index, ", ", &mut self.line);
        for (e, swap) in [(a, self.swap[0]), (b, self.swap[1])] {
            self.line.push('\t');
            match &self.layout {
                Some(layout) => {
                    crate::value::layout_text(layout, e, swap, false, &mut self.line);
                }
                None => self.decoder.decode(e).text(&mut self.line),
            }
        }
        if let Some(Layout::Record { fields, .. }) = &self.layout {
            // In little-endian order, so that a field that only differs in storage is skipped.
            let (a, b) = if self.swap == [false, false] {
                (a, b)
            } else {
                (&self.buf_a[..], &self.buf_b[..])
            };
            let first = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(0) as u64;
            if let Some(f) = fields
                .iter()
                .find(|f| f.offset <= first && first < f.offset + f.layout.size())
            {
                let _ = write!(self.line, "\tfield {}", f.name);
            }
        }
        self.line.push('\n');
    }
}
