//! Element bytes in bulk: packing and unpacking values in either byte order, fallible
//! allocation, and compressing a plain section as one LZ4 block (decoding it is
//! [`crate::section::lz4`]'s).
//!
//! Plain-old-data elements on a little-endian machine take the one-copy paths: a write is one
//! `write_all` of the values' memory, a read is one `read_exact` into the final `Vec`. Other
//! elements are packed or unpacked through a reused buffer of [`CHUNK`] bytes.

use std::io::{Read, Write};

use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::header::{read_full, Header, LZ4_MAX_INPUT};

/// Size of the reused buffer for element-by-element packing when writing.
pub(crate) const CHUNK: usize = 1 << 20;

/// Size of the reused buffer for element-by-element unpacking when reading, and of the first
/// allocation when reading a stream whose remaining length is unknown. Growth from there doubles
/// as bytes arrive, so a header that lies about its size costs at most this much, or twice what
/// the stream really held. A stream read of 256 MiB takes 13 doublings, each a `realloc` and a
/// memset of the new half (`cargo bench --bench core`: read, stream).
const FIRST_READ: usize = 32 << 10;

pub(crate) use crate::memory::{
    to_usize, too_large, try_reserve, try_zeroed_bytes, try_zeroed_vec,
};

/// `T::zeroed_pod_vec`, its allocation error returned, `None` for types without the hook.
pub(crate) fn zeroed_pod<T: Element>(n: usize) -> Result<Option<Vec<T>>> {
    T::zeroed_pod_vec(n).transpose()
}

/// Writes `values` packed, little- or big-endian, without a per-element `write` call.
pub(crate) fn write_values<T: Element, W: Write + ?Sized>(
    values: &[T],
    big_endian: bool,
    w: &mut W,
) -> Result<()> {
    if !big_endian {
        if let Some(bytes) = T::as_pod_bytes(values) {
            w.write_all(bytes)?;
            return Ok(());
        }
    }
    let per_chunk = (CHUNK / T::PACKED_SIZE.max(1)).max(1);
    let mut buf = vec![0u8; per_chunk.min(values.len()) * T::PACKED_SIZE];
    for chunk in values.chunks(per_chunk) {
        let out = &mut buf[..chunk.len() * T::PACKED_SIZE];
        pack_into(chunk, big_endian, out);
        w.write_all(out)?;
    }
    Ok(())
}

/// Packs `values` into `out` (exactly their packed length).
pub(crate) fn pack_into<T: Element>(values: &[T], big_endian: bool, out: &mut [u8]) {
    if T::PACKED_SIZE == 0 {
        return;
    }
    for (v, slot) in values.iter().zip(out.chunks_exact_mut(T::PACKED_SIZE)) {
        v.write_le(slot);
        if big_endian {
            T::swap_bytes(slot);
        }
    }
}

/// The packed bytes of `values`.
pub(crate) fn encode_values<T: Element>(values: &[T], big_endian: bool) -> Vec<u8> {
    if !big_endian {
        if let Some(bytes) = T::as_pod_bytes(values) {
            return bytes.to_vec();
        }
    }
    let mut out = vec![0u8; values.len() * T::PACKED_SIZE];
    pack_into(values, big_endian, &mut out);
    out
}

/// Decodes `n` values from their packed bytes (`bytes.len() == n * PACKED_SIZE`).
pub(crate) fn decode_values<T: Element>(bytes: &[u8], big_endian: bool) -> Result<Vec<T>> {
    let n = bytes.len().checked_div(T::PACKED_SIZE).unwrap_or(0);
    if let Some(mut v) = zeroed_pod::<T>(n)? {
        let dst = T::as_pod_bytes_mut(&mut v).expect("pod hooks agree");
        dst.copy_from_slice(bytes);
        if big_endian {
            swap_values::<T>(dst);
        }
        return Ok(v);
    }
    let mut out = Vec::new();
    decode_into(bytes, big_endian, &mut out)?;
    Ok(out)
}

/// Decodes values from their packed bytes onto the end of `out`; errors give the index in `out`.
pub(crate) fn decode_into<T: Element>(
    bytes: &[u8],
    big_endian: bool,
    out: &mut Vec<T>,
) -> Result<()> {
    let first = out.len();
    let chunks = bytes.chunks_exact(T::PACKED_SIZE.max(1));
    // Amortized (doubling) growth: a stream of unknown length appends chunk by chunk.
    out.try_reserve(chunks.len())
        .map_err(|_| too_large(first.saturating_add(chunks.len()), size_of::<T>()))?;
    if big_endian {
        let mut scratch = vec![0u8; T::PACKED_SIZE];
        for (i, chunk) in chunks.enumerate() {
            scratch.copy_from_slice(chunk);
            T::swap_bytes(&mut scratch);
            out.push(T::read_le(&scratch).map_err(|e| shift_index(e, (first + i) as u64))?);
        }
    } else {
        for (i, chunk) in chunks.enumerate() {
            out.push(T::read_le(chunk).map_err(|e| shift_index(e, (first + i) as u64))?);
        }
    }
    Ok(())
}

/// Swaps the byte order of every value in `bytes`, in place.
pub(crate) fn swap_values<T: Element>(bytes: &mut [u8]) {
    if T::PACKED_SIZE > 0 {
        bytes
            .chunks_exact_mut(T::PACKED_SIZE)
            .for_each(T::swap_bytes);
    }
}

/// Swaps the byte order of a primitive data section by its eltype (complex halves separately).
/// Returns `false`, leaving the bytes alone, for user-defined elements, whose scalars the header
/// does not describe.
pub(crate) fn swap_by_eltype(bytes: &mut [u8], eltype: ElType, elbyte: u64) -> bool {
    match eltype.swap_width(elbyte) {
        Some(w) if w > 1 => {
            bytes.chunks_exact_mut(w as usize).for_each(<[u8]>::reverse);
            true
        }
        Some(_) => true,
        None => false,
    }
}

/// Reads a plain data section of `header.size` bytes from `r` (the caller has checked that it
/// is plain: [`crate::section::stream`] dispatches by storage kind) and decodes `n` values of
/// `T`.
///
/// `available` is the number of bytes known to follow in `r`, if known: then the allocation is
/// made once, at its final size. Otherwise the buffer grows as bytes arrive, so a header that
/// lies about its size never costs more than [`FIRST_READ`] or twice the bytes really present.
pub(crate) fn read_plain_values<T: Element, R: Read + ?Sized>(
    r: &mut R,
    header: &Header,
    n: usize,
    available: Option<u64>,
) -> Result<Vec<T>> {
    let big_endian = header.is_big_endian();
    if let Some(mut v) = read_pod(r, header.size, n, available)? {
        if big_endian {
            swap_values::<T>(T::as_pod_bytes_mut(&mut v).expect("pod hooks agree"));
        }
        return Ok(v);
    }
    // Non-POD elements: unpack chunk by chunk from a reused buffer straight into the result,
    // allocated once when the input is known to hold all of it, else growing as it arrives.
    let known = available.is_some_and(|a| a >= header.size);
    let per_chunk = (FIRST_READ / T::PACKED_SIZE.max(1)).max(1);
    let mut out = Vec::new();
    try_reserve(&mut out, if known { n } else { 0 })?;
    let mut buf = vec![0u8; per_chunk.min(n) * T::PACKED_SIZE];
    while out.len() < n {
        let take = (n - out.len()).min(per_chunk);
        let bytes = &mut buf[..take * T::PACKED_SIZE];
        let got = read_full(r, bytes)?;
        if got < bytes.len() {
            return Err(truncated(
                header.size,
                (out.len() * T::PACKED_SIZE + got) as u64,
            ));
        }
        decode_into(bytes, big_endian, &mut out)?;
    }
    Ok(out)
}

/// `n` values of `T` (little-endian in memory) filled by `fill` with the bytes of their data
/// section in the file's byte order: straight into the values' memory for POD types (one
/// copy), through a byte buffer for others.
pub(crate) fn values_filled<T: Element>(
    n: usize,
    big_endian: bool,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<Vec<T>> {
    if let Some(mut v) = zeroed_pod::<T>(n)? {
        let dst = T::as_pod_bytes_mut(&mut v).expect("pod hooks agree");
        fill(dst)?;
        if big_endian {
            swap_values::<T>(dst);
        }
        return Ok(v);
    }
    let mut bytes = try_zeroed_bytes((n as u64).saturating_mul(T::PACKED_SIZE as u64))?;
    fill(&mut bytes)?;
    decode_values(&bytes, big_endian)
}

/// Adds `by` to the element index of an invalid-value error (`Element::read_le` says 0).
pub(crate) fn shift_index(e: Error, by: u64) -> Error {
    match e.into_kind() {
        ErrorKind::InvalidValue { what, value, index } => ErrorKind::InvalidValue {
            what,
            index: index + by,
            value,
        }
        .into(),
        kind => kind.into(),
    }
}

fn truncated(expected: u64, found: u64) -> Error {
    ErrorKind::Truncated { expected, found }.into()
}

/// One `read_exact` into the final vector for POD elements; when the stream's length is unknown,
/// one read per doubling of the vector, so that a stream that ends early has cost at most twice
/// what it held. `None` for other elements.
fn read_pod<T: Element, R: Read + ?Sized>(
    r: &mut R,
    size: u64,
    n: usize,
    available: Option<u64>,
) -> Result<Option<Vec<T>>> {
    if T::PACKED_SIZE == 0 {
        return Ok(None);
    }
    let known = available.is_some_and(|a| a >= size);
    let first = if known {
        n
    } else {
        n.min((FIRST_READ / T::PACKED_SIZE).max(1))
    };
    let Some(mut v) = zeroed_pod::<T>(first)? else {
        return Ok(None);
    };
    let mut filled = 0;
    loop {
        read_pod_into(r, &mut v[filled..], size, filled)?;
        filled = v.len();
        if filled == n {
            return Ok(Some(v));
        }
        let grow = (n - filled).min(filled);
        try_reserve(&mut v, grow)?;
        // Zeros in place (a memset), not a zeroed vector appended: no second buffer, no copy.
        // Every bit pattern of a type with the POD hooks is a value, zeros included.
        let zero = vec![0u8; T::PACKED_SIZE];
        v.resize_with(filled + grow, || {
            T::read_le(&zero).expect("zero bytes are a POD value")
        });
    }
}

/// Fills `values` from the stream, `before` values into the data section of `size` bytes.
fn read_pod_into<T: Element, R: Read + ?Sized>(
    r: &mut R,
    values: &mut [T],
    size: u64,
    before: usize,
) -> Result<()> {
    let dst = T::as_pod_bytes_mut(values).expect("pod hooks agree");
    let got = read_full(r, dst)?;
    if got < dst.len() {
        return Err(truncated(size, (before * T::PACKED_SIZE + got) as u64));
    }
    Ok(())
}

/// Reads exactly `size` bytes. When `available` does not confirm them, the buffer grows as
/// bytes arrive: from [`FIRST_READ`], doubling, never past `size`.
pub(crate) fn read_bytes<R: Read + ?Sized>(
    r: &mut R,
    size: u64,
    available: Option<u64>,
) -> Result<Vec<u8>> {
    let size_us = to_usize(size)?;
    if available.is_some_and(|a| a >= size) {
        let mut buf = try_zeroed_bytes(size)?;
        let got = read_full(r, &mut buf)?;
        if got < size_us {
            return Err(truncated(size, got as u64));
        }
        return Ok(buf);
    }
    let mut buf = Vec::new();
    let mut want = size_us.min(FIRST_READ);
    loop {
        try_reserve(&mut buf, want)?;
        let got = Read::take(&mut *r, want as u64).read_to_end(&mut buf)?;
        if got < want {
            return Err(truncated(size, buf.len() as u64));
        }
        if buf.len() == size_us {
            return Ok(buf);
        }
        want = (size_us - buf.len()).min(buf.len());
    }
}

/// Compresses a plain data section into one raw LZ4 block, as the C reference does.
pub(crate) fn compress(plain: &[u8]) -> Result<Vec<u8>> {
    if plain.len() as u64 > LZ4_MAX_INPUT {
        return Err(Error::unsupported(format!(
            "LZ4 compression of {} bytes: one LZ4 block holds at most {LZ4_MAX_INPUT} bytes",
            plain.len()
        )));
    }
    Ok(lz4_flex::block::compress(plain))
}
