//! Reading: the `ra_file` handle over the core's `ArrayReader` and its `Section`.

use std::ffi::{c_char, c_int, c_void, CString};
use std::ops::Range;

use rawarray_serde::section::Storage;
use rawarray_serde::{ArrayReader, ElType, Header, Layout, SchemaCheck};

use crate::args::{box_arg, buf_arg, clear_out, handle, path_arg, put, put_dims};
use crate::error::{guard, Failure, Result};
use crate::rtype::RaRecordType;

/// The data section is stored as it is.
pub const RA_STORAGE_PLAIN: c_int = 0;
/// The data section is one LZ4 block (flag bit 1), as the original C library writes it.
pub const RA_STORAGE_LZ4: c_int = 1;
/// The data section is chunked (flag bit 2): n-d chunks, each coded by a filter pipeline and a
/// codec (`ra_file_chunks`, `ra_file_codec`, `ra_file_filters`).
pub const RA_STORAGE_CHUNKED: c_int = 2;

/// One field of a record schema, as `ra_file_field` reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RaFieldInfo {
    /// The field's name, NUL-terminated; owned by the `ra_file`, valid until `ra_close`.
    pub name: *const c_char,
    /// The element type code of its scalars (`RA_INT` ...), or `RA_USER` for a nested record.
    pub eltype: u64,
    /// Bytes of one scalar (of the whole nested record for `RA_USER`).
    pub elbyte: u64,
    /// Scalars in the field: 1, or the product of its fixed-array dims.
    pub count: u64,
    /// Byte offset of the field in a packed record.
    pub offset: u64,
    /// The scalars' logical marker as the schema spells it (doc/format.md section 7:
    /// `"bool"`, `"timestamp[us, tz=UTC]"`, `"duration[ns]"`, `"date"`, ...), NUL-terminated,
    /// `""` for plain numbers and records; owned by the `ra_file`, valid until `ra_close`.
    pub logical: *const c_char,
}

struct Field {
    name: CString,
    eltype: u64,
    elbyte: u64,
    count: u64,
    offset: u64,
    logical: CString,
}

/// An open `.ra` array file (plain, LZ4 or chunked; a record file is an array of records).
///
/// Made by `ra_open`, freed by `ra_close`. Its header, trailer and schema are read at open;
/// each read reads only what it needs. Reads may be made from several threads at once on one
/// handle (it is read-only and keeps its caches behind locks); `ra_close` must be called once,
/// when no other call on it is running. Strings it hands out are owned by it and valid until
/// `ra_close`.
pub struct RaFile {
    reader: ArrayReader,
    path: String,
    codec: Option<CString>,
    filters: CString,
    trailer_json: Option<CString>,
    params_json: Option<CString>,
    schema_json: Option<CString>,
    warnings: Option<CString>,
    fields: Vec<Field>,
    /// The elements' logical marker (a plain array's scalar schema), `""` for none.
    logical: CString,
}

fn cstring(s: String) -> CString {
    CString::new(s.replace('\0', "\\u0000")).unwrap_or_default()
}

/// The logical marker of a scalar layout as the schema spells it; `""` for anything else.
fn logical_of(layout: &Layout) -> String {
    match layout {
        Layout::Scalar {
            logical: Some(l), ..
        } => l.to_string(),
        _ => String::new(),
    }
}

impl RaFile {
    fn open(path: &std::path::Path, shown: &str) -> Result<RaFile> {
        let reader = match ArrayReader::open(path) {
            Ok(r) => r,
            Err(e) => {
                let ragged = matches!(e.kind(), rawarray_serde::ErrorKind::RaggedFile);
                let mut f = Failure::at(e, shown);
                if ragged {
                    f.message = format!(
                        "{shown}: a ragged file (rows of different lengths): open it with ra_ragged_open"
                    );
                }
                return Err(f);
            }
        };
        let d = reader.section().describe();
        let filters = d
            .filters
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let trailer = reader.trailer();
        let schema = trailer.and_then(|t| t.schema.as_ref());
        let mut warnings: Vec<String> = reader
            .section()
            .warnings()
            .iter()
            .map(ToString::to_string)
            .collect();
        if let Some(why) = reader.trailer_error() {
            warnings.push(format!("trailer: {why}"));
        }
        let fields = match schema {
            Some(Layout::Record { fields, .. }) => fields
                .iter()
                .map(|f| {
                    // A fixed array (of arrays) of a scalar or record: its item and how many.
                    let (mut base, mut count) = (&f.layout, 1u64);
                    while let Layout::Array { len, item } = base {
                        count = count.saturating_mul(*len);
                        base = item;
                    }
                    let (eltype, elbyte) = match base {
                        Layout::Scalar { eltype, elbyte, .. } => (eltype.code(), *elbyte),
                        other => (ElType::User.code(), other.size()),
                    };
                    Field {
                        name: cstring(f.name.clone()),
                        eltype,
                        elbyte,
                        count,
                        offset: f.offset,
                        logical: cstring(logical_of(base)),
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(RaFile {
            path: shown.to_string(),
            codec: d.codec.map(|c| cstring(c.name().to_string())),
            filters: cstring(filters),
            trailer_json: trailer
                .map(|t| cstring(String::from_utf8_lossy(&t.to_json()).into_owned())),
            params_json: trailer.map(|t| cstring(t.params.to_string())),
            schema_json: schema.map(|s| cstring(serde_json::to_string(s).unwrap_or_default())),
            warnings: (!warnings.is_empty()).then(|| cstring(warnings.join("\n"))),
            fields,
            logical: cstring(
                schema
                    .and_then(Layout::plain_schema)
                    .map(|s| logical_of(&s))
                    .unwrap_or_default(),
            ),
            reader,
        })
    }

    fn header(&self) -> &Header {
        self.reader.header()
    }

    /// Bytes read come out in the file's byte order: swapped here to the host's where the
    /// element type (or the record schema) says how.
    fn to_native(&self, bytes: &mut [u8]) {
        let h = self.header();
        if h.is_big_endian() == cfg!(target_endian = "big") {
            return;
        }
        match h.eltype.swap_width(h.elbyte) {
            Some(w) if w > 1 => bytes.chunks_exact_mut(w as usize).for_each(<[u8]>::reverse),
            Some(_) => {}
            None => {
                if let Some(schema) = self.reader.trailer().and_then(|t| t.schema.as_ref()) {
                    bytes
                        .chunks_exact_mut(h.elbyte as usize)
                        .for_each(|e| schema.swap_byte_order(e));
                }
            }
        }
    }

    fn read_box(&self, ranges: &[Range<u64>], out: &mut [u8]) -> Result<()> {
        let h = self.header();
        let whole = ranges.len() == h.dims.len()
            && ranges
                .iter()
                .zip(&h.dims)
                .all(|(r, &d)| r.start == 0 && r.end == d);
        let s = self.reader.section();
        let read = if whole {
            s.read_all_into(out)
        } else {
            s.read_box(ranges, out)
        };
        read.map_err(|e| Failure::at(e, &self.path))?;
        self.to_native(out);
        Ok(())
    }

    /// Bytes of one record: every dim but the last is one record's.
    fn record_bytes(&self) -> Result<u64> {
        let h = self.header();
        let Some((_, lead)) = h.dims.split_last() else {
            return Err(Failure::usage(format!(
                "{}: a scalar file holds no records (it has no dims)",
                self.path
            )));
        };
        Ok(lead.iter().product::<u64>() * h.elbyte)
    }
}

/// Opens the `.ra` file at `path` (a NUL-terminated path) for reading: validates its header,
/// checks that it holds its data, reads its trailer (metadata and record schema) and, chunked,
/// its chunk index. On success `*out` is a new handle (free it with `ra_close`); on failure it
/// is NULL and the last error says why, naming the path.
///
/// A ragged file is refused with a message pointing to `ra_ragged_open`.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` points to a writable `ra_file *`.
#[no_mangle]
pub unsafe extern "C" fn ra_open(path: *const c_char, out: *mut *mut RaFile) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise about `out`.
        unsafe { clear_out(out) };
        // SAFETY: the caller's promise about `path`.
        let (path, shown) = unsafe { path_arg(path, "path") }?;
        let f = RaFile::open(&path, &shown)?;
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, Box::into_raw(Box::new(f)), "out") }
    })
}

/// Frees a handle made by `ra_open` (NULL is ignored). The handle and every string it handed
/// out are invalid afterwards.
///
/// # Safety
/// `file` is NULL or a handle from `ra_open` not yet closed, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn ra_close(file: *mut RaFile) {
    if !file.is_null() {
        // SAFETY: a handle from `ra_open` (a leaked Box) closed once, as the caller promises.
        let b = unsafe { Box::from_raw(file) };
        // A panic while dropping is caught here; none crosses into C.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(b)));
    }
}

/// Runs a getter on a live handle and writes its value through `out`.
///
/// # Safety
/// `file` is NULL or a live handle from `ra_open`; `out` is NULL or points to a writable `T`.
unsafe fn get<T>(
    file: *const RaFile,
    out: *mut T,
    value: impl FnOnce(&RaFile) -> Result<T>,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        let v = value(f)?;
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, v, "out") }
    })
}

/// The element type code (`RA_USER`, `RA_INT`, `RA_UINT`, `RA_FLOAT`, `RA_COMPLEX`,
/// `RA_BFLOAT`) into `*out`.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_eltype(file: *const RaFile, out: *mut u64) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.header().eltype.code())) }
}

/// The elements' logical marker into `*out`, as the schema spells it (doc/format.md section
/// 7): `"bool"`, `"timestamp[ns]"`, `"timestamp[us, tz=Europe/Paris]"`, `"duration[ms]"`,
/// `"date"`; `""` when the elements are plain numbers or records (a record's fields carry
/// theirs: `ra_file_field`). Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_logical(file: *const RaFile, out: *mut *const c_char) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.logical.as_ptr())) }
}

/// Bytes of one element into `*out` (of one record, for a record file).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_elbyte(file: *const RaFile, out: *mut u64) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.header().elbyte)) }
}

/// The number of dims into `*out` (0 for a scalar).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_ndims(file: *const RaFile, out: *mut usize) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.header().dims.len())) }
}

/// Bytes of the whole array as `ra_read_all` hands it out (elements x elbyte) into `*out`.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_data_bytes(file: *const RaFile, out: *mut u64) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.header().data_len())) }
}

/// 1 into `*out` if the file's data is big-endian (flag bit 0), else 0. Reads hand values
/// out in the host's byte order whatever the file's, except records without a schema,
/// whose bytes are handed out as stored.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_big_endian(file: *const RaFile, out: *mut c_int) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(c_int::from(f.header().is_big_endian()))) }
}

/// How the data is stored into `*out`: `RA_STORAGE_PLAIN`, `RA_STORAGE_LZ4` or
/// `RA_STORAGE_CHUNKED`.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_storage(file: *const RaFile, out: *mut c_int) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(match f.reader.section().storage() {
                Storage::Plain => RA_STORAGE_PLAIN,
                Storage::Lz4Whole => RA_STORAGE_LZ4,
                Storage::Chunked => RA_STORAGE_CHUNKED,
            })
        })
    }
}

/// Bytes of one record into `*out`: elbyte times every dim but the last (the last dim
/// counts the records).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_record_bytes(file: *const RaFile, out: *mut u64) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, RaFile::record_bytes) }
}

/// The chunked layout's codec into `*out` (`"zstd"`, `"lz4"`, `"none"`, `"pco"`, `"huffman"`), NULL
/// for a file that is not chunked. Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_codec(file: *const RaFile, out: *mut *const c_char) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(f.codec.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
        })
    }
}

/// The chunked layout's codec level into `*out` (0 for codecs without levels and for files
/// that are not chunked).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_level(file: *const RaFile, out: *mut c_int) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(f.reader.section().describe().level.unwrap_or(0))
        })
    }
}

/// Whether the chunked layout compresses each block as byte streams, a frame per byte plane
/// (doc/chunked.md 5.3), into `*out`: 1 or 0 (0 for a file that is not chunked).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_split(file: *const RaFile, out: *mut c_int) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(c_int::from(f.reader.section().describe().split))
        })
    }
}

/// Whether each byte stream of the chunked layout has its own CRC-32 (doc/chunked.md 5.3:
/// a read of some fields then reads and checks only their streams), into `*out`: 1 or 0 (0 for
/// a file without byte streams).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_stream_crcs(file: *const RaFile, out: *mut c_int) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(c_int::from(f.reader.section().describe().stream_crcs))
        })
    }
}

/// The chunked layout's filter pipeline into `*out`, in the order applied when writing,
/// comma-separated as `ra_write_options_filters` takes it (`"shuffle"`,
/// `"bitround:10,bitshuffle"`); `""` for none. Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_filters(file: *const RaFile, out: *mut *const c_char) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.filters.as_ptr())) }
}

/// The whole trailer (doc/format.md: version, params, schema, numpy_descr) as JSON into
/// `*out`; NULL if the file has none. Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_trailer_json(
    file: *const RaFile,
    out: *mut *const c_char,
) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(f.trailer_json
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr()))
        })
    }
}

/// The trailer's parameters (the user's JSON: units, provenance, run settings) into
/// `*out`; NULL if the file has no trailer. Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_params_json(
    file: *const RaFile,
    out: *mut *const c_char,
) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(f.params_json
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr()))
        })
    }
}

/// The record schema (the layout of one element, as JSON) into `*out`; NULL if the file
/// has none. Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_schema_json(
    file: *const RaFile,
    out: *mut *const c_char,
) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(f.schema_json
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr()))
        })
    }
}

/// What the reader noticed that is not an error (a damaged trailer, a chunk a writer has
/// not committed), one per line, into `*out`; NULL if nothing. Owned by the handle.
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_warnings(file: *const RaFile, out: *mut *const c_char) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        get(file, out, |f| {
            Ok(f.warnings.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
        })
    }
}

/// The number of fields of the record schema into `*out` (0 if the elements are not
/// records with a schema).
///
/// # Safety
/// `file` is a live handle from `ra_open`; `out` points to a writable value.
#[no_mangle]
pub unsafe extern "C" fn ra_file_nfields(file: *const RaFile, out: *mut usize) -> c_int {
    // SAFETY: the caller's promises, passed on.
    unsafe { get(file, out, |f| Ok(f.fields.len())) }
}

/// The dims into `dims`, which has room for `capacity` values (at least `ra_file_ndims`), in
/// `order` (`RA_ORDER_FILE`: first fastest; `RA_ORDER_C`: reversed, as a C array is declared).
///
/// # Safety
/// `file` is a live handle; `dims` points to `capacity` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn ra_file_dims(
    file: *const RaFile,
    order: c_int,
    dims: *mut u64,
    capacity: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        // SAFETY: the caller's promise about `dims`.
        unsafe { put_dims(&f.header().dims, dims, capacity, order, "dims") }
    })
}

/// The chunk shape of a chunked file into `chunks` (room for `capacity` values, one per dim),
/// in `order`. A file that is not chunked is a usage error.
///
/// # Safety
/// `file` is a live handle; `chunks` points to `capacity` writable `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn ra_file_chunks(
    file: *const RaFile,
    order: c_int,
    chunks: *mut u64,
    capacity: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        let Some(c) = f.reader.section().describe().chunks else {
            return Err(Failure::usage(format!(
                "{}: not chunked (stored {}): it has no chunk shape",
                f.path,
                f.reader.section().storage().name()
            )));
        };
        // SAFETY: the caller's promise about `chunks`.
        unsafe { put_dims(&c, chunks, capacity, order, "chunks") }
    })
}

/// Field `index` (0-based) of the record schema into `*out`. Its name is owned by the handle.
///
/// # Safety
/// `file` is a live handle; `out` points to a writable `ra_field_info`.
#[no_mangle]
pub unsafe extern "C" fn ra_file_field(
    file: *const RaFile,
    index: usize,
    out: *mut RaFieldInfo,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        let field = f.fields.get(index).ok_or_else(|| {
            Failure::usage(format!(
                "argument index: expected a field index below {} (the schema's fields), found {index}",
                f.fields.len()
            ))
        })?;
        let info = RaFieldInfo {
            name: field.name.as_ptr(),
            eltype: field.eltype,
            elbyte: field.elbyte,
            count: field.count,
            offset: field.offset,
            logical: field.logical.as_ptr(),
        };
        // SAFETY: the caller's promise about `out`.
        unsafe { put(out, info, "out") }
    })
}

/// Reads the whole array into `buf` of `buf_bytes` bytes, which must be exactly
/// `ra_file_data_bytes`: decoded (LZ4, chunked), in the file's element order (first dim
/// fastest, which is a C array declared with the dims reversed), values in the host's byte
/// order. Chunks never written read as zeros.
///
/// # Safety
/// `file` is a live handle; `buf` points to `buf_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ra_read_all(
    file: *const RaFile,
    buf: *mut c_void,
    buf_bytes: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        // SAFETY: the caller's promise about `buf`.
        let out = unsafe { buf_arg(buf, buf_bytes, "buf") }?;
        let ranges: Vec<Range<u64>> = f.header().dims.iter().map(|&d| 0..d).collect();
        f.read_box(&ranges, out)
    })
}

/// Reads the n-d box `start[i] .. start[i] + count[i]` (`ndims` dims, in `order`) into `buf`
/// of `buf_bytes` bytes, exactly the box's elements times elbyte, laid out as the box's own
/// array in the same order (`RA_ORDER_FILE`: first dim fastest; `RA_ORDER_C`: last fastest),
/// values in the host's byte order. Only the bytes (or, compressed, the chunk blocks) the box
/// touches are read. A box outside the array is a usage error naming the dim.
///
/// # Safety
/// `file` is a live handle; `start` and `count` point to `ndims` `uint64_t`s each; `buf`
/// points to `buf_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ra_read_box(
    file: *const RaFile,
    order: c_int,
    start: *const u64,
    count: *const u64,
    ndims: usize,
    buf: *mut c_void,
    buf_bytes: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        // SAFETY: the caller's promise about `start` and `count`.
        let ranges = unsafe { box_arg(start, count, ndims, order) }?;
        // SAFETY: the caller's promise about `buf`.
        let out = unsafe { buf_arg(buf, buf_bytes, "buf") }?;
        f.read_box(&ranges, out)
    })
}

/// Reads records `start .. start + count` (the last dim counts records) into `buf` of
/// `buf_bytes` bytes.
///
/// With `type` NULL they are packed, `ra_file_record_bytes` each, fields at the schema's
/// offsets (`ra_file_field`). With a record type (`ra_record_type_new`) they are laid out as
/// its C struct, `sizeof` each, every field at its C offset (padding left as `buf` had it);
/// the type's fields must be the file's schema's (names, types, order: else an error naming
/// the field that differs). Values come out in the host's byte order.
///
/// # Safety
/// `file` is a live handle; `type` is NULL or a live record type; `buf` points to
/// `buf_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ra_read_records(
    file: *const RaFile,
    r#type: *const RaRecordType,
    start: u64,
    count: u64,
    buf: *mut c_void,
    buf_bytes: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes a live handle.
        let f = unsafe { handle(file, "file") }?;
        let rtype = if r#type.is_null() {
            None
        } else {
            // SAFETY: not NULL: the caller passes a live record type.
            Some(unsafe { handle(r#type, "type") }?)
        };
        // SAFETY: the caller's promise about `buf`.
        let out = unsafe { buf_arg(buf, buf_bytes, "buf") }?;
        let record = f.record_bytes()?;
        let h = f.header();
        let records = h.dims.last().copied().unwrap_or(0);
        let end = start
            .checked_add(count)
            .filter(|&e| e <= records)
            .ok_or_else(|| {
                Failure::usage(format!(
                    "{}: records {start} + {count} asked for, the file holds {records}",
                    f.path
                ))
            })?;
        let mut ranges: Vec<Range<u64>> = h.dims.iter().map(|&d| 0..d).collect();
        if let Some(last) = ranges.last_mut() {
            *last = start..end;
        }
        let Some(t) = rtype else {
            return f.read_box(&ranges, out);
        };
        let schema = f
            .reader
            .trailer()
            .and_then(|t| t.schema.as_ref())
            .ok_or_else(|| {
                Failure::usage(format!(
                    "{}: the file has no record schema to match the record type against: read packed records (type NULL)",
                    f.path
                ))
            })?;
        let layout = t.layout()?;
        layout
            .check_against(schema, SchemaCheck::Fields)
            .map_err(|e| Failure::at(e, &f.path))?;
        if layout.size() != record {
            return Err(Failure::usage(format!(
                "{}: the record type packs to {} bytes, the file's records are {record}",
                f.path,
                layout.size()
            )));
        }
        let want = count.saturating_mul(t.c_size());
        if out.len() as u64 != want {
            return Err(Failure::usage(format!(
                "argument buf_bytes: expected {want} ({count} records of {} bytes), found {}",
                t.c_size(),
                out.len()
            )));
        }
        if t.is_packed() {
            return f.read_box(&ranges, out);
        }
        // In slices of records, so that the packed copy stays small whatever `count` is.
        let per = (4u64 << 20).div_ceil(record.max(1)).max(1);
        let mut packed = Vec::new();
        let mut at = start;
        while at < end {
            let n = per.min(end - at);
            packed.resize((n * record) as usize, 0);
            if let Some(last) = ranges.last_mut() {
                *last = at..at + n;
            }
            f.read_box(&ranges, &mut packed)?;
            let from = ((at - start) * t.c_size()) as usize;
            t.unpack(&packed, &mut out[from..from + (n * t.c_size()) as usize]);
            at += n;
        }
        Ok(())
    })
}
