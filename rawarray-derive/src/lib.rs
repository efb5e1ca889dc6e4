//! `#[derive(RaRecord)]` for the RawArray (`.ra`) format. Use it through `rawarray_serde::RaRecord`.
//!
//! The input is parsed into our own types (`ast`), checked (`valid`), and expanded (`expand`);
//! on any error the derive emits the errors and a stub impl, so one mistake is one error.
#![deny(missing_docs)]

mod ast;
mod expand;
mod valid;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

// The crate README's example, compiled and run with the doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
struct ReadmeDoctests;

/// Derives `rawarray_serde::Element` for a struct whose fields are elements, so that an array of
/// it is a `.ra` file of packed records: eltype 0 (user-defined), elbyte the record's packed
/// size, each record its fields' little-endian bytes in declaration order with no padding,
/// whatever Rust's in-memory layout is.
///
/// ```
/// use rawarray_serde::{Element, RaRecord, RawArray};
///
/// /// The C struct `struct foo { char info[12]; uint32_t index; double v[8]; }`.
/// #[derive(RaRecord, Clone, Debug, PartialEq)]
/// struct Foo {
///     info: [u8; 12],
///     index: u32,
///     v: [f64; 8],
/// }
///
/// // Inherent constants, usable in const context without importing `Element`.
/// const _: () = assert!(Foo::ELBYTE == 80);
/// assert_eq!(Foo::OFFSETS, [0, 12, 16]);
/// assert_eq!(
///     Foo::layout().numpy_descr(),
///     "[('info', '|u1', (12,)), ('index', '<u4'), ('v', '<f8', (8,))]"
/// );
///
/// let foo = Foo { info: *b"hello world\0", index: 7, v: [0.5; 8] };
/// let a = RawArray::from_vec(vec![foo.clone(); 3]);
/// let bytes = a.to_bytes();
/// assert_eq!(bytes.len(), 56 + 3 * 80); // header with one dim, then three records
/// assert_eq!(&bytes[56 + 12..56 + 16], &7u32.to_le_bytes());
/// assert_eq!(RawArray::<Foo>::from_bytes(&bytes).unwrap(), a);
/// ```
///
/// # Fields
///
/// Any type that implements `Element`: the integers, `f32`, `f64`, `half::f16`, `half::bf16`,
/// `bool`, `char`, `num_complex::Complex<_>`, fixed arrays `[T; N]` (nested too), and other
/// `RaRecord` structs (nested records nest in the layout and the numpy dtype). Named and tuple
/// structs work; a tuple struct's fields are named `"0"`, `"1"`, ... in the schema.
///
/// Generic structs get an `Element` bound on every field type, so `Pair<T>` is an element
/// whenever its fields are.
///
/// # What is generated
///
/// - `impl Element`, with `ELTYPE = ElType::User`, `ELBYTE` (= `PACKED_SIZE`) the sum of the
///   fields' `PACKED_SIZE`s, `write_le`/`read_le`/`swap_bytes` field by field, and `layout()`
///   a `Layout::Record` with each field's schema name and offset.
/// - Inherent constants `pub const ELBYTE: usize` and `pub const OFFSETS: [usize; N]` (each
///   field's byte offset in the packed record, declaration order), so sizes and offsets are
///   usable in const context without the trait in scope. A type that already has inherent
///   items of these names cannot derive `RaRecord`.
/// - For a struct without generics: `const _: () = assert!(Self::ELBYTE > 0)`, a compile error
///   (on the struct's name) when every field is zero-sized.
///
/// # The one-copy path
///
/// A non-generic record whose memory *is* its packed little-endian bytes is written and read
/// in one copy, like a scalar: when it is `bytemuck::Pod` (`#[repr(C)]`, no padding), has its
/// fields at their packed offsets, every field is itself one-copy, and the machine is
/// little-endian. `bytemuck::NoUninit` without `Pod` (say, a `bool` field) makes writes one
/// copy; reads then check every value. No attribute is needed: the generated impl asks the
/// compiler whether `Self: Pod` through autoref-based method resolution, which picks the `Pod`
/// implementation when the bound holds and a field-by-field fallback when it does not (see
/// `rawarray_serde::__private` for why this is sound and needs no `unsafe`). Other records
/// are packed field by field through a reused buffer. `#[repr(packed)]` structs work; their
/// fields are copied rather than borrowed.
///
/// # Attributes
///
/// - `#[ra(rename = "name")]` on a field: its name in the schema and the numpy dtype.
/// - `#[ra(crate = "path")]` on the struct: the path of `rawarray_serde` in generated code.
///   It is rarely needed: by default the derive reads the calling package's `Cargo.toml` (via
///   `proc-macro-crate`) and uses whatever name the `rawarray-serde` dependency has there, so
///   `ra = { package = "rawarray-serde", ... }` works as is. Use the attribute when the crate
///   is only reachable through a re-export.
///
/// # Rejected at compile time
///
/// Enums, unions, unit structs and structs without fields; fields whose type is never
/// fixed-size (`Vec`, `String`, `Option`, `Box`, references, slices, tuples, `usize`, ...),
/// with an error on the field's type naming the field; field types that do not implement
/// `Element` (the error points at the field's type); duplicate or empty schema names.
#[proc_macro_derive(RaRecord, attributes(ra))]
pub fn derive_ra_record(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
