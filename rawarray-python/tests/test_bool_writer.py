"""Bool arrays through ``ArrayWriter``, as everywhere else: bytes 0 and 1, marked bool by the
schema in the trailer, read back as numpy's bool."""

import json

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand


def test_an_array_writer_writes_a_bool_array(tmp):
    path = tmp / "mask.ra"
    want = np.zeros((3, 5), bool)
    want[1, 1:4] = True
    want[2] = [True, False, True, False, True]
    with rawarray.ArrayWriter(path, (3, 5), bool) as w:
        assert w.created and w.dtype == np.dtype(bool) and w.shape == (3, 5)
        w[1, 1:4] = True
        w[2] = [True, False, True, False, True]
    back = rawarray.read(path)
    assert back.dtype == np.dtype(bool) and np.array_equal(back, want)
    # The bytes by hand: uint8 0/1 (eltype 2, elbyte 1), dims reversed, then a trailer whose
    # schema marks the scalar bool.
    h, data, trailing = parse_by_hand(path.read_bytes())
    assert (h["eltype"], h["elbyte"], h["dims"]) == (2, 1, [5, 3])
    assert np.array_equal(np.frombuffer(data, np.uint8).reshape(3, 5), want.astype(np.uint8))
    assert b'"bool"' in trailing
    with rawarray.open(path) as f:
        assert json.dumps(f.schema).count("bool") == 1
    # As rawarray.write stores the same array: the same data bytes.
    rawarray.write(tmp / "same.ra", want)
    assert parse_by_hand((tmp / "same.ra").read_bytes())[1] == data


def test_a_second_writer_opens_the_bool_file_and_values_stay_exact(tmp):
    path = tmp / "m.ra"
    first = rawarray.ArrayWriter(path, (4,), "?")
    second = rawarray.ArrayWriter(path, (4,), "?")
    assert first.created and not second.created and second.dtype == np.dtype(bool)
    second[2:] = [True, True]
    with pytest.raises(rawarray.RaError, match="does not fit"):
        first[0] = 2                  # not a bool: refused, not stored as True
    first.close()
    second.close()
    assert rawarray.read(path).tolist() == [False, False, True, True]
    # Reopened by path alone, it is still bool.
    with rawarray.ArrayWriter(path) as w:
        assert w.dtype == np.dtype(bool)
        w[0] = True
    assert rawarray.read(path).tolist() == [True, False, True, True]


def test_a_compressed_bool_array_writer_says_what_to_do(tmp):
    with pytest.raises(rawarray.RaError) as e:
        rawarray.ArrayWriter(tmp / "c.ra", (4, 4), bool, chunks=(2, 4))
    assert "rawarray.write(path, a, codec=" in str(e.value)
    assert not (tmp / "c.ra").exists()
    # Its advice works: the whole array written compressed reads back as bool.
    a = np.eye(4, dtype=bool)
    rawarray.write(tmp / "c.ra", a, codec="zstd")
    assert rawarray.read(tmp / "c.ra").dtype == np.dtype(bool)
    assert np.array_equal(rawarray.read(tmp / "c.ra"), a)
