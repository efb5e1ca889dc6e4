"""Zero copy: a view's base chain ends at the library's memory map, views share memory, own no
data, cannot be written, and stay valid after the file object is closed and collected."""

import gc

import numpy as np

import rawarray


def write_field(tmp):
    a = np.arange(4 * 5 * 6, dtype="<f8").reshape(4, 5, 6)
    rawarray.write(tmp / "field.ra", a)
    return tmp / "field.ra", a


def base_chain(arr):
    chain = []
    obj = arr
    while obj is not None:
        chain.append(obj)
        obj = getattr(obj, "base", None) if isinstance(obj, np.ndarray) else getattr(obj, "obj", None)
    return chain


def test_the_view_is_over_the_map(tmp):
    path, a = write_field(tmp)
    f = rawarray.open(path)
    v = f.array()
    chain = base_chain(v)
    last = chain[-1]
    assert type(last).__name__ == "Buffer" and last.is_mapped, chain
    assert v.flags.owndata is False and v.flags.writeable is False
    w = f.array()
    assert np.shares_memory(v, w)
    k = f[2]
    assert np.shares_memory(k, v) and k.flags.writeable is False
    np.testing.assert_array_equal(k, a[2])
    np.testing.assert_array_equal(f[1:3], a[1:3])
    np.testing.assert_array_equal(f[-1], a[-1])
    np.testing.assert_array_equal(f[1, 2], a[1, 2])


def test_the_view_outlives_the_file_object(tmp):
    path, a = write_field(tmp)
    with rawarray.open(path) as f:
        v = f.array()
        k = f[3]
    del f
    gc.collect()
    np.testing.assert_array_equal(v, a)
    np.testing.assert_array_equal(k, a[3])
    try:
        v[0, 0, 0] = 1.0
    except ValueError:
        pass
    else:
        raise AssertionError("a view over the map must be read-only")


def test_read_is_a_view_too(tmp):
    path, a = write_field(tmp)
    v = rawarray.read(path)
    assert base_chain(v)[-1].is_mapped
    np.testing.assert_array_equal(v, a)


def test_compressed_files_decode_into_memory(tmp):
    a = np.arange(100, dtype="<i4").reshape(10, 10)
    rawarray.write(tmp / "z.ra", a, compress=True)
    v = rawarray.read(tmp / "z.ra")
    assert base_chain(v)[-1].is_mapped is False
    np.testing.assert_array_equal(v, a)


def test_closed_files_refuse_new_reads(tmp):
    path, _ = write_field(tmp)
    f = rawarray.open(path)
    f.close()
    try:
        f.array()
    except ValueError as e:
        assert "closed" in str(e)
    else:
        raise AssertionError("a closed file must not map again")


def test_mmap_false_reads_into_memory(tmp):
    path, a = write_field(tmp)
    v = rawarray.read(path, mmap=False)
    assert v.flags.owndata and v.flags.writeable and v.flags.c_contiguous
    np.testing.assert_array_equal(v, a)
    f = rawarray.read(path, order="F", mmap=False)
    assert f.flags.f_contiguous and f.flags.owndata
    np.testing.assert_array_equal(f, a.T)


def test_boolean_keys_index_as_numpy_does(tmp):
    path, a = write_field(tmp)
    with rawarray.open(path) as f:
        for key in (True, False, (True, 1), (False,)):
            np.testing.assert_array_equal(f[key], a[key])
            assert f[key].shape == a[key].shape
