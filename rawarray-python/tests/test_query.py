"""Per-chunk statistics and queries that read only what they need (issue 35, doc/chunked.md
section 5.4): ``File.stats()``, ``rawarray.read(path, filters=...)``, ``File.to_arrow(filters=)``
and the chunks they read (``File.io_stats``).

The truth is numpy's: each chunk's statistics equal ``np.nanmin``/``np.nanmax`` and the count of
NaN over the chunk's slice of the array written (chunks cut here from the chunk shape, not the
package's), compared by value (``-0.0 == 0.0``); every query returns exactly ``arr[mask]`` for
numpy's boolean mask of the same predicate (NaN compares false but with ``!=``), for random
records and random predicates in pyarrow's filter convention. Which chunks a query may skip is
computed here from numpy's per-chunk minima of a sorted key, and the bytes a read costs from the
file's index entries, read by hand from doc/chunked.md. Damaged statistics (a byte flipped, their
CRC not fixed up) must change no result; the same flip with the CRC forged shows that the test
would see a chunk wrongly skipped. The 128-bit types numpy lacks are checked against a Rust
reference in rawarray-serde/tests/query.rs."""

import operator
import struct
import zlib

import numpy as np
import pytest

import rawarray
from conftest import parse_by_hand

pa = pytest.importorskip("pyarrow")

SEGMENTS = 64  # segment slots of a RACHUNK2 config (doc/chunked.md 5.1)


# -- chunks and index entries, by hand -------------------------------------------------------

def chunk_slices(shape, chunks):
    """numpy's slices of each chunk of an array of numpy ``shape`` cut in ``chunks`` (numpy's
    order), in the file's chunk order: column-major over the file's dims (numpy's order
    reversed), so numpy's last axis is the fastest."""
    counts = [-(-s // c) for s, c in zip(shape, chunks)]
    out = []
    for idx in np.ndindex(*counts):  # C order: the last axis fastest
        out.append(tuple(slice(i * c, min((i + 1) * c, s))
                         for i, c, s in zip(idx, chunks, shape)))
    return out


def index_entries(path):
    """Each chunk's index entry of a RACHUNK2 file: ``at`` (its first byte in the file), its
    length, the stored length of the chunk, and the statistics fields of the config
    ``(offset, count, eltype, width)``; from doc/chunked.md 5.1 and 5.4 alone."""
    raw = path.read_bytes()
    h, s, _ = parse_by_hand(raw)
    start = 48 + 8 * len(h["dims"])
    assert s[:8] == b"RACHUNK2", s[:8]
    _codec, _level, nf, features, s0, nd = struct.unpack_from("<IiIIQQ", s, 8)
    chunk = struct.unpack_from(f"<{nd}Q", s, 40)
    at = 40 + 16 * nd + 8 * nf
    (nstats,) = struct.unpack_from("<I", s, at)
    fields = [struct.unpack_from("<IIHH", s, at + 8 + 16 * i) for i in range(nstats)]
    assert bool(features & 1) == bool(nstats)
    p = 48 + 16 * nd + 8 * nf + 16 * nstats
    slots = [struct.unpack_from("<Q", s, p + 8 + 16 * g)[0] for g in range(SEGMENTS)]
    entry_len = 32 + sum(8 + -(-2 * (0 if et == 4 else w) // 8) * 8 for _, _, et, w in fields)
    count = int(np.prod([-(-d // c) for d, c in zip(h["dims"], chunk)]))
    out = []
    for c in range(count):
        g, first, cap = 0, 0, s0
        while c >= first + cap:
            g += 1
            first, cap = s0 << (g - 1), s0 << (g - 1)
        e = slots[g] + entry_len * (c - first)
        (stored,) = struct.unpack_from("<Q", s, e + 8)
        out.append(dict(at=start + e, len=entry_len, stored=stored, fields=fields))
    return out


def stats_record_at(entry, k):
    """Where field ``k``'s statistics record starts in the file, and ``m`` (bytes of its min)."""
    at = entry["at"] + 32
    for i, (_, _, et, w) in enumerate(entry["fields"]):
        m = 0 if et == 4 else w
        if i == k:
            return at, m
        at += 8 + -(-2 * m // 8) * 8
    raise IndexError(k)


# -- numpy's statistics ----------------------------------------------------------------------

def leaves(dtype, prefix=""):
    """``(name, getter)`` for each scalar or fixed-array field of a record dtype, nested fields
    by their path ``a.b`` (the names ``File.stats()`` and filters take), or ``values``."""
    if dtype.names is None:
        return [("values", lambda a: a)]
    out = []
    for name in dtype.names:
        sub = dtype.fields[name][0]
        path = f"{prefix}{name}"
        get = (lambda n: lambda a: a[n])(name)
        if sub.names is not None:
            for inner, g in leaves(sub, path + "."):
                out.append((inner, (lambda g, get: lambda a: g(get(a)))(g, get)))
        else:
            out.append((path, get))
    return out


def numpy_stats(values):
    """``{min, max, nan}`` of ``values`` as numpy tells them: ``np.nanmin``/``np.nanmax`` (None
    when every value is NaN, and for complex), the count of NaN (a complex value is NaN when
    either part is)."""
    v = np.asarray(values).ravel()
    base = v.dtype.base if v.dtype.subdtype else v.dtype
    if base.kind == "c":
        nan = np.isnan(v.real) | np.isnan(v.imag)
        return dict(min=None, max=None, nan=int(np.count_nonzero(nan)))
    if base.kind == "V" and base.name == "bfloat16":  # ml_dtypes: exact as float32
        v = v.astype(np.float32)
    if v.dtype.kind == "f":
        nan = int(np.count_nonzero(np.isnan(v)))
        if nan == v.size:
            return dict(min=None, max=None, nan=nan)
        return dict(min=np.nanmin(v).item(), max=np.nanmax(v).item(), nan=nan)
    if v.dtype.kind == "b":
        return dict(min=bool(v.min()), max=bool(v.max()), nan=0)
    return dict(min=int(v.min()), max=int(v.max()), nan=0)


def assert_stats(got, want, where):
    """Equal by value (``-0.0 == 0.0``), and of the same Python kind: bool for bool fields,
    int for integers (exact, any size), float for floats."""
    assert got is not None, f"{where}: no statistics"
    assert got["nan"] == want["nan"], f"{where}: nan {got} != numpy's {want}"
    for k in ("min", "max"):
        g, w = got[k], want[k]
        if w is None:
            assert g is None, f"{where}: {k} {got} != numpy's {want}"
            continue
        assert type(g) is type(w), f"{where}: {k} {g!r} is a {type(g).__name__}, numpy's {w!r}"
        assert g == w, f"{where}: {k} {got} != numpy's {want}"


def check_stats(path, arr, chunks):
    """``File.stats(per_chunk=True)`` equals numpy's over each chunk's slice of ``arr``, and
    ``File.stats()`` numpy's over the whole array, for every field."""
    slices = chunk_slices(arr.shape, chunks)
    with rawarray.open(path) as f:
        per_chunk = f.stats(per_chunk=True)
        whole = f.stats()
        assert f.io_stats["bytes"] == 0  # from the index alone: no data read
    names = [n for n, _ in leaves(arr.dtype)]
    assert list(per_chunk) == names
    assert list(whole) == names
    for name, get in leaves(arr.dtype):
        assert len(per_chunk[name]) == len(slices), name
        for n, sl in enumerate(slices):
            assert_stats(per_chunk[name][n], numpy_stats(get(arr[sl])), f"{name}, chunk {n} {sl}")
        assert_stats(whole[name], numpy_stats(get(arr)), f"{name}, whole file")


# -- statistics equal numpy's ----------------------------------------------------------------

INTS = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
FLOATS = ["f2", "f4", "f8"]
SHAPE, CHUNKS = (37, 23), (8, 5)  # edge chunks along both axes


def specials(arr, dtype, rng):
    """Puts the values statistics get wrong most easily where chunks will see them: for
    integers each extreme of the type (alone in a chunk, and beside the other); for floats NaN,
    -0.0, the infinities, the largest and the least subnormal values, a chunk of NaN only and a
    chunk of signed zeros only."""
    flat = arr.reshape(-1)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        arr[0:8, 0:5] = info.max                  # chunk 0: the maximum alone
        arr[8:16, 0:5] = info.min                 # another: the minimum alone
        arr[16, 6], arr[17, 7] = info.min, info.max  # both in one chunk
        arr[36, 22] = info.max                    # the corner (edge) chunk
    elif dt.kind == "f" or dtype == "bfloat16":
        fin = (pytest.importorskip("ml_dtypes").finfo if dtype == "bfloat16" else np.finfo)(dt)
        arr[0:8, 0:5] = np.nan                    # a chunk of NaN only
        arr[8:16, 0:5] = np.where(rng.random((8, 5)) < 0.5, -0.0, 0.0)  # signed zeros only
        arr[16:24, 0:5] = -0.0                    # -0.0 only
        arr[0, 5], arr[1, 6], arr[2, 7] = np.inf, -np.inf, np.nan
        arr[3, 10], arr[4, 11] = fin.max, fin.min
        arr[5, 15], arr[6, 16] = fin.smallest_subnormal, -fin.smallest_subnormal
        arr[36, 22], arr[35, 21] = np.nan, -np.inf  # the corner chunk
        flat[rng.random(flat.size) < 0.05] = np.nan
    return arr


def typed(dtype, shape, rng):
    """Random values of ``dtype`` over its whole range, with :func:`specials`."""
    if dtype == "bfloat16":
        dt = np.dtype(pytest.importorskip("ml_dtypes").bfloat16)
    else:
        dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    elif dt.kind == "b":
        a = rng.random(shape) < 0.5
        a[0:8, 0:5] = True                        # one chunk all True
        a[8:16, 0:5] = False                      # one all False
    elif dt.kind == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        a = np.empty(shape, dt)
        a.real = rng.standard_normal(shape).astype(part)
        a.imag = rng.standard_normal(shape).astype(part)
        a.real[rng.random(shape) < 0.05] = np.nan
        a.imag[rng.random(shape) < 0.05] = np.nan
        a[0:8, 0:5] = complex(np.nan, 1.0)        # a chunk of NaN only
        a[8:16, 0:5] = complex(1.0, np.nan)
    else:
        a = (rng.standard_normal(shape) * 1e3).astype(dt)
    return specials(a, dtype, rng)


@pytest.mark.parametrize("dtype", INTS + FLOATS + ["bfloat16", "c8", "c16", "?"])
def test_each_chunks_statistics_equal_numpys(tmp, dtype):
    rng = np.random.default_rng(zlib.crc32(dtype.encode()))
    a = typed(dtype, SHAPE, rng)
    path = tmp / "a.ra"
    rawarray.write(path, a, chunks=CHUNKS)
    back = rawarray.read(path)
    assert back.tobytes() == a.tobytes()
    check_stats(path, a, CHUNKS)


@pytest.mark.parametrize("dtype", ["u8", "i8", "f8"])
def test_one_dim_and_three_dim_arrays_with_edge_chunks(tmp, dtype):
    rng = np.random.default_rng(7)
    for shape, chunks in [((1001,), (100,)), ((5, 6, 7), (2, 4, 3)), ((3,), (10,))]:
        a = typed(dtype, (40, 40), rng).reshape(-1)[: int(np.prod(shape))].reshape(shape)
        path = tmp / "a.ra"
        rawarray.write(path, a, chunks=chunks)
        check_stats(path, a, chunks)


REC = np.dtype([
    ("step", "<i8"), ("body", "<u2"), ("energy", "<f8"), ("x", "<f4"), ("h", "<f2"),
    ("flag", "?"), ("pos", "<f8", (3,)),
    ("inner", [("a", "<i1"), ("b", "<u8"), ("z", "<c8"), ("deep", [("q", "<i4")])]),
])


def records(n, rng, sorted_step=True):
    """Random records: ``step`` sorted (5 records a step) or not, every float field with NaN,
    signed zeros and infinities, integer fields reaching their type's extremes."""
    r = np.zeros(n, REC)
    r["step"] = np.arange(n) // 5 if sorted_step else rng.integers(-50, 50, n)
    r["body"] = rng.integers(0, 10, n)
    for name in ("energy", "x", "h"):
        v = np.round(rng.standard_normal(n) * 8, 1)
        pick = rng.random(n)
        v[pick < 0.06] = np.nan
        v[(pick >= 0.06) & (pick < 0.1)] = -0.0
        v[(pick >= 0.1) & (pick < 0.13)] = 0.0
        v[(pick >= 0.13) & (pick < 0.14)] = np.inf
        v[(pick >= 0.14) & (pick < 0.15)] = -np.inf
        r[name] = v
    r["flag"] = rng.random(n) < 0.3
    r["pos"] = rng.standard_normal((n, 3))
    r["pos"][rng.random((n, 3)) < 0.03] = np.nan
    r["inner"]["a"] = rng.integers(-128, 128, n)
    r["inner"]["b"] = rng.choice(np.array([0, 1, 2, 2**63, 2**64 - 2, 2**64 - 1], np.uint64), n)
    z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    z[rng.random(n) < 0.05] = complex(np.nan, 0)
    r["inner"]["z"] = z
    r["inner"]["deep"]["q"] = rng.integers(-2**31, 2**31, n)
    return r


def test_record_fields_nested_and_fixed_array_fields(tmp):
    rng = np.random.default_rng(11)
    r = records(1003, rng, sorted_step=False)
    r["energy"][0:64] = np.nan                    # chunk 0's energy: NaN only
    r["pos"][64:128] = -0.0                       # chunk 1's pos: -0.0 only
    path = tmp / "r.ra"
    rawarray.write(path, r, chunks=(64,))         # 15 full chunks and an edge chunk of 43
    check_stats(path, r, (64,))
    with rawarray.open(path) as f:
        s = f.stats()
    assert s["inner.z"]["min"] is None and s["inner.z"]["nan"] > 0
    assert s["inner.deep.q"]["min"] == int(r["inner"]["deep"]["q"].min())


def test_records_in_an_nd_array_with_edge_chunks(tmp):
    rng = np.random.default_rng(12)
    r = records(7 * 30, rng, sorted_step=False).reshape(30, 7)
    path = tmp / "r.ra"
    rawarray.write(path, r, chunks=(8, 3))
    check_stats(path, r, (8, 3))


def test_a_record_writers_partial_last_chunk_after_each_flush(tmp):
    rng = np.random.default_rng(13)
    r = records(437, rng, sorted_step=False)
    path = tmp / "w.ra"
    at = 0
    with rawarray.RecordWriter(path, REC, chunks=50) as w:
        for n in [1, 3, 46, 10, 90, 7, 100, 180]:  # flushes inside chunks, on edges, across
            w.append(r[at:at + n])
            w.flush()
            at += n
            check_stats(path, r[:at], (50,))
    assert at == len(r)
    check_stats(path, r, (50,))


def test_a_record_writer_appending_to_its_file_again(tmp):
    rng = np.random.default_rng(14)
    r = records(260, rng, sorted_step=False)
    path = tmp / "w.ra"
    with rawarray.RecordWriter(path, REC, chunks=64) as w:
        w.append(r[:100])
    with rawarray.RecordWriter(path, REC, mode="a") as w:
        w.append(r[100:])
    check_stats(path, r, (64,))


@pytest.mark.parametrize("dtype", ["i2", "f4"])
def test_an_array_writers_chunks_written_in_any_order(tmp, dtype):
    """Blocks of whole chunks written out of order, one chunk never written (it reads as
    zeros): each written chunk's statistics are numpy's, the unwritten one has none, and the
    whole file's are numpy's over the array as it reads, zeros included."""
    rng = np.random.default_rng(15)
    a = rng.integers(100, 200, SHAPE).astype(dtype)  # the zeros of the unwritten chunk: the minimum
    if dtype == "f4":
        a[3, 3] = np.nan
    path = tmp / "w.ra"
    slices = chunk_slices(SHAPE, CHUNKS)
    skip = 7
    with rawarray.ArrayWriter(path, SHAPE, dtype, chunks=CHUNKS) as w:
        for n in rng.permutation(len(slices)):
            if n != skip:
                w[slices[n]] = a[slices[n]]
    a[slices[skip]] = 0
    assert rawarray.read(path).tobytes() == a.tobytes()
    with rawarray.open(path) as f:
        per_chunk = f.stats(per_chunk=True)["values"]
        whole = f.stats()["values"]
    for n, sl in enumerate(slices):
        if n == skip:
            assert per_chunk[n] is None
        else:
            assert_stats(per_chunk[n], numpy_stats(a[sl]), f"chunk {n}")
    assert_stats(whole, numpy_stats(a), "whole file")


def test_statistics_as_written_in_the_index_by_hand(tmp):
    """One field's record read from the entry's bytes (doc/chunked.md 5.4): head (NaN count,
    bit 63 when min and max hold values), then min and max little-endian."""
    a = np.array([3.5, np.nan, -2.0, 8.0, np.nan, np.nan], "<f8")
    path = tmp / "a.ra"
    rawarray.write(path, a, chunks=(3,))
    raw = path.read_bytes()
    entries = index_entries(path)
    assert [f[:4] for f in entries[0]["fields"]] == [(0, 1, 3, 8)]
    at, m = stats_record_at(entries[0], 0)
    head, lo, hi = struct.unpack_from("<Qdd", raw, at)
    assert (head & ((1 << 62) - 1), head >> 63, lo, hi) == (1, 1, -2.0, 3.5)
    at, m = stats_record_at(entries[1], 0)
    head, lo, hi = struct.unpack_from("<Qdd", raw, at)
    assert (head & ((1 << 62) - 1), head >> 63, lo, hi) == (2, 1, 8.0, 8.0)


# -- queries equal numpy's boolean mask ------------------------------------------------------

FILTERABLE = ["step", "body", "energy", "x", "h", "flag", "inner.a", "inner.b", "inner.deep.q"]
OPS = {"==": operator.eq, "=": operator.eq, "!=": operator.ne, "<": operator.lt,
       "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def column(arr, name):
    v = arr
    for part in name.split("."):
        v = v[part]
    return v


def literal(rng, vals):
    """A value to compare a column with: one of its values, a neighbour, a value between two
    integers, the type's extremes and past them, NaN, the signed zeros, the infinities; now and
    then a numpy scalar instead of a Python one. Float literals on float16/float32 columns are
    values of that type, so that numpy (which compares in the column's type) and the library
    (which compares exactly) mean the same."""
    kind = vals.dtype.kind
    v = vals[rng.integers(len(vals))].item()
    if kind == "b":
        out = [True, False, 0, 1, 0.5][rng.integers(5)]
    elif kind in "iu":
        info = np.iinfo(vals.dtype)
        picks = [v, v, v + 1, v - 1, info.min, info.max, info.min - 1, info.max + 1, 0, -1]
        if abs(v) < 2**52:
            picks += [v + 0.5, float(v), v - 0.25]
        out = picks[rng.integers(len(picks))]
        if isinstance(out, int) and info.min <= out <= info.max and rng.random() < 0.2:
            out = vals.dtype.type(out)
    else:
        picks = [v, v, v, float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 0, 3]
        out = picks[rng.integers(len(picks))]
        if isinstance(out, float) and rng.random() < 0.2:
            out = vals.dtype.type(out)
    return out


def atom_mask(vals, op, value):
    """numpy's mask of one ``(column, op, value)``: its comparison operators, ``in`` as any of
    ``==`` (each with numpy's exact comparison of a Python scalar), ``not in`` its negation."""
    if op in ("in", "not in"):
        m = np.zeros(len(vals), bool)
        for v in value:
            m |= vals == v
        return m if op == "in" else ~m
    return OPS[op](vals, value)


def random_atom(rng, arr):
    name = FILTERABLE[rng.integers(len(FILTERABLE))]
    vals = column(arr, name)
    op = list(OPS) + ["in", "not in"]
    op = op[rng.integers(len(op))]
    if op in ("in", "not in"):
        value = [literal(rng, vals) for _ in range(rng.integers(0, 4))]
        value = value if rng.random() < 0.7 else tuple(value)
    else:
        value = literal(rng, vals)
    return (name, op, value), atom_mask(vals, op, value)


def random_conjunction(rng, arr):
    """One to three atoms, or a between-style pair ``lo <= c <= hi`` (``<``/``>`` now and then)."""
    if rng.random() < 0.35:
        name = FILTERABLE[rng.integers(len(FILTERABLE))]
        vals = column(arr, name)
        lo, hi = sorted([literal(rng, vals), literal(rng, vals)],
                        key=lambda x: (x != x, float(x) if x == x else 0))
        lo_op, hi_op = (">=", "<=") if rng.random() < 0.7 else (">", "<")
        ts = [(name, lo_op, lo), (name, hi_op, hi)]
        return ts, atom_mask(vals, lo_op, lo) & atom_mask(vals, hi_op, hi)
    ts, mask = [], np.ones(len(arr), bool)
    for _ in range(rng.integers(1, 4)):
        t, m = random_atom(rng, arr)
        ts.append(t)
        mask &= m
    return ts, mask


def random_filters(rng, arr):
    """pyarrow's convention: a list of tuples (AND), or a list of such lists (OR of ANDs)."""
    if rng.random() < 0.6:
        return random_conjunction(rng, arr)
    out, mask = [], np.zeros(len(arr), bool)
    for _ in range(rng.integers(1, 4)):
        ts, m = random_conjunction(rng, arr)
        out.append(ts)
        mask |= m
    return out, mask


def arrow_leaf(table, name):
    """Column ``name`` (a nested field by its path) of an Arrow table as numpy values."""
    parts = name.split(".")
    col = table.column(parts[0]).combine_chunks()
    for p in parts[1:]:
        col = col.field(p)
    return col


def assert_table_is(table, want):
    """Every field of the Arrow table equals the numpy records ``want``, value for value and bit
    for bit (NaN where numpy has NaN, -0.0 where it has -0.0)."""
    assert table.num_rows == len(want)
    for name, get in leaves(want.dtype):
        w = get(want)
        col = arrow_leaf(table, name)
        if w.dtype.kind == "c":
            g = np.empty(len(w), w.dtype)
            g.real = col.field("re").to_numpy(zero_copy_only=False)
            g.imag = col.field("im").to_numpy(zero_copy_only=False)
        elif w.ndim > 1:
            g = col.flatten().to_numpy(zero_copy_only=False).reshape(w.shape)
        else:
            g = col.to_numpy(zero_copy_only=False)
        g = np.asarray(g, dtype=w.dtype)
        assert g.tobytes() == w.tobytes(), name


@pytest.fixture(scope="module")
def query_files(tmp_path_factory):
    """The same records written four ways: with statistics (the default), without, in layout
    version 1 (no statistics) and plain (not chunked)."""
    rng = np.random.default_rng(35)
    r = records(1500, rng)
    d = tmp_path_factory.mktemp("query")
    files = {
        "stats": d / "stats.ra", "no-stats": d / "nostats.ra", "v1": d / "v1.ra",
        "plain": d / "plain.ra",
    }
    rawarray.write(files["stats"], r, chunks=(64,))
    rawarray.write(files["no-stats"], r, chunks=(64,), statistics=False)
    rawarray.write(files["v1"], r, chunks=(64,), layout_version=1)
    rawarray.write(files["plain"], r)
    return r, files


@pytest.mark.parametrize("kind", ["stats", "no-stats", "v1", "plain"])
def test_read_with_filters_is_numpys_mask_for_random_predicates(query_files, kind):
    r, files = query_files
    rng = np.random.default_rng(350)
    for i in range(300):
        filters, mask = random_filters(rng, r)
        got = rawarray.read(files[kind], filters=filters)
        want = r[mask]
        assert got.dtype == r.dtype
        assert got.tobytes() == want.tobytes(), (i, filters, len(got), len(want))


@pytest.mark.parametrize("kind", ["stats", "no-stats", "v1", "plain"])
def test_to_arrow_with_filters_is_numpys_mask_for_random_predicates(query_files, kind):
    r, files = query_files
    rng = np.random.default_rng(351)
    with rawarray.open(files[kind]) as f:
        for i in range(80):
            filters, mask = random_filters(rng, r)
            try:
                assert_table_is(f.to_arrow(filters=filters), r[mask])
            except AssertionError as e:
                raise AssertionError(f"{i}: {filters}: {e}") from e


def test_batches_pandas_and_the_columns_kept_take_the_same_filters(query_files):
    r, files = query_files
    filters = [[("energy", ">", 0.0), ("body", "in", [1, 2])], [("inner.a", "<", -120)]]
    mask = ((r["energy"] > 0) & np.isin(r["body"], [1, 2])) | (r["inner"]["a"] < -120)
    want = r[mask]
    with rawarray.open(files["stats"]) as f:
        batches = list(f.to_arrow_batches(100, filters=filters))
        assert all(b.num_rows <= 100 for b in batches)
        assert_table_is(pa.Table.from_batches(batches), want)
        t = f.to_arrow(columns=["energy", "step"], filters=filters)
        assert t.column_names == ["energy", "step"]
        assert t.column("step").to_numpy().tobytes() == want["step"].tobytes()
        pytest.importorskip("pandas")
        df = f.to_pandas(filters=filters)
        assert df["step"].to_numpy().tobytes() == want["step"].tobytes()


def test_nan_semantics_are_numpys(tmp):
    r = np.zeros(6, [("x", "<f8"), ("k", "<u1")])
    r["x"] = [np.nan, -0.0, 0.0, 1.0, np.inf, np.nan]
    r["k"] = np.arange(6)
    path = tmp / "n.ra"
    rawarray.write(path, r, chunks=(2,))
    cases = [
        ([("x", "!=", 1.0)], r["x"] != 1.0),           # NaN != 1: True
        ([("x", "==", float("nan"))], r["x"] == np.nan),
        ([("x", "!=", float("nan"))], r["x"] != np.nan),
        ([("x", "<", 0.0)], r["x"] < 0.0),             # -0.0 is not below 0.0
        ([("x", "==", 0)], r["x"] == 0),               # both zeros
        ([("x", "<=", -0.0)], r["x"] <= -0.0),
        ([("x", "not in", [1.0, 0.0])], ~np.isin(r["x"], [1.0, 0.0])),  # NaN kept
        ([("x", "in", [float("nan")])], np.zeros(6, bool)),
        ([("x", ">", float("-inf"))], r["x"] > -np.inf),
    ]
    for filters, mask in cases:
        assert rawarray.read(path, filters=filters).tobytes() == r[mask].tobytes(), filters


# -- what a query reads ----------------------------------------------------------------------

def chunks_holding(r, chunk, lo, hi):
    """The chunks (of ``chunk`` records) whose sorted ``step`` values reach into ``lo ..
    hi``: numpy's minimum and maximum of each chunk's slice."""
    out = []
    for n, start in enumerate(range(0, len(r), chunk)):
        s = r["step"][start:start + chunk]
        if s.min() <= hi and s.max() >= lo:
            out.append(n)
    return out


def test_a_narrow_window_on_a_sorted_key_reads_only_its_chunks(query_files):
    r, files = query_files
    path = files["stats"]
    entries = index_entries(path)
    assert len(entries) == -(-len(r) // 64)
    for lo, hi in [(100, 109), (12, 12), (298, 400), (-5, -1)]:
        filters = [("step", ">=", lo), ("step", "<=", hi)]
        want = r[(r["step"] >= lo) & (r["step"] <= hi)]
        hit = chunks_holding(r, 64, lo, hi)
        assert len(hit) < len(entries) // 4
        cost = {"reads": len(hit), "bytes": sum(entries[n]["stored"] for n in hit)}
        with rawarray.open(path) as f:
            assert f._select(filters).tobytes() == want.tobytes()
            assert f.io_stats == cost, (lo, hi)
        with rawarray.open(path) as f:
            assert_table_is(f.to_arrow(filters=filters), want)
            assert f.io_stats == cost, (lo, hi)
        assert rawarray.read(path, filters=filters).tobytes() == want.tobytes()


def test_or_of_windows_and_in_read_only_their_chunks(query_files):
    r, files = query_files
    path = files["stats"]
    entries = index_entries(path)
    filters = [[("step", "in", [5, 250])], [("step", ">", 290), ("body", "==", 3)]]
    want = r[np.isin(r["step"], [5, 250]) | ((r["step"] > 290) & (r["body"] == 3))]
    hit = sorted(set(chunks_holding(r, 64, 5, 5) + chunks_holding(r, 64, 250, 250)
                     + chunks_holding(r, 64, 291, 10**9)))
    with rawarray.open(path) as f:
        assert f._select(filters).tobytes() == want.tobytes()
        assert f.io_stats == {"reads": len(hit), "bytes": sum(entries[n]["stored"] for n in hit)}


@pytest.mark.parametrize("kind", ["no-stats", "v1"])
def test_without_statistics_nothing_is_pruned(query_files, kind):
    r, files = query_files
    path = files[kind]
    filters = [("step", ">=", 100), ("step", "<=", 109)]
    want = r[(r["step"] >= 100) & (r["step"] <= 109)]
    with rawarray.open(path) as f:
        assert f.stats() is None
        assert f._select(filters).tobytes() == want.tobytes()
        assert f.io_stats["reads"] == -(-len(r) // 64)
    with rawarray.open(path) as f:
        assert_table_is(f.to_arrow(filters=filters), want)
        assert f.io_stats["reads"] == -(-len(r) // 64)


# -- damaged statistics ----------------------------------------------------------------------

def stats_crc(raw, entry, n):
    """An entry's statistics CRC as doc/chunked.md 5.4 defines it."""
    at, ln = entry["at"], entry["len"]
    return zlib.crc32(raw[at + 32:at + ln] + raw[at:at + 24] + struct.pack("<Q", n))


@pytest.mark.parametrize("where", ["min", "max", "head", "crc", "padding"])
@pytest.mark.filterwarnings("ignore:.*statistics fail their CRC:rawarray.RaWarning")
def test_damaged_statistics_change_no_result(query_files, tmp, where):
    """A byte flipped in the statistics of the chunk that holds a window (the flip of ``min``
    or ``max`` makes them exclude the window), their CRC not fixed up: the chunk is read as
    having none, and every query returns what it returns without statistics."""
    r, files = query_files
    path = tmp / "damaged.ra"
    raw = bytearray(files["stats"].read_bytes())
    entries = index_entries(files["stats"])
    n = 3                                          # chunk 3: records 192..256, steps 38..51
    e = entries[n]
    assert stats_crc(raw, e, n) == struct.unpack_from("<I", raw, e["at"] + 28)[0]
    at, m = stats_record_at(e, 0)                  # field 0: step, an i8
    assert m == 8
    flip = {"min": at + 8 + 7, "max": at + 8 + m + 7, "head": at + 7, "crc": e["at"] + 28,
            "padding": None}[where]
    if flip is None:                               # the body's field h (f2): 4 bytes of padding
        k = [name for name, _ in leaves(REC)].index("h")
        hat, hm = stats_record_at(e, k)
        assert hm == 2
        flip = hat + 8 + 2 * hm
    raw[flip] ^= 0x40 if where != "max" else 0xC0  # min ~2^62 above, max below every step
    path.write_bytes(bytes(raw))
    with pytest.warns(rawarray.RaWarning, match=r"chunk 3 .*statistics fail their CRC"):
        f = rawarray.open(path)
    with f:
        assert f.stats(per_chunk=True)["step"][n] is None
        assert f.stats(per_chunk=True)["step"][n + 1] is not None
        assert f.stats()["step"] == {"min": None, "max": None, "nan": None}
    window = [("step", ">=", 40), ("step", "<=", 41)]
    want = r[(r["step"] >= 40) & (r["step"] <= 41)]
    assert len(want) == 10
    assert rawarray.read(path, filters=window).tobytes() == want.tobytes()
    with rawarray.open(path) as f:
        assert_table_is(f.to_arrow(filters=window), want)
    rng = np.random.default_rng(352)
    for i in range(60):
        filters, mask = random_filters(rng, r)
        assert rawarray.read(path, filters=filters).tobytes() == r[mask].tobytes(), (i, filters)


def test_a_forged_statistics_crc_can_hide_rows_as_the_spec_says(query_files, tmp):
    """The same flip of ``min`` with the CRC recomputed: the statistics are taken, the chunk
    is skipped and its rows are missing (doc/chunked.md 5.4, "A forged statistics CRC"). This
    is what :func:`test_damaged_statistics_change_no_result` would see if the CRC were not
    checked."""
    r, files = query_files
    raw = bytearray(files["stats"].read_bytes())
    e = index_entries(files["stats"])[3]
    at, _ = stats_record_at(e, 0)
    raw[at + 8 + 7] ^= 0x40
    struct.pack_into("<I", raw, e["at"] + 28, stats_crc(raw, e, 3))
    path = tmp / "forged.ra"
    path.write_bytes(bytes(raw))
    window = [("step", ">=", 40), ("step", "<=", 41)]
    assert len(rawarray.read(path, filters=window)) == 0
    # The values themselves are unaffected: a read without filters has every row.
    assert rawarray.read(path).tobytes() == r.tobytes()


def test_filters_name_what_is_wrong(query_files, tmp):
    r, files = query_files
    path = files["stats"]
    for filters, words in [
        ([("nope", "==", 1)], "no column 'nope'"),
        ([("pos", "==", 1)], "'pos' is an array"),
        ([("inner.z", "==", 1)], "complex64"),
        ([("inner", "==", 1)], "'inner.a'"),
        ([("step", "~", 1)], "not one of"),
        ([("step", "in", 3)], "takes a collection"),
        ([("step", ">=")], "(column, op, value)"),
        (["shuffle"], "codec pipeline"),
        # pyarrow refuses these as "Malformed filters": an empty AND would keep every row.
        ([], "found an empty list"),
        ([[], [("step", "==", 3)]], "found an empty list"),
    ]:
        with pytest.raises(rawarray.RaError, match=None) as e:
            rawarray.read(path, filters=filters)
        assert words in str(e.value), (filters, str(e.value))
    a = tmp / "plain.ra"
    rawarray.write(a, np.arange(10.0), chunks=(4,))
    with pytest.raises(rawarray.RaError, match="takes record files"):
        rawarray.read(a, filters=[("values", ">", 3)])


def test_a_file_opened_before_a_flush_finds_every_record_it_holds(tmp):
    """A File opened after the first flush sees its records only, however the next flush
    re-enters the last chunk and its statistics: every window finds all of them."""
    rng = np.random.default_rng(16)
    r = records(300, rng, sorted_step=False)
    path = tmp / "g.ra"
    with rawarray.RecordWriter(path, REC, chunks=100) as w:
        w.append(r[:150])
        w.flush()
        with rawarray.open(path) as f:
            w.append(r[150:])
            w.flush()
            old = r[:150]
            for i in range(100):
                filters, mask = random_filters(rng, old)
                assert f._select(filters).tobytes() == old[mask].tobytes(), (i, filters)
    check_stats(path, r, (100,))
