//! Decoding one raw LZ4 block as a stream: the plain bytes come out in chunks while only the
//! last 64 KiB (the most a match can reach back) and one chunk are kept, so that printing or
//! converting a compressed file costs memory independent of its size, and `cat --head` stops
//! decoding once it has what it prints.
//!
//! The block format: sequences of a token (literal length in the high nibble, match length
//! minus 4 in the low one, 15 meaning "more bytes follow, each added, until one is not 255"),
//! the literals, then a 2-byte little-endian offset back into the output and the match. The last
//! sequence has literals only.

use std::io::{self, BufRead};

/// The farthest back a match can copy from.
const WINDOW: usize = 1 << 16;

/// Why a block cannot be decoded.
#[derive(Debug)]
pub enum DecodeError {
    /// Reading the compressed bytes failed.
    Io(io::Error),
    /// The bytes are not a valid block of the expected plain length.
    Corrupt(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Io(e) => write!(f, "{e}"),
            DecodeError::Corrupt(why) => write!(f, "LZ4 data: {why}"),
        }
    }
}

impl From<io::Error> for DecodeError {
    fn from(e: io::Error) -> DecodeError {
        DecodeError::Io(e)
    }
}

/// What the decoder hands plain bytes to: stops it with an error of the caller's.
pub enum Stop<E> {
    /// The block is bad.
    Decode(DecodeError),
    /// The callback failed.
    Callback(E),
}

/// Decodes the block in `input` (its compressed bytes and nothing else) that holds `plain`
/// bytes, calling `f` with them in order, in chunks of a multiple of `unit` bytes (about
/// `chunk` at a time), until `limit` bytes have been handed out or the block ends.
pub fn decode<R: BufRead, E>(
    mut input: R,
    plain: u64,
    limit: u64,
    unit: usize,
    chunk: usize,
    f: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), Stop<E>> {
    let mut out = Output {
        buf: Vec::new(),
        dropped: 0,
        emitted: 0,
        plain,
        limit: limit.min(plain),
        unit: unit.max(1) as u64,
        chunk: chunk.max(1) as u64,
        f,
    };
    // Literals and matches are copied in steps of this many bytes, each followed by a chance to
    // hand out a chunk: one long run must not be held whole.
    let step = out.chunk.max(WINDOW as u64);
    while !out.enough() {
        let Some(token) = next_byte(&mut input).map_err(|e| Stop::Decode(e.into()))? else {
            break;
        };
        let literals = length(&mut input, u64::from(token >> 4))?;
        out.room_for(literals, "literals")?;
        let mut left = literals;
        while left > 0 && !out.enough() {
            let n = left.min(step) as usize;
            let start = out.buf.len();
            out.buf.resize(start + n, 0);
            input
                .read_exact(&mut out.buf[start..])
                .map_err(|e| corrupt(format!("the block ends inside literals ({e})")))?;
            left -= n as u64;
            out.emit(false)?;
        }
        if out.enough() {
            break;
        }
        let mut offset = [0u8; 2];
        match input.read_exact(&mut offset) {
            Ok(()) => {}
            // The last sequence has literals only.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(Stop::Decode(e.into())),
        }
        let offset = usize::from(u16::from_le_bytes(offset));
        if offset == 0 || offset > out.buf.len() {
            return Err(corrupt(format!(
                "a match {offset} bytes back, before the start of the data"
            )));
        }
        let len = length(&mut input, u64::from(token & 15))? + 4;
        out.room_for(len, "a match")?;
        let mut left = len;
        while left > 0 && !out.enough() {
            let n = left.min(step) as usize;
            // An overlapping match (offset < n) repeats the last `offset` bytes: each copy
            // takes what is there, which doubles what the next one can take.
            let (mut from, mut todo) = (out.buf.len() - offset, n);
            while todo > 0 {
                let k = todo.min(out.buf.len() - from);
                out.buf.extend_from_within(from..from + k);
                from += k;
                todo -= k;
            }
            left -= n as u64;
            out.emit(false)?;
        }
    }
    let produced = out.produced();
    if out.limit == plain && produced != plain {
        return Err(corrupt(format!(
            "the block holds {produced} plain bytes, the header gives {plain}"
        )));
    }
    out.emit(true)
}

fn corrupt<E>(why: String) -> Stop<E> {
    Stop::Decode(DecodeError::Corrupt(why))
}

/// The decoded bytes still needed: the window matches reach into, and what is not handed out.
struct Output<F> {
    buf: Vec<u8>,
    /// Bytes produced before `buf[0]`.
    dropped: u64,
    /// Bytes handed out (all of `dropped`, and maybe some of `buf`).
    emitted: u64,
    plain: u64,
    limit: u64,
    unit: u64,
    chunk: u64,
    f: F,
}

impl<F> Output<F> {
    fn produced(&self) -> u64 {
        self.dropped + self.buf.len() as u64
    }

    /// Whether decoding may stop: a prefix was asked for and is there.
    fn enough(&self) -> bool {
        self.limit < self.plain && self.produced() >= self.limit
    }

    fn room_for<E>(&self, n: u64, what: &str) -> Result<(), Stop<E>> {
        if n > self.plain - self.produced() {
            return Err(corrupt(format!(
                "{what} run past the {} plain bytes the header gives",
                self.plain
            )));
        }
        Ok(())
    }

    /// Hands out what is ready, in whole units, once there is a chunk of it (or all of it, at
    /// the end), and drops what is handed out and out of the window.
    fn emit<E>(&mut self, last: bool) -> Result<(), Stop<E>>
    where
        F: FnMut(&[u8]) -> Result<(), E>,
    {
        let ready = self.produced().min(self.limit) - self.emitted;
        let whole = if last {
            ready
        } else {
            ready / self.unit * self.unit
        };
        if whole == 0 || (!last && whole < self.chunk) {
            return Ok(());
        }
        let start = (self.emitted - self.dropped) as usize;
        (self.f)(&self.buf[start..start + whole as usize]).map_err(Stop::Callback)?;
        self.emitted += whole;
        let keep_from =
            ((self.emitted - self.dropped) as usize).min(self.buf.len().saturating_sub(WINDOW));
        self.buf.drain(..keep_from);
        self.dropped += keep_from as u64;
        Ok(())
    }
}

fn next_byte(input: &mut impl BufRead) -> io::Result<Option<u8>> {
    let buf = input.fill_buf()?;
    let Some(&b) = buf.first() else {
        return Ok(None);
    };
    input.consume(1);
    Ok(Some(b))
}

/// A length whose nibble is `nibble`: 15 is followed by bytes added on while they are 255.
fn length<R: BufRead, E>(input: &mut R, nibble: u64) -> Result<u64, Stop<E>> {
    let mut n = nibble;
    if nibble == 15 {
        loop {
            let b = next_byte(input)
                .map_err(|e| Stop::Decode(e.into()))?
                .ok_or_else(|| {
                    Stop::Decode(DecodeError::Corrupt(
                        "the block ends inside a length".into(),
                    ))
                })?;
            n = n.saturating_add(u64::from(b));
            if b != 255 {
                break;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(block: &[u8], plain: u64, limit: u64, unit: usize, chunk: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let r = decode::<_, ()>(block, plain, limit, unit, chunk, |c| {
            assert!(c.len() % unit == 0 || got.len() + c.len() == limit.min(plain) as usize);
            got.extend_from_slice(c);
            Ok(())
        });
        assert!(r.is_ok());
        got
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
    fn decodes_what_lz4_flex_encodes_in_any_chunking() {
        for n in [0usize, 1, 17, 70_000, 300_000] {
            let data = sample(n);
            let block = lz4_flex::block::compress(&data);
            for (unit, chunk) in [(1, 1), (8, 4096), (3, 1 << 20), (80, 100)] {
                assert_eq!(decode_all(&block, n as u64, u64::MAX, unit, chunk), data);
            }
            let head = (n / 3) as u64;
            assert_eq!(
                decode_all(&block, n as u64, head, 1, 1000),
                &data[..head as usize]
            );
        }
    }

    #[test]
    fn hostile_blocks_are_errors_not_allocations() {
        let data = sample(10_000);
        let block = lz4_flex::block::compress(&data);
        let fails =
            |b: &[u8], plain: u64| decode::<_, ()>(b, plain, u64::MAX, 1, 1, |_| Ok(())).is_err();
        // A longer plain length than the block holds, and a shorter one.
        assert!(fails(&block, 10_001));
        assert!(fails(&block, 9_999));
        // A match reaching back before the data; a literal length of 2^60.
        assert!(fails(&[0x04, b'a', 5, 0], 9));
        let mut huge = vec![0xf0];
        huge.extend([255u8; 64]);
        assert!(fails(&huge, 1 << 40));
        // Cut anywhere: an error, never a panic.
        for cut in 0..block.len() {
            let _ = decode::<_, ()>(&block[..cut], 10_000, u64::MAX, 1, 1, |_| Ok(()));
        }
    }
}
