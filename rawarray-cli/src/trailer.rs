//! What the bytes after a data section say: the one place `info`, `cat`, `convert` and the
//! rewriting commands learn about a file's trailer (the library's [`Trailer`] block: JSON
//! params and the record schema). It is read by `RaSource::trailer_info`.

use rawarray_serde::trailer::TRAILER_FRAME;
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

impl TrailerInfo {
    /// The schema of one element, where it describes the file's elements and says more than
    /// the header: user-defined (eltype 0) elements, and a scalar with a logical marker (bool,
    /// a timestamp, a date: `Layout::plain_schema`), if the schema passes the library's check
    /// against the header (`Layout::check_header`). (A schema of `[f64; 3]` over a float file
    /// adds nothing to printing its numbers.) Without one, elements of eltype 0 are shown as
    /// bytes, others as the header's numbers.
    pub fn element_schema(&self, header: &Header) -> Option<&Layout> {
        let schema = self.trailer.as_ref()?.schema.as_ref()?;
        (header.eltype == ElType::User || schema.plain_schema().is_some())
            .then(|| schema.check_header(header).ok())
            .flatten()
    }

    /// Bytes between the data's end and the trailer block, when the block is not right after
    /// the data: records a writer wrote but did not commit (it is still writing, or was
    /// killed), and its free space. Zero for a finished file.
    pub fn uncommitted(&self) -> u64 {
        match &self.trailer {
            Some(t) => {
                let block = (t.to_json().len() + 2 * TRAILER_FRAME) as u64;
                self.bytes.saturating_sub(block)
            }
            None => 0,
        }
    }

    /// Why the trailer's schema does not describe the file's elements, if so.
    pub fn schema_problem(&self, header: &Header) -> Option<String> {
        let schema = self.trailer.as_ref()?.schema.as_ref()?;
        schema.check_header(header).err().map(|e| e.to_string())
    }
}
