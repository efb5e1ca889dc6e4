"""The values a writer takes: what it was given, as an array of its dtype, or :class:`RaError`
naming the first value that would be stored as another one."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._dtype import _refuse_nat
from ._rawarray import RaError


def _floatlike(dt: np.dtype) -> bool:
    """Whether ``dt`` is a float or complex dtype (ml_dtypes' bfloat16, of kind ``V``, too)."""
    return dt.kind in "fc" or dt.name == "bfloat16"


def _object_fields(dtype: np.dtype) -> np.dtype:
    """The structured ``dtype`` with every scalar field an ``object``: numpy parses tuples into
    it without converting (and truncating) their values."""
    return np.dtype([(name, _object_fields(f.base) if f.base.names else np.dtype(object), f.shape)
                     for name, f in ((n, dtype[n]) for n in dtype.names)])


def _as_writer_dtype(values: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` as an array of a writer's ``dtype`` (see :func:`_converted`), holding no NaT
    (:func:`_refuse_nat`)."""
    return _refuse_nat(_converted(values, dtype, what), what)


def _converted(values: Any, dtype: np.dtype, what: str) -> np.ndarray:
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
    if arr.dtype.kind in "Mm" and arr.dtype.newbyteorder(dtype.byteorder) == dtype:
        # The same instants or lengths of time in the other byte order (a big-endian
        # datetime64 from another machine's .npy): swapped to the writer's, never refused.
        return arr.astype(dtype)
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
