"""Ragged arrays (doc/format.md, section 10): rows of different lengths, one run of values and
``rows + 1`` offsets into it. ``rawarray.read`` of a ragged file returns a :class:`Ragged` whose
``offsets`` and ``values`` are numpy views of the file's memory map; ``rawarray.open`` returns a
:class:`RaggedFile` that reads one row per ``f[k]``; ``rawarray.RaggedWriter`` (in ``_writers``)
appends rows. The format's rules (the header, the offsets, the text marker) are the Rust
library's."""

from __future__ import annotations

import os
import warnings
from typing import Any, Iterator

import numpy as np

from ._rawarray import shown_url as _shown
from ._rawarray import RaError
from ._rawarray import RaggedFile as _RaggedFile
from ._rawarray import write_ragged as _write_ragged
from ._axes import compression_of, in_numpy_order, numpy_order
from . import _arrow
from ._dtype import (RaWarning, _check_storable, _checked_bools, _descr_json, _element_dtype,
                     _little_endian, _user_stacklevel)

_BYTES = (bytes, bytearray, memoryview)


class Ragged:
    """A ragged array: rows of different lengths, each a run of values of one dtype, stored as
    one array of ``values`` and ``len(self) + 1`` ``offsets`` into it (Arrow's ``LargeList``
    layout), so row ``k`` is ``values[offsets[k]:offsets[k + 1]]``.

    ``Ragged(rows)`` takes a list of arrays (1-d, or n-d whose shapes after the first axis are
    equal: each value is then a fixed array), of ``str`` (text: UTF-8, ``r[k]`` is a ``str``) or
    of ``bytes`` (rows of ``uint8``). ``rawarray.write(path, r)`` writes it; ``rawarray.read``
    gives one back, its ``offsets`` and ``values`` views of the file's memory map.

    >>> r = rawarray.Ragged([[1.0, 2.0], [], [3.0]])
    >>> len(r), r[0], r.offsets
    (3, array([1., 2.]), array([0, 2, 2, 3], dtype=uint64))
    """

    def __init__(self, rows: Any = (), dtype: Any = None) -> None:
        rows = list(rows)
        self._text = bool(rows) and all(isinstance(r, str) for r in rows)
        if self._text or (rows and all(isinstance(r, _BYTES) for r in rows)):
            if dtype is not None and np.dtype(dtype) != np.uint8:
                raise RaError(f"rows of str or bytes are bytes (uint8), not dtype {np.dtype(dtype)}")
            raw = [r.encode("utf-8") if self._text else bytes(r) for r in rows]
            values = np.frombuffer(b"".join(raw), dtype=np.uint8)
            lengths = [len(b) for b in raw]
        else:
            for k, r in enumerate(rows):
                if isinstance(r, (str, *_BYTES)):
                    raise RaError(f"row {k} is {type(r).__name__} among rows of values: a ragged "
                                  "array holds rows of text, of bytes or of values, not a mix")
            arrays = [np.asarray(r) for r in rows]
            for k, a in enumerate(arrays):
                if a.ndim == 0:
                    raise RaError(f"row {k} is a scalar ({a!r}), not a sequence of values")
            if dtype is None:
                # Empty rows ([] is float64 to numpy) do not decide the values' type.
                typed = [a for a in arrays if a.size] or arrays
                dtype = np.result_type(*typed) if typed else np.float64
            dt = _little_endian(np.dtype(dtype))
            _check_storable(dt)
            shapes = {a.shape[1:] for a in arrays if a.size}
            if len(shapes) > 1:
                first = arrays[0].shape[1:]
                k = next(k for k, a in enumerate(arrays) if a.size and a.shape[1:] != first)
                raise RaError(f"row {k} holds values of shape {arrays[k].shape[1:]}, row 0 of "
                              f"shape {first}: every value of a ragged array has one shape")
            value_shape = shapes.pop() if shapes else (arrays[0].shape[1:] if arrays else ())
            arrays = [a.astype(dt, copy=False).reshape((-1,) + value_shape) for a in arrays]
            values = np.concatenate(arrays) if arrays else np.zeros((0,) + value_shape, dt)
            lengths = [len(a) for a in arrays]
        offsets = np.zeros(len(lengths) + 1, dtype="<u8")
        offsets[1:] = np.cumsum(lengths, dtype=np.uint64)
        self._offsets = offsets
        self._values = values

    @classmethod
    def _of(cls, offsets: np.ndarray, values: np.ndarray, text: bool) -> "Ragged":
        r = cls.__new__(cls)
        r._offsets, r._values, r._text = offsets, values, text
        return r

    @property
    def offsets(self) -> np.ndarray:
        """``len(self) + 1`` offsets (``uint64``), counted in values: row ``k`` is values
        ``offsets[k]`` to ``offsets[k + 1]``."""
        return self._offsets

    @property
    def values(self) -> np.ndarray:
        """Every value, row after row: shape ``(offsets[-1],) + value shape``."""
        return self._values

    @property
    def dtype(self) -> np.dtype:
        """The values' dtype (``uint8`` for text)."""
        return self._values.dtype

    @property
    def is_text(self) -> bool:
        """Whether the rows are UTF-8 text (``r[k]`` is a ``str``)."""
        return self._text

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, k: Any) -> Any:
        """Row ``k`` (negative counts from the end): a view of the values, or a ``str`` for
        text."""
        n = len(self)
        i = _row_index(k, n)
        row = self._values[int(self._offsets[i]):int(self._offsets[i + 1])]
        return bytes(row).decode("utf-8") if self._text else row

    def __iter__(self) -> Iterator[Any]:
        return (self[k] for k in range(len(self)))

    def to_list(self) -> list[Any]:
        """The rows as a list (of arrays, or of ``str`` for text)."""
        return list(self)

    def to_arrow(self) -> Any:
        """The rows as a ``pyarrow.LargeListArray`` (a ``pyarrow.LargeStringArray`` for text)
        whose offsets and values are this array's memory, not a copy, where Arrow has the
        values' layout (numbers; bools, records and fixed-size values are converted). Needs
        pyarrow; awkward-array reads the result with ``ak.from_arrow``."""
        try:
            import pyarrow as pa  # noqa: PLC0415 (optional dependency)
        except ImportError:
            raise ImportError("Ragged.to_arrow needs pyarrow: pip install pyarrow") from None
        # Offsets end at the value count, far below 2**63: the uint64s are Arrow's int64s.
        offsets = pa.py_buffer(np.ascontiguousarray(self._offsets))
        if self._text:
            return pa.Array.from_buffers(pa.large_string(), len(self),
                                         [None, offsets, pa.py_buffer(self._values)])
        child = _arrow_values(pa, self._values)
        return pa.Array.from_buffers(pa.large_list(child.type), len(self), [None, offsets],
                                     children=[child])

    def __repr__(self) -> str:
        kind = "text" if self._text else f"dtype={self.dtype}"
        return f"<rawarray.Ragged {len(self)} rows, {len(self._values)} values, {kind}>"

    def _write(self, path: str | os.PathLike[str], codec: str | None = None,
               level: int | None = None, shuffle: str | None = None,
               chunks: int | None = None, threads: int | None = None, filters: Any = None,
               blocks: int | None = None, layout_version: int | None = None,
               statistics: bool | None = None, split: bool | None = None,
               stream_crcs: bool | None = None) -> None:
        """Writes the file; any of the codec keywords compresses the values (see ``write``)."""
        values = np.ascontiguousarray(self._values, dtype=_little_endian(self._values.dtype))
        value_dims = list(reversed(values.shape[1:]))
        data = values.reshape(-1).view(np.uint8) if values.size else np.zeros(0, np.uint8)
        for what, n in (("chunks", chunks), ("blocks", blocks)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                                  or n < 1):
                raise RaError(f"{what}: a ragged file's values are cut by count: expected an "
                              f"int of at least 1 (values per {what[:-1]}), found {n!r}")
        with in_numpy_order(values.ndim):
            _write_ragged(os.fspath(path), _descr_json(values.dtype), value_dims,
                          np.ascontiguousarray(self._offsets, dtype="<u8").view(np.uint8), data,
                          self._text, codec, level, shuffle, None if chunks is None else int(chunks),
                          0 if threads is None else int(threads), filters,
                          None if blocks is None else int(blocks), layout_version, statistics,
                          split, stream_crcs)


def _row_index(k: Any, n: int) -> int:
    i = None if isinstance(k, (bool, np.bool_)) else getattr(k, "__index__", None)
    if i is None:
        raise TypeError(f"rows are indexed by integers, not {type(k).__name__}")
    i = i()
    if i < -n or i >= n:
        raise IndexError(f"row {i} is out of range for {n} rows")
    return i % n


def _arrow_values(pa: Any, arr: np.ndarray) -> Any:
    """An Arrow array of the values ``arr`` (shape ``(m,) + value shape``): numbers share
    ``arr``'s memory; fixed-size values are fixed-size lists, records structs."""
    m, inner = arr.shape[0], arr.shape[1:]
    if inner:
        flat = arr.reshape((m * inner[0],) + inner[1:])
        return pa.FixedSizeListArray.from_arrays(_arrow_values(pa, flat), inner[0])
    dt = arr.dtype
    if dt.names is not None:
        return pa.StructArray.from_arrays([_arrow_values(pa, arr[n]) for n in dt.names],
                                          names=list(dt.names))
    if dt.kind in "iuf":
        arr = np.ascontiguousarray(arr)
        return pa.Array.from_buffers(pa.from_numpy_dtype(dt), m, [None, pa.py_buffer(arr)])
    if dt.kind == "b":
        return pa.array(arr)  # Arrow's bools are bits: a copy
    raise RaError(f"Ragged.to_arrow: values of numpy dtype {dt} have no Arrow type")


def _as_ragged(obj: Any) -> Ragged | None:
    """``obj`` as a :class:`Ragged` when ``rawarray.write`` should write a ragged file: a
    Ragged, a list of ``str`` or ``bytes``, or a list of arrays of unequal lengths (a list of
    equal-length arrays is what numpy makes of it, a rectangular array)."""
    if isinstance(obj, Ragged):
        return obj
    if not isinstance(obj, (list, tuple)) or not obj:
        return None
    if all(isinstance(r, str) for r in obj) or all(isinstance(r, _BYTES) for r in obj):
        return Ragged(obj)
    if isinstance(obj[0], (str, *_BYTES)) or np.ndim(obj[0]) == 0:
        return None
    shapes = set()
    for r in obj:
        shape = np.shape(r) if not isinstance(r, (str, *_BYTES)) else None
        if shape is None or shape == ():
            return None
        shapes.add(shape)
    return Ragged(obj) if len(shapes) > 1 else None


class RaggedFile:
    """An opened ragged file (``rawarray.open``): the header, the trailer and the first and
    last offsets are read and checked at once, in O(1) of the file's size; ``f[k]`` reads row
    ``k`` alone (its two offsets and its values), so a damaged offset elsewhere does not stop
    it. ``f.ragged()`` is the whole :class:`Ragged` (every offset checked), as ``rawarray.read``
    returns it.

    With ``mmap=True`` (the default) rows, offsets and values are views of a memory map of the
    file: live views, as ``np.memmap``'s are (a file rewritten in place shows its new bytes, and
    must not be truncated while views exist). With ``mmap=False`` each is a copy read through
    the descriptor opened, and each read returns the bytes of the file as it was opened or
    raises :class:`RaError` saying the file changed (it was rewritten in place); rows of
    compressed values are decoded copies, checked the same way, either way.

    >>> with rawarray.open("events.ra") as f:                     # doctest: +SKIP
    ...     len(f), f[-1]
    """

    def __init__(self, path: str | os.PathLike[str], *, mmap: bool = True) -> None:
        self.path = os.fspath(path)
        self._raw = _RaggedFile(self.path, mmap)
        # As File warns: a RACHUNK1 entry of the values past the committed size reads as zeros.
        for message in self._raw.warnings:
            warnings.warn(numpy_order(message, len(self._raw.value_dims) + 1), RaWarning,
                          stacklevel=_user_stacklevel())
        self.dtype = _element_dtype(self._raw) if not self._raw.is_text else np.dtype(np.uint8)
        self.value_shape = tuple(reversed(self._raw.value_dims))
        #: Whether the rows are UTF-8 text (``f[k]`` is a ``str``).
        self.is_text = self._raw.is_text
        r = self._raw
        self._header = {"eltype": r.eltype, "elbyte": r.elbyte, "rows": r.rows,
                        "values": r.values_count, "value_dims": list(r.value_dims),
                        "slots": r.slots, "size": r.size, "header_len": r.header_len}
        # The values' settings, from the config the library read at open.
        config = r.chunk_config()
        self._compression: dict[str, Any] | None = None
        if config is not None:
            settings, plain, stored = config
            self._compression = compression_of(settings, r.rounded_to,
                                               plain / stored if stored else None)
        self.closed = False

    @property
    def header(self) -> dict[str, Any]:
        """The header's fields: eltype, elbyte, rows, values, value dims (file order), the
        offsets region's slots, size, header_len."""
        return dict(self._header)

    @property
    def compression(self) -> dict[str, Any] | None:
        """How the values are stored, as :attr:`rawarray.File.compression` says it: None for
        plain values, else the same keys, ``chunks`` and ``blocks`` the values' shapes in
        numpy's order (values per chunk or block, then the value shape) and ``ratio`` the
        values' plain bytes over their bytes stored (the offsets are stored plain)."""
        return None if self._compression is None else dict(self._compression)

    def longest_row(self) -> int:
        """The length of the longest row, in values (every row's offsets checked)."""
        self._check_open()
        return self._raw.longest_row()

    def __len__(self) -> int:
        return self._header["rows"]

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.RaggedFile")

    def _view(self, buf: Any) -> np.ndarray:
        arr = np.frombuffer(buf, dtype=self.dtype).reshape((-1,) + self.value_shape)
        return _checked_bools(arr, self.path)

    def __getitem__(self, k: Any) -> Any:
        """Row ``k`` (negative counts from the end): a read-only view of the map, or a ``str``
        for text; only that row's offsets and values are read."""
        self._check_open()
        i = _row_index(k, len(self))
        if self.is_text:
            return self._raw.row_str(i)
        return self._view(self._raw.row(i))

    def __iter__(self) -> Iterator[Any]:
        return (self[k] for k in range(len(self)))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule protocol: the rows as a stream of record batches of one column,
        ``values``, a ``LargeList`` of each row's values (``LargeUtf8`` for text; doc/arrow.md),
        65536 rows a batch, each read when the consumer asks for it: ``pa.table(f)``,
        ``pl.DataFrame(f)``, DuckDB's ``SELECT ... FROM f``. ``requested_schema`` is not
        applied."""
        return self._stream().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow PyCapsule protocol: the schema of :meth:`__arrow_c_stream__`'s table."""
        return self._stream().__arrow_c_schema__()

    def _stream(self) -> Any:
        # The stream's reader opens the path itself: it must be the file this one opened
        # (checked before and after), and each batch is checked to be of that file as it was.
        self._check_open()
        self._check_same_file()
        out = _arrow.stream(self.path)
        self._check_same_file()
        return out

    def _check_same_file(self) -> None:
        if _RaggedFile(self.path, False).identity() != self._raw.identity():
            raise RaError(f"{_shown(self.path)}: the file at this path changed since it was opened; "
                          "open it again to read it as Arrow")

    def ragged(self) -> Ragged:
        """The whole :class:`Ragged`: ``offsets`` and ``values`` are read-only views of the
        memory map, every offset (and for text every row's UTF-8) checked first."""
        self._check_open()
        self._raw.check()
        offsets = np.frombuffer(self._raw.offsets(), dtype="<u8")
        return Ragged._of(offsets, self._view(self._raw.values()), self.is_text)

    def _read_whole(self, order: str, mmap: bool, filters: Any) -> Ragged:
        """:func:`rawarray.read` of this file: its :meth:`ragged` (``order`` and ``mmap`` are
        for n-d arrays; ``mmap`` was given at open)."""
        if filters is not None:
            raise RaError(f"{_shown(self.path)}: filters= takes record files; this is a ragged file, "
                          "whose rows have no fields to compare")
        return self.ragged()

    def close(self) -> None:
        """Drops this object's reference to the map (and with the last one, the file); views
        already made keep it alive. ``len``, ``header`` and ``dtype`` stay."""
        self._raw = None
        self.closed = True

    def __enter__(self) -> "RaggedFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "text" if self.is_text else f"dtype={self.dtype}"
        state = "closed" if self.closed else "open"
        return f"<rawarray.RaggedFile {_shown(self.path)!r} {len(self)} rows, {kind} ({state})>"

