//! The huffman codec (id 4): each block, or each byte stream of a split block, is Huffman codes
//! of its bytes in four interleaved bit streams, or, where that is a tenth smaller, a zstd frame
//! (doc/chunked.md 5.3.1).
//!
//! Why a codec of its own: after two bytedeltas (`shuffle, bytedelta:4, bytedelta:4`: the third
//! byte plane is the only one they shrink, doc/chunked.md 5.2) a smooth float field's third
//! byte plane is about 4 bits of noise a byte. zstd stores it almost only as Huffman literals and
//! decodes them at about a nanosecond a byte, so with zstd `shuffle, bytedelta, bytedelta`
//! reached 1.10x Blosc2's ratio but not its speed (doc/benchmarks.md, "Lossless past 1.10x
//! Blosc2's ratio"). Here such a plane is
//! decoded two symbols a table lookup from four bit streams at once. The sign and exponent plane
//! is the other way round: its rows repeat one another, which zstd's matches find and no
//! byte-by-byte code can, so it stays a zstd frame (at the codec's level).
//!
//! A payload is one mode byte, then for mode 0 (*codes*) one unit of all the stream's bytes,
//! for mode 1 (*zstd*) one zstd frame of them.
//!
//! A *unit* of `n` symbols (`n`, the stream's length, is known from the chunk grid) is nothing
//! for `n = 0`; otherwise a kind byte, then for kind 0 the one symbol all `n` are, and for kind 1
//! the highest symbol present `last`, `ceil((last + 1) / 2)` bytes of 4-bit code lengths of the
//! symbols `0..=last` (the low nibble first; 0 absent, else 1 to 11), the byte lengths of four
//! bit streams (`u32` each) and the streams. The lengths are those of a complete prefix code
//! (their Kraft sum is exactly 1) of at least two symbols, with the canonical codes of DEFLATE
//! (RFC 1951, 3.2.2); stream `i` codes symbols `i q .. min((i + 1) q, n)` with `q = ceil(n / 4)`,
//! each code's bits put in the stream least significant first from its first bit, and is
//! exactly as many bytes as its bits need (the last byte padded with zero bits).
//!
//! Every length is checked against what the stream's size allows before it is used; a decoder
//! that does not end each bit stream exactly at its end refuses the block.
//!
//! ```
//! use rawarray_serde::codec::{huffman::Huffman, BlockCodec, Elements};
//! use rawarray_serde::ElType;
//! let el = Elements::new(ElType::Uint, 1, false);
//! // Four symbols of frequencies 1/2, 1/4, 1/8 and 1/8 in no order (codes of 1, 2, 3 and 3
//! // bits), from a pseudo-random sequence: no repeats for zstd to find.
//! let mut x = 1u32;
//! let src: Vec<u8> = (0..4000)
//!     .map(|_| {
//!         x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
//!         [7, 7, 7, 7, 9, 9, 3, 5][(x >> 28) as usize % 8]
//!     })
//!     .collect();
//! let mut packed = Vec::new();
//! Huffman.compress(&src, &el, 3, &mut packed).unwrap();
//! assert_eq!(packed[0], 0); // mode 0: codes
//! assert!(packed.len() < 4000 * 8 / 32 + 40); // about 1.75 bits a symbol and the head
//! let mut back = vec![0u8; 4000];
//! Huffman.decompress(&packed, &el, &mut back).unwrap();
//! assert_eq!(back, src);
//! ```

use super::{BlockCodec, Elements};
use crate::error::Result;

/// The longest code, in bits: tables of `2^11` entries stay in the first-level cache.
pub const MAX_CODE_LEN: u32 = 11;
const TABLE: usize = 1 << MAX_CODE_LEN;
const MASK: u64 = TABLE as u64 - 1;
/// The fields of a `two` entry that advance a lane's packed position ([`Tables`]).
const ADVANCE: u64 = 0xFFFF_FFFF_0000_00FF;

/// The largest block of this codec, in bytes: the largest block of layout version 2
/// ([`MAX_BLOCK_BYTES_V2`](super::config::MAX_BLOCK_BYTES_V2), which a test checks this
/// equals; written here because the codec table, which refuses larger elements, is below the
/// config in the module layers). Its blocks are decoded whole, never as streams.
pub const MAX_BLOCK_BYTES: u64 = 1 << 24;

/// The most bytes a call encodes or decodes (blocks are at most 16 MiB): the decoder keeps bit
/// and byte positions in 32 bits.
pub const MAX_BYTES: usize = 1 << 28;

const MODE_CODES: u8 = 0;
const MODE_ZSTD: u8 = 1;
const KIND_ONE: u8 = 0;
const KIND_CODES: u8 = 1;

/// Huffman-coded bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Huffman;

impl BlockCodec for Huffman {
    fn max_ratio(&self) -> u64 {
        // A block of one repeated byte is 3 bytes (mode, kind, the symbol) whatever its
        // length, and its blocks are at most MAX_BLOCK_BYTES (its elements are refused beyond:
        // `Codec::check_elements`). Decoding never allocates more than the block's size,
        // which the chunk grid gives.
        MAX_BLOCK_BYTES
    }
    fn compress(&self, src: &[u8], _el: &Elements, level: i32, out: &mut Vec<u8>) -> Result<()> {
        encode(src, level, out)
    }
    fn decompress(
        &self,
        src: &[u8],
        _el: &Elements,
        dst: &mut [u8],
    ) -> std::result::Result<(), String> {
        decode(src, dst)
    }
}

// ---------------------------------------------------------------- encoding

/// Appends the payload of `src` to `out`: Huffman codes, or a zstd frame at `level` where that
/// is at most [`ZSTD_SHARE`] of their size. More than [`MAX_BYTES`] (which [`decode`] refuses
/// beyond) is an error.
pub fn encode(src: &[u8], level: i32, out: &mut Vec<u8>) -> Result<()> {
    if src.len() > MAX_BYTES {
        return Err(crate::Error::msg(format!(
            "huffman: a block of {} bytes, at most {MAX_BYTES}",
            src.len()
        )));
    }
    let start = out.len();
    out.push(MODE_CODES);
    encode_unit(src, &histogram(src), out);
    let codes = out.len() - start;
    // A stream that repeats (the sign and exponent plane, whose rows repeat one another) is
    // worth zstd's matches; noise of a few bits a byte is not (zstd stores it as Huffman
    // literals too, a few percent smaller, at twice the decoding time).
    if src.len() >= 64 {
        let worth =
            |frame: &[u8]| (frame.len() as u64) * ZSTD_SHARE.1 <= (codes as u64) * ZSTD_SHARE.0;
        let mut frame = vec![MODE_ZSTD];
        // zstd's lazy match search (levels 5 and up) takes most of an encode, and finds
        // nothing in a plane of noise: a frame at level 1 first (several times faster) says
        // whether the stream has repeats. Where it does not save a twentieth of the codes,
        // the codes are kept without searching harder: on the compress bench's field the
        // search at level 9 shrank such frames by 1% at most, never to the tenth they need.
        if level > PROBE_ABOVE {
            super::zstd::Zstd.compress(src, &ELEMENTS, 1, &mut frame)?;
            if !probe_finds_repeats(frame.len(), codes) {
                return Ok(());
            }
            frame.truncate(1);
        }
        super::zstd::Zstd.compress(src, &ELEMENTS, level, &mut frame)?;
        if worth(&frame) {
            out.truncate(start);
            out.extend_from_slice(&frame);
        }
    }
    Ok(())
}

/// Whether a level-1 frame of `frame` bytes against `codes` bytes of codes says the stream is
/// worth zstd's search at a higher level: it saves at least a twentieth ([`encode`]).
fn probe_finds_repeats(frame: usize, codes: usize) -> bool {
    (frame as u64) * 20 <= (codes as u64) * 19
}

/// Above this zstd level a frame at level 1 decides first whether a stream is worth the
/// level's search ([`encode`]).
const PROBE_ABOVE: i32 = 4;

/// A stream is stored as a zstd frame when that takes at most this share of its Huffman codes'
/// bytes (`numerator, denominator`): zstd decodes slower, so it must save a tenth.
pub const ZSTD_SHARE: (u64, u64) = (9, 10);

/// The elements zstd's codec is told of (it does not look at them).
const ELEMENTS: Elements = Elements {
    eltype: crate::eltype::ElType::Uint,
    elbyte: 1,
    big_endian: false,
};

fn histogram(src: &[u8]) -> [u64; 256] {
    // Four tables, so that runs of one byte do not wait on their own increments.
    let mut h = [[0u64; 256]; 4];
    let mut quads = src.chunks_exact(4);
    for q in &mut quads {
        h[0][q[0] as usize] += 1;
        h[1][q[1] as usize] += 1;
        h[2][q[2] as usize] += 1;
        h[3][q[3] as usize] += 1;
    }
    for &b in quads.remainder() {
        h[0][b as usize] += 1;
    }
    let mut out = [0u64; 256];
    for (s, o) in out.iter_mut().enumerate() {
        *o = h[0][s] + h[1][s] + h[2][s] + h[3][s];
    }
    out
}

/// Code lengths of at most [`MAX_CODE_LEN`] bits for symbols of these counts (two or more
/// present): Huffman's, with the counts halved (none below 1) until the longest fits. Halving
/// flattens the tree, and 256 equal counts need 8 bits, so this ends.
fn code_lengths(hist: &[u64; 256]) -> [u8; 256] {
    let mut counts = *hist;
    loop {
        let lens = huffman_lengths(&counts);
        if lens.iter().all(|&l| u32::from(l) <= MAX_CODE_LEN) {
            return lens;
        }
        for c in counts.iter_mut().filter(|c| **c > 0) {
            *c = (*c / 2).max(1);
        }
    }
}

/// Huffman's code lengths (unbounded) of the present symbols.
fn huffman_lengths(counts: &[u64; 256]) -> [u8; 256] {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let leaves: Vec<usize> = (0..256).filter(|&s| counts[s] > 0).collect();
    let k = leaves.len();
    let mut parent = vec![0usize; 2 * k - 1];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = leaves
        .iter()
        .enumerate()
        .map(|(i, &s)| Reverse((counts[s], i)))
        .collect();
    let mut next = k;
    while heap.len() > 1 {
        let Reverse((a, i)) = heap.pop().expect("two or more");
        let Reverse((b, j)) = heap.pop().expect("two or more");
        parent[i] = next;
        parent[j] = next;
        heap.push(Reverse((a + b, next)));
        next += 1;
    }
    // A parent is made after its children, so depths go from the root (the last node) down.
    let mut depth = vec![0u8; 2 * k - 1];
    for i in (0..2 * k - 2).rev() {
        depth[i] = depth[parent[i]] + 1;
    }
    let mut lens = [0u8; 256];
    for (i, &s) in leaves.iter().enumerate() {
        lens[s] = depth[i];
    }
    lens
}

/// DEFLATE's canonical codes of these lengths, bit-reversed (the first bit of a code is the
/// least significant, as the streams hold them).
fn canonical_codes(lens: &[u8; 256]) -> [u16; 256] {
    let mut count = [0u16; MAX_CODE_LEN as usize + 1];
    for &l in lens.iter().filter(|&&l| l > 0) {
        count[l as usize] += 1;
    }
    let mut next = [0u16; MAX_CODE_LEN as usize + 1];
    let mut code = 0u16;
    for l in 1..=MAX_CODE_LEN as usize {
        code = (code + count[l - 1]) << 1;
        next[l] = code;
    }
    let mut codes = [0u16; 256];
    for (s, &l) in lens.iter().enumerate().filter(|(_, &l)| l > 0) {
        let c = next[l as usize];
        next[l as usize] += 1;
        codes[s] = c.reverse_bits() >> (16 - u32::from(l));
    }
    codes
}

/// Appends the unit of `symbols` (see the [module docs](self)).
fn encode_unit(symbols: &[u8], hist: &[u64; 256], out: &mut Vec<u8>) {
    let n = symbols.len();
    if n == 0 {
        return;
    }
    let present = hist.iter().filter(|&&c| c > 0).count();
    if present == 1 {
        out.extend_from_slice(&[KIND_ONE, symbols[0]]);
        return;
    }
    let lens = code_lengths(hist);
    let codes = canonical_codes(&lens);
    let last = (0..256).rev().find(|&s| lens[s] > 0).expect("two present");
    out.extend_from_slice(&[KIND_CODES, last as u8]);
    for pair in lens[..=last].chunks(2) {
        out.push(pair[0] | pair.get(1).map_or(0, |&h| h << 4));
    }
    let heads = out.len();
    out.resize(heads + 16, 0);
    let q = n.div_ceil(4);
    for i in 0..4 {
        let part = &symbols[(i * q).min(n)..((i + 1) * q).min(n)];
        let begin = out.len();
        let (mut acc, mut bits) = (0u64, 0u32);
        for &s in part {
            acc |= u64::from(codes[s as usize]) << bits;
            bits += u32::from(lens[s as usize]);
            if bits >= 32 {
                out.extend_from_slice(&(acc as u32).to_le_bytes());
                acc >>= 32;
                bits -= 32;
            }
        }
        out.extend_from_slice(&acc.to_le_bytes()[..bits.div_ceil(8) as usize]);
        let len = (out.len() - begin) as u32;
        out[heads + 4 * i..heads + 4 * i + 4].copy_from_slice(&len.to_le_bytes());
    }
}

// ---------------------------------------------------------------- decoding

/// Decodes a payload into exactly `dst`, or says what is wrong with it.
pub fn decode(src: &[u8], dst: &mut [u8]) -> std::result::Result<(), String> {
    if src.len().max(dst.len()) > MAX_BYTES {
        return Err(format!(
            "huffman: {} stored bytes into {}, at most {MAX_BYTES} each",
            src.len(),
            dst.len()
        ));
    }
    let mut r = Cursor { src, at: 0 };
    match r.u8("mode")? {
        MODE_CODES => decode_unit(&mut r, dst)?,
        MODE_ZSTD => {
            return super::zstd::Zstd
                .decompress(&src[1..], &ELEMENTS, dst)
                .map_err(|e| format!("huffman stream's {e}"))
        }
        m => return Err(format!("huffman mode {m}: expected 0 (codes) or 1 (zstd)")),
    }
    if r.at != src.len() {
        return Err(format!(
            "huffman payload of {} bytes ends at byte {}",
            src.len(),
            r.at
        ));
    }
    Ok(())
}

/// Reads a payload's fields in order, each checked against its end.
struct Cursor<'a> {
    src: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&'a [u8], String> {
        let s = self
            .src
            .get(self.at..)
            .and_then(|rest| rest.get(..n))
            .ok_or_else(|| {
                format!(
                    "huffman {what}: {n} bytes at byte {} of a {}-byte payload",
                    self.at,
                    self.src.len()
                )
            })?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> std::result::Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> std::result::Result<usize, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
    }
}

/// The decoding tables of one code: `one[i]` is the symbol whose code begins the 11 bits `i`
/// and its length (`symbol | length << 8`); `two[i]` decodes one or two symbols from `i`:
/// `bits | s1 << 8 | s2 << 16 | count << 32`, so that a lane's bit buffer is shifted by the
/// entry's low 6 bits (`e & 63`, which x86's `shrx` takes as it is: `bits` is at most 11) and
/// `two[i] & ADVANCE` is what its packed position (symbols written above bit 32, bits taken
/// below) advances by. The chain from one lookup to the next is a mask, a load and a shift.
struct Tables {
    one: [u16; TABLE],
    two: [u64; TABLE],
}

fn read_tables(r: &mut Cursor<'_>) -> std::result::Result<Box<Tables>, String> {
    let last = usize::from(r.u8("highest symbol")?);
    let packed = r.take((last + 1).div_ceil(2), "code lengths")?;
    let mut lens = [0u8; 256];
    for (s, l) in lens[..=last].iter_mut().enumerate() {
        *l = (packed[s / 2] >> (4 * (s % 2))) & 15;
    }
    // One reading of each payload: `last` has a code, and the nibble past it is 0.
    if lens[last] == 0 {
        return Err(format!(
            "huffman highest symbol {last}: its code length is 0"
        ));
    }
    if last % 2 == 0 && packed[last / 2] >> 4 != 0 {
        return Err(format!(
            "huffman code lengths: the high nibble past symbol {last} is {}, expected 0",
            packed[last / 2] >> 4
        ));
    }
    let mut kraft = 0u64;
    let mut present = 0;
    for (s, &l) in lens.iter().enumerate() {
        if u32::from(l) > MAX_CODE_LEN {
            return Err(format!(
                "huffman code length of symbol {s}: {l}, expected at most {MAX_CODE_LEN}"
            ));
        }
        if l > 0 {
            kraft += 1 << (MAX_CODE_LEN - u32::from(l));
            present += 1;
        }
    }
    if present < 2 || kraft != TABLE as u64 {
        return Err(format!(
            "huffman code lengths: {present} symbols with a Kraft sum of {kraft}/{TABLE}, \
             expected two or more symbols and exactly {TABLE}/{TABLE}"
        ));
    }
    let codes = canonical_codes(&lens);
    let mut t = Box::new(Tables {
        one: [0; TABLE],
        two: [0; TABLE],
    });
    // The code is complete, so every index is filled exactly once.
    for (s, &l) in lens.iter().enumerate().filter(|(_, &l)| l > 0) {
        let entry = s as u16 | u16::from(l) << 8;
        for i in (usize::from(codes[s])..TABLE).step_by(1 << l) {
            t.one[i] = entry;
        }
    }
    for i in 0..TABLE {
        let a = t.one[i];
        let la = u32::from(a >> 8);
        let b = t.one[i >> la];
        let lb = u32::from(b >> 8);
        // The second symbol is decoded only if its whole code is among the 11 bits.
        t.two[i] = if la + lb <= MAX_CODE_LEN {
            u64::from(la + lb) | u64::from(a & 255) << 8 | u64::from(b & 255) << 16 | 2 << 32
        } else {
            u64::from(la) | u64::from(a & 255) << 8 | 1 << 32
        };
    }
    Ok(t)
}

/// Where each of a unit's four streams is: its bytes in the payload (`start..end`), the bits
/// of them taken so far, and its symbols in the output (`out..out_end`, the next one at `out`).
#[derive(Clone, Copy, Debug, Default)]
struct Lane {
    start: usize,
    end: usize,
    bit: usize,
    out: usize,
    out_end: usize,
}

/// Decodes the four lanes of a unit at once, from the whole payload `src` into the whole unit
/// `dst`: five lookups of up to two symbols each per lane and round (55 bits of the 57 or more
/// a word read at a byte leaves), while every lane has a word to read within its stream and
/// room for ten symbols; leaves the rest to the caller.
///
/// Each lane is two registers: its bit buffer, and its output position and bit position packed
/// in one word (bits above 32 and below), which a table entry advances with one addition (see
/// [`Tables`]). Lanes kept as slices and bit readers of their own spilled to memory and decoded
/// at 0.87 ns a symbol against this loop's (doc/benchmarks.md).
fn decode_four(two: &[u64; TABLE], src: &[u8], dst: &mut [u8], lanes: &mut [Lane; 4]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("bmi2") {
        // SAFETY: the CPU has BMI2 (checked just above), the only requirement of calling a
        // function compiled with it enabled; the function itself is safe code.
        return unsafe { decode_four_bmi2(two, src, dst, lanes) };
    }
    decode_four_any(two, src, dst, lanes);
}

/// [`decode_four_any`] compiled for CPUs with BMI2, whose shifts by a register take any
/// register (`shrx`): x86's other shifts take their count in `cl` only, and the moves to it
/// were a third of the loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
fn decode_four_bmi2(two: &[u64; TABLE], src: &[u8], dst: &mut [u8], lanes: &mut [Lane; 4]) {
    decode_four_any(two, src, dst, lanes);
}

// The fifth round's shifts of the bit buffers are not read (the next round reads a new word):
// the compiler drops them.
#[allow(unused_assignments)]
#[inline(always)]
fn decode_four_any(two: &[u64; TABLE], src: &[u8], dst: &mut [u8], lanes: &mut [Lane; 4]) {
    let word = |at: u64| {
        let bit = at as u32 as usize;
        let i = bit >> 3;
        u64::from_le_bytes(src[i..i + 8].try_into().expect("8 bytes")) >> (bit & 7)
    };
    let pack = |l: &Lane| (l.out as u64) << 32 | l.bit as u64;
    let fits = |at: u64, l: &Lane| {
        ((at as u32 as usize) >> 3) + 8 <= l.end && ((at >> 32) as usize) + 10 <= l.out_end
    };
    if lanes.iter().any(|l| l.out_end > dst.len()) {
        // Never: decode_unit's lanes end within the unit. The stores below rely on it.
        return;
    }
    debug_assert!(two.iter().all(|e| matches!(e >> 32, 1 | 2)));
    let [l0, l1, l2, l3] = *lanes;
    let (mut t0, mut t1, mut t2, mut t3) = (pack(&l0), pack(&l1), pack(&l2), pack(&l3));
    macro_rules! step {
        ($b:ident, $t:ident) => {
            let e = two[($b & MASK) as usize];
            let a = ($t >> 32) as usize;
            // SAFETY: `fits` found this lane's output position at the start of this pass of the
            // loop at least 10 bytes below its `out_end`, which is at most `dst.len()` (checked
            // on entry); a pass (five `round!`s, one lookup per lane each) advances it by at
            // most 10, since every entry of `two` counts one or two symbols (`read_tables`
            // builds no other, and `Tables` is built nowhere else), so each two-byte store is
            // below `out_end`. (Slice stores checked each one against the length, a load and a
            // branch a symbol that the loop had no registers for.)
            unsafe {
                dst.as_mut_ptr()
                    .add(a)
                    .cast::<[u8; 2]>()
                    .write_unaligned(((e >> 8) as u16).to_le_bytes());
            }
            $b >>= e & 63;
            $t += e & ADVANCE;
        };
    }
    macro_rules! round {
        ($b0:ident, $b1:ident, $b2:ident, $b3:ident) => {
            step!($b0, t0);
            step!($b1, t1);
            step!($b2, t2);
            step!($b3, t3);
        };
    }
    while fits(t0, &l0) && fits(t1, &l1) && fits(t2, &l2) && fits(t3, &l3) {
        let (mut b0, mut b1, mut b2, mut b3) = (word(t0), word(t1), word(t2), word(t3));
        round!(b0, b1, b2, b3);
        round!(b0, b1, b2, b3);
        round!(b0, b1, b2, b3);
        round!(b0, b1, b2, b3);
        round!(b0, b1, b2, b3);
    }
    for (l, t) in lanes.iter_mut().zip([t0, t1, t2, t3]) {
        (l.out, l.bit) = ((t >> 32) as usize, t as u32 as usize);
    }
}

/// Decodes one unit of `dst.len()` symbols.
fn decode_unit(r: &mut Cursor<'_>, dst: &mut [u8]) -> std::result::Result<(), String> {
    let n = dst.len();
    if n == 0 {
        return Ok(());
    }
    match r.u8("unit kind")? {
        KIND_ONE => {
            let s = r.u8("symbol")?;
            dst.fill(s);
            return Ok(());
        }
        KIND_CODES => {}
        k => {
            return Err(format!(
                "huffman unit kind {k}: expected 0 (one symbol) or 1 (codes)"
            ))
        }
    }
    let t = read_tables(r)?;
    let mut lens = [0usize; 4];
    for (i, l) in lens.iter_mut().enumerate() {
        *l = r.u32(
            [
                "stream 0 length",
                "stream 1 length",
                "stream 2 length",
                "stream 3 length",
            ][i],
        )?;
    }
    let q = n.div_ceil(4);
    let mut lanes = [Lane::default(); 4];
    for (i, (&len, lane)) in lens.iter().zip(&mut lanes).enumerate() {
        let out = (i * q).min(n);
        let out_end = ((i + 1) * q).min(n);
        let symbols = out_end - out;
        // Every code takes 1 to 11 bits: a length outside that is refused before it is read.
        let (least, most) = (
            symbols.div_ceil(8),
            (symbols * MAX_CODE_LEN as usize).div_ceil(8),
        );
        if len < least || len > most {
            return Err(format!(
                "huffman stream {i} of {symbols} symbols: {len} bytes, expected {least} to {most}"
            ));
        }
        let start = r.at;
        r.take(len, "bit stream")?;
        *lane = Lane {
            start,
            end: start + len,
            bit: start * 8,
            out,
            out_end,
        };
    }
    let src = r.src;
    decode_four(&t.two, src, dst, &mut lanes);
    // Each lane's end, a symbol at a time, with zeros read past its stream's end.
    for (i, l) in lanes.iter().enumerate() {
        let stream = &src[l.start..l.end];
        let mut bit = l.bit - l.start * 8;
        for slot in &mut dst[l.out..l.out_end] {
            let at = bit >> 3;
            let w = match stream.get(at..at + 8) {
                Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
                None => {
                    let mut w = [0u8; 8];
                    let rest = stream.get(at..).unwrap_or(&[]);
                    w[..rest.len()].copy_from_slice(rest);
                    u64::from_le_bytes(w)
                }
            };
            let e = t.one[((w >> (bit & 7)) & MASK) as usize];
            *slot = e as u8;
            bit += usize::from(e >> 8);
        }
        if bit.div_ceil(8) != stream.len() {
            return Err(format!(
                "huffman stream {i}: its symbols take {bit} bits, the stream is {} bytes",
                stream.len()
            ));
        }
        // The last byte's bits past the codes are padding, 0.
        if let Some(&end) = stream.last() {
            if bit % 8 != 0 && end >> (bit % 8) != 0 {
                return Err(format!(
                    "huffman stream {i}: padding bits after its {bit} bits are not 0"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(src: &[u8]) -> Vec<u8> {
        let mut packed = Vec::new();
        encode(src, 3, &mut packed).unwrap();
        let mut back = vec![0xAAu8; src.len()];
        decode(&packed, &mut back).unwrap();
        assert_eq!(back, src);
        packed
    }

    fn noise(n: usize, bits: u32, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((x >> 33) as u32 & ((1 << bits) - 1)) as u8
            })
            .collect()
    }

    #[test]
    fn the_largest_block_is_the_layouts() {
        assert_eq!(MAX_BLOCK_BYTES, crate::codec::config::MAX_BLOCK_BYTES_V2);
    }

    #[test]
    fn lengths_and_edges_round_trip() {
        for n in [
            0usize, 1, 2, 3, 4, 5, 7, 9, 10, 11, 39, 40, 41, 63, 64, 65, 1000, 4097,
        ] {
            for bits in [1u32, 2, 4, 8] {
                round_trip(&noise(n, bits, n as u64 + 7));
            }
            let one = round_trip(&vec![9u8; n]);
            if n > 0 {
                assert_eq!(one, [MODE_CODES, KIND_ONE, 9]);
            }
        }
    }

    #[test]
    fn huffman_worked_example_in_the_spec() {
        // Symbols 5 (x3), 6, 7: lengths 1, 2, 2; canonical codes 0, 10, 11 (first bit first),
        // put least significant bit first: 5 -> 0, 6 -> 01, 7 -> 11 as bits from the low end.
        // n = 5, q = 2: streams [5, 5], [5, 6], [7] (and an empty one).
        let packed = round_trip(&[5, 5, 5, 6, 7]);
        assert_eq!(
            packed,
            [
                MODE_CODES, KIND_CODES, 7, 0x00, 0x00, 0x10, 0x22, // lengths of 0..=7
                1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // stream lengths
                0b00, 0b010, 0b11, // the streams: 2, 3 and 2 bits
            ]
        );
    }

    #[test]
    fn a_skewed_alphabet_needs_the_length_limit() {
        // Counts 1, 1, 2, 3, 5, 8, ...: Huffman's lengths would reach 20 and more.
        let mut src = Vec::new();
        let (mut a, mut b) = (1u64, 1u64);
        for s in 0..24u8 {
            src.extend(std::iter::repeat_n(s, a as usize));
            (a, b) = (b, a + b);
        }
        let mut x = 1u64;
        for i in (1..src.len()).rev() {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            src.swap(i, (x >> 33) as usize % (i + 1));
        }
        let packed = round_trip(&src);
        assert_eq!(packed[0], MODE_CODES);
        let lens = code_lengths(&histogram(&src));
        assert_eq!(lens.iter().copied().max(), Some(MAX_CODE_LEN as u8));
        assert!(packed.len() < src.len() / 3, "{}", packed.len());
    }

    #[test]
    fn repeats_go_to_zstd_and_noise_to_codes() {
        // Rows of 256 bytes, each the one before: zstd's matches.
        let row = noise(256, 3, 9);
        let rows: Vec<u8> = row.iter().copied().cycle().take(1 << 16).collect();
        let packed = round_trip(&rows);
        assert_eq!(packed[0], MODE_ZSTD);
        assert_eq!(&packed[1..5], &[0x28, 0xb5, 0x2f, 0xfd]);
        let src = noise(1 << 16, 4, 11);
        let packed = round_trip(&src);
        assert_eq!(packed[0], MODE_CODES);
        assert!(packed.len() <= (1 << 15) + 160, "{}", packed.len());
    }

    /// Above level 4 a level-1 frame decides first (doc/chunked.md 5.3.1): rows that repeat
    /// still go to zstd at the level (its frame, not the probe's), noise keeps its codes (the
    /// same payload as at level 3, which makes no probe), and the probe's threshold is 19/20.
    #[test]
    fn the_level_1_probe_keeps_repeats_for_zstd_and_noise_for_codes() {
        assert!(probe_finds_repeats(950, 1000) && !probe_finds_repeats(951, 1000));
        assert!(probe_finds_repeats(0, 0) && !probe_finds_repeats(1, 1));
        let row = noise(256, 3, 9);
        let rows: Vec<u8> = row.iter().copied().cycle().take(1 << 16).collect();
        let mut packed = Vec::new();
        encode(&rows, 9, &mut packed).unwrap();
        assert_eq!(packed[0], MODE_ZSTD);
        // The frame is the level's (9), not the probe's (1).
        let mut frame = Vec::new();
        super::super::zstd::Zstd
            .compress(&rows, &ELEMENTS, 9, &mut frame)
            .unwrap();
        assert_eq!(&packed[1..], &frame[..]);
        for bits in [4, 8] {
            let src = noise(1 << 16, bits, 11);
            let mut packed = Vec::new();
            encode(&src, 9, &mut packed).unwrap();
            assert_eq!(packed[0], MODE_CODES, "{bits} bits");
            let mut at_3 = Vec::new();
            encode(&src, 3, &mut at_3).unwrap();
            assert_eq!(packed, at_3, "{bits} bits");
            let mut back = vec![0u8; src.len()];
            decode(&packed, &mut back).unwrap();
            assert_eq!(back, src);
        }
    }

    #[test]
    fn hostile_payloads_are_errors_never_panics() {
        let src = noise(5000, 5, 5);
        let rows: Vec<u8> = noise(100, 3, 1).into_iter().cycle().take(5000).collect();
        for base in [round_trip(&src), round_trip(&rows)] {
            let mut dst = vec![0u8; 5000];
            for cut in 0..base.len() {
                assert!(decode(&base[..cut], &mut dst).is_err(), "cut {cut}");
            }
            for i in 0..base.len().min(200) {
                for bit in 0..8 {
                    let mut m = base.clone();
                    m[i] ^= 1 << bit;
                    let _ = decode(&m, &mut dst);
                }
            }
            let mut longer = base.clone();
            longer.push(0);
            assert!(decode(&longer, &mut dst).is_err());
        }
        // An incomplete code (two symbols of 2 bits), a too-long length, an unknown mode and
        // unit kind, and a stream longer than its symbols could need.
        let e = decode(
            &[
                0, 1, 1, 0x22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            &mut [0; 4],
        )
        .unwrap_err();
        assert!(e.contains("Kraft"), "{e}");
        let e = decode(&[0, 1, 1, 0xC1], &mut [0u8; 4]).unwrap_err();
        assert!(e.contains("at most 11"), "{e}");
        // `last` without a code, a nibble past `last`, padding bits that are not 0.
        let e = decode(
            &[
                0, 1, 2, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            &mut [0; 4],
        )
        .unwrap_err();
        assert!(e.contains("highest symbol 2"), "{e}");
        let two = |b0: u8, b1: u8, pad: u8| {
            // Symbols 0 and 1 of 1 bit each; n = 4 is one symbol a stream.
            let mut p = vec![0, 1, 1, b0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0];
            p.extend_from_slice(&[b1, 1, 0, pad]);
            decode(&p, &mut [0u8; 4])
        };
        assert!(two(0x11, 0, 0).is_ok());
        let e = two(0x11, 2, 0).unwrap_err();
        assert!(e.contains("padding"), "{e}");
        let e = two(0x11, 0, 0x10).unwrap_err();
        assert!(e.contains("stream 3: padding"), "{e}");
        let e = decode(&[0, 1, 0, 0x10], &mut [0u8; 4]).unwrap_err();
        assert!(e.contains("highest symbol 0"), "{e}");
        let e = decode(&[0, 1, 2, 0x11, 0x21], &mut [0u8; 4]).unwrap_err();
        assert!(e.contains("high nibble"), "{e}");
        let e = decode(&[2], &mut [0u8; 4]).unwrap_err();
        assert!(e.contains("mode 2"), "{e}");
        let e = decode(&[0, 7], &mut [0u8; 4]).unwrap_err();
        assert!(e.contains("kind 7"), "{e}");
        let e = decode(
            &[
                0, 1, 1, 0x11, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
            ],
            &mut [0; 4],
        )
        .unwrap_err();
        assert!(
            e.contains("stream 0 of 1 symbols: 9 bytes, expected 1 to 2"),
            "{e}"
        );
    }
}
