"""numpy's axis order and the file's: numpy's shape is the file's dims reversed (``order="C"``),
so every shape, chunk shape and block this package takes or names is in numpy's order. Here,
in one place, they are reversed on their way to the library, and the library's messages,
which name dims, chunk shapes and blocks in the file's order, are put in numpy's on their way
back (:func:`numpy_order`)."""

from __future__ import annotations

import contextlib
import operator
import re
from typing import Any, Iterator, Sequence

from ._rawarray import RaError

# The library's words for one dim of the file: `dim 2`, `subset dim 0`.
_DIM = re.compile(r"\bdim (\d+)\b")
# A list of one entry per dim after the library's word for it: `dims [4, 3]`, `chunks [8, 4]`,
# `chunk shape [2, 3]`, `grid coordinates [0, 1]`, `block [0..2, 3..6)`.
_LIST = re.compile(r"\b(dims|chunks|chunk shape|grid coordinates|grid of dims|block) "
                   r"\[([^\[\]]*)[\])]")
# The library's `dims mismatch: expected [..], found [..]`: every list in it is dims.
_MISMATCH = "dims mismatch"
_ANY_LIST = re.compile(r"()\[([^\[\]]*)\]")
# A count of dims: `expected 3 dims`.
_COUNT = re.compile(r"\b(\d+) dims\b")
# The words numpy uses for what the library calls a file's dims.
_WORDS = {"dims": "shape", "grid of dims": "grid of shape"}


def numpy_order(message: str, ndim: int, reverse: bool = True) -> str:
    """The library's ``message`` about an array of ``ndim`` dims, in numpy's words and axis
    order: ``dim k`` is ``axis ndim-1-k``, a list of one entry per dim is reversed and shown as
    numpy shows it (a shape as a tuple, a block as slices ``[a:b, ...]``). ``reverse=False``
    for files written with ``order="F"``, whose dims are numpy's axes as they are. Lists of
    another length than ``ndim`` are not a dim each and are left alone."""
    def axis(m: re.Match) -> str:
        k = int(m.group(1))
        return f"axis {ndim - 1 - k if reverse else k}" if k < ndim else m.group(0)

    def listed(m: re.Match) -> str:
        word, items = m.group(1), [s.strip() for s in m.group(2).split(",") if s.strip()]
        if len(items) != ndim:
            return m.group(0)
        if reverse:
            items.reverse()
        if word == "block":
            return "block [" + ", ".join(i.replace("..", ":") for i in items) + "]"
        shown = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return f"{_WORDS.get(word, word)} {shown}" if word else shown

    message = _DIM.sub(axis, message)
    at = message.find(_MISMATCH)
    if at >= 0:
        rest = _ANY_LIST.sub(listed, message[at + len(_MISMATCH):])
        message = message[:at] + "shape mismatch" + rest
    message = _LIST.sub(listed, message)
    return _COUNT.sub(lambda m: f"{m.group(1)} axes", message)


@contextlib.contextmanager
def in_numpy_order(ndim: int, reverse: bool = True) -> Iterator[None]:
    """Raises the library's :class:`RaError` and ``IndexError`` raised inside, about an array of
    ``ndim`` dims, again with their message in numpy's order (:func:`numpy_order`)."""
    try:
        yield
    except (RaError, IndexError) as e:
        reraise_in_numpy_order(e, ndim, reverse)


def reraise_in_numpy_order(e: Exception, ndim: int, reverse: bool = True) -> None:
    """Raises ``e`` (being handled) again, its message in numpy's order if it names dims: for
    the calls a ``with`` block would slow down (a read of one element)."""
    text = str(e)
    again = numpy_order(text, ndim, reverse)
    if again == text:
        raise e
    raise type(e)(again) from None


def file_chunks(chunks: Sequence[int] | None, order: str, what: str = "chunks",
                shape: tuple[int, ...] | None = None) -> list[int] | None:
    """A chunk (or block, ``what="blocks"``) shape given in numpy's axis order, in the file's
    dim order (as the dims are stored for ``order``). Its length is checked here against the
    array's ``shape`` when given (a message in numpy's order: the library's would show the
    sizes reversed); the library checks the rest (and its messages come back through
    :func:`in_numpy_order`)."""
    if chunks is None:
        return None
    if hasattr(chunks, "__index__"):
        raise RaError(f"{what}: expected a shape in numpy's axis order (a tuple, one size per "
                      f"axis), found the int {chunks!r}")
    sizes = [operator.index(c) for c in chunks]
    if shape is not None and len(sizes) != len(shape):
        raise RaError(f"{what} {tuple(sizes)}: expected {len(shape)} axes, found {len(sizes)} "
                      f"(one size per axis of shape {tuple(shape)})")
    for axis, c in enumerate(sizes):
        if c < 1:
            raise RaError(
                f"{what} {tuple(sizes)}: axis {axis} is {c}, and a {what[:-1]} is at least 1 "
                f"along every axis: give each axis its {what[:-1]} size"
                + (" (a size larger than the axis, or the axis' length, makes one chunk along "
                   "it)" if what == "chunks" else " (at most its chunk's)")
            )
    return list(reversed(sizes)) if order == "C" else sizes


#: The keys of ``File.compression`` (and ``RaggedFile.compression``), in the order shown.
COMPRESSION_KEYS = ("codec", "level", "filters", "shuffle", "chunks", "blocks", "block_bytes",
                    "layout_version", "statistics", "split", "stream_crcs", "rounded_to", "ratio")


def compression_of(settings: dict[str, Any], marked: int | None,
                   ratio: float | None) -> dict[str, Any]:
    """A chunked section's settings as the library read them (dims in the file's order) as
    ``File.compression`` shows them: shapes in numpy's order, each filter as :func:`write`
    takes it (a name, or ``(name, param)``), and ``rounded_to`` the fewest mantissa bits kept
    by the pipeline's lossy filter or said by the trailer's lossy mark (``marked``)."""
    bits = [b for b in (settings["rounded_to"], marked) if b is not None]
    blocks = settings["blocks"]
    return {
        "codec": settings["codec"],
        "level": settings["level"],
        "filters": [name if param is None else (name, param)
                    for name, param in settings["filters"]],
        "shuffle": settings["shuffle"],
        "chunks": tuple(reversed(settings["chunk"])),
        "blocks": None if blocks is None else tuple(reversed(blocks)),
        "block_bytes": settings["block_bytes"],
        "layout_version": settings["layout_version"],
        "statistics": settings["statistics"],
        "split": settings["split"],
        "stream_crcs": settings["stream_crcs"],
        "rounded_to": min(bits) if bits else None,
        "ratio": ratio,
    }
