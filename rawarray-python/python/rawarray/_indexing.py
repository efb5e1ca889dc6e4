"""numpy's indexing over a file read in blocks: a key is planned into the few blocks it touches
(read by the library's ``ArrayReader``), assembled into a small array, and the same key, moved
to that array's coordinates, is then applied by numpy itself. numpy stays the judge of every
rule of indexing (advanced indices and where their axes go, broadcasting, ``np.newaxis``,
boolean scalars); this module only decides which bytes to read."""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

# Above this many blocks for one key, an axis's blocks are merged into the range they span
# (the axis with the most first): a Python call per block costs more than reading the gaps.
MAX_BLOCKS = 4096


def _axis_index(k: Any) -> int | None:
    """``k`` as an integer index, or None if it is not one (bool is not: numpy reads it as a
    mask)."""
    if isinstance(k, (bool, np.bool_)):
        return None
    try:
        return operator.index(k)
    except TypeError:
        return None


def _no_axis(k: Any) -> bool:
    """Whether a normalized key component consumes no axis: ``None``, a boolean scalar, or an
    ellipsis that stands for no axes."""
    return k is None or k is Ellipsis or isinstance(k, (bool, np.bool_))


def _normalize(key: Any, shape: Sequence[int]) -> list[Any]:
    """The key as a list with one entry per component: every axis named once (Ellipsis
    expanded into full slices; one of no axes kept, see below), integers checked and made non-negative, sequences made integer
    arrays (boolean arrays their ``nonzero()`` arrays, as numpy does), ``None`` and boolean
    scalars kept as they are (they consume no axis)."""
    key = list(key) if isinstance(key, tuple) else [key]
    out: list[Any] = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_, slice)):
            out.append(k)
        elif _axis_index(k) is not None:
            out.append(_axis_index(k))
        else:
            arr = np.asarray(k)
            if arr.dtype == bool and arr.ndim == 0:
                out.append(np.bool_(arr))
            elif arr.dtype == bool:
                # numpy indexes with a mask's nonzero() arrays, one per axis it covers.
                out.extend(("mask", a, arr.shape, i) for i, a in enumerate(arr.nonzero()))
            elif arr.dtype.kind in "iu" or (arr.size == 0 and arr.dtype.kind == "f"
                                             and not isinstance(k, np.ndarray)):
                # numpy takes `[]` (a float array to np.asarray), not an empty float array.
                out.append(arr.astype(np.intp))
            else:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                    f"integer or boolean arrays are valid indices, not {type(k).__name__} "
                    f"of dtype {arr.dtype}"
                )
    consuming = sum(1 for k in out if not _no_axis(k))
    ellipses = sum(1 for k in out if k is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consuming > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {consuming} "
            "were indexed"
        )
    fill = [slice(None)] * (len(shape) - consuming)
    if not ellipses:
        out.extend(fill)
    elif fill:
        i = next(j for j, k in enumerate(out) if k is Ellipsis)
        out[i:i + 1] = fill
    # An ellipsis of no axes stays: between advanced indices it still makes them non-adjacent
    # for numpy (their axes go first), which the block's indexing must see too.
    axis = 0
    out_of_bounds = []
    for i, k in enumerate(out):
        if _no_axis(k):
            continue
        n = shape[axis]
        if isinstance(k, tuple):  # one axis of a boolean mask
            _, a, mshape, j = k
            if mshape[j] != n:
                raise IndexError(
                    f"boolean index did not match indexed array along axis {axis}; size of axis "
                    f"is {n} but size of corresponding boolean axis is {mshape[j]}"
                )
            out[i] = a.astype(np.intp)
        elif isinstance(k, int):
            if k < -n or k >= n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            out[i] = k % n
        elif isinstance(k, np.ndarray):
            if k.size and (k.min() < -n or k.max() >= n):
                bad = k.min() if k.min() < -n else k.max()
                out_of_bounds.append((i, f"index {bad} is out of bounds for axis {axis} with size {n}"))
            out[i] = np.where(k < 0, k + n, k)
        axis += 1
    if out_of_bounds:
        # numpy checks the bounds of index arrays only when they select something: advanced
        # indices that broadcast to no element (a mask of no True beside an array) select
        # nothing, and an index out of bounds among them is no error.
        shapes = [k.shape for k in out if isinstance(k, np.ndarray)]
        try:
            selected = math.prod(np.broadcast_shapes(*shapes))
        except ValueError:
            raise IndexError(
                "shape mismatch: indexing arrays could not be broadcast together with shapes "
                + " ".join(str(s) for s in shapes)
            ) from None
        if selected != 0:
            raise IndexError(out_of_bounds[0][1])
        for i, _ in out_of_bounds:
            out[i] = np.zeros_like(out[i])
    return out


def _touched(k: Any, n: int) -> np.ndarray:
    """The indices of one axis that component ``k`` touches, sorted and unique."""
    if isinstance(k, int):
        return np.array([k], dtype=np.intp)
    if isinstance(k, slice):
        r = range(*k.indices(n))
        idx = np.arange(r.start, r.stop, r.step, dtype=np.intp)
        return idx[::-1] if r.step < 0 else idx
    return np.unique(k)


def _groups(idx: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive indices, as ``(start, end)``."""
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [idx.size]))
    return [(int(idx[s]), int(idx[e - 1]) + 1) for s, e in zip(starts, ends)]


def _merge(groups: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """``groups`` merged into ``count`` (at least one) by closing their smallest gaps: the
    fewest extra indices read for the blocks saved."""
    if count <= 1:
        return [(groups[0][0], groups[-1][1])]
    gaps = np.array([b[0] - a[1] for a, b in zip(groups, groups[1:])])
    breaks = sorted(np.argsort(gaps, kind="stable")[len(gaps) - (count - 1):].tolist())
    out, start = [], groups[0][0]
    for i in breaks:
        out.append((start, groups[i][1]))
        start = groups[i + 1][0]
    out.append((start, groups[-1][1]))
    return out


def _within_chunks(groups: list[tuple[int, int]], chunk: int) -> list[tuple[int, int]]:
    """``groups`` merged while no whole chunk of ``chunk`` indices lies untouched between them:
    a chunked file then decodes each chunk it touches once, in one block read, and reads no
    chunk that the key does not touch (the indices read beyond the key's are in its chunks)."""
    out: list[tuple[int, int]] = []
    for a, b in groups:
        if out and a // chunk <= (out[-1][1] - 1) // chunk + 1:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _moved_slice(k: slice, n: int, coords: np.ndarray) -> slice:
    """Slice ``k`` of an axis of length ``n`` in the coordinates of the assembled array, whose
    axis holds the file's indices ``coords`` (sorted): the indices it touches are evenly
    spaced there too."""
    r = range(*k.indices(n))
    if len(r) == 0:
        return slice(0, 0)
    first = int(np.searchsorted(coords, r[0]))
    last = int(np.searchsorted(coords, r[-1]))
    step = 1 if len(r) == 1 else (last - first) // (len(r) - 1)
    stop = last + (1 if step > 0 else -1)
    return slice(first, None if stop < 0 else stop, step)


def _one_block(key: Any, shape: tuple[int, ...], dtype: np.dtype,
               read_block: Callable[[list[tuple[int, int]]], Any]) -> Any:
    """``array[key]`` for the keys that select one block, read with one call and no planning:
    integers (not bools) and slices of step 1 (or None), at most one per axis. Any other key
    returns None for :func:`read_key`'s general path. This is the path of ``f[i]``, ``f[i, j]``
    and ``f[a:b]`` (one element's key, an integer per axis, does not come here: the binding
    reads it, ``RawFile.read_element``): their cost is then the library's read, not numpy's
    planning around it."""
    comps = key if isinstance(key, tuple) else (key,)
    if len(comps) > len(shape):
        return None
    ranges: list[tuple[int, int]] = []
    out_shape: list[int] = []
    for k, n in zip(comps, shape):
        if type(k) is int or (isinstance(k, np.integer) and not isinstance(k, np.bool_)):
            i = int(k)
            if i < -n or i >= n:
                return None       # the general path names the axis, as numpy does
            i %= n
            ranges.append((i, i + 1))
        elif type(k) is slice and (k.step is None or k.step == 1):
            start, stop, _ = k.indices(n)
            stop = max(start, stop)
            if start == stop:
                return None       # no byte to read: numpy shapes the empty result
            ranges.append((start, stop))
            out_shape.append(stop - start)
        else:
            return None
    for n in shape[len(comps):]:
        ranges.append((0, n))
        out_shape.append(n)
    arr = np.frombuffer(read_block(ranges), dtype=dtype)
    # Read-only, as views of the file's map and the general path's blocks are.
    return arr.reshape(out_shape) if out_shape else arr[0]


def read_key(
    key: Any,
    shape: tuple[int, ...],
    dtype: np.dtype,
    read_block: Callable[[list[tuple[int, int]]], Any],
    chunks: Sequence[int] | None = None,
) -> Any:
    """``array[key]`` of the array of ``shape`` and ``dtype`` that ``read_block`` reads blocks
    of (one ``(start, end)`` per numpy axis; it returns the block's bytes, C order), reading
    only the blocks the key touches: each touched run of indices on the leading axes, and on
    the last axis (contiguous in the file) the range from the first index touched to the
    last. For a file stored in ``chunks`` (numpy's order), the runs of each axis are merged
    instead while no untouched chunk separates them (see ``_within_chunks``)."""
    if 0 in shape:
        # No byte to read: numpy indexes an empty array of the shape (and judges the key).
        empty = np.zeros(shape, dtype=dtype)
        empty.flags.writeable = False
        return empty[key]
    block = _one_block(key, shape, dtype, read_block)
    if block is not None:
        return block
    comps = _normalize(key, shape)
    axes = [k for k in comps if not _no_axis(k)]
    touched = [_touched(k, n) for k, n in zip(axes, shape)]
    groups = [_groups(t) for t in touched]
    if chunks is not None:
        # A slice's runs merge all or none (see below); when not all can, its step is at
        # least the chunk, and each run is in a chunk of its own already.
        groups = [m if len(m) == 1 or not isinstance(k, slice) else g
                  for k, g, m in ((k, g, _within_chunks(g, c)) for k, g, c in zip(axes, groups, chunks))]
    elif groups:
        # The last axis is read whole from its first index to its last: its gaps are in the
        # same runs of the file, and cost less read than a read per index.
        t = touched[-1]
        groups[-1] = [(int(t[0]), int(t[-1]) + 1)] if t.size else []
    while groups and np.prod([max(len(g), 1) for g in groups], dtype=np.float64) > MAX_BLOCKS:
        worst = max(range(len(groups)), key=lambda a: len(groups[a]))
        others = np.prod([max(len(g), 1) for a, g in enumerate(groups) if a != worst],
                         dtype=np.float64)
        groups[worst] = _merge(groups[worst], int(max(MAX_BLOCKS // others, 1)))
    for a, k in enumerate(axes):
        # A slice's indices must stay evenly spaced in the assembled block for _moved_slice:
        # its runs are all merged into one, or none is (a partial merge spaces them unevenly).
        if isinstance(k, slice) and 1 < len(groups[a]) < len(_groups(touched[a])):
            groups[a] = [(groups[a][0][0], groups[a][-1][1])]
    coords = [np.concatenate([np.arange(a, b, dtype=np.intp) for a, b in g]) if g
              else np.zeros(0, np.intp) for g in groups]
    block_shape = tuple(len(c) for c in coords)
    if any(n == 0 for n in block_shape):
        block = np.zeros(block_shape, dtype=dtype)
    else:
        combos = list(itertools.product(*groups))
        if len(combos) == 1:
            block = np.frombuffer(read_block(list(combos[0])), dtype=dtype).reshape(block_shape)
        else:
            block = np.empty(block_shape, dtype=dtype)
            offsets = [dict(zip(g, np.cumsum([0] + [b - a for a, b in g]).tolist())) for g in groups]
            for combo in combos:
                part = np.frombuffer(read_block(list(combo)), dtype=dtype)
                where = tuple(slice(offsets[a][r], offsets[a][r] + r[1] - r[0])
                              for a, r in enumerate(combo))
                block[where] = part.reshape(tuple(r[1] - r[0] for r in combo))
    # Basic keys give views of the block: read-only, as views of the file's map are.
    block.flags.writeable = False
    moved: list[Any] = []
    axis = 0
    for k in comps:
        if _no_axis(k):
            moved.append(k)
            continue
        c = coords[axis]
        moved.append(_moved_slice(k, shape[axis], c) if isinstance(k, slice)
                     else int(np.searchsorted(c, k)) if isinstance(k, int)
                     else np.searchsorted(c, k))
        axis += 1
    return block[tuple(moved)]
