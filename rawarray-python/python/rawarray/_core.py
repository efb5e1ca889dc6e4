"""The package's implementation; ``rawarray/__init__.py`` re-exports its public names (those
of ``__all__``), so that ``dir(rawarray)`` shows the API and nothing else."""

from __future__ import annotations

import builtins
import json
import operator
import os
import re
import tempfile
import types
import warnings
from typing import Any, Sequence

import numpy as np

from ._rawarray import ArrayWriter as _ArrayWriter
from ._rawarray import Buffer, RaError, RawFile
from ._rawarray import chunk_config as _chunk_config
from ._rawarray import read_chunked_into as _read_chunked_into
from ._rawarray import RecordWriter as _RecordWriter
from ._rawarray import write as _write
from ._indexing import read_key
from . import _arrow

try:
    from ._rawarray import StoreFile as _StoreFile
except ImportError:  # built without the Cargo feature `cloud`
    _StoreFile = None

# `scheme://`: an object-store URL (a Windows path `C:\...` has no `//` after its colon).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _is_url(path: Any) -> bool:
    return isinstance(path, str) and _URL.match(path) is not None


def _open_raw(path: str) -> Any:
    """The Rust side of a :class:`File`: a local file, or an object (``s3://``, ``http(s)://``,
    ``file://``) read by the library's ``StoreArrayReader``."""
    if not _is_url(path):
        return RawFile(path)
    if _StoreFile is None:
        raise RaError(
            f"{path}: this build of rawarray reads no object-store URLs; build it with the Cargo "
            'feature `cloud` (MATURIN_PEP517_ARGS="--features cloud" pip install ./rawarray-python)'
        )
    return _StoreFile(path)


def _where(path: str) -> str:
    """``path`` as another process finds it: absolute (it may run in another folder), or the
    URL."""
    return path if _is_url(path) else os.path.abspath(path)



class RaWarning(UserWarning):
    """Data read with less meaning than the file intends (raw bits of bfloat16 without
    ml_dtypes, records whose schema is damaged)."""


def _dtype_from_json(descr: Any) -> np.dtype:
    """A numpy dtype from the JSON form of a dtype description, as the trailer stores it and the
    library produces it: a string (``"<f8"``), a sub-array ``[base, [shape...]]``, or a record,
    a list of ``[name, base]`` or ``[name, base, [shape...]]`` fields."""
    if isinstance(descr, str):
        return np.dtype(descr)
    is_subarray = (
        len(descr) == 2
        and isinstance(descr[1], list)
        and descr[1]
        and all(isinstance(n, int) for n in descr[1])
    )
    if is_subarray:
        return np.dtype((_dtype_from_json(descr[0]), tuple(descr[1])))
    fields = []
    for field in descr:
        name, base = field[0], _dtype_from_json(field[1])
        fields.append((name, base, tuple(field[2])) if len(field) == 3 else (name, base))
    return np.dtype(fields)


def _bool_views(arr: np.ndarray, name: str = "") -> list[tuple[str, np.ndarray]]:
    """The parts of ``arr`` whose dtype is ``bool`` (the whole array, or record fields at any
    depth), each with the field's name, as arrays of their bytes."""
    dt = arr.dtype
    if dt.names is None:
        base = dt.subdtype[0] if dt.subdtype else dt
        return [(name, arr.view(np.uint8))] if base == np.bool_ else []
    views = []
    for field in dt.names:
        views += _bool_views(arr[field], f"{name}.{field}" if name else field)
    return views


def _checked_bools(arr: np.ndarray, path: str) -> np.ndarray:
    """``arr`` if every byte the file stores as a ``bool`` is 0 or 1, as the format's bool
    marker requires; else :class:`RaError` naming the field and the byte (numpy would show such
    a byte as a ``True`` that compares unequal to ``True``: a value no writer wrote)."""
    for name, raw in _bool_views(arr):
        if raw.size and int(raw.max()) > 1:
            what = f"field {name!r}" if name else "the array"
            raise RaError(f"{path}: {what} is bool, but holds the byte {int(raw.max())} (a bool is 0 or 1)")
    return arr


def _floatlike(dt: np.dtype) -> bool:
    """Whether ``dt`` is a float or complex dtype (ml_dtypes' bfloat16, of kind ``V``, too)."""
    return dt.kind in "fc" or dt.name == "bfloat16"


def _object_fields(dtype: np.dtype) -> np.dtype:
    """The structured ``dtype`` with every scalar field an ``object``: numpy parses tuples into
    it without converting (and truncating) their values."""
    return np.dtype([(name, _object_fields(f.base) if f.base.names else np.dtype(object), f.shape)
                     for name, f in ((n, dtype[n]) for n in dtype.names)])


def _as_writer_dtype(values: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` as an array of a writer's ``dtype``, or :class:`RaError` naming the first value
    that would be stored as another one. numpy's ``astype`` truncates ``1.7`` to ``1``, wraps
    ``300`` to ``44`` in ``uint8`` and ``-1`` to ``255``, makes ``2`` a ``True`` and ``1e300`` an
    ``inf`` in ``float32``: a writer stores what it was given or refuses it. Rounding to a float
    dtype's precision is that dtype's nature and is allowed; records are checked field by
    field."""
    try:
        if dtype.fields is not None and not isinstance(values, np.ndarray):
            # Tuples of Python values, as records: kept as objects, each field checked below.
            arr = np.array(values, dtype=_object_fields(dtype))
        else:
            arr = np.asarray(values)
    except (OverflowError, ValueError, TypeError) as e:
        raise RaError(f"{what}: not an array of {dtype} ({e})") from None
    if arr.dtype == dtype:
        return arr
    if arr.size == 0:
        return np.empty(arr.shape, dtype)               # `[]`: no value to change
    if dtype.fields is not None or arr.dtype.fields is not None:
        if arr.dtype.names != dtype.names:
            raise RaError(f"{what}: values of dtype {arr.dtype} do not match the writer's {dtype}")
        out = np.empty(arr.shape, dtype)
        for name in dtype.names:
            field = _as_writer_dtype(arr[name], dtype[name].base, f"{what}, field {name!r}")
            try:
                out[name] = field
            except ValueError as e:
                raise RaError(f"{what}, field {name!r}: {e}") from None
        return out
    numeric = arr.dtype.kind in "biu" or _floatlike(arr.dtype) or (
        arr.dtype.kind == "O" and all(isinstance(x, (int, float, complex, np.number))
                                      for x in arr.reshape(-1)))
    if not numeric or not (dtype.kind in "biu" or _floatlike(dtype)):
        raise RaError(f"{what}: values of dtype {arr.dtype} are not of the writer's {dtype}")
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")             # ComplexWarning, overflow: checked below
            cast = arr.astype(dtype)
            wide = arr.astype(np.complex128 if arr.dtype.kind in "cO" else np.float64)
            back = cast.astype(np.complex128 if dtype.kind == "c" else np.float64)
            if dtype.kind == "c":
                bad = np.isinf(back) & np.isfinite(wide)                # overflow to inf
            elif _floatlike(dtype):
                bad = (np.isinf(back) & np.isfinite(wide)) | (wide.imag != 0 if
                                                               wide.dtype.kind == "c" else False)
            elif arr.dtype.kind in "biu":
                lo, hi = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
                if np.can_cast(arr.dtype, dtype, "safe") or lo <= int(arr.min()) <= int(arr.max()) <= hi:
                    bad = False
                else:                                   # Python ints: no wrap in the comparison
                    exact = arr.astype(object)
                    bad = (exact < lo) | (exact > hi)
            else:                                       # floats, complex, objects to integers
                bad = ~(back == wide) | ~np.isfinite(wide)
                if arr.dtype.kind == "O":
                    bad |= ~(cast.astype(object) == arr)
    except (OverflowError, ValueError, TypeError) as e:
        raise RaError(f"{what}: values do not fit the writer's dtype {dtype} ({e})") from None
    bad = np.broadcast_to(bad, arr.shape)
    if np.any(bad):
        i = int(np.argmax(bad.reshape(-1)))
        raise RaError(f"{what}: the value {arr.reshape(-1)[i]!r} does not fit the writer's dtype "
                      f"{dtype} (it would be stored as {cast.reshape(-1)[i]!r})")
    return cast


def _element_dtype(raw: RawFile) -> np.dtype:
    """numpy's dtype for one element of the file, by the library's reading of the header and
    trailer; see the table in the README."""
    kind, value = raw.element_kind()
    if kind == "dtype":
        return np.dtype(value)
    if kind == "record":
        # The library validated the schema against the header; numpy must agree with it too.
        try:
            dt = _dtype_from_json(json.loads(value))
        except (ValueError, TypeError, OverflowError) as e:
            value = f"the trailer's record schema is damaged: numpy refuses it ({e})"
        else:
            if dt.itemsize == raw.elbyte:
                return dt
            value = f"the trailer's record schema is damaged: {dt.itemsize} bytes, elbyte is {raw.elbyte}"
    if kind == "bfloat16":
        try:
            import ml_dtypes  # noqa: PLC0415 (optional dependency)
        except ImportError:
            warnings.warn(
                "bfloat16 data is returned as its raw bits (uint16): install ml_dtypes "
                "(pip install ml-dtypes) for numpy's bfloat16, or view the result as one",
                RaWarning,
                stacklevel=3,
            )
            return np.dtype(value)
        return np.dtype(ml_dtypes.bfloat16)
    if kind == "complex32":
        return np.dtype([("re", value), ("im", value)])
    # No numpy type: the element's bytes. Say why when it is damaged metadata.
    if "damaged" in value:
        warnings.warn(f"{value}; the elements are returned as bytes", RaWarning, stacklevel=3)
    return np.dtype(f"V{raw.elbyte}")


# What a closed File keeps of its RawFile (every getter that reads no byte of the file).
_METADATA = ("eltype", "elbyte", "dims", "flags", "size", "num_elements", "header_len",
             "type_label", "params_json", "schema_json", "extra_json", "trailer_error",
             "big_endian_records", "file_len")


class File:
    """An opened ``.ra`` file (``rawarray.open``): the header and trailer are read and validated
    at once, in O(1) of the file's size; the data only when asked for.

    Use it as a context manager. ``array()`` is a read-only view over a memory map (no byte is
    copied; the view keeps the map alive after the file is closed). Indexing ``f[key]`` takes
    numpy's indexing in every axis and reads only the blocks the key touches (see
    :meth:`__getitem__`). ``array()`` of an LZ4-compressed or big-endian file decodes it into
    memory instead, and of a chunked file (:attr:`chunks`, :attr:`compression`) decodes it into
    a new, writable array.
    A mapped file must not be truncated while views of it exist (as with ``np.memmap``).

    A ``File`` reads the file it opened: it holds one descriptor from open to close, and the
    header, the trailer and every byte of data come through it, so a file written over the path
    meanwhile (``rawarray.write`` renames a new file into place) changes nothing it returns.

    A ``File`` pickles (for another process) as its path and the identity of what it opened:
    device, inode, length and header. Unpickling opens the path again and raises
    :class:`RaError` naming the path if it is no longer that file, unchanged.
    """

    def __init__(self, path: str | os.PathLike[str], *, mmap: bool = True) -> None:
        self.path = path if _is_url(path) else os.fspath(path)
        self._mmap = mmap
        try:
            self._raw = _open_raw(self.path)
        except RaError:
            from ._ragged import is_ragged  # noqa: PLC0415 (_ragged imports this module)

            if is_ragged(self.path):
                raise RaError(f"{self.path}: a ragged array (flag bit 3), not an n-d array: "
                              "rawarray.open gives a rawarray.RaggedFile, rawarray.read a "
                              "rawarray.Ragged") from None
            raise
        self._dtype = _element_dtype(self._raw)
        self._buffer: Buffer | None = None
        self._bools_checked = False
        # (codec, level, shuffle, chunk shape in file order, block bytes) of a chunked file. An
        # object in a store is decoded by the library's StoreArrayReader, chunked or not, which
        # validated its config at open.
        self._chunking = self._raw.chunk_config() if _is_url(self.path) else _chunk_config(self._raw)
        self.closed = False

    @property
    def chunks(self) -> tuple[int, ...] | None:
        """The chunk shape of a chunked file, in numpy's axis order (the file's chunk dims
        reversed, as :attr:`shape` is), or None for a file that is not chunked. Dask's
        ``from_array`` and xarray's ``preferred_chunks`` take it."""
        if self._chunking is None:
            return None
        return tuple(reversed(self._chunking[3]))

    @property
    def compression(self) -> dict[str, Any] | None:
        """How the data is stored, or None for plain data: ``{"codec", "level", "shuffle",
        "chunks", "ratio"}``, with ``codec`` ``"zstd"``, ``"lz4"`` or ``"none"`` for a chunked
        file (``chunks`` in numpy's order) and ``"lz4-whole"`` for the whole-section LZ4 block
        (``level``, ``shuffle`` and ``chunks`` None), as ``ra info`` names them; ``ratio`` is
        the plain data bytes over the bytes stored."""
        r = self._raw
        plain = r.num_elements * r.elbyte
        ratio = plain / r.size if r.size else None
        if self._chunking is not None:
            codec, level, shuffle, _, _ = self._chunking
            return {"codec": codec, "level": level, "shuffle": shuffle, "chunks": self.chunks,
                    "ratio": ratio}
        if r.flags & 2:
            return {"codec": "lz4-whole", "level": None, "shuffle": None, "chunks": None,
                    "ratio": ratio}
        return None

    def to_dask(self, chunks: Any = None) -> Any:
        """This file's array as a lazy ``dask.array.Array`` (see :func:`to_dask`): ``chunks``
        default to the file's own (:attr:`chunks`), else dask's ``"auto"``."""
        import dask.array as da  # noqa: PLC0415 (optional dependency)

        if chunks is None:
            chunks = self.chunks or "auto"
        return da.from_array(self, chunks=chunks)

    def to_arrow(self) -> Any:
        """The file as a ``pyarrow.Table`` (doc/arrow.md): one row per record, one column per
        field, in the schema's order and names (a file that is not of records: one column
        ``values``). The batches come from Rust through the Arrow C stream interface."""
        return self._arrow(_arrow.DEFAULT_BATCH_ROWS, _arrow.to_arrow)

    def to_arrow_batches(self, rows: int = _arrow.DEFAULT_BATCH_ROWS) -> Any:
        """The file as a ``pyarrow.RecordBatchReader`` of ``rows`` rows a batch, each read when
        asked for: the memory in use is one batch's, whatever the file's size."""
        return self._arrow(rows, _arrow.to_arrow_batches)

    def to_pandas(self) -> Any:
        """The file as a ``pandas.DataFrame``, through :meth:`to_arrow` (needs pyarrow, pandas)."""
        return self._arrow(_arrow.DEFAULT_BATCH_ROWS, _arrow.to_pandas)

    def to_polars(self) -> Any:
        """The file as a ``polars.DataFrame``, through :meth:`to_arrow` (needs pyarrow, polars)."""
        return self._arrow(_arrow.DEFAULT_BATCH_ROWS, _arrow.to_polars)

    def _arrow(self, rows: int, convert: Any) -> Any:
        # The Arrow reader opens the path itself: it must still be the file this File opened
        # (checked before and after, so the reader cannot have opened another one between).
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        self._check_same_file()
        out = convert(self.path, rows) if convert is _arrow.to_arrow_batches else convert(self.path)
        self._check_same_file()
        return out

    def _check_same_file(self) -> None:
        if RawFile(self.path).identity() != self._raw.identity():
            raise RaError(f"{self.path}: the file at this path changed since it was opened; "
                          "open it again to read it as Arrow")

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        # Two Files of the same unchanged file are the same data to dask.
        if self.closed:
            raise ValueError("cannot hand a closed rawarray.File to dask")
        return ("rawarray.File", _where(self.path), self._raw.identity())

    def __reduce__(self) -> tuple[Any, ...]:
        if self.closed:
            raise ValueError("cannot pickle a closed rawarray.File")
        # Absolute: the process that unpickles it may run in another folder.
        return (_reopen, (_where(self.path), self._raw.identity(), self._mmap))

    # -- metadata --------------------------------------------------------------------------
    @property
    def header(self) -> dict[str, Any]:
        """The header's fields: eltype, elbyte, dims (file order), flags, size (the data
        section's bytes as stored: compressed for LZ4 and chunked files), header_len;
        ``compressed`` is true for any compressed section (LZ4 whole or chunked, as in
        ``ra info --json``; :attr:`compression` says which)."""
        r = self._raw
        return {
            "eltype": r.eltype,
            "elbyte": r.elbyte,
            "dims": list(r.dims),
            "flags": r.flags,
            "size": r.size,
            "header_len": r.header_len,
            "big_endian": bool(r.flags & 1),
            "compressed": bool(r.flags & 6),
        }

    @property
    def shape(self) -> tuple[int, ...]:
        """numpy's shape: the file's dims reversed."""
        return tuple(reversed(self._raw.dims))

    @property
    def dtype(self) -> np.dtype:
        """numpy's dtype of one element (structured for records with a schema)."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dims, as numpy's ``ndim``."""
        return len(self._raw.dims)

    @property
    def size(self) -> int:
        """The number of elements, as numpy's ``size`` (the product of the dims). The header's
        stored data bytes are ``header["size"]``."""
        return self._raw.num_elements

    @property
    def nbytes(self) -> int:
        """Bytes of the array in memory, as numpy's ``nbytes`` (``size * dtype.itemsize``; for
        an LZ4 file, more than the ``header["size"]`` bytes stored)."""
        return self.size * self._dtype.itemsize

    @property
    def params(self) -> Any:
        """The trailer's parameters (a dict for record files), or None without a trailer."""
        p = self._raw.params_json
        return None if p is None else json.loads(p)

    @property
    def schema(self) -> Any:
        """The trailer's record schema (the Rust layout, as JSON), or None."""
        s = self._raw.schema_json
        return None if s is None else json.loads(s)

    @property
    def trailer_error(self) -> str | None:
        """Why the trailer could not be read, if it is damaged (the data is still readable)."""
        return self._raw.trailer_error

    def _extra(self) -> dict[str, Any]:
        e = self._raw.extra_json
        return {} if e is None else json.loads(e)

    @property
    def dim_names(self) -> tuple[str, ...] | None:
        """The names of numpy's axes, as :func:`write` stored them (the trailer's
        ``dim_names``, which lists them in the file's dim order), or None."""
        names = self._extra().get("dim_names")
        if not isinstance(names, list) or len(names) != self.ndim or \
                not all(isinstance(n, str) for n in names):
            return None
        return tuple(reversed(names))

    @property
    def coords(self) -> dict[str, np.ndarray]:
        """The coordinates of named dims, as :func:`write` stored them (the trailer's
        ``coords``): ``{dim name: 1-d array}``; empty without any."""
        coords = self._extra().get("coords")
        if not isinstance(coords, dict):
            return {}
        return {str(k): np.asarray(v) for k, v in coords.items() if isinstance(v, list)}

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("a scalar .ra file has no len()")
        return shape[0]

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<rawarray.File {self.path!r} shape={self.shape} dtype={self.dtype} ({state})>"

    # -- data ------------------------------------------------------------------------------
    @property
    def _plain(self) -> bool:
        """Whether numpy can view the file's bytes as they are on disk (not big-endian, not
        LZ4, not chunked: a chunked section is never mapped as plain bytes; not an object in a
        store, which is read by ranged requests)."""
        return not (self._raw.flags & 7) and not _is_url(self.path)

    @property
    def _chunked(self) -> bool:
        # A chunked file decoded here; a chunked object is decoded by the store's reader.
        return self._chunking is not None and not _is_url(self.path)

    def _mapped(self) -> Buffer:
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        if self._buffer is None:
            self._buffer = self._raw.map() if self._plain else self._raw.decode()
        return self._buffer

    def _decoded_dtype(self) -> np.dtype:
        if self._raw.big_endian_records:
            return self._dtype.newbyteorder(">")
        return self._dtype

    def array(self, order: str = "C", *, mmap: bool = True) -> np.ndarray:
        """The whole array: a read-only view over a memory map for plain little-endian files
        (``mmap=False``: a new, writable array read into memory with positioned reads), decoded
        into memory (read-only) for LZ4 or big-endian ones, and decoded into a new, writable
        array for chunked ones (chunks decoded in parallel, the GIL released). ``order`` as in
        :func:`read`."""
        if self._chunked:
            arr = self._read_into_memory(order)
            if not self._bools_checked:
                _checked_bools(arr, self.path)
                self._bools_checked = True
            return arr
        self._check_bools_once()
        if not mmap and self._plain:
            return self._read_into_memory(order)
        return self._mapped_array(order)

    def _check_bools_once(self) -> None:
        """A file holding ``bool`` values is checked whole before its first value is handed out:
        numpy shows a stored byte other than 0 or 1 as a ``True`` that is not ``True`` (and a
        scalar read of it as a plain ``True``), a value no writer wrote."""
        if self._bools_checked:
            return
        if _bool_views(np.empty(0, dtype=self._dtype)):
            in_memory = self._chunked or (self._plain and not self._mmap)
            whole = self._read_into_memory("C") if in_memory else self._mapped_array("C")
            _checked_bools(whole, self.path)
        self._bools_checked = True

    def _mapped_array(self, order: str) -> np.ndarray:
        buf = self._mapped()
        offset = self._raw.header_len if self._plain else 0
        dims = list(self._raw.dims)
        if order == "C":
            shape, np_order = tuple(reversed(dims)), "C"
        elif order == "F":
            shape, np_order = tuple(dims), "F"
        else:
            raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        arr = np.ndarray(shape, dtype=self._decoded_dtype(), buffer=buf, offset=offset, order=np_order)
        arr.flags.writeable = False
        return arr

    def _read_into_memory(self, order: str) -> np.ndarray:
        """A new array that owns its memory (numpy allocates it, so large arrays get numpy's
        huge pages), filled by the library with positioned reads (a chunked file: decoded into
        it)."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        dims = list(self._raw.dims)
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        shape = tuple(reversed(dims)) if order == "C" else tuple(dims)
        out = np.empty(shape, dtype=self._decoded_dtype(), order=order)
        if out.size:
            flat = (out if order == "C" else out.T).reshape(-1)
            if self._chunked:
                _read_chunked_into(self._raw, flat.view(np.uint8))
            else:
                self._raw.read_into(0, flat.view(np.uint8))
        return out

    def _read_block(self, ranges: list[tuple[int, int]]) -> Buffer:
        """The bytes of a block (one ``(start, end)`` per numpy axis), C order, in the byte
        order of ``_decoded_dtype``: the library's ``ArrayReader``, one positioned read per run
        (an LZ4 file is decompressed once, on the first block, and cut from)."""
        return self._raw.read_block(list(reversed(ranges)))

    def __getitem__(self, key: Any) -> Any:
        """``f[key]`` with numpy's indexing, exactly: integers (negative too), slices with any
        step, ``...``, ``np.newaxis``, boolean scalars, and integer or boolean arrays (advanced
        indexing, with numpy's broadcasting and placement of the advanced axes).

        Opened with ``mmap=True`` (the default), a plain little-endian file is indexed as the
        view of its memory map (``f.array()[key]``): basic keys give views without a copy, and
        only the pages a key touches are read. Otherwise (``mmap=False``, big-endian and LZ4
        files) the key is read in blocks by the library's ``ArrayReader``: each run of indices
        touched on the leading axes, and on the last axis the range from the first index to the
        last; :attr:`io_stats` counts those reads. An LZ4 file is decompressed once, then cut
        from. A chunked file reads and decodes only the chunks the key touches, each once (the
        runs of an axis that no untouched chunk separates are read as one block). Keys out of
        bounds raise ``IndexError`` naming the axis, as numpy's do."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        self._check_bools_once()
        if not self.shape or (self._plain and self._mmap):
            return self._mapped_array("C")[key]
        return read_key(key, self.shape, self._decoded_dtype(), self._read_block, self.chunks)

    @property
    def io_stats(self) -> dict[str, int]:
        """The library's count of data reads made by indexing (``mmap=False``, big-endian,
        LZ4 and chunked files): ``{"reads": ..., "bytes": ...}``. For a chunked file, ``reads``
        counts the chunks read (once per chunk per block read) and ``bytes`` their stored,
        compressed bytes read. Reads through the memory map are the kernel's and are not
        counted, nor are whole reads (:meth:`array`). For an object-store URL: every request,
        open included, and the bytes it brought."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        reads, nbytes = self._raw.io_stats()
        return {"reads": reads, "bytes": nbytes}

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Closes the file's descriptor and drops this object's reference to the map; views
        already made keep the map alive, and the metadata (shape, dtype, header, params,
        dim_names, coords) stays."""
        self._buffer = None
        if not self.closed:
            self._raw = types.SimpleNamespace(**{k: getattr(self._raw, k) for k in _METADATA})
        self.closed = True

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reopen(path: str, identity: tuple[Any, ...], mmap: bool = True) -> File:
    """A pickled :class:`File` opened again: the same path, and the file it named then."""
    f = File(path, mmap=mmap)
    now = f._raw.identity()
    if now != identity:
        # A file's identity is (device, inode, length, header); an object's (URL, ETag,
        # version, length, header).
        *who, length, _header = identity
        if list(now[:-2]) != who:
            why = "another file was put at its path" if len(who) == 2 else \
                "the object was written again (its ETag or version changed)"
        elif now[-2] != length:
            why = f"its length changed from {length} to {now[-2]} bytes"
        else:
            why = "its header changed"
        f.close()
        raise RaError(f"{path}: the file changed since this rawarray.File was pickled ({why})")
    return f


def open(path: str | os.PathLike[str], *, mmap: bool = True) -> File:  # noqa: A001 (the package's public name)
    """Opens a ``.ra`` file lazily; see :class:`File`. ``mmap=False`` indexes a plain file
    with positioned reads (counted by ``File.io_stats``) instead of views of a memory map:
    for files others may truncate, and network filesystems.

    ``path`` may be an object-store URL, ``s3://bucket/key`` (also ``s3a://``, ``http(s)://``
    and ``file://``; the package built with its Cargo feature ``cloud``, as its tests build it):
    the library's ``StoreArrayReader`` opens the object with at most two ranged requests and
    pins every later one to it (its ETag), so an object written again meanwhile is an error,
    never other bytes. ``f[key]`` then fetches only the byte runs the key touches (runs less
    than 1 MiB apart share a request) and ``io_stats`` counts every request, open included. The
    store is configured from the environment as object_store's builders read it:
    ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT``,
    ``AWS_ALLOW_HTTP`` and the other ``AWS_*`` variables, so Dask workers on other machines
    (``rawarray.to_dask("s3://...")``) open it with their own.

    >>> with rawarray.open("run.ra") as f:                        # doctest: +SKIP
    ...     f.shape, f.dtype, f.params["dt"]
    ...     energy = f.array()["energy"]                          # a view, no copy
    ...     last_step = f[-1]                                     # reads one record's bytes

    A ragged file opens as a :class:`RaggedFile` (``len(f)``, ``f[k]`` reads one row).
    """
    from ._ragged import RaggedFile, is_ragged  # noqa: PLC0415 (_ragged imports this module)

    if is_ragged(path):
        return RaggedFile(path)
    return File(path, mmap=mmap)


def read(path: str | os.PathLike[str], *, order: str = "C", mmap: bool = True) -> np.ndarray:
    """The array in a ``.ra`` file, as numpy sees it: shape the dims reversed (``order="C"``,
    C-contiguous) or the dims as they are (``order="F"``, F-contiguous). Plain little-endian
    files come back as a read-only view over a memory map; ``mmap=False`` reads them into a new,
    writable array instead (positioned reads, the GIL released: for files others may truncate,
    and network filesystems). A chunked file is decoded into a new, writable array that owns its
    memory. LZ4-compressed (whole-section) or big-endian files are decoded into memory,
    read-only (``np.array(a)`` makes a writable copy). Raises
    :class:`RaError` for an invalid file and ``OSError`` for I/O errors. A ragged file
    (``rawarray.Ragged`` rows) comes back as a :class:`Ragged` over its memory map."""
    from ._ragged import RaggedFile, is_ragged  # noqa: PLC0415 (_ragged imports this module)

    if is_ragged(path):
        return RaggedFile(path).ragged()
    return File(path).array(order, mmap=mmap)


def loads(data: bytes | bytearray | memoryview | np.void, *, order: str = "C") -> np.ndarray:
    """Decodes one ``.ra`` file held in memory, for instance an element of a file whose
    elements are themselves ``.ra`` files (which :func:`read` returns as raw bytes,
    ``V<elbyte>``): ``rawarray.loads(outer[3])``."""
    raw = data.tobytes() if isinstance(data, np.void) else bytes(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "element.ra")
        with builtins.open(path, "wb") as f:
            f.write(raw)
        with File(path) as f:
            return np.array(f.array(order))


def _check_storable(dtype: np.dtype, field: str = "") -> None:
    """Raises :class:`RaError` for what numpy has and ``.ra`` cannot keep: text, fixed-width
    bytes, objects, dates, and field titles, naming the field. The record rules themselves
    (names, shapes, nesting) are the library's, checked when the dtype reaches it."""
    where = f"field '{field}' of " if field else ""
    if dtype.subdtype is not None:
        _check_storable(dtype.subdtype[0], field)
        return
    if dtype.names is not None:
        for name in dtype.names:
            sub, _offset, *title = dtype.fields[name]
            path = f"{field}.{name}" if field else name
            if title:
                raise RaError(
                    f"field '{path}' of numpy dtype {dtype} has a title ({title[0]!r}): .ra record "
                    "schemas keep field names only; drop the title, or make it the name"
                )
            _check_storable(sub, path)
        return
    if dtype.kind == "U":
        raise RaError(
            f"{where}numpy dtype {dtype} holds text (kind 'U'), which has no .ra element type: "
            "strings are ragged arrays of text, written from a list or 1-d array of str "
            "(rawarray.Ragged)"
        )
    if dtype.kind == "S":
        raise RaError(
            f"{where}numpy dtype {dtype} holds fixed-width bytes (kind 'S'), which have no .ra "
            f"element type: store a.view(np.uint8).reshape(a.shape + ({dtype.itemsize},)) and view "
            f"it back with .view('S{dtype.itemsize}')[..., 0]; byte strings of varying length "
            "come with ragged arrays (rawarray.Ragged)"
        )
    if dtype.hasobject or dtype.kind in "OMm":
        raise RaError(f"{where}numpy dtype {dtype} (kind '{dtype.kind}') has no .ra element type")


def _descr_json(dtype: np.dtype) -> str:
    """The dtype as the Rust side reads it: a dtype string, ``"bfloat16"``, ``"|V<n>"`` for raw
    elements, or a structured dtype's ``descr`` as JSON."""
    if dtype.fields is not None:
        return json.dumps(_descr_to_json(dtype.descr))
    if dtype.subdtype is not None:
        raise RaError(f"numpy dtype {dtype} is a sub-array dtype: give the array its full shape")
    if dtype.name == "bfloat16":  # ml_dtypes
        return json.dumps("bfloat16")
    if dtype.kind == "V":
        return json.dumps(f"|V{dtype.itemsize}")
    return json.dumps(dtype.str)


def _descr_to_json(descr: Any) -> Any:
    if isinstance(descr, str):
        return descr
    out = []
    for field in descr:
        name, base = field[0], _descr_to_json(field[1])
        out.append([name, base, list(field[2])] if len(field) == 3 else [name, base])
    return out


def _little_endian(dtype: np.dtype) -> np.dtype:
    """The same dtype in little-endian byte order (a no-op for native dtypes on this machine
    and for one-byte and raw types)."""
    if dtype.kind == "V" and dtype.fields is None or dtype.name == "bfloat16":
        return dtype
    return dtype.newbyteorder("<")


def write(
    path: str | os.PathLike[str],
    array: Any,
    *,
    params: Any = None,
    compress: bool = False,
    order: str = "C",
    dim_names: Sequence[str] | None = None,
    coords: dict[str, Any] | None = None,
    chunks: Sequence[int] | None = None,
    codec: str | None = None,
    level: int | None = None,
    shuffle: str | None = None,
    threads: int | None = None,
) -> None:
    """Writes ``array`` to a ``.ra`` file, atomically (a temporary file, synced, then renamed
    over ``path``: a failed write leaves the old file as it was).

    ``order="C"`` (the default) stores numpy's shape reversed as the dims, ``order="F"`` stores
    the shape as the dims; either way :func:`read` with the same ``order`` gives the array back.
    Any numpy array works: non-contiguous and big-endian ones are copied into the file's
    layout, structured dtypes are stored as records (eltype 0) with their schema in the trailer,
    and ``params`` (anything ``json.dumps`` accepts) go in the trailer. What could not be read
    back as written is refused with :class:`RaError` naming the dtype or field, before anything
    is written: object, date, text (``U``) other than a 1-d array (written as ragged text,
    below) and byte-string (``S``) dtypes, padded structured dtypes, field titles, and fields the record schema cannot
    hold (names with quotes, backslashes or control characters, ``(0,)``-shaped fields, nesting
    deeper than the library's limit).

    ``dim_names`` names numpy's axes (one string each, distinct) and ``coords`` gives 1-d
    coordinates for named dims (``{name: values}``, numbers or strings, one per index): both go
    in the trailer (keys ``dim_names`` and ``coords``, doc/format.md section 6.5), and
    :attr:`File.dim_names`, :attr:`File.coords` and the xarray backend read them back.

    Compression (doc/chunked.md): any of ``codec`` (``"zstd"``, ``"lz4"``, ``"none"``),
    ``chunks``, ``level`` and ``shuffle`` (``"byte"``, ``"bit"``, ``"none"``) writes the chunked
    layout, by default zstd level 3 after a byte shuffle in chunks of about 1 MiB. ``chunks``
    is in numpy's axis order, like every shape this package shows (each at least 1; it may
    exceed its axis). The chunks are compressed on ``threads`` threads (default: all cores),
    the GIL released. ``compress=True`` (or ``codec="lz4-whole"``) writes instead the whole
    data section as one LZ4 block, the format the C reference reads; both at once is an error.

    A table (a ``pyarrow.Table`` or ``RecordBatchReader``, a pandas ``DataFrame`` without its
    index, anything with ``__arrow_c_stream__`` such as a polars ``DataFrame``) is written as a
    record file: one record per row, one field per column in the table's order (doc/arrow.md).
    Only fixed-width columns can be fields (numbers, bool, fixed-size binary and lists, structs
    of those); any other column, or a null, is refused with :class:`RaError` naming the column
    and its type, before anything is written. Only ``params`` applies to a table.

    >>> rawarray.write("field.ra", field, chunks=(64, 64, 64), codec="zstd", level=3, shuffle="byte")   # doctest: +SKIP

    A :class:`Ragged`, a list of arrays of unequal lengths, or a list (or 1-d array) of ``str``
    or of ``bytes`` is written as a ragged file (doc/format.md, section 10; text as UTF-8,
    marked as text); its trailer holds the values' schema only, so ``params``, ``dim_names``,
    ``coords``, ``compress`` and ``order="F"`` are refused for it. ``codec``, ``level``,
    ``shuffle`` and ``threads`` compress its values as they do an array's (section 10.2: the
    offsets stay plain, so a row still reads alone); ``chunks`` is then the values per chunk,
    an int.
    """
    if _arrow.is_table(array):
        given = {"compress": compress, "dim_names": dim_names, "coords": coords, "chunks": chunks,
                 "codec": codec, "level": level, "shuffle": shuffle, "threads": threads}
        unused = [k for k, v in given.items() if v not in (None, False)] + (
            ["order"] if order != "C" else [])
        if unused:
            raise ValueError(f"a table is written as records: {', '.join(unused)} do not apply")
        _arrow.write_table(path, array, params)
        return
    from ._ragged import _as_ragged  # noqa: PLC0415 (_ragged imports this module)

    if isinstance(array, np.ndarray) and array.dtype.kind == "U" and array.ndim == 1:
        array = array.tolist()
    ragged = _as_ragged(array)
    if ragged is not None:
        given = [k for k, v in (("params", params), ("dim_names", dim_names), ("coords", coords),
                                ("compress", compress or None)) if v is not None]
        if given or order != "C":
            raise RaError(f"a ragged file keeps no {', '.join(given) or 'order'}: write its rows "
                          "alone (ragged values are one run, in row order)")
        ragged._write(path, codec=codec, level=level, shuffle=shuffle, chunks=chunks,
                      threads=threads)
        return
    arr = np.asarray(array)
    _check_storable(arr.dtype)
    extra = _dims_and_coords(arr.shape, dim_names, coords)
    if order == "C":
        dims = list(reversed(arr.shape))
        arr = np.ascontiguousarray(arr, dtype=_little_endian(arr.dtype))
    elif order == "F":
        dims = list(arr.shape)
        arr = np.asfortranarray(arr, dtype=_little_endian(arr.dtype))
        arr = arr.T if arr.ndim > 1 else arr  # the same bytes, now C-contiguous
        arr = np.ascontiguousarray(arr)
    else:
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    params_json = None if params is None else json.dumps(params)
    data = arr.reshape(-1).view(np.uint8) if arr.size else np.zeros(0, np.uint8)
    _write(os.fspath(path), _descr_json(arr.dtype), dims, data, params_json, compress,
           json.dumps(extra) if extra else None, codec, _file_chunks(chunks, order),
           level, shuffle, 0 if threads is None else int(threads))


def _file_chunks(chunks: Sequence[int] | None, order: str) -> list[int] | None:
    """A chunk shape given in numpy's axis order, in the file's dim order (as the dims are
    stored for ``order``); the library checks its length and sizes."""
    if chunks is None:
        return None
    sizes = [operator.index(c) for c in chunks]
    if any(c < 0 for c in sizes):
        raise RaError(f"chunks: expected sizes of at least 1, one per axis, found {tuple(sizes)}")
    return list(reversed(sizes)) if order == "C" else sizes


def _dims_and_coords(
    shape: tuple[int, ...], dim_names: Sequence[str] | None, coords: dict[str, Any] | None
) -> dict[str, Any]:
    """The trailer keys for ``dim_names`` and ``coords`` (numpy's axis order in, the file's dim
    order stored), checked against the array's shape; errors name what is wrong."""
    extra: dict[str, Any] = {}
    if dim_names is not None:
        names = list(dim_names)
        if len(names) != len(shape) or not all(isinstance(n, str) and n for n in names) or \
                len(set(names)) != len(names):
            raise RaError(
                f"dim_names: expected {len(shape)} distinct non-empty strings (one per axis of "
                f"shape {shape}), found {names!r}"
            )
        extra["dim_names"] = list(reversed(names))
    if coords:
        if dim_names is None:
            raise RaError("coords: give dim_names too, coordinates are keyed by dim name")
        sizes = dict(zip(dim_names, shape))
        extra["coords"] = {}
        for name, values in coords.items():
            v = np.asarray(values)
            if name not in sizes:
                raise RaError(f"coords: expected one of the dim_names {list(sizes)}, found {name!r}")
            if v.ndim != 1 or len(v) != sizes[name] or v.dtype.kind not in "iufbU":
                raise RaError(
                    f"coords['{name}']: expected {sizes[name]} numbers or strings (1-d), found "
                    f"shape {v.shape} of dtype {v.dtype}"
                )
            extra["coords"][name] = v.tolist()
    return extra


class RecordWriter:
    """Appends records to a ``.ra`` file as a simulation runs, through the Rust library's record
    writer: one writer at a time (an exclusive lock; a second writer gets :class:`RaError`),
    and a kill at any moment leaves a valid file holding every record of the last ``flush``.

    ``dtype`` is one record's type: a structured dtype (stored as eltype 0 with its schema, so
    Rust's ``RecordReader`` reads it into a derived struct of the same layout) or a plain one.
    ``shape`` makes each record an array of that numpy shape (a snapshot per step); the file's
    dims are then ``shape`` reversed, then the record count, and ``rawarray.read`` gives
    ``(count,) + shape``. ``params`` (anything ``json.dumps`` takes) go in the trailer.
    ``mode="a"`` opens an existing file to append (same dtype and shape).

    ``codec`` (``"zstd"``, ``"lz4"``, ``"none"``), ``level``, ``shuffle`` (``"byte"``,
    ``"bit"``, ``"none"``) and ``chunks`` (records per chunk: an int, or ``(n,) + shape``)
    compress the records a chunk at a time in the chunked layout (``File.compression``), on
    ``threads`` threads (0: all cores); any of them selects it, zstd with byte shuffle by
    default. ``flush`` still commits every record appended so far. The whole-section
    ``"lz4-whole"`` block cannot be appended to and is refused. A compressed file opened with
    ``mode="a"`` stays compressed as it was written (options given then are not applied to it);
    a plain file that holds records cannot take compression options.

    >>> with rawarray.RecordWriter("run.ra", [("step", "<u8"), ("e", "<f8")], params={"dt": 0.1}) as w:   # doctest: +SKIP
    ...     for step in range(100):
    ...         w.append(np.array([(step, -1.0)], dtype=w.dtype))
    ...         w.flush()                                   # readers see it; a kill keeps it
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        dtype: Any,
        *,
        shape: tuple[int, ...] = (),
        params: Any = None,
        mode: str = "w",
        codec: str | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        chunks: int | tuple[int, ...] | None = None,
        threads: int = 0,
    ) -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', not {mode!r}")
        dt = np.dtype(dtype)
        _check_storable(dt)
        self.dtype = _little_endian(dt)
        self.shape = tuple(int(n) for n in shape)
        self.path = os.fspath(path)
        params_json = None if params is None else json.dumps(params)
        self._w = _RecordWriter(
            self.path, _descr_json(self.dtype), list(reversed(self.shape)), params_json, mode == "a",
            codec=codec, level=level, shuffle=shuffle,
            chunk_records=self._chunk_records(chunks), threads=threads,
        )

    def _chunk_records(self, chunks: int | tuple[int, ...] | None) -> int | None:
        # A chunk covers each record whole (doc/chunked.md): only the record count is free.
        if chunks is None or isinstance(chunks, (int, np.integer)):
            return None if chunks is None else int(chunks)
        c = tuple(int(n) for n in chunks)
        if len(c) != 1 + len(self.shape) or c[1:] != self.shape:
            raise RaError(
                f"chunks: expected records per chunk, as an int or (n,) + the record shape "
                f"{self.shape}, found {tuple(chunks)}"
            )
        return c[0]

    def append(self, records: Any) -> None:
        """Appends records: an array of shape ``(n,) + shape`` (or ``shape`` for one record) of
        the writer's dtype, or values it holds exactly (a value the dtype would store as another,
        such as ``1.7`` for an integer field, is :class:`RaError`). Not committed until
        :meth:`flush`."""
        arr = _as_writer_dtype(records, self.dtype, "records")
        if arr.shape == self.shape:
            arr = arr.reshape((1,) + self.shape)
        if arr.shape[1:] != self.shape:
            raise RaError(f"records of shape {arr.shape[1:]} do not match the writer's {self.shape}")
        arr = np.ascontiguousarray(arr)
        if arr.size:
            self._w.append(arr.reshape(-1).view(np.uint8))

    def flush(self) -> None:
        """Commits what was appended: readers see it, and a killed process keeps it."""
        self._w.flush()

    def sync(self) -> None:
        """Commits and syncs to disk: the records survive a power cut too."""
        self._w.sync()

    def close(self) -> None:
        """Commits, trims the file and releases the lock (closing twice is allowed)."""
        self._w.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._w.closed

    @property
    def flushed_len(self) -> int:
        """Records the file's header covers: those of the last flush."""
        return self._w.flushed_len

    def __len__(self) -> int:
        return len(self._w)

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def to_dask(path: str | os.PathLike[str], chunks: Any = None, *, mmap: bool = True) -> Any:
    """The array in a ``.ra`` file as a lazy ``dask.array.Array``: each task opens the file
    where it runs (a :class:`File` pickles as its path and identity, and refuses a file that
    changed) and reads only its chunk. ``chunks`` as dask's ``from_array`` takes them; by
    default the file's own chunks (:attr:`File.chunks`) for a chunked file, so that each task
    decodes whole chunks once, and dask's ``"auto"`` for other files.

    >>> x = rawarray.to_dask("field.ra", chunks=(16, 256, 256))   # doctest: +SKIP
    >>> x.mean(axis=0).compute()                                  # doctest: +SKIP
    """
    return File(path, mmap=mmap).to_dask(chunks)


class ArrayWriter:
    """Writes blocks of one array into a ``.ra`` file in place, from many threads, processes or
    machines at once (a shared filesystem): the Rust library's ``ArrayWriter``.

    ``ArrayWriter(path, shape, dtype)`` creates the file for the whole array (a header and a
    data section of zeros, renamed into place, so the path always holds a valid file), or
    opens it if a file holding that array is already there: ranks that race to start one array
    all get writers of the same file, and exactly one creates it (:attr:`created`).
    ``ArrayWriter(path)`` opens an existing little-endian file, plain or chunked.

    Compression (doc/chunked.md): any of ``chunks`` (numpy's axis order), ``codec``
    (``"zstd"``, ``"lz4"``, ``"none"``), ``level`` and ``shuffle`` (``"byte"``, ``"bit"``,
    ``"none"``) creates a chunked file, with the defaults of :func:`write` (zstd level 3 after
    a byte shuffle, chunks of about 1 MiB); an existing file at the path must have the same
    chunks, codec and shuffle (its own level is kept). Its blocks are compressed on ``threads`` threads (default: all cores) with the GIL
    released, and each block must cover whole chunks (:attr:`chunks`; the last chunk of an
    axis may be cut by the axis' end): a block that does not is refused with a ``ValueError``
    naming the block and the chunks, before anything is written, rather than merged under a
    lock, and a chunk is written once. With dask, give the array the file's chunks:
    ``da.store(x.rechunk(w.chunks), w, lock=False)``.

    ``w[key] = block`` writes a block: ``key`` is integers and slices of step 1 (numpy's
    order), ``block`` anything numpy broadcasts to the block's shape whose values the dtype
    holds exactly (floats are rounded to a float dtype; ``1.7`` or ``300`` for ``uint8`` is
    :class:`RaError`). Writers of disjoint blocks never disturb each other. A writer pickles as its path and the identity of
    the file (device, inode, header), so ``dask.array.store(x, w, lock=False)`` writes from
    every worker; unpickling refuses a file that was replaced or changed shape.

    >>> with rawarray.ArrayWriter("out.ra", (4, 1000), "<f4") as w:   # doctest: +SKIP
    ...     w[2] = np.ones(1000)
    ...     w[0:2, :500] = 0.5
    >>> w = rawarray.ArrayWriter("z.ra", (64, 512, 512), "<f4", chunks=(8, 512, 512),
    ...                          codec="zstd", shuffle="byte")   # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        shape: tuple[int, ...] | None = None,
        dtype: Any = None,
        *,
        chunks: Sequence[int] | None = None,
        codec: str | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        threads: int | None = None,
    ) -> None:
        self.path = os.fspath(path)
        if (shape is None) != (dtype is None):
            raise TypeError("ArrayWriter takes the shape and the dtype together, or neither")
        self._threads = 0 if threads is None else int(threads)
        if shape is None:
            given = [k for k, v in (("chunks", chunks), ("codec", codec), ("level", level),
                                    ("shuffle", shuffle)) if v is not None]
            if given:
                raise TypeError(f"ArrayWriter(path) opens a file as it was created: "
                                f"{', '.join(given)} apply only with a shape and dtype")
            self._w = _ArrayWriter(self.path, threads=self._threads)
        else:
            dt = _little_endian(np.dtype(dtype))
            _check_storable(dt)
            dims = list(reversed([int(n) for n in shape]))
            self._w = _ArrayWriter(self.path, _descr_json(dt), dims, codec,
                                   _file_chunks(chunks, "C"), level, shuffle, self._threads)
        # The dtype, chunks and compression numpy users see, by the same reading of the file
        # as rawarray.open's.
        with File(self.path) as f:
            self.dtype = _little_endian(f.dtype)
            self.chunks: tuple[int, ...] | None = f.chunks
            comp = f.compression
            self.compression: dict[str, Any] | None = (
                None if comp is None else {k: v for k, v in comp.items() if k != "ratio"})
        self.shape = tuple(reversed(self._w.header()[2]))

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)

    @property
    def created(self) -> bool:
        """Whether this writer created the file (rather than opened one)."""
        return self._w.created

    def __setitem__(self, key: Any, value: Any) -> None:
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > len(self.shape):
            raise IndexError(
                f"too many indices for the writer's array: it is {len(self.shape)}-dimensional, "
                f"but {len(key)} were given"
            )
        key = key + (slice(None),) * (len(self.shape) - len(key))
        ranges = []
        for axis, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step != 1:
                    raise IndexError(
                        f"axis {axis}: ArrayWriter writes blocks, slices of step 1, not step {step}"
                    )
                ranges.append((start, max(stop, start)))
                continue
            i = None if isinstance(k, (bool, np.bool_)) else getattr(k, "__index__", None)
            if i is None:
                raise IndexError(
                    f"axis {axis}: ArrayWriter writes blocks (integers and slices of step 1), "
                    f"not {type(k).__name__}"
                )
            i = i()
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            ranges.append((i % n, i % n + 1))
        block_shape = tuple(b - a for a, b in ranges)
        if self.chunks is not None and 0 not in block_shape:
            self._check_on_grid(ranges)
        arr = _as_writer_dtype(value, self.dtype, f"block {key}")
        # numpy's assignment rule: the value broadcasts to the selection (integer axes dropped).
        selected = tuple(n for n, k in zip(block_shape, key) if isinstance(k, slice))
        arr = np.ascontiguousarray(np.broadcast_to(arr, selected)).reshape(block_shape)
        if arr.size == 0:
            return
        self._w.write_block(list(reversed(ranges)), arr.reshape(-1).view(np.uint8))

    def _check_on_grid(self, ranges: list[tuple[int, int]]) -> None:
        """Refuses a block of a chunked file that does not cover whole chunks, naming the
        block and the chunks in numpy's order (the library refuses it too, in file order)."""
        for axis, ((a, b), c, n) in enumerate(zip(ranges, self.chunks, self.shape)):
            if a % c or (b % c and b != n):
                block = ", ".join(f"{lo}:{hi}" for lo, hi in ranges)
                raise ValueError(
                    f"block [{block}] of {self.path}: axis {axis} runs {a}:{b}, not whole chunks "
                    f"of the file's chunks {self.chunks} (shape {self.shape}); each block of a "
                    f"chunked file must start at a multiple of the chunk and end at one or at "
                    f"the axis' end (with dask: x.rechunk(writer.chunks))"
                )

    def __reduce__(self) -> tuple[Any, ...]:
        if self._w.closed:
            raise ValueError("cannot pickle a closed rawarray.ArrayWriter")
        return (_reopen_writer, (os.path.abspath(self.path), self._w.identity(), self._threads))

    def sync(self) -> None:
        """Syncs what this writer wrote to disk."""
        self._w.sync()

    def close(self) -> None:
        """Syncs and closes. The last writer of the file to close removes its journal of
        blocks when every block was written whole, and raises :class:`RaError` naming the
        blocks another writer began and never finished. Closing twice is allowed."""
        self._w.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._w.closed

    def __repr__(self) -> str:
        return f"<rawarray.ArrayWriter {self.path!r} shape={self.shape} dtype={self.dtype}>"

    def __enter__(self) -> "ArrayWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reopen_writer(path: str, identity: tuple[int, int, bytes], threads: int = 0) -> ArrayWriter:
    """A pickled :class:`ArrayWriter` opened again: the same file, unchanged in shape."""
    w = ArrayWriter(path, threads=threads)
    now = w._w.identity()
    if now != identity:
        why = "another file was put at its path" if now[:2] != identity[:2] else "its header changed"
        w.close()
        raise RaError(f"{path}: the file changed since this rawarray.ArrayWriter was pickled ({why})")
    return w
