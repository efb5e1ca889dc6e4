//! Support for the impls `#[derive(RaRecord)]` generates: small constructors that keep the
//! generated code short, and the probe that finds out whether a record is plain old data.
//!
//! # Choosing the one-copy path without a bound
//!
//! A derived record is moved in one copy when its memory *is* its packed little-endian bytes:
//! the type is `bytemuck::Pod` (or `NoUninit`, for writing only), its fields sit at their packed
//! offsets, it has no padding, every field is itself one-copy, and the machine is
//! little-endian. The derive cannot see trait impls, and `Element` cannot require `Pod`, so the
//! generated (non-generic) impl asks the compiler with autoref-based specialization:
//! `(&&&Probe::<Self>::NEW).pod_ops()` resolves to [`ViaPod`] when `Self: Pod`, else to
//! [`ViaNoUninit`] when `Self: NoUninit`, else to [`ViaNothing`]. Method lookup tries the
//! receiver with the most references first and skips impls whose where-clause fails, which for
//! a concrete `Self` is decided at compile time; no `unsafe` and no runtime test of the type is
//! involved. (In a generic impl the bound could not be decided, so generic records always pack
//! field by field.) The layout conditions are constants the generated code checks next to it.

use std::marker::PhantomData;

use bytemuck::{NoUninit, Pod};

use crate::error::{Error, ErrorKind};
use crate::layout::{Field, Layout};

pub use std::vec::Vec;

/// The packed size of a record from its fields' packed sizes.
pub const fn total<const N: usize>(sizes: [usize; N]) -> usize {
    let mut sum = 0;
    let mut i = 0;
    while i < N {
        sum += sizes[i];
        i += 1;
    }
    sum
}

/// The offset of each field of a record from the fields' packed sizes, in declaration order.
pub const fn offsets<const N: usize>(sizes: [usize; N]) -> [usize; N] {
    let mut offsets = [0; N];
    let mut i = 1;
    while i < N {
        offsets[i] = offsets[i - 1] + sizes[i - 1];
        i += 1;
    }
    offsets
}

/// A record layout from its name and fields.
pub fn record<const N: usize>(name: &str, fields: [Field; N]) -> Layout {
    Layout::Record {
        name: name.to_string(),
        fields: Vec::from(fields),
    }
}

/// One field of a record layout.
pub fn field(name: &str, offset: usize, layout: Layout) -> Field {
    Field {
        name: name.to_string(),
        offset: offset as u64,
        layout,
    }
}

/// The error of `read_le` given a slice that is not one packed record.
#[cold]
pub fn wrong_len(record: &str, expected: usize, got: usize) -> Error {
    ErrorKind::Message(format!("record {record} needs {expected} bytes, got {got}")).into()
}

/// The values' memory.
pub type AsBytes<T> = fn(&[T]) -> &[u8];
/// The values' memory, writable.
pub type AsBytesMut<T> = fn(&mut [T]) -> &mut [u8];
/// Bytes viewed as values if aligned and sized.
pub type CastSlice<T> = fn(&[u8]) -> Option<&[T]>;

/// The one-copy operations a type supports, as `bytemuck` provides them for its bounds.
#[allow(clippy::type_complexity)] // plain fn pointers, one per Element hook
pub struct PodOps<T> {
    /// The values' memory (`T: NoUninit`).
    pub as_bytes: Option<AsBytes<T>>,
    /// The values' memory, writable (`T: Pod`).
    pub as_bytes_mut: Option<AsBytesMut<T>>,
    /// `len` zeroed values (`T: Pod`), or an error if the memory cannot be had.
    pub zeroed_vec: Option<fn(usize) -> crate::Result<Vec<T>>>,
    /// Bytes viewed as values if aligned and sized (`T: Pod`).
    pub cast_slice: Option<CastSlice<T>>,
}

/// The receiver of the autoref probe; see the module documentation.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// The probe for `T`.
    pub const NEW: Probe<T> = Probe(PhantomData);
}

/// Highest priority: `T: Pod`, every operation is one copy.
pub trait ViaPod {
    /// The probed type.
    type Item;
    /// The operations the probed type supports.
    fn pod_ops(&self) -> PodOps<Self::Item>;
}

impl<T: Pod> ViaPod for &&Probe<T> {
    type Item = T;
    fn pod_ops(&self) -> PodOps<T> {
        PodOps {
            as_bytes: Some(bytemuck::cast_slice::<T, u8>),
            as_bytes_mut: Some(bytemuck::cast_slice_mut::<T, u8>),
            zeroed_vec: Some(crate::data::try_zeroed_vec::<T>),
            cast_slice: Some(|bytes| bytemuck::try_cast_slice(bytes).ok()),
        }
    }
}

/// Second: `T: NoUninit` (a record with `bool` fields, say), writes are one copy.
pub trait ViaNoUninit {
    /// The probed type.
    type Item;
    /// The operations the probed type supports.
    fn pod_ops(&self) -> PodOps<Self::Item>;
}

impl<T: NoUninit> ViaNoUninit for &Probe<T> {
    type Item = T;
    fn pod_ops(&self) -> PodOps<T> {
        PodOps {
            as_bytes: Some(bytemuck::cast_slice::<T, u8>),
            as_bytes_mut: None,
            zeroed_vec: None,
            cast_slice: None,
        }
    }
}

/// Fallback: no one-copy operation.
pub trait ViaNothing {
    /// The probed type.
    type Item;
    /// The operations the probed type supports.
    fn pod_ops(&self) -> PodOps<Self::Item>;
}

impl<T> ViaNothing for Probe<T> {
    type Item = T;
    fn pod_ops(&self) -> PodOps<T> {
        PodOps {
            as_bytes: None,
            as_bytes_mut: None,
            zeroed_vec: None,
            cast_slice: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::needless_borrow)] // the autoref probe needs exactly these borrows
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct NotPod(#[allow(dead_code)] u32);

    #[test]
    // The borrows are the point: each level of reference is one step down in priority.
    #[allow(clippy::needless_borrow)]
    fn probe_picks_the_strongest_bound() {
        let pod = (&&&Probe::<u32>::NEW).pod_ops();
        assert!(pod.as_bytes.is_some() && pod.as_bytes_mut.is_some());
        let no_uninit = (&&&Probe::<bool>::NEW).pod_ops();
        assert!(no_uninit.as_bytes.is_some() && no_uninit.as_bytes_mut.is_none());
        let nothing = (&&&Probe::<NotPod>::NEW).pod_ops();
        assert!(nothing.as_bytes.is_none() && nothing.zeroed_vec.is_none());
    }
}
