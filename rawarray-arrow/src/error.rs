//! The error of every conversion: what went wrong, naming the file, column and type involved.

use arrow_schema::ArrowError;
use parquet::errors::ParquetError;

/// A failed conversion between `.ra` and Arrow, Parquet or Arrow IPC.
///
/// ```
/// use rawarray_arrow::Error;
/// let e = Error::Column { column: "name".into(), why: "Utf8 has no fixed width".into() };
/// assert_eq!(e.to_string(), "column 'name': Utf8 has no fixed width");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `.ra` side: a malformed file, a failed write (the library's error names the field).
    #[error(transparent)]
    Ra(#[from] rawarray_serde::Error),
    /// The `.ra` side, in a file this crate opened by its path.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong in it.
        source: rawarray_serde::Error,
    },
    /// Arrow itself refused an array or a schema.
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
    /// The Parquet reader or writer failed.
    #[error("parquet: {0}")]
    Parquet(#[from] ParquetError),
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A column that cannot become a record field (or a field that has no Arrow form).
    #[error("column '{column}': {why}")]
    Column {
        /// The column's name (a nested one as `outer.inner`).
        column: String,
        /// What is wrong with it: its type, and why that type cannot be stored.
        why: String,
    },
    /// A `.ra` file that has no table form: what it is and why.
    #[error("{0}")]
    NoTable(String),
}

/// The result of this crate's functions.
pub type Result<T> = std::result::Result<T, Error>;
