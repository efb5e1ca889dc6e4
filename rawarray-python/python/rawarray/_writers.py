"""The writers: :class:`RecordWriter` (records appended as a program runs), :class:`ArrayWriter`
(blocks of one array written in place, from many processes) and :class:`RaggedWriter` (rows
appended), each over the Rust library's writer of the same name."""

from __future__ import annotations

import json
import os
from typing import Any, Self, Sequence

import numpy as np

from ._rawarray import ArrayWriter as _ArrayWriter
from ._rawarray import RaError
from ._rawarray import shown_url as _shown
from ._rawarray import RaggedWriter as _RaggedWriter
from ._rawarray import RecordWriter as _RecordWriter
from ._axes import file_chunks, in_numpy_order
from ._dtype import _check_storable, _descr_json, _little_endian
from ._file import File, _is_url, _storage_options
from ._ragged import _BYTES, RaggedFile
from ._values import _as_writer_dtype


class _Writer:
    """What every writer does alike through the Rust writer it holds (``self._w``): closing,
    also as a context manager."""

    _w: Any

    def close(self) -> None:
        """Commits, trims the file and releases the lock (closing twice is allowed)."""
        self._w.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._w.closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Appender(_Writer):
    """What the appending writers (:class:`RecordWriter`, :class:`RaggedWriter`) do alike:
    each :meth:`flush` commits what was appended by one header write."""

    def flush(self) -> None:
        """Commits what was appended: readers see it, and a killed process keeps it."""
        self._w.flush()

    def sync(self) -> None:
        """Commits and syncs to disk: what was appended survives a power cut too."""
        self._w.sync()

    @property
    def flushed_len(self) -> int:
        """Records (or rows) the file's header covers: those of the last flush."""
        return self._w.flushed_len

    def __len__(self) -> int:
        return len(self._w)


class RecordWriter(_Appender):
    """Appends records to a ``.ra`` file as a simulation runs, through the Rust library's record
    writer: one writer at a time (an exclusive lock; a second writer gets :class:`RaError`),
    and a kill at any moment leaves a valid file holding every record of the last ``flush``.

    ``dtype`` is one record's type: a structured dtype (stored as eltype 0 with its schema, so
    Rust's ``RecordReader`` reads it into a derived struct of the same layout) or a plain one.
    ``shape`` makes each record an array of that numpy shape (a snapshot per step); the file's
    dims are then ``shape`` reversed, then the record count, and ``rawarray.read`` gives
    ``(count,) + shape``. ``params`` (anything ``json.dumps`` takes) go in the trailer.
    ``mode="a"`` opens an existing file to append (same dtype and shape).

    ``codec``, ``level``, ``filters``, ``shuffle``, ``chunks`` (records per chunk: an int, or
    ``(n,) + shape``), ``blocks`` (likewise, at most the chunk), ``layout_version``,
    ``statistics``, ``split`` and ``stream_crcs``, as :func:`rawarray.write` takes them, compress the records a chunk at a time
    in the chunked layout (``File.compression``), on ``threads`` threads (0: all cores); any of
    them selects it, zstd with byte shuffle by default. ``filters`` is the codec pipeline
    (``[("bitround", 10), "shuffle", "bytedelta"]``), not the row predicates of readers. ``flush`` still commits every record appended so far. The whole-section
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
        filters: Sequence[str | tuple[str, int]] | None = None,
        blocks: int | tuple[int, ...] | None = None,
        layout_version: int | None = None,
        statistics: bool | None = None,
        split: bool | None = None,
        stream_crcs: bool | None = None,
    ) -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', not {mode!r}")
        dt = np.dtype(dtype)
        _check_storable(dt)
        self.dtype = _little_endian(dt)
        self.shape = tuple(int(n) for n in shape)
        self.path = os.fspath(path)
        params_json = None if params is None else json.dumps(params)
        if mode == "a":
            self._check_appendable()
        with in_numpy_order(1 + len(self.shape)):
            self._w = _RecordWriter(
                self.path, _descr_json(self.dtype), list(reversed(self.shape)), params_json,
                mode == "a", codec=codec, level=level, shuffle=shuffle,
                chunk_records=self._chunk_records(chunks), threads=threads, filters=filters,
                blocks=self._record_blocks(blocks), layout_version=layout_version,
                statistics=statistics, split=split, stream_crcs=stream_crcs,
            )

    def _check_appendable(self) -> None:
        """Refuses, in numpy's words, to append records of another dtype or shape than the file
        holds (the library refuses them too, in the file's words: element types and bytes)."""
        try:
            f = File(self.path)
        except (OSError, RaError):
            return                      # the library's open says what is wrong with it
        with f:
            have, shape = f.dtype, f.shape[1:]
        if (_little_endian(have), shape) != (self.dtype, self.shape):
            raise RaError(
                f"{_shown(self.path)}: the file holds records of dtype {have} and shape {shape}; asked "
                f"to append records of dtype {self.dtype} and shape {self.shape}: append with "
                f"the file's own, rawarray.RecordWriter(path, f.dtype, shape=f.shape[1:], "
                f"mode='a') where f = rawarray.open(path), or start a new file with mode='w'"
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

    def _record_blocks(self, blocks: int | tuple[int, ...] | None) -> list[int] | None:
        """A block shape of records (an int, records per block, or ``(n,) + shape`` in numpy's
        order) in the file's dim order; the library checks it against the chunk."""
        if blocks is None:
            return None
        if isinstance(blocks, (int, np.integer)) and not isinstance(blocks, bool):
            blocks = (int(blocks),) + self.shape
        b = tuple(blocks)
        if len(b) != 1 + len(self.shape):
            raise RaError(
                f"blocks: expected records per block, as an int or (n,) + a block of the record "
                f"shape {self.shape}, found {b}"
            )
        return file_chunks(b, "C", "blocks")

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


class ArrayWriter(_Writer):
    """Writes blocks of one array into a ``.ra`` file in place, from many threads, processes or
    machines at once (a shared filesystem): the Rust library's ``ArrayWriter``.

    ``ArrayWriter(path, shape, dtype)`` creates the file for the whole array (a header and a
    data section of zeros, renamed into place, so the path always holds a valid file), or
    opens it if a file holding that array is already there: ranks that race to start one array
    all get writers of the same file, and exactly one creates it (:attr:`created`).
    ``ArrayWriter(path)`` opens an existing little-endian file, plain or chunked.

    Compression (doc/chunked.md): any of ``chunks`` and ``blocks`` (numpy's axis order),
    ``codec``, ``level``, ``filters`` (the codec pipeline, ``[("bitround", 10), "shuffle",
    "bytedelta"]``), ``shuffle`` (its one-filter shorthand), ``layout_version``,
    ``statistics``, ``split`` and ``stream_crcs``, as :func:`write` takes them, creates a chunked file, with the defaults of
    :func:`write` (zstd level 3 after a byte shuffle, chunks of about 1 MiB); an existing file
    at the path must have the same chunks, codec and filters (its own level and byte streams are kept). Its blocks are compressed on ``threads`` threads (default: all cores) with the GIL
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

    Given an object-store URL (``s3://``, ``gs://``, ``az://``, ...; ``storage_options`` as for
    :func:`open`), it is a :class:`StoreArrayWriter`: every block is compressed and uploaded by
    the process that writes it, and :meth:`StoreArrayWriter.close` on the client assembles the
    object, which exists at the URL only from then on::

        with rawarray.ArrayWriter("s3://bucket/out.ra", x.shape, x.dtype, chunks=c) as w:
            da.store(x.rechunk(w.chunks), w, lock=False)
    """

    def __new__(cls, path: Any, *args: Any, **kwargs: Any) -> "ArrayWriter":
        if cls is ArrayWriter and _is_url(path):
            return object.__new__(StoreArrayWriter)
        return object.__new__(cls)

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
        filters: Sequence[str | tuple[str, int]] | None = None,
        blocks: Sequence[int] | None = None,
        layout_version: int | None = None,
        statistics: bool | None = None,
        split: bool | None = None,
        stream_crcs: bool | None = None,
    ) -> None:
        self.path = os.fspath(path)
        if (shape is None) != (dtype is None):
            raise TypeError("ArrayWriter takes the shape and the dtype together, or neither")
        self._threads = 0 if threads is None else int(threads)
        if shape is None:
            given = [k for k, v in (("chunks", chunks), ("codec", codec), ("level", level),
                                    ("shuffle", shuffle), ("filters", filters),
                                    ("blocks", blocks), ("layout_version", layout_version),
                                    ("statistics", statistics), ("split", split),
                                    ("stream_crcs", stream_crcs))
                     if v is not None]
            if given:
                raise TypeError(f"ArrayWriter(path) opens a file as it was created: "
                                f"{', '.join(given)} apply only with a shape and dtype")
            self._w = _ArrayWriter(self.path, threads=self._threads)
        else:
            dt = _little_endian(np.dtype(dtype))
            _check_storable(dt)
            dims = list(reversed([int(n) for n in shape]))
            with in_numpy_order(len(dims)):
                self._w = _ArrayWriter(self.path, _descr_json(dt), dims, codec,
                                       file_chunks(chunks, "C", "chunks", tuple(shape)),
                                       level, shuffle, self._threads, filters,
                                       file_chunks(blocks, "C", "blocks", tuple(shape)),
                                       layout_version, statistics, split, stream_crcs)
        # The dtype, chunks and compression numpy users see, by the same reading of the file
        # as rawarray.open's (without its warnings: other ranks may be writing chunks that are
        # not committed yet).
        with File(self.path, _warn=False) as f:
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
        with in_numpy_order(len(self.shape)):
            self._w.write_block(list(reversed(ranges)), arr.reshape(-1).view(np.uint8))

    def _check_on_grid(self, ranges: list[tuple[int, int]]) -> None:
        """Refuses a block of a chunked file that does not cover whole chunks, naming the
        block and the chunks in numpy's order (the library refuses it too, in file order)."""
        for axis, ((a, b), c, n) in enumerate(zip(ranges, self.chunks, self.shape)):
            if a % c or (b % c and b != n):
                block = ", ".join(f"{lo}:{hi}" for lo, hi in ranges)
                raise ValueError(
                    f"block [{block}] of {_shown(self.path)}: axis {axis} runs {a}:{b}, not whole chunks "
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

    def __repr__(self) -> str:
        return f"<rawarray.ArrayWriter {_shown(self.path)!r} shape={self.shape} dtype={self.dtype}>"


def _reopen_writer(path: str, identity: tuple[int, int, bytes], threads: int = 0) -> ArrayWriter:
    """A pickled :class:`ArrayWriter` opened again: the same file, unchanged in shape."""
    w = ArrayWriter(path, threads=threads)
    now = w._w.identity()
    if now != identity:
        why = "another file was put at its path" if now[:2] != identity[:2] else "its header changed"
        w.close()
        raise RaError(f"{_shown(path)}: the file changed since this rawarray.ArrayWriter was pickled ({why})")
    return w


class StoreArrayWriter(ArrayWriter):
    """Blocks of one chunked array written into one object of an object store by many
    processes (a Dask cluster): what ``rawarray.ArrayWriter(url, shape, dtype, ...)`` gives
    (design and cost: doc/cloud.md, "Many writers to one object").

    The writer made on the client starts a session; pickled, it goes to the workers as a writer
    of the same session. ``w[key] = block`` (chunk-aligned blocks, as for a chunked
    :class:`ArrayWriter`) compresses the block's chunks and uploads them as one temporary
    object under a hidden folder beside the URL (``.NAME.rawarray-parts/``). :meth:`close` on
    the client writes the header and index and assembles the object from the blocks (on S3,
    blocks of 5 MiB or more are copied by the store itself, never through the client), then
    removes them. Until then nothing is at the URL (an object already there stays as it was);
    a worker killed mid-write leaves no block, and a chunk no block holds makes :meth:`close`
    refuse, naming it, rather than write zeros for it (``close(fill_missing=True)`` writes
    them). Leaving a ``with`` block by an exception removes the blocks (:meth:`abort`);
    :func:`rawarray.recover_url` removes what clients that died left.

    The object is always chunked: with no ``chunks``, ``codec``, ``level`` or ``shuffle``,
    those of :func:`write` (zstd after a byte shuffle, chunks of about 1 MiB).
    """

    def __init__(
        self,
        path: str,
        shape: tuple[int, ...] | None = None,
        dtype: Any = None,
        *,
        chunks: Sequence[int] | None = None,
        codec: str | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        threads: int | None = None,
        storage_options: dict[str, Any] | None = None,
        _session: str | None = None,
    ) -> None:
        try:
            from ._rawarray import StoreBlockWriter  # noqa: PLC0415 (absent without `cloud`)
        except ImportError:
            raise RaError(f"{_shown(path)}: this build of rawarray writes no object-store URLs; build "
                          "it with the Cargo feature `cloud`") from None
        if shape is None or dtype is None:
            raise TypeError(f"ArrayWriter({_shown(path)!r}): an object is written whole, once: give its "
                            "shape and dtype (an existing object cannot be opened to write blocks "
                            "into)")
        self.path = path
        dt = _little_endian(np.dtype(dtype))
        _check_storable(dt)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = dt
        self._threads = 0 if threads is None else int(threads)
        self._args = (path, self.shape, dt.str, chunks, codec, level, shuffle, storage_options)
        dims = list(reversed(self.shape))
        with in_numpy_order(len(dims)):
            self._w = StoreBlockWriter(path, _descr_json(dt), dims, codec,
                                       file_chunks(chunks, "C"), level, shuffle, _session,
                                       _storage_options(storage_options))
        self.chunks = tuple(reversed(self._w.chunks))
        self.compression = None
        self._client = _session is None
        self._closed = False
        #: What :meth:`close` did: bytes written, blocks, chunks, parts, bytes the store copied
        #: and bytes streamed through this process (``None`` until then).
        self.finished: dict[str, int] | None = None

    @property
    def created(self) -> bool:
        """Whether this is the client's writer (it started the session, and closes it)."""
        return self._client

    @property
    def session(self) -> str:
        """The session the workers' writers share."""
        return str(self._w.session)

    def __reduce__(self) -> tuple[Any, ...]:
        if self._closed:
            raise ValueError("cannot pickle a closed rawarray.ArrayWriter")
        return (_store_writer, self._args + (self.session,))

    def sync(self) -> None:
        """Nothing to sync: each block is uploaded by its write."""

    def close(self, fill_missing: bool = False) -> None:
        """On the client, assembles the object from the blocks written and removes them
        (closing twice is allowed); on a worker, does nothing. :class:`RaError` names the chunks
        no block holds (and leaves everything as it was: write them and close again, or
        :meth:`abort`), unless ``fill_missing``, which writes them as zeros."""
        if self._closed or not self._client:
            self._closed = True
            return
        with in_numpy_order(len(self.shape)):
            done = self._w.finish(fill_missing)
        self.finished = dict(zip(("bytes", "blocks", "chunks", "parts", "copied", "streamed"),
                                 done))
        self._closed = True

    def abort(self) -> int:
        """Removes the blocks written in this session (nothing is written at the URL); says
        how many."""
        self._closed = True
        return int(self._w.abort())

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` or :meth:`abort` has run."""
        return self._closed

    def __repr__(self) -> str:
        return (f"<rawarray.ArrayWriter {_shown(self.path)!r} shape={self.shape} dtype={self.dtype} "
                f"session={self.session}>")

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is not None and self._client and not self._closed:
            self.abort()
        else:
            self.close()


def _store_writer(path: str, shape: tuple[int, ...], dtype: str, chunks: Any, codec: Any,
                  level: Any, shuffle: Any, storage_options: Any, session: str) -> ArrayWriter:
    """A pickled :class:`StoreArrayWriter`: a worker's writer of the same session."""
    return StoreArrayWriter(path, shape, dtype, chunks=chunks, codec=codec, level=level,
                            shuffle=shuffle, storage_options=storage_options, _session=session)


class RaggedWriter(_Appender):
    """Appends rows to a ragged file as a program runs, through the Rust library's
    ``RaggedWriter``: one writer at a time (an exclusive lock), each :meth:`flush` committed by
    one header write, so readers see whole rows and a process killed at any moment leaves a
    valid file holding every row of the last ``flush``.

    ``dtype`` is the values' numpy scalar type, ``str`` for rows of text (UTF-8) or ``bytes``
    for rows of bytes. ``mode="a"`` opens an existing file to append (same dtype).

    ``codec``, ``level``, ``filters``, ``shuffle``, ``chunks`` (values per chunk, an int),
    ``blocks`` (values per block), ``layout_version``, ``statistics``, ``split`` and ``stream_crcs``, as
    :func:`rawarray.write` takes them for a :class:`Ragged`, compress the values a chunk at a
    time (``RaggedFile.compression``), on ``threads`` threads (0: all cores); any of them
    selects it, zstd with byte shuffle by default, and without ``chunks`` the first ``flush``
    that has values chooses them (at most about 1 MiB). The offsets stay plain, so a row is
    still read alone. ``flush`` still commits every row appended so far, and a kill still keeps
    them. The whole-section ``"lz4-whole"`` block cannot be appended to and is refused. A
    compressed file opened with ``mode="a"`` stays compressed as it was written (options given
    then are not applied to it); a plain file cannot take compression options.

    >>> with rawarray.RaggedWriter("events.ra", "<f4") as w:       # doctest: +SKIP
    ...     for step in range(100):
    ...         w.append(np.random.rand(np.random.randint(64)))
    ...         w.flush()                                   # readers see it; a kill keeps it
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        dtype: Any,
        *,
        mode: str = "w",
        codec: str | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        chunks: int | None = None,
        threads: int = 0,
        filters: Sequence[str | tuple[str, int]] | None = None,
        blocks: int | None = None,
        layout_version: int | None = None,
        statistics: bool | None = None,
        split: bool | None = None,
        stream_crcs: bool | None = None,
    ) -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', not {mode!r}")
        for what, n in (("chunks", chunks), ("blocks", blocks)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                                  or n < 1):
                raise RaError(f"{what}: a ragged file's values are cut by count: expected an "
                              f"int of at least 1 (values per {what[:-1]}), found {n!r}")
        packing = {"codec": codec, "level": level, "shuffle": shuffle, "chunks": chunks,
                   "filters": filters, "blocks": blocks, "layout_version": layout_version,
                   "statistics": statistics, "split": split, "stream_crcs": stream_crcs}
        self.path = os.fspath(path)
        self.is_text = dtype is str
        if dtype in (str, bytes):
            self.dtype = np.dtype(np.uint8)
        else:
            dt = np.dtype(dtype)
            _check_storable(dt)
            self.dtype = _little_endian(dt)
        if mode == "a":
            self._check_appendable([k for k, v in packing.items() if v is not None])
        with in_numpy_order(1):
            self._w = _RaggedWriter(
                self.path, _descr_json(self.dtype), self.is_text, mode == "a", codec=codec,
                level=level, shuffle=shuffle, chunk_values=None if chunks is None else int(chunks),
                threads=threads, filters=filters,
                block_values=None if blocks is None else int(blocks),
                layout_version=layout_version, statistics=statistics, split=split,
                stream_crcs=stream_crcs,
            )

    def _check_appendable(self, compression: list[str]) -> None:
        """Refuses, in numpy's words, to append rows of another kind or dtype than the file
        holds, and compression options for a file whose values are plain."""
        try:
            f = RaggedFile(self.path)
        except (OSError, RaError):
            return                      # the library's open says what is wrong with it
        with f:
            text, have, shape = f.is_text, f.dtype, f.value_shape
            plain = f.compression is None
        if compression and plain:
            raise RaError(
                f"{_shown(self.path)}: the file's values are plain, and an opened file keeps its "
                f"storage: {', '.join(compression)} cannot apply to it; append without them, or "
                "compress it first (ra compress, or rawarray.write(path, "
                "rawarray.read(path), codec=...))"
            )
        if (text, _little_endian(have), shape) != (self.is_text, self.dtype, ()):
            held = "text" if text else f"values of dtype {have}" + (f" and shape {shape}"
                                                                      if shape else "")
            asked = "text" if self.is_text else f"values of dtype {self.dtype}"
            dtype = "str" if text else f"'{have}'"
            raise RaError(
                f"{_shown(self.path)}: the file holds rows of {held}, not {asked}: append rows of the "
                f"file's own, rawarray.RaggedWriter(path, {dtype}, mode='a'), or start a new "
                "file with mode='w'"
            )

    def append(self, row: Any) -> None:
        """Appends one row: a ``str`` for a text writer, else a 1-d array of the writer's
        dtype (or values it holds exactly, else :class:`RaError`; ``bytes`` for ``uint8``).
        Not committed until :meth:`flush`."""
        if self.is_text:
            if not isinstance(row, str):
                raise RaError(f"a text writer appends str rows, not {type(row).__name__}")
            arr = np.frombuffer(row.encode("utf-8"), dtype=np.uint8)
        elif isinstance(row, _BYTES):
            arr = _as_writer_dtype(np.frombuffer(bytes(row), dtype=np.uint8), self.dtype, "row")
        else:
            arr = _as_writer_dtype(row, self.dtype, "row")
        if arr.ndim != 1:
            raise RaError(f"a row is 1-d, not of shape {arr.shape}")
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        self._w.append(arr.view(np.uint8) if arr.size else np.zeros(0, np.uint8))

