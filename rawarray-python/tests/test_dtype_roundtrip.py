"""Every dtype rawarray.write accepts reads back equal (names, shapes, nesting); every other one
is refused up front, naming the field, before anything is written, and never comes back as
bytes with a "damaged trailer" warning."""

import string
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

import rawarray

# Hypothesis keeps caches in a folder: under the build directory, never where the tests run.
set_hypothesis_home_dir(str(Path(__file__).resolve().parents[2] / "target" / "tmp" / "hypothesis"))

SCALARS = ["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
           "<c8", "<c16", ">i4", ">f8", "|V3"]


def nested(depth):
    """A record nested `depth` records deep, one float at the bottom."""
    dt = np.dtype([("x", "<f8")])
    for k in range(depth - 1):
        dt = np.dtype([(f"l{k}", dt)])
    return dt


def write_or_refuse(path, arr):
    """Writes `arr` and returns what reads back, or None when write refused it; either way, no
    warning (a damaged trailer says so with a RaWarning) and nothing written when refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            rawarray.write(path, arr)
        except rawarray.RaError:
            assert not path.exists(), "a refused write left a file"
            return None
        return rawarray.read(path)


def assert_same(got, arr):
    want = arr.dtype.newbyteorder("<")  # write stores little-endian
    assert got.dtype == want, (got.dtype, want)
    assert got.dtype.descr == want.descr
    assert got.shape == arr.shape
    assert got.tobytes() == np.ascontiguousarray(arr, dtype=want).tobytes()


@pytest.mark.parametrize("name", ["quo'te", 'dou"ble', "new\nline", "nul\0", "tab\t",
                                  "back\\slash", "pa(re)n", "(", "a, b", "[x]", "{}", "ü"])
def test_field_names_read_back_or_are_refused_naming_the_field(tmp, name):
    dt = np.dtype([(name, "<f4"), ("b", "<i2", (2,))])
    arr = np.zeros(3, dt)
    arr[name] = [1.5, 2.5, 3.5]
    got = write_or_refuse(tmp / "a.ra", arr)
    if got is None:
        with pytest.raises(rawarray.RaError) as e:
            rawarray.write(tmp / "a.ra", arr)
        assert name[:3] in str(e.value), str(e.value)
        return
    assert_same(got, arr)


def test_the_names_the_library_refuses_are_refused_up_front(tmp):
    for name in ["quo'te", "new\nline", "nul\0", "back\\slash"]:
        p = tmp / "a.ra"
        with pytest.raises(rawarray.RaError, match="cannot be stored as a .ra record"):
            rawarray.write(p, np.zeros(2, [(name, "<f4")]))
        assert not p.exists()
        with pytest.raises(rawarray.RaError, match="cannot be stored as a .ra record"):
            rawarray.RecordWriter(p, [("ok", "<f8"), (name, "<f4")])
        assert not p.exists()


def test_an_old_file_survives_a_refused_write(tmp):
    p = tmp / "a.ra"
    rawarray.write(p, np.arange(3.0))
    before = p.read_bytes()
    with pytest.raises(rawarray.RaError, match="'empty'"):
        rawarray.write(p, np.zeros(2, [("ok", "<f8"), ("empty", "<f4", (0,))]))
    assert p.read_bytes() == before


def test_a_zero_length_field_is_refused_naming_it(tmp):
    with pytest.raises(rawarray.RaError, match="field 'empty'.*0 items"):
        rawarray.write(tmp / "a.ra", np.zeros(2, [("ok", "<f8"), ("empty", "<f4", (2, 0))]))


def test_titles_are_refused_naming_the_field(tmp):
    titled = np.dtype({"names": ["a", "b"], "formats": ["<f4", "<i8"], "titles": ["Alpha", None]})
    with pytest.raises(rawarray.RaError, match="field 'a'.*title.*Alpha"):
        rawarray.write(tmp / "a.ra", np.zeros(2, titled))
    inner = np.dtype([("outer", [(("T", "inner"), "<f4")])])
    with pytest.raises(rawarray.RaError, match="field 'outer.inner'"):
        rawarray.RecordWriter(tmp / "b.ra", inner)
    assert not (tmp / "a.ra").exists() and not (tmp / "b.ra").exists()


@pytest.mark.parametrize("depth", [1, 2, 10, 20, 30, 50, 64, 70])
def test_nesting_reads_back_or_is_refused_up_front(tmp, depth):
    arr = np.zeros(2, nested(depth))
    got = write_or_refuse(tmp / "a.ra", arr)
    if got is None:
        assert depth > 20, "shallow nesting must be stored"
        with pytest.raises(rawarray.RaError, match="nest"):
            rawarray.write(tmp / "a.ra", arr)
    else:
        assert_same(got, arr)


# -- the property test ----------------------------------------------------------------------

NAME_CHARS = string.ascii_letters + string.digits + "_ -'\"()[]{},.:\\\n\t\0ü€"
names = st.text(alphabet=NAME_CHARS, min_size=1, max_size=6)
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


def records(children):
    def build(fields):
        return np.dtype([(n, base, shape) if shape else (n, base) for n, base, shape in fields])
    field = st.tuples(names, children, shapes)
    return st.lists(field, min_size=1, max_size=4, unique_by=lambda f: f[0]).map(build)


dtypes = st.recursive(st.sampled_from(SCALARS).map(np.dtype), records, max_leaves=12)


def titled(dt_and_title):
    dt, title = dt_and_title
    if dt.names is None or title is None or title in dt.names:
        return dt
    first = dt.names[0]
    fields = [((title, first) if n == first else n, dt.fields[n][0]) for n in dt.names]
    return np.dtype(fields)


all_dtypes = st.tuples(dtypes, st.none() | names).map(titled)


# No example database: a failure prints the example that reproduces it.
@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dt=all_dtypes, count=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_generated_dtypes_read_back_equal_or_are_refused_up_front(tmp_path, dt, count, seed):
    path = tmp_path / "gen.ra"
    path.unlink(missing_ok=True)
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=count * dt.itemsize, dtype=np.uint8)
    arr = raw.view(dt) if dt.itemsize else np.zeros(count, dt)
    if dt.fields is None and arr.ndim == 0:
        arr = arr.reshape(1)
    got = write_or_refuse(path, arr)
    event("refused up front" if got is None else "read back")
    if got is not None:
        assert_same(got, arr)
