"""``RaggedFile``: ``compression`` says how the values are stored, as ``File.compression`` says
it for an array, and ``mmap=False`` reads rows as copies through the descriptor (each of the
file as opened) where ``mmap=True`` gives views of the map."""

import struct

import numpy as np
import pytest

import rawarray


def base_chain(arr):
    chain, obj = [], arr
    while obj is not None:
        chain.append(obj)
        obj = getattr(obj, "base", None) if isinstance(obj, np.ndarray) else getattr(obj, "obj", None)
    return chain


def rows(n=300, seed=7, value_shape=()):
    rng = np.random.default_rng(seed)
    return [np.round(rng.standard_normal((int(k),) + value_shape), 1).astype("<f4")
            for k in rng.integers(0, 40, n)]


@pytest.mark.parametrize("mmap", [True, False])
def test_plain_values_have_no_compression(tmp, mmap):
    rawarray.write(tmp / "p.ra", rows())
    with rawarray.open(tmp / "p.ra", mmap=mmap) as f:
        assert f.compression is None
    # As a plain array's.
    rawarray.write(tmp / "a.ra", np.zeros(3))
    assert rawarray.open(tmp / "a.ra").compression is None


@pytest.mark.parametrize("codec, shuffle, level", [("zstd", "byte", 7), ("lz4", "bit", None),
                                                   ("none", "none", None)])
@pytest.mark.parametrize("value_shape", [(), (3,)])
def test_compression_is_files_answer_for_the_values(tmp, codec, shuffle, level, value_shape):
    data = rows(value_shape=value_shape)
    path = tmp / "z.ra"
    rawarray.write(path, data, codec=codec, shuffle=shuffle, level=level, chunks=500)
    # The same answer File.compression gives for the values written as an array alone.
    values = np.concatenate(data)
    rawarray.write(tmp / "v.ra", values, codec=codec, shuffle=shuffle, level=level,
                   chunks=(500,) + value_shape)
    with rawarray.open(tmp / "v.ra") as v:
        want = v.compression
    raw = path.read_bytes()
    # By hand (doc/format.md 10.2): the data section is the slot count word, the offsets'
    # slots, then the values' section: its stored bytes are what is left.
    size, ndims = struct.unpack_from("<2Q", raw, 32)
    (slots,) = struct.unpack_from("<Q", raw, 48 + 8 * ndims)
    stored = size - 8 - 8 * slots
    for mmap in (True, False):
        with rawarray.open(path, mmap=mmap) as f:
            c = f.compression
            assert set(c) == set(want) == {"codec", "level", "filters", "shuffle", "chunks",
                                           "blocks", "block_bytes", "layout_version",
                                           "statistics", "split", "stream_crcs", "rounded_to",
                                           "ratio"}
            assert (c["filters"], c["layout_version"]) == (want["filters"], 2)
            assert (c["codec"], c["shuffle"], c["chunks"]) == (codec, shuffle, (500,) + value_shape)
            assert c["level"] == want["level"]
            assert c["ratio"] == pytest.approx(values.nbytes / stored)


@pytest.mark.parametrize("compressed", [False, True])
def test_mmap_false_reads_copies_equal_to_the_maps_views(tmp, compressed):
    data = rows()
    opts = {"codec": "zstd", "chunks": 700} if compressed else {}
    rawarray.write(tmp / "r.ra", data, **opts)
    mapped, copied = rawarray.open(tmp / "r.ra"), rawarray.open(tmp / "r.ra", mmap=False)
    assert mapped._raw.is_mapped and not copied._raw.is_mapped
    for k in (0, 1, 150, len(data) - 1, -1):
        a, b = mapped[k], copied[k]
        assert np.array_equal(a, data[k]) and np.array_equal(b, data[k]) and a.dtype == b.dtype
        assert not b.flags.writeable
        assert base_chain(b)[-1].is_mapped is False
        if not compressed:
            assert base_chain(a)[-1].is_mapped
    r = copied.ragged()
    assert np.array_equal(r.offsets, mapped.ragged().offsets)
    assert all(np.array_equal(x, y) for x, y in zip(r, data))
    assert copied.longest_row() == max(len(x) for x in data)
    with pytest.raises(IndexError):
        copied[len(data)]
    # rawarray.read takes mmap too.
    back = rawarray.read(tmp / "r.ra", mmap=False)
    assert not base_chain(back.values)[-1].is_mapped
    mapped.close()
    copied.close()


def test_mmap_false_reads_text_and_finds_damage_as_the_map_does(tmp):
    rawarray.write(tmp / "t.ra", ["hé", "", "abc"])
    with rawarray.open(tmp / "t.ra", mmap=False) as f:
        assert f.is_text and [f[k] for k in range(3)] == ["hé", "", "abc"]
        assert f.ragged().to_list() == ["hé", "", "abc"]
    # A damaged offset in the middle: both readers name the row, and still read the others.
    rawarray.write(tmp / "d.ra", [np.arange(3.0), np.arange(2.0), np.arange(4.0)])
    raw = bytearray((tmp / "d.ra").read_bytes())
    with rawarray.open(tmp / "d.ra") as f:
        at = f.header["header_len"] + 8                  # offsets[1]
    raw[at:at + 8] = struct.pack("<Q", 99)
    (tmp / "d.ra").write_bytes(bytes(raw))
    for mmap in (True, False):
        with rawarray.open(tmp / "d.ra", mmap=mmap) as f:
            assert f[2].tolist() == [0, 1, 2, 3]
            with pytest.raises(rawarray.RaError, match="row 0"):
                f[0]
            with pytest.raises(rawarray.RaError):
                f.ragged()


def test_rows_of_mixed_dtypes_take_numpys_common_type(tmp):
    """What the README's ragged example avoids: a plain list among float32 arrays is float64 to
    numpy, and the rows are stored as their common type (np.result_type)."""
    rawarray.write(tmp / "m.ra", [np.array([1.5, 2.5], "<f4"), [-3.0]])
    assert rawarray.read(tmp / "m.ra").dtype == np.float64
    rawarray.write(tmp / "f.ra", [np.array([1.5, 2.5], "<f4"), np.array([-3.0], "<f4")])
    assert rawarray.read(tmp / "f.ra").dtype == np.float32
    rawarray.write(tmp / "d.ra", rawarray.Ragged([[1.5, 2.5], [-3.0]], dtype="<f4"))
    assert rawarray.read(tmp / "d.ra").dtype == np.float32


# The hostile files of test_ragged.py, read with positioned reads: each an error that names
# what is wrong (the same words as the mapped reader's), never a crash.
POSITIONED_CHILD = """
import sys, rawarray
try:
    with rawarray.open(sys.argv[1], mmap=False) as f:
        for k in range(min(len(f), 4)):
            f[k]
    rawarray.read(sys.argv[1], mmap=False).to_list()
    print("READ")
except rawarray.RaError as e:
    print("RaError", e)
"""


def hostile():
    from test_ragged import hostile_ragged_files
    return list(hostile_ragged_files())


@pytest.mark.parametrize("name,raw,why", hostile(), ids=[n for n, _, _ in hostile()])
def test_hostile_ragged_files_read_with_copies_are_errors_not_crashes(tmp, name, raw, why):
    import subprocess
    import sys
    path = tmp / "h.ra"
    path.write_bytes(raw)
    out = subprocess.run([sys.executable, "-c", POSITIONED_CHILD, str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, (name, out.returncode, out.stderr[-2000:])
    line = out.stdout.strip()
    assert line.startswith("RaError"), (name, line, out.stderr[-2000:])
    assert why in line, (name, line)            # the mapped reader's words


@pytest.mark.parametrize("mmap", [True, False])
def test_compression_and_warnings_are_those_of_the_file_opened(tmp, mmap):
    """From the values' config and index the library read at open: the file rewritten in place
    afterwards changes neither, where rows then raise the error that the file changed."""
    data = rows()
    path = tmp / "z.ra"
    rawarray.write(path, data, codec="zstd", shuffle="byte", chunks=500)
    rawarray.write(tmp / "o.ra", data, codec="lz4", shuffle="bit", chunks=300)
    f = rawarray.open(path, mmap=mmap)
    before = f.compression
    assert (before["codec"], before["chunks"]) == ("zstd", (500,))
    assert f._raw.warnings == []
    with open(path, "r+b") as out:            # cp of the other file, in place
        out.truncate(0)
        out.write((tmp / "o.ra").read_bytes())
    assert f.compression == before and f._raw.chunk_config()[0]["codec"] == "zstd"
    assert f._raw.warnings == []
    with pytest.raises(rawarray.RaError, match="the file changed"):
        f[1]
    f.close()
    with rawarray.open(path, mmap=mmap) as g:
        assert (g.compression["codec"], g.compression["chunks"]) == ("lz4", (300,))
        assert all(np.array_equal(g[k], data[k]) for k in (0, 150, len(data) - 1))


def test_a_damaged_schema_leaves_the_values_to_the_header_as_for_an_array(tmp):
    """One reading of the element for every kind of file (the package's ``element_kind``): a
    trailer whose schema does not describe the header's element (int16 for float32 values)
    leaves them to the header, for a ragged file as for an array."""
    from test_ragged import ragged_by_hand, trailer_block
    from conftest import MAGIC
    values = np.array([1.5, 2.5, -3.0], "<f4")
    damaged = ('{"version":1,"params":null,"schema":{"kind":"scalar","eltype":"int",'
               '"elbyte":2}}')
    body = ragged_by_hand(3, 4, [], [0, 2, 3], values.tobytes())
    (tmp / "r.ra").write_bytes(body + trailer_block(damaged, len(body)))
    array = struct.pack("<6Q", MAGIC, 0, 3, 4, values.nbytes, 1) + struct.pack("<Q", 3)
    array += values.tobytes()
    (tmp / "a.ra").write_bytes(array + trailer_block(damaged, len(array)))
    a = rawarray.read(tmp / "a.ra")
    assert a.dtype == np.float32 and a.tolist() == values.tolist()
    for mmap in (True, False):
        with rawarray.open(tmp / "r.ra", mmap=mmap) as f:
            assert f.dtype == np.float32
            assert f[0].tolist() == [1.5, 2.5] and f[1].tolist() == [-3.0]
