"""An opened ``.ra`` file of an n-d array or records (:class:`File`, ``rawarray.open``): its
metadata at once, its data as views of a memory map or read in blocks."""

from __future__ import annotations

import json
import os
import re
import types
import warnings
from typing import Any

import numpy as np

from ._rawarray import Buffer, RaError, RawFile
from ._rawarray import shown_url as _shown
from ._rawarray import read_chunked_into as _read_chunked_into
from ._indexing import read_key
from ._axes import COMPRESSION_KEYS, compression_of, numpy_order, reraise_in_numpy_order
from ._dtype import RaWarning, _bool_views, _checked_bools, _element_dtype, _user_stacklevel
from . import _arrow

try:
    from ._rawarray import StoreFile as _StoreFile
except ImportError:  # built without the Cargo feature `cloud` (on by default)
    _StoreFile = None

# `scheme://`: an object-store URL (a Windows path `C:\...` has no `//` after its colon).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _is_url(path: Any) -> bool:
    return isinstance(path, str) and _URL.match(path) is not None


def _storage_options(options: Any) -> dict[str, str] | None:
    """``storage_options`` as the library takes them: text values (``True`` as ``"true"``),
    s3fs's ``client_kwargs`` (``endpoint_url``, ``region_name``) taken up among the others."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(f"storage_options: expected a dict, found {type(options).__name__}")
    out: dict[str, str] = {}
    for k, v in options.items():
        if k == "client_kwargs" and isinstance(v, dict):
            out.update(_storage_options(v) or {})
        elif isinstance(v, bool):
            out[str(k)] = "true" if v else "false"
        elif v is not None:
            out[str(k)] = str(v)
    return out


def _open_raw(path: str, storage_options: Any = None) -> Any:
    """The Rust side of a :class:`File`: a local file, or an object (``s3://``, ``gs://``,
    ``az://``, ``http(s)://``, ``file://``) read by the library's ``StoreArrayReader``."""
    if not _is_url(path):
        if storage_options is not None:
            raise RaError(f"{_shown(path)}: storage_options apply to object-store URLs (s3://, gs://, "
                          "az://, ...), not to a local path")
        return RawFile(path)
    if _StoreFile is None:
        raise RaError(
            f"{_shown(path)}: this build of rawarray reads no object-store URLs; it was built without "
            "its Cargo feature `cloud`, which is on by default"
        )
    return _StoreFile(path, _storage_options(storage_options))


def _where(path: str) -> str:
    """``path`` as another process finds it: absolute (it may run in another folder), or the
    URL."""
    return path if _is_url(path) else os.path.abspath(path)


# What a closed File keeps of its RawFile (every getter that reads no byte of the file).
_METADATA = ("eltype", "elbyte", "dims", "flags", "storage", "size", "num_elements",
             "header_len", "type_label", "params_json", "schema_json", "extra_json",
             "trailer_error", "big_endian_records", "file_len", "rounded_to", "coded",
             "viewable", "header_codec")


class File:
    """An opened ``.ra`` file (``rawarray.open``): the header and trailer are read and validated
    at once, in O(1) of the file's size; the data only when asked for.

    Use it as a context manager. ``array()`` is a read-only view over a memory map (no byte is
    copied; the view keeps the map alive after the file is closed). Indexing ``f[key]`` takes
    numpy's indexing in every axis and reads only the blocks the key touches (see
    :meth:`__getitem__`). ``array()`` of an LZ4-compressed or big-endian file decodes it into
    memory instead, and of a chunked file (:attr:`chunks`, :attr:`compression`) decodes it into
    a new, writable array.
    Views of the map are live views of the file, as ``np.memmap``'s are: a mapped file must not
    be truncated while views of it exist.

    A ``File`` reads the file it opened: it holds one descriptor from open to close, and the
    header, the trailer and every byte of data come through it, so a file written over the path
    meanwhile (``rawarray.write`` renames a new file into place) changes nothing it returns. A
    read that copies (``mmap=False``, and the decoding of LZ4, big-endian and chunked files)
    returns the bytes of the file as it was opened, or raises :class:`RaError` saying the file
    changed when another program rewrote it in place (``cp new.ra path``): never a mix of two
    versions. Records appended by the library's writers (under their lock) are no change.

    A ``File`` is an Arrow stream too (``__arrow_c_stream__``): ``pa.table(f)``,
    ``pl.DataFrame(f)`` and DuckDB's ``SELECT ... FROM f`` read it, in batches (see
    :meth:`to_arrow`).

    A ``File`` pickles (for another process) as its path and the identity of what it opened:
    device, inode, length and header. Unpickling opens the path again and raises
    :class:`RaError` naming the path if it is no longer that file, unchanged.
    """

    def __init__(self, path: str | os.PathLike[str], *, mmap: bool = True,
                 storage_options: dict[str, Any] | None = None, _warn: bool = True) -> None:
        self.path = path if _is_url(path) else os.fspath(path)
        self._mmap = mmap
        self._storage_options = storage_options
        self._raw = _open_raw(self.path, storage_options)
        if _warn:
            # What the library noticed at open (a RACHUNK1 index entry past the committed
            # size, which reads as zeros, and why that may be damage), each naming its chunk.
            for message in getattr(self._raw, "warnings", ()):
                warnings.warn(numpy_order(message, len(self._raw.dims)), RaWarning,
                              stacklevel=_user_stacklevel())
        self._dtype = _element_dtype(self._raw)
        self._buffer: Buffer | None = None
        # The array of the map (or of the decoded data) that mapped indexing indexes.
        self._view: np.ndarray | None = None
        self._bools_checked = False
        # (codec, level, shuffle, chunk shape in file order, block bytes) of a chunked file or
        # object, from the config its reader validated at open.
        self._chunking = self._raw.chunk_config()
        # What indexing asks on every call, fixed at open (a File reads the file it opened).
        self._shape = tuple(reversed(self._raw.dims))
        self._is_plain = self._raw.viewable and not _is_url(self.path)
        self._read_dtype = (self._dtype.newbyteorder(">") if self._raw.big_endian_records
                            else self._dtype)
        self._np_chunks = (None if self._chunking is None
                           else tuple(reversed(self._chunking["chunk"])))
        # `f[i, j, k]` of a local file read as one element (an object is read by its store's
        # reader through the general path).
        self._read_element = None if _is_url(self.path) else self._raw.read_element
        # The reads of this File's Arrow streams (each opens the file itself).
        self._arrow_reads = _arrow.IoCounter()
        self.closed = False

    @property
    def chunks(self) -> tuple[int, ...] | None:
        """The chunk shape of a chunked file, in numpy's axis order (the file's chunk dims
        reversed, as :attr:`shape` is), or None for a file that is not chunked. Dask's
        ``from_array`` and xarray's ``preferred_chunks`` take it."""
        return self._np_chunks

    @property
    def compression(self) -> dict[str, Any] | None:
        """How the data is stored, or None for plain data. For a chunked file, a dict:
        ``codec`` (``"zstd"``, ``"lz4"``, ``"none"``, ``"pco"``, ``"huffman"``) and ``level``; ``filters``,
        the pipeline in the order it was applied, as :func:`write` takes it (each a name or a
        ``(name, param)`` tuple: ``[("bitround", 10), "shuffle", "bytedelta"]``); ``shuffle``,
        its one-filter shorthand (``"byte"``, ``"bit"``, ``"none"``, or None when the pipeline
        is not one); ``chunks`` and ``blocks`` in numpy's order (``blocks`` None for
        ``RACHUNK1``'s byte runs) and ``block_bytes``, the raw bytes of a block;
        ``layout_version`` (1 or 2) and ``statistics`` (whether chunks carry min/max);
        ``split`` (whether each block is compressed as byte streams, a frame per byte plane);
        ``rounded_to``, the mantissa bits a lossy filter kept (from the trailer's mark, which
        every rewrite keeps, or the pipeline), None when the data were not rounded; and
        ``ratio``, the plain data bytes over the bytes stored. The whole-section LZ4 block is
        ``{"codec": "lz4-whole", "ratio": ...}`` with every other key None, as ``ra info``
        names it."""
        r = self._raw
        plain = r.num_elements * r.elbyte
        ratio = plain / r.size if r.size else None
        if self._chunking is not None:
            return compression_of(self._chunking, r.rounded_to, ratio)
        if r.header_codec is not None:
            return {**dict.fromkeys(COMPRESSION_KEYS), "codec": r.header_codec,
                    "rounded_to": r.rounded_to, "ratio": ratio}
        return None

    def to_dask(self, chunks: Any = None) -> Any:
        """This file's array as a lazy ``dask.array.Array`` (see :func:`to_dask`): ``chunks``
        default to the file's own (:attr:`chunks`), else dask's ``"auto"``."""
        import dask.array as da  # noqa: PLC0415 (optional dependency)

        if chunks is None:
            chunks = self.chunks or "auto"
        return da.from_array(self, chunks=chunks)

    def to_arrow(self, columns: Any = None, filters: Any = None) -> Any:
        """The file as a ``pyarrow.Table`` (doc/arrow.md): one row per record, one column per
        field, in the schema's order and names (a file that is not of records: one column
        ``values``). The batches come from Rust through the Arrow C stream interface.

        ``columns`` (a list of names) keeps only those columns, in that order. ``filters``
        keeps only the records that match, in the convention of
        ``pyarrow.parquet.read_table`` and pandas' ``read_parquet``: a list of
        ``(column, op, value)`` tuples, all of which must hold, or a list of such lists, one
        of which must hold; ``op`` is one of ``==`` (or ``=``), ``!=``, ``<``, ``<=``, ``>``,
        ``>=``, ``in``, ``not in`` (with a collection of values). A nested record's field is
        named by its path (``"inner.a"``). Values compare as the numbers they are (an
        ``int64`` field and ``2.5``, a ``uint64`` field and ``2**64 - 1`` exactly); NaN
        compares false but with ``!=``, and ``-0.0 == 0.0``, as in numpy. A compressed record
        file (chunked, with statistics: how the library writes it by default) is read only
        in the chunks whose statistics allow a match: :attr:`io_stats` counts them.

        >>> f.to_arrow(columns=["step", "energy"], filters=[("step", ">=", 1000), ("step", "<", 1010)])  # doctest: +SKIP

        A column that does not exist, or a type that cannot be compared (complex, a fixed
        array), is a :class:`RaError` naming it; so are ``filters`` on a file that is not a
        record file, and an empty list (as pyarrow refuses it: ``filters=None`` reads every
        row)."""
        return _arrow.to_arrow(self._stream(columns=columns, filters=filters))

    def to_arrow_batches(self, rows: int = _arrow.DEFAULT_BATCH_ROWS, columns: Any = None,
                         filters: Any = None) -> Any:
        """The file as a ``pyarrow.RecordBatchReader`` of ``rows`` rows a batch (at most:
        ``filters`` keep fewer), each read when asked for: the memory in use is one batch's,
        whatever the file's size. ``columns`` and ``filters`` as in :meth:`to_arrow`."""
        return _arrow.to_arrow_batches(self._stream(rows, columns, filters))

    def to_pandas(self, columns: Any = None, filters: Any = None) -> Any:
        """The file as a ``pandas.DataFrame``, through :meth:`to_arrow` (needs pyarrow, pandas);
        ``columns`` and ``filters`` as there."""
        return _arrow.to_pandas(self._stream(columns=columns, filters=filters))

    def to_polars(self, columns: Any = None, filters: Any = None) -> Any:
        """The file as a ``polars.DataFrame``, through :meth:`to_arrow` (needs pyarrow, polars);
        ``columns`` and ``filters`` as there."""
        return _arrow.to_polars(self._stream(columns=columns, filters=filters))

    def stats(self, per_chunk: bool = False) -> dict[str, Any] | None:
        """The per-field statistics a compressed file keeps for each chunk (its minimum,
        maximum and NaN count; doc/chunked.md section 5.4), from its index alone: no data is
        read. ``{field: {"min": ..., "max": ..., "nan": ...}}`` over the whole file, or with
        ``per_chunk=True`` ``{field: [one such dict per chunk, or None]}`` in chunk order.
        Fields are a record's scalar fields (a nested one by its path ``"inner.a"``, a fixed
        array field over all its values), or ``"values"`` for a plain array. ``min`` and
        ``max`` are None when every value is NaN (and for complex fields, which have no
        order); all three are None for the whole file when a written chunk's statistics are
        absent or damaged (``per_chunk=True`` shows which: None). Returns None for a file
        without statistics (plain, layout version 1, or written with them off): ``ra
        compress`` adds them.

        >>> f.stats()["step"]                                    # doctest: +SKIP
        {'min': 0, 'max': 30719, 'nan': 0}
        """
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        if _is_url(self.path):
            raise RaError(f"{_shown(self.path)}: stats() reads local files")
        return self._raw.stats(bool(per_chunk))

    def _read_whole(self, order: str, mmap: bool, filters: Any) -> np.ndarray:
        """:func:`rawarray.read` of this file: the records ``filters`` match, copied, or the
        whole :meth:`array`."""
        if filters is not None:
            return self._select(filters).copy()
        return self.array(order, mmap=mmap)

    def _select(self, filters: Any) -> np.ndarray:
        """The records that match ``filters`` (as :meth:`to_arrow` takes them), as a 1-d
        structured array, read from only the chunks that can hold a match."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        if _is_url(self.path):
            raise RaError(f"{_shown(self.path)}: filters= reads local files")
        buf = self._raw.select(filters)
        out = np.frombuffer(buf, dtype=self._dtype)
        if _bool_views(out[:0]):
            _checked_bools(out, self.path)
        return out

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule protocol: the file as a stream of record batches (the table of
        :meth:`to_arrow`, 65536 rows a batch, each read when the consumer asks for it), so
        ``pa.table(f)``, ``pl.DataFrame(f)`` and DuckDB's ``SELECT ... FROM f`` take a ``File``
        as it is. ``requested_schema`` is not applied: the columns are doc/arrow.md's."""
        return self._stream().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow PyCapsule protocol: the schema of :meth:`__arrow_c_stream__`'s table."""
        return self._stream().__arrow_c_schema__()

    def _stream(self, rows: int = _arrow.DEFAULT_BATCH_ROWS, columns: Any = None,
                filters: Any = None) -> Any:
        """The file's Arrow stream. The stream's reader opens the path itself: it must still be
        the file this File opened (checked before and after, so the reader cannot have opened
        another one between); each batch is then checked to be of that file as it was. Its
        reads are added to :attr:`io_stats`."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        if _is_url(self.path):
            raise RaError(f"{_shown(self.path)}: Arrow streams (to_arrow, to_pandas, to_polars, "
                          "to_arrow_batches, the Arrow C stream interface) read local files; "
                          "`ra sql` queries object-store URLs, and f[...] reads the records")
        self._check_same_file()
        out = _arrow.stream(self.path, rows, columns, filters, self._arrow_reads)
        self._check_same_file()
        return out

    def _check_same_file(self) -> None:
        if RawFile(self.path).identity() != self._raw.identity():
            raise RaError(f"{_shown(self.path)}: the file at this path changed since it was opened; "
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
        # storage_options travel with it (credentials too, as fsspec's do): a worker opens the
        # object as this process did.
        return (_reopen, (_where(self.path), self._raw.identity(), self._mmap,
                          self._storage_options))

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
            "compressed": r.coded,
        }

    @property
    def shape(self) -> tuple[int, ...]:
        """numpy's shape: the file's dims reversed."""
        return self._shape

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
        return f"<rawarray.File {_shown(self.path)!r} shape={self.shape} dtype={self.dtype} ({state})>"

    # -- data ------------------------------------------------------------------------------
    @property
    def _plain(self) -> bool:
        """Whether numpy can view the file's bytes as they are on disk (not big-endian, not
        LZ4, not chunked: a chunked section is never mapped as plain bytes; not an object in a
        store, which is read by ranged requests)."""
        return self._is_plain

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
        return self._read_dtype

    def array(self, order: str = "C", *, mmap: bool = True) -> np.ndarray:
        """The whole array: a read-only view over a memory map for plain little-endian files
        (``mmap=False``: a new, writable array read into memory with positioned reads), decoded
        into memory (read-only) for LZ4 or big-endian ones, and decoded into a new, writable
        array for chunked ones (chunks decoded in parallel, the GIL released). ``order`` as in
        :func:`read`."""
        if self._chunked or (not mmap and self._plain):
            # Read once, and a bool file's check made on that read, not on a second one.
            arr = self._read_into_memory(order)
            if not self._bools_checked:
                _checked_bools(arr, self.path)
                self._bools_checked = True
            return arr
        self._check_bools_once()
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
        try:
            return self._raw.read_block(ranges[::-1])
        except (RaError, IndexError) as e:
            reraise_in_numpy_order(e, len(ranges))

    def __getitem__(self, key: Any) -> Any:
        """``f[key]`` with numpy's indexing, exactly: integers (negative too), slices with any
        step, ``...``, ``np.newaxis``, boolean scalars, and integer or boolean arrays (advanced
        indexing, with numpy's broadcasting and placement of the advanced axes).

        Opened with ``mmap=True`` (the default), a plain little-endian file is indexed as the
        view of its memory map (``f.array()[key]``): basic keys give views without a copy, and
        only the pages a key touches are read. Otherwise (``mmap=False``, big-endian and LZ4
        files) the key is read in blocks by the library's ``ArrayReader``: each run of indices
        touched on the leading axes, and on the last axis the range from the first index to the
        last; :attr:`io_stats` counts those reads. One element's key (an integer per axis,
        ``f[i, j, k]``) is parsed by the library's binding and read with one positioned read
        (or from one decoded block), with no planning in Python. An LZ4 file is decompressed
        once, then cut from. A chunked file reads and decodes only the chunks the key touches, each once (the
        runs of an axis that no untouched chunk separates are read as one block). Keys out of
        bounds raise ``IndexError`` naming the axis, as numpy's do."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        self._check_bools_once()
        if not self._shape or (self._is_plain and self._mmap):
            if self._view is None:
                self._view = self._mapped_array("C")
            return self._view[key]
        if self._read_element is not None:
            # One element (`f[i, j, k]`): the library's one read, from a key parsed in Rust.
            try:
                element = self._read_element(key)
            except (RaError, IndexError) as e:
                reraise_in_numpy_order(e, len(self._shape))
            if element is not None:
                return np.frombuffer(element, self._read_dtype)[0]
        return read_key(key, self._shape, self._read_dtype, self._read_block, self._np_chunks)

    @property
    def io_stats(self) -> dict[str, int]:
        """The library's count of data reads made by indexing (``mmap=False``, big-endian,
        LZ4 and chunked files), by ``filters=`` and by the Arrow readers (``to_arrow`` and
        the others) of a chunked file: ``{"reads": ..., "bytes": ...}``. For a chunked file, ``reads``
        counts the chunks read (once per chunk per block read) and ``bytes`` their stored,
        compressed bytes read. Reads through the memory map are the kernel's and are not
        counted, nor are whole reads (:meth:`array`). For an object-store URL: every request,
        open included, and the bytes it brought."""
        if self.closed:
            raise ValueError("I/O operation on a closed rawarray.File")
        reads, nbytes = self._raw.io_stats()
        more, more_bytes = self._arrow_reads.get()
        return {"reads": reads + more, "bytes": nbytes + more_bytes}

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Closes the file's descriptor and drops this object's reference to the map; views
        already made keep the map alive, and the metadata (shape, dtype, header, params,
        dim_names, coords) stays."""
        self._buffer = self._view = None
        self._read_element = None       # a method of the RawFile: it would keep it open
        if not self.closed:
            self._raw = types.SimpleNamespace(**{k: getattr(self._raw, k) for k in _METADATA})
        self.closed = True

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reopen(path: str, identity: tuple[Any, ...], mmap: bool = True,
            storage_options: dict[str, Any] | None = None) -> File:
    """A pickled :class:`File` opened again: the same path, and the file it named then."""
    f = File(path, mmap=mmap, storage_options=storage_options)
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
        raise RaError(f"{_shown(path)}: the file changed since this rawarray.File was pickled ({why})")
    return f
