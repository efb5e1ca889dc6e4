//! The pco codec ([pcodec](https://github.com/pcodec/pcodec)): lossless compression of
//! numeric blocks, which models the numbers (deltas, common multiples, float quantization,
//! dictionaries) and entropy-codes them.
//!
//! A block of `n` numbers of one [`NumKind`] (16-, 32- or 64-bit integers, f16, f32 or f64) is
//! stored as one pco *standalone* file, the format of Python's `pcodec.standalone`
//! (`simple_compress` / `simple_decompress`) and of the `pco` crate's
//! `standalone::simple_compress_into`, written by `pco` 1.1:
//!
//! ```text
//! header   "pco!", standalone version (3), the number type byte (uniform type),
//!          n as a varint hint, pco's format version
//! chunks   each: its number type byte, n - 1 (24 bits), chunk metadata, one page of data
//! footer   a zero byte
//! ```
//!
//! The numbers are the block's elements as values: a big-endian block's elements are
//! converted to native numbers before compressing and back after decompressing, so the stored
//! bytes do not depend on the file's byte order, and any pco reader gets the values. The
//! compression level is pco's, 0 to 12 ([`MAX_LEVEL`]; pco's default is [`DEFAULT_LEVEL`], 8);
//! levels change the search effort, never the format.
//!
//! Decompressing a block checks everything it claims against what the caller expects: the
//! number type in the header and in each chunk, the count of numbers (exactly
//! `dst.len() / width`), and no bytes after the footer. Before pco decodes a chunk, the claims
//! that size pco's buffers are checked against that count (a chunk's count, a dictionary's
//! length, a lookback window), so whatever a block says, the decoder allocates at most about
//! `4 * dst.len()` (a lookback window's buffer, twice the window) plus about 3 MiB (bin and
//! ANS tables, which pco's format bounds: 2^15 bins of each of at most three latent
//! variables). Garbage and truncated blocks are errors in words, never panics.
//!
//! Not pco types, so no [`NumKind`]: 8-bit integers (pco 1.1 has them only behind an opt-in
//! flag its Python package does not expose by default), 128-bit integers, bfloat16, complex
//! numbers (a caller may store them as pairs of floats) and records.
//!
//! ```
//! use rawarray_serde::codec::pco::{self, NumKind};
//! let nums: Vec<u8> = (0..1000i32).flat_map(|i| (i * 3).to_le_bytes()).collect();
//! let mut packed = Vec::new();
//! pco::compress(&nums, NumKind::I32, false, pco::DEFAULT_LEVEL, &mut packed).unwrap();
//! assert!(packed.len() < nums.len() / 10);
//! let mut back = vec![0u8; nums.len()];
//! pco::decompress(&packed, NumKind::I32, false, &mut back).unwrap();
//! assert_eq!(back, nums);
//! // A block of another type or count is refused, in words.
//! let mut wrong = vec![0u8; 4 * 999];
//! assert!(pco::decompress(&packed, NumKind::I32, false, &mut wrong).unwrap_err().contains("999"));
//! ```

use ::pco::data_types::{Number, NumberType};
use ::pco::standalone::{simple_compress_into, DecompressorItem, FileDecompressor};
use ::pco::{ChunkConfig, FULL_BATCH_N};
use half::f16;

use super::words::Word;
use crate::ElType;

/// pco's default compression level.
pub const DEFAULT_LEVEL: i32 = 8;

/// pco's highest compression level (levels are `0..=MAX_LEVEL`).
pub const MAX_LEVEL: i32 = 12;

/// The largest lookback window (in numbers) pco 1.1's encoder writes; a block may claim a
/// window up to twice its count beyond it, never more.
const ENCODER_MAX_WINDOW: u64 = 1 << 15;

/// The number types pco compresses.
///
/// ```
/// use rawarray_serde::codec::pco::NumKind;
/// assert_eq!(NumKind::F16.bytes(), 2);
/// assert_eq!(NumKind::U64.name(), "uint64");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NumKind {
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// IEEE binary16 (`half::f16`).
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl NumKind {
    /// Every kind, in the order of the enum.
    pub const ALL: [NumKind; 9] = [
        NumKind::U16,
        NumKind::I16,
        NumKind::U32,
        NumKind::I32,
        NumKind::U64,
        NumKind::I64,
        NumKind::F16,
        NumKind::F32,
        NumKind::F64,
    ];

    /// Bytes per number: 2, 4 or 8.
    ///
    /// ```
    /// use rawarray_serde::codec::pco::NumKind;
    /// assert_eq!(NumKind::I32.bytes(), 4);
    /// ```
    pub fn bytes(self) -> usize {
        match self {
            NumKind::U16 | NumKind::I16 | NumKind::F16 => 2,
            NumKind::U32 | NumKind::I32 | NumKind::F32 => 4,
            NumKind::U64 | NumKind::I64 | NumKind::F64 => 8,
        }
    }

    /// The numpy name of the type (`uint16`, ..., `float64`), which messages use.
    ///
    /// ```
    /// use rawarray_serde::codec::pco::NumKind;
    /// assert_eq!(NumKind::F16.name(), "float16");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            NumKind::U16 => "uint16",
            NumKind::I16 => "int16",
            NumKind::U32 => "uint32",
            NumKind::I32 => "int32",
            NumKind::U64 => "uint64",
            NumKind::I64 => "int64",
            NumKind::F16 => "float16",
            NumKind::F32 => "float32",
            NumKind::F64 => "float64",
        }
    }

    /// pco's number type of the kind.
    fn number_type(self) -> NumberType {
        match self {
            NumKind::U16 => NumberType::new::<u16>(),
            NumKind::I16 => NumberType::new::<i16>(),
            NumKind::U32 => NumberType::new::<u32>(),
            NumKind::I32 => NumberType::new::<i32>(),
            NumKind::U64 => NumberType::new::<u64>(),
            NumKind::I64 => NumberType::new::<i64>(),
            NumKind::F16 => NumberType::new::<f16>(),
            NumKind::F32 => NumberType::new::<f32>(),
            NumKind::F64 => NumberType::new::<f64>(),
        }
    }
}

/// The [`NumKind`] of a header's eltype code and elbyte, or `None` where pco has no such type
/// (8- and 128-bit integers, bfloat16, complex, records).
///
/// ```
/// use rawarray_serde::codec::pco::{num_kind, NumKind};
/// use rawarray_serde::ElType;
/// assert_eq!(num_kind(ElType::Float.code(), 4), Some(NumKind::F32));
/// assert_eq!(num_kind(ElType::Uint.code(), 2), Some(NumKind::U16));
/// assert_eq!(num_kind(ElType::Int.code(), 1), None);        // int8
/// assert_eq!(num_kind(ElType::BFloat16.code(), 2), None);
/// ```
pub fn num_kind(eltype_code: u64, elbyte: u64) -> Option<NumKind> {
    let int = ElType::Int.code();
    let uint = ElType::Uint.code();
    let float = ElType::Float.code();
    Some(match (eltype_code, elbyte) {
        (c, 2) if c == int => NumKind::I16,
        (c, 4) if c == int => NumKind::I32,
        (c, 8) if c == int => NumKind::I64,
        (c, 2) if c == uint => NumKind::U16,
        (c, 4) if c == uint => NumKind::U32,
        (c, 8) if c == uint => NumKind::U64,
        (c, 2) if c == float => NumKind::F16,
        (c, 4) if c == float => NumKind::F32,
        (c, 8) if c == float => NumKind::F64,
        _ => return None,
    })
}

/// Dispatches `$body` with `$t` the number type of `$kind` and `$u` the unsigned word of its
/// width (which reads and writes its bytes in either byte order).
macro_rules! with_kind {
    ($kind:expr, |$t:ident, $u:ident| $body:expr) => {
        with_kind!(@arms $kind, $t, $u, $body;
            U16 u16 u16, I16 i16 u16, U32 u32 u32, I32 i32 u32, U64 u64 u64, I64 i64 u64,
            F16 f16 u16, F32 f32 u32, F64 f64 u64)
    };
    (@arms $kind:expr, $t:ident, $u:ident, $body:expr; $($k:ident $num:ident $word:ident),+) => {
        match $kind {
            $(NumKind::$k => {
                type $t = $num;
                type $u = $word;
                $body
            })+
        }
    };
}

/// Compresses `src` (whole numbers of `kind` in the given byte order) as one pco standalone
/// file, appended to `out`, at pco's `level` (0 to [`MAX_LEVEL`]).
///
/// Errors, in words: a level out of range, a length that is not a whole number of elements,
/// pco's own refusal.
///
/// ```
/// use rawarray_serde::codec::pco::{self, NumKind};
/// let src: Vec<u8> = (0..500u16).flat_map(|i| (i % 7).to_be_bytes()).collect();
/// let mut out = vec![0xAB];                                   // appended after this byte
/// pco::compress(&src, NumKind::U16, true, 3, &mut out).unwrap();
/// assert_eq!(&out[..5], b"\xABpco!");
/// assert!(pco::compress(&src, NumKind::U16, true, 13, &mut out).unwrap_err().contains("0 to 12"));
/// ```
pub fn compress(
    src: &[u8],
    kind: NumKind,
    big_endian: bool,
    level: i32,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if !(0..=MAX_LEVEL).contains(&level) {
        return Err(format!(
            "pco level {level} is out of range: expected 0 to {MAX_LEVEL} (default {DEFAULT_LEVEL})"
        ));
    }
    let width = kind.bytes();
    if !src.len().is_multiple_of(width) {
        return Err(format!(
            "a pco block of {} holds whole numbers of {width} bytes, found {} bytes",
            kind.name(),
            src.len()
        ));
    }
    let config = ChunkConfig::default().with_compression_level(level as usize);
    with_kind!(kind, |T, U| compress_numbers::<T, U>(
        src, big_endian, &config, out
    ))
}

fn compress_numbers<T: Number + bytemuck::Pod, U: Word>(
    src: &[u8],
    big_endian: bool,
    config: &ChunkConfig,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let native = big_endian == cfg!(target_endian = "big");
    let converted: Vec<T>;
    let nums: &[T] = match bytemuck::try_cast_slice::<u8, T>(src) {
        Ok(nums) if native => nums,
        _ => {
            converted = src
                .chunks_exact(U::BYTES)
                .map(|b| bytemuck::cast::<U, T>(U::read(b, big_endian)))
                .collect();
            &converted
        }
    };
    simple_compress_into(nums, config, out).map_err(|e| format!("pco compression: {e}"))?;
    Ok(())
}

/// Decompresses one pco standalone file into `dst`: exactly `dst.len() / width` numbers of
/// `kind`, written in the given byte order.
///
/// Errors, in words (expected against found): `dst` not a whole number of elements; not pco
/// data, truncated or corrupt data (pco's message); another number type in the header or a
/// chunk; more or fewer numbers than `dst` holds; a chunk whose dictionary or lookback window
/// is larger than its count justifies; bytes after the end. Never panics; allocates at most
/// about `4 * dst.len()` plus 3 MiB (see the [module docs](self)).
///
/// ```
/// use rawarray_serde::codec::pco::{self, NumKind};
/// let src: Vec<u8> = [1.5f64, -2.0, 1e300].iter().flat_map(|x| x.to_le_bytes()).collect();
/// let mut packed = Vec::new();
/// pco::compress(&src, NumKind::F64, false, 8, &mut packed).unwrap();
/// let mut back = [0u8; 24];
/// pco::decompress(&packed, NumKind::F64, false, &mut back).unwrap();
/// assert_eq!(back[..], src[..]);
/// let err = pco::decompress(&packed, NumKind::I64, false, &mut back).unwrap_err();
/// assert!(err.contains("float64") && err.contains("int64"), "{err}");
/// ```
pub fn decompress(
    src: &[u8],
    kind: NumKind,
    big_endian: bool,
    dst: &mut [u8],
) -> Result<(), String> {
    let width = kind.bytes();
    if !dst.len().is_multiple_of(width) {
        return Err(format!(
            "a pco block of {} decodes to whole numbers of {width} bytes, but {} bytes were asked for",
            kind.name(),
            dst.len()
        ));
    }
    with_kind!(kind, |T, U| decompress_numbers::<T, U>(
        src, kind, big_endian, dst
    ))
}

/// The name of a number type byte, for messages.
fn type_name(byte: u8) -> String {
    for kind in NumKind::ALL {
        if kind.number_type() as u8 == byte {
            return kind.name().to_string();
        }
    }
    match NumberType::from_descriminant(byte) {
        Some(t) => format!("{t:?}"),
        None => format!("unknown number type {byte}"),
    }
}

fn decompress_numbers<T: Number + bytemuck::Pod, U: Word>(
    src: &[u8],
    kind: NumKind,
    big_endian: bool,
    dst: &mut [u8],
) -> Result<(), String> {
    let expected = dst.len() / U::BYTES;
    let want = kind.number_type() as u8;
    let (file, mut rest) =
        FileDecompressor::new(src).map_err(|e| format!("not a pco block: {e}"))?;
    let version = file.format_version();
    if version.major != 4 {
        return Err(format!(
            "pco format version {version} is not supported: expected 4.x (pco 1.x)"
        ));
    }
    if let Some(t) = file.uniform_type() {
        if t as u8 != want {
            return Err(format!(
                "the pco block holds {} numbers, expected {}",
                type_name(t as u8),
                kind.name()
            ));
        }
    }
    let native = big_endian == cfg!(target_endian = "big");
    let mut done = 0usize;
    loop {
        match rest.first() {
            None => return Err("the pco block is truncated: its end marker is missing".into()),
            Some(0) => {}
            Some(&b) if b != want => {
                return Err(format!(
                    "a pco chunk holds {} numbers, expected {}",
                    type_name(b),
                    kind.name()
                ))
            }
            Some(_) => check_chunk(rest, 8 * U::BYTES as u32, expected - done, done, expected)?,
        }
        let mut chunk = match file.chunk_decompressor::<T, &[u8]>(rest) {
            Ok(DecompressorItem::Chunk(c)) => c,
            Ok(DecompressorItem::EndOfData(after)) => {
                rest = after;
                break;
            }
            Err(e) => return Err(format!("pco chunk after {done} numbers: {e}")),
        };
        let n = chunk.n();
        // check_chunk read the same count; this guards against any disagreement.
        if n > expected - done {
            return Err(format!(
                "the pco block holds more than {expected} numbers: a chunk of {n} after {done}"
            ));
        }
        let out = &mut dst[done * U::BYTES..(done + n) * U::BYTES];
        match bytemuck::try_cast_slice_mut::<u8, T>(out) {
            Ok(nums) if native => {
                let progress = chunk
                    .read(nums)
                    .map_err(|e| format!("pco data after {done} numbers: {e}"))?;
                if progress.n_processed != n || !progress.finished {
                    return Err(format!(
                        "a pco chunk of {n} numbers decoded {} of them",
                        progress.n_processed
                    ));
                }
            }
            _ => {
                // Misaligned or foreign byte order: batches through a buffer.
                let mut batch = [<T as bytemuck::Zeroable>::zeroed(); FULL_BATCH_N];
                let mut got = 0;
                while got < n {
                    let progress = chunk
                        .read(&mut batch)
                        .map_err(|e| format!("pco data after {} numbers: {e}", done + got))?;
                    let k = progress.n_processed.min(n - got);
                    if k == 0 {
                        return Err(format!("a pco chunk of {n} numbers decoded {got} of them"));
                    }
                    for (x, o) in batch[..k]
                        .iter()
                        .zip(out[got * U::BYTES..].chunks_exact_mut(U::BYTES))
                    {
                        bytemuck::cast::<T, U>(*x).write(o, big_endian);
                    }
                    got += k;
                }
            }
        }
        done += n;
        rest = chunk.into_src();
    }
    if done != expected {
        return Err(format!(
            "the pco block holds {done} numbers, expected {expected}"
        ));
    }
    if !rest.is_empty() {
        return Err(format!(
            "{} bytes follow the end of the pco block",
            rest.len()
        ));
    }
    Ok(())
}

/// Bits of a chunk, least significant bit of each byte first (pco's order), zeros past the end
/// (as pco's reader pads them, so a claim read here is the claim pco reads).
struct Bits<'a> {
    bytes: &'a [u8],
    pos: u64,
}

impl Bits<'_> {
    fn read(&mut self, n: u32) -> u64 {
        let mut v = 0u64;
        for k in 0..u64::from(n) {
            let at = self.pos + k;
            let byte = usize::try_from(at / 8)
                .ok()
                .and_then(|i| self.bytes.get(i))
                .copied()
                .unwrap_or(0);
            v |= u64::from((byte >> (at % 8)) & 1) << k;
        }
        self.pos += u64::from(n);
        v
    }
}

/// Checks the claims of the chunk at the start of `chunk` that size pco's buffers before pco
/// reads it: its count (at most `left`, the numbers `dst` still has room for), a dictionary's
/// length (at most the count) and a lookback window (at most pco's own encoder's largest, or
/// twice the count). The layout (pco 1.x, format 4): the number type byte, `n - 1` in 24 bits,
/// then the chunk metadata: the mode (4 bits) and its parameters, then the delta encoding (4
/// bits) and its parameters.
fn check_chunk(
    chunk: &[u8],
    latent_bits: u32,
    left: usize,
    done: usize,
    expected: usize,
) -> Result<(), String> {
    let mut bits = Bits {
        bytes: chunk,
        pos: 8,
    };
    let n = bits.read(24) + 1;
    if n > left as u64 {
        return Err(format!(
            "the pco block holds more than {expected} numbers: a chunk of {n} after {done}"
        ));
    }
    match bits.read(4) {
        // Classic: no parameters; IntMult, FloatMult: one latent; FloatQuant: k, 8 bits.
        0 => {}
        1 | 2 => bits.pos += u64::from(latent_bits),
        3 => bits.pos += 8,
        4 => {
            let dict = bits.read(25);
            if dict > n {
                return Err(format!(
                    "a pco chunk of {n} numbers claims a dictionary of {dict} values"
                ));
            }
            // Byte-aligned, then the dictionary's values.
            bits.pos = bits.pos.div_ceil(8) * 8 + dict * u64::from(latent_bits);
        }
        // pco refuses the rest itself.
        _ => return Ok(()),
    }
    if bits.read(4) == 2 {
        let window = 1u64 << (1 + bits.read(5));
        if window > ENCODER_MAX_WINDOW.max(2 * n) {
            return Err(format!(
                "a pco chunk of {n} numbers claims a lookback window of {window} (at most {})",
                ENCODER_MAX_WINDOW.max(2 * n)
            ));
        }
    }
    Ok(())
}

/// The `pco` codec (id 3) as a [`BlockCodec`](super::BlockCodec): each block one pco
/// standalone file of the block's numbers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pco;

fn kind_of(el: &super::Elements) -> Result<NumKind, String> {
    num_kind(el.eltype.code(), el.elbyte as u64).ok_or_else(|| {
        format!(
            "pco takes int and uint of 2, 4, 8 bytes and float16/32/64; the elements are {}",
            crate::eltype::type_label(el.eltype, el.elbyte as u64)
        )
    })
}

impl super::BlockCodec for Pco {
    fn max_ratio(&self) -> u64 {
        // A block of one repeated number costs a few bytes whatever its length: blocks are
        // bounded (16 MiB) by the config, so the bound here only refuses the absurd.
        1 << 24
    }
    fn compress(
        &self,
        src: &[u8],
        el: &super::Elements,
        level: i32,
        out: &mut Vec<u8>,
    ) -> crate::Result<()> {
        let kind = kind_of(el).map_err(crate::Error::msg)?;
        compress(src, kind, el.big_endian, level, out).map_err(crate::Error::msg)
    }
    fn decompress(
        &self,
        src: &[u8],
        el: &super::Elements,
        dst: &mut [u8],
    ) -> std::result::Result<(), String> {
        decompress(src, kind_of(el)?, el.big_endian, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::pco::{DeltaSpec, ModeSpec};
    use proptest::prelude::*;

    const KINDS: [NumKind; 9] = NumKind::ALL;

    fn pack(src: &[u8], kind: NumKind, big: bool) -> Vec<u8> {
        let mut out = Vec::new();
        compress(src, kind, big, DEFAULT_LEVEL, &mut out).unwrap();
        out
    }

    fn unpack(packed: &[u8], kind: NumKind, big: bool, len: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0xEE; len];
        decompress(packed, kind, big, &mut out).map(|()| out)
    }

    /// A smooth signal's bytes for any kind (little-endian).
    fn smooth(kind: NumKind, n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let x = (i as f64 * 0.01).sin() * 1000.0;
                match kind {
                    NumKind::U16 => ((x + 1000.0) as u16).to_le_bytes().to_vec(),
                    NumKind::I16 => (x as i16).to_le_bytes().to_vec(),
                    NumKind::U32 => ((x + 1000.0) as u32 * 1001).to_le_bytes().to_vec(),
                    NumKind::I32 => (x as i32 * 1001).to_le_bytes().to_vec(),
                    NumKind::U64 => ((x + 1000.0) as u64 * 1_000_003).to_le_bytes().to_vec(),
                    NumKind::I64 => (x as i64 * 1_000_003).to_le_bytes().to_vec(),
                    NumKind::F16 => f16::from_f64(x / 100.0).to_le_bytes().to_vec(),
                    NumKind::F32 => ((x / 100.0) as f32).to_le_bytes().to_vec(),
                    NumKind::F64 => (x / 100.0).to_le_bytes().to_vec(),
                }
            })
            .collect()
    }

    fn swap_elements(b: &[u8], w: usize) -> Vec<u8> {
        b.chunks(w).flat_map(|c| c.iter().rev().copied()).collect()
    }

    #[test]
    fn num_kind_maps_the_header_types() {
        use crate::ElType::*;
        let cases = [
            (Int, 2, Some(NumKind::I16)),
            (Int, 4, Some(NumKind::I32)),
            (Int, 8, Some(NumKind::I64)),
            (Uint, 2, Some(NumKind::U16)),
            (Uint, 4, Some(NumKind::U32)),
            (Uint, 8, Some(NumKind::U64)),
            (Float, 2, Some(NumKind::F16)),
            (Float, 4, Some(NumKind::F32)),
            (Float, 8, Some(NumKind::F64)),
            (Int, 1, None),
            (Uint, 1, None),
            (Int, 16, None),
            (Uint, 16, None),
            (Float, 16, None),
            (BFloat16, 2, None),
            (Complex, 8, None),
            (Complex, 16, None),
            (User, 4, None),
        ];
        for (t, b, want) in cases {
            assert_eq!(num_kind(t.code(), b), want, "{t:?} {b}");
        }
        assert_eq!(num_kind(99, 4), None);
    }

    #[test]
    fn round_trips_every_kind_in_both_byte_orders() {
        for kind in KINDS {
            let w = kind.bytes();
            for n in [0usize, 1, 2, 255, 256, 257, 3000] {
                let le = smooth(kind, n);
                let be = swap_elements(&le, w);
                let p_le = pack(&le, kind, false);
                let p_be = pack(&be, kind, true);
                // The stored numbers are values: the same whatever the file's byte order.
                assert_eq!(p_le, p_be, "{kind:?} {n}");
                assert_eq!(unpack(&p_le, kind, false, le.len()).unwrap(), le);
                assert_eq!(unpack(&p_le, kind, true, be.len()).unwrap(), be);
                if n == 3000 {
                    assert!(p_le.len() < le.len() / 2, "{kind:?}: {}", p_le.len());
                }
            }
        }
    }

    #[test]
    fn misaligned_buffers_take_the_batch_path() {
        let le = smooth(NumKind::F32, 1000);
        let packed = pack(&le, NumKind::F32, false);
        let mut buf = vec![0u8; le.len() + 1];
        decompress(&packed, NumKind::F32, false, &mut buf[1..]).unwrap();
        assert_eq!(buf[1..], le[..]);
        let mut src = vec![0u8; le.len() + 1];
        src[1..].copy_from_slice(&le);
        assert_eq!(pack(&src[1..], NumKind::F32, false), packed);
    }

    #[test]
    fn the_standalone_layout_is_as_documented() {
        let src = smooth(NumKind::I32, 1000);
        let p = pack(&src, NumKind::I32, false);
        assert_eq!(&p[..4], b"pco!");
        assert_eq!(p[4], 3, "standalone version");
        assert_eq!(p[5], NumberType::I32 as u8, "uniform type");
        assert_eq!(*p.last().unwrap(), 0, "footer");
        // pco's own reader agrees on the numbers.
        let theirs: Vec<i32> = ::pco::standalone::simple_decompress(&p).unwrap();
        assert_eq!(bytemuck::cast_slice::<i32, u8>(&theirs), &src[..]);
    }

    #[test]
    fn levels_are_pcos_range() {
        let src = smooth(NumKind::U32, 2000);
        for level in 0..=MAX_LEVEL {
            let mut out = Vec::new();
            compress(&src, NumKind::U32, false, level, &mut out).unwrap();
            assert_eq!(unpack(&out, NumKind::U32, false, src.len()).unwrap(), src);
        }
        for level in [-1, MAX_LEVEL + 1, i32::MAX, i32::MIN] {
            let err = compress(&src, NumKind::U32, false, level, &mut Vec::new()).unwrap_err();
            assert!(
                err.contains(&level.to_string()) && err.contains("0 to 12"),
                "{err}"
            );
        }
        // MAX_LEVEL is pco's: it refuses one more.
        let config = ChunkConfig::default().with_compression_level(MAX_LEVEL as usize + 1);
        assert!(::pco::standalone::simple_compress(&[1u32, 2], &config).is_err());
        assert_eq!(DEFAULT_LEVEL as usize, ::pco::DEFAULT_COMPRESSION_LEVEL);
    }

    #[test]
    fn partial_elements_are_refused() {
        let err = compress(&[1, 2, 3], NumKind::U16, false, 8, &mut Vec::new()).unwrap_err();
        assert!(err.contains("3 bytes"), "{err}");
        let p = pack(&[1, 2, 3, 4], NumKind::U16, false);
        let err = unpack(&p, NumKind::U16, false, 3).unwrap_err();
        assert!(err.contains("3 bytes"), "{err}");
    }

    #[test]
    fn wrong_type_or_count_is_refused_in_words() {
        let src = smooth(NumKind::F32, 500);
        let p = pack(&src, NumKind::F32, false);
        let err = unpack(&p, NumKind::U32, false, src.len()).unwrap_err();
        assert!(err.contains("float32") && err.contains("uint32"), "{err}");
        let err = unpack(&p, NumKind::F64, false, src.len()).unwrap_err();
        assert!(err.contains("float32") && err.contains("float64"), "{err}");
        let err = unpack(&p, NumKind::F32, false, src.len() - 4).unwrap_err();
        assert!(err.contains("499") && err.contains("500"), "{err}");
        let err = unpack(&p, NumKind::F32, false, src.len() + 4).unwrap_err();
        assert!(err.contains("500") && err.contains("501"), "{err}");
        // A file without a uniform type (pco's dyn API) is checked chunk by chunk.
        let mut untyped = p.clone();
        untyped[5] = 0;
        assert_eq!(
            unpack(&untyped, NumKind::F32, false, src.len()).unwrap(),
            src
        );
        let err = unpack(&untyped, NumKind::I32, false, src.len()).unwrap_err();
        assert!(err.contains("a pco chunk holds float32"), "{err}");
    }

    #[test]
    fn trailing_bytes_truncation_and_garbage_are_errors() {
        let src = smooth(NumKind::I64, 700);
        let p = pack(&src, NumKind::I64, false);
        let mut extra = p.clone();
        extra.push(0);
        let err = unpack(&extra, NumKind::I64, false, src.len()).unwrap_err();
        assert!(err.contains("1 bytes follow"), "{err}");
        for cut in 0..p.len() {
            assert!(
                unpack(&p[..cut], NumKind::I64, false, src.len()).is_err(),
                "truncated to {cut} of {}",
                p.len()
            );
        }
        let err = unpack(b"not pco at all", NumKind::I64, false, 8).unwrap_err();
        assert!(err.contains("not a pco block"), "{err}");
    }

    /// Chunks written with a chosen mode and delta, through pco's own API.
    fn pack_with(nums: &[u64], mode: ModeSpec, delta: DeltaSpec) -> Vec<u8> {
        let config = ChunkConfig::default()
            .with_mode_spec(mode)
            .with_delta_spec(delta);
        let mut out = Vec::new();
        simple_compress_into(nums, &config, &mut out).unwrap();
        out
    }

    /// The offset of the first chunk: the header's length (magic, version, type, varint hint,
    /// format version), found as the byte after which the first chunk's type byte sits.
    fn first_chunk(p: &[u8]) -> usize {
        let (_, rest) = FileDecompressor::new(p).unwrap();
        p.len() - rest.len()
    }

    #[test]
    fn claims_that_size_pcos_buffers_are_checked_first() {
        // A dictionary: few distinct values.
        let vals = [7u64, 1 << 40, 12345, u64::MAX - 3];
        let nums: Vec<u64> = (0..1000).map(|i| vals[(i * 7 + i / 13) % 4]).collect();
        let raw: &[u8] = bytemuck::cast_slice(&nums);
        let p = pack_with(&nums, ModeSpec::TryDict, DeltaSpec::NoOp);
        let c = first_chunk(&p);
        let mut bits = Bits {
            bytes: &p[c..],
            pos: 8,
        };
        assert_eq!(bits.read(24), 999, "n - 1");
        assert_eq!(bits.read(4), 4, "dict mode");
        assert_eq!(bits.read(25), 4, "dictionary length");
        assert_eq!(unpack(&p, NumKind::U64, false, raw.len()).unwrap(), raw);
        // Claim a dictionary of 2^25 - 1 values: refused before pco allocates 256 MiB.
        let mut hostile = p.clone();
        hostile[c + 4] |= 0xF0;
        hostile[c + 5] = 0xFF;
        hostile[c + 6] = 0xFF;
        hostile[c + 7] |= 0x1F;
        let err = unpack(&hostile, NumKind::U64, false, raw.len()).unwrap_err();
        assert!(err.contains("dictionary of 33554431"), "{err}");

        // A lookback window: a repeating pattern.
        let nums: Vec<u64> = (0..5000u64)
            .map(|i| ((i % 97) * 1_000_003) ^ (i % 89))
            .collect();
        let raw: &[u8] = bytemuck::cast_slice(&nums);
        let p = pack_with(&nums, ModeSpec::Classic, DeltaSpec::TryLookback);
        let c = first_chunk(&p);
        let mut bits = Bits {
            bytes: &p[c..],
            pos: 8,
        };
        assert_eq!(bits.read(24), 4999);
        assert_eq!(bits.read(4), 0, "classic mode");
        assert_eq!(bits.read(4), 2, "lookback delta");
        let window_at = bits.pos;
        let window = 1u64 << (1 + bits.read(5));
        assert_eq!(
            window, 8192,
            "the encoder's window: the count rounded up to 2^k"
        );
        assert_eq!(unpack(&p, NumKind::U64, false, raw.len()).unwrap(), raw);
        // Claim a window of 2^24: refused.
        let mut hostile = p.clone();
        for k in 0..5 {
            let at = window_at + k;
            let byte = c + (at / 8) as usize;
            if (23 >> k) & 1 == 1 {
                hostile[byte] |= 1 << (at % 8);
            } else {
                hostile[byte] &= !(1 << (at % 8));
            }
        }
        let err = unpack(&hostile, NumKind::U64, false, raw.len()).unwrap_err();
        assert!(err.contains("lookback window of 16777216"), "{err}");

        // A count larger than the block's: refused before the chunk is read.
        let p = pack(&smooth(NumKind::U16, 300), NumKind::U16, false);
        let c = first_chunk(&p);
        let mut hostile = p.clone();
        hostile[c + 1..c + 4].copy_from_slice(&[0xFF, 0xFF, 0xFF]);
        let err = unpack(&hostile, NumKind::U16, false, 600).unwrap_err();
        assert!(err.contains("a chunk of 16777216 after 0"), "{err}");
    }

    proptest! {
        #[test]
        fn random_numbers_round_trip(
            ki in 0usize..9,
            raw in proptest::collection::vec(any::<u8>(), 0..2000),
            big in any::<bool>(),
            level in 0i32..=12,
        ) {
            let kind = KINDS[ki];
            let raw = &raw[..raw.len() / kind.bytes() * kind.bytes()];
            let mut p = Vec::new();
            compress(raw, kind, big, level, &mut p).unwrap();
            // Floats round-trip bit for bit, NaN payloads included.
            prop_assert_eq!(unpack(&p, kind, big, raw.len()).unwrap(), raw.to_vec());
        }

        #[test]
        fn garbage_and_corruption_never_panic(
            ki in 0usize..9,
            n in 0usize..600,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
            len in 0usize..5000,
        ) {
            let kind = KINDS[ki];
            let mut p = pack(&smooth(kind, n), kind, false);
            for (at, x) in flips {
                let i = at % p.len();
                p[i] ^= x;
            }
            p.truncate(p.len() - cut % 3);
            // Any outcome but a panic; a success decodes exactly the asked-for length.
            let len = len / kind.bytes() * kind.bytes();
            if let Ok(out) = unpack(&p, kind, false, len) {
                prop_assert_eq!(out.len(), len);
            }
            let _ = unpack(&p[..p.len().min(cut % 64)], kind, true, len);
        }
    }
}
