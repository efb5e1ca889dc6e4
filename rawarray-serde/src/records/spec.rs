//! What one record of a file is: [`ElementSpec`] (a value's type known at run time) and
//! [`RecordShape`] (a record's dims, values and bytes).

use crate::element::Element;
use crate::eltype::ElType;
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::layout::Layout;
use crate::section::Storage;

/// What one record is in a file: its dims, values and bytes.
#[derive(Clone, Debug)]
pub(crate) struct RecordShape {
    /// Dims of one record in values of the element type.
    pub dims: Vec<u64>,
    /// Values of the element type per record.
    pub values: usize,
    /// Bytes per record.
    pub bytes: u64,
}

impl RecordShape {
    /// The record shape of a file holding values of `T`; see [`RecordShape::of_spec`].
    pub fn of<T: Element>(header: &Header, expected: Option<&[u64]>) -> Result<RecordShape> {
        RecordShape::of_spec(&ElementSpec::of::<T>(), header, expected)
    }

    /// The record shape of a file holding values of `spec`, whose record dims must be
    /// `expected` if given. Compressed files and headers without a last dim to grow are
    /// refused.
    pub fn of_spec(
        spec: &ElementSpec,
        header: &Header,
        expected: Option<&[u64]>,
    ) -> Result<RecordShape> {
        let storage = Storage::of(header);
        if !storage.grows_in_place() {
            return Err(Error::unsupported(format!(
                "the file's data are stored as {}, which is written once, not grown in place: \
                 its records cannot be appended to or mapped (rewrite it plain or chunked \
                 first: DynArray, ra decompress)",
                storage.name()
            )));
        }
        let dims = spec.element_dims(header)?;
        let inner = &spec.inner_dims;
        let Some((_, record_dims)) = dims.split_last() else {
            return Err(ErrorKind::DimsMismatch {
                expected: format!(
                    "a record count after the element's own dims {inner:?}, as the last dim"
                ),
                found: header.dims.clone(),
            }
            .into());
        };
        if let Some(want) = expected.filter(|&w| w != record_dims) {
            let lead: Vec<u64> = inner.iter().chain(want).copied().collect();
            return Err(ErrorKind::DimsMismatch {
                expected: format!(
                    "leading dims {lead:?} (records of {want:?} values of {}), then the record count",
                    spec.name
                ),
                found: header.dims.clone(),
            }
            .into());
        }
        // Validated dims fit in a u64 byte count, but a usize may be narrower.
        let value_bytes = spec.value_bytes();
        let sizes = record_dims
            .iter()
            .try_fold(1usize, |a, &d| {
                usize::try_from(d).ok().and_then(|d| a.checked_mul(d))
            })
            .and_then(|values| Some((values, values.checked_mul(value_bytes)?)));
        let (values, bytes) = sizes.ok_or(ErrorKind::DataLenOverflow {
            elbyte: value_bytes as u64,
            dims: record_dims.to_vec(),
        })?;
        Ok(RecordShape {
            dims: record_dims.to_vec(),
            values,
            bytes: bytes as u64,
        })
    }
}

/// What one value of a record file is, known at run time: the facts [`RecordWriter<T>`](crate::RecordWriter) takes
/// from `T: Element` (element type, size, own dims, layout), for writers whose type is chosen
/// when the program runs ([`DynRecordWriter`](crate::DynRecordWriter): the Python package, tools).
///
/// ```
/// use rawarray_serde::{ElType, Element, ElementSpec};
/// let spec = ElementSpec::from_layout(<[f64; 3] as Element>::layout()).unwrap();
/// assert_eq!(spec, ElementSpec::of::<[f64; 3]>());
/// assert_eq!((spec.eltype(), spec.elbyte(), spec.inner_dims()), (ElType::Float, 8, &[3][..]));
/// ```
#[derive(Clone, Debug)]
pub struct ElementSpec {
    pub(super) eltype: ElType,
    pub(super) elbyte: u64,
    /// The value's own dims, first fastest (`[3]` for `[f64; 3]`).
    pub(super) inner_dims: Vec<u64>,
    pub(super) layout: Layout,
    /// For messages: the Rust type's name, or what the layout describes.
    name: String,
}

/// Two specs are equal when they describe the same values; the names in messages may differ.
impl PartialEq for ElementSpec {
    fn eq(&self, other: &ElementSpec) -> bool {
        (self.eltype, self.elbyte, &self.inner_dims, &self.layout)
            == (other.eltype, other.elbyte, &other.inner_dims, &other.layout)
    }
}

impl ElementSpec {
    /// The spec of a Rust element type.
    pub fn of<T: Element>() -> ElementSpec {
        let mut inner_dims = Vec::new();
        T::inner_dims(&mut inner_dims);
        ElementSpec {
            eltype: T::ELTYPE,
            elbyte: T::ELBYTE as u64,
            inner_dims,
            layout: T::layout(),
            name: std::any::type_name::<T>().to_string(),
        }
    }

    /// The spec of values laid out as `layout` (validated first: a schema from a file or a
    /// user is not trusted). Fixed arrays of a scalar or record become the value's own dims, as
    /// `[T; N]` does.
    pub fn from_layout(layout: Layout) -> Result<ElementSpec> {
        layout.validate()?;
        let (base, shape) = layout.split_shape();
        let (eltype, elbyte) = match base {
            Layout::Scalar { eltype, elbyte, .. } => (*eltype, *elbyte),
            Layout::Record { .. } => (ElType::User, base.size()),
            Layout::Array { .. } => unreachable!("split_shape strips every array"),
        };
        let inner_dims: Vec<u64> = shape.into_iter().rev().collect();
        let name = match base {
            Layout::Record { name, .. } => format!("record {name}"),
            _ => crate::eltype::type_label(eltype, elbyte),
        };
        Ok(ElementSpec {
            eltype,
            elbyte,
            inner_dims,
            layout,
            name,
        })
    }

    /// The element type of the file's header.
    pub fn eltype(&self) -> ElType {
        self.eltype
    }

    /// The elbyte of the file's header.
    pub fn elbyte(&self) -> u64 {
        self.elbyte
    }

    /// The value's own dims, first fastest; they lead the file's dims.
    pub fn inner_dims(&self) -> &[u64] {
        &self.inner_dims
    }

    /// The layout stored as the trailer's schema.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Bytes of one value.
    fn value_bytes(&self) -> usize {
        self.layout.size() as usize
    }

    /// The dims of a file of these values after the value's own dims, once its element type
    /// and leading dims are checked.
    fn element_dims(&self, header: &Header) -> Result<Vec<u64>> {
        if header.eltype != self.eltype || header.elbyte != self.elbyte {
            return Err(ErrorKind::TypeMismatch {
                file_eltype: header.eltype,
                file_elbyte: header.elbyte,
                requested: self.name.clone(),
                requested_eltype: self.eltype,
                requested_elbyte: self.elbyte,
            }
            .into());
        }
        if self.value_bytes() == 0 {
            return Err(Error::unsupported(format!(
                "{} is zero-sized: a .ra element needs at least one byte",
                self.name
            )));
        }
        if !header.dims.starts_with(&self.inner_dims) {
            return Err(ErrorKind::DimsMismatch {
                expected: format!("leading dims {:?} for {}", self.inner_dims, self.name),
                found: header.dims.clone(),
            }
            .into());
        }
        Ok(header.dims[self.inner_dims.len()..].to_vec())
    }
}
