//! What the bytes after a data section say. The one place to extend when the trailer format
//! (JSON metadata and record schema, being defined on branch `records`) lands: parse it in
//! [`describe`], and `info` and `cat` show what it finds.

use rawarray_serde::Layout;

/// What `info` and `cat` know about a trailer.
#[derive(Debug, Default)]
pub struct Trailer {
    /// Bytes after the data section.
    pub bytes: u64,
    /// The record schema, once the trailer format defines one: `cat` prints records by field
    /// name with it (raw hex without).
    pub schema: Option<Layout>,
}

/// Reads the trailing bytes of a file. Today they are only counted: the trailer format is not
/// settled, and guessing at it would print things that are not there.
pub fn describe(bytes: &[u8]) -> Trailer {
    Trailer {
        bytes: bytes.len() as u64,
        schema: None,
    }
}
