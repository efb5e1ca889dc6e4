//! The inputs a [`Deserializer`](crate::Deserializer) reads the data section through: the
//! caller's bytes ([`SliceInput`], which lends `&str` and `&[u8]` out of them), or a stream
//! ([`StreamInput`], read through a reused window of 64 KiB, and straight into the value's
//! memory for a `Vec` of plain scalars).
//!
//! Both hand out the data section as plain little-endian bytes, addressed by their offset in
//! it. The deserializer reads forward only, so a stream keeps only the bytes from the current
//! position on. Big-endian, LZ4-compressed and chunked data are decoded whole, once, before
//! the first read (bounded as before: what the header claims is only allocated as the bytes arrive, or
//! once a file's length confirms them).

use std::borrow::Cow;
use std::io::Read;

use crate::error::{Error, ErrorKind, Result};
use crate::header::{read_full, Header};
use crate::section::{Section, Storage};
use crate::trailer::{Trailer, TRAILER_FRAME, TRAILER_TAG};

/// The window a stream is read through, and the first allocation a stream's claims justify
/// before any of its bytes have arrived.
#[cfg(not(fuzzing))]
pub(crate) const WINDOW: usize = 64 << 10;
/// Under `cargo fuzz`, a window of 64 bytes: the fuzzer's inputs are small, and they must
/// cross the window's end as large files do.
#[cfg(fuzzing)]
pub(crate) const WINDOW: usize = 64;

mod private {
    pub trait Sealed {}
}

/// Where a [`Deserializer`](crate::Deserializer) reads the data section from: implemented by
/// [`SliceInput`] and [`StreamInput`] only (the trait is sealed; its methods are internal).
///
/// ```
/// use rawarray_serde::read::{SliceInput, StreamInput};
/// let bytes = rawarray_serde::to_vec(&[1u8, 2, 3]).unwrap();
/// let _: rawarray_serde::Deserializer<'_, SliceInput<'_>> =
///     rawarray_serde::Deserializer::from_slice(&bytes).unwrap();
/// let _: rawarray_serde::Deserializer<'static, StreamInput<&[u8]>> =
///     rawarray_serde::Deserializer::from_reader(&bytes[..]).unwrap();
/// ```
pub trait Input<'de>: private::Sealed {
    /// The length of the data section, plain (decompressed).
    #[doc(hidden)]
    fn data_len(&self) -> usize;

    /// Bytes `pos..pos + n` of the data section when they are at hand (the hot path).
    #[doc(hidden)]
    fn get(&self, pos: usize, n: usize) -> Option<&[u8]>;

    /// Bytes `pos..pos + n`, which are at hand, without checking it: the fields of a record
    /// that [`Input::get`] found at hand whole, read with one check each (the record's end)
    /// instead of three.
    ///
    /// # Safety
    ///
    /// `pos..pos + n` lies inside a range for which [`Input::get`] returned `Some`, and since
    /// then no bytes outside that range were asked for (by `get`, `fetch`, `read_into` or
    /// `borrow`): only such a request can move a stream's window.
    #[doc(hidden)]
    unsafe fn get_unchecked(&self, pos: usize, n: usize) -> &[u8];

    /// Bytes `pos..pos + n` (`pos + n` at most [`Input::data_len`], `pos` at least the last position
    /// asked for), reading them from the stream when needed.
    #[doc(hidden)]
    fn fetch(&mut self, pos: usize, n: usize) -> Result<&[u8]>;

    /// Bytes `pos..pos + n` for the input's lifetime, when the input is the caller's plain bytes.
    #[doc(hidden)]
    fn borrow(&self, pos: usize, n: usize) -> Option<&'de [u8]>;

    /// The whole input (header included) for the input's lifetime, when it is the caller's.
    #[doc(hidden)]
    fn whole_file(&self) -> Option<&'de [u8]>;

    /// Fills `dst` with bytes `pos..pos + dst.len()` (as [`Input::fetch`]), straight from the
    /// stream where it can.
    #[doc(hidden)]
    fn read_into(&mut self, pos: usize, dst: &mut [u8]) -> Result<()>;

    /// How many of the `n` bytes from `pos` may be allocated for before they have arrived: all
    /// of them where the input is known to hold them, else what is at hand or [`WINDOW`].
    #[doc(hidden)]
    fn justified(&self, pos: usize, n: usize) -> usize;

    /// How many bytes from `pos` on are known to exist: delivered by the stream, or confirmed
    /// by the input's length.
    #[doc(hidden)]
    fn at_hand(&self, pos: usize) -> usize;
}

/// The caller's bytes: the data section borrowed where it is stored plain, else decoded once.
pub struct SliceInput<'de> {
    file: &'de [u8],
    data: Cow<'de, [u8]>,
}

impl private::Sealed for SliceInput<'_> {}

impl<'de> SliceInput<'de> {
    /// `file`, whose `header` is decoded and checked against its length.
    pub(crate) fn new(file: &'de [u8], header: &Header) -> Result<SliceInput<'de>> {
        let start = header.encoded_len();
        // A chunked or compressed section is decoded whole, once, by `plain`: the deserializer
        // reads the plain bytes as for any file.
        let end = start + crate::data::to_usize(header.size)?;
        let section = &file[start..end];
        let trailer = if needs_schema(header) {
            Trailer::from_trailing_bytes(&file[end..])?
        } else {
            None
        };
        let data = plain(Cow::Borrowed(section), header, trailer.as_ref())?;
        Ok(SliceInput { file, data })
    }
}

impl<'de> Input<'de> for SliceInput<'de> {
    #[inline(always)]
    fn data_len(&self) -> usize {
        self.data.len()
    }

    #[inline(always)]
    fn get(&self, pos: usize, n: usize) -> Option<&[u8]> {
        self.data.get(pos..pos.checked_add(n)?)
    }

    #[inline(always)]
    unsafe fn get_unchecked(&self, pos: usize, n: usize) -> &[u8] {
        // SAFETY: the caller found `pos..pos + n` inside a range `get` returned, so inside
        // `data`, which a slice input never changes.
        unsafe { self.data.get_unchecked(pos..pos + n) }
    }

    fn fetch(&mut self, pos: usize, n: usize) -> Result<&[u8]> {
        let len = self.data.len();
        // The deserializer takes only ranges inside the data: this is a check, not a path.
        self.data.get(pos..pos + n).ok_or_else(|| {
            ErrorKind::Truncated {
                expected: (pos + n) as u64,
                found: len as u64,
            }
            .into()
        })
    }

    fn borrow(&self, pos: usize, n: usize) -> Option<&'de [u8]> {
        match self.data {
            Cow::Borrowed(b) => b.get(pos..pos + n),
            Cow::Owned(_) => None,
        }
    }

    fn whole_file(&self) -> Option<&'de [u8]> {
        Some(self.file)
    }

    fn read_into(&mut self, pos: usize, dst: &mut [u8]) -> Result<()> {
        let n = dst.len();
        dst.copy_from_slice(self.fetch(pos, n)?);
        Ok(())
    }

    fn justified(&self, _: usize, n: usize) -> usize {
        n
    }

    fn at_hand(&self, pos: usize) -> usize {
        self.data.len().saturating_sub(pos)
    }
}

/// A stream: the data section read through a window of 64 KiB that is reused as the
/// deserializer moves forward, and straight into a `Vec` of plain scalars.
pub struct StreamInput<R> {
    reader: R,
    /// The window: bytes `start..start + held` of the data section are `buf[..held]`. The rest
    /// of `buf` is initialised memory the window reuses (it is as long as the window has
    /// been), so a refill reads the stream straight into it, a `read` call per piece:
    /// `read_to_end` into spare capacity would start at 8 KiB a call and double, four calls
    /// where one does.
    buf: Vec<u8>,
    held: usize,
    start: usize,
    /// Bytes of the data section still in the stream (the window ends where they begin).
    unread: usize,
    len: usize,
    /// The size field, for the errors of a stream that ends early.
    size: u64,
    /// Whether the stream is known to hold the whole data section (a file's length confirmed
    /// it), so that allocating for it up front is justified.
    known: bool,
}

impl<R> private::Sealed for StreamInput<R> {}

impl<R: Read> StreamInput<R> {
    /// The data section of `header` from `reader`, which is just past the header. `available`
    /// is how many bytes the stream is known to hold from here (a file's length), if known.
    pub(crate) fn new(
        mut reader: R,
        header: &Header,
        available: Option<u64>,
    ) -> Result<StreamInput<R>> {
        let size_us = crate::data::to_usize(header.size)?;
        let known = available.is_some_and(|a| a >= header.size);
        if Storage::of(header).is_coded() || header.is_big_endian() {
            // Decoded whole, as from a slice: these are not the one-copy formats (the section
            // layer decodes as it reads, within what the stream holds).
            let mut data = crate::section::stream::read_bytes(header, &mut reader, available)?;
            // Big-endian records are swapped by the schema in the trailer that follows the
            // section: the stream is then left after that block, not after the section.
            let trailer = if needs_schema(header) {
                trailer_block(&mut reader)?
            } else {
                None
            };
            to_little_endian(&mut data, header, trailer.as_ref())?;
            return Ok(StreamInput {
                reader,
                len: data.len(),
                held: data.len(),
                buf: data,
                start: 0,
                unread: 0,
                size: header.size,
                known: true,
            });
        }
        Ok(StreamInput {
            reader,
            buf: Vec::new(),
            held: 0,
            start: 0,
            unread: size_us,
            len: size_us,
            size: header.size,
            known,
        })
    }

    /// Moves the window to start at `pos` (discarding what is before, skipping stream bytes
    /// if `pos` is past the window) and reads until it holds `n` bytes, or [`WINDOW`] if more
    /// are left. The window grows past [`WINDOW`] only for a longer run (a string, a record),
    /// and then only as the bytes arrive, doubling.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, pos: usize, n: usize) -> Result<()> {
        let held_end = self.start + self.held;
        if pos >= held_end {
            self.held = 0;
            let mut skip = pos - held_end;
            while skip > 0 {
                let k = skip.min(WINDOW);
                self.pull(k)?;
                self.held = 0;
                skip -= k;
            }
        } else {
            let from = pos - self.start;
            self.buf.copy_within(from..self.held, 0);
            self.held -= from;
        }
        self.start = pos;
        let target = n.max(WINDOW).min(self.held + self.unread);
        while self.held < target {
            let step = (target - self.held).min(self.held.max(WINDOW));
            self.pull(step)?;
        }
        Ok(())
    }

    /// Appends the next `k` bytes of the data section (at most `unread`) to the window.
    fn pull(&mut self, k: usize) -> Result<()> {
        let end = self.held + k;
        if self.buf.len() < end {
            // Exactly what the window needs (a doubling `resize` could take twice the bytes
            // that justify it), zeroed once: later refills reuse it.
            self.buf.reserve_exact(end - self.buf.len());
            self.buf.resize(end, 0);
        }
        let got = read_full(&mut self.reader, &mut self.buf[self.held..end])?;
        self.held += got;
        self.unread -= got;
        if got < k {
            return Err(self.truncated());
        }
        Ok(())
    }

    fn truncated(&self) -> Error {
        ErrorKind::Truncated {
            expected: self.size,
            found: (self.len - self.unread) as u64,
        }
        .into()
    }
}

impl<'de, R: Read> Input<'de> for StreamInput<R> {
    #[inline(always)]
    fn data_len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn get(&self, pos: usize, n: usize) -> Option<&[u8]> {
        // `pos >= start`: the deserializer reads forward.
        let at = pos.wrapping_sub(self.start);
        let end = at.checked_add(n)?;
        if end > self.held {
            return None;
        }
        // SAFETY: `at <= end` (the sum did not overflow) and `end <= held <= buf.len()`.
        Some(unsafe { self.buf.get_unchecked(at..end) })
    }

    #[inline(always)]
    unsafe fn get_unchecked(&self, pos: usize, n: usize) -> &[u8] {
        let at = pos - self.start;
        // SAFETY: the caller found `pos..pos + n` inside a range `get` returned, so inside
        // the window, and asked for nothing outside it since: the window has not moved.
        unsafe { self.buf.get_unchecked(at..at + n) }
    }

    fn fetch(&mut self, pos: usize, n: usize) -> Result<&[u8]> {
        if <Self as Input<'de>>::get(self, pos, n).is_none() {
            self.refill(pos, n)?;
        }
        let at = pos - self.start;
        Ok(&self.buf[..self.held][at..at + n])
    }

    fn borrow(&self, _: usize, _: usize) -> Option<&'de [u8]> {
        None
    }

    fn whole_file(&self) -> Option<&'de [u8]> {
        None
    }

    fn read_into(&mut self, pos: usize, dst: &mut [u8]) -> Result<()> {
        let held_end = self.start + self.held;
        if pos < self.start || pos > held_end {
            // Not contiguous with the window (a skip forward): through the window.
            let n = dst.len();
            dst.copy_from_slice(<Self as Input<'de>>::fetch(self, pos, n)?);
            return Ok(());
        }
        let from_window = (held_end - pos).min(dst.len());
        let at = pos - self.start;
        dst[..from_window].copy_from_slice(&self.buf[at..at + from_window]);
        let rest = &mut dst[from_window..];
        if rest.is_empty() {
            return Ok(());
        }
        // The window is used up: the rest comes straight from the stream into `dst`.
        self.held = 0;
        self.start = pos + from_window;
        let want = rest.len().min(self.unread);
        let got = read_full(&mut self.reader, &mut rest[..want])?;
        self.unread -= got;
        self.start += got;
        if got < rest.len() {
            return Err(self.truncated());
        }
        Ok(())
    }

    fn justified(&self, pos: usize, n: usize) -> usize {
        if self.known {
            return n;
        }
        n.min(<Self as Input<'de>>::at_hand(self, pos).max(WINDOW))
    }

    fn at_hand(&self, pos: usize) -> usize {
        if self.known {
            return self.len.saturating_sub(pos);
        }
        (self.start + self.held).saturating_sub(pos)
    }
}

/// The data section as plain little-endian bytes: decompressed, and swapped once up front if
/// big-endian (in a copy of borrowed bytes, in place in owned ones): swapping scalar by
/// scalar instead costs every little-endian read about a tenth of its speed.
fn plain<'a>(
    section: Cow<'a, [u8]>,
    header: &Header,
    trailer: Option<&Trailer>,
) -> Result<Cow<'a, [u8]>> {
    let mut data = if Storage::of(header).is_coded() {
        Cow::Owned(Section::open_at(header, &section[..], 0)?.read_all()?)
    } else {
        section
    };
    if header.is_big_endian() {
        to_little_endian(data.to_mut(), header, trailer)?;
    }
    Ok(data)
}

/// Whether a section's scalars are swapped by a schema, not by the header: big-endian
/// user-defined elements.
fn needs_schema(header: &Header) -> bool {
    header.is_big_endian() && header.eltype.swap_width(header.elbyte).is_none()
}

/// The trailer block at the start of `reader` (just after a data section), if one is there;
/// its JSON is read as it arrives, so a length field that lies costs only what the stream holds.
fn trailer_block(reader: &mut impl Read) -> Result<Option<Trailer>> {
    let mut block = vec![0u8; TRAILER_FRAME];
    if read_full(&mut *reader, &mut block)? < TRAILER_FRAME || block[..8] != TRAILER_TAG {
        return Ok(None);
    }
    let json_len = u64::from_le_bytes(block[8..16].try_into().expect("8 bytes"));
    let rest = json_len.saturating_add(TRAILER_FRAME as u64);
    reader.take(rest).read_to_end(&mut block)?;
    Trailer::from_trailing_bytes(&block)
}

/// Swaps a big-endian section's scalars to little-endian, in place: by the element type, or
/// for user-defined elements by the record schema of the file's trailer, checked against the
/// header first.
fn to_little_endian(data: &mut [u8], header: &Header, trailer: Option<&Trailer>) -> Result<()> {
    if header.is_big_endian() {
        match header.eltype.swap_width(header.elbyte) {
            None => {
                let Some(schema) = trailer.and_then(|t| t.schema.as_ref()) else {
                    return Err(Error::unsupported(
                        "big-endian user-defined elements: their scalars are not described by \
                         the header, and the file has no trailer with a record schema; read it \
                         as RawArray<T> of its record type, which swaps by the type's layout",
                    ));
                };
                let base = schema.check_header(header)?;
                let eb = crate::data::to_usize(header.elbyte)?;
                if eb > 0 {
                    data.chunks_exact_mut(eb)
                        .for_each(|e| base.swap_byte_order(e));
                }
            }
            Some(w) if w > 1 => {
                crate::data::swap_by_eltype(data, header.eltype, header.elbyte);
            }
            Some(_) => {}
        }
    }
    Ok(())
}
