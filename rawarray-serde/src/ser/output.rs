//! The output: the header written late (once the first element or the whole value is known),
//! the buffer flushed in pieces, and files built in place inside the caller's `Vec`.

use std::io::Write;

use serde::ser::Serialize;

use super::check::{check_described, header_for};
use super::plan::classify;
use super::Serializer;
use crate::error::{Error, Result};
use crate::header::Header;

/// Appends `value` as a `.ra` file to `vec`, built in place: no staging buffer copied into it,
/// and one allocation once the sequence's length and its first element are known. However
/// serializing ends (an error, or a panic in a `Serialize` impl), `vec` keeps the bytes it
/// had: with the whole file after them, or alone.
pub(crate) fn append_in_place<T: ?Sized + Serialize>(vec: &mut Vec<u8>, value: &T) -> Result<()> {
    /// Puts the buffer back into the caller's `Vec` when dropped: cut back to the caller's
    /// bytes unless the file is complete.
    struct Guard<'a> {
        ser: Serializer<std::io::Sink>,
        home: &'a mut Vec<u8>,
        capacity: usize,
        complete: bool,
    }
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            let mut buf = std::mem::take(&mut self.ser.out.buf);
            if !self.complete {
                buf.truncate(self.ser.out.base);
                buf.shrink_to(self.capacity);
            }
            *self.home = buf;
        }
    }
    let mut guard = Guard {
        capacity: vec.capacity(),
        ser: Serializer::with_buffer(std::io::sink(), std::mem::take(vec), true),
        home: vec,
        complete: false,
    };
    let result = value
        .serialize(&mut guard.ser)
        .and_then(|()| guard.ser.write_late_header())
        .map(|()| {
            if let Some(block) = guard.ser.bool_trailer() {
                guard.ser.out.buf.extend_from_slice(&block);
            }
        });
    guard.complete = result.is_ok();
    result
}

/// Appends `bytes` to `buf`, whose capacity already holds them, a 64 KiB piece at a time, each
/// piece's pages written once just before the piece is copied. Into a new allocation (pages
/// not yet touched), one large `memcpy` takes every page fault inside its copy loop, which
/// measured slower than taking them here first (`cargo bench --bench serde`, the one-value
/// rows; figures in the README). Into pages already there, one `memcpy` is faster (glibc's
/// non-temporal stores for large copies), so this is for new allocations only (a caller's
/// `Vec::with_capacity` whose pages were never touched takes the plain copy). Pages are taken
/// as 4 KiB; larger pages get a few more stores.
pub(super) fn extend_faulting_ahead(buf: &mut Vec<u8>, bytes: &[u8]) {
    const PIECE: usize = 64 << 10;
    const PAGE: usize = 4096;
    if bytes.len() < 4 * PIECE {
        buf.extend_from_slice(bytes);
        return;
    }
    buf.reserve(bytes.len());
    for piece in bytes.chunks(PIECE) {
        let spare = &mut buf.spare_capacity_mut()[..piece.len()];
        let first = (PAGE - spare.as_ptr() as usize % PAGE) % PAGE;
        for byte in spare.iter_mut().skip(first).step_by(PAGE) {
            byte.write(0);
        }
        // The stores are the point: kept although the copy overwrites them.
        std::hint::black_box(&*spare);
        buf.extend_from_slice(piece);
    }
}

/// The output: the writer, the bytes not yet written to it, and when to write them.
pub(super) struct Output<W> {
    pub(super) writer: W,
    pub(super) buf: Vec<u8>,
    /// The header is in `buf` (or already written): bytes may go to the writer.
    pub(super) header_written: bool,
    /// The file is built in `buf` itself, after its first `base` bytes, and never flushed
    /// ([`to_vec`](crate::to_vec), [`to_writer`](crate::to_writer) into a `Vec`): the header
    /// goes in front of what is buffered, and `writer` is not used.
    pub(super) in_place: bool,
    pub(super) base: usize,
    /// Flush `buf` to `writer` once it holds this many bytes (after the header is out).
    pub(super) flush_at: usize,
    /// `bool`s serialized: when they are every byte of the data, the file is an array of bool.
    pub(super) bools: u64,
    /// The header, once written.
    pub(super) header: Option<Header>,
}

impl<W: Write> Serializer<W> {
    /// Writes the header now if it could not be written when the first element was complete
    /// (the value was not a sequence, or the sequence did not tell its length).
    pub(super) fn write_late_header(&mut self) -> Result<()> {
        if !self.out.header_written {
            let header = match self.top.take() {
                Some(top) => {
                    let mut dims = top.dims;
                    dims.push(self.items);
                    header_for(top.eltype, top.elbyte, dims)?
                }
                None => {
                    if self.plan.events.is_empty() {
                        return Err(Error::unrepresentable("a value that serializes nothing"));
                    }
                    let shape = classify(&self.plan.events)?;
                    let (eltype, elbyte) = shape.leaf.eltype_elbyte()?;
                    header_for(eltype, elbyte, shape.dims)?
                }
            };
            // Nothing was flushed: the header was not out.
            check_described(Some(header.size), self.out.buf.len() - self.out.base)?;
            self.put_header(&header)?;
        }
        Ok(())
    }

    /// The trailer block that marks the file an array of `bool` (as `RawArray<bool>` writes
    /// it), when every byte of its data came from a `bool` (a struct of bools too; none from
    /// a `u8`), placed at the data end.
    pub(super) fn bool_trailer(&self) -> Option<Vec<u8>> {
        let header = self.out.header.as_ref()?;
        let bytes = (header.eltype, header.elbyte, header.size);
        if self.out.bools == 0 || bytes != (crate::ElType::Uint, 1, self.out.bools) {
            return None;
        }
        let trailer = crate::array::plain_trailer::<bool>()?;
        Some(trailer.encode_block(crate::trailer::data_end(header)))
    }

    /// Writes the header: before everything buffered (in place, in front of it).
    pub(super) fn put_header(&mut self, header: &Header) -> Result<()> {
        self.out.header = Some(header.clone());
        let bytes = header.encode();
        if self.out.in_place {
            self.out.buf.splice(self.out.base..self.out.base, bytes);
        } else {
            self.out.writer.write_all(&bytes)?;
        }
        self.out.header_written = true;
        Ok(())
    }

    #[inline(always)]
    pub(super) fn flush_if_full(&mut self) -> Result<()> {
        if self.out.header_written && self.out.buf.len() >= self.out.flush_at {
            return self.flush();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    pub(super) fn flush(&mut self) -> Result<()> {
        self.out.writer.write_all(&self.out.buf)?;
        self.out.buf.clear();
        Ok(())
    }
}
