"""numpy's axis order and the file's: numpy's shape is the file's dims reversed (``order="C"``),
so every shape, chunk shape and block this package takes or names is in numpy's order, and is
reversed here, in one place, on its way to the library."""

from __future__ import annotations

import operator
from typing import Sequence

from ._rawarray import RaError


def _file_chunks(chunks: Sequence[int] | None, order: str) -> list[int] | None:
    """A chunk shape given in numpy's axis order, in the file's dim order (as the dims are
    stored for ``order``); the library checks its length and sizes."""
    if chunks is None:
        return None
    sizes = [operator.index(c) for c in chunks]
    if any(c < 0 for c in sizes):
        raise RaError(f"chunks: expected sizes of at least 1, one per axis, found {tuple(sizes)}")
    return list(reversed(sizes)) if order == "C" else sizes
