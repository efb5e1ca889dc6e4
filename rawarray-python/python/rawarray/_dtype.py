"""numpy's dtypes and the file's element types: how numpy sees one element of a file (by the
library's reading of its header and trailer), and the dtype description the library takes to
store one, with what numpy has and ``.ra`` cannot keep refused by name."""

from __future__ import annotations

import json
import os
import sys
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

from ._rawarray import RaError
from ._rawarray import storable_dtypes as _storable


class RaWarning(UserWarning):
    """Data read with less meaning than the file intends (raw bits of bfloat16 without
    ml_dtypes, records whose schema is damaged), or that may not be the data: a ``RACHUNK1``
    chunk whose index entry points past the committed size reads as zeros, as the format
    says of a chunk a writer has not committed yet, but a damaged entry looks the same (the
    message names the chunk; ``ra verify`` checks the file). ``warnings.simplefilter("error",
    rawarray.RaWarning)`` makes these errors."""


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


def _element_dtype(raw: Any) -> np.dtype:
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


def _time_views(arr: np.ndarray, name: str = "") -> list[tuple[str, np.ndarray]]:
    """The parts of ``arr`` whose dtype is ``datetime64`` or ``timedelta64`` (the whole array,
    or record fields at any depth), each with the field's name."""
    dt = arr.dtype
    if dt.names is None:
        base = dt.subdtype[0] if dt.subdtype else dt
        return [(name, arr)] if base.kind in "Mm" else []
    views = []
    for field in dt.names:
        views += _time_views(arr[field], f"{name}.{field}" if name else field)
    return views


def _refuse_nat(arr: np.ndarray, what: str = "") -> np.ndarray:
    """``arr`` if it holds no NaT; else :class:`RaError` naming the field and the count. NaT is
    numpy's missing time, stored as ``int64``'s minimum; a ``.ra`` file has no missing values
    (as Arrow nulls are refused), and every other reader would see that minimum as a time 292
    billion years ago."""
    for name, times in _time_views(arr):
        nat = int(np.count_nonzero(np.isnat(times)))
        if nat:
            where = f"field {name!r}" if name else "the array"
            raise RaError(
                f"{what + ': ' if what else ''}{where} holds {nat} NaT (numpy's missing time), "
                "which a .ra file has no value for: fill them, or keep a mask beside the data"
            )
    return arr


def _check_storable(dtype: np.dtype, field: str = "") -> None:
    """Raises :class:`RaError` for what numpy has and ``.ra`` cannot keep: text, fixed-width
    bytes, objects, dates and times in units other than s, ms, us and ns, and field titles,
    naming the field. The record rules themselves
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
    if dtype.kind in "Mm":
        unit, count = np.datetime_data(dtype)
        if count == 1 and unit in ("s", "ms", "us", "ns"):
            # Stored as the int64 numpy holds, marked timestamp or duration with the unit.
            return
        what = "datetime64" if dtype.kind == "M" else "timedelta64"
        raise RaError(
            f"{where}numpy dtype {dtype} has no .ra element type: a .ra file stores {what} in "
            f"s, ms, us or ns (Arrow's units); convert it with a.astype('{dtype.kind}8[s]') or "
            "another of them"
        )
    if dtype.hasobject or dtype.kind in "OMm":
        raise RaError(
            f"{where}numpy dtype {dtype} (kind '{dtype.kind}') has no .ra element type: a .ra "
            f"file stores {storable_words()}, datetime64 and timedelta64 in s, ms, us or ns, and "
            "structured dtypes (records) of them; convert "
            "the array to one (a.astype(...)), write text as a list of str and rows of "
            "different lengths as a list of arrays (ragged files)"
        )


# Seconds in each numpy time unit, exactly.
_UNIT_SECONDS = {
    "W": Fraction(604_800), "D": Fraction(86_400), "h": Fraction(3_600), "m": Fraction(60),
    "s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6),
    "ns": Fraction(1, 10**9), "ps": Fraction(1, 10**12), "fs": Fraction(1, 10**15),
    "as": Fraction(1, 10**18),
}


def _time_count(value: Any, kind: str, unit: str) -> tuple[int, int]:
    """A filter's value for a date or time field (called by the library's filter conversion)
    as an exact fraction ``(num, den)`` of the field's stored unit: ``kind`` is
    ``"timestamp"`` (``unit`` s, ms, us or ns since 1970-01-01 UTC), ``"duration"`` (that many
    units) or ``"date"`` (``unit`` ``"D"``, days since 1970-01-01). Takes what numpy takes
    (``datetime``, ``date``, ``timedelta``, ``numpy.datetime64``, ``pandas.Timestamp``, ISO
    8601 strings), at the value's own precision: nothing is rounded to the field's unit (the
    library rounds each comparison the exact way) and nothing wraps past ``int64``. An aware
    ``datetime`` is its UTC instant. NaT is refused: it compares with nothing."""
    if kind == "duration":
        v = np.timedelta64(value)
    else:
        if getattr(value, "tzinfo", None) is not None:
            import datetime  # noqa: PLC0415

            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        v = np.datetime64(value)
    if np.isnat(v):
        raise ValueError("NaT (not a time) compares with nothing: filter on a time")
    vunit, step = np.datetime_data(v.dtype)
    if vunit in ("Y", "M"):
        if kind == "duration":
            raise ValueError(f"a duration in {vunit} (years or months) has no fixed length")
        v = v.astype("M8[D]")  # the first day of the year or month, exactly
        vunit, step = "D", 1
    count = Fraction(int(v.astype(np.int64)) * step) * _UNIT_SECONDS[vunit] / _UNIT_SECONDS[unit]
    return count.numerator, count.denominator


def storable_words() -> str:
    """The dtypes a file stores, by the library's table, in numpy's names."""
    names = [f"{d} (ml_dtypes)" if d == "bfloat16" else np.dtype(d).name for d in _storable()]
    return ", ".join(names[:-1]) + " and " + names[-1]


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


def _user_stacklevel() -> int:
    """The ``stacklevel`` at which a warning issued by the caller of this function points at
    the first frame outside the package: the user's line, however deep in the package the
    warning was raised."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return level
