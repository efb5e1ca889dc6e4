//! What the bytes after a data section say: the one place `info`, `cat`, `convert` and the
//! rewriting commands learn about a file's trailer (the library's [`Trailer`] block: JSON
//! params and the record schema).

use rawarray_serde::{ElType, Header, Layout, Trailer};

/// What the tool knows about the bytes after a data section.
#[derive(Debug, Default)]
pub struct TrailerInfo {
    /// Bytes after the data section.
    pub bytes: u64,
    /// The trailer block, if the bytes hold a valid one.
    pub trailer: Option<Trailer>,
    /// Why the bytes look like a trailer block but cannot be read (torn, corrupt).
    pub damaged: Option<String>,
}

/// Reads the trailing bytes of a file. Bytes that are not a trailer block are only counted;
/// a damaged block is reported, not fatal (the array itself is still good).
pub fn describe(bytes: &[u8]) -> TrailerInfo {
    let (trailer, damaged) = match Trailer::from_trailing_bytes(bytes) {
        Ok(t) => (t, None),
        Err(e) => (None, Some(e.to_string())),
    };
    TrailerInfo {
        bytes: bytes.len() as u64,
        trailer,
        damaged,
    }
}

impl TrailerInfo {
    /// The schema of one element, where it describes the file's elements: user-defined
    /// (eltype 0) elements of exactly the schema's size. (A schema of `[f64; 3]` over a float
    /// file adds nothing to printing its numbers.)
    pub fn element_schema(&self, header: &Header) -> Option<&Layout> {
        let schema = self.trailer.as_ref()?.schema.as_ref()?;
        (header.eltype == ElType::User && schema.size() == header.elbyte).then_some(schema)
    }
}

/// The trailing bytes to write behind a rewritten data section that now ends at `data_end`:
/// a trailer block is placed again for its new offset (so that record appending and
/// `recover` find it where they look), other bytes are kept as they are.
pub fn replace_for(bytes: Vec<u8>, data_end: u64) -> Vec<u8> {
    match Trailer::from_trailing_bytes(&bytes) {
        Ok(Some(t)) => t.encode_block(data_end),
        _ => bytes,
    }
}
