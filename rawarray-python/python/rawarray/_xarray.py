"""The xarray backend (entry point ``rawarray`` in ``xarray.backends``):
``xr.open_dataset("run.ra", engine="rawarray")``.

A field file opens as a Dataset of one variable, named after the file (``run`` for ``run.ra``),
with the dim names and coordinates :func:`rawarray.write` stored in the trailer (``dim_0``,
``dim_1``, ... without them) and the trailer's params as attributes. A record file opens as a
Dataset of one variable per field along a ``record`` dim (a field that is itself an array gets
dims ``FIELD_0``, ``FIELD_1``, ...). Variables are lazy: xarray's outer indexing (``isel``,
``sel``) reads only the selected indices' blocks through :class:`rawarray.File` (positioned
reads, unless ``mmap=True``)."""

from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._file import File

_MAGIC = b"rawarray"  # the header's first u64, 0x7961727261776172, little-endian


def _outer_key(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """xarray's outer key (integers, slices, 1-d integer arrays, each indexing its own axis) as
    numpy's key for the same selection: when an array is present, the slices and arrays become
    ``np.ix_`` grids, so that numpy's advanced indices (the integers too, as scalars) broadcast
    into the outer product, in axis order."""
    if not any(isinstance(k, np.ndarray) for k in key):
        return key
    grids = iter(np.ix_(*[np.arange(*k.indices(n)) if isinstance(k, slice) else np.asarray(k)
                          for k, n in zip(key, shape) if not isinstance(k, (int, np.integer))]))
    return tuple(k if isinstance(k, (int, np.integer)) else next(grids) for k in key)


class RawArrayBackendArray(BackendArray):
    """A lazily indexed variable over a :class:`rawarray.File` (or one field of its records)."""

    def __init__(self, file: File, field: str | None = None) -> None:
        self.file = file
        self.field = field
        if field is None:
            self.shape = file.shape
            self.dtype = file.dtype
        else:
            sub = file.dtype.fields[field][0]
            self.shape = file.shape + sub.shape
            self.dtype = sub.base

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._raw_indexing_method
        )

    def _raw_indexing_method(self, key: tuple[Any, ...]) -> np.ndarray:
        nfile = self.file.ndim
        file_key = _outer_key(key[:nfile], self.file.shape)
        data = np.asarray(self.file[file_key])
        if self.field is not None:
            data = data[self.field]
            # The field's own axes, indexed in memory, last first so earlier axes stay put.
            lead = data.ndim - (len(key) - nfile)
            for axis in reversed(range(len(key) - nfile)):
                k = key[nfile + axis]
                data = data[(slice(None),) * (lead + axis) + (k,)]
        return data


def _variables(f: File, stem: str) -> dict[str, xr.Variable]:
    chunks = f.chunks
    if f.dtype.names is None:
        dims = f.dim_names or tuple(f"dim_{i}" for i in range(f.ndim))
        encoding = {"preferred_chunks": dict(zip(dims, chunks))} if chunks else {}
        data = indexing.LazilyIndexedArray(RawArrayBackendArray(f))
        return {stem: xr.Variable(dims, data, encoding=encoding)}
    names = f.dim_names
    rest = names[1:] if names else tuple(f"dim_{i}" for i in range(1, f.ndim))
    out = {}
    for field in f.dtype.names:
        sub = f.dtype.fields[field][0]
        dims = ("record",) + tuple(rest) + tuple(f"{field}_{i}" for i in range(len(sub.shape)))
        data = indexing.LazilyIndexedArray(RawArrayBackendArray(f, field))
        out[field] = xr.Variable(dims, data)
    return out


class RawArrayBackend(BackendEntrypoint):
    """``engine="rawarray"``: ``.ra`` files as lazily indexed xarray Datasets."""

    description = "RawArray (.ra) files: n-d arrays and record files, read lazily"
    url = "https://example.invalid/rawarray"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mmap")

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: str | os.PathLike[str],
        *,
        drop_variables: Iterable[str] | None = None,
        mmap: bool = False,
    ) -> xr.Dataset:
        path = os.fspath(filename_or_obj)
        f = File(path, mmap=mmap)
        stem = os.path.splitext(os.path.basename(path))[0] or "data"
        variables = _variables(f, stem)
        for name in drop_variables or ():
            variables.pop(name, None)
        coords = {}
        for dim, values in f.coords.items():
            coords[dim] = xr.Variable((dim,), values)
        params = f.params
        attrs = dict(params) if isinstance(params, dict) else ({} if params is None else {"params": params})
        ds = xr.Dataset(variables, coords=coords, attrs=attrs)
        ds.set_close(f.close)
        return ds

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        if str(path).endswith(".ra"):
            return True
        try:
            with open(path, "rb") as fh:
                return fh.read(8) == _MAGIC
        except (OSError, TypeError):
            return False
