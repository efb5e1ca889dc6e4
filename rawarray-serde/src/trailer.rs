//! The metadata trailer: parameters, units and provenance stored with the data, and the record
//! schema, in the bytes after the data section that readers of `size` bytes never look at. The
//! block's layout is documented on [`Trailer`].

use std::fs::File;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::header::{le_u64, Header};
use crate::io::ReadAt;
use crate::layout::Layout;

/// The first and last eight bytes of a trailer block.
pub const TRAILER_TAG: [u8; 8] = *b"RATRAILR";

/// Bytes of a trailer block's frame on each side of its JSON: tag, len, at, crc.
pub const TRAILER_FRAME: usize = 28;

/// JSON longer than this is not believed: a damaged `len` must not make us read gigabytes.
const MAX_JSON: u64 = 64 << 20;

/// Parameters and schema stored after the data: the contents of a trailer block.
///
/// `params` is whatever JSON the user stores (parameters, units, provenance); `schema` is the
/// layout of one element ([`Element::layout`]); `numpy_descr` is
/// [`Layout::numpy_descr_json`] of the schema, so numpy can build the dtype without Rust.
///
/// ```
/// use rawarray_serde::{DynArray, RawArray, Trailer};
/// let t = Trailer::for_element::<[f64; 3]>(serde_json::json!({"dt": 0.01, "units": "m"})).unwrap();
/// let mut a = DynArray::from_typed(&RawArray::from_vec(vec![[1.0, 2.0, 3.0]]));
/// a.set_trailer(&t);
/// let bytes = a.to_bytes().unwrap();
/// assert_eq!(Trailer::from_file_bytes(&bytes).unwrap(), Some(t.clone()));
/// assert_eq!(t.params["dt"], 0.01);
/// assert_eq!(t.numpy_descr, Some(serde_json::json!(["<f8", [3]])));
/// ```
///
/// # The block on disk
///
/// The trailer is one JSON document framed so that it can be found from either end, in O(1):
/// forward at the data end (`header length + size`), and backward from the end of the file.
///
/// | bytes | field | meaning |
/// |---|---|---|
/// | 8 | tag | [`TRAILER_TAG`], `b"RATRAILR"` |
/// | 8 | len | bytes of JSON, `u64` |
/// | 8 | at | the block's own file offset when it sits at the data end; 0 for the spare copy at the end of the file |
/// | 4 | crc | CRC-32 (IEEE, as `zlib.crc32`) of `len`, `at` (16 bytes) then the JSON |
/// | len | JSON | `{"version":1,"params":...,"schema":...,"numpy_descr":...}`, then any further keys |
/// | 4 | crc | the same CRC |
/// | 8 | at | the same `at` |
/// | 8 | len | the same `len` |
/// | 8 | tag | [`TRAILER_TAG`] |
///
/// A block is [`TRAILER_FRAME`] bytes before and after its JSON. Both frames must agree and the
/// CRC must match, so a block half overwritten by a crash is recognised as damaged, never read.
///
/// `at` tells a copy written at the data end (the *forward* copy) from the spare copy the record
/// writer keeps at the end of the file: [`recover`](crate::recover) extends a header only over a
/// forward block whose `at` is its own offset, so a spare copy that happens to sit at a record
/// boundary after a torn flush is never mistaken for the end of complete records.
///
/// numpy needs no Rust to read it: the last 28 bytes give `len`, the JSON precedes them, and
/// `numpy_descr` becomes the record dtype once its lists are made tuples (see
/// `tests/python/read_simulation.py`).
///
/// # Forward compatibility
///
/// A later version may add keys. This version reads a trailer of any `version` from 1 up and
/// keeps the keys it does not know in [`Trailer::extra`], untouched, so that every rewrite
/// through this crate or `ra` (reshape, compress, record appends, `recover`) writes them back.
/// A key whose meaning a reader must understand to use the file is named in `required`: a
/// reader refuses a trailer whose `required` names a key it does not know
/// ([`Trailer::KNOWN_KEYS`]), with an error naming the key.
///
/// ```
/// use rawarray_serde::Trailer;
/// let later = br#"{"version":7,"params":{"dt":0.5},"schema":null,"numpy_descr":null,"units":"SI"}"#;
/// let t = Trailer::from_json(later).unwrap();
/// assert_eq!((t.version, &t.params["dt"], &t.extra["units"]), (7, &serde_json::json!(0.5), &serde_json::json!("SI")));
/// assert_eq!(t.to_json(), later.to_vec()); // written back as it was
///
/// let must = br#"{"version":2,"params":null,"required":["chunks"],"chunks":[64]}"#;
/// let err = Trailer::from_json(must).unwrap_err();
/// assert!(err.to_string().contains("\"chunks\""), "{err}");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trailer {
    /// The trailer format version: [`Trailer::VERSION`] for a trailer this crate makes; a
    /// trailer read from a file keeps its own, which may be higher (see above).
    pub version: u32,
    /// The user's JSON: parameters, units, provenance. `null` if none.
    #[serde(default)]
    pub params: serde_json::Value,
    /// The layout of one element, if known.
    #[serde(default)]
    pub schema: Option<Layout>,
    /// The numpy dtype of one element as JSON ([`Layout::numpy_descr_json`] of the schema),
    /// with logical types as they are stored (a `bool` is `|u1`): the dtype every reader of
    /// trailer version 1 computes from the schema, so that one that predates the marker still
    /// finds the block consistent. The logical dtype (`|b1`) is the schema's.
    #[serde(default)]
    pub numpy_descr: Option<serde_json::Value>,
    /// The keys a reader must understand to use the file; written only when not empty. Every
    /// key named must be one of [`Trailer::KNOWN_KEYS`] for this version to read the trailer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
    /// The keys this version does not know, as they were read: kept on every rewrite, never
    /// interpreted. A known key put here is not written (the field of that name is).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Trailer {
    /// The version this crate writes. It reads every version from 1 up (see
    /// [forward compatibility](Trailer#forward-compatibility)).
    pub const VERSION: u32 = 1;

    /// The top-level keys this version understands: a trailer whose `required` names any other
    /// is refused.
    pub const KNOWN_KEYS: &'static [&'static str] =
        &["version", "params", "schema", "numpy_descr", "required"];

    /// A trailer holding `params` and no schema.
    ///
    /// ```
    /// use rawarray_serde::Trailer;
    /// #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    /// struct Params { dt: f64, steps: u32 }
    /// let t = Trailer::new(&Params { dt: 0.5, steps: 10 }).unwrap();
    /// assert_eq!(t.params_as::<Params>().unwrap(), Params { dt: 0.5, steps: 10 });
    /// ```
    pub fn new(params: impl Serialize) -> Result<Trailer> {
        Ok(Trailer {
            version: Trailer::VERSION,
            params: serde_json::to_value(params).map_err(Error::msg)?,
            schema: None,
            numpy_descr: None,
            required: Vec::new(),
            extra: serde_json::Map::new(),
        })
    }

    /// A trailer holding `params` and the schema of `T`.
    pub fn for_element<T: Element>(params: impl Serialize) -> Result<Trailer> {
        Ok(Trailer::new(params)?.with_schema(T::layout()))
    }

    /// The same trailer with `schema` and its numpy dtype.
    #[must_use]
    pub fn with_schema(mut self, schema: Layout) -> Trailer {
        self.numpy_descr = Some(schema.without_logical().numpy_descr_json());
        self.schema = Some(schema);
        self
    }

    /// The params as a Rust value.
    pub fn params_as<P: DeserializeOwned>(&self) -> Result<P> {
        P::deserialize(&self.params).map_err(Error::msg)
    }

    /// The JSON document of the block.
    pub fn to_json(&self) -> Vec<u8> {
        let json = if self
            .extra
            .keys()
            .any(|k| Trailer::KNOWN_KEYS.contains(&k.as_str()))
        {
            // A known key in `extra` would be written twice, and the document then refused.
            let mut clean = self.clone();
            clean
                .extra
                .retain(|k, _| !Trailer::KNOWN_KEYS.contains(&k.as_str()));
            serde_json::to_vec(&clean)
        } else {
            serde_json::to_vec(self)
        };
        json.expect("a JSON value and a layout always serialize")
    }

    /// The trailer in a block's JSON document, checked as every trailer read from a file is:
    /// a `version` of at least 1, every key in `required` known, a valid schema whose
    /// `numpy_descr` (when both are there) is its dtype.
    ///
    /// ```
    /// use rawarray_serde::Trailer;
    /// let t = Trailer::new(serde_json::json!({"n": 1})).unwrap();
    /// assert_eq!(Trailer::from_json(&t.to_json()).unwrap(), t);
    /// assert!(Trailer::from_json(br#"{"version":0}"#).is_err());
    /// ```
    pub fn from_json(json: &[u8]) -> Result<Trailer> {
        let trailer: Trailer =
            serde_json::from_slice(json).map_err(|e| ErrorKind::Trailer(format!("JSON: {e}")))?;
        if trailer.version == 0 {
            return Err(ErrorKind::Trailer(
                "version 0 is not a trailer version (versions start at 1)".into(),
            )
            .into());
        }
        if let Some(key) = trailer
            .required
            .iter()
            .find(|k| !Trailer::KNOWN_KEYS.contains(&k.as_str()))
        {
            return Err(ErrorKind::Trailer(format!(
                "it requires the key \"{key}\" (version {}), which this version of rawarray \
                 does not understand (it reads trailer version {} and the keys {:?})",
                trailer.version,
                Trailer::VERSION,
                Trailer::KNOWN_KEYS
            ))
            .into());
        }
        check_schema(&trailer)?;
        Ok(trailer)
    }

    /// The trailer block, for the file offset `at` (see the module docs; 0 for a spare copy).
    ///
    /// ```
    /// use rawarray_serde::{Trailer};
    /// use rawarray_serde::trailer::TRAILER_FRAME;
    /// use rawarray_serde::trailer::TRAILER_TAG;
    /// let t = Trailer::new(serde_json::json!({"n": 1})).unwrap();
    /// let block = t.encode_block(72);
    /// let json = t.to_json();
    /// assert_eq!(block.len(), 2 * TRAILER_FRAME + json.len());
    /// assert_eq!(&block[..8], &TRAILER_TAG);
    /// assert_eq!(&block[block.len() - 8..], &TRAILER_TAG);
    /// assert_eq!(&block[TRAILER_FRAME..TRAILER_FRAME + json.len()], &json[..]);
    /// assert_eq!(Trailer::from_trailing_bytes(&block).unwrap(), Some(t));
    /// ```
    pub fn encode_block(&self, at: u64) -> Vec<u8> {
        let json = self.to_json();
        let mut out = Vec::with_capacity(block_len(json.len()));
        encode_block_into(&json, at, &mut out);
        out
    }

    /// The trailer in the bytes after a data section, or `None` if they hold none.
    ///
    /// Looks backward from the end first (the spare copy of a file being appended to), then
    /// forward at the start. A block whose frames or CRC do not match is damaged: it is skipped
    /// if the other copy is good, and is an error if it is all there is.
    pub fn from_trailing_bytes(trailing: &[u8]) -> Result<Option<Trailer>> {
        locate(trailing, 0, trailing.len() as u64).into_result()
    }

    /// The trailer of a whole `.ra` file's bytes, or `None` if it has none.
    pub fn from_file_bytes(file: &[u8]) -> Result<Option<Trailer>> {
        // Where the data section ends is the header's `size` for every layout, chunked too:
        // the trailer is found without decoding the data.
        let header = Header::decode_any(file)?;
        header.check_input_len(file.len() as u64)?;
        Trailer::from_trailing_bytes(&file[data_end(&header) as usize..])
    }

    /// The trailer of a `.ra` file, reading only its header and the trailer block: O(1) in the
    /// file's size.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Option<Trailer>> {
        crate::fileio::reading(path.as_ref(), |path| {
            Trailer::read_open_file(&File::open(path)?)
        })
    }

    /// [`Trailer::read_file`] of a file already open: its header and trailer block are read
    /// from that descriptor (its inode), whatever its path names by then, so that a caller
    /// holding one descriptor never mixes one file's header with another's trailer.
    ///
    /// ```
    /// use rawarray_serde::{DynArray, RawArray, Trailer};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.ra");
    /// let with = |params: &str| {
    ///     let mut a = DynArray::from_typed(&RawArray::from_vec(vec![1u8, 2]));
    ///     a.set_trailer(&Trailer::new(params).unwrap());
    ///     a
    /// };
    /// with("old").write_file(&path).unwrap();
    /// let file = std::fs::File::open(&path).unwrap();
    /// // A new file renamed over the path does not change what the open file holds.
    /// with("new").write_file(&path).unwrap();
    /// assert_eq!(Trailer::read_open_file(&file).unwrap().unwrap().params, "old");
    /// ```
    pub fn read_open_file(file: &File) -> Result<Option<Trailer>> {
        let header = crate::fileio::stable_header_any(file)?;
        let len = file.metadata()?.len();
        header.check_input_len(len)?;
        locate(file, data_end(&header), len).into_result()
    }
}

/// The bytes after a data section as a [`DynArray`](crate::DynArray) keeps them, and the
/// trailer they hold, decoded once, on first use: every reader then answers the same way,
/// `trailer() -> Option<&Trailer>` and `trailer_error() -> Option<&str>`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trailing {
    pub bytes: Vec<u8>,
    decoded: std::sync::OnceLock<std::result::Result<Option<Trailer>, String>>,
}

impl Trailing {
    pub fn new(bytes: Vec<u8>) -> Trailing {
        Trailing {
            bytes,
            decoded: std::sync::OnceLock::new(),
        }
    }

    fn decoded(&self) -> &std::result::Result<Option<Trailer>, String> {
        self.decoded
            .get_or_init(|| Trailer::from_trailing_bytes(&self.bytes).map_err(|e| e.to_string()))
    }

    /// The trailer, `None` if there is none or it is damaged.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.decoded().as_ref().ok()?.as_ref()
    }

    /// Why the bytes look like a trailer but cannot be read, if so.
    pub fn error(&self) -> Option<&str> {
        self.decoded().as_ref().err().map(String::as_str)
    }
}

impl PartialEq for Trailing {
    fn eq(&self, other: &Trailing) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for Trailing {}

/// Bytes of a block holding `json_len` bytes of JSON.
pub(crate) fn block_len(json_len: usize) -> usize {
    json_len + 2 * TRAILER_FRAME
}

/// Where the data section of a file with this header ends (its stored size, compressed or not).
pub(crate) fn data_end(header: &Header) -> u64 {
    // A hostile `size` near 2^64 saturates: an end past any file, refused as truncated.
    (header.encoded_len() as u64).saturating_add(header.size)
}

/// Trailing bytes moved from a data section ending at `old_end` to one ending at `new_end`
/// (a rewrite that compressed or decompressed the data): a forward block at their start, whose
/// `at` was `old_end`, gets `at = new_end` and its CRC again, its JSON byte for byte; anything
/// else (no block, a spare copy, a damaged one, volatile bytes after it) is kept as it was.
/// `None` when nothing changes.
pub(crate) fn retarget(trailing: &[u8], old_end: u64, new_end: u64) -> Option<Vec<u8>> {
    if old_end == new_end {
        return None;
    }
    let block = probe_forward(trailing, 0, trailing.len() as u64).valid()?;
    if block.at != old_end {
        return None;
    }
    let len = block.len as usize;
    let json = &trailing[TRAILER_FRAME..len - TRAILER_FRAME];
    let mut out = Vec::with_capacity(trailing.len());
    encode_block_into(json, new_end, &mut out);
    out.extend_from_slice(&trailing[len..]);
    Some(out)
}

/// Appends the block framing `json` for offset `at` to `out`.
pub(crate) fn encode_block_into(json: &[u8], at: u64, out: &mut Vec<u8>) {
    let len = json.len() as u64;
    let crc = checksum(len, at, json).to_le_bytes();
    out.extend_from_slice(&TRAILER_TAG);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&crc);
    out.extend_from_slice(json);
    out.extend_from_slice(&crc);
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&TRAILER_TAG);
}

fn checksum(len: u64, at: u64, json: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(&at.to_le_bytes());
    h.update(json);
    h.finalize()
}

/// A valid trailer block and where it is.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    /// Offset of its first byte.
    pub start: u64,
    /// Its bytes in all.
    pub len: u64,
    /// Its `at` field.
    pub at: u64,
    /// Its JSON, decoded.
    pub trailer: Trailer,
}

impl Block {
    /// Offset after its last byte.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }

    /// Whether it is a forward copy: `at` is its own offset.
    pub fn is_forward(&self) -> bool {
        self.at == self.start
    }
}

/// What is at a place a block may be.
#[derive(Clone, Debug)]
pub(crate) enum Probe {
    /// No tag there: no block.
    Absent,
    /// A tag, but not a good block: torn, overwritten or corrupt (why, in words).
    Damaged(String),
    /// A good block.
    Valid(Block),
}

impl Probe {
    /// The block, if valid.
    pub fn valid(self) -> Option<Block> {
        match self {
            Probe::Valid(b) => Some(b),
            _ => None,
        }
    }

    /// The trailer, `None` if absent, an error if damaged.
    pub fn into_result(self) -> Result<Option<Trailer>> {
        match self {
            Probe::Absent => Ok(None),
            Probe::Damaged(why) => Err(ErrorKind::Trailer(why).into()),
            Probe::Valid(b) => Ok(Some(b.trailer)),
        }
    }

    /// This probe if valid, else `other`'s, keeping damage over absence so it gets reported.
    fn or(self, other: impl FnOnce() -> Probe) -> Probe {
        match self {
            Probe::Valid(_) => self,
            Probe::Absent => other(),
            Probe::Damaged(_) => match other() {
                Probe::Absent => self,
                found => found,
            },
        }
    }
}

/// The trailer of a data section ending at `data_end` in a source of `len` bytes: backward from
/// `len` first, then forward at `data_end`, then backward again. Both look-ups are O(1). The
/// second backward look covers a writer that finished growing the spare copy while we looked
/// forward (see `records`): a reader racing a writer still finds one good copy.
pub(crate) fn locate<S: ReadAt + ?Sized>(src: &S, data_end: u64, len: u64) -> Probe {
    probe_backward(src, data_end, len)
        .or(|| probe_forward(src, data_end, len))
        .or(|| probe_backward(src, data_end, len))
}

/// The block that ends at `end`, if it starts at or after `min_start`.
pub(crate) fn probe_backward<S: ReadAt + ?Sized>(src: &S, min_start: u64, end: u64) -> Probe {
    let frame_start = match end.checked_sub(TRAILER_FRAME as u64) {
        Some(at) if at >= min_start => at,
        // Too short for a frame: a tag in the last 8 bytes (after the data) is a cut block.
        _ => {
            let tag_at = end.checked_sub(8).filter(|&at| at >= min_start);
            return cut_short(src, tag_at, format!("the block ending at byte {end}"));
        }
    };
    let mut tail = [0u8; TRAILER_FRAME];
    if src.read_exact_at(&mut tail, frame_start).is_err() {
        // The file shrank under us: nothing to find there any more.
        return Probe::Absent;
    }
    if tail[20..] != TRAILER_TAG {
        return Probe::Absent;
    }
    let json_len = le_u64(&tail[12..20]);
    match total_len(json_len) {
        Some(total) if total <= end - min_start => read_block(src, end - total, total),
        _ => Probe::Damaged(format!(
            "the block ending at byte {end} claims {json_len} bytes of JSON, more than fit after the data"
        )),
    }
}

/// The block that starts at `start`, if it ends by `end`.
pub(crate) fn probe_forward<S: ReadAt + ?Sized>(src: &S, start: u64, end: u64) -> Probe {
    if end.saturating_sub(start) < 2 * TRAILER_FRAME as u64 {
        // Too short for a block: a tag at `start` is a cut one, not the absence of one.
        let tag_at = (end.saturating_sub(start) >= 8).then_some(start);
        return cut_short(src, tag_at, format!("the block at byte {start}"));
    }
    let mut head = [0u8; TRAILER_FRAME];
    if src.read_exact_at(&mut head, start).is_err() {
        return Probe::Absent;
    }
    if head[..8] != TRAILER_TAG {
        return Probe::Absent;
    }
    let json_len = le_u64(&head[8..16]);
    match total_len(json_len) {
        Some(total) if total <= end - start => read_block(src, start, total),
        _ => Probe::Damaged(format!(
            "the block at byte {start} claims {json_len} bytes of JSON, more than the file holds"
        )),
    }
}

/// Damaged if the 8 bytes at `tag_at` are the tag (a block with no room for its frames),
/// absent otherwise; `block` names the place in the message.
fn cut_short<S: ReadAt + ?Sized>(src: &S, tag_at: Option<u64>, block: String) -> Probe {
    let mut tag = [0u8; 8];
    match tag_at {
        Some(t) if src.read_exact_at(&mut tag, t).is_ok() && tag == TRAILER_TAG => {
            Probe::Damaged(format!("{block} is cut short: no room for its frames"))
        }
        _ => Probe::Absent,
    }
}

fn total_len(json_len: u64) -> Option<u64> {
    (json_len <= MAX_JSON).then(|| json_len + 2 * TRAILER_FRAME as u64)
}

fn read_block<S: ReadAt + ?Sized>(src: &S, start: u64, total: u64) -> Probe {
    let mut bytes = vec![0u8; total as usize];
    if src.read_exact_at(&mut bytes, start).is_err() {
        return Probe::Damaged(format!("the block at byte {start} is cut short"));
    }
    match check_block(&bytes) {
        Ok((at, trailer)) => Probe::Valid(Block {
            start,
            len: total,
            at,
            trailer,
        }),
        Err(why) => Probe::Damaged(format!("the block at byte {start}: {why}")),
    }
}

/// Checks a whole block's framing and CRC and decodes its JSON; returns its `at` and trailer.
fn check_block(bytes: &[u8]) -> std::result::Result<(u64, Trailer), String> {
    let f = TRAILER_FRAME;
    let (head, rest) = bytes.split_at(f);
    let (json, tail) = rest.split_at(rest.len() - f);
    let head_fields = (le_u64(&head[8..16]), le_u64(&head[16..24]), &head[24..28]);
    let tail_fields = (le_u64(&tail[12..20]), le_u64(&tail[4..12]), &tail[..4]);
    if head[..8] != TRAILER_TAG || tail[20..] != TRAILER_TAG || head_fields != tail_fields {
        return Err("its two frames disagree (torn or overwritten)".into());
    }
    let (len, at, crc) = head_fields;
    let want = checksum(len, at, json);
    if crc != want.to_le_bytes() {
        return Err(format!(
            "CRC mismatch: stored {:#010x}, computed {want:#010x}",
            u32::from_le_bytes(crc.try_into().expect("4 bytes"))
        ));
    }
    let trailer = Trailer::from_json(json).map_err(|e| match e.into_kind() {
        ErrorKind::Trailer(why) => why,
        kind => crate::Error::from(kind).to_string(),
    })?;
    Ok((at, trailer))
}

/// A trailer's schema must be a valid layout ([`Layout::validate`]) and its `numpy_descr`, when
/// both are there, the dtype of that layout: otherwise the metadata is damaged.
fn check_schema(trailer: &Trailer) -> Result<()> {
    let Some(schema) = &trailer.schema else {
        return Ok(());
    };
    schema.validate()?;
    match &trailer.numpy_descr {
        // The stored dtype, or the logical one a writer may have put there instead.
        Some(descr)
            if *descr != schema.without_logical().numpy_descr_json()
                && *descr != schema.numpy_descr_json() =>
        {
            Err(ErrorKind::BadSchema(format!(
                "{}: its numpy_descr {descr} is not its dtype {}",
                schema.numpy_descr(),
                schema.without_logical().numpy_descr_json()
            ))
            .into())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u64) -> Trailer {
        Trailer::new(serde_json::json!({ "n": n })).unwrap()
    }

    #[test]
    fn a_torn_block_is_damaged_and_the_other_copy_wins() {
        let mut bytes = t(1).encode_block(100);
        let first = bytes.len();
        bytes.extend_from_slice(&[0u8; 10]);
        bytes.extend_from_slice(&t(2).encode_block(0));
        // Both good: the copy at the end is preferred.
        assert_eq!(Trailer::from_trailing_bytes(&bytes).unwrap(), Some(t(2)));
        // The end copy torn: the forward one.
        let n = bytes.len();
        bytes[n - 40] ^= 1;
        assert_eq!(Trailer::from_trailing_bytes(&bytes).unwrap(), Some(t(1)));
        // Both torn: an error naming the damage.
        bytes[first - 40] ^= 1;
        let err = Trailer::from_trailing_bytes(&bytes).unwrap_err();
        assert!(err.to_string().contains("CRC mismatch"), "{err}");
    }

    #[test]
    fn a_block_cut_before_its_frames_is_damaged_not_absent() {
        let block = t(1).encode_block(0);
        for k in 0..block.len() {
            let got = Trailer::from_trailing_bytes(&block[..k]);
            if k < 8 {
                assert_eq!(got.unwrap(), None, "{k} bytes: no tag, no block");
            } else {
                let err = got.unwrap_err().to_string();
                assert!(
                    err.contains("cut short") || err.contains("claims"),
                    "{k}: {err}"
                );
            }
        }
        // A tag at the end of a few trailing bytes: a block cut at its start.
        let err = Trailer::from_trailing_bytes(b"xyzRATRAILR").unwrap_err();
        assert!(
            err.to_string().contains("ending at byte 11 is cut short"),
            "{err}"
        );
    }

    /// The forward block of the file's bytes: (its `at`, its own offset), after the data.
    fn forward_at(file: &[u8]) -> (u64, u64) {
        let h = Header::decode_any(file).unwrap();
        let end = data_end(&h);
        let start = end as usize;
        assert_eq!(file[start..start + 8], TRAILER_TAG);
        (le_u64(&file[start + 16..start + 24]), end)
    }

    #[test]
    fn a_rewrite_that_moves_the_data_end_moves_the_trailer_at_with_it() {
        use crate::{Codec, DynArray, RawArray, WriteOptions};
        let trailer = Trailer::for_element::<f32>(serde_json::json!({"units": "K"})).unwrap();
        let mut a = DynArray::from_typed(&RawArray::from_vec(vec![0.0f32; 4096]));
        a.set_trailer(&trailer);
        // Volatile bytes after the block stay, byte for byte.
        let mut tail = a.clone().into_parts().2;
        tail.extend_from_slice(b"volatile");
        a.set_trailer_bytes(tail);
        for opts in [
            WriteOptions::new(),
            WriteOptions::new().compress(true),
            WriteOptions::new().codec(Codec::Zstd),
        ] {
            let mut file = Vec::new();
            a.write_to_with(&mut file, &opts).unwrap();
            let (at, own) = forward_at(&file);
            assert_eq!(at, own, "{opts:?}: the block's at is its own offset");
            assert!(file.ends_with(b"volatile"), "{opts:?}");
            assert_eq!(
                Trailer::from_file_bytes(&file).unwrap(),
                Some(trailer.clone())
            );
            // And back: read, then written plain again.
            let back = DynArray::from_bytes(&file).unwrap();
            let plain = back.to_bytes().unwrap();
            let (at, own) = forward_at(&plain);
            assert_eq!(at, own, "{opts:?} read back and written plain");
        }
        // A spare copy (at 0) is not a forward block: kept as it is.
        let spare = trailer.encode_block(0);
        assert_eq!(retarget(&spare, 10, 20), None);
    }

    #[test]
    fn float_params_read_back_bit_for_bit() {
        let xs = [
            0.1 + 0.2,
            1e-3,
            0.483_129_757_543_646_84,
            f64::MIN_POSITIVE,
            1.0 / 3.0,
        ];
        let block = Trailer::new(xs).unwrap().encode_block(0);
        let back = Trailer::from_trailing_bytes(&block).unwrap().unwrap();
        let back: Vec<f64> = back.params_as().unwrap();
        let bits: Vec<u64> = back.iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, xs.map(f64::to_bits));
    }

    #[test]
    fn no_tag_is_no_trailer() {
        assert_eq!(Trailer::from_trailing_bytes(b"").unwrap(), None);
        assert_eq!(Trailer::from_trailing_bytes(&[7u8; 200]).unwrap(), None);
    }

    #[test]
    fn a_lying_length_is_damage_not_an_allocation() {
        let mut block = t(1).encode_block(0);
        let n = block.len();
        block[n - 16..n - 8].copy_from_slice(&u64::MAX.to_le_bytes());
        block[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Trailer::from_trailing_bytes(&block).is_err());
    }
}
