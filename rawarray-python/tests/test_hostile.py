"""Hostile files raise RaError, in a subprocess that must exit normally: no input may crash the
interpreter (a segfault or abort would show as a negative return code)."""

import json
import struct
import subprocess
import sys
import zlib

import pytest

from conftest import MAGIC, make_ra

CHILD = """
import sys, rawarray
try:
    with rawarray.open(sys.argv[1]) as f:
        a = f.array()
        a.sum() if a.dtype.kind in "iufcb" else bytes(a.tobytes()[:1])
        if f.shape: f[0]
    print("READ", f.dtype)
except rawarray.RaError as e:
    print("RaError", e)
except OSError as e:
    print("OSError", e)
"""


def trailer_block(obj, at):
    js = json.dumps(obj).encode()
    crc = zlib.crc32(struct.pack("<QQ", len(js), at) + js)
    head = b"RATRAILR" + struct.pack("<QQI", len(js), at, crc)
    return head + js + struct.pack("<IQQ", crc, at, len(js)) + b"RATRAILR"


def hostile_files():
    good = make_ra(3, 4, [4], struct.pack("<4f", 1, 2, 3, 4))
    yield "empty", b""
    yield "text", b"hello, world\n"
    yield "truncated header", good[:30]
    yield "truncated dims", good[:50]
    yield "truncated data", good[:-3]
    yield "lying dims", make_ra(3, 4, [1 << 40, 1 << 30], b"")[:56] + struct.pack("<Q", 1 << 30)
    yield "size overflow", struct.pack("<6Q", MAGIC, 0, 3, 8, 2**64 - 8, 2) + struct.pack("<2Q", 2**62, 4)
    yield "bad flags", struct.pack("<6Q", MAGIC, 4, 3, 4, 16, 1) + struct.pack("<Q", 4) + bytes(16)
    yield "bad eltype", struct.pack("<6Q", MAGIC, 0, 9, 4, 16, 1) + struct.pack("<Q", 4) + bytes(16)
    yield "bad elbyte", struct.pack("<6Q", MAGIC, 0, 3, 3, 12, 1) + struct.pack("<Q", 4) + bytes(12)
    yield "many dims", struct.pack("<6Q", MAGIC, 0, 2, 1, 0, 2**40)
    yield "lz4 garbage", struct.pack("<6Q", MAGIC, 2, 2, 1, 8, 1) + struct.pack("<Q", 1000) + b"\xff" * 8
    yield "lz4 bomb claim", struct.pack("<6Q", MAGIC, 2, 2, 1, 4, 1) + struct.pack("<Q", 2**50) + b"\x1f\x00\x01\x00"
    # Record files whose trailer schema lies about the element.
    data = bytes(range(16))
    end = 56 + 16
    yield "schema wider than elbyte", make_ra(0, 8, [2], data, trailing=trailer_block(
        {"version": 1, "params": None, "schema": {"kind": "record", "name": "R", "fields": [
            {"name": "a", "offset": 0, "layout": {"kind": "scalar", "eltype": "float", "elbyte": 8}},
            {"name": "b", "offset": 8, "layout": {"kind": "scalar", "eltype": "float", "elbyte": 8}}]},
         "numpy_descr": [["a", "<f8"], ["b", "<f8"]]}, end))
    yield "schema offset past element", make_ra(0, 8, [2], data, trailing=trailer_block(
        {"version": 1, "params": None, "schema": {"kind": "record", "name": "R", "fields": [
            {"name": "a", "offset": 4000, "layout": {"kind": "scalar", "eltype": "float", "elbyte": 8}}]},
         "numpy_descr": [["a", "<f8"]]}, end))
    yield "scalar wider than its eltype", make_ra(0, 8, [2], data, trailing=trailer_block(
        {"version": 1, "params": None, "schema": {"kind": "record", "name": "R", "fields": [
            {"name": "a", "offset": 0, "layout": {"kind": "scalar", "eltype": "float", "elbyte": 7}},
            {"name": "b", "offset": 7, "layout": {"kind": "scalar", "eltype": "uint", "elbyte": 1}}]},
         "numpy_descr": [["a", "<f7"], ["b", "|u1"]]}, end))
    yield "huge zero-size array", make_ra(0, 8, [2], data, trailing=trailer_block(
        {"version": 1, "params": None, "schema": {"kind": "record", "name": "R", "fields": [
            {"name": "a", "offset": 0, "layout": {"kind": "array", "len": 2**40,
                "item": {"kind": "record", "name": "E", "fields": []}}},
            {"name": "b", "offset": 0, "layout": {"kind": "scalar", "eltype": "float", "elbyte": 8}}]},
         "numpy_descr": [["a", [], [2**40]], ["b", "<f8"]]}, end))
    yield "trailer garbage", make_ra(0, 8, [2], data, trailing=b"RATRAILR" + b"\xff" * 40 + b"RATRAILR")


# Files whose data is fine but whose trailer is damaged: read, with the elements as bytes.
DAMAGED_METADATA = ("schema wider than elbyte", "schema offset past element",
                    "scalar wider than its eltype", "huge zero-size array", "trailer garbage")


@pytest.mark.parametrize("name,raw", list(hostile_files()), ids=[n for n, _ in hostile_files()])
def test_hostile_file_is_an_error_not_a_crash(tmp, name, raw):
    path = tmp / "h.ra"
    path.write_bytes(raw)
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (name, out.returncode, out.stderr[-2000:])
    line = out.stdout.strip()
    assert line.startswith(("RaError", "READ")), (name, line, out.stderr[-2000:])
    if name not in DAMAGED_METADATA:
        assert line.startswith("RaError"), (name, line)
    else:
        # The data is still readable; the damaged schema is not used (raw bytes at most).
        assert line.startswith("READ"), (name, line)
