//! Flag bit 1's one raw LZ4 block, decoded as it is read.
//!
//! A whole read of a compressed file needs the decoded array; it does not need the compressed
//! block at the same time. This decoder reads the block through a small window and writes each
//! sequence straight into the output, whose size the header gives, so a whole read holds the
//! decoded bytes plus [`WINDOW`] bytes, not both copies (a 2 GiB block used to cost 4 GiB).
//!
//! The block format is LZ4's (`lz4.block`, the C reference's `LZ4_compress_default`): a run of
//! sequences, each a token (literal count in the high four bits, match length minus 4 in the
//! low four), more literal-count bytes while they are 255, the literals, a two-byte little-endian
//! match offset and more match-length bytes while they are 255; the last sequence is literals
//! only. Every length and offset is checked against the output before it is used, so a hostile
//! block is an error naming what is wrong, never a write out of bounds.

use std::io::Read;

use crate::error::{ErrorKind, Result};

/// The bytes of the compressed block held at once.
pub(crate) const WINDOW: usize = 64 << 10;

/// Decodes the raw LZ4 block of `packed_len` bytes that `r` yields into `dst`, which the block
/// must fill exactly. Reads exactly `packed_len` bytes from `r`.
pub(crate) fn decode_stream<R: Read + ?Sized>(
    r: &mut R,
    packed_len: u64,
    dst: &mut [u8],
) -> Result<()> {
    let mut input = Input {
        r,
        buf: vec![
            0;
            WINDOW
                .min(usize::try_from(packed_len).unwrap_or(WINDOW))
                .max(1)
        ],
        pos: 0,
        end: 0,
        left: packed_len,
        packed_len,
    };
    let mut out = 0usize;
    while let Some(token) = input.next_byte()? {
        let literals = input.length(usize::from(token >> 4))?;
        let end = out
            .checked_add(literals)
            .filter(|&e| e <= dst.len())
            .ok_or_else(|| too_long(dst.len()))?;
        input.copy_to(&mut dst[out..end])?;
        out = end;
        if input.is_done() {
            break;
        }
        let offset = usize::from(u16::from_le_bytes([input.byte()?, input.byte()?]));
        if offset == 0 || offset > out {
            return Err(ErrorKind::Lz4(format!(
                "a match {offset} bytes back at output byte {out} (0 or before the start)"
            ))
            .into());
        }
        let len = input.length(usize::from(token & 15))? + 4;
        let end = out
            .checked_add(len)
            .filter(|&e| e <= dst.len())
            .ok_or_else(|| too_long(dst.len()))?;
        copy_match(dst, out, offset, len);
        out = end;
    }
    if out != dst.len() {
        return Err(ErrorKind::Lz4(format!(
            "block decompresses to {out} bytes; dims x elbyte is {}",
            dst.len()
        ))
        .into());
    }
    Ok(())
}

fn too_long(len: usize) -> crate::Error {
    ErrorKind::Lz4(format!(
        "block decompresses to more than dims x elbyte, {len} bytes"
    ))
    .into()
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

impl<R: Read + ?Sized> Input<'_, R> {
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

    fn decode(packed: &[u8], len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        // A reader that yields 1 to 7 bytes a call, so every boundary is crossed.
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
        decode_stream(&mut Trickle(packed, 0), packed.len() as u64, &mut out)?;
        Ok(out)
    }

    #[test]
    fn decodes_what_lz4_flex_encodes() {
        let mut seed = 7u64;
        let mut noise = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        };
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![5],
            vec![0; 100_000],
            (0..300_000u32).map(|i| (i % 251) as u8).collect(),
            (0..200_000).map(|_| noise()).collect(),
            (0..200_000u32)
                .map(|i| if i % 3 == 0 { noise() } else { 1 })
                .collect(),
        ];
        for plain in cases {
            let packed = lz4_flex::block::compress(&plain);
            assert_eq!(decode(&packed, plain.len()).unwrap(), plain);
            let mut whole = vec![0u8; plain.len()];
            decode_stream(&mut &packed[..], packed.len() as u64, &mut whole).unwrap();
            assert_eq!(whole, plain);
        }
    }

    #[test]
    fn hostile_blocks_are_errors() {
        let plain: Vec<u8> = (0..5000u32).map(|i| (i % 13) as u8).collect();
        let packed = lz4_flex::block::compress(&plain);
        // Cut short, at every length.
        for cut in 0..packed.len() {
            assert!(decode(&packed[..cut], plain.len()).is_err(), "cut at {cut}");
        }
        // A block that decodes to less, or more, than the header says.
        assert!(decode(&packed, plain.len() + 1).is_err());
        assert!(decode(&packed, plain.len() - 1).is_err());
        // A match before the start: one literal, then offset 2.
        let e = decode(&[0x10, b'a', 2, 0, 0x00], 10).unwrap_err();
        assert!(e.to_string().contains("before the start"), "{e}");
        // Offset 0.
        assert!(decode(&[0x10, b'a', 0, 0], 10).is_err());
        // A literal count far past the output.
        let e = decode(&[0xF0, 255, 255, 255, 10], 10).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
        // The reader ends before the length the caller gave.
        let mut out = vec![0u8; plain.len()];
        let e = decode_stream(&mut &packed[..10], packed.len() as u64, &mut out).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e:?}");
    }
}
