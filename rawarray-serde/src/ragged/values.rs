//! A whole ragged array in memory ([`Ragged`]): rows, text rows, and the bytes a file of
//! them is written as (plain or with compressed values).

use super::header::{bad, check_offsets, decode_values_section, RaggedHeader};
use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use crate::atomic::write_atomic;
use crate::codec;
use crate::data;
use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::header::le_u64;
use crate::layout::{Layout, Logical};
use crate::options::WriteOptions;
use crate::records::ElementSpec;
use crate::trailer::{block_len, encode_block_into, locate, Trailer};

/// What a storage written once is refused for in a ragged file, written whole or by a
/// `RaggedWriter`: its values, to which rows are appended in place.
pub(super) const RAGGED_VALUES: &str =
    "the values section of a ragged file (a RaggedWriter appends rows to it)";

/// The layout of one value of a text file: a `u8` marked [`Logical::Text`].
pub(super) fn text_layout() -> Layout {
    Layout::Scalar {
        eltype: ElType::Uint,
        elbyte: 1,
        logical: Some(Logical::Text),
    }
}

/// Whether `trailer`'s schema marks the values as UTF-8 text (its layout is
/// [`Logical::Text`]'s `u8`; the trailer checked that the marker sits on a `u8`).
pub(super) fn is_text_trailer(trailer: Option<&Trailer>) -> bool {
    trailer.and_then(|t| t.schema.as_ref()) == Some(&text_layout())
}

/// The row as text, or an error naming the row.
pub(super) fn text_of(row: &[u8], k: usize) -> Result<&str> {
    std::str::from_utf8(row).map_err(|e| bad(format!("row {k} is not UTF-8 text: {e}")))
}

/// A ragged array in memory: rows of different lengths, stored as one run of values and
/// `rows + 1` offsets into it.
///
/// ```
/// use rawarray_serde::Ragged;
/// let r = Ragged::from_rows([vec![1.0f32, 2.0], vec![], vec![3.0]]);
/// assert_eq!(r.rows(), 3);
/// assert_eq!(r.row(0), Some(&[1.0f32, 2.0][..]));
/// assert_eq!(r.offsets(), [0, 2, 2, 3]);
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("r.ra");
/// r.write_file(&path).unwrap();
/// assert_eq!(Ragged::<f32>::read_file(&path).unwrap(), r);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Ragged<T> {
    pub(super) offsets: Vec<u64>,
    pub(super) values: Vec<T>,
    pub(super) text: bool,
}

impl<T: Element> Default for Ragged<T> {
    fn default() -> Self {
        Ragged::new()
    }
}

impl<T: Element> Ragged<T> {
    /// No rows.
    pub fn new() -> Ragged<T> {
        Ragged {
            offsets: vec![0],
            values: Vec::new(),
            text: false,
        }
    }

    /// The rows given, in order.
    pub fn from_rows<R: AsRef<[T]>>(rows: impl IntoIterator<Item = R>) -> Ragged<T>
    where
        T: Clone,
    {
        let mut r = Ragged::new();
        for row in rows {
            r.push_row(row.as_ref());
        }
        r
    }

    /// From offsets and values, checked as a file's are ([`check_offsets`]).
    pub fn from_parts(offsets: Vec<u64>, values: Vec<T>) -> Result<Ragged<T>> {
        check_offsets(&offsets, values.len() as u64)?;
        Ok(Ragged {
            offsets,
            values,
            text: false,
        })
    }

    /// Appends one row.
    pub fn push_row(&mut self, row: &[T])
    where
        T: Clone,
    {
        self.values.extend_from_slice(row);
        self.offsets.push(self.values.len() as u64);
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Row `k`, or `None` past the last row.
    pub fn row(&self, k: usize) -> Option<&[T]> {
        let start = *self.offsets.get(k)? as usize;
        let end = *self.offsets.get(k + 1)? as usize;
        Some(&self.values[start..end])
    }

    /// The rows in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[T]> + '_ {
        self.offsets
            .windows(2)
            .map(|w| &self.values[w[0] as usize..w[1] as usize])
    }

    /// The offsets: `rows + 1` of them, from 0 to the value count.
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Every value, row after row.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The file's bytes: header, offsets, values, trailer (the element's schema, and the text
    /// marker of [`Ragged::from_strs`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file's bytes (see [`Ragged::to_bytes`]) to `w`.
    pub fn write_to<W: Write + ?Sized>(&self, w: &mut W) -> Result<()> {
        let h = self.plain_header()?;
        write_head(w, &h, &self.offsets)?;
        data::write_values(&self.values, false, w)?;
        write_tail(w, &h, &ragged_trailer::<T>(self.text))
    }

    /// The header of these rows written whole with plain values (one slot per offset).
    fn plain_header(&self) -> Result<RaggedHeader> {
        let spec = ElementSpec::of::<T>();
        RaggedHeader::new(
            spec.eltype(),
            spec.elbyte(),
            spec.inner_dims().to_vec(),
            self.values.len() as u64,
            self.rows() as u64,
            self.offsets.len() as u64,
        )
    }

    /// Writes the file at `path`, atomically (a temporary file renamed over it).
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomic(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            self.write_to(&mut w)?;
            w.flush().map_err(Error::from)
        })
    }

    /// The file's bytes with the values compressed: a chunked section (flag bit 2, the
    /// filters and codecs of `opts`; doc/format.md, section 10.2) after the offsets, which stay
    /// plain so that a row is found in O(1) and decodes only the chunks it touches.
    ///
    /// ```
    /// use rawarray_serde::codec::{Codec, Shuffle};
    /// use rawarray_serde::WriteOptions;
    /// use rawarray_serde::{Ragged, RaggedReader};
    /// let rows: Vec<Vec<f32>> = (0..2000).map(|k| vec![k as f32; k % 7]).collect();
    /// let r = Ragged::from_rows(&rows);
    /// let opts = WriteOptions::chunked().codec(Codec::Zstd).shuffle(Shuffle::Byte);
    /// let packed = r.to_bytes_with(&opts).unwrap();
    /// assert!(packed.len() < r.to_bytes().unwrap().len());
    /// assert_eq!(Ragged::<f32>::from_bytes(&packed).unwrap(), r);
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("z.ra");
    /// r.write_file_with(&path, &opts).unwrap();
    /// assert_eq!(*RaggedReader::<f32>::open(&path).unwrap().row(13).unwrap(), [13.0; 6]);
    /// ```
    pub fn to_bytes_with(&self, opts: &WriteOptions) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to_with(&mut out, opts)?;
        Ok(out)
    }

    /// Writes the file's bytes with compressed values (see [`Ragged::to_bytes_with`]) to `w`.
    pub fn write_to_with<W: Write + ?Sized>(&self, w: &mut W, opts: &WriteOptions) -> Result<()> {
        let plain = self.plain_header()?;
        let mut raw = Vec::new();
        data::write_values(&self.values, false, &mut raw)?;
        write_chunked(
            w,
            &plain,
            &self.offsets,
            &raw,
            opts,
            &ragged_trailer::<T>(self.text),
        )
    }

    /// Writes the file at `path` with compressed values (see [`Ragged::to_bytes_with`]),
    /// atomically.
    pub fn write_file_with(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<()> {
        write_atomic(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            self.write_to_with(&mut w, opts)?;
            w.flush().map_err(Error::from)
        })
    }

    /// Reads a ragged file's bytes. The header, the offsets and (for text) every row's UTF-8
    /// are checked before the values are decoded; each failure names the field or the row.
    pub fn from_bytes(bytes: &[u8]) -> Result<Ragged<T>> {
        let h = RaggedHeader::decode(bytes)?;
        h.check_element(&ElementSpec::of::<T>(), std::any::type_name::<T>())?;
        let parts = Parts::read(bytes)?;
        let values = data::decode_values(&parts.values, false)?;
        Ok(Ragged {
            offsets: parts.offsets,
            values,
            text: parts.text,
        })
    }
}

/// Writes the header and the offsets of a file written whole (`slots = rows + 1`).
pub(crate) fn write_head<W: Write + ?Sized>(
    w: &mut W,
    h: &RaggedHeader,
    offsets: &[u64],
) -> Result<()> {
    w.write_all(&h.encode())?;
    // In place on a little-endian machine (no packed copy of the offsets).
    data::write_values(offsets, false, w)
}

/// Writes a whole file whose values (`raw`, packed, as `plain` describes them) go through the
/// codec layer: the header with the slot count word, `offsets`, the values' chunked section,
/// the trailer block.
pub(super) fn write_chunked<W: Write + ?Sized>(
    w: &mut W,
    plain: &RaggedHeader,
    offsets: &[u64],
    raw: &[u8],
    opts: &WriteOptions,
    trailer: &Trailer,
) -> Result<()> {
    let (_, section) = codec::encode(&plain.values_header()?, raw, opts)?;
    let h = RaggedHeader::new_chunked(
        plain.eltype,
        plain.elbyte,
        plain.value_dims.clone(),
        plain.values,
        plain.rows,
        offsets.len() as u64,
        section.len() as u64,
    )?;
    write_head(w, &h, offsets)?;
    w.write_all(&section)?;
    write_tail(w, &h, trailer)
}

/// Writes the trailer block after the values of a file written whole.
pub(crate) fn write_tail<W: Write + ?Sized>(
    w: &mut W,
    h: &RaggedHeader,
    trailer: &Trailer,
) -> Result<()> {
    let json = trailer.to_json();
    let mut block = Vec::with_capacity(block_len(json.len()));
    encode_block_into(&json, h.data_end(), &mut block);
    w.write_all(&block)?;
    Ok(())
}

/// A ragged file's parts, read from its bytes and checked (header, offsets, text).
pub(crate) struct Parts<'a> {
    pub header: RaggedHeader,
    pub offsets: Vec<u64>,
    /// The values' packed bytes: borrowed, or decoded from a chunked section.
    pub values: Cow<'a, [u8]>,
    pub text: bool,
}

impl<'a> Parts<'a> {
    /// Reads and checks the parts of the ragged file in `bytes`.
    pub fn read(bytes: &'a [u8]) -> Result<Parts<'a>> {
        let h = RaggedHeader::decode(bytes)?;
        let have = (bytes.len() as u64).saturating_sub(h.encoded_len());
        if have < h.size {
            return Err(ErrorKind::Truncated {
                expected: h.size,
                found: have,
            }
            .into());
        }
        let at = h.offsets_at() as usize;
        let offsets: Vec<u64> = bytes[at..at + 8 * (h.rows as usize + 1)]
            .chunks_exact(8)
            .map(le_u64)
            .collect();
        check_offsets(&offsets, h.values)?;
        let trailer = locate(bytes, h.data_end(), bytes.len() as u64).into_result()?;
        let text = is_text_trailer(trailer.as_ref());
        let values = if h.chunked {
            Cow::Owned(decode_values_section(&h, bytes)?)
        } else {
            let start = h.values_at() as usize;
            Cow::Borrowed(&bytes[start..start + h.values_len() as usize])
        };
        if text {
            check_text(&offsets, &values, h.value_bytes())?;
        }
        Ok(Parts {
            header: h,
            offsets,
            values,
            text,
        })
    }

    /// The packed bytes of row `k` (its offsets checked on read).
    pub fn row(&self, k: usize) -> &[u8] {
        let vb = self.header.value_bytes() as usize;
        &self.values[self.offsets[k] as usize * vb..self.offsets[k + 1] as usize * vb]
    }
}

/// Checks that every row of `u8` values is UTF-8.
pub(super) fn check_text(offsets: &[u64], values: &[u8], value_bytes: u64) -> Result<()> {
    if value_bytes != 1 {
        return Err(bad(format!(
            "the trailer marks the values as text, but they are {value_bytes}-byte values, not bytes"
        )));
    }
    for (k, w) in offsets.windows(2).enumerate() {
        text_of(&values[w[0] as usize..w[1] as usize], k)?;
    }
    Ok(())
}

/// The trailer every ragged file of `T` gets: the element's schema, and the text marker.
pub(super) fn ragged_trailer<T: Element>(text: bool) -> Trailer {
    text_marked(Some(T::layout()), text)
}

/// A trailer of `schema` (if known); if `text`, the schema is the text marker's `u8` instead
/// (the marker lives in the layout, as `bool`'s does: one home for the fact).
pub(crate) fn text_marked(schema: Option<Layout>, text: bool) -> Trailer {
    let t = Trailer::new(serde_json::Value::Null).expect("a null params value always serializes");
    match (text, schema) {
        (true, _) => t.with_schema(text_layout()),
        (false, Some(schema)) => t.with_schema(schema),
        (false, None) => t,
    }
}

impl Ragged<u8> {
    /// Text: one UTF-8 string a row, marked as text in the trailer's schema (a `u8` of
    /// [`Logical::Text`], `"logical":"text"`), so that readers give strings back.
    ///
    /// ```
    /// use rawarray_serde::Ragged;
    /// let r = Ragged::from_strs(["héllo", "", "wörld"]);
    /// let back = Ragged::<u8>::from_bytes(&r.to_bytes().unwrap()).unwrap();
    /// assert!(back.is_text());
    /// assert_eq!(back.to_strings().unwrap(), ["héllo", "", "wörld"]);
    /// ```
    pub fn from_strs<S: AsRef<str>>(strs: impl IntoIterator<Item = S>) -> Ragged<u8> {
        let mut r = Ragged::from_rows(strs.into_iter().map(|s| s.as_ref().as_bytes().to_vec()));
        r.text = true;
        r
    }

    /// Whether the rows are text.
    pub fn is_text(&self) -> bool {
        self.text
    }

    /// Row `k` as text (an error naming the row if it is not UTF-8).
    pub fn str_row(&self, k: usize) -> Result<&str> {
        let row = self.row(k).ok_or(ErrorKind::OutOfBounds {
            start: k as u64,
            end: k as u64 + 1,
            len: self.rows() as u64,
        })?;
        text_of(row, k)
    }

    /// Every row as a `String`.
    pub fn to_strings(&self) -> Result<Vec<String>> {
        (0..self.rows())
            .map(|k| self.str_row(k).map(str::to_owned))
            .collect()
    }
}

impl RaggedHeader {
    /// Writes a whole ragged file at `path`, atomically, from its parts: the rows' `offsets`
    /// (`rows + 1` of them, checked as a reader checks them) into `values` (packed
    /// little-endian, as this header's element describes), with `schema` (the element's
    /// layout) in the trailer, or the text marker if `text` (then every row is checked to be
    /// UTF-8). The values are stored as `opts` select: plain, or chunked (doc/format.md,
    /// section 10.2); whole-section LZ4 is refused, as rows are read alone. `self` gives the
    /// element and the counts; its slots must be `rows + 1`.
    /// What a binding that knows the element only at run time (the Python package) calls.
    ///
    /// ```
    /// use rawarray_serde::codec::Codec;
    /// use rawarray_serde::WriteOptions;
    /// use rawarray_serde::{ElType, Layout, Ragged, RaggedHeader};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("r.ra");
    /// let h = RaggedHeader::new(ElType::Uint, 2, vec![], 3, 2, 3).unwrap();
    /// let values: Vec<u8> = [1u16, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// let opts = WriteOptions::chunked().codec(Codec::Lz4);
    /// h.write_file(&path, &[0, 1, 3], &values, Layout::scalar(ElType::Uint, 2), false, &opts).unwrap();
    /// let r = Ragged::<u16>::read_file(&path).unwrap();
    /// assert_eq!(r.iter().collect::<Vec<_>>(), [&[1u16][..], &[2, 3]]);
    /// ```
    pub fn write_file(
        &self,
        path: impl AsRef<Path>,
        offsets: &[u64],
        values: &[u8],
        schema: Layout,
        text: bool,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.validate()?;
        opts.storage().check_grows_in_place(RAGGED_VALUES)?;
        if self.chunked || self.slots() != self.rows + 1 || offsets.len() as u64 != self.rows + 1 {
            return Err(bad(format!(
                "a ragged file written whole has rows + 1 = {} offsets in as many slots, \
                 found {} offsets and {} slots{}",
                self.rows + 1,
                offsets.len(),
                self.slots(),
                if self.chunked {
                    " (and a chunked header)"
                } else {
                    ""
                }
            )));
        }
        if values.len() as u64 != self.values_len() {
            return Err(bad(format!(
                "values: expected {} bytes for {} values of {} bytes, found {}",
                self.values_len(),
                self.values,
                self.value_bytes(),
                values.len()
            )));
        }
        check_offsets(offsets, self.values)?;
        if text {
            check_text(offsets, values, self.value_bytes())?;
        }
        let trailer = text_marked(Some(schema), text);
        write_atomic(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            if opts.chunk_settings().is_some() {
                write_chunked(&mut w, self, offsets, values, opts, &trailer)?;
            } else {
                write_head(&mut w, self, offsets)?;
                w.write_all(values)?;
                write_tail(&mut w, self, &trailer)?;
            }
            w.flush().map_err(Error::from)
        })
    }
}
