//! The serde format's ragged arrays: a top-level sequence whose items are sequences of
//! different lengths (`Vec<Vec<T>>`, `Vec<Vec<u8>>`, `Vec<Vec<Record>>`) or strings of
//! different lengths (`Vec<String>`) is written as a ragged file (doc/format.md, section 10)
//! when the rectangular serializer finds it not rectangular; a ragged file reads back as such
//! a sequence. Each row goes through the rectangular serializer and deserializer as a 1-d
//! array, so every element type they know is a row's element type, once.

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::{self, Impossible, Serialize};

use crate::array::EMBEDDED;
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::layout::Layout;
use crate::ragged::{text_marked, write_head, write_tail, Parts, RaggedHeader};
use crate::trailer::Trailer;
use crate::Deserializer;

/// The ragged file of `value`, a sequence of rows; `None` if `value` is not a sequence of rows
/// a ragged file can hold (the caller then reports its own error).
pub(crate) fn to_ragged_vec<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let rows = value.serialize(Top).ok()?;
    encode(rows).ok()
}

/// One row, serialized: its text, or a plain 1-d `.ra` file of its elements.
enum Row {
    Text(Vec<u8>),
    File(Vec<u8>),
}

fn encode(rows: Vec<Row>) -> Result<Vec<u8>> {
    let text = rows.iter().all(|r| matches!(r, Row::Text(_)));
    let mut offsets = vec![0u64];
    let mut values = Vec::new();
    // The element of the first non-empty row: (eltype, elbyte, value dims, schema).
    let mut element: Option<(Header, Option<Layout>)> = None;
    for (k, row) in rows.iter().enumerate() {
        let (len, bytes) = match row {
            Row::Text(s) => (s.len() as u64, &s[..]),
            Row::File(_) if text => unreachable!("all rows are text"),
            Row::File(f) => {
                let h = Header::decode(f)?;
                let Some(&len) = h.dims.last() else {
                    return Err(Error::msg(format!("row {k} is a scalar, not a sequence")));
                };
                if len > 0 {
                    let schema = Trailer::from_file_bytes(f)?.and_then(|t| t.schema);
                    match &element {
                        None => element = Some((h.clone(), schema)),
                        Some((first, _))
                            if (
                                first.eltype,
                                first.elbyte,
                                &first.dims[..first.dims.len() - 1],
                            ) != (h.eltype, h.elbyte, &h.dims[..h.dims.len() - 1]) =>
                        {
                            return Err(ErrorKind::MixedElements {
                                index: vec![k as u64],
                                field: None,
                                found: h.type_label(),
                                expected: first.type_label(),
                            }
                            .into())
                        }
                        Some(_) => {}
                    }
                }
                let start = h.encoded_len();
                (len, &f[start..start + h.size as usize])
            }
        };
        if !text && matches!(row, Row::Text(_)) {
            return Err(Error::msg(format!(
                "row {k} is a string among rows of values"
            )));
        }
        values.extend_from_slice(bytes);
        offsets.push(offsets[offsets.len() - 1] + len);
    }
    let (header, schema) = match (text, element) {
        (true, _) => (
            Header::new(crate::ElType::Uint, 1, vec![0])?,
            Some(u8_layout()),
        ),
        (false, Some((h, schema))) => {
            // Records written by serde carry no schema: their elements stay opaque bytes.
            let scalar = (h.eltype != crate::ElType::User).then_some(Layout::Scalar {
                eltype: h.eltype,
                elbyte: h.elbyte,
                logical: None,
            });
            (h, schema.or(scalar))
        }
        (false, None) => return Err(Error::msg("no row has an element to type the file")),
    };
    let value_dims = header.dims[..header.dims.len() - 1].to_vec();
    let m = offsets[offsets.len() - 1];
    let h = RaggedHeader::new(
        header.eltype,
        header.elbyte,
        value_dims,
        m,
        rows.len() as u64,
        rows.len() as u64 + 1,
    )?;
    let mut out = Vec::with_capacity(values.len() + 8 * offsets.len() + 256);
    write_head(&mut out, &h, &offsets)?;
    out.extend_from_slice(&values);
    write_tail(&mut out, &h, &text_marked(schema, text))?;
    Ok(out)
}

fn u8_layout() -> Layout {
    Layout::Scalar {
        eltype: crate::ElType::Uint,
        elbyte: 1,
        logical: None,
    }
}

/// Reads a ragged file's rows into `T` (a sequence of sequences or of strings).
pub(crate) fn from_ragged_slice<'de, T: de::Deserialize<'de>>(bytes: &[u8]) -> Result<T> {
    let parts = Parts::read(bytes)?;
    T::deserialize(Rows { parts, next: 0 })
}

/// A ragged file as a serde sequence of rows.
struct Rows<'a> {
    parts: Parts<'a>,
    next: usize,
}

impl<'de> de::Deserializer<'de> for Rows<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_seq(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> SeqAccess<'de> for Rows<'_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>> {
        let h = &self.parts.header;
        if self.next as u64 >= h.rows {
            return Ok(None);
        }
        let k = self.next;
        self.next += 1;
        let bytes = self.parts.row(k);
        // The row as a plain 1-d file, read by the rectangular deserializer.
        let mut dims = h.value_dims.clone();
        dims.push(self.parts.offsets[k + 1] - self.parts.offsets[k]);
        let mut file = Header::new(h.eltype, h.elbyte, dims)?.encode();
        file.extend_from_slice(bytes);
        let mut de: Deserializer<'de, _> = Deserializer::from_reader(std::io::Cursor::new(file))?;
        let value = seed
            .deserialize(&mut de)
            .map_err(|e| Error::msg(format!("row {k}: {e}")))?;
        de.end()?;
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.parts.header.rows as usize - self.next)
    }
}

/// The top-level value: a sequence of rows, collected as [`Row`]s.
struct Top;

/// Anything that is not a sequence of rows.
fn not_rows() -> Error {
    Error::msg("not a sequence of rows")
}

macro_rules! refuse {
    ($($name:ident($($t:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $t),*) -> Result<Self::Ok> { Err(not_rows()) })*
    };
}

impl ser::Serializer for Top {
    type Ok = Vec<Row>;
    type Error = Error;
    type SerializeSeq = Collect;
    type SerializeTuple = Collect;
    type SerializeTupleStruct = Impossible<Vec<Row>, Error>;
    type SerializeTupleVariant = Impossible<Vec<Row>, Error>;
    type SerializeMap = Impossible<Vec<Row>, Error>;
    type SerializeStruct = Impossible<Vec<Row>, Error>;
    type SerializeStructVariant = Impossible<Vec<Row>, Error>;

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Self::Ok> {
        Err(not_rows())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Self::Ok> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok> {
        Err(not_rows())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Collect> {
        Ok(Collect(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Collect> {
        Ok(Collect(Vec::with_capacity(len)))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(not_rows())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(not_rows())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(not_rows())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(not_rows())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(not_rows())
    }
}

/// The rows of the top-level sequence.
struct Collect(Vec<Row>);

impl Collect {
    fn push<T: Serialize + ?Sized>(&mut self, row: &T) -> Result<()> {
        let r = match row.serialize(TextProbe) {
            Ok(text) => Row::Text(text),
            Err(e) if matches!(e.kind(), ErrorKind::Message(m) if m == EMBEDDED_ROW) => {
                return Err(e)
            }
            Err(_) => Row::File(crate::to_vec(row)?),
        };
        self.0.push(r);
        Ok(())
    }
}

impl ser::SerializeSeq for Collect {
    type Ok = Vec<Row>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, row: &T) -> Result<()> {
        self.push(row)
    }
    fn end(self) -> Result<Vec<Row>> {
        Ok(self.0)
    }
}

impl ser::SerializeTuple for Collect {
    type Ok = Vec<Row>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, row: &T) -> Result<()> {
        self.push(row)
    }
    fn end(self) -> Result<Vec<Row>> {
        Ok(self.0)
    }
}

/// Why embedded `.ra` files of different sizes stay `not rectangular`: as rows, their
/// values would lose their dims.
const EMBEDDED_ROW: &str = "an embedded .ra file is no row";

/// Tells a string row (its UTF-8 bytes) from anything else (an error).
struct TextProbe;

impl ser::Serializer for TextProbe {
    type Ok = Vec<u8>;
    type Error = Error;
    type SerializeSeq = Impossible<Vec<u8>, Error>;
    type SerializeTuple = Impossible<Vec<u8>, Error>;
    type SerializeTupleStruct = Impossible<Vec<u8>, Error>;
    type SerializeTupleVariant = Impossible<Vec<u8>, Error>;
    type SerializeMap = Impossible<Vec<u8>, Error>;
    type SerializeStruct = Impossible<Vec<u8>, Error>;
    type SerializeStructVariant = Impossible<Vec<u8>, Error>;

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_str(self, v: &str) -> Result<Vec<u8>> {
        Ok(v.as_bytes().to_vec())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Vec<u8>> {
        Err(not_rows())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Vec<u8>> {
        if name == EMBEDDED {
            return Err(Error::msg(EMBEDDED_ROW));
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Vec<u8>> {
        Err(not_rows())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(not_rows())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(not_rows())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(not_rows())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(not_rows())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(not_rows())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(not_rows())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(not_rows())
    }
}
