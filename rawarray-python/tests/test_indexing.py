"""``File[key]`` is numpy's indexing, exactly, in every axis, for every element type, byte order
and way of reading (the memory map, positioned reads, LZ4 decoded once): random keys are checked
against numpy on the whole array (files built by hand, so numpy's own view is the truth), and
the bytes a key reads are counted through the library's I/O statistics."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rawarray
from conftest import make_ra
from test_types import CODES, DTYPES, values

RECORD = np.dtype([("a", "<u2"), ("b", "<f8", (2,))])
COMPLEX32 = np.dtype([("re", "<f2"), ("im", "<f2")])
# The table's types numpy has no scalar for: bfloat16 (ml_dtypes) and complex of float16.
ELEMENTS = DTYPES + ["bf16", "c4", "record"]
# How the file is read: little-endian through the map, little-endian with positioned reads,
# big-endian (always the library's block reader), LZ4 (decoded once, then cut from).
MODES = ["map", "pread", "big", "lz4"]


def sample(element, shape):
    if element == "bf16":
        import ml_dtypes
        return (np.arange(int(np.prod(shape))) * 0.5 - 3).astype(ml_dtypes.bfloat16).reshape(shape)
    if element == "c4":
        a = np.zeros(shape, COMPLEX32)
        a["re"] = np.arange(a.size).reshape(shape) * 0.25
        a["im"] = -np.arange(a.size).reshape(shape)
        return a
    if element == "record":
        a = np.zeros(shape, RECORD)
        n = a.size
        a["a"] = (np.arange(n) * 7 + 1).reshape(shape)
        a["b"] = (np.arange(2 * n) * 0.5).reshape(shape + (2,))
        return a
    return values(element, shape)


def write_file(path, a, mode):
    """The file by hand (header and numpy's bytes), or by the package for LZ4."""
    if mode == "lz4":
        rawarray.write(path, a, compress=True)
        return rawarray.open(path)
    order = ">" if mode == "big" else "<"
    flags = 1 if mode == "big" else 0
    if a.dtype.name == "bfloat16" or a.dtype == COMPLEX32:
        # Each 2-byte scalar in the file's byte order, under a hand-built header.
        raw = a.view("<u2")
        stored = raw.astype(order + "u2").tobytes()
        eltype = 5 if a.dtype.name == "bfloat16" else 4
        path.write_bytes(make_ra(eltype, a.dtype.itemsize, list(a.shape[::-1]), stored, flags=flags))
    elif a.dtype.fields is not None:
        stored = a.astype(a.dtype.newbyteorder(order))
        if order == ">":
            # Records keep the header's byte order and carry no schema here: the test views
            # their bytes with the dtype it knows.
            path.write_bytes(make_ra(0, a.dtype.itemsize, list(a.shape[::-1]), stored.tobytes(), flags=1))
        else:
            rawarray.write(path, a)
    else:
        code = CODES[a.dtype.kind]
        stored = a.astype(order + a.dtype.str[1:])
        path.write_bytes(make_ra(code, a.dtype.itemsize, list(a.shape[::-1]), stored.tobytes(),
                                 flags=1 if mode == "big" else 0))
    return rawarray.open(path, mmap=mode != "pread")


def as_numpy(got, want):
    """The result viewed as the truth's dtype (a big-endian record file without a schema reads
    as raw bytes of its elements)."""
    got = np.asarray(got)
    if got.dtype != want.dtype and got.dtype.kind == "V" and want.dtype.fields is not None:
        got = got.view(want.dtype.newbyteorder(">")).astype(want.dtype)
    return got


@st.composite
def keys(draw, shape):
    """A random key for an array of ``shape``: integers (negative too), slices of any step,
    integer lists, a boolean mask, np.newaxis and one Ellipsis, for some or all axes."""
    comps = []
    axes = draw(st.integers(0, len(shape)))
    arrays = 0
    for n in shape[:axes]:
        kinds = ["slice"] + (["int", "list"] if n else ["list"]) + (["mask"] if arrays == 0 else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            comps.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]))
            comps.append(slice(draw(bound), draw(bound), step))
        elif kind == "list" and n and arrays < 2:
            arrays += 1
            comps.append(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
        elif kind == "mask":
            arrays += 1
            comps.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
        else:
            comps.append(slice(None))
    for _ in range(draw(st.integers(0, 2))):
        comps.insert(draw(st.integers(0, len(comps))), None)
    if draw(st.booleans()):
        # Also where it stands for no axes: it still separates advanced indices for numpy.
        comps.insert(draw(st.integers(0, len(comps))), Ellipsis)
    return tuple(comps)


shapes = st.lists(st.integers(0, 5), min_size=1, max_size=4).map(tuple)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("element", ELEMENTS)
@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), shape=shapes)
def test_random_keys_index_as_numpy_does(tmp_path, element, mode, data, shape):
    if mode == "big" and element in ("i1", "u1"):
        mode = "map"  # one-byte elements have no byte order to test
    a = sample(element, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = write_file(tmp_path / "k.ra", a, mode)
    with f:
        for _ in range(5):
            key = data.draw(keys(shape))
            try:
                want = a[key]
            except IndexError:
                with pytest.raises(IndexError):
                    f[key]
                continue
            got = as_numpy(f[key], np.asarray(want))
            assert got.shape == np.shape(want), (key, got.shape, np.shape(want))
            np.testing.assert_array_equal(got, want, err_msg=repr(key))


@pytest.mark.parametrize("mode", MODES)
def test_advanced_axes_go_where_numpy_puts_them(tmp, mode):
    a = values("f4", (2, 5, 8))
    with write_file(tmp / "f.ra", a, mode) as f:
        # An integer and an array separated by a slice: the broadcast axis comes first.
        got = f[1, :, [7, 0, 3]]
        assert got.shape == a[1, :, [7, 0, 3]].shape == (3, 5)
        np.testing.assert_array_equal(got, a[1, :, [7, 0, 3]])
        # Adjacent arrays keep their place; arrays broadcast against each other.
        for key in [(slice(None), [4, 0], [1, 1]), ([[0], [1]], slice(None), [2, 5, 7]),
                    (np.newaxis, 0, [True, False, True, False, True]), (..., [7, 7, 0]),
                    # An ellipsis of no axes between advanced indices: their axes go first.
                    (slice(None), 1, ..., [0, 1]), ([1, 0], [2, 2], ..., [3, 4]),
                    (True, [0, 1], ..., slice(None), 2)]:
            np.testing.assert_array_equal(f[key], a[key], err_msg=repr(key))
            assert f[key].shape == a[key].shape, key


def test_a_key_reads_only_the_bytes_it_touches(tmp):
    a = values("f4", (10, 20, 30))
    plane, row = 20 * 30 * 4, 30 * 4
    with write_file(tmp / "c.ra", a, "pread") as f:
        cases = [
            ((3,), plane),                                    # one plane
            ((slice(None, None, 4),), 3 * plane),             # planes 0, 4, 8: not the gaps
            ((2, slice(5, 8), slice(None, None, 3)), 3 * (27 + 1) * 4),  # last axis: 0..27
            ((-1, [7, 0, 3], 4), 3 * 4),                      # three elements
            ((Ellipsis, 29), 10 * 20 * 4),                    # a column: one element per row
            ((slice(None), 19), 10 * row),
            ((slice(4, 4),), 0),
        ]
        for key, want in cases:
            before = f.io_stats["bytes"]
            np.testing.assert_array_equal(f[key], a[key])
            assert f.io_stats["bytes"] - before == want, key


def test_a_key_of_many_runs_closes_the_smallest_gaps_first(tmp, monkeypatch):
    from rawarray import _indexing

    monkeypatch.setattr(_indexing, "MAX_BLOCKS", 8)
    a = values("u4", (40, 3))
    rows = [0, 1, 5, 9, 10, 11, 20, 22, 24, 26, 30, 39]     # 9 runs of rows; 8 blocks allowed
    with write_file(tmp / "m.ra", a, "pread") as f:
        np.testing.assert_array_equal(f[rows, 1], a[rows, 1])
        # The smallest gap (row 21) is read; one element per row, each its own run.
        assert f.io_stats == {"reads": 13, "bytes": 13 * 4}
        every = list(range(0, 40, 3))                           # 14 runs: 6 gaps of 2 closed
        before = f.io_stats["bytes"]
        np.testing.assert_array_equal(f[every, 2], a[every, 2])
        assert f.io_stats["bytes"] - before == (len(every) + 6 * 2) * 4


def test_an_lz4_file_is_decoded_once(tmp):
    a = values("i4", (6, 7))
    with write_file(tmp / "z.ra", a, "lz4") as f:
        np.testing.assert_array_equal(f[1, ::2], a[1, ::2])
        np.testing.assert_array_equal(f[[5, 0], -1], a[[5, 0], -1])
        assert f.io_stats["reads"] == 1


def test_bad_keys_are_refused_as_numpy_refuses_them(tmp):
    a = values("f8", (3, 4))
    with write_file(tmp / "b.ra", a, "pread") as f:
        with pytest.raises(IndexError, match="axis 1 with size 4"):
            f[0, -5]
        with pytest.raises(IndexError, match="axis 0 with size 3"):
            f[[0, 3]]
        with pytest.raises(IndexError, match="too many indices"):
            f[0, 0, 0]
        with pytest.raises(IndexError, match="single ellipsis"):
            f[..., ...]
        with pytest.raises(IndexError, match="float"):
            f[[0.5]]
        with pytest.raises(IndexError, match="float"):
            f[np.array([], float)]                      # numpy takes [] but not this
        with pytest.raises(IndexError, match="boolean index"):
            f[[True, False]]


def test_stepped_slices_over_more_blocks_than_the_limit_keep_numpys_answer(tmp):
    # 100 x 67 runs exceed the reader's 4096 blocks: the runs of axis 0 are merged. A partial
    # merge used to space a slice's indices unevenly in the block it assembled, and the answer
    # had shape (139, 67, 5) where numpy's is (100, 67, 5).
    a = np.arange(200 * 200 * 5, dtype="<f4").reshape(200, 200, 5)
    rawarray.write(tmp / "s.ra", a)
    with rawarray.open(tmp / "s.ra", mmap=False) as f:
        for key in [(slice(None, None, 2), slice(None, None, 3)), (slice(-1, 0, -3), slice(1, None, 3), 2)]:
            got = f[key]
            assert got.shape == a[key].shape, key
            np.testing.assert_array_equal(got, a[key])


# Keys of integers and slices of step 1: one block, read with one call of the library.
ONE_BLOCK_KEYS = [2, -1, np.int64(3), np.uint8(0), (1, 2), (-1, -3, 0), slice(1, 3),
                  (slice(None), 1), (2, slice(0, 4)), (slice(-2, None), slice(1, 2), 2),
                  slice(3, 100), (slice(None, None, 1), 0), (slice(1, 3), slice(1, 3))]


def byte_runs(shape, key):
    """The stretches of consecutive elements a key selects in a C-ordered array: numpy's
    flat indices of the selection, split where they jump."""
    flat = np.arange(int(np.prod(shape))).reshape(shape)[key].reshape(-1)
    return 1 + int(np.count_nonzero(np.diff(flat) != 1))


# Big-endian files are made by hand (the package writes little-endian), of numbers only.
ONE_BLOCK_CASES = [(e, m) for m in ("pread", "big", "lz4", "chunked")
                   for e in ("f8", "u1", "c16", "record", "bool")
                   if not (m == "big" and e in ("bool", "record"))]


@pytest.mark.parametrize("element,mode", ONE_BLOCK_CASES)
def test_one_block_keys_give_numpys_answer_with_one_read(tmp, element, mode):
    shape = (4, 5, 3)
    a = (np.arange(60).reshape(shape) % 3 == 1) if element == "bool" else sample(element, shape)
    path = tmp / "k.ra"
    if mode == "big":
        f = write_file(path, a, mode)
    else:
        opts = {"pread": {}, "lz4": {"compress": True}, "chunked": {"chunks": (2, 5, 3)}}[mode]
        rawarray.write(path, a, **opts)
        f = rawarray.open(path, mmap=False)
    with f:
        for key in ONE_BLOCK_KEYS:
            want, before = a[key], f.io_stats["reads"]
            got = f[key]
            assert type(got) is type(want) and got.dtype == want.dtype, key
            assert np.shape(got) == np.shape(want), key
            np.testing.assert_array_equal(got, want)
            if isinstance(got, np.ndarray):
                assert not got.flags.writeable, key
            if mode == "pread":
                # One positioned read per stretch of bytes, nothing else.
                assert f.io_stats["reads"] - before == byte_runs(shape, key), key


def test_one_block_keys_skip_the_planning(tmp, monkeypatch):
    """The cost of ``f[i]`` is the library's read: the planner of general keys is not called
    (h5py's ``dataset[i]`` is the yardstick; bench/index_one.py measures both)."""
    from rawarray import _indexing

    a = values("f8", (6, 7))
    rawarray.write(tmp / "p.ra", a)

    def no_planning(*args):
        raise AssertionError("planned a one-block key")

    with rawarray.open(tmp / "p.ra", mmap=False) as f:
        monkeypatch.setattr(_indexing, "_normalize", no_planning)
        for key in [2, -1, np.int64(3), (1, 2), slice(1, 3), (slice(None), 1), (slice(2, 4), 1)]:
            np.testing.assert_array_equal(f[key], a[key])
        with pytest.raises(AssertionError, match="planned"):
            f[[0, 1]]                   # an advanced key is planned


# Keys of one element each (of shape (4, 5, 3)): numpy's scalar, read by the binding's
# one-element path, which neither plans nor builds a block.
ELEMENT_KEYS = [(1, 2, 0), (-1, -5, -3), (3, 4, 2), (np.int64(3), np.uint8(4), np.int32(-1)),
                (np.intp(0), 1, np.int16(-2))]
# Keys that look like one element's and are not, or are out of bounds: numpy's answer or
# numpy's error through the general path.
NOT_ELEMENT_KEYS = [(True, 1, 2), (1, np.True_, 2, 0), (1, 2), (1, 2, slice(0, 1)),
                    (1, 2, np.array(0)), (1, [2], 0), (0, 0, 0, None)]
BAD_ELEMENT_KEYS = [((1, 2, 3), "index 3 is out of bounds for axis 2 with size 3"),
                    ((-5, 0, 0), "index -5 is out of bounds for axis 0 with size 4"),
                    ((1, 2.0, 0), "only integers, slices"),
                    ((0, 0, 0, 0), "too many indices"),
                    # numpy says "only integers"; the file names the axis it is out of.
                    ((2**70, 0, 0), "only integers|out of bounds for axis 0 with size 4")]


@pytest.mark.parametrize("element,mode", ONE_BLOCK_CASES)
def test_one_element_keys_give_numpys_scalar_without_planning(tmp, element, mode, monkeypatch):
    from rawarray import _indexing

    shape = (4, 5, 3)
    a = (np.arange(60).reshape(shape) % 3 == 1) if element == "bool" else sample(element, shape)
    path = tmp / "e.ra"
    if mode == "big":
        f = write_file(path, a, mode)
    else:
        opts = {"pread": {}, "lz4": {"compress": True}, "chunked": {"chunks": (2, 5, 3)}}[mode]
        rawarray.write(path, a, **opts)
        f = rawarray.open(path, mmap=False)
    with f:
        f[0, 0, 0]                      # a bool file is checked whole on its first read
        with monkeypatch.context() as m:
            def no_python(*args):
                raise AssertionError("an element key went through Python's planning")

            m.setattr(_indexing, "_one_block", no_python)
            m.setattr(_indexing, "_normalize", no_python)
            for key in ELEMENT_KEYS:
                want, before = a[key], f.io_stats["reads"]
                got = f[key]
                assert type(got) is type(want) and got.dtype == want.dtype, key
                np.testing.assert_array_equal(got, want)
                if mode == "pread":
                    assert f.io_stats["reads"] - before == 1, key
        for key in NOT_ELEMENT_KEYS:
            want, got = a[key], f[key]
            assert type(got) is type(want) and np.shape(got) == np.shape(want), key
            np.testing.assert_array_equal(got, want)
        for key, message in BAD_ELEMENT_KEYS:
            with pytest.raises(IndexError, match=message):
                a[key]                  # numpy's own words, which the file's must match
            with pytest.raises(IndexError, match=message):
                f[key]


def test_one_element_of_a_1d_file_and_after_close(tmp):
    a = values("i4", (9,))
    rawarray.write(tmp / "v.ra", a)
    f = rawarray.open(tmp / "v.ra", mmap=False)
    for key in [0, 8, -1, -9, np.int64(4), np.uint16(3), (2,)]:
        got = f[key]
        assert type(got) is np.int32 and got == a[key], key
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 9"):
        f[9]
    np.testing.assert_array_equal(f[True], a[True])
    f.close()
    with pytest.raises(ValueError, match="closed"):
        f[1]


@pytest.mark.parametrize("mode", MODES)
def test_an_index_array_out_of_bounds_that_selects_nothing_is_no_error(tmp, mode):
    # numpy checks index arrays' bounds only when the advanced indices select something: a
    # mask of no True beside [1] selects nothing, and 1 past an axis of 1 is then no error.
    # (Found by the random keys above, about one run in ten.)
    a = values("i2", (2, 2, 1))
    with write_file(tmp / "e.ra", a, mode) as f:
        key = (Ellipsis, np.array([False, False]), [1])
        want = a[key]
        got = as_numpy(f[key], np.asarray(want))
        assert got.shape == want.shape == (2, 0)
        with pytest.raises(IndexError, match="out of bounds"):
            a[Ellipsis, np.array([True, False]), [1]]
        with pytest.raises(IndexError, match="out of bounds"):
            f[Ellipsis, np.array([True, False]), [1]]
        with pytest.raises(IndexError, match="shape mismatch"):
            f[Ellipsis, np.array([False, False]), [0, 1, 1]]
