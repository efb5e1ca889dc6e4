//! `rawarray._rawarray`: the Rust half of the Python package. Every rule of the format (header
//! validation, the trailer, the element-type table, LZ4, byte order, atomic writes) is
//! rawarray-serde's; this module only hands its results to Python. Bytes reach numpy through
//! [`buffer::Buffer`], which exports the buffer protocol over a memory map or an owned `Vec`, so a numpy
//! view keeps the map alive for as long as the view lives.
#![deny(missing_docs)]

mod arrow;
mod buffer;
mod chunked;
mod dtype;
mod errors;
mod file;
mod head;
mod query;
mod ragged;
mod ragged_file;
mod state;
#[cfg(feature = "cloud")]
mod store;
mod writers;

use pyo3::prelude::*;

/// The module.
#[pymodule]
fn _rawarray(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RaError", m.py().get_type::<errors::RaError>())?;
    m.add_class::<file::RawFile>()?;
    m.add_class::<buffer::Buffer>()?;
    m.add_class::<writers::RecordWriter>()?;
    m.add_class::<writers::ArrayWriter>()?;
    #[cfg(feature = "cloud")]
    m.add_class::<store::StoreFile>()?;
    #[cfg(feature = "cloud")]
    m.add_class::<store::StoreBlockWriter>()?;
    #[cfg(feature = "cloud")]
    m.add_function(wrap_pyfunction!(store::recover_url, m)?)?;
    m.add_function(wrap_pyfunction!(writers::write, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::storable_dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(errors::shown_url, m)?)?;
    chunked::register(m)?;
    m.add_class::<ragged_file::RaggedFile>()?;
    m.add_class::<ragged::RaggedWriter>()?;
    m.add_function(wrap_pyfunction!(ragged::holds, m)?)?;
    m.add_function(wrap_pyfunction!(ragged::write_ragged, m)?)?;
    arrow::register(m)?;
    Ok(())
}
