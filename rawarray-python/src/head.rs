//! What every opened array answers alike from the header and trailer its reader read at open:
//! a local file ([`crate::file::RawFile`], the library's `ArrayReader`) and an object in a
//! store (`StoreFile`, its `StoreArrayReader`). One list of getters, written once: the
//! Python layer reads both through the same names.

/// `#[pymethods] impl $ty { <the shared getters> $($rest)* }` for a class with a field
/// `reader` (whose `trailer()`, `trailer_error()` and `io_stats()` are the library's reader's)
/// and a method `header(&self) -> &Header`. PyO3 takes one `#[pymethods]` block per class, so
/// the class's own methods are passed in and land in the same block.
macro_rules! array_methods {
    ($ty:ty { $($rest:tt)* }) => {
        #[pymethods]
        impl $ty {
            /// The element type code (0 user-defined, 1 int, 2 uint, 3 float, 4 complex, 5
            /// bfloat16).
            #[getter]
            fn eltype(&self) -> u64 {
                self.header().eltype.code()
            }

            /// Bytes per element.
            #[getter]
            fn elbyte(&self) -> u64 {
                self.header().elbyte
            }

            /// The dims, first fastest (the file's order; numpy's shape is their reverse).
            #[getter]
            fn dims(&self) -> Vec<u64> {
                self.header().dims.clone()
            }

            /// The flag bits (1: big-endian, 2: LZ4, 4: chunked).
            #[getter]
            fn flags(&self) -> u64 {
                self.header().flags.bits()
            }

            /// How the data section is stored, as the library names it (`Storage::of`):
            /// `plain`, `lz4-whole` or `chunked`.
            #[getter]
            fn storage(&self) -> &'static str {
                rawarray_serde::section::Storage::of(self.header()).name()
            }

            /// Whether numpy can view the data section's bytes as stored: a plain (not coded)
            /// little-endian section. The library's rule (`Storage::is_coded`): the Python layer
            /// asks it instead of testing the storage kind or flag bits.
            #[getter]
            fn viewable(&self) -> bool {
                let h = self.header();
                !rawarray_serde::section::Storage::of(h).is_coded() && !h.is_big_endian()
            }

            /// Whether the data section is coded (LZ4 or chunked): read through the library's
            /// section reader, never as bytes in place.
            #[getter]
            fn coded(&self) -> bool {
                rawarray_serde::section::Storage::of(self.header()).is_coded()
            }

            /// The codec the header alone names (`lz4-whole` for one LZ4 block of the whole
            /// section), or None: a chunked section's codec is in its config.
            #[getter]
            fn header_codec(&self) -> Option<&'static str> {
                rawarray_serde::section::Storage::of(self.header()).header_codec()
            }

            /// Stored data bytes (compressed length for LZ4 and chunked files).
            #[getter]
            fn size(&self) -> u64 {
                self.header().size
            }

            /// Elements in the array (the product of the dims).
            #[getter]
            fn num_elements(&self) -> u64 {
                self.header().num_elements()
            }

            /// Bytes of the header: the data starts here.
            #[getter]
            fn header_len(&self) -> usize {
                self.header().encoded_len()
            }

            /// The type in words, e.g. `float32`, `complex64`, `user-defined (80 bytes)`.
            #[getter]
            fn type_label(&self) -> String {
                self.header().type_label()
            }

            /// Whether decoded user-defined elements are still big-endian (their fields' byte
            /// order is the header's, as the format does not describe them).
            #[getter]
            fn big_endian_records(&self) -> bool {
                self.header().is_big_endian()
                    && self.header().eltype == rawarray_serde::ElType::User
            }

            /// The trailer's parameters as JSON, `None` without a trailer.
            #[getter]
            fn params_json(&self) -> Option<String> {
                self.reader.trailer().map(|t| t.params.to_string())
            }

            /// The trailer's record schema as JSON, if any.
            #[getter]
            fn schema_json(&self) -> Option<String> {
                let schema = self.reader.trailer()?.schema.as_ref()?;
                serde_json::to_string(schema).ok()
            }

            /// Why the trailer could not be read, if it is damaged (the data is still
            /// readable).
            #[getter]
            fn trailer_error(&self) -> Option<String> {
                self.reader.trailer_error().map(str::to_string)
            }

            /// The trailer's top-level keys this version of the library does not interpret
            /// (such as the Python package's `dim_names` and `coords`), as a JSON object;
            /// `None` without a trailer.
            #[getter]
            fn extra_json(&self) -> Option<String> {
                self.reader
                    .trailer()
                    .map(|t| serde_json::Value::Object(t.extra.clone()).to_string())
            }

            /// The mantissa bits the data were rounded to by a lossy filter, as the trailer's
            /// lossy mark says (it outlives the filter: every rewrite keeps it), `None`
            /// without a mark.
            #[getter]
            fn rounded_to(&self) -> Option<u32> {
                self.reader
                    .trailer()
                    .and_then(rawarray_serde::Trailer::rounded_to)
            }

            /// How numpy should see one element: `("dtype", "<f4")`, `("record",
            /// json_descr)` for a record with a valid schema, `("bfloat16", "<u2")`,
            /// `("complex32", "<f2")` or `("void", reason)` for bytes with no numpy type (the
            /// reason says why).
            fn element_kind(&self) -> (String, String) {
                crate::dtype::element_kind(
                    self.header(),
                    self.reader.trailer(),
                    self.reader.trailer_error(),
                )
            }

            /// The reader's count of reads so far and the bytes they brought: `(reads,
            /// bytes)` (a file: the data reads of `read_block`, an LZ4 file's one whole read;
            /// an object: every request, open's included).
            fn io_stats(&self) -> (u64, u64) {
                let s = self.reader.io_stats();
                (s.reads, s.bytes)
            }

            $($rest)*
        }
    };
}

pub(crate) use array_methods;
