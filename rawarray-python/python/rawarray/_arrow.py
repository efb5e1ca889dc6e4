"""Record files as Arrow tables (doc/arrow.md): pyarrow, pandas, polars and DuckDB.

The mapping from ``.ra`` to Arrow is the Rust crate ``rawarray-arrow``'s; its batches reach
Python through the Arrow C stream interface (``__arrow_c_stream__``), so any library that speaks
the Arrow PyCapsule protocol reads them without a copy through numpy. pyarrow, pandas and polars
are optional: each is imported when first needed, and its absence is an ImportError naming it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np

from ._rawarray import ArrowStream, IoCounter, write_arrow

# Rows per batch of to_arrow_batches() by default, as the Rust crate's readers and `ra convert`.
DEFAULT_BATCH_ROWS = 1 << 16


def _require(module: str, what: str) -> Any:
    """Imports an optional dependency, or raises ImportError saying which one and for what."""
    try:
        return __import__(module)
    except ImportError as e:
        raise ImportError(
            f"{what} needs the optional package {module!r}: pip install {module}"
        ) from e


def stream(path: str, batch_rows: int = DEFAULT_BATCH_ROWS, columns: Any = None,
           filters: Any = None, counter: Any = None) -> ArrowStream:
    """The file at ``path`` as an object with ``__arrow_c_stream__`` and ``__arrow_c_schema__``
    (batches read on demand): only ``columns`` (names) when given, only the rows ``filters``
    keep (pyarrow's convention, read from only the chunks whose statistics allow a match), its
    reads added to ``counter``."""
    if isinstance(batch_rows, bool) or int(batch_rows) != batch_rows or batch_rows < 1:
        raise ValueError(f"rows per batch must be a positive integer, not {batch_rows!r}")
    if isinstance(columns, str):
        raise TypeError(f"columns= takes a list of column names, not the str {columns!r}")
    names = None if columns is None else [str(c) for c in columns]
    return ArrowStream(path, int(batch_rows), names, filters, counter)


def to_arrow_batches(source: Any) -> Any:
    """A ``pyarrow.RecordBatchReader`` over ``source`` (an object with ``__arrow_c_stream__``:
    a :class:`rawarray.File`'s stream)."""
    pa = _require("pyarrow", "to_arrow_batches()")
    return pa.RecordBatchReader.from_stream(source)


def to_arrow(source: Any) -> Any:
    """The whole of ``source`` as a ``pyarrow.Table``."""
    pa = _require("pyarrow", "to_arrow()")
    return pa.RecordBatchReader.from_stream(source).read_all()


def to_pandas(source: Any) -> Any:
    """``source`` as a ``pandas.DataFrame`` (through pyarrow)."""
    _require("pyarrow", "to_pandas()")
    _require("pandas", "to_pandas()")
    return to_arrow(source).to_pandas()


def to_polars(source: Any) -> Any:
    """``source`` as a ``polars.DataFrame`` (through pyarrow)."""
    pl = _require("polars", "to_polars()")
    _require("pyarrow", "to_polars()")
    return pl.from_arrow(to_arrow(source))


def is_table(obj: Any) -> bool:
    """Whether ``rawarray.write`` takes ``obj`` as a table: a pandas DataFrame, or a table with
    ``__arrow_c_stream__`` (a pyarrow Table, RecordBatch or RecordBatchReader, a polars
    DataFrame). A column (a pyarrow ChunkedArray, a pandas or polars Series) has a stream too,
    but no schema or columns: it stays an array, as numpy sees it."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return True
    return (hasattr(obj, "__arrow_c_stream__") and not hasattr(obj, "__array_interface__")
            and (hasattr(obj, "schema") or hasattr(obj, "columns")))


def write_table(path: str | os.PathLike[str], table: Any, params: Any = None) -> None:
    """Writes a table's rows as records, one field per column (doc/arrow.md, "Back to .ra")."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(table, pd.DataFrame):
        pa = _require("pyarrow", "rawarray.write(path, DataFrame)")
        # The index is not a column: a user who wants it writes df.reset_index().
        df, table = table, pa.Table.from_pandas(table, preserve_index=False)
        # from_pandas makes a NaN of a float column a null (pandas' "missing"), which a record
        # cannot hold: a numpy float column's NaN is a value, and is stored as one. Nullable
        # pandas dtypes (Float64, Int64) keep their missing values missing, refused by name.
        for i in range(df.shape[1]):
            col = df.iloc[:, i]
            if isinstance(col.dtype, np.dtype) and col.dtype.kind == "f":
                values = pa.array(col.to_numpy(), from_pandas=False)
                table = table.set_column(i, table.field(i), values)
    rows = getattr(table, "num_rows", None)
    write_arrow(
        os.fspath(path),
        table,
        None if params is None else json.dumps(params),
        rows if isinstance(rows, int) else None,
    )
