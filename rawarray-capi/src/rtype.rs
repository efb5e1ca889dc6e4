//! Record types: a C struct described field by field, with each field's offset in the struct,
//! as HDF5's `H5Tinsert` describes a compound type. Records are stored packed (no padding:
//! doc/format.md), so the library gathers each struct's fields into the packed record when
//! writing and scatters them back when reading; a struct without padding is copied as it is.

use std::ffi::{c_char, c_int};

use rawarray_serde::{ElType, Field, Layout};

use crate::args::{clear_out, handle, handle_mut, put, str_arg};
use crate::error::{guard, Failure, Result};

#[derive(Clone, Debug)]
struct CField {
    name: String,
    eltype: ElType,
    elbyte: u64,
    count: u64,
    c_offset: u64,
}

impl CField {
    fn bytes(&self) -> u64 {
        self.elbyte * self.count
    }
}

/// A record type: the fields of a C struct (or a Fortran `bind(c)` derived type), each with
/// its scalar type, count and offset in the struct, and the struct's size.
///
/// Made by `ra_record_type_new`, filled by `ra_record_type_add`, freed by
/// `ra_record_type_free`. Writers and readers given it copy what they need: it may be freed
/// once they are made. Not to be changed by one thread while another uses it.
#[derive(Clone, Debug)]
pub struct RaRecordType {
    name: String,
    c_size: u64,
    fields: Vec<CField>,
}

impl RaRecordType {
    /// `sizeof` the C struct.
    pub(crate) fn c_size(&self) -> u64 {
        self.c_size
    }

    /// The packed layout (the file's schema), validated by the core.
    pub(crate) fn layout(&self) -> Result<Layout> {
        if self.fields.is_empty() {
            return Err(Failure::usage(format!(
                "record type {:?} has no fields: add them with ra_record_type_add",
                self.name
            )));
        }
        let mut offset = 0;
        let mut fields = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let scalar = Layout::Scalar {
                eltype: f.eltype,
                elbyte: f.elbyte,
                logical: None,
            };
            let layout = if f.count == 1 {
                scalar
            } else {
                Layout::Array {
                    len: f.count,
                    item: Box::new(scalar),
                }
            };
            fields.push(Field {
                name: f.name.clone(),
                offset,
                layout,
            });
            offset += f.bytes();
        }
        let layout = Layout::Record {
            name: self.name.clone(),
            fields,
        };
        layout.validate()?;
        Ok(layout)
    }

    fn packed_size(&self) -> u64 {
        self.fields.iter().map(CField::bytes).sum()
    }

    /// Whether the struct is its packed record: fields in order, no padding.
    pub(crate) fn is_packed(&self) -> bool {
        let mut at = 0;
        for f in &self.fields {
            if f.c_offset != at {
                return false;
            }
            at += f.bytes();
        }
        at == self.c_size
    }

    /// The struct's bytes that make a packed record, as `(offset in the struct, length)` runs
    /// in the record's order: fields that follow each other in the struct with no padding
    /// between them are one run, so a typical struct (padding at a few places) is copied a few
    /// runs at a time, not a field at a time.
    fn runs(&self) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for f in &self.fields {
            let (at, n) = (f.c_offset as usize, f.bytes() as usize);
            match runs.last_mut() {
                Some((start, len)) if *start + *len == at => *len += n,
                _ => runs.push((at, n)),
            }
        }
        runs
    }

    /// Gathers structs (`c_size` bytes each) into the packed records `out` holds room for.
    ///
    /// Each run is copied 8 bytes at a time, the last word of a run running past its end: a
    /// copy of a length known only at run time would call `memcpy`, twice or more a record,
    /// where a word is one load and one store. The bytes written past a run's end are
    /// overwritten by the runs after it (a record is written in its own order), and those past a
    /// record's end by the next record; the records near the end of either buffer, where a
    /// word would reach beyond it, are copied run by run, exactly.
    pub(crate) fn pack(&self, structs: &[u8], out: &mut [u8]) {
        let (c_size, size) = (self.c_size as usize, self.packed_size() as usize);
        let n = (structs.len() / c_size).min(out.len() / size);
        let runs = self.runs();
        let mut words = Vec::new();
        let mut packed = 0;
        for &(at, len) in &runs {
            words.extend((0..len.div_ceil(8)).map(|k| (at + 8 * k, packed + 8 * k)));
            packed += len;
        }
        // Records whose words all stay inside the `n` structs and the `n` records.
        let fits = |len: usize, stride: usize, reach: usize| {
            len.checked_sub(reach).map_or(0, |room| room / stride + 1)
        };
        let read = words.iter().map(|w| w.0 + 8).max().unwrap_or(0);
        let written = words.iter().map(|w| w.1 + 8).max().unwrap_or(0);
        let fast = n
            .min(fits(n * c_size, c_size, read))
            .min(fits(n * size, size, written));
        let (from, into) = (structs.as_ptr(), out.as_mut_ptr());
        for k in 0..fast {
            let (s, p) = (k * c_size, k * size);
            for &(at, to) in &words {
                // SAFETY: `fast` counts only records whose words lie inside both buffers:
                // s + at + 8 <= n * c_size <= structs.len() (read) and
                // p + to + 8 <= n * size <= out.len() (written).
                // Unaligned reads and writes of plain bytes; the two buffers do not overlap
                // (one is borrowed shared, the other exclusively).
                unsafe {
                    let word = from.add(s + at).cast::<u64>().read_unaligned();
                    into.add(p + to).cast::<u64>().write_unaligned(word);
                }
            }
        }
        for k in fast..n {
            let (s, p) = (&structs[k * c_size..], &mut out[k * size..]);
            let mut to = 0;
            for &(at, len) in &runs {
                p[to..to + len].copy_from_slice(&s[at..at + len]);
                to += len;
            }
        }
    }

    /// Scatters packed records into structs (`c_size` bytes each), leaving their padding.
    pub(crate) fn unpack(&self, packed: &[u8], structs: &mut [u8]) {
        let size = self.packed_size() as usize;
        let runs = self.runs();
        for (p, s) in packed
            .chunks_exact(size)
            .zip(structs.chunks_exact_mut(self.c_size as usize))
        {
            let mut from = 0;
            for &(at, n) in &runs {
                s[at..at + n].copy_from_slice(&p[from..from + n]);
                from += n;
            }
        }
    }
}

/// Makes a record type named `name` (the schema's record name) for a C struct of `c_size`
/// bytes (`sizeof(struct ...)`), with no fields yet. On success `*out` is a new handle (free it
/// with `ra_record_type_free`).
///
/// # Safety
/// `name` is a NUL-terminated string; `out` points to a writable `ra_record_type *`.
#[no_mangle]
pub unsafe extern "C" fn ra_record_type_new(
    name: *const c_char,
    c_size: u64,
    out: *mut *mut RaRecordType,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        // SAFETY: the caller's promise about `name`.
        let name = unsafe { str_arg(name, "name") }?;
        if c_size == 0 {
            return Err(Failure::usage(
                "argument c_size: expected sizeof the struct (at least 1), found 0",
            ));
        }
        let t = RaRecordType {
            name: name.to_string(),
            c_size,
            fields: Vec::new(),
        };
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, Box::into_raw(Box::new(t)), "out") }
    })
}

/// Adds the field `name`: `count` scalars (1 for a scalar, N for a fixed array `x[N]`) of
/// element type `eltype` (`RA_INT`, `RA_UINT`, `RA_FLOAT`, `RA_COMPLEX`, `RA_BFLOAT`) and
/// `elbyte` bytes each, at byte `c_offset` of the struct (`offsetof(struct ..., name)`).
/// Fields are stored in the order they are added. A field outside the struct, overlapping
/// another, or of a type the format does not have is a usage error naming it.
///
/// # Safety
/// `type` is a live record type; `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ra_record_type_add(
    r#type: *mut RaRecordType,
    name: *const c_char,
    eltype: u64,
    elbyte: u64,
    count: u64,
    c_offset: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live record type, used by no other thread now.
        let t = unsafe { handle_mut(r#type, "type") }?;
        // SAFETY: the caller's promise about `name`.
        let name = unsafe { str_arg(name, "name") }?;
        let et = ElType::from_code(eltype)
            .map_err(|e| Failure::usage(format!("field {name:?}: {e}")))?;
        if et == ElType::User {
            return Err(Failure::usage(format!(
                "field {name:?}: expected a scalar element type (RA_INT .. RA_BFLOAT), found RA_USER"
            )));
        }
        if !et.is_valid_elbyte(elbyte) {
            return Err(Failure::usage(format!(
                "field {name:?}: {} has no {elbyte}-byte type (expected one of {:?})",
                et.name(),
                et.valid_elbytes().unwrap_or_default()
            )));
        }
        if count == 0 {
            return Err(Failure::usage(format!(
                "field {name:?}: expected a count of 1 or more, found 0"
            )));
        }
        let bytes = elbyte.saturating_mul(count);
        let end = c_offset.saturating_add(bytes);
        if end > t.c_size {
            return Err(Failure::usage(format!(
                "field {name:?}: bytes {c_offset}..{end} lie outside the struct of {} bytes",
                t.c_size
            )));
        }
        if let Some(other) = t
            .fields
            .iter()
            .find(|f| c_offset < f.c_offset + f.bytes() && f.c_offset < end)
        {
            return Err(Failure::usage(format!(
                "field {name:?}: bytes {c_offset}..{end} overlap field {:?} at {}..{}",
                other.name,
                other.c_offset,
                other.c_offset + other.bytes()
            )));
        }
        t.fields.push(CField {
            name: name.to_string(),
            eltype: et,
            elbyte,
            count,
            c_offset,
        });
        Ok(())
    })
}

/// Bytes of one packed record of this type (what it takes in a file) into `*out`.
///
/// # Safety
/// `type` is a live record type; `out` points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn ra_record_type_packed_bytes(
    r#type: *const RaRecordType,
    out: *mut u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live record type.
        let t = unsafe { handle(r#type, "type") }?;
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, t.packed_size(), "out") }
    })
}

/// Frees a record type (NULL is ignored).
///
/// # Safety
/// `type` is NULL or a live record type, freed once, used by no other call now.
#[no_mangle]
pub unsafe extern "C" fn ra_record_type_free(r#type: *mut RaRecordType) {
    if !r#type.is_null() {
        // SAFETY: a handle from `ra_record_type_new` (a leaked Box), freed once.
        drop(unsafe { Box::from_raw(r#type) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `struct { uint64_t step; float pos[3]; /* 4 bytes padding */ double e; uint8_t tag; }`
    /// (40 bytes), its fields added out of struct order to make the record's order differ.
    fn sample() -> RaRecordType {
        record_type(
            40,
            &[
                (ElType::Uint, 8, 1, 0),
                (ElType::Float, 4, 3, 8),
                (ElType::Uint, 1, 1, 32),
                (ElType::Float, 8, 1, 24),
            ],
        )
    }

    /// A record type of `c_size` bytes with fields `(eltype, elbyte, count, c_offset)`.
    fn record_type(c_size: u64, fields: &[(ElType, u64, u64, u64)]) -> RaRecordType {
        let fields = fields
            .iter()
            .enumerate()
            .map(|(k, &(eltype, elbyte, count, c_offset))| CField {
                name: format!("f{k}"),
                eltype,
                elbyte,
                count,
                c_offset,
            })
            .collect();
        RaRecordType {
            name: "sample".into(),
            c_size,
            fields,
        }
    }

    /// Packs record by record and field by field, a byte at a time: the truth `pack` is held to.
    fn pack_by_hand(t: &RaRecordType, structs: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in structs.chunks_exact(t.c_size as usize) {
            for f in &t.fields {
                for b in 0..f.bytes() {
                    out.push(s[(f.c_offset + b) as usize]);
                }
            }
        }
        out
    }

    /// `pack` copies words of 8 bytes past the ends of runs and records, and the last records
    /// exactly: for structs whose last field ends at the struct's end or leaves padding, fields
    /// out of order, short and long runs, 0 to 9 records, it writes what packing by hand
    /// writes, and not a byte past the records.
    #[test]
    fn pack_matches_packing_by_hand() {
        let types = [
            sample(),
            // One byte: every word reaches past the struct.
            record_type(1, &[(ElType::Uint, 1, 1, 0)]),
            // Ends at the struct's end; a run of 12 bytes, then 2 before it.
            record_type(16, &[(ElType::Float, 4, 3, 4), (ElType::Uint, 2, 1, 0)]),
            // A long run (a fixed array of 100 doubles) between short ones, padding after.
            record_type(
                824,
                &[
                    (ElType::Uint, 1, 1, 0),
                    (ElType::Float, 8, 100, 8),
                    (ElType::Int, 4, 1, 808),
                ],
            ),
        ];
        for t in &types {
            let (c, size) = (t.c_size as usize, t.packed_size() as usize);
            for n in 0..10 {
                let structs: Vec<u8> = (0..n * c).map(|k| (k * 7 + 3) as u8).collect();
                let mut out = vec![0xEEu8; n * size + 16];
                t.pack(&structs, &mut out[..n * size]);
                assert_eq!(
                    out[..n * size],
                    pack_by_hand(t, &structs)[..],
                    "c_size {c}, {n} records"
                );
                assert!(out[n * size..].iter().all(|&b| b == 0xEE), "past the end");
            }
        }
    }

    #[test]
    fn structs_pack_by_runs_and_unpack_leaving_padding() {
        let t = sample();
        // step and pos are one run; tag then e come in the record's order.
        assert_eq!(t.runs(), [(0, 20), (32, 1), (24, 8)]);
        assert!(!t.is_packed());
        // Two structs whose every byte is its own index (padding included).
        let structs: Vec<u8> = (0..80u8).collect();
        let mut packed = vec![0xEE; 29 * 2 + 1]; // the last byte is beyond the records
        t.pack(&structs, &mut packed[..58]);
        let mut want = vec![];
        for base in [0u8, 40] {
            want.extend(base..base + 20); // step, pos
            want.push(base + 32); // tag
            want.extend(base + 24..base + 32); // e
        }
        want.push(0xEE);
        assert_eq!(packed, want);
        // Back into structs whose padding (bytes 20..24 and 33..40) is left as it was.
        let mut back = vec![0xAAu8; 80];
        t.unpack(&packed[..58], &mut back);
        for (k, (&b, &s)) in back.iter().zip(&structs).enumerate() {
            let padding = matches!(k % 40, 20..=23 | 33..=39);
            assert_eq!(b, if padding { 0xAA } else { s }, "byte {k}");
        }
    }
}
