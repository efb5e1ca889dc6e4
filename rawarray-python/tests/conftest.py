"""Shared helpers of the package's tests: an independent reader of .ra bytes (struct and numpy,
written here from the format's table, not from the package), and the reference files' folder."""

import os
import struct
from pathlib import Path

import numpy as np
import pytest

MAGIC = 0x7961727261776172
REFERENCE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "reference"

# (eltype, elbyte) -> numpy type, written here independently of the Rust table.
HAND_TYPES = {
    (1, 1): "i1", (1, 2): "i2", (1, 4): "i4", (1, 8): "i8",
    (2, 1): "u1", (2, 2): "u2", (2, 4): "u4", (2, 8): "u8",
    (3, 2): "f2", (3, 4): "f4", (3, 8): "f8",
    (4, 8): "c8", (4, 16): "c16",
}


def parse_by_hand(raw: bytes):
    """(header dict, data bytes as stored, trailing bytes) of a .ra file's bytes."""
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<6Q", raw, 0)
    assert magic == MAGIC, hex(magic)
    dims = list(struct.unpack_from(f"<{ndims}Q", raw, 48))
    start = 48 + 8 * ndims
    data = raw[start:start + size]
    assert len(data) == size
    header = dict(flags=flags, eltype=eltype, elbyte=elbyte, size=size, dims=dims)
    return header, data, raw[start + size:]


def numpy_view_by_hand(path) -> np.ndarray:
    """numpy's own view of a .ra file of a primitive type: shape the dims reversed."""
    raw = Path(path).read_bytes()
    h, data, _ = parse_by_hand(raw)
    count = int(np.prod(h["dims"], dtype=np.int64)) if h["dims"] else 1
    if h["flags"] & 2:
        import lz4.block
        data = lz4.block.decompress(data, uncompressed_size=count * h["elbyte"])
    order = ">" if h["flags"] & 1 else "<"
    dtype = np.dtype(order + HAND_TYPES[(h["eltype"], h["elbyte"])])
    return np.frombuffer(data, dtype=dtype, count=count).reshape(h["dims"][::-1])


def make_ra(eltype, elbyte, dims, data: bytes, flags=0, trailing=b"") -> bytes:
    """A .ra file's bytes built by hand."""
    head = struct.pack("<6Q", MAGIC, flags, eltype, elbyte, len(data), len(dims))
    return head + struct.pack(f"<{len(dims)}Q", *dims) + data + trailing


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def shared_dir():
    """The folder the Rust side of the interop tests (tests/python_package.rs) shares with
    these tests, or None when pytest runs on its own."""
    d = os.environ.get("RAWARRAY_INTEROP_DIR")
    return Path(d) if d else None


_PORTS_GIVEN: set[int] = set()


def _answers_http(port: int) -> bool:
    """Whether an HTTP server answers on ``port``: a request sent and an answer starting
    ``HTTP/``. A bare connect proves less: on some kernels a socket connecting to a free port
    of the ephemeral range connects to itself, and a process that does not speak HTTP may hold
    the port (the same check as tests/common/servers.rs)."""
    import socket  # noqa: PLC0415

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            if s.getsockname()[1] == port:
                return False
            s.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            head = b""
            while len(head) < 5:
                more = s.recv(5 - len(head))
                if not more:
                    return False
                head += more
            return head == b"HTTP/"
    except OSError:
        return False


def start_server(argv_for_port, what: str, log: Path):
    """Starts the server ``argv_for_port(port)`` names on a free loopback port and waits (60 s
    at most) until it answers HTTP there; returns ``(process, port)``. The port is never one
    this process gave a server before. A server that exits first (another process took the
    port between choosing and binding it) is started again on another port, three times at
    most. Its standard error goes to ``log`` (``log.1``, ``log.2`` for the tries after the
    first)."""
    import socket  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import time  # noqa: PLC0415

    last = ""
    for attempt in range(3):
        while True:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _PORTS_GIVEN:
                _PORTS_GIVEN.add(port)
                break
        path = Path(log) if attempt == 0 else Path(f"{log}.{attempt}")
        with open(path, "wb") as err:
            server = subprocess.Popen(argv_for_port(port), stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 60
        while server.poll() is None:
            if _answers_http(port):
                return server, port
            if time.monotonic() > deadline:
                server.kill()
                server.wait()
                raise AssertionError(f"{what} did not answer on port {port} in 60 s; the end "
                                     f"of its log {path}: "
                                     f"{path.read_text(errors='replace')[-800:]!r}")
            time.sleep(0.1)
        last = (f"{what} exited ({server.returncode}) on port {port}; the end of its log "
                f"{path}: {path.read_text(errors='replace')[-800:]!r}")
    raise AssertionError(f"{what} did not start in three tries; the last: {last}")
