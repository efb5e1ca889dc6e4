//! Conversions between [`RawArray`] and `ndarray::ArrayD` (feature `ndarray`).
//!
//! A `.ra` array is column-major, which ndarray calls Fortran order: converting a `RawArray`
//! into an `ArrayD` moves the data without copying. The other way moves it too when the
//! `ArrayD` is in Fortran order with no offset, and copies in column-major order otherwise.

use ndarray::{ArrayD, IxDyn, ShapeBuilder};

use crate::array::RawArray;
use crate::element::Element;
use crate::error::{Error, Result};

impl<T: Element> RawArray<T> {
    /// The array as an `ndarray::ArrayD` of the same shape (Fortran order, no copy).
    ///
    /// ```
    /// use rawarray_serde::RawArray;
    /// let a = RawArray::from_shape_vec(vec![2, 3], vec![1, 2, 3, 4, 5, 6]).unwrap();
    /// let nd = a.into_ndarray().unwrap();
    /// assert_eq!(nd.shape(), &[2, 3]);
    /// assert_eq!(nd[[1, 2]], 6);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn into_ndarray(self) -> Result<ArrayD<T>> {
        let (dims, data) = self.into_parts();
        let shape = dims
            .iter()
            .map(|&d| crate::data::to_usize(d))
            .collect::<Result<Vec<usize>>>()?;
        ArrayD::from_shape_vec(IxDyn(&shape).f(), data).map_err(Error::unsupported)
    }

    /// A `RawArray` of an `ndarray::ArrayD`'s values and shape, in column-major order.
    ///
    /// ```
    /// use rawarray_serde::RawArray;
    /// let nd = ndarray::arr2(&[[1u8, 2, 3], [4, 5, 6]]).into_dyn(); // C order
    /// let a = RawArray::from_ndarray(nd);
    /// assert_eq!(a.dims(), &[2, 3]);
    /// assert_eq!(a.as_slice(), &[1, 4, 2, 5, 3, 6]);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn from_ndarray(array: ArrayD<T>) -> RawArray<T>
    where
        T: Clone,
    {
        let dims: Vec<u64> = array.shape().iter().map(|&d| d as u64).collect();
        // Reversing the axes of a Fortran-order array gives a standard (C-order) one whose
        // memory order is the column-major order we want.
        let reversed = array.reversed_axes();
        let data = if reversed.is_standard_layout() {
            let len = reversed.len();
            match reversed.into_raw_vec_and_offset() {
                (v, Some(0) | None) if v.len() == len => v,
                (v, offset) => {
                    let start = offset.unwrap_or(0);
                    v[start..start + len].to_vec()
                }
            }
        } else {
            reversed.iter().cloned().collect()
        };
        RawArray::from_shape_vec(dims, data).expect("ndarray shape matches its length")
    }
}
