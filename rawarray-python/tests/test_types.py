"""Every element type, byte order, compression and 0 to 6 dims: what rawarray.write puts on disk
is checked byte by byte against a header built by hand and numpy's own bytes, and rawarray.read
gives the array back, in C and in Fortran order."""

import json
import struct
import warnings

import numpy as np
import pytest

import rawarray
from conftest import make_ra, numpy_view_by_hand, parse_by_hand

DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
CODES = {"i": 1, "u": 2, "f": 3, "c": 4}
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (1, 2, 2, 1, 3), (2, 1, 2, 1, 2, 2), (0, 3)]


def values(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    k = np.arange(n)
    if dtype[0] == "c":
        return (k * 0.5 - 1j * k).astype(dtype).reshape(shape)
    if dtype[0] == "f":
        return (k * 0.25 - 3).astype(dtype).reshape(shape)
    return (k * 37 + 11).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_write_is_numpys_bytes_with_a_hand_built_header(tmp, dtype, shape):
    a = values(dtype, shape)
    path = tmp / "a.ra"
    rawarray.write(path, a)
    raw = path.read_bytes()
    dims = list(shape[::-1])
    want = make_ra(CODES[dtype[0]], a.dtype.itemsize, dims, a.astype("<" + dtype).tobytes())
    assert raw == want
    back = rawarray.read(path)
    assert back.shape == shape and back.dtype == np.dtype("<" + dtype)
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("dtype", ["i2", "f4", "f8", "c16", "u8"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_fortran_order_stores_the_shape_as_dims(tmp, dtype, shape):
    a = values(dtype, shape)
    path = tmp / "f.ra"
    rawarray.write(path, a, order="F")
    h, data, _ = parse_by_hand(path.read_bytes())
    assert h["dims"] == list(shape)
    assert data == np.asfortranarray(a).tobytes(order="F")
    back = rawarray.read(path, order="F")
    assert back.flags.f_contiguous and back.shape == shape
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("dtype", ["i2", "u4", "f8", "c8", "f2"])
def test_big_endian_and_noncontiguous_inputs_are_stored_little_endian(tmp, dtype):
    a = values(dtype, (4, 6))
    for variant in (a.astype(">" + dtype), a[:, ::2], a.T, a.astype(">" + dtype)[::-1]):
        path = tmp / "v.ra"
        rawarray.write(path, variant)
        h, data, _ = parse_by_hand(path.read_bytes())
        assert h["flags"] == 0
        assert data == np.ascontiguousarray(variant, dtype="<" + dtype).tobytes()
        np.testing.assert_array_equal(rawarray.read(path), variant)


@pytest.mark.parametrize("dtype", ["u1", "i4", "f4", "c16"])
@pytest.mark.parametrize("shape", [(30, 20), (3, 4, 5), ()])
def test_compressed_files_are_lz4_blocks_liblz4_decodes(tmp, dtype, shape):
    a = values(dtype, shape)
    path = tmp / "z.ra"
    rawarray.write(path, a, compress=True)
    h, _, _ = parse_by_hand(path.read_bytes())
    assert h["flags"] == 2
    np.testing.assert_array_equal(numpy_view_by_hand(path), a)  # liblz4 through python-lz4
    np.testing.assert_array_equal(rawarray.read(path), a)
    np.testing.assert_array_equal(rawarray.read(path, order="F"), a.T)


@pytest.mark.parametrize("dtype", ["i2", "f8", "c8", "u4"])
def test_big_endian_files_read_correctly(tmp, dtype):
    a = values(dtype, (3, 5))
    path = tmp / "be.ra"
    path.write_bytes(make_ra(CODES[dtype[0]], a.dtype.itemsize, [5, 3], a.astype(">" + dtype).tobytes(), flags=1))
    back = rawarray.read(path)
    np.testing.assert_array_equal(back, a)
    with rawarray.open(path) as f:
        np.testing.assert_array_equal(f[1], a[1])
        np.testing.assert_array_equal(f[0:2], a[0:2])


@pytest.mark.parametrize("dtype", ["i2", "f8", "c8"])
def test_big_endian_blocks_are_read_by_the_subset_reader(tmp, dtype):
    a = values(dtype, (4, 3, 5))
    path = tmp / "be3.ra"
    path.write_bytes(make_ra(CODES[dtype[0]], a.dtype.itemsize, [5, 3, 4], a.astype(">" + dtype).tobytes(), flags=1))
    with rawarray.open(path) as f:
        for key in [2, -1, (1, 2), (slice(1, 3), 0, slice(None)), (slice(None), slice(1, None), 4),
                    (3, 2, 1), slice(0, 0), (slice(None), slice(2, 1))]:
            got = f[key]
            np.testing.assert_array_equal(got, a[key])
            assert got.shape == a[key].shape
            assert not got.flags.writeable
        np.testing.assert_array_equal(f[::2], a[::2])          # other keys: the whole decode
        np.testing.assert_array_equal(f[..., 1], a[..., 1])
        with pytest.raises(IndexError, match="axis 1"):
            f[0, 3]


@pytest.mark.parametrize("flags", [0, 1])
def test_keys_after_the_first_axis_index_the_axes_after_it(tmp, flags):
    a = values("f4", (4, 3, 5))
    path = tmp / "k.ra"
    data = a.astype(">f4" if flags else "<f4").tobytes()
    path.write_bytes(make_ra(3, 4, [5, 3, 4], data, flags=flags))
    with rawarray.open(path) as f:
        for key in [(slice(1, 3), 2), (..., 1), (slice(None, None, 2), 1), (1, ..., 2),
                    (slice(0, 2), slice(None), slice(1, 4)), (-1, 0)]:
            np.testing.assert_array_equal(f[key], a[key], err_msg=repr(key))


def trailer_json(trailing: bytes):
    """The JSON of the trailer block at the end of a file's trailing bytes, read by hand."""
    assert trailing[-8:] == b"RATRAILR"
    (length,) = struct.unpack_from("<Q", trailing, len(trailing) - 16)
    end = len(trailing) - 28
    return json.loads(trailing[end - length:end])


BOOL_SCALAR = {"kind": "scalar", "eltype": "uint", "elbyte": 1, "logical": "bool"}


def test_bool_is_stored_as_uint8_marked_bool_and_reads_back_as_bool(tmp):
    a = np.array([[True, False, True], [False, False, True]])
    rawarray.write(tmp / "b.ra", a)
    h, data, trailing = parse_by_hand((tmp / "b.ra").read_bytes())
    assert (h["eltype"], h["elbyte"], h["dims"], data) == (2, 1, [3, 2], b"\x01\x00\x01\x00\x00\x01")
    t = trailer_json(trailing)
    # numpy_descr stays the stored dtype, as readers that predate the marker compute it.
    assert t["schema"] == BOOL_SCALAR and t["numpy_descr"] == "|u1"
    back = rawarray.read(tmp / "b.ra")
    assert back.dtype == np.dtype("?")
    np.testing.assert_array_equal(back, a)
    # Without the marker, the same bytes are numbers.
    (tmp / "u.ra").write_bytes(make_ra(2, 1, [3, 2], data))
    assert rawarray.read(tmp / "u.ra").dtype == np.dtype("|u1")


def test_structured_bool_fields_read_back_as_bool(tmp):
    dt = np.dtype([("ok", "?"), ("x", "<f4"), ("flags", "?", (3,))])
    a = np.zeros(2, dtype=dt)
    a["ok"] = [True, False]
    a["x"] = [1.5, -2.0]
    a["flags"] = [[True, False, True], [False, True, False]]
    rawarray.write(tmp / "r.ra", a)
    h, data, trailing = parse_by_hand((tmp / "r.ra").read_bytes())
    assert (h["eltype"], h["elbyte"], data) == (0, 8, a.tobytes())
    fields = trailer_json(trailing)["schema"]["fields"]
    assert fields[0] == {"name": "ok", "offset": 0, "layout": BOOL_SCALAR}
    assert fields[2]["layout"] == {"kind": "array", "len": 3, "item": BOOL_SCALAR}
    back = rawarray.read(tmp / "r.ra")
    assert back.dtype == dt
    np.testing.assert_array_equal(back, a)
    # A record writer keeps the marker too.
    with rawarray.RecordWriter(tmp / "w.ra", dt) as w:
        w.append(a)
    assert rawarray.read(tmp / "w.ra").dtype == dt



def test_a_bool_byte_other_than_0_or_1_is_an_error_naming_the_field(tmp):
    # The bytes as a writer that broke the marker's rule would leave them: a 2 where a bool is.
    a = np.array([True, False, True])
    rawarray.write(tmp / "b.ra", a)
    raw = bytearray((tmp / "b.ra").read_bytes())
    h, _, _ = parse_by_hand(bytes(raw))
    at = 48 + 8 * len(h["dims"]) + 1
    assert raw[at] == 0
    raw[at] = 2
    (tmp / "b.ra").write_bytes(bytes(raw))
    for mmap in (True, False):
        with pytest.raises(rawarray.RaError, match=r"the array is bool, but holds the byte 2"):
            rawarray.read(tmp / "b.ra", mmap=mmap)
        with rawarray.open(tmp / "b.ra", mmap=mmap) as f:
            # The file is checked whole before a first value is handed out: a scalar read of
            # the bad byte would otherwise be numpy's plain True.
            for key in (1, 0, slice(0, 2)):
                with pytest.raises(rawarray.RaError, match="byte 2"):
                    f[key]
    dt = np.dtype([("x", "<f4"), ("ok", "?")])
    r = np.zeros(2, dtype=dt)
    rawarray.write(tmp / "r.ra", r)
    raw = bytearray((tmp / "r.ra").read_bytes())
    h, _, _ = parse_by_hand(bytes(raw))
    raw[48 + 8 * len(h["dims"]) + 5 + 4] = 7  # record 1's "ok"
    (tmp / "r.ra").write_bytes(bytes(raw))
    with pytest.raises(rawarray.RaError, match=r"field 'ok' is bool, but holds the byte 7"):
        rawarray.read(tmp / "r.ra")

def test_bfloat16_through_ml_dtypes_and_raw_bits_without(tmp, monkeypatch):
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is in tests/python/requirements.txt")
    bits = np.array([0x3F80, 0xC000, 0x4049], dtype="<u2")  # 1.0, -2.0, 3.140625
    path = tmp / "bf.ra"
    path.write_bytes(make_ra(5, 2, [3], bits.tobytes()))
    a = rawarray.read(path)
    assert a.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(a.astype(np.float32), [1.0, -2.0, 3.140625])
    rawarray.write(tmp / "bf2.ra", a)
    assert (tmp / "bf2.ra").read_bytes() == path.read_bytes()
    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)
    with pytest.warns(rawarray.RaWarning, match="ml_dtypes"):
        raw = rawarray.read(path)
    assert raw.dtype == np.dtype("<u2")
    np.testing.assert_array_equal(raw, bits)


def test_types_numpy_lacks_come_back_as_bytes_or_pairs(tmp):
    # 128-bit integers: raw bytes V16; complex of f16: a (re, im) pair of float16.
    i128 = b"".join((k * 1000003).to_bytes(16, "little", signed=True) for k in range(-2, 3))
    (tmp / "i128.ra").write_bytes(make_ra(1, 16, [5], i128))
    a = rawarray.read(tmp / "i128.ra")
    assert a.dtype == np.dtype("V16") and a.shape == (5,)
    assert [int.from_bytes(v.tobytes(), "little", signed=True) for v in a] == [k * 1000003 for k in range(-2, 3)]
    c32 = np.array([1.5, -2.0, 0.25, 8.0], dtype="<f2")
    (tmp / "c32.ra").write_bytes(make_ra(4, 4, [2], c32.tobytes()))
    z = rawarray.read(tmp / "c32.ra")
    assert z.dtype.names == ("re", "im")
    np.testing.assert_array_equal(z["re"], [1.5, 0.25])
    np.testing.assert_array_equal(z["im"], [-2.0, 8.0])
    # Raw elements write back as what they were: eltype 0 of their size.
    rawarray.write(tmp / "v.ra", a)
    h, data, _ = parse_by_hand((tmp / "v.ra").read_bytes())
    assert (h["eltype"], h["elbyte"], data) == (0, 16, i128)


def test_nested_ra_elements_decode_with_loads(tmp):
    inner = [np.arange(3, dtype="<f4") + 10 * i for i in range(2)]
    blobs = []
    for i, arr in enumerate(inner):
        p = tmp / f"inner{i}.ra"
        rawarray.write(p, arr)
        blobs.append(p.read_bytes())
    assert len(blobs[0]) == len(blobs[1])
    (tmp / "outer.ra").write_bytes(make_ra(0, len(blobs[0]), [2], b"".join(blobs)))
    outer = rawarray.read(tmp / "outer.ra")
    assert outer.dtype == np.dtype(f"V{len(blobs[0])}")
    for i in range(2):
        np.testing.assert_array_equal(rawarray.loads(outer[i]), inner[i])


# A 1-d array of text is written as ragged text (test_ragged.py); in 2-d it has no .ra type.
@pytest.mark.parametrize("bad", [np.array([["a", "b"]]), np.array([object()]), np.array([1, 2], dtype="M8[D]")])
def test_unstorable_dtypes_are_refused_by_name(tmp, bad):
    with pytest.raises(rawarray.RaError, match=str(bad.dtype).replace("[", r"\[").replace("]", r"\]")):
        rawarray.write(tmp / "x.ra", bad)
    assert not (tmp / "x.ra").exists()


def test_padded_structured_dtypes_are_refused_naming_the_padding(tmp):
    dt = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"], "offsets": [0, 8], "itemsize": 16})
    with pytest.raises(rawarray.RaError, match="padding"):
        rawarray.write(tmp / "p.ra", np.zeros(3, dt))
