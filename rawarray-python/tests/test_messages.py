"""Messages that say what to do: each names the path, the dtypes in numpy's words and the next
step, and every dim, chunk shape and block in numpy's axis order."""

import re
import struct

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand


def test_appending_to_a_missing_record_file_names_it_and_how_to_start_one(tmp):
    path = tmp / "run.ra"
    with pytest.raises(FileNotFoundError) as e:
        rawarray.RecordWriter(path, [("step", "<u8")], mode="a")
    msg = str(e.value)
    assert str(path) in msg and "no such file" in msg
    assert 'rawarray.RecordWriter(path, dtype) (mode="w"' in msg
    assert not path.exists()
    # The step it names works.
    with rawarray.RecordWriter(path, [("step", "<u8")]) as w:
        w.append(np.zeros(1, w.dtype))
    with rawarray.RecordWriter(path, [("step", "<u8")], mode="a") as w:
        w.append(np.ones(1, w.dtype))
    assert rawarray.read(path)["step"].tolist() == [0, 1]


def test_a_ragged_writer_and_an_array_writer_say_how_to_start_a_file(tmp):
    with pytest.raises(FileNotFoundError, match=r"start one with rawarray\.RaggedWriter\(path, dtype\)"):
        rawarray.RaggedWriter(tmp / "r.ra", "<f4", mode="a")
    with pytest.raises(FileNotFoundError, match=r"start one with rawarray\.ArrayWriter\(path, shape, dtype\)"):
        rawarray.ArrayWriter(tmp / "a.ra")


WRITES = {
    "write": lambda p: rawarray.write(p, np.zeros(3)),
    "write chunked": lambda p: rawarray.write(p, np.zeros(3), codec="zstd"),
    "write ragged": lambda p: rawarray.write(p, [np.zeros(2), np.zeros(1)]),
    "RecordWriter": lambda p: rawarray.RecordWriter(p, "<f8"),
    "ArrayWriter": lambda p: rawarray.ArrayWriter(p, (3,), "<f8"),
    "RaggedWriter": lambda p: rawarray.RaggedWriter(p, "<f8"),
}


@pytest.mark.parametrize("how", list(WRITES))
def test_writing_into_a_missing_folder_names_the_folder(tmp, how):
    folder = tmp / "results" / "day1"
    path = folder / "out.ra"
    with pytest.raises(FileNotFoundError) as e:
        WRITES[how](path)
    msg = str(e.value)
    assert msg.startswith(f"{folder}: no such folder to write out.ra in"), msg
    assert f"os.makedirs(\"{folder}\")" in msg
    assert "entity not found" not in msg
    folder.mkdir(parents=True)
    w = WRITES[how](path)          # the step it names works
    if w is not None:
        w.close()
    assert path.exists()


def test_a_table_into_a_missing_folder_names_the_folder(tmp):
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp / 'nope'}: no such folder")):
        rawarray.write(tmp / "nope" / "t.ra", pa.table({"x": [1, 2]}))


def test_reading_from_a_missing_folder_or_file_names_it(tmp):
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp / 'nope'}: no such folder, so no a.ra")):
        rawarray.open(tmp / "nope" / "a.ra")
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp / 'a.ra'}: no such file")):
        rawarray.open(tmp / "a.ra")


def test_appending_another_record_dtype_names_both_in_numpys_words(tmp):
    path = tmp / "run.ra"
    held = np.dtype([("step", "<u8"), ("pos", "<f4", (3,)), ("e", "<f8")])
    with rawarray.RecordWriter(path, held) as w:
        w.append(np.zeros(2, held))
    asked = np.dtype([("step", "<u8"), ("e", "<f4")])
    with pytest.raises(rawarray.RaError) as e:
        rawarray.RecordWriter(path, asked, mode="a")
    msg = str(e.value)
    assert str(path) in msg
    assert f"holds records of dtype {held}" in msg and f"records of dtype {asked}" in msg
    assert "eltype" not in msg and "elbyte" not in msg
    assert "mode='a'" in msg and "mode='w'" in msg
    # A record shape that differs is named too, in numpy's order.
    with pytest.raises(rawarray.RaError, match=re.escape("shape (); asked to append records of "
                                                         f"dtype {held} and shape (2, 3)")):
        rawarray.RecordWriter(path, held, shape=(2, 3), mode="a")
    # The file is as it was, and its own dtype appends.
    assert rawarray.read(path).shape == (2,)
    with rawarray.RecordWriter(path, rawarray.open(path).dtype, mode="a") as w:
        w.append(np.ones(1, held))
    assert rawarray.read(path).shape == (3,)


def test_appending_rows_of_another_dtype_names_both(tmp):
    path = tmp / "r.ra"
    with rawarray.RaggedWriter(path, "<i4") as w:
        w.append([1, 2])
    with pytest.raises(rawarray.RaError,
                       match=re.escape("rows of values of dtype int32, not values of dtype float64")):
        rawarray.RaggedWriter(path, "<f8", mode="a")


@pytest.mark.parametrize("dtype", [object])
def test_an_unstorable_dtype_lists_the_storable_ones(tmp, dtype):
    with pytest.raises(rawarray.RaError) as e:
        rawarray.write(tmp / "o.ra", np.zeros(3, dtype))
    msg = str(e.value)
    assert "has no .ra element type" in msg and "a.astype(" in msg
    assert "datetime64 and timedelta64 in s, ms, us or ns, and structured" in msg
    listed = msg.split("a .ra file stores ", 1)[1].split(", datetime64", 1)[0]
    names = [n.strip() for n in re.split(r",| and ", listed) if n.strip()]
    assert {"bool", "int8", "uint64", "float16", "float32", "float64", "complex128"} <= set(names)
    # Each name it lists is stored as that dtype (bfloat16 needs ml_dtypes).
    for name in names:
        if name.startswith("bfloat16"):
            ml_dtypes = pytest.importorskip("ml_dtypes")
            dt = np.dtype(ml_dtypes.bfloat16)
        else:
            dt = np.dtype(name)
        want = np.arange(3).astype(dt)
        rawarray.write(tmp / "s.ra", want)
        back = rawarray.read(tmp / "s.ra")
        assert back.dtype == dt and np.array_equal(back, want), name


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_a_zero_chunk_is_reported_at_its_numpy_axis(tmp, axis):
    chunks = [2, 3, 4]
    chunks[axis] = 0
    for write in (lambda: rawarray.write(tmp / "c.ra", np.zeros((4, 6, 8)), chunks=chunks),
                  lambda: rawarray.ArrayWriter(tmp / "w.ra", (4, 6, 8), "<f4", chunks=chunks)):
        with pytest.raises(rawarray.RaError) as e:
            write()
        msg = str(e.value)
        assert f"axis {axis} is 0" in msg and "dim" not in msg, msg


def test_a_zero_record_chunk_is_axis_0(tmp):
    with pytest.raises(rawarray.RaError) as e:
        rawarray.RecordWriter(tmp / "r.ra", "<f8", shape=(3, 5), chunks=0)
    assert "axis 0" in str(e.value) and "dim" not in str(e.value), str(e.value)


def test_the_librarys_dims_and_chunks_come_back_in_numpys_order(tmp):
    path = tmp / "w.ra"
    w = rawarray.ArrayWriter(path, (4, 6, 8), "<f4", chunks=(2, 3, 4))
    # Opening it with other chunks or another shape: the library's message, in numpy's order.
    with pytest.raises(rawarray.RaError) as e:
        rawarray.ArrayWriter(path, (4, 6, 8), "<f4", chunks=(2, 3, 8))
    assert "expected chunks (2, 3, 8)" in str(e.value) and "found chunks (2, 3, 4)" in str(e.value)
    with pytest.raises(rawarray.RaError) as e:
        rawarray.ArrayWriter(path, (4, 6, 9), "<f4", chunks=(2, 3, 4))
    assert "expected (4, 6, 9)" in str(e.value) and "found (4, 6, 8)" in str(e.value), str(e.value)
    w.close()
    # A chunk shape of the wrong length is counted in axes.
    with pytest.raises(rawarray.RaError, match="expected 3 axes, found 2"):
        rawarray.write(tmp / "c.ra", np.zeros((4, 6, 8)), chunks=(6, 8))


def test_order_f_keeps_the_files_order(tmp):
    with pytest.raises(rawarray.RaError, match="axis 0 is 0"):
        rawarray.write(tmp / "f.ra", np.zeros((4, 6)), chunks=(0, 6), order="F")
    rawarray.write(tmp / "f.ra", np.arange(24.0).reshape(4, 6), chunks=(4, 3), order="F")
    with rawarray.open(tmp / "f.ra") as f:
        assert f.header["dims"] == [4, 6] and f.chunks == (3, 4)   # numpy's order: reversed


def test_a_truncated_record_file_points_at_ra_recover(tmp):
    path = tmp / "run.ra"
    with rawarray.RecordWriter(path, [("step", "<u8"), ("e", "<f8")]) as w:
        w.append(np.zeros(20, w.dtype))
    raw = path.read_bytes()
    h, _, _ = parse_by_hand(raw)
    path.write_bytes(raw[:48 + 8 * len(h["dims"]) + 100])     # the header and 6 records of 20
    with pytest.raises(rawarray.RaError) as e:
        rawarray.open(path)
    msg = str(e.value)
    assert str(path) in msg and "truncated" in msg and f"`ra recover {path}`" in msg, msg
    assert h["eltype"] == 0


def test_a_truncated_array_says_copy_it_again(tmp):
    path = tmp / "a.ra"
    rawarray.write(path, np.arange(100.0))
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(rawarray.RaError) as e:
        rawarray.open(path)
    msg = str(e.value)
    assert str(path) in msg and "copy it again" in msg, msg
    assert struct.unpack_from("<Q", path.read_bytes(), 16)[0] == 3   # eltype float


def test_a_truncated_ragged_file_points_at_ra_recover(tmp):
    path = tmp / "r.ra"
    rawarray.write(path, [np.arange(50.0), np.arange(7.0)])
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(rawarray.RaError) as e:
        rawarray.open(path)
    msg = str(e.value)
    assert str(path) in msg and "rows" in msg and f"`ra recover {path}`" in msg, msg


def test_a_block_out_of_range_is_named_at_its_numpy_axis(tmp):
    # The library's block reader names the dim in the file's order; the File names the axis.
    rawarray.write(tmp / "a.ra", np.zeros((5, 7)))
    with rawarray.open(tmp / "a.ra", mmap=False) as f:
        with pytest.raises(rawarray.RaError) as e:
            f._read_block([(0, 9), (0, 2)])          # numpy axis 0 is 5 long
    msg = str(e.value)
    assert "axis 0" in msg and "0..9" in msg and "length 5" in msg and "dim" not in msg, msg


def test_a_password_in_a_url_is_never_printed():
    # Messages the package formats itself show a URL as the library's shown_url does (which
    # `ra` and the store module use): the password as ***, the rest as given. Nothing listens
    # on port 9, so the open fails in the library.
    url = "https://reader:hunter2@127.0.0.1:9/run/x.ra"
    shown = "https://reader:***@127.0.0.1:9/run/x.ra"
    assert rawarray._rawarray.shown_url(url) == shown
    assert rawarray._rawarray.shown_url("s3://bucket/a@b.ra") == "s3://bucket/a@b.ra"
    cases = {
        "a ragged write to a URL": lambda: rawarray.write(url, [np.zeros(2), np.zeros(1)]),
        "an object writer without shape": lambda: rawarray.ArrayWriter(url),
        "an open of the URL": lambda: rawarray.open(url),
    }
    for what, call in cases.items():
        with pytest.raises((rawarray.RaError, TypeError, OSError)) as e:
            call()
        msg = str(e.value)
        assert shown in msg and "hunter2" not in msg, f"{what}: {msg}"
