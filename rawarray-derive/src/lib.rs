//! `#[derive(RaRecord)]` for the RawArray (`.ra`) format. Use it through `rawarray_serde::RaRecord`.
#![deny(missing_docs)]

mod ast;
mod expand;
mod valid;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `rawarray_serde::Element` for a struct whose fields are elements, so that arrays of
/// it are `.ra` files of packed records (eltype 0, user-defined).
///
/// TODO
#[proc_macro_derive(RaRecord, attributes(ra))]
pub fn derive_ra_record(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
