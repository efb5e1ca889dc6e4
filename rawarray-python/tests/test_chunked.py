"""Chunked compressed files (flag bit 2, doc/chunked.md) through the package: ``rawarray.write``
with ``chunks=``/``codec=``/``level=``/``shuffle=``/``threads=``, ``rawarray.read`` into owned
writable arrays, ``File.chunks`` and ``File.compression``, ``f[key]`` decoding only the chunks
the key touches (counted by ``File.io_stats``), the GIL released while chunks are encoded and
decoded, and Dask and xarray taking the file's chunks.

The truth is independent of the package: numpy's own arrays and slicing, and a reader and a
writer of the layout written here from doc/chunked.md alone, whose blocks are compressed and
decompressed by the reference codecs (the ``zstandard`` package's zstd frames, the ``lz4``
package's ``lz4.block``)."""

import re
import struct
import sys
import threading
import zlib

import lz4.block
import numpy as np
import pytest
import zstandard

import rawarray
from conftest import HAND_TYPES, parse_by_hand

CODECS = {"none": 0, "lz4": 1, "zstd": 2}
FILTERS = {"none": 0, "byte": 1, "bit": 2}
SEGMENTS = 64

# Every kind of element numpy can store in a .ra file: scalars of each width, complex, bool,
# records (with sub-arrays and a nested record), raw bytes.
DTYPES = ["<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
          "<c8", "<c16", "?", "|V3",
          [("a", "<u2"), ("b", "<f8", (3,)), ("c", [("x", "i1"), ("y", "<f4")])]]


def sample(dtype, shape, seed=0):
    """Values of every byte pattern a dtype holds (bool: 0 and 1 only), deterministic."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)
    if dt.fields is None and dt.kind in "fc":
        # Smooth values with some repetition (they compress).
        parts = 2 if dt.kind == "c" else 1
        vals = np.round(np.sin(np.arange(n * parts) * 0.1) * 50) / 4
        return vals.astype(f"<f{dt.itemsize // parts}").view(dt).reshape(shape)
    return raw.view(dt).reshape(shape)


def assert_same(got, want, msg=""):
    """Equal dtype, shape and bytes (NaNs and padding-free records compare exactly)."""
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), msg
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), msg


# -- the layout by hand, from doc/chunked.md -------------------------------------------------

def shuffle(b, w):
    """Byte shuffle: plane j holds byte j of each element."""
    return np.frombuffer(b, np.uint8).reshape(-1, w).T.tobytes()


def unshuffle(b, w):
    return np.frombuffer(b, np.uint8).reshape(w, -1).T.tobytes()


def bitshuffle(b, w):
    """Bit shuffle: bit i%8 of byte i/8 of plane 8j+b is bit b of byte j of element i; the
    last k%8 elements follow unchanged."""
    k = len(b) // w
    k8 = k - k % 8
    x = np.frombuffer(b[:k8 * w], np.uint8).reshape(k8, w)
    bits = np.unpackbits(x, axis=1, bitorder="little").reshape(k8, w, 8)  # [i][j][b]
    planes = bits.transpose(1, 2, 0).reshape(8 * w, k8)
    return np.packbits(planes, axis=1, bitorder="little").tobytes() + b[k8 * w:]


def unbitshuffle(b, w):
    k = len(b) // w
    k8 = k - k % 8
    bits = np.unpackbits(np.frombuffer(b[:k8 * w], np.uint8), bitorder="little")
    planes = bits.reshape(w, 8, k8)  # [j][b][i]
    out = np.packbits(planes.transpose(2, 0, 1), axis=-1, bitorder="little")
    return out.reshape(-1).tobytes() + b[k8 * w:]


def grid_counts(dims, chunk):
    return [-(-d // c) for d, c in zip(dims, chunk)]


def chunk_slices(n, dims, chunk):
    """numpy's slices (C order: the file's dims reversed) of chunk number ``n`` (column-major
    over the grid, the first dim fastest)."""
    coords = []
    for c in grid_counts(dims, chunk):
        coords.append(n % c)
        n //= c
    lo = [i * c for i, c in zip(coords, chunk)]
    hi = [min(l + c, d) for l, c, d in zip(lo, chunk, dims)]
    return tuple(slice(a, b) for a, b in zip(reversed(lo), reversed(hi)))


def encode_by_hand(arr, chunk, codec, filt, level=3, block_bytes=None, raw_chunks=(), big=False):
    """The bytes of a chunked .ra file of the plain numpy array ``arr`` (C order; its dims are
    its shape reversed), ``chunk`` in the file's dim order, every block compressed by the
    reference codec; chunks numbered in ``raw_chunks`` are stored raw (entry flag bit 0)."""
    kinds = {v: k for k, v in HAND_TYPES.items()}
    dt = arr.dtype
    eltype, elbyte = kinds[dt.str[1:]]
    dims = list(reversed(arr.shape))
    n = len(dims)
    data = arr.astype(dt.newbyteorder(">" if big else "<"))
    count = int(np.prod(grid_counts(dims, chunk))) if dims else 1
    block_bytes = block_bytes or 64 * elbyte
    config_len = 56 + 8 * n + 8 * SEGMENTS
    head = struct.pack("<8sIIiIQQQ", b"RACHUNK1", FILTERS[filt], CODECS[codec], level, 0,
                       block_bytes, count, n) + struct.pack(f"<{n}Q", *chunk)
    config = head + struct.pack("<II", zlib.crc32(head), 0) + \
        struct.pack(f"<{SEGMENTS}Q", config_len, *([0] * (SEGMENTS - 1)))
    payloads, entries = b"", []
    at = config_len + 24 * count
    for c in range(count):
        raw = np.ascontiguousarray(data[chunk_slices(c, dims, chunk)]).tobytes()
        if c in raw_chunks:
            stored, flags = raw, 1
        else:
            table, blocks = b"", b""
            for s in range(0, len(raw), block_bytes):
                b = raw[s:s + block_bytes]
                b = shuffle(b, elbyte) if filt == "byte" else bitshuffle(b, elbyte) if filt == "bit" else b
                if codec == "zstd":
                    b = zstandard.ZstdCompressor(level=level).compress(b)
                elif codec == "lz4":
                    b = lz4.block.compress(b, store_size=False)
                blocks += b
                table += struct.pack("<QI", len(blocks), zlib.crc32(b))
            stored, flags = table + blocks, 0
        entries.append(struct.pack("<QQII", at + len(payloads), len(stored), zlib.crc32(stored), flags))
        payloads += stored
    section = config + b"".join(entries) + payloads
    header = struct.pack("<6Q", 0x7961727261776172, 4 | (1 if big else 0), eltype, elbyte,
                         len(section), n) + struct.pack(f"<{n}Q", *dims)
    return header + section


def undo_delta(b, width, big):
    """doc/chunked.md 5.2's delta undone: a running sum of the scalars (as unsigned integers of
    their width, wrapping)."""
    u = np.dtype(f"{'>' if big else '<'}u{width}")
    return np.cumsum(np.frombuffer(b, u), dtype=u).tobytes()


def undo_bytedelta(b, w, mask=0):
    """Blosc2's bytedelta undone: a running sum mod 256 within each of the ``w`` streams, or
    (doc/chunked.md 5.2) only those whose bit is set in a mask other than 0."""
    k = len(b) // w
    out = bytearray(b)
    for j in range(w):
        if mask and not (j < 32 and mask >> j & 1):
            continue
        out[j * k:(j + 1) * k] = np.cumsum(np.frombuffer(b[j * k:(j + 1) * k], np.uint8),
                                           dtype=np.uint8).tobytes()
    return bytes(out)


def decode_codec(codec, blk, want):
    """One codec payload of doc/chunked.md 5.3 decoded by the codec's own Python package."""
    if codec == 1:
        return lz4.block.decompress(blk, uncompressed_size=want)
    if codec == 2:
        return zstandard.ZstdDecompressor().decompress(blk, max_output_size=want)
    if codec == 3:
        from pcodec import standalone
        return standalone.simple_decompress(blk).tobytes()
    raise AssertionError(f"codec {codec}")


def decode_v2_by_hand(h, s):
    """decode_by_hand for a RACHUNK2 section (doc/chunked.md 5.1 to 5.5): entries with their
    own CRC, a filter pipeline undone in reverse, n-d blocks numbered column-major."""
    dims, elbyte, big = h["dims"], h["elbyte"], bool(h["flags"] & 1)
    codec, level, nf, features, s0, nd = struct.unpack_from("<IiIIQQ", s, 8)
    chunk = list(struct.unpack_from(f"<{nd}Q", s, 40))
    block = list(struct.unpack_from(f"<{nd}Q", s, 40 + 8 * nd))
    filters = [struct.unpack_from("<II", s, 40 + 16 * nd + 8 * i) for i in range(nf)]
    at = 40 + 16 * nd + 8 * nf
    (nstats,) = struct.unpack_from("<I", s, at)
    fields = [struct.unpack_from("<IIHHI", s, at + 8 + 16 * i) for i in range(nstats)]
    p = 48 + 16 * nd + 8 * nf + 16 * nstats
    assert struct.unpack_from("<I", s, p)[0] == zlib.crc32(s[:p])
    slots = [struct.unpack_from("<Q", s, p + 8 + 16 * g)[0] for g in range(SEGMENTS)]
    # Entry bytes: 32, then per statistics field 8 + round8(2 m) (m 0 for complex).
    entry_len = 32 + sum(8 + -(-2 * (0 if et == 4 else width) // 8) * 8
                         for _, _, et, width, _ in fields)
    count = int(np.prod(grid_counts(dims, chunk))) if dims else 1
    full = np.zeros(tuple(reversed(dims)) + (elbyte,), np.uint8)
    entries = []
    for c in range(count):
        g, first, cap = 0, 0, s0
        while c >= first + cap:
            g += 1
            first, cap = s0 << (g - 1), s0 << (g - 1)
        e = slots[g] + entry_len * (c - first)
        off, ln, ecrc, eflags, entry_crc = struct.unpack_from("<QQIII", s, e)
        entries.append((off, ln))
        if ln == 0:
            continue
        assert entry_crc == zlib.crc32(s[e:e + 24] + struct.pack("<Q", c)), c
        idx = chunk_slices(c, dims, chunk)
        extent = [sl.stop - sl.start for sl in reversed(idx)]          # the file's order
        stored = s[off:off + ln]
        assert zlib.crc32(stored) == ecrc, c
        if eflags & 1:
            full[idx] = np.frombuffer(stored, np.uint8).reshape(
                tuple(reversed(extent)) + (elbyte,))
            continue
        counts = [-(-x // b) for x, b in zip(extent, block)]
        nb = int(np.prod(counts))
        payload, prev = stored[12 * nb:], 0
        out = np.zeros(tuple(reversed(extent)) + (elbyte,), np.uint8)
        for b in range(nb):
            coords, rest = [], b
            for n in counts:                                             # dim 0 fastest
                coords.append(rest % n)
                rest //= n
            lo = [i * w for i, w in zip(coords, block)]
            hi = [min(l + w, x) for l, w, x in zip(lo, block, extent)]
            clip = [y - x for x, y in zip(lo, hi)]
            want = int(np.prod(clip)) * elbyte
            end, bcrc = struct.unpack_from("<QI", stored, 12 * b)
            blk = payload[prev:end]
            prev = end
            assert zlib.crc32(blk) == bcrc, (c, b)
            if features & 2:
                # Byte streams (5.3): elbyte lengths, with bit 2 elbyte CRC-32s of the streams,
                # then the streams, each the codec's payload or, at exactly its raw length, the
                # stream itself.
                m = want // elbyte
                lens = struct.unpack_from(f"<{elbyte}I", blk, 0)
                head = 8 * elbyte if features & 4 else 4 * elbyte
                crcs = struct.unpack_from(f"<{elbyte}I", blk, 4 * elbyte) if features & 4 else None
                assert sum(lens) == len(blk) - head, (c, b)
                parts, at = [], head
                for j, k in enumerate(lens):
                    part = blk[at:at + k]
                    at += k
                    if crcs is not None:
                        assert zlib.crc32(part) == crcs[j], (c, b, j)
                    parts.append(part if k == m else decode_codec(codec, part, m))
                blk = b"".join(parts)
            else:
                blk = decode_codec(codec, blk, want)
            assert len(blk) == want, (c, b)
            for fid, param in reversed(filters):
                if fid == 1:
                    blk = unshuffle(blk, elbyte)
                elif fid == 2:
                    blk = unbitshuffle(blk, elbyte)
                elif fid == 3:
                    blk = undo_delta(blk, elbyte // 2 if h["eltype"] == 4 else elbyte, big)
                elif fid == 4:
                    blk = undo_bytedelta(blk, elbyte, param)
            region = tuple(slice(x, y) for x, y in zip(reversed(lo), reversed(hi)))
            out[region] = np.frombuffer(blk, np.uint8).reshape(tuple(reversed(clip)) + (elbyte,))
        full[idx] = out
    shorthand = {(): 0, ((1, 0),): 1, ((2, 0),): 2}.get(tuple(filters))
    config = dict(filter=shorthand, filters=filters, codec=codec, level=level, chunk=chunk,
                  block=block, block_bytes=int(np.prod(block)) * elbyte, version=2)
    return full.tobytes(), config, entries


def decode_by_hand(raw_file):
    """(the plain data section in the file's byte order, config dict, index entries) of a
    chunked file's bytes, decoded with the reference codecs: RACHUNK1 (doc/chunked.md 6) or
    RACHUNK2 (5)."""
    h, s, _ = parse_by_hand(raw_file)
    assert h["flags"] & 4 and s[:8] in (b"RACHUNK1", b"RACHUNK2"), s[:8]
    if s[:8] == b"RACHUNK2":
        return decode_v2_by_hand(h, s)
    dims, elbyte = h["dims"], h["elbyte"]
    filt, codec, level, _ = struct.unpack_from("<IIiI", s, 8)
    block_bytes, s0, nd = struct.unpack_from("<QQQ", s, 24)
    chunk = list(struct.unpack_from(f"<{nd}Q", s, 48))
    (crc,) = struct.unpack_from("<I", s, 48 + 8 * nd)
    assert crc == zlib.crc32(s[:48 + 8 * nd])
    slots = struct.unpack_from(f"<{SEGMENTS}Q", s, 56 + 8 * nd)
    count = int(np.prod(grid_counts(dims, chunk))) if dims else 1
    full = np.zeros(tuple(reversed(dims)) + (elbyte,), np.uint8)
    entries = []
    for c in range(count):
        g, first, cap = 0, 0, s0
        while c >= first + cap:
            g += 1
            first, cap = s0 << (g - 1), s0 << (g - 1)
        off, ln, ecrc, eflags = struct.unpack_from("<QQII", s, slots[g] + 24 * (c - first))
        entries.append((off, ln))
        idx = chunk_slices(c, dims, chunk)
        shape = [sl.stop - sl.start for sl in idx]
        rawlen = int(np.prod(shape)) * elbyte
        if ln == 0:
            continue
        stored = s[off:off + ln]
        assert zlib.crc32(stored) == ecrc, c
        if eflags & 1:
            raw = stored
        else:
            nb = -(-rawlen // block_bytes)
            payload, raw, prev = stored[12 * nb:], b"", 0
            for b in range(nb):
                end, bcrc = struct.unpack_from("<QI", stored, 12 * b)
                blk = payload[prev:end]
                assert zlib.crc32(blk) == bcrc
                want = min(block_bytes, rawlen - b * block_bytes)
                if codec == 1:
                    blk = lz4.block.decompress(blk, uncompressed_size=want)
                elif codec == 2:
                    blk = zstandard.ZstdDecompressor().decompress(blk)
                assert len(blk) == want
                raw += unshuffle(blk, elbyte) if filt == 1 else unbitshuffle(blk, elbyte) if filt == 2 else blk
                prev = end
        full[idx] = np.frombuffer(raw, np.uint8).reshape(tuple(shape) + (elbyte,))
    config = dict(filter=filt, codec=codec, level=level, block_bytes=block_bytes, chunk=chunk,
                  version=1)
    return full.tobytes(), config, entries


# -- write, read back, as numpy and the reference codecs see it ---------------------------

CHUNK_SHAPES = [None, "ones", "bigger", "mixed"]


def numpy_chunks(kind, shape):
    """A chunk shape in numpy's order: the default, all 1, bigger than every axis, mixed."""
    if kind is None:
        return None
    if kind == "ones":
        return (1,) * len(shape)
    if kind == "bigger":
        return tuple(n + 3 for n in shape)
    return tuple(max(1, (n + 1) // 2) if i % 2 else n + 1 for i, n in enumerate(shape))


@pytest.mark.parametrize("shuffle_name", ["none", "byte", "bit"])
@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_numpy_reads_the_same_values_as_from_the_uncompressed_file(tmp, dtype, codec, shuffle_name):
    a = sample(dtype, (5, 7, 3), seed=len(str(dtype)))
    rawarray.write(tmp / "plain.ra", a)
    plain = rawarray.read(tmp / "plain.ra")
    plain_section = parse_by_hand((tmp / "plain.ra").read_bytes())[1]
    for kind in CHUNK_SHAPES:
        chunks = numpy_chunks(kind, a.shape)
        path = tmp / f"c_{kind}.ra"
        # Only codecs with levels take one (the library refuses the others' level).
        rawarray.write(path, a, chunks=chunks, codec=codec, shuffle=shuffle_name,
                       level=1 if codec == "zstd" else None)
        got = rawarray.read(path)
        assert_same(got, plain, kind)
        assert_same(got, a, kind)
        # An owned, writable array.
        assert got.flags.writeable and got.flags.owndata and got.flags.c_contiguous
        got[0, 0, 0] = got[1, 1, 1]
        f_order = rawarray.read(path, order="F")
        assert f_order.flags.f_contiguous and f_order.flags.writeable
        assert_same(f_order, a.T, kind)
        # The reference codecs decode the file to the plain file's bytes, in its settings.
        section, config, _ = decode_by_hand(path.read_bytes())
        assert section == plain_section, kind
        assert (config["codec"], config["filter"]) == (CODECS[codec], FILTERS[shuffle_name])
        with rawarray.open(path) as f:
            want = tuple(reversed(config["chunk"]))
            assert f.chunks == want and (chunks is None or f.chunks == chunks)
            assert_same(f[1:4, ::-2, 2], a[1:4, ::-2, 2], kind)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("codec", ["lz4", "zstd"])
@pytest.mark.parametrize("dtype", ["<f4", "<u2", "<c8", ">f8"])
def test_bytedelta_masks_decode_by_the_spec(tmp, dtype, codec, split):
    """bytedelta with a mask (doc/chunked.md 5.2: only the streams of its bits) decoded by hand
    from the spec equals the plain file's bytes: planes 0 and 2 (plane 0 for 2-byte elements)
    undone twice, the others once. (test_pipeline.py decodes huffman streams by the spec.)"""
    a = sample(dtype, (6, 40, 9), seed=5)
    rawarray.write(tmp / "plain.ra", a)
    plain_section = parse_by_hand((tmp / "plain.ra").read_bytes())[1]
    path = tmp / "m.ra"
    mask = 5 if np.dtype(dtype).itemsize >= 4 else 1
    pipeline = ["shuffle", ("bytedelta", mask), "bytedelta"]
    rawarray.write(path, a, chunks=(3, 16, 9), blocks=(2, 7, 9), codec=codec,
                   filters=pipeline, split=split)
    section, config, _ = decode_by_hand(path.read_bytes())
    assert config["filters"] == [(1, 0), (4, mask), (4, 0)]
    assert section == plain_section
    with rawarray.open(path) as f:
        assert f.compression["filters"] == pipeline
        np.testing.assert_array_equal(f[1:5, 3:30, 4], a[1:5, 3:30, 4])


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (9,)])
def test_scalars_and_empty_arrays(tmp, shape):
    a = sample("<f8", shape)
    rawarray.write(tmp / "c.ra", a, codec="zstd")
    got = rawarray.read(tmp / "c.ra")
    assert got.shape == a.shape and got.flags.writeable
    np.testing.assert_array_equal(got, a)
    with rawarray.open(tmp / "c.ra") as f:
        assert f.header["compressed"] and f.compression["codec"] == "zstd"
        if shape:
            np.testing.assert_array_equal(f[...], a)


def test_bfloat16_and_bool_keep_their_meaning(tmp):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    b = np.array([[1.0, -2.0, 3.140625]], dtype=ml_dtypes.bfloat16)
    rawarray.write(tmp / "b.ra", b, codec="lz4", shuffle="bit")
    got = rawarray.read(tmp / "b.ra")
    assert got.dtype == b.dtype
    np.testing.assert_array_equal(got.view(np.uint16), b.view(np.uint16))
    m = np.array([True, False, True])
    rawarray.write(tmp / "m.ra", m, codec="zstd")
    assert_same(rawarray.read(tmp / "m.ra"), m)


def test_a_chunked_section_is_never_read_as_plain_bytes(tmp):
    a = sample("<u4", (40, 50))
    rawarray.write(tmp / "c.ra", a, codec="none", chunks=(7, 9))   # stored raw, in chunks
    with rawarray.open(tmp / "c.ra") as f:
        got = f.array()
        assert got.flags.owndata and not getattr(got.base, "is_mapped", False)
        assert_same(got, a)
        raw = f._raw
        with pytest.raises(rawarray.RaError, match="stored as chunked is read whole"):
            raw.read_data(0, 8)
        with pytest.raises(rawarray.RaError, match="stored as chunked is read whole"):
            raw.read_into(0, memoryview(bytearray(8)))


# -- write options ---------------------------------------------------------------------------

def test_chunks_are_in_numpys_axis_order_and_compression_describes_the_file(tmp):
    a = sample("<f4", (6, 10, 20))
    rawarray.write(tmp / "c.ra", a, chunks=(2, 5, 20), codec="zstd", level=5, shuffle="bit")
    _, config, _ = decode_by_hand((tmp / "c.ra").read_bytes())
    assert config["chunk"] == [20, 5, 2] and config["level"] == 5      # the file's order
    with rawarray.open(tmp / "c.ra") as f:
        assert f.chunks == (2, 5, 20)
        h = parse_by_hand((tmp / "c.ra").read_bytes())[0]
        c = f.compression
        assert {k: c[k] for k in ("codec", "level", "shuffle", "filters", "chunks", "ratio")} == {
            "codec": "zstd", "level": 5, "shuffle": "bit", "filters": ["bitshuffle"],
            "chunks": (2, 5, 20), "ratio": a.nbytes / h["size"]}
        assert f.header["compressed"] and f.header["flags"] == 4
    # order="F" stores the shape as the dims: the chunks follow the array as given.
    rawarray.write(tmp / "f.ra", a, order="F", chunks=(2, 5, 20), codec="lz4")
    with rawarray.open(tmp / "f.ra") as f:
        assert f.chunks == (20, 5, 2) and f.shape == (20, 10, 6)
        np.testing.assert_array_equal(f.array(order="F"), a)
    # Plain and whole-block LZ4 files.
    rawarray.write(tmp / "p.ra", a)
    rawarray.write(tmp / "l.ra", a, compress=True)
    rawarray.write(tmp / "w.ra", a, codec="lz4-whole")
    assert (tmp / "l.ra").read_bytes() == (tmp / "w.ra").read_bytes()
    with rawarray.open(tmp / "p.ra") as p, rawarray.open(tmp / "l.ra") as l:
        assert (p.chunks, p.compression, l.chunks) == (None, None, None)
        assert l.compression["codec"] == "lz4-whole" and l.compression["chunks"] is None
        assert not p.header["compressed"] and l.header["compressed"] and l.header["flags"] == 2


def test_storage_is_the_librarys_name_for_the_flag_bits(tmp):
    """``storage`` (what the Python layer asks instead of testing flag bits) names the storage
    kind the header's flags say: bit 2 LZ4 whole, bit 4 chunked, neither plain."""
    a = sample("<f4", (6, 10))
    rawarray.write(tmp / "p.ra", a)
    rawarray.write(tmp / "l.ra", a, compress=True)
    rawarray.write(tmp / "c.ra", a, codec="zstd")
    names = {0: "plain", 2: "lz4-whole", 4: "chunked"}
    for name in ("p.ra", "l.ra", "c.ra"):
        (flags,) = struct.unpack_from("<Q", (tmp / name).read_bytes(), 8)
        with rawarray.open(tmp / name) as f:
            assert f._raw.storage == names[flags], name
            assert f.header["compressed"] == (flags != 0)
            np.testing.assert_array_equal(f.array(), a)


def test_the_storage_properties_follow_the_flag_bits(tmp):
    """``viewable`` (numpy may view the bytes as stored), ``coded`` and ``header_codec`` are the
    library's answers the Python layer asks instead of flag bits; here against the flags read
    from each file's bytes, a hand-made big-endian plain file included."""
    a = sample("<f4", (6, 10))
    rawarray.write(tmp / "p.ra", a)
    rawarray.write(tmp / "l.ra", a, compress=True)
    rawarray.write(tmp / "c.ra", a, codec="zstd")
    dims = a.shape[::-1]
    head = struct.pack("<8sQQQQQ", b"rawarray", 1, 3, 4, a.nbytes, len(dims))
    (tmp / "b.ra").write_bytes(head + struct.pack("<2Q", *dims) + a.astype(">f4").tobytes())
    for name in ("p.ra", "b.ra", "l.ra", "c.ra"):
        (flags,) = struct.unpack_from("<Q", (tmp / name).read_bytes(), 8)
        with rawarray.open(tmp / name) as f:
            r = f._raw
            assert r.viewable == (flags == 0), name
            assert r.coded == bool(flags & 6), name
            assert r.header_codec == ("lz4-whole" if flags & 2 else None), name
            np.testing.assert_array_equal(f.array(), a)


def test_chunk_settings_are_those_of_the_file_opened_even_once_rewritten_in_place(tmp):
    """The settings come from the config the library read at open: the file rewritten in
    place (``cp``) afterwards changes neither them nor the data an open reader refuses."""
    a = sample("<f4", (6, 10, 20))
    path = tmp / "c.ra"
    rawarray.write(path, a, chunks=(2, 5, 20), codec="zstd", level=5, shuffle="bit")
    rawarray.write(tmp / "other.ra", a, chunks=(3, 10, 20), codec="lz4")
    f = rawarray.open(path, mmap=False)
    before = f._raw.chunk_config()
    _, config, _ = decode_by_hand(path.read_bytes())
    assert before["chunk"] == config["chunk"] == [20, 5, 2] and before["level"] == 5
    with open(path, "r+b") as out:            # cp of the other file, in place
        out.truncate(0)
        out.write((tmp / "other.ra").read_bytes())
    assert f._raw.chunk_config() == before
    assert f.chunks == (2, 5, 20) and f.compression["codec"] == "zstd"
    with pytest.raises(rawarray.RaError, match="the file changed"):
        f.array()
    f.close()
    with rawarray.open(path) as g:
        assert g.chunks == (3, 10, 20) and g.compression["codec"] == "lz4"


def test_any_codec_keyword_selects_the_chunked_layout_and_the_defaults_are_zstd_3_byte(tmp):
    a = sample("<f8", (40, 30))
    for kw in [dict(codec="zstd"), dict(chunks=(8, 8)), dict(level=3), dict(shuffle="byte")]:
        rawarray.write(tmp / "c.ra", a, **kw)
        h = parse_by_hand((tmp / "c.ra").read_bytes())[0]
        assert h["flags"] == 4, kw
        _, config, _ = decode_by_hand((tmp / "c.ra").read_bytes())
        assert (config["codec"], config["filter"], config["level"]) == (2, 1, 3), kw
    rawarray.write(tmp / "t.ra", a, threads=1)  # threads alone selects nothing
    assert parse_by_hand((tmp / "t.ra").read_bytes())[0]["flags"] == 0


def test_threads_change_nothing_in_the_file(tmp):
    a = sample("<f4", (64, 64, 8))
    rawarray.write(tmp / "1.ra", a, chunks=(8, 16, 8), threads=1)
    rawarray.write(tmp / "2.ra", a, chunks=(8, 16, 8), threads=2)
    rawarray.write(tmp / "0.ra", a, chunks=(8, 16, 8))
    assert (tmp / "1.ra").read_bytes() == (tmp / "2.ra").read_bytes() == (tmp / "0.ra").read_bytes()


@pytest.mark.parametrize("kw, words", [
    (dict(compress=True, codec="zstd"), "choose one"),
    (dict(compress=True, chunks=(2, 2)), "choose one"),
    (dict(codec="gzip"), "codec: expected one of none, lz4, zstd, pco, huffman, lz4-whole, found \"gzip\""),
    (dict(shuffle="bytes"), "shuffle: expected one of none, byte, bit, found \"bytes\""),
    (dict(level=99), "level 99 for codec zstd: it takes -7 ..= 22"),
    (dict(chunks=(2,)), "chunks (2,): expected 2 axes, found 1"),
    (dict(chunks=(2, 0)), "at least 1"),
    (dict(chunks=(2, -1)), "at least 1"),
])
def test_bad_options_are_refused_before_anything_is_written(tmp, kw, words):
    path = tmp / "keep.ra"
    rawarray.write(path, np.arange(3.0))
    before = path.read_bytes()
    with pytest.raises(rawarray.RaError, match=re.escape(words)):
        rawarray.write(path, np.ones((4, 4)), **kw)
    assert path.read_bytes() == before


def test_params_and_dim_names_travel_with_a_chunked_file(tmp):
    a = sample("<i4", (4, 6))
    rawarray.write(tmp / "c.ra", a, codec="zstd", params={"units": "K"}, dim_names=["y", "x"])
    with rawarray.open(tmp / "c.ra") as f:
        assert f.params == {"units": "K"} and f.dim_names == ("y", "x")
        assert f.trailer_error is None
    recs = sample([("t", "<f8"), ("id", "<u4")], (50,))
    rawarray.write(tmp / "r.ra", recs, codec="lz4", chunks=(16,))
    with rawarray.open(tmp / "r.ra") as f:
        assert f.dtype == recs.dtype and f.chunks == (16,)
        assert_same(f[10:40:3], recs[10:40:3])


# -- interop with the reference codecs -------------------------------------------------------

@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("filt", ["none", "byte", "bit"])
@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_chunks_encoded_by_zstandard_and_lz4_block_decode_through_ours(tmp, codec, filt, big):
    a = sample("<f4", (5, 9, 13), seed=3)
    # Edge chunks, several blocks per chunk (block bytes not a divisor of the chunk), and one
    # chunk stored raw.
    raw = encode_by_hand(a, [6, 4, 2], codec, filt, block_bytes=7 * 4, raw_chunks=(1,), big=big)
    (tmp / "theirs.ra").write_bytes(raw)
    got = rawarray.read(tmp / "theirs.ra")
    assert got.dtype == np.dtype("<f4")
    np.testing.assert_array_equal(got, a)
    with rawarray.open(tmp / "theirs.ra") as f:
        assert f.chunks == (2, 4, 6)
        np.testing.assert_array_equal(f[3, 1:8, ::5], a[3, 1:8, ::5])
    for dtype in ["<c16", "<u2", "<i8"]:
        b = sample(dtype, (4, 11), seed=5)
        (tmp / "t.ra").write_bytes(encode_by_hand(b, [3, 3], codec, filt, big=big))
        np.testing.assert_array_equal(rawarray.read(tmp / "t.ra"), b)


@pytest.mark.parametrize("filt", ["none", "byte", "bit"])
@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_ours_decode_through_zstandard_and_lz4_block(tmp, codec, filt):
    a = sample("<f8", (40, 64, 33), seed=9)
    rawarray.write(tmp / "ours.ra", a, chunks=(40, 64, 17), codec=codec, shuffle=filt)
    section, config, entries = decode_by_hand((tmp / "ours.ra").read_bytes())
    assert section == a.tobytes()
    assert config["block_bytes"] < 40 * 64 * 17 * 8          # several blocks per chunk
    assert all(ln < 40 * 64 * 17 * 8 for _, ln in entries)   # every chunk compressed


def test_a_flipped_bit_in_a_chunk_is_an_error_naming_it(tmp):
    a = sample("<f4", (8, 8))
    raw = bytearray(encode_by_hand(a, [8, 2], "zstd", "byte"))
    _, _, entries = decode_by_hand(bytes(raw))
    off, ln = entries[2]
    start = 48 + 16
    raw[start + off + ln - 3] ^= 0x10
    (tmp / "bad.ra").write_bytes(raw)
    with pytest.raises(rawarray.RaError, match="chunk 2"):
        rawarray.read(tmp / "bad.ra")
    with rawarray.open(tmp / "bad.ra") as f:
        np.testing.assert_array_equal(f[:2], a[:2])       # chunk 0 is fine
        with pytest.raises(rawarray.RaError, match="chunk 2"):
            f[4:6]


def test_a_flipped_bit_in_a_raw_chunk_fails_a_read_of_one_element(tmp):
    # A chunk stored raw (codec "none") has only its entry's CRC: a read of one element of it
    # reads the chunk whole to check it (it once returned the flipped value).
    a = np.arange(64, dtype="<u4")
    rawarray.write(tmp / "r.ra", a, codec="none", chunks=(16,))
    raw = bytearray((tmp / "r.ra").read_bytes())
    raw[-4] ^= 1                                          # element 63, in chunk 3
    (tmp / "r.ra").write_bytes(raw)
    with rawarray.open(tmp / "r.ra") as f:
        for key in (63, slice(48, 64), [63]):
            with pytest.raises(rawarray.RaError, match="chunk 3"):
                f[key]
        np.testing.assert_array_equal(f[:48], a[:48])     # the other chunks read right


def test_an_unknown_codec_id_is_refused_naming_it(tmp):
    raw = bytearray(encode_by_hand(sample("<f4", (4, 4)), [4, 2], "zstd", "byte"))
    config = 48 + 8 * 2
    struct.pack_into("<I", raw, config + 12, 7)
    struct.pack_into("<I", raw, config + 48 + 8 * 2, zlib.crc32(bytes(raw[config:config + 48 + 8 * 2])))
    (tmp / "u.ra").write_bytes(raw)
    with pytest.raises(rawarray.RaError, match="unknown codec id 7"):
        rawarray.open(tmp / "u.ra")
    with pytest.raises(rawarray.RaError, match="unknown codec id 7"):
        rawarray.read(tmp / "u.ra")


# -- subsets: numpy's slicing, and only the chunks they touch ----------------------------------

def touched_chunk_count(shape, chunks, key):
    """Chunks a key touches: per axis, the chunks of the indices it selects (numpy tells which,
    on an array of flat indices), multiplied."""
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    sel = np.asarray(ids[key]).reshape(-1)
    if sel.size == 0:
        return 0
    coords = np.unravel_index(sel, shape)
    return int(np.prod([len(np.unique(c // k)) for c, k in zip(coords, chunks)]))


def random_key(rng, shape):
    key = []
    advanced = False
    for n in shape:
        r = rng.random()
        if r < 0.25:
            key.append(int(rng.integers(-n, n)))
        elif r < 0.4 and not advanced:
            advanced = True
            key.append(rng.integers(-n, n, size=int(rng.integers(1, 4))))
        else:
            a, b = sorted(rng.integers(-n - 2, n + 2, size=2).tolist())
            step = int(rng.choice([1, 1, 2, 3, -1, -2]))
            key.append(slice(b, a, step) if step < 0 else slice(a, b, step))
    if rng.random() < 0.2 and len(key) > 1:
        key = [Ellipsis] + key[1:]
    return tuple(key)


@pytest.mark.parametrize("seed", range(12))
def test_subsets_equal_numpys_slicing_and_read_only_the_chunks_they_touch(tmp, seed):
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 5))
    shape = tuple(int(n) for n in rng.integers(1, 13, size=ndim))
    chunks = tuple(int(c) for c in rng.integers(1, 9, size=ndim))
    dtype = ["<f4", "<i2", "<c16", [("a", "<u2"), ("b", "<f8", (2,))]][seed % 4]
    a = sample(dtype, shape, seed)
    path = tmp / "s.ra"
    rawarray.write(path, a, chunks=chunks, codec=["zstd", "lz4", "none"][seed % 3],
                   shuffle=["byte", "bit", "none"][seed % 3])
    _, _, entries = decode_by_hand(path.read_bytes())
    stored = sum(ln for _, ln in entries)
    with rawarray.open(path) as f:
        assert f.chunks == chunks
        for _ in range(25):
            key = random_key(rng, shape)
            before = f.io_stats
            assert_same(f[key], a[key], repr(key))
            after = f.io_stats
            reads = after["reads"] - before["reads"]
            # Decoded blocks are cached: a chunk read again may cost no bytes.
            nbytes = after["bytes"] - before["bytes"]
            assert reads == touched_chunk_count(shape, chunks, key), (key, shape, chunks)
            assert nbytes <= stored, key


def test_one_element_of_a_large_file_reads_one_chunk(tmp):
    a = sample("<f4", (64, 64, 64))
    rawarray.write(tmp / "big.ra", a, chunks=(16, 16, 16), codec="zstd")
    _, _, entries = decode_by_hand((tmp / "big.ra").read_bytes())
    with rawarray.open(tmp / "big.ra") as f:
        assert f[33, 7, 50] == a[33, 7, 50]
        assert f.io_stats["reads"] == 1
        assert f.io_stats["bytes"] <= max(ln for _, ln in entries)
        np.testing.assert_array_equal(f[10], a[10])          # one plane: 4 x 4 chunks
        assert f.io_stats["reads"] == 1 + 16


# -- the GIL is released while chunks are encoded and decoded ----------------------------------

def python_runs_meanwhile(call):
    """How many iterations a Python loop in another thread made while ``call()`` ran in this
    one. The loop starts waiting for the GIL just before the call (an Event, not a poll), and
    the switch interval is made long, so it only runs if the call releases the GIL: a call
    that holds it gives 0."""
    count = [0]
    go, stop = threading.Event(), threading.Event()

    def loop():
        go.wait()
        while not stop.is_set():
            count[0] += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    t = threading.Thread(target=loop)
    t.start()
    try:
        go.set()
        before = count[0]
        call()
        during = count[0] - before
    finally:
        stop.set()
        sys.setswitchinterval(old)
        t.join()
    return during


def test_encoding_and_decoding_release_the_gil(tmp):
    a = sample("<f8", (96, 128, 128))  # 12 MiB: some tens of milliseconds to code
    path = tmp / "g.ra"
    # The check itself can fail: a C loop that holds the GIL lets the other thread run 0 times.
    assert python_runs_meanwhile(lambda: sum(range(1_000_000))) == 0
    assert python_runs_meanwhile(lambda: rawarray.write(path, a, codec="zstd", level=9)) > 0
    with rawarray.open(path) as f:
        assert python_runs_meanwhile(f.array) > 0                 # the whole decode
        assert python_runs_meanwhile(lambda: f[10:90, :, 3:120]) > 0


def test_two_threads_decode_at_once(tmp):
    """While one thread decodes subsets of 256 chunks each (chunk after chunk), another reads the
    decoder's chunk count and sees it inside a subset's decode (not a multiple of 256): the two
    run at once. Were the GIL held, the count would only be seen between subsets."""
    a = sample("<f4", (64, 128, 128))
    path = tmp / "g.ra"
    rawarray.write(path, a, chunks=(1, 32, 128), codec="zstd", level=3)
    calls, per_call = 10, 64 * 4
    seen = set()
    with rawarray.open(path) as f:
        t = threading.Thread(target=lambda: [f[:, :, :100] for _ in range(calls)])
        t.start()
        while t.is_alive():
            seen.add(f.io_stats["reads"])
        t.join()
        total = f.io_stats["reads"]
    assert total == calls * per_call
    assert any(s % per_call for s in seen), sorted(seen)


# -- Dask and xarray take the file's chunks ----------------------------------------------------

def test_dask_and_xarray_take_the_files_chunks(tmp):
    da = pytest.importorskip("dask.array")
    xr = pytest.importorskip("xarray")
    a = sample("<f8", (12, 30, 20))
    path = tmp / "c.ra"
    rawarray.write(path, a, chunks=(5, 16, 20), codec="zstd", dim_names=["t", "y", "x"])
    x = rawarray.to_dask(path)
    assert x.chunksize == (5, 16, 20) and x.numblocks == (3, 2, 1)
    np.testing.assert_array_equal(x.compute(scheduler="threads"), a)
    with rawarray.open(path) as f:
        y = f.to_dask()
        assert y.chunksize == (5, 16, 20)
        z = da.from_array(f)   # dask's "auto" builds on the file's chunks: whole chunks
        assert all(c % k == 0 or c == n for c, k, n in zip(z.chunksize, f.chunks, f.shape))
        np.testing.assert_allclose(z.mean(axis=0).compute(scheduler="threads"), a.mean(axis=0))
    ds = xr.open_dataset(path, engine="rawarray")
    assert ds["c"].encoding["preferred_chunks"] == {"t": 5, "y": 16, "x": 20}
    np.testing.assert_array_equal(ds["c"].isel(t=3, x=slice(2, 9)).values, a[3, :, 2:9])
    chunked = xr.open_dataset(path, engine="rawarray", chunks={})
    assert chunked["c"].chunks == ((5, 5, 2), (16, 14), (20,))
    np.testing.assert_array_equal(chunked["c"].values, a)
    ds.close()
    chunked.close()


# -- rawarray.ArrayWriter into a chunked file ----------------------------------------------

@pytest.mark.parametrize("codec, filt", [("zstd", "byte"), ("lz4", "bit"), ("none", "none")])
def test_an_array_writer_writes_a_chunked_file_block_by_block(tmp, codec, filt):
    a = sample("<f4", (10, 12, 5), seed=3)
    path = tmp / "w.ra"
    with rawarray.ArrayWriter(path, a.shape, a.dtype, chunks=(4, 6, 5), codec=codec,
                              shuffle=filt, threads=2) as w:
        assert w.created and w.chunks == (4, 6, 5)
        assert (w.compression["codec"], w.compression["shuffle"]) == (codec, filt)
        # Blocks of whole chunks, out of order; the last chunk of axis 0 is cut at 10.
        w[8:10, 6:12] = a[8:10, 6:12]
        w[0:8, :] = a[0:8]
        w[8:10, 0:6] = a[8:10, 0:6]
    raw, config, entries = decode_by_hand(path.read_bytes())
    assert raw == a.tobytes()
    assert config["chunk"] == [5, 6, 4] and config["codec"] == CODECS[codec]
    assert config["filter"] == FILTERS[filt]
    assert all(ln > 0 for _, ln in entries)          # every chunk written, each once
    assert len({off for off, _ in entries}) == len(entries)
    assert_same(rawarray.read(path), a)


def test_an_array_writer_refuses_a_block_off_the_chunk_grid_naming_both(tmp):
    path = tmp / "w.ra"
    with rawarray.ArrayWriter(path, (10, 12), "<u2", chunks=(4, 6)) as w:
        before = path.read_bytes()
        for key in [(slice(0, 3), slice(None)), (slice(2, 6), slice(0, 6)), (1, slice(0, 6))]:
            with pytest.raises(ValueError, match=r"axis 0 runs .*chunks \(4, 6\) \(shape \(10, 12\)\)"):
                w[key] = 1
        assert path.read_bytes() == before            # nothing written, no journal entry
        w[0:4, 6:12] = 7
        with pytest.raises(rawarray.RaError, match="written"):
            w[0:4, 6:12] = 8                          # a chunk is written once
    want = np.zeros((10, 12), "<u2")
    want[0:4, 6:12] = 7
    assert_same(rawarray.read(path), want)


def test_an_array_writer_of_a_chunked_file_opens_pickles_and_checks_settings(tmp):
    import pickle

    path = tmp / "w.ra"
    a = sample("<i8", (6, 4), seed=5)
    w = rawarray.ArrayWriter(path, a.shape, a.dtype, chunks=(2, 4), codec="lz4")
    blob = pickle.dumps(w)
    w[0:2] = a[0:2]                                   # the header's size grows: same array
    w2 = pickle.loads(blob)
    assert not w2.created and w2.chunks == (2, 4)
    w2[2:4] = a[2:4]
    w2.close()
    # Racing ranks give the same settings and share the file; other settings are refused.
    w3 = rawarray.ArrayWriter(path, a.shape, a.dtype, chunks=(2, 4), codec="lz4")
    assert not w3.created
    w3[4:6] = a[4:6]
    w3.close()
    w.close()
    assert_same(rawarray.read(path), a)
    with pytest.raises(rawarray.RaError):
        rawarray.ArrayWriter(path, a.shape, a.dtype, chunks=(3, 4), codec="lz4")
    with pytest.raises(rawarray.RaError):
        rawarray.ArrayWriter(path, a.shape, a.dtype, chunks=(2, 4), codec="zstd")
    with pytest.raises(TypeError, match="chunks, codec apply only with a shape"):
        rawarray.ArrayWriter(path, chunks=(2, 4), codec="lz4")
    with pytest.raises(rawarray.RaError, match="lz4-whole"):
        rawarray.ArrayWriter(tmp / "x.ra", (4,), "<f4", codec="lz4-whole")
    assert not (tmp / "x.ra").exists()
    with rawarray.ArrayWriter(path) as w4:             # opened as it was made
        assert (w4.shape, w4.chunks, w4.compression["codec"]) == (a.shape, (2, 4), "lz4")


def test_records_carry_stream_crcs_and_their_fields_read_only_their_streams(tmp):
    """A record file written with the defaults stores byte streams with a CRC each (features
    bits 1 and 2, doc/chunked.md 5.3): decoded by hand from the spec, every stream's CRC is
    zlib's CRC-32 of its bytes and the records are numpy's; two fields read through Arrow are
    numpy's columns, read from a fraction of the stored bytes (``File.io_stats``)."""
    n = 40_000
    dt = np.dtype([("step", "<u8"), ("time", "<f8"), ("id", "<u4"), ("pos", "<f8", (3,)),
                   ("energy", "<f8")])
    rng = np.random.default_rng(7)
    r = np.zeros(n, dt)
    r["step"] = np.arange(n) // 64
    r["time"] = r["step"] * 0.01
    r["id"] = np.arange(n) % 64
    r["pos"] = rng.normal(0, 1, (n, 3))
    r["energy"] = np.sin(np.arange(n) / 500.0) + rng.normal(0, 1e-6, n)
    path = tmp / "records.ra"
    rawarray.write(path, r, chunks=(n,))
    _, section, _ = parse_by_hand(path.read_bytes())
    (features,) = struct.unpack_from("<I", section, 20)
    assert section[:8] == b"RACHUNK2" and features & 6 == 6, features
    raw, _, entries = decode_by_hand(path.read_bytes())
    assert raw == r.tobytes()
    stored = sum(ln for _, ln in entries)
    with rawarray.File(path) as f:
        assert (f.compression["split"], f.compression["stream_crcs"]) == (True, True)
        before = f.io_stats["bytes"]
        t = f.to_arrow(columns=["step", "energy"])
        read = f.io_stats["bytes"] - before
    assert np.array_equal(t.column("step").to_numpy(), r["step"])
    assert np.array_equal(t.column("energy").to_numpy(), r["energy"])
    assert 0 < read < stored / 2, (read, stored)
