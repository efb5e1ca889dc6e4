//! The one decoder of flag bit 1's raw LZ4 block (the whole data section as one block, as the
//! C reference writes it), decoded as it is read.
//!
//! A whole read needs the decoded array, not the compressed block at the same time: the block
//! is read through a window of [`WINDOW`] bytes and each sequence written straight into the
//! output, whose size the header gives ([`decode_into`]). A reader that hands the data on in
//! order (`ra cat`, a conversion) keeps only the last 64 KiB of output, the most a match can
//! reach back, and one piece ([`decode_pieces`]), and stops once it has the prefix it wants:
//! memory independent of the array's size.
//!
//! The block format is LZ4's (`lz4.block`, the C reference's `LZ4_compress_default`): a run of
//! sequences, each a token (literal count in the high four bits, match length minus 4 in the
//! low four), more literal-count bytes while they are 255, the literals, a two-byte
//! little-endian match offset and more match-length bytes while they are 255; the last sequence
//! is literals only. Every length and offset is checked against the output before it is used,
//! so a hostile block is an error naming what is wrong, never a write out of bounds.
//!
//! ```
//! use rawarray_serde::section::lz4;
//! let plain: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
//! let block = lz4_flex::block::compress(&plain);
//! let mut out = vec![0u8; plain.len()];
//! lz4::decode_into(&mut &block[..], block.len() as u64, &mut out).unwrap();
//! assert_eq!(out, plain);
//! // The first 1000 bytes, in pieces of whole 4-byte elements.
//! let mut head = Vec::new();
//! lz4::decode_pieces(&mut &block[..], block.len() as u64, plain.len() as u64, 1000, 4, 256, |p| {
//!     head.extend_from_slice(p);
//!     std::ops::ControlFlow::Continue(())
//! })
//! .unwrap();
//! assert_eq!(head, &plain[..1000]);
//! ```

use std::io::Read;
use std::ops::ControlFlow;

use crate::error::{ErrorKind, Result};

/// The bytes of the compressed block held at once.
pub const WINDOW: usize = 64 << 10;

/// Where decoded bytes go: a whole output buffer, or a sliding window handed out in pieces.
trait Output {
    /// Bytes produced so far.
    fn produced(&self) -> u64;
    /// The most bytes the block may produce.
    fn plain(&self) -> u64;
    /// Appends `n` literal bytes from the input.
    fn literals<R: Read + ?Sized>(&mut self, input: &mut Input<'_, R>, n: usize) -> Result<()>;
    /// Appends `n` bytes copied from `offset` bytes back.
    fn matched(&mut self, offset: usize, n: usize) -> Result<()>;
    /// Whether decoding may stop early (a prefix was asked for and is there).
    fn enough(&self) -> bool;
}

/// The sequence loop, shared by every output.
fn run<R: Read + ?Sized>(input: &mut Input<'_, R>, out: &mut impl Output) -> Result<()> {
    while !out.enough() {
        let Some(token) = input.next_byte()? else {
            break;
        };
        let literals = input.length(usize::from(token >> 4))?;
        room(out, literals, "literals")?;
        out.literals(input, literals)?;
        if input.is_done() || out.enough() {
            break;
        }
        let offset = usize::from(u16::from_le_bytes([input.byte()?, input.byte()?]));
        if offset == 0 || offset as u64 > out.produced() {
            return Err(ErrorKind::Lz4(format!(
                "a match {offset} bytes back at output byte {} (0 or before the start)",
                out.produced()
            ))
            .into());
        }
        let len = input.length(usize::from(token & 15))? + 4;
        room(out, len, "a match")?;
        out.matched(offset, len)?;
    }
    Ok(())
}

fn room(out: &impl Output, n: usize, what: &str) -> Result<()> {
    if n as u64 > out.plain() - out.produced() {
        return Err(ErrorKind::Lz4(format!(
            "{what} run past the {} plain bytes the header gives (dims x elbyte)",
            out.plain()
        ))
        .into());
    }
    Ok(())
}

/// Decodes the raw LZ4 block of `packed_len` bytes that `r` yields into `dst`, which the block
/// must fill exactly. Reads exactly `packed_len` bytes from `r`.
pub fn decode_into<R: Read + ?Sized>(r: &mut R, packed_len: u64, dst: &mut [u8]) -> Result<()> {
    let mut input = Input::new(r, packed_len);
    let mut out = Whole { dst, at: 0 };
    run(&mut input, &mut out)?;
    if out.at != out.dst.len() {
        return Err(ErrorKind::Lz4(format!(
            "block decompresses to {} bytes; dims x elbyte is {}",
            out.at,
            out.dst.len()
        ))
        .into());
    }
    Ok(())
}

/// Decodes the raw LZ4 block of `packed_len` bytes that `r` yields, which holds `plain` bytes,
/// calling `f` with them in order, in pieces of a multiple of `unit` bytes (about `piece` at a
/// time), until `limit` bytes have been handed out, the block ends, or `f` breaks. Holds the
/// last 64 KiB of output and one piece, whatever the block's size.
pub fn decode_pieces<R: Read + ?Sized>(
    r: &mut R,
    packed_len: u64,
    plain: u64,
    limit: u64,
    unit: usize,
    piece: usize,
    f: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> Result<()> {
    let mut input = Input::new(r, packed_len);
    let mut out = Pieces {
        buf: Vec::new(),
        dropped: 0,
        emitted: 0,
        plain,
        limit: limit.min(plain),
        unit: unit.max(1) as u64,
        piece: piece.max(1) as u64,
        step: piece.max(WINDOW),
        stopped: false,
        f,
    };
    run(&mut input, &mut out)?;
    if out.stopped {
        return Ok(());
    }
    let produced = out.produced();
    if out.limit == plain && produced != plain {
        return Err(ErrorKind::Lz4(format!(
            "block decompresses to {produced} bytes; dims x elbyte is {plain}"
        ))
        .into());
    }
    out.emit(true);
    Ok(())
}

/// The whole output in one buffer: matches copy within it.
struct Whole<'a> {
    dst: &'a mut [u8],
    at: usize,
}

impl Output for Whole<'_> {
    fn produced(&self) -> u64 {
        self.at as u64
    }
    fn plain(&self) -> u64 {
        self.dst.len() as u64
    }
    fn literals<R: Read + ?Sized>(&mut self, input: &mut Input<'_, R>, n: usize) -> Result<()> {
        input.copy_to(&mut self.dst[self.at..self.at + n])?;
        self.at += n;
        Ok(())
    }
    fn matched(&mut self, offset: usize, len: usize) -> Result<()> {
        copy_match(self.dst, self.at, offset, len);
        self.at += len;
        Ok(())
    }
    fn enough(&self) -> bool {
        false
    }
}

/// Copies the `len` bytes `offset` back from `at` to `at`: an overlapping match repeats the
/// last `offset` bytes, so it is copied in steps no longer than the distance.
fn copy_match(dst: &mut [u8], at: usize, offset: usize, len: usize) {
    let mut done = 0;
    while done < len {
        let step = (len - done).min(offset + done);
        let from = at - offset;
        dst.copy_within(from..from + step, at + done);
        done += step;
    }
}

/// The output as a window handed out in pieces.
struct Pieces<F> {
    buf: Vec<u8>,
    /// Bytes produced before `buf[0]`.
    dropped: u64,
    /// Bytes handed out (all of `dropped`, and maybe some of `buf`).
    emitted: u64,
    plain: u64,
    limit: u64,
    unit: u64,
    piece: u64,
    /// Literals and matches are added in steps of this many bytes, each followed by a chance
    /// to hand out a piece: one long run is never held whole.
    step: usize,
    stopped: bool,
    f: F,
}

impl<F: FnMut(&[u8]) -> ControlFlow<()>> Pieces<F> {
    /// Hands out what is ready, in whole units, once there is a piece of it (or all of it, at
    /// the end), and drops what is handed out and out of the window.
    fn emit(&mut self, last: bool) {
        if self.stopped {
            return;
        }
        let ready = self.produced().min(self.limit) - self.emitted;
        let whole = if last {
            ready
        } else {
            ready / self.unit * self.unit
        };
        if whole == 0 || (!last && whole < self.piece) {
            return;
        }
        let start = (self.emitted - self.dropped) as usize;
        if (self.f)(&self.buf[start..start + whole as usize]).is_break() {
            self.stopped = true;
        }
        self.emitted += whole;
        let keep_from =
            ((self.emitted - self.dropped) as usize).min(self.buf.len().saturating_sub(WINDOW));
        self.buf.drain(..keep_from);
        self.dropped += keep_from as u64;
    }
}

impl<F: FnMut(&[u8]) -> ControlFlow<()>> Output for Pieces<F> {
    fn produced(&self) -> u64 {
        self.dropped + self.buf.len() as u64
    }
    fn plain(&self) -> u64 {
        self.plain
    }
    fn literals<R: Read + ?Sized>(&mut self, input: &mut Input<'_, R>, n: usize) -> Result<()> {
        let mut left = n;
        while left > 0 && !self.enough() {
            let k = left.min(self.step);
            let start = self.buf.len();
            self.buf.resize(start + k, 0);
            input.copy_to(&mut self.buf[start..])?;
            left -= k;
            self.emit(false);
        }
        Ok(())
    }
    fn matched(&mut self, offset: usize, len: usize) -> Result<()> {
        let mut left = len;
        while left > 0 && !self.enough() {
            let n = left.min(self.step);
            // An overlapping match (offset < n) repeats the last `offset` bytes: each copy
            // takes what is there, which doubles what the next one can take.
            let (mut from, mut todo) = (self.buf.len() - offset, n);
            while todo > 0 {
                let k = todo.min(self.buf.len() - from);
                self.buf.extend_from_within(from..from + k);
                from += k;
                todo -= k;
            }
            left -= n;
            self.emit(false);
        }
        Ok(())
    }
    fn enough(&self) -> bool {
        self.stopped || (self.limit < self.plain && self.produced() >= self.limit)
    }
}

/// The compressed block, read through a window.
struct Input<'a, R: Read + ?Sized> {
    r: &'a mut R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Bytes of the block not yet read from `r`.
    left: u64,
    packed_len: u64,
}

impl<'a, R: Read + ?Sized> Input<'a, R> {
    fn new(r: &'a mut R, packed_len: u64) -> Input<'a, R> {
        let window = WINDOW
            .min(usize::try_from(packed_len).unwrap_or(WINDOW))
            .max(1);
        Input {
            r,
            buf: vec![0; window],
            pos: 0,
            end: 0,
            left: packed_len,
            packed_len,
        }
    }

    fn is_done(&self) -> bool {
        self.pos == self.end && self.left == 0
    }

    /// Refills the window; false at the block's end.
    fn fill(&mut self) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        let want = usize::try_from(self.left).map_or(self.buf.len(), |l| l.min(self.buf.len()));
        let got = read_some(self.r, &mut self.buf[..want])?;
        if got == 0 {
            return Err(self.truncated());
        }
        self.left -= got as u64;
        self.pos = 0;
        self.end = got;
        Ok(true)
    }

    fn truncated(&self) -> crate::Error {
        ErrorKind::Truncated {
            expected: self.packed_len,
            found: self.packed_len - self.left,
        }
        .into()
    }

    fn next_byte(&mut self) -> Result<Option<u8>> {
        if self.pos == self.end && !self.fill()? {
            return Ok(None);
        }
        self.pos += 1;
        Ok(Some(self.buf[self.pos - 1]))
    }

    /// A byte the block must still have.
    fn byte(&mut self) -> Result<u8> {
        self.next_byte()?
            .ok_or_else(|| ErrorKind::Lz4("the block ends inside a sequence".into()).into())
    }

    /// A length whose first four bits are `nibble`, continued by bytes while they are 255.
    fn length(&mut self, nibble: usize) -> Result<usize> {
        let mut len = nibble;
        if nibble == 15 {
            loop {
                let b = self.byte()?;
                len = len
                    .checked_add(usize::from(b))
                    .ok_or_else(|| ErrorKind::Lz4("a length overflows".into()))?;
                if b != 255 {
                    break;
                }
            }
        }
        Ok(len)
    }

    /// Copies the next `dst.len()` bytes of the block into `dst`: what the window holds, then
    /// straight from the reader.
    fn copy_to(&mut self, dst: &mut [u8]) -> Result<()> {
        let held = (self.end - self.pos).min(dst.len());
        dst[..held].copy_from_slice(&self.buf[self.pos..self.pos + held]);
        self.pos += held;
        let rest = &mut dst[held..];
        if rest.is_empty() {
            return Ok(());
        }
        if rest.len() as u64 > self.left {
            return Err(ErrorKind::Lz4("the block ends inside its literals".into()).into());
        }
        let mut got = 0;
        while got < rest.len() {
            let n = read_some(self.r, &mut rest[got..])?;
            if n == 0 {
                self.left -= got as u64;
                return Err(self.truncated());
            }
            got += n;
        }
        self.left -= got as u64;
        Ok(())
    }
}

/// One `read`, retried on interruption.
fn read_some<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> Result<usize> {
    loop {
        match r.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that yields 1 to 7 bytes a call, so every boundary is crossed.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn decode(packed: &[u8], len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        decode_into(&mut Trickle(packed, 0), packed.len() as u64, &mut out)?;
        Ok(out)
    }

    fn pieces(block: &[u8], plain: u64, limit: u64, unit: usize, piece: usize) -> Result<Vec<u8>> {
        let mut got = Vec::new();
        decode_pieces(
            &mut Trickle(block, 0),
            block.len() as u64,
            plain,
            limit,
            unit,
            piece,
            |c| {
                assert!(c.len() % unit == 0 || got.len() + c.len() == limit.min(plain) as usize);
                got.extend_from_slice(c);
                ControlFlow::Continue(())
            },
        )?;
        Ok(got)
    }

    /// Data with long runs, repeats far and near, and noise: every kind of sequence.
    fn sample(n: usize) -> Vec<u8> {
        let mut x = 12345u32;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                match (i / 5000) % 4 {
                    0 => 0,
                    1 => (i % 7) as u8,
                    2 => (i % 70_000 / 3) as u8,
                    _ => (x >> 16) as u8,
                }
            })
            .collect()
    }

    #[test]
    fn decodes_what_lz4_flex_encodes_whole_and_in_pieces() {
        for n in [0usize, 1, 17, 70_000, 300_000] {
            let data = sample(n);
            let block = lz4_flex::block::compress(&data);
            assert_eq!(decode(&block, n).unwrap(), data);
            for (unit, piece) in [(1, 1), (8, 4096), (3, 1 << 20), (80, 100)] {
                assert_eq!(
                    pieces(&block, n as u64, u64::MAX, unit, piece).unwrap(),
                    data
                );
            }
            let head = (n / 3) as u64;
            assert_eq!(
                pieces(&block, n as u64, head, 1, 1000).unwrap(),
                &data[..head as usize]
            );
        }
    }

    #[test]
    fn a_callback_that_breaks_stops_decoding() {
        let data = sample(300_000);
        let block = lz4_flex::block::compress(&data);
        let mut calls = 0;
        decode_pieces(
            &mut &block[..],
            block.len() as u64,
            300_000,
            u64::MAX,
            1,
            1000,
            |_| {
                calls += 1;
                ControlFlow::Break(())
            },
        )
        .unwrap();
        assert_eq!(calls, 1);
    }

    #[test]
    fn hostile_blocks_are_errors_not_allocations() {
        let data = sample(10_000);
        let block = lz4_flex::block::compress(&data);
        // A longer plain length than the block holds, and a shorter one, both ways.
        assert!(decode(&block, 10_001).is_err());
        assert!(decode(&block, 9_999).is_err());
        assert!(pieces(&block, 10_001, u64::MAX, 1, 1).is_err());
        assert!(pieces(&block, 9_999, u64::MAX, 1, 1).is_err());
        // A match reaching back before the data; a literal length of 2^60.
        assert!(decode(&[0x04, b'a', 5, 0], 9).is_err());
        let mut huge = vec![0xf0];
        huge.extend([255u8; 64]);
        assert!(pieces(&huge, 1 << 40, u64::MAX, 1, 1).is_err());
        // Cut anywhere: an error, never a panic.
        for cut in 0..block.len() {
            let _ = decode(&block[..cut], 10_000);
            let _ = pieces(&block[..cut], 10_000, u64::MAX, 1, 1);
        }
    }
}
