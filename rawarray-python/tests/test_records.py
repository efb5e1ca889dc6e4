"""Records: structured arrays with their schema and parameters, the main job's file read by field
name, and files shared with the Rust side (tests/python_package.rs), which wrote some of them
and reads back, with its RecordReader, the ones written here."""

import json

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand, shared_dir

FOO = np.dtype([("info", "u1", (12,)), ("index", "<u4"), ("v", "<f8", (8,))])


def foos(n):
    a = np.zeros(n, FOO)
    for i in range(n):
        a[i]["info"] = np.frombuffer(f"record {i:05d}".encode()[:12].ljust(12, b"."), "u1")
        a[i]["index"] = i * 7
        a[i]["v"] = np.arange(8) * 0.5 + i
    return a


def test_structured_arrays_are_records_with_their_schema(tmp):
    a = foos(5)
    path = tmp / "foo.ra"
    rawarray.write(path, a, params={"dt": 0.25, "units": "m"})
    h, data, trailing = parse_by_hand(path.read_bytes())
    assert (h["eltype"], h["elbyte"], h["dims"]) == (0, 80, [5])
    assert data == a.tobytes()
    assert trailing[:8] == b"RATRAILR" and trailing[-8:] == b"RATRAILR"
    with rawarray.open(path) as f:
        assert f.dtype == FOO
        assert f.params == {"dt": 0.25, "units": "m"}
        assert f.schema is not None
        got = f.array()
        np.testing.assert_array_equal(got, a)
        np.testing.assert_array_equal(f[3]["v"], a[3]["v"])
        np.testing.assert_array_equal(f[1:4]["index"], [7, 14, 21])


def test_nested_and_big_endian_records(tmp):
    point = np.dtype([("x", "<f4"), ("y", "<f4")])
    dt = np.dtype([("flag", "u1"), ("pos", point), ("path", point, (2,)), ("grid", "<i2", (2, 3))])
    a = np.zeros((2, 3), dt)
    a["pos"]["x"] = np.arange(6).reshape(2, 3)
    a["grid"] = np.arange(36).reshape(2, 3, 2, 3)
    rawarray.write(tmp / "n.ra", a.astype(dt.newbyteorder(">")))
    back = rawarray.read(tmp / "n.ra")
    assert back.dtype == dt and back.shape == (2, 3)
    np.testing.assert_array_equal(back, a)


def test_the_main_jobs_file_by_field_name():
    d = shared_dir()
    if d is None:
        pytest.skip("run by tests/python_package.rs, which writes the simulation's file")
    truth = json.loads((d / "nbody_truth.json").read_text())
    with rawarray.open(d / "nbody.ra") as f:
        assert f.params == truth["params"]
        bodies = f.array()
        assert bodies.dtype.names == ("step", "time", "id", "position", "velocity", "energy")
        assert bodies["id"].tolist() == truth["id"]
        assert bodies["energy"].tolist() == truth["energy"]
        n = truth["params"]["particles"]
        last = f[len(f) - n:]
        assert last["step"].tolist() == [truth["params"]["steps"]] * n


def test_write_records_for_rusts_record_reader():
    d = shared_dir()
    if d is None:
        pytest.skip("run by tests/python_package.rs, which reads the file back with RecordReader")
    rawarray.write(d / "from_python.ra", foos(9), params={"written_by": "python"})
    with rawarray.RecordWriter(d / "from_python_writer.ra", FOO, params={"written_by": "RecordWriter"}) as w:
        for i in range(0, 9, 3):
            w.append(foos(9)[i:i + 3])
            w.flush()
