"""The package's entry points: ``open``, ``read``, ``write``, ``loads`` and ``to_dask``."""

from __future__ import annotations

import builtins
import json
import os
import tempfile
from typing import Any, Sequence

import numpy as np

from ._rawarray import RaError
from ._rawarray import shown_url as _shown
from ._rawarray import write as _write
from ._axes import file_chunks, in_numpy_order
from ._dtype import _check_storable, _descr_json, _little_endian, _refuse_nat
from ._file import File, _is_url, _storage_options
from ._ragged import RaggedFile, _as_ragged
from ._rawarray import holds as _holds
from . import _arrow


def open(path: str | os.PathLike[str], *, mmap: bool = True,  # noqa: A001 (the package's public name)
         storage_options: dict[str, Any] | None = None) -> File:
    """Opens a ``.ra`` file lazily; see :class:`File`. ``mmap=False`` indexes a plain file
    with positioned reads (counted by ``File.io_stats``) instead of views of a memory map:
    for files others may truncate, and network filesystems.

    ``path`` may be an object-store URL: ``s3://bucket/key`` (also ``s3a://``), ``gs://``,
    ``az://`` and ``abfs(s)://``, ``http(s)://`` and ``file://``. The library's
    ``StoreArrayReader`` opens the object with at most two ranged requests and pins every later
    one to it (its ETag), so an object written again meanwhile is an error, never other bytes.
    ``f[key]`` then fetches only what the key touches (a plain object's byte runs; a chunked
    object's blocks, with a cache of the pieces fetched and blocks decoded shared by the reads of
    the File; requests less than 1 MiB apart joined) and ``io_stats`` counts every request, open
    included. The store is configured from the environment as object_store's builders read it
    (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT``,
    ``GOOGLE_SERVICE_ACCOUNT``, ``AZURE_STORAGE_ACCOUNT_NAME``, ... ), so Dask workers on other
    machines (``rawarray.to_dask("s3://...")``) open it with their own, and from
    ``storage_options``, a dict under fsspec's names (s3fs's ``key``, ``secret``, ``token``,
    ``endpoint_url``, ``region_name``, ``anon``, ``client_kwargs``; gcsfs's ``token``; adlfs's
    ``account_name``, ``account_key``, ``sas_token``, ``connection_string``) or
    object_store's own (``aws_endpoint``, ``allow_http``, ``azure_storage_use_emulator``, ...).

    >>> with rawarray.open("run.ra") as f:                        # doctest: +SKIP
    ...     f.shape, f.dtype, f.params["dt"]
    ...     energy = f.array()["energy"]                          # a view, no copy
    ...     last_step = f[-1]                                     # reads one record's bytes

    A ragged file opens as a :class:`RaggedFile` (``len(f)``, ``f[k]`` reads one row; ``mmap``
    as for a ``File``: views of a map, or copies each of one state of the file).
    """
    if storage_options is None and _local_holds(path) == "rows":
        return RaggedFile(path, mmap=mmap)
    return File(path, mmap=mmap, storage_options=storage_options)


def _local_holds(path: str | os.PathLike[str]) -> str:
    """What the local file at ``path`` holds, as the library tells it: ``"rows"`` (ragged) or
    ``"array"``; ``"array"`` for what cannot be opened as a local file (the n-d reader then says
    why, or opens a URL)."""
    try:
        return _holds(os.fspath(path))
    except OSError:
        return "array"


def read(path: str | os.PathLike[str], *, order: str = "C", mmap: bool = True,
         filters: Any = None,
         storage_options: dict[str, Any] | None = None) -> np.ndarray:
    """The array in a ``.ra`` file, as numpy sees it: shape the dims reversed (``order="C"``,
    C-contiguous) or the dims as they are (``order="F"``, F-contiguous). Plain little-endian
    files come back as a read-only view over a memory map; ``mmap=False`` reads them into a new,
    writable array instead (positioned reads, the GIL released: for files others may truncate,
    and network filesystems). A chunked file is decoded into a new, writable array that owns its
    memory. LZ4-compressed (whole-section) or big-endian files are decoded into memory,
    read-only (``np.array(a)`` makes a writable copy). Raises
    :class:`RaError` for an invalid file and ``OSError`` for I/O errors. A ragged file
    (``rawarray.Ragged`` rows) comes back as a :class:`Ragged` over its memory map (``mmap=False``:
    over copies read into memory). ``path`` may be an object-store URL, as for :func:`open`
    (``storage_options`` too).

    ``filters`` (as :meth:`File.to_arrow` takes them: ``[("step", ">=", 1000), ("step", "<",
    1010)]``) returns only the records of a record file that match, as a new 1-d structured
    array in file order, read from only the chunks whose statistics allow a match (a
    compressed record file written with statistics, the default). A file that is not a
    record file is refused with :class:`RaError`.

    >>> window = rawarray.read("run.ra", filters=[("step", ">=", 1000), ("step", "<", 1010)])  # doctest: +SKIP
    """
    # What the file holds is told once, by open; each kind reads itself whole.
    with open(path, mmap=mmap, storage_options=storage_options) as f:
        return f._read_whole(order, mmap, filters)


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
    storage_options: dict[str, Any] | None = None,
    filters: Sequence[str | tuple[str, int]] | None = None,
    blocks: Sequence[int] | int | None = None,
    layout_version: int | None = None,
    statistics: bool | None = None,
    split: bool | None = None,
    stream_crcs: bool | None = None,
) -> None:
    """Writes ``array`` to a ``.ra`` file, atomically (a temporary file renamed over ``path``:
    a failed write leaves the old file as it was; a file it replaces is synced before the
    rename, so that a power cut cannot cost it, while a new file is not, as ``numpy.save``).
    Plain data of 64 MiB or more is written on two threads on ext4 or XFS, a second thread
    copying part of it through a map of the new file: a file system that fails during that copy
    (an aborted journal, a shutdown) ends the process with ``SIGBUS`` instead of an ``OSError``;
    a full disk is still an ``OSError``, and the old file is kept either way.

    ``path`` may be an object-store URL (``s3://``, ``gs://``, ``az://``, ``file://``; see
    :func:`open`, and ``storage_options`` there): the object goes up by one request, or by a
    multipart upload streamed in parts of 16 MiB (memory holds a few parts beyond the array and,
    for the chunked layout, its compressed bytes); nothing is at the URL until the upload
    completes, a failed write aborts it and leaves the previous object, and the parts a killed
    process left are aborted by the next write to the URL or by :func:`recover_url`. Arrays
    only: tables and ragged files are written locally and uploaded.

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

    Compression (doc/chunked.md): any of ``codec``, ``level``, ``filters``, ``shuffle``,
    ``chunks``, ``blocks``, ``layout_version``, ``statistics``, ``split`` and ``stream_crcs`` writes the chunked layout, by
    default zstd level 3 after a byte shuffle, in chunks of about 1 MiB cut in n-d blocks, with
    per-chunk statistics, layout version 2. ``codec`` is a codec of the library's table
    (doc/chunked.md 5.3; ``"pco"`` for numbers, ``"huffman"`` for fast decoding of filtered planes; a wrong name's message lists them).
    ``filters`` is the codec pipeline, applied in order before the codec: each a filter of the
    library's table (doc/chunked.md 5.2) by name, or a ``(name, param)`` tuple, such as
    ``[("bitround", 10), "shuffle", "bytedelta"]``; ``("bytedelta", 4)`` differences only the
    byte planes of the mask's bits (4: plane 2, the third byte of each element: with
    ``["shuffle", ("bytedelta", 4), ("bytedelta", 4)]`` and ``codec="huffman"`` a smooth
    little-endian float32 field stores 1.11x Blosc2's ratio, doc/benchmarks.md). ``bitround`` is lossy (floats keep that
    many mantissa bits), is applied only when named, and :attr:`File.compression` says so.
    ``shuffle`` (``"byte"``, ``"bit"``, ``"none"``) is the one-filter shorthand of it.
    ``chunks`` and ``blocks`` are in numpy's axis order, like every shape this package shows
    (each at least 1; a chunk may exceed its axis, a block is at most its chunk): a read
    decodes only the blocks it crosses. ``layout_version=1`` writes ``RACHUNK1`` for readers of
    older releases (one shuffle at most, codecs none, lz4 and zstd, no blocks, no statistics);
    ``statistics=False`` leaves out the per-chunk min/max that ``filters=`` of readers use to
    skip chunks. ``split`` compresses each block as byte streams, a frame per byte plane
    (doc/chunked.md 5.3): on by default for zstd after a byte shuffle of 2- to 16-byte
    elements, with 128 KiB blocks, as c-blosc2 does; ``split=False`` writes one stream a block,
    for readers that predate byte streams. ``stream_crcs`` gives each byte stream its own CRC-32
    (5.3), so that a read of some fields of records reads and checks only their streams: on by
    default for records split in byte streams, off for arrays; ``stream_crcs=False`` keeps the
    files readers without it read, and ``stream_crcs=True`` without byte streams is an error.
    The chunks are compressed on ``threads`` threads (default: all cores), the
    GIL released. ``compress=True`` (or ``codec="lz4-whole"``) writes instead the whole data
    section as one LZ4 block, the format the C reference reads; both at once is an error.

    Note the two ``filters=``: on writers it is this codec pipeline (as in Blosc2 and zarr), on
    readers (:func:`read`, :meth:`File.to_arrow`) row predicates (as in pyarrow); each refuses
    the other's form.

    A table (a ``pyarrow.Table`` or ``RecordBatchReader``, a pandas ``DataFrame`` without its
    index, anything with ``__arrow_c_stream__`` such as a polars ``DataFrame``) is written as a
    record file: one record per row, one field per column in the table's order (doc/arrow.md).
    Only fixed-width columns can be fields (numbers, bool, fixed-size binary and lists, structs
    of those); any other column, or a null, is refused with :class:`RaError` naming the column
    and its type, before anything is written. Only ``params`` applies to a table.

    >>> rawarray.write("field.ra", field, chunks=(64, 64, 64), codec="zstd", level=3, shuffle="byte")   # doctest: +SKIP
    >>> rawarray.write("field.ra", field, chunks=(64, 64, 64), blocks=(16, 16, 64),
    ...                filters=[("bitround", 10), "shuffle", "bytedelta"], codec="zstd")   # doctest: +SKIP

    A :class:`Ragged`, a list of arrays of unequal lengths, or a list (or 1-d array) of ``str``
    or of ``bytes`` is written as a ragged file (doc/format.md, section 10; text as UTF-8,
    marked as text); its trailer holds the values' schema only, so ``params``, ``dim_names``,
    ``coords``, ``compress`` and ``order="F"`` are refused for it. The compression keywords
    compress its values as they do an array's (section 10.2: the offsets stay plain, so a row
    still reads alone); ``chunks`` and ``blocks`` are then the values per chunk and per block,
    ints.
    """
    # An opened .ra file has an Arrow stream too, but is written as the array it holds.
    if _arrow.is_table(array) and not isinstance(array, (File, RaggedFile)):
        given = {"compress": compress, "dim_names": dim_names, "coords": coords, "chunks": chunks,
                 "codec": codec, "level": level, "shuffle": shuffle, "threads": threads,
                 "filters": filters, "blocks": blocks, "layout_version": layout_version,
                 "statistics": statistics, "split": split, "stream_crcs": stream_crcs}
        unused = [k for k, v in given.items() if v not in (None, False)] + (
            ["order"] if order != "C" else [])
        if unused:
            raise ValueError(f"a table is written as records: {', '.join(unused)} do not apply")
        if _is_url(path):
            raise RaError(f"{_shown(path)}: a table is written to a local file; upload it from there "
                          "(record files are appended in place, which objects cannot be)")
        _arrow.write_table(path, array, params)
        return
    if isinstance(array, np.ndarray) and array.dtype.kind == "U" and array.ndim == 1:
        array = array.tolist()
    ragged = _as_ragged(array)
    if ragged is not None:
        given = [k for k, v in (("params", params), ("dim_names", dim_names), ("coords", coords),
                                ("compress", compress or None)) if v is not None]
        if given or order != "C":
            raise RaError(f"a ragged file keeps no {', '.join(given) or 'order'}: write its rows "
                          "alone (ragged values are one run, in row order)")
        if _is_url(path):
            raise RaError(f"{_shown(path)}: a ragged file is written to a local file; upload it from there")
        ragged._write(path, codec=codec, level=level, shuffle=shuffle, chunks=chunks,
                      threads=threads, filters=filters, blocks=blocks,
                      layout_version=layout_version, statistics=statistics, split=split,
                      stream_crcs=stream_crcs)
        return
    arr = np.asarray(array)
    arr_shape = arr.shape
    _check_storable(arr.dtype)
    _refuse_nat(arr)
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
    with in_numpy_order(len(dims), reverse=order == "C"):
        _write(os.fspath(path), _descr_json(arr.dtype), dims, data, params_json, compress,
               json.dumps(extra) if extra else None, codec, file_chunks(chunks, order, "chunks",
                                                                        arr_shape),
               level, shuffle, 0 if threads is None else int(threads),
               _storage_options(storage_options), filters,
               file_chunks(blocks, order, "blocks", arr_shape), layout_version, statistics, split,
               stream_crcs)


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


def to_dask(path: str | os.PathLike[str], chunks: Any = None, *, mmap: bool = True,
            storage_options: dict[str, Any] | None = None) -> Any:
    """The array in a ``.ra`` file as a lazy ``dask.array.Array``: each task opens the file
    where it runs (a :class:`File` pickles as its path and identity, and refuses a file that
    changed) and reads only its chunk. ``chunks`` as dask's ``from_array`` takes them; by
    default the file's own chunks (:attr:`File.chunks`) for a chunked file, so that each task
    decodes whole chunks once, and dask's ``"auto"`` for other files.

    >>> x = rawarray.to_dask("field.ra", chunks=(16, 256, 256))   # doctest: +SKIP
    >>> x.mean(axis=0).compute()                                  # doctest: +SKIP
    """
    return File(path, mmap=mmap, storage_options=storage_options).to_dask(chunks)


def recover_url(url: str, *, storage_options: dict[str, Any] | None = None) -> int:
    """Aborts the multipart uploads that writers which died (a killed process, a lost worker)
    left at the object-store URL ``url``, and returns how many: S3's (and S3-compatible
    stores'), listed by the store. The next :func:`write` to the URL does this itself. Other
    stores keep none that cost anything (Azure drops uncommitted blocks within a week)."""
    from ._rawarray import recover_url as _recover

    return int(_recover(url, _storage_options(storage_options)))
