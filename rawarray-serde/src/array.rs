//! Typed n-dimensional arrays ([`RawArray`]) and the dynamically typed reader ([`DynArray`]).

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::atomic::write_atomic;
use crate::data;
use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::fileio::{reading, stable_header_any};
use crate::header::{checked_product, Flags, Header};
use crate::options::WriteOptions;
use crate::section::stream;
use crate::section::write::{write_section, write_section_to, InOrder, PlainBytes, Sink};
use crate::section::Section;
use crate::trailer::{data_end, Trailer, Trailing};

/// The newtype name under which an embedded `.ra` file travels through serde: this module's
/// `Serialize` impls send a whole file under it, and the serializer and deserializer store it
/// as one element.
pub(crate) const EMBEDDED: &str = "$rawarray::embedded";

/// A typed n-dimensional array in column-major order (the first index varies fastest), as a
/// `.ra` file stores it.
///
/// `dims` count values of `T`; a `T` that is itself a fixed array adds its own dims in front
/// when written, so a `RawArray<[f32; 3]>` of `n` points is the file `f32 [3, n]`.
///
/// ```
/// use rawarray_serde::RawArray;
/// let a = RawArray::from_shape_vec(vec![2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
/// assert_eq!(a.get(&[1, 2]), Some(&6.0)); // column-major: index 1 + 2 * 2
/// let bytes = a.to_bytes();
/// assert_eq!(bytes.len(), 48 + 2 * 8 + 6 * 4);
/// let back: RawArray<f32> = RawArray::from_bytes(&bytes).unwrap();
/// assert_eq!(back, a);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawArray<T> {
    dims: Vec<u64>,
    data: Vec<T>,
}

impl<T: Element> RawArray<T> {
    /// A one-dimensional array.
    pub fn from_vec(data: Vec<T>) -> RawArray<T> {
        RawArray {
            dims: vec![data.len() as u64],
            data,
        }
    }

    /// A zero-dimensional array (a scalar, `ndims` 0).
    pub fn scalar(value: T) -> RawArray<T> {
        RawArray {
            dims: Vec::new(),
            data: vec![value],
        }
    }

    /// An array of the given dims (first fastest) over `data`, whose length must be their product.
    pub fn from_shape_vec(dims: impl Into<Vec<u64>>, data: Vec<T>) -> Result<RawArray<T>> {
        let dims = dims.into();
        check_shape(&dims, data.len())?;
        Ok(RawArray { dims, data })
    }

    /// The same values under new dims with the same number of elements.
    pub fn reshape(self, dims: impl Into<Vec<u64>>) -> Result<RawArray<T>> {
        RawArray::from_shape_vec(dims, self.data)
    }

    /// The dims, first varying fastest.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Number of dims.
    pub fn ndims(&self) -> usize {
        self.dims.len()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The values in column-major order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The values in column-major order, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The values, consuming the array.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }

    /// The dims and the values, consuming the array.
    pub fn into_parts(self) -> (Vec<u64>, Vec<T>) {
        (self.dims, self.data)
    }

    /// The position of a multi-index in the data (column-major), if it is in bounds.
    pub fn offset(&self, index: &[u64]) -> Option<usize> {
        if index.len() != self.dims.len() {
            return None;
        }
        let mut offset = 0u64;
        let mut stride = 1u64;
        for (&i, &d) in index.iter().zip(&self.dims) {
            if i >= d {
                return None;
            }
            offset += i * stride;
            stride *= d;
        }
        Some(offset as usize)
    }

    /// The value at a multi-index (column-major: the first index varies fastest).
    pub fn get(&self, index: &[u64]) -> Option<&T> {
        self.offset(index).map(|o| &self.data[o])
    }

    /// The value at a multi-index, mutably.
    pub fn get_mut(&mut self, index: &[u64]) -> Option<&mut T> {
        self.offset(index).map(move |o| &mut self.data[o])
    }

    /// The dims as written in a file: the element's own dims, then the array's.
    pub fn file_dims(&self) -> Vec<u64> {
        let mut dims = Vec::with_capacity(self.dims.len() + 1);
        T::inner_dims(&mut dims);
        dims.extend_from_slice(&self.dims);
        dims
    }

    /// The header of this array written little-endian and uncompressed.
    pub fn header(&self) -> Header {
        Header {
            flags: Flags::NONE,
            eltype: T::ELTYPE,
            elbyte: T::ELBYTE as u64,
            size: (self.data.len() * T::PACKED_SIZE) as u64,
            dims: self.file_dims(),
        }
    }

    /// Reads an array from a whole file's bytes (trailing bytes are ignored).
    pub fn from_bytes(bytes: &[u8]) -> Result<RawArray<T>> {
        let header = Header::decode_any(bytes)?;
        let dims = element_dims::<T>(&header)?;
        let data = values_of(&Section::open(&header, bytes)?)?;
        Ok(RawArray { dims, data })
    }

    /// Reads an array from a stream, leaving it after the data section.
    pub fn read_from<R: Read>(mut reader: R) -> Result<RawArray<T>> {
        let header = Header::read_from_any(&mut reader)?;
        let dims = element_dims::<T>(&header)?;
        let data = stream::read_values(&header, &mut reader, None)?;
        Ok(RawArray { dims, data })
    }

    /// Reads an array from a file. Its length is checked against the header before anything
    /// is allocated, and the data is read into the final buffer (plain data of 32 MiB or more
    /// in 4 MiB pieces on up to 4 threads, the caller's among them). Errors
    /// name the file; memory that cannot be had is an error ([`ErrorKind::TooLarge`]), never
    /// an abort.
    pub fn read_file(path: impl AsRef<Path>) -> Result<RawArray<T>> {
        reading(path.as_ref(), |path| {
            // The element type is checked before the length, as `from_bytes` and `read_from`
            // do, so that one file gives one error whichever way it is read.
            let (file, header, dims) = open_file(path, element_dims::<T>)?;
            let data = values_of(&Section::open(&header, &file)?)?;
            Ok(RawArray { dims, data })
        })
    }

    /// Writes the array little-endian and uncompressed.
    pub fn write_to<W: Write>(&self, writer: W) -> Result<()> {
        self.write_to_with(writer, &WriteOptions::default())
    }

    /// Writes the array with the given byte order and compression.
    pub fn write_to_with<W: Write>(&self, mut writer: W, opts: &WriteOptions) -> Result<()> {
        self.write_to_sink(&mut InOrder(&mut writer), opts)
    }

    /// [`write_to_with`](Self::write_to_with) into a [`Sink`]: an object-store upload
    /// (`store::StoreUrl::put_atomic` on S3, GCS and Azure, feature `cloud`) takes a chunked
    /// section's chunks as they are encoded and its header, config and index last.
    ///
    /// ```
    /// use rawarray_serde::section::write::InOrder;
    /// use rawarray_serde::{RawArray, WriteOptions};
    /// let a = RawArray::from_shape_vec(vec![4], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    /// let mut file = Vec::new();
    /// a.write_to_sink(&mut InOrder(&mut file), &WriteOptions::for_name("zstd")?)?;
    /// assert_eq!(RawArray::<f32>::from_bytes(&file)?, a);
    /// # Ok::<(), rawarray_serde::Error>(())
    /// ```
    pub fn write_to_sink(&self, w: &mut dyn Sink, opts: &WriteOptions) -> Result<()> {
        check_element::<T>()?;
        let be = opts.is_big_endian();
        let pieces = |w: &mut dyn Write| data::write_values(&self.data, be, w);
        let whole = || Ok(packed_bytes(&self.data, be).into_owned());
        let plain = match T::as_pod_bytes(&self.data) {
            Some(b) if !be => PlainBytes::new(b),
            _ => PlainBytes::packed(self.header().size, &pieces, &whole),
        };
        let mut trailer = plain_trailer::<T>();
        if opts.is_lossy() {
            trailer
                .get_or_insert_with(|| Trailer::new(serde_json::Value::Null).expect("null"))
                .mark_lossy(&opts.get_filters());
        }
        let schema = trailer.as_ref().and_then(|t| t.schema.clone());
        // The header written (its flags and size) is the one the trailer's `at` follows.
        let header = write_section_to(w, &self.header(), opts, schema.as_ref(), &plain)?;
        if let Some(trailer) = trailer {
            w.write_all(&trailer.encode_block(data_end(&header)))?;
        }
        w.flush()?;
        Ok(())
    }

    /// The bytes of the file, little-endian and uncompressed.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(self.header().encoded_len() + self.data.len() * T::PACKED_SIZE);
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Writes the array to a file atomically: a temporary file in the same folder, renamed
    /// over `path`. On any error the old file at `path`, if any, is untouched. A file it
    /// replaces is synced first, so that a power cut cannot cost the old content; a new file
    /// is not synced. Data of 64 MiB or more is written on two threads on ext4 or XFS, which
    /// turns a file system failing under the write into `SIGBUS` rather than an error (see
    /// [`write_atomic`](crate::atomic::write_atomic)).
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        self.write_file_with(path, &WriteOptions::default())
    }

    /// [`RawArray::write_file`] with the given byte order and compression.
    pub fn write_file_with(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<()> {
        let path = path.as_ref();
        // A failure while writing (a full disk) names the file, as a failure to start does.
        write_atomic(path, |w| self.write_to_sink(&mut InOrder(w), opts))
            .map_err(|e: Error| e.in_file(path))
    }
}

impl<T: Element> From<Vec<T>> for RawArray<T> {
    fn from(v: Vec<T>) -> RawArray<T> {
        RawArray::from_vec(v)
    }
}

fn check_element<T: Element>() -> Result<()> {
    if T::PACKED_SIZE == 0 {
        return Err(Error::unsupported(format!(
            "{} is zero-sized: a .ra element needs at least one byte",
            std::any::type_name::<T>()
        )));
    }
    Ok(())
}

fn check_shape(dims: &[u64], len: usize) -> Result<()> {
    let expected = checked_product(1, dims);
    if expected != Some(len as u64) {
        return Err(ErrorKind::ShapeMismatch {
            dims: dims.to_vec(),
            expected: expected.unwrap_or(u64::MAX),
            len: len as u64,
        }
        .into());
    }
    Ok(())
}

/// Checks that `header` holds values of `T` and returns the dims left once `T`'s own dims
/// (for fixed arrays) are taken off the front.
pub(crate) fn element_dims<T: Element>(header: &Header) -> Result<Vec<u64>> {
    check_element::<T>()?;
    if header.eltype != T::ELTYPE || header.elbyte != T::ELBYTE as u64 {
        return Err(ErrorKind::TypeMismatch {
            file_eltype: header.eltype,
            file_elbyte: header.elbyte,
            requested: std::any::type_name::<T>().to_string(),
            requested_eltype: T::ELTYPE,
            requested_elbyte: T::ELBYTE as u64,
        }
        .into());
    }
    let mut inner = Vec::new();
    T::inner_dims(&mut inner);
    if !header.dims.starts_with(&inner) {
        return Err(ErrorKind::DimsMismatch {
            expected: format!("leading dims {inner:?} for {}", std::any::type_name::<T>()),
            found: header.dims.clone(),
        }
        .into());
    }
    Ok(header.dims[inner.len()..].to_vec())
}

/// Opens a file and reads its header; returns the file at the first data byte and the
/// number of bytes after the header, checked (after `check`) to hold the data section.
fn open_file<C>(
    path: &Path,
    check: impl FnOnce(&Header) -> Result<C>,
) -> Result<(File, Header, C)> {
    let file = File::open(path)?;
    // Read whole and untorn, as a record writer may be appending to the file.
    let header = stable_header_any(&file)?;
    let checked = check(&header)?;
    // The length after the header: a record writer appending to the file writes the data
    // before the header that counts it, so a length taken first could be shorter than the
    // data the header then describes.
    let len = file.metadata()?.len();
    header.check_input_len(len)?;
    Ok((file, header, checked))
}

/// A section's elements as values of `T` (whose type the caller has checked): straight into
/// their memory for POD types; decoded a piece at a time for others, so that the section's
/// bytes and the values are never both held.
fn values_of<T: Element, S: crate::io::ReadAt>(section: &Section<S>) -> Result<Vec<T>> {
    let h = section.header();
    let n = data::to_usize(h.data_len() / T::PACKED_SIZE.max(1) as u64)?;
    if data::zeroed_pod::<T>(0)?.is_some() {
        return data::values_filled(n, h.is_big_endian(), |dst| section.read_all_into(dst));
    }
    let mut out: Vec<T> = Vec::new();
    data::try_reserve(&mut out, n)?;
    let mut failed = None;
    // Small pieces: the values are the allocation that counts (a file's worth), the piece a
    // few pages beside them.
    let piece = ((32 << 10) / T::PACKED_SIZE.max(1)).max(1) * T::PACKED_SIZE.max(1);
    section.for_each_piece(u64::MAX, piece, |bytes| {
        match data::decode_into(bytes, h.is_big_endian(), &mut out) {
            Ok(()) => std::ops::ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                std::ops::ControlFlow::Break(())
            }
        }
    })?;
    failed.map_or(Ok(out), Err)
}

/// The packed bytes of `values`: their memory where it already is the encoding.
fn packed_bytes<T: Element>(values: &[T], big_endian: bool) -> Cow<'_, [u8]> {
    match T::as_pod_bytes(values) {
        Some(b) if !big_endian => Cow::Borrowed(b),
        _ => Cow::Owned(data::encode_values(values, big_endian)),
    }
}

/// A `.ra` file of any element type: the header, the data as plain bytes, and the trailing
/// bytes after the data ("volatile metadata"), for tools that do not know the type ahead.
///
/// The data is decompressed, and primitive elements are put in little-endian order (the
/// header then says little-endian). User-defined (eltype 0) elements of a big-endian file keep
/// their bytes and their big-endian flag, since the header does not describe their scalars.
/// Trailing bytes are kept and written back by [`DynArray::write_to`].
///
/// ```
/// use rawarray_serde::{DynArray, ElType, RawArray};
/// let mut bytes = RawArray::from_vec(vec![1u16, 2, 3]).to_bytes();
/// bytes.extend_from_slice(b"notes");
/// let d = DynArray::from_bytes(&bytes).unwrap();
/// assert_eq!(d.header().eltype, ElType::Uint);
/// assert_eq!(d.data(), &[1, 0, 2, 0, 3, 0]);
/// assert_eq!(d.trailer_bytes(), b"notes");
/// assert_eq!(d.to_bytes().unwrap(), bytes);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynArray {
    header: Header,
    data: Vec<u8>,
    trailer: Trailing,
}

impl DynArray {
    /// An array of `dims` elements of `eltype`/`elbyte` over little-endian `data`.
    pub fn new(eltype: ElType, elbyte: u64, dims: Vec<u64>, data: Vec<u8>) -> Result<DynArray> {
        let header = Header::new(eltype, elbyte, dims)?;
        if header.size != data.len() as u64 {
            return Err(ErrorKind::SizeMismatch {
                size: data.len() as u64,
                expected: header.size,
            }
            .into());
        }
        Ok(DynArray {
            header,
            data,
            trailer: Trailing::default(),
        })
    }

    /// The untyped form of a typed array.
    pub fn from_typed<T: Element>(array: &RawArray<T>) -> DynArray {
        let header = array.header();
        let trailer = plain_trailer::<T>()
            .map(|t| t.encode_block(data_end(&header)))
            .unwrap_or_default();
        DynArray {
            header,
            data: data::encode_values(array.as_slice(), false),
            trailer: Trailing::new(trailer),
        }
    }

    /// The header; `size` is the plain data length, and the flags say compressed no more.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The plain data bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The bytes after the data section, empty if none.
    pub fn trailer_bytes(&self) -> &[u8] {
        &self.trailer.bytes
    }

    /// Replaces the bytes written after the data section.
    pub fn set_trailer_bytes(&mut self, trailer: Vec<u8>) {
        self.trailer = Trailing::new(trailer);
    }

    /// The metadata [`Trailer`] in the bytes after the data, `None` if there is none or it is
    /// damaged ([`DynArray::trailer_error`] says why), as every reader's `trailer()` answers.
    ///
    /// ```
    /// use rawarray_serde::{DynArray, RawArray, Trailer};
    /// let mut a = DynArray::from_typed(&RawArray::from_vec(vec![1.5f32, 2.5]));
    /// assert_eq!(a.trailer(), None);
    /// a.set_trailer(&Trailer::for_element::<f32>(serde_json::json!({"units": "K"})).unwrap());
    /// let back = DynArray::from_bytes(&a.to_bytes().unwrap()).unwrap();
    /// assert_eq!(back.trailer().unwrap().params["units"], "K");
    /// assert_eq!(back.trailer_error(), None);
    /// ```
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.trailer()
    }

    /// Why the bytes after the data look like a trailer block but cannot be read (torn,
    /// corrupt, a bad schema), if so; the data is still there.
    pub fn trailer_error(&self) -> Option<&str> {
        self.trailer.error()
    }

    /// Replaces the bytes after the data section with one trailer block, placed for a file
    /// written little-endian and uncompressed (the block's `at` field names its offset there).
    pub fn set_trailer(&mut self, trailer: &Trailer) {
        let at = (self.header.encoded_len() + self.data.len()) as u64;
        self.trailer = Trailing::new(trailer.encode_block(at));
    }

    /// Header, data and trailing bytes.
    pub fn into_parts(self) -> (Header, Vec<u8>, Vec<u8>) {
        (self.header, self.data, self.trailer.bytes)
    }

    /// The same data under new dims with the same number of elements.
    pub fn reshape(&mut self, dims: Vec<u64>) -> Result<()> {
        let old = self.header.num_elements();
        let new = checked_product(1, &dims);
        if new != Some(old) {
            return Err(ErrorKind::ShapeMismatch {
                expected: new.unwrap_or(u64::MAX),
                dims,
                len: old,
            }
            .into());
        }
        self.header.dims = dims;
        Ok(())
    }

    /// The data as a typed array; the element type must match the header.
    pub fn to_typed<T: Element>(&self) -> Result<RawArray<T>> {
        let dims = element_dims::<T>(&self.header)?;
        let data = data::decode_values(&self.data, self.header.is_big_endian())?;
        Ok(RawArray { dims, data })
    }

    /// Reads a whole file's bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<DynArray> {
        let header = Header::decode_any(bytes)?;
        let section = Section::open(&header, bytes)?;
        let data = section.read_all()?;
        let trailer = bytes[(header.encoded_len() as u64 + header.size) as usize..].to_vec();
        DynArray::from_plain(header, data, trailer)
    }

    /// Reads a stream to its end.
    pub fn read_from<R: Read>(mut reader: R) -> Result<DynArray> {
        let header = Header::read_from_any(&mut reader)?;
        let data = stream::read_bytes(&header, &mut reader, None)?;
        let mut trailer = Vec::new();
        reader.read_to_end(&mut trailer)?;
        DynArray::from_plain(header, data, trailer)
    }

    /// Reads a file. Errors name it; memory that cannot be had is an error
    /// ([`ErrorKind::TooLarge`]), never an abort.
    pub fn read_file(path: impl AsRef<Path>) -> Result<DynArray> {
        reading(path.as_ref(), |path| {
            let (file, header, ()) = open_file(path, |_| Ok(()))?;
            let data = Section::open(&header, &file)?.read_all()?;
            // Then on to the trailing bytes.
            let end = header.encoded_len() as u64 + header.size;
            let mut trailer = Vec::new();
            let len = file.metadata()?.len().saturating_sub(end);
            data::try_reserve(&mut trailer, data::to_usize(len)?)?;
            let mut f = &file;
            f.seek(SeekFrom::Start(end))?;
            f.read_to_end(&mut trailer)?;
            DynArray::from_plain(header, data, trailer)
        })
    }

    /// The array of a data section already decoded (`header` still says how it was stored).
    fn from_plain(mut header: Header, mut data: Vec<u8>, trailer: Vec<u8>) -> Result<DynArray> {
        if header.is_big_endian() && data::swap_by_eltype(&mut data, header.eltype, header.elbyte) {
            header.flags = header.flags.with(Flags::BIG_ENDIAN, false);
        }
        let at = (header.encoded_len() + data.len()) as u64;
        // A compressed section's trailer block sat at the stored data's end: it moves to the
        // decoded data's end.
        let trailer = crate::trailer::retarget(&trailer, data_end(&header), at).unwrap_or(trailer);
        header.flags = header
            .flags
            .with(Flags::COMPRESSED, false)
            .with(Flags::CHUNKED, false);
        header.size = data.len() as u64;
        Ok(DynArray {
            header,
            data,
            trailer: Trailing::new(trailer),
        })
    }

    /// Writes header, data and trailing bytes, little-endian and uncompressed.
    pub fn write_to<W: Write>(&self, writer: W) -> Result<()> {
        self.write_to_with(writer, &WriteOptions::default())
    }

    /// Writes with the given byte order and compression. The byte order of user-defined
    /// elements cannot be changed (their scalars are unknown), so asking for it is an error.
    pub fn write_to_with<W: Write>(&self, mut writer: W, opts: &WriteOptions) -> Result<()> {
        self.write_dyn(&mut writer, opts)
    }

    fn write_dyn(&self, w: &mut dyn Write, opts: &WriteOptions) -> Result<()> {
        let mut data = Cow::Borrowed(&self.data[..]);
        if opts.is_big_endian() != self.header.is_big_endian()
            && !data::swap_by_eltype(data.to_mut(), self.header.eltype, self.header.elbyte)
        {
            return Err(Error::unsupported(format!(
                "cannot change the byte order of user-defined elements ({} bytes each): their layout is unknown",
                self.header.elbyte
            )));
        }
        let schema = self.trailer().and_then(|t| t.schema.clone());
        // Into a buffer first: the trailer's new place is known once the section is written.
        let mut out = Vec::new();
        let header = write_section(
            &mut out,
            &self.header,
            opts,
            schema.as_ref(),
            &PlainBytes::new(&data),
        )?;
        let lossy = opts.is_lossy();
        w.write_all(&out)?;
        if lossy && (self.trailer.bytes.is_empty() || self.trailer().is_some()) {
            // Rounded now: the trailer says so (a new one if there was none).
            let mut t = self
                .trailer()
                .cloned()
                .unwrap_or_else(|| Trailer::new(serde_json::Value::Null).expect("null"));
            t.mark_lossy(&opts.get_filters());
            w.write_all(&t.encode_block(data_end(&header)))?;
        } else {
            // A trailer block at the old data end says so in its `at`; it moves with the data
            // end (a lossy mark in it with it).
            let old_end = (self.header.encoded_len() + self.data.len()) as u64;
            let moved = crate::trailer::retarget(&self.trailer.bytes, old_end, data_end(&header));
            w.write_all(moved.as_deref().unwrap_or(&self.trailer.bytes))?;
        }
        w.flush()?;
        Ok(())
    }

    /// The file's bytes, little-endian and uncompressed, trailing bytes included.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(
            self.header.encoded_len() + self.data.len() + self.trailer.bytes.len(),
        );
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes to a file atomically (see [`RawArray::write_file`]).
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        self.write_file_with(path, &WriteOptions::default())
    }

    /// [`DynArray::write_file`] with the given byte order and compression.
    pub fn write_file_with(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<()> {
        let path = path.as_ref();
        write_atomic(path, |w| self.write_dyn(w, opts)).map_err(|e: Error| e.in_file(path))
    }
}

/// A `RawArray` serializes as a whole embedded `.ra` file: in a `.ra` serializer, a
/// `Vec<RawArray<T>>` of equal-sized arrays is an array of user-defined (eltype 0) elements,
/// each one a valid `.ra` file (".ra inside .ra"). Other serde formats see a byte string.
impl<T: Element> serde::Serialize for RawArray<T> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(EMBEDDED, serde_bytes::Bytes::new(&self.to_bytes()))
    }
}

impl<'de, T: Element> serde::Deserialize<'de> for RawArray<T> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct EmbeddedVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Element> serde::de::Visitor<'de> for EmbeddedVisitor<T> {
            type Value = RawArray<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the bytes of a .ra file")
            }

            fn visit_bytes<E: serde::de::Error>(
                self,
                v: &[u8],
            ) -> std::result::Result<RawArray<T>, E> {
                RawArray::from_bytes(v).map_err(E::custom)
            }

            fn visit_newtype_struct<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<RawArray<T>, D::Error> {
                d.deserialize_bytes(self)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<RawArray<T>, A::Error> {
                let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
                while let Some(b) = seq.next_element::<u8>()? {
                    bytes.push(b);
                }
                self.visit_bytes(&bytes)
            }
        }

        deserializer.deserialize_newtype_struct(EMBEDDED, EmbeddedVisitor(std::marker::PhantomData))
    }
}

/// The trailer a plain array of `T` carries: the schema of its base scalar when that has a
/// logical type (`bool`), so readers see booleans where the header says `u8`; `None` otherwise.
pub(crate) fn plain_trailer<T: Element>() -> Option<Trailer> {
    let schema = T::layout().plain_schema()?;
    Some(
        Trailer::new(serde_json::Value::Null)
            .expect("null serializes")
            .with_schema(schema),
    )
}
