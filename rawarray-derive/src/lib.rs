//! `#[derive(RaRecord)]` for the RawArray (`.ra`) format. Use it through `rawarray_serde::RaRecord`.
#![deny(missing_docs)]
