"""The package's namespace is its API; File's ndim, size and nbytes mean what numpy's do; a 1-d
array of text is written as ragged text, other text and byte strings are refused with a message
saying where strings go."""

import numpy as np
import pytest

import rawarray


def test_dir_shows_only_the_api():
    public = sorted(n for n in dir(rawarray) if not n.startswith("_"))
    assert public == sorted(rawarray.__all__)
    for name in ("np", "os", "json", "Any", "Buffer", "RawFile", "warnings", "annotations"):
        assert not hasattr(rawarray, name), name
    assert repr(rawarray.File).startswith("<class 'rawarray.File'")


@pytest.mark.parametrize("arr,compress", [
    (np.arange(24, dtype="<f4").reshape(2, 3, 4), False),
    (np.zeros((2, 3, 40), dtype="<f4"), True),
    (np.zeros(5, [("id", "<u4"), ("v", "<f8", (3,))]), False),
    (np.zeros((0, 7), "<i2"), False),
    (np.array(3.5), False),
    (np.ones(1000, "<c16"), True),
])
def test_file_ndim_size_and_nbytes_are_numpys(tmp, arr, compress):
    p = tmp / "a.ra"
    rawarray.write(p, arr, compress=compress)
    with rawarray.open(p) as f:
        assert (f.ndim, f.size, f.nbytes) == (arr.ndim, arr.size, arr.nbytes)
        # The header's data-byte count is the stored one: compressed for LZ4.
        stored = p.stat().st_size - f.header["header_len"]
        if f.params is None and f.schema is None:
            assert f.header["size"] == stored
        if compress:
            assert f.header["size"] < arr.nbytes


@pytest.mark.parametrize("dt", ["<U5", ">U1"])
def test_a_1d_text_array_is_written_as_ragged_text(tmp, dt):
    arr = np.array(["a", "é", ""], dt)
    rawarray.write(tmp / "a.ra", arr)
    back = rawarray.read(tmp / "a.ra")
    assert isinstance(back, rawarray.Ragged) and back.is_text
    assert back.to_list() == arr.tolist()


@pytest.mark.parametrize("dt", ["<U5", [("name", "<U8"), ("x", "<f8")]])
def test_other_text_is_refused_pointing_at_ragged_arrays(tmp, dt):
    arr = np.zeros((2, 2), dt)  # text in 2-d, or in a record
    with pytest.raises(rawarray.RaError, match="strings are ragged arrays of text"):
        rawarray.write(tmp / "a.ra", arr)
    with pytest.raises(rawarray.RaError, match="ragged arrays"):
        rawarray.RecordWriter(tmp / "b.ra", dt)
    assert not (tmp / "a.ra").exists() and not (tmp / "b.ra").exists()


def test_a_text_field_is_named():
    with pytest.raises(rawarray.RaError, match="field 'name'"):
        rawarray.write("never-written.ra", np.zeros(2, [("name", "<U8"), ("x", "<f8")]))


def test_byte_strings_are_refused_with_the_way_to_store_them(tmp):
    arr = np.array([b"abc", b"de", b""], dtype="S3")
    with pytest.raises(rawarray.RaError, match="kind 'S'") as e:
        rawarray.write(tmp / "a.ra", arr)
    assert "rawarray.Ragged" in str(e.value)
    # The way the message gives stores the bytes and gives them back.
    as_u8 = arr.view(np.uint8).reshape(arr.shape + (3,))
    rawarray.write(tmp / "a.ra", as_u8)
    back = rawarray.read(tmp / "a.ra")
    assert np.array_equal(np.ascontiguousarray(back).view("S3")[..., 0], arr)


def test_a_large_plain_read_into_memory_is_the_array_in_either_byte_order(tmp):
    # 40 MiB: the library reads 32 MiB or more of a plain file in 4 MiB pieces on several
    # threads (rawarray-serde's section/plain.rs; on one core, or with RAYON_NUM_THREADS=1, in
    # one read, which this then checks instead); values that no piece shift keeps.
    a = (np.arange(10 << 20, dtype=np.uint32) * np.uint32(2654435761)).reshape(40, 512, 512)
    for dtype, name in (("<u4", "le"), (">u4", "be")):
        path = tmp / f"big_{name}.ra"
        rawarray.write(path, a.astype(dtype))
        back = rawarray.read(path, mmap=False)
        assert back.flags.owndata and back.flags.writeable
        np.testing.assert_array_equal(back, a)
        with rawarray.open(path, mmap=False) as f:
            before = f.io_stats
            # mmap=False: a copying read (a little-endian file's is the split read; a
            # big-endian one is decoded whole), not a view of a map.
            np.testing.assert_array_equal(f.array(order="F", mmap=False), a.T)
            # A whole read is not counted (io_stats' docs), split or not.
            assert f.io_stats == before, (before, f.io_stats)
            np.testing.assert_array_equal(f[3:5, 100], a[3:5, 100])
