"""Filter pipelines, n-d blocks, the ``pco`` codec and ``bitround`` from Python (issue 34), and
the ``RaWarning`` of a ``RACHUNK1`` index entry past the committed size (issue 33, item 2).

The truth every test checks against is independent of the package: the config's bytes parsed
here from doc/chunked.md's tables (filter ids, block shapes), numpy's own values and bit
arithmetic, numcodecs' ``BitRound`` and the ``pcodec`` package decoding our blocks."""

import struct
import warnings
import zlib

import numpy as np
import pytest
import zstandard

import rawarray
from conftest import parse_by_hand

# doc/chunked.md 5.2 and 5.3, written here from the spec, not from the package.
FILTER_IDS = {"shuffle": 1, "bitshuffle": 2, "delta": 3, "bytedelta": 4, "bitround": 5}
CODEC_IDS = {"none": 0, "lz4": 1, "zstd": 2, "pco": 3, "huffman": 4}
# Mantissa bits and the smallest normal exponent of each float (IEEE 754).
MANTISSA = {"f2": 10, "f4": 23, "f8": 52}
EMIN = {"f2": -14, "f4": -126, "f8": -1022}
UINT = {"f2": np.uint16, "f4": np.uint32, "f8": np.uint64}

NUMBERS = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]
RECORD = np.dtype([("step", "<u4"), ("pos", "<f8", (3,)), ("tag", "u1", (3,))])


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def config_v2(raw_file: bytes) -> dict:
    """The ``RACHUNK2`` config of a chunked file's bytes, parsed by hand (doc/chunked.md 5.1)."""
    h, s, _ = parse_by_hand(raw_file)
    assert h["flags"] & 4 and s[:8] == b"RACHUNK2", s[:8]
    codec, level, nf, features, s0, nd = struct.unpack_from("<IiIIQQ", s, 8)
    chunk = list(struct.unpack_from(f"<{nd}Q", s, 40))
    block = list(struct.unpack_from(f"<{nd}Q", s, 40 + 8 * nd))
    filters = [struct.unpack_from("<II", s, 40 + 16 * nd + 8 * i) for i in range(nf)]
    (nstats,) = struct.unpack_from("<I", s, 40 + 16 * nd + 8 * nf)
    p = 48 + 16 * nd + 8 * nf + 16 * nstats
    (crc,) = struct.unpack_from("<I", s, p)
    assert crc == zlib.crc32(s[:p])
    (segment0,) = struct.unpack_from("<Q", s, p + 8)
    return dict(header=h, section=s, codec=codec, level=level, filters=filters,
                features=features, s0=s0, chunk=chunk, block=block, segment0=segment0,
                section_at=48 + 8 * nd)


def sample(dtype, shape, seed=0):
    """Values of every kind a dtype holds: smooth runs and noise, extremes for integers."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = (np.cumsum(rng.integers(-3, 4, n)) % 200).astype(dt)
        a[::17] = info.max
        a[5::23] = info.min
    elif dt.kind == "f":
        a = (np.sin(np.arange(n) / 7.0) * 1000 + rng.normal(0, 1, n)).astype(dt)
        a[3] = np.inf
        a[4] = -0.0
    elif dt.kind == "c":
        a = (np.cos(np.arange(n) / 5.0) + 1j * rng.normal(0, 1, n)).astype(dt)
    elif dt == np.dtype(bool):
        a = rng.integers(0, 2, n).astype(bool)
    else:
        a = np.zeros(n, dt)
        a["step"] = np.arange(n)
        a["pos"] = rng.normal(0, 1, (n, 3))
        a["tag"] = np.arange(3 * n).reshape(n, 3) % 251
    return a.reshape(shape)


def same_bits(got, want):
    """Equal bit for bit (NaN payloads and -0.0 included)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


# -- the pipeline, as written and as described -----------------------------------------------

def test_write_stores_the_pipeline_in_order_with_blocks_in_numpys_order(tmp):
    a = sample("<f4", (6, 10, 20))
    rawarray.write(tmp / "p.ra", a, chunks=(3, 10, 20), blocks=(1, 5, 8), codec="zstd", level=7,
                   filters=[("bitround", 10), "shuffle", "bytedelta"])
    raw = (tmp / "p.ra").read_bytes()
    c = config_v2(raw)
    assert (c["codec"], c["level"]) == (CODEC_IDS["zstd"], 7)
    assert c["filters"] == [(FILTER_IDS["bitround"], 10), (FILTER_IDS["shuffle"], 0),
                            (FILTER_IDS["bytedelta"], 0)]
    assert c["chunk"] == [20, 10, 3] and c["block"] == [8, 5, 1]      # the file's order
    # The trailer says the data were rounded, and to how many bits (doc/chunked.md 5.2).
    _, _, trailing = parse_by_hand(raw)
    assert b'"lossy":{"bitround":10}' in trailing
    with rawarray.open(tmp / "p.ra") as f:
        comp = f.compression
        assert comp == {
            "codec": "zstd", "level": 7,
            "filters": [("bitround", 10), "shuffle", "bytedelta"], "shuffle": None,
            "chunks": (3, 10, 20), "blocks": (1, 5, 8), "block_bytes": 1 * 5 * 8 * 4,
            "layout_version": 2, "statistics": True, "split": False, "stream_crcs": False,
            "rounded_to": 10,
            "ratio": a.nbytes / c["header"]["size"],
        }
        # What compression says is what write takes: the same file again.
        kw = {k: comp[k] for k in ("codec", "level", "filters", "chunks", "blocks")}
    rawarray.write(tmp / "again.ra", rawarray.read(tmp / "p.ra"), **kw)
    assert config_v2((tmp / "again.ra").read_bytes())["filters"] == c["filters"]


def test_shuffle_stays_the_one_filter_shorthand(tmp):
    a = sample("<i4", (50, 40))
    for shuffle, filters in [("byte", [(1, 0)]), ("bit", [(2, 0)]), ("none", [])]:
        rawarray.write(tmp / "s.ra", a, shuffle=shuffle)
        assert config_v2((tmp / "s.ra").read_bytes())["filters"] == filters
        with rawarray.open(tmp / "s.ra") as f:
            assert f.compression["shuffle"] == shuffle
            assert f.compression["filters"] == [n for n, i in FILTER_IDS.items()
                                                if (i, 0) in filters]
        np.testing.assert_array_equal(rawarray.read(tmp / "s.ra"), a)
    with pytest.raises(rawarray.RaError, match="shuffle= is the one-filter shorthand"):
        rawarray.write(tmp / "x.ra", a, shuffle="byte", filters=["delta"])
    assert not (tmp / "x.ra").exists()


def test_layout_version_1_writes_rachunk1_and_statistics_false_leaves_them_out(tmp):
    a = sample("<f8", (30, 20))
    rawarray.write(tmp / "v1.ra", a, layout_version=1, chunks=(10, 20))
    _, s, _ = parse_by_hand((tmp / "v1.ra").read_bytes())
    assert s[:8] == b"RACHUNK1"
    with rawarray.open(tmp / "v1.ra") as f:
        c = f.compression
        assert (c["layout_version"], c["blocks"], c["statistics"]) == (1, None, False)
        assert c["filters"] == ["shuffle"] and c["shuffle"] == "byte"
    np.testing.assert_array_equal(rawarray.read(tmp / "v1.ra"), a)
    rawarray.write(tmp / "nostats.ra", a, statistics=False)
    assert config_v2((tmp / "nostats.ra").read_bytes())["features"] & 1 == 0
    rawarray.write(tmp / "stats.ra", a, codec="zstd")
    assert config_v2((tmp / "stats.ra").read_bytes())["features"] & 1 == 1
    with rawarray.open(tmp / "nostats.ra") as f:
        assert f.compression["statistics"] is False
    # RACHUNK1 has one shuffle at most and no blocks: refused naming the setting.
    with pytest.raises(rawarray.RaError, match="filters.*layout version 1"):
        rawarray.write(tmp / "x.ra", a, layout_version=1, filters=["shuffle", "bytedelta"])
    with pytest.raises(rawarray.RaError, match="blocks"):
        rawarray.write(tmp / "x.ra", a, layout_version=1, blocks=(5, 5))
    assert not (tmp / "x.ra").exists()


# -- round trips -----------------------------------------------------------------------------

def pipelines_for(dtype):
    """Three-filter lossless pipelines that take the dtype (doc/chunked.md 5.2's domains)."""
    if np.dtype(dtype).kind in "iufc":
        return [["delta", "shuffle", "bytedelta"], ["shuffle", "bytedelta", "bitshuffle"]]
    return [["shuffle", "bytedelta", "bitshuffle"]]


def codecs_for(dtype):
    dt = np.dtype(dtype)
    pco = dt.kind in "iuf" and dt.itemsize in (2, 4, 8)
    return ["zstd", "lz4", "none", "huffman"] + (["pco"] if pco else [])


CASES = [(dt, p, c) for dt in NUMBERS + ["bool", "record"]
         for p in pipelines_for(RECORD if dt == "record" else dt)
         for c in codecs_for(RECORD if dt == "record" else dt)]


@pytest.mark.parametrize("dtype, pipeline, codec", CASES)
def test_every_dtype_round_trips_through_a_three_filter_pipeline(tmp, dtype, pipeline, codec):
    dt = RECORD if dtype == "record" else np.dtype(dtype)
    # Edge chunks (13 = 5 + 5 + 3, 37 = 16 + 16 + 5) and edge blocks inside them (5 = 2 + 2 + 1,
    # 16 = 7 + 7 + 2).
    a = sample(dt, (13, 37))
    rawarray.write(tmp / "a.ra", a, chunks=(5, 16), blocks=(2, 7), filters=pipeline, codec=codec)
    c = config_v2((tmp / "a.ra").read_bytes())
    assert c["filters"] == [(FILTER_IDS[n], 0) for n in pipeline] and c["block"] == [7, 2]
    same_bits(rawarray.read(tmp / "a.ra"), a)
    with rawarray.open(tmp / "a.ra", mmap=False) as f:
        assert f.compression["filters"] == pipeline and f.compression["codec"] == codec
        same_bits(f[3:11, 5:30], a[3:11, 5:30])
        same_bits(f[12], a[12])
        same_bits(f[:, 36], a[:, 36])


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "c8", "c16"])
def test_bitround_then_two_filters_stores_numpys_rounding(tmp, dtype):
    a = sample(dtype, (9, 31))
    keep = 7
    rawarray.write(tmp / "r.ra", a, filters=[("bitround", keep), "shuffle", "bytedelta"],
                   chunks=(4, 16), blocks=(3, 5))
    got = rawarray.read(tmp / "r.ra")
    # A complex rounds each part: numpy's view of its parts as floats.
    dt = np.dtype(dtype)
    real = dt if dt.kind == "f" else np.dtype(f"<f{dt.itemsize // 2}")
    same_bits(got.view(real), bitround_by_hand(a.view(real), keep))
    with rawarray.open(tmp / "r.ra") as f:
        assert f.compression["rounded_to"] == keep


# -- bitround against numpy ------------------------------------------------------------------

def round_nearest_bits(x: np.ndarray, keep: int) -> np.ndarray:
    """numcodecs' BitRound on the bits of ``x`` (round to nearest, ties to even), in numpy:
    the unsigned bits, which may carry into the exponent (and past infinity)."""
    code = x.dtype.str[1:]
    u = UINT[code]
    b = x.view(u)
    drop = MANTISSA[code] - keep
    if drop == 0:
        return b.copy()
    mask = u(~np.array(0, u) >> u(drop) << u(drop))
    with np.errstate(over="ignore"):
        return (b + ((b >> u(drop)) & u(1)) + u((1 << (drop - 1)) - 1)) & mask


def bitround_by_hand(x: np.ndarray, keep: int) -> np.ndarray:
    """doc/chunked.md 5.2's bitround in numpy: numcodecs' rounding; NaN and infinities kept;
    a finite value that would round to infinity truncated instead."""
    code = x.dtype.str[1:]
    u = UINT[code]
    drop = MANTISSA[code] - keep
    b = x.view(u)
    rounded = round_nearest_bits(x, keep)
    truncated = b & u(~np.array(0, u) >> u(drop) << u(drop))
    out = np.where(np.isfinite(rounded.view(x.dtype)), rounded, truncated)
    return np.where(np.isfinite(x), out, b).view(x.dtype)


def adversarial(code: str, n: int = 4000, seed: int = 1) -> np.ndarray:
    """Random floats of every exponent, then the values bitround can get wrong: subnormals,
    zeros of both signs, infinities, NaNs with payloads, the largest finite, ties."""
    u = UINT[code]
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True)
    x = bits.view(np.dtype(code))
    info = np.finfo(np.dtype(code))
    special = np.array([0.0, -0.0, np.inf, -np.inf, info.max, -info.max, info.tiny,
                        info.tiny / 3, -info.tiny / 7, info.smallest_subnormal, 1.0, -1.5],
                       dtype=code)
    m = MANTISSA[code]
    nan_payloads = (np.array([0x7, 0x5A5, 1 << (m - 2), (1 << m) - 1], dtype=np.uint64)
                    % (1 << m)).astype(u) | np.full(4, np.inf, code).view(u)
    ties = (np.full(8, 1.0, code).view(u) | u(1 << (m - 8)))   # exactly halfway at keep 7
    return np.concatenate([x, special, nan_payloads.view(code), ties.view(code)])


@pytest.mark.parametrize("code", ["f2", "f4", "f8"])
@pytest.mark.parametrize("keep", [0, 1, 7, 10])
def test_bitround_keeps_the_documented_error_bound(tmp, code, keep):
    x = adversarial(code)
    rawarray.write(tmp / "b.ra", x, filters=[("bitround", keep)], codec="zstd")
    got = rawarray.read(tmp / "b.ra")
    same_bits(got, bitround_by_hand(x, keep))
    # NaN payloads and infinities bit for bit; -0.0 stays -0.0.
    nan = np.isnan(x)
    u = UINT[code]
    assert (got[nan].view(u) == x[nan].view(u)).all()
    assert (got[np.isinf(x)] == x[np.isinf(x)]).all()
    assert np.signbit(got[(x == 0)]).tolist() == np.signbit(x[x == 0]).tolist()
    # The bound of doc/chunked.md 5.2, computed by numpy in float64 (exact: f2 and f4 widen
    # exactly, and two f8 within a factor of 2 subtract exactly).
    fin = np.isfinite(x)
    xs, gs = x[fin].astype(np.float64), got[fin].astype(np.float64)
    err = np.abs(gs - xs)
    normal = np.abs(xs) >= float(np.finfo(np.dtype(code)).tiny)
    truncated = ~np.isfinite(round_nearest_bits(x[fin], keep).view(x.dtype))
    bound = np.where(truncated, 2.0 ** -keep, 2.0 ** -(keep + 1)) * np.abs(xs)
    assert (err[normal] <= bound[normal]).all()
    assert (err[~normal] <= 2.0 ** (EMIN[code] - keep - 1)).all()
    assert np.isfinite(gs).all()        # nothing finite became infinite
    if keep < MANTISSA[code]:
        assert truncated.any()          # the largest finite reached the overflow case


@pytest.mark.parametrize("code", ["f2", "f4", "f8"])
def test_bitround_equals_numcodecs_where_numcodecs_is_defined(tmp, code):
    numcodecs = pytest.importorskip("numcodecs", reason="numcodecs is not installed: the "
                                    "numpy reference of the other bitround tests still runs")
    x = adversarial(code, seed=2)
    for keep in (0, 3, 7, MANTISSA[code] - 1):
        rawarray.write(tmp / "b.ra", x, filters=[("bitround", keep), "shuffle"])
        got = rawarray.read(tmp / "b.ra")
        theirs = np.asarray(numcodecs.BitRound(keep).encode(x)).view(x.dtype)
        # numcodecs knows nothing of NaN, infinity and overflow: where it keeps a finite value
        # finite, ours is the same bits.
        same = np.isfinite(x) & np.isfinite(theirs)
        assert same.sum() > len(x) * 0.9
        assert (got[same].view(UINT[code]) == theirs[same].view(UINT[code])).all(), keep


# -- pco: our blocks decode with the pcodec package ------------------------------------------

def huffman_by_spec(payload: bytes, n: int) -> bytes:
    """A huffman codec payload of ``n`` bytes decoded as doc/chunked.md 5.3.1 says, bit by bit
    (mode 1 by the ``zstandard`` package)."""
    if payload[0] == 1:
        out = zstandard.ZstdDecompressor().decompress(payload[1:], max_output_size=n,
                                                       allow_extra_data=False)
        assert len(out) == n
        return out
    assert payload[0] == 0
    if n == 0:
        assert len(payload) == 1
        return b""
    at = 1
    if payload[at] == 0:
        assert len(payload) == at + 2
        return bytes([payload[at + 1]]) * n
    assert payload[at] == 1
    last = payload[at + 1]
    at += 2
    lens = []
    for s in range(last + 1):
        byte = payload[at + s // 2]
        lens.append(byte & 15 if s % 2 == 0 else byte >> 4)
    assert lens[last] != 0 and (last % 2 == 1 or payload[at + last // 2] >> 4 == 0)
    at += (last + 2) // 2
    assert all(l <= 11 for l in lens) and sum(2 ** (11 - l) for l in lens if l) == 2 ** 11
    # RFC 1951 3.2.2: codes of each length consecutive in symbol order, shorter lengths first.
    codes, code = {}, 0
    for length in range(1, 12):
        for s, l in enumerate(lens):
            if l == length:
                codes[format(code, f"0{length}b")] = s
                code += 1
        code <<= 1
    blen = struct.unpack_from("<4I", payload, at)
    at += 16
    q = -(-n // 4)
    out = bytearray()
    for i in range(4):
        stream = payload[at:at + blen[i]]
        at += blen[i]
        bits = "".join(format(b, "08b")[::-1] for b in stream)  # each byte's low bit first
        pos, m = 0, min(q, max(n - i * q, 0))
        for _ in range(m):
            word = ""
            while word not in codes:
                word += bits[pos]
                pos += 1
            out.append(codes[word])
        assert -(-pos // 8) == len(stream)
        assert set(bits[pos:]) <= {"0"}, "padding bits are 0"
    assert at == len(payload)
    return bytes(out)


def test_huffman_blocks_decode_by_the_spec(tmp):
    """A smooth f4 field through shuffle + bytedelta:4 + bytedelta:4 + huffman (the deltas on
    the third byte plane alone, doc/chunked.md 5.2): each block's byte streams decoded by the
    spec's rules above (zstd frames by the zstandard package), the third plane's deltas undone
    and the planes put back by numpy, equal the array; the noisy third plane is Huffman codes,
    the repeating sign and exponent plane a zstd frame and the two low planes, noise, stored as
    they are."""
    x = np.linspace(0, 6, 128, dtype=np.float32)
    rng = np.random.default_rng(3)
    a = (np.sin(x)[:, None] * np.cos(x)[None, :] + rng.normal(0, 1e-3, (128, 128))).astype("<f4")
    pipeline = ["shuffle", ("bytedelta", 4), ("bytedelta", 4)]
    rawarray.write(tmp / "h.ra", a, codec="huffman", filters=pipeline, chunks=(128, 128),
                   statistics=False)
    raw = (tmp / "h.ra").read_bytes()
    c = config_v2(raw)
    assert c["codec"] == CODEC_IDS["huffman"] and c["level"] == 3
    assert c["filters"] == [(1, 0), (4, 4), (4, 4)]
    assert c["features"] & 2, "the 64 KiB chunk is split in byte streams by default"
    assert c["block"] == [128, 128], "one block: huffman's blocks are 1 MiB by default"
    s = c["section"]
    off, ln, crc, flags = struct.unpack_from("<QQII", s, c["segment0"])
    assert flags & 1 == 0
    stored = s[off:off + ln]
    assert zlib.crc32(stored) == crc
    end, bcrc = struct.unpack_from("<QI", stored, 0)
    payload = stored[12:12 + end]
    assert zlib.crc32(payload) == bcrc and len(payload) == end == ln - 12
    k = a.size
    lens = struct.unpack_from("<4I", payload, 0)
    at, planes, modes = 16, [], []
    for j in range(4):
        stream = payload[at:at + lens[j]]
        at += lens[j]
        if lens[j] == k:
            planes.append(np.frombuffer(stream, np.uint8))
            modes.append("raw")
        else:
            planes.append(np.frombuffer(huffman_by_spec(stream, k), np.uint8))
            modes.append(["codes", "zstd"][stream[0]])
    assert modes == ["raw", "raw", "codes", "zstd"], modes
    p = np.stack(planes)
    for _ in range(2):
        p[2] = np.cumsum(p[2], dtype=np.uint8)
    back = p.T.copy().view("<f4").reshape(a.shape)
    np.testing.assert_array_equal(back, a)
    np.testing.assert_array_equal(rawarray.read(tmp / "h.ra"), a)
    with rawarray.open(tmp / "h.ra") as f:
        assert f.compression["filters"] == pipeline


@pytest.mark.parametrize("dtype", ["<f4", "<i8", "<u2", "<f8"])
def test_pco_blocks_decode_with_the_pcodec_package(tmp, dtype):
    try:
        from pcodec import standalone
    except ImportError:
        print("SKIPPED: the pcodec package is not installed (pip install pcodec==1.1.0)")
        pytest.skip("pcodec is not installed: pco blocks not checked against it")
    t = np.arange(6 * 400)
    a = (1000 + 300 * np.sin(t / 50.0)).astype(dtype).reshape(6, 400)
    rawarray.write(tmp / "p.ra", a, codec="pco", level=8, filters=[], chunks=(6, 400),
                   blocks=(3, 160), statistics=False)
    raw = (tmp / "p.ra").read_bytes()
    c = config_v2(raw)
    assert (c["codec"], c["level"], c["filters"]) == (CODEC_IDS["pco"], 8, [])
    s = c["section"]
    # One chunk; its entry (5.4, 32 bytes without statistics) at segment 0.
    off, ln, crc, flags = struct.unpack_from("<QQII", s, c["segment0"])
    assert flags & 1 == 0, "the chunk was stored raw: pco did not shrink it"
    stored = s[off:off + ln]
    assert zlib.crc32(stored) == crc
    # Blocks [160, 3] of the extent [400, 6] (file order): 3 x 2 (the last of dim 0 clipped
    # to 80), numbered dim 0 fastest.
    nb0, nb1 = 3, 2
    ends = [struct.unpack_from("<QI", stored, 12 * b) for b in range(nb0 * nb1)]
    payloads, prev = stored[12 * nb0 * nb1:], 0
    for b, (end, bcrc) in enumerate(ends):
        payload = payloads[prev:end]
        prev = end
        assert zlib.crc32(payload) == bcrc
        i0, i1 = b % nb0, b // nb0
        want = a[i1 * 3:(i1 + 1) * 3, i0 * 160:(i0 + 1) * 160].ravel()
        got = standalone.simple_decompress(payload)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    np.testing.assert_array_equal(rawarray.read(tmp / "p.ra"), a)


def test_pco_refuses_records_and_bytes_naming_the_element(tmp):
    with pytest.raises(rawarray.RaError, match="pco"):
        rawarray.write(tmp / "r.ra", sample(RECORD, (10,)), codec="pco")
    with pytest.raises(rawarray.RaError, match="pco"):
        rawarray.write(tmp / "r.ra", np.arange(10, dtype="u1"), codec="pco")
    assert not (tmp / "r.ra").exists()


# -- the writers -----------------------------------------------------------------------------

def test_record_writer_takes_the_pipeline_and_blocks(tmp):
    dt = np.dtype([("step", "<u8"), ("e", "<f4")])
    with rawarray.RecordWriter(tmp / "r.ra", dt, chunks=64, blocks=16, codec="zstd",
                               filters=["shuffle", "bytedelta", "bitshuffle"]) as w:
        for k in range(10):
            recs = np.zeros(30, dt)
            recs["step"] = np.arange(30 * k, 30 * k + 30)
            recs["e"] = np.sin(recs["step"] / 10.0)
            w.append(recs)
            w.flush()
    c = config_v2((tmp / "r.ra").read_bytes())
    assert c["filters"] == [(1, 0), (4, 0), (2, 0)] and c["chunk"] == [64] and c["block"] == [16]
    got = rawarray.read(tmp / "r.ra")
    np.testing.assert_array_equal(got["step"], np.arange(300))
    np.testing.assert_array_equal(got["e"], np.sin(np.arange(300) / 10.0).astype("<f4"))
    with pytest.raises(rawarray.RaError, match="bitround takes float"):
        rawarray.RecordWriter(tmp / "x.ra", dt, filters=[("bitround", 5)], chunks=8)


def test_record_writer_of_floats_rounds_as_numpy_does(tmp):
    e = np.sin(np.arange(300) / 10.0).astype("<f4")
    with rawarray.RecordWriter(tmp / "r.ra", "<f4", chunks=64, blocks=16,
                               filters=[("bitround", 9), "shuffle", "bytedelta"]) as w:
        w.append(e)
    same_bits(rawarray.read(tmp / "r.ra"), bitround_by_hand(e, 9))
    # The trailer says the data were rounded (doc/chunked.md 5.2), as the library marks it.
    raw = (tmp / "r.ra").read_bytes()
    assert config_v2(raw)["filters"] == [(5, 9), (1, 0), (4, 0)]
    assert b'"lossy":{"bitround":9}' in parse_by_hand(raw)[2]
    with rawarray.open(tmp / "r.ra") as f:
        assert f.compression["rounded_to"] == 9
        assert f.compression["blocks"] == (16,)


def test_array_writer_takes_the_pipeline_and_blocks(tmp):
    a = sample("<i4", (12, 40))
    with rawarray.ArrayWriter(tmp / "w.ra", a.shape, a.dtype, chunks=(4, 40), blocks=(2, 8),
                              codec="zstd", filters=["delta", "shuffle", "bytedelta"]) as w:
        assert w.compression["filters"] == ["delta", "shuffle", "bytedelta"]
        assert w.compression["blocks"] == (2, 8)
        for r in range(0, 12, 4):
            w[r:r + 4] = a[r:r + 4]
    c = config_v2((tmp / "w.ra").read_bytes())
    assert c["filters"] == [(3, 0), (1, 0), (4, 0)] and c["block"] == [8, 2]
    np.testing.assert_array_equal(rawarray.read(tmp / "w.ra"), a)


def test_array_writer_with_bitround_says_rounded_from_its_config(tmp):
    a = sample("<f8", (8, 16))
    with rawarray.ArrayWriter(tmp / "w.ra", a.shape, a.dtype, chunks=(4, 16),
                              filters=[("bitround", 20)]) as w:
        w[:4] = a[:4]
        w[4:] = a[4:]
    same_bits(rawarray.read(tmp / "w.ra"), bitround_by_hand(a, 20))
    with rawarray.open(tmp / "w.ra") as f:
        assert f.compression["rounded_to"] == 20


def test_ragged_values_take_the_pipeline(tmp):
    rows = [np.arange(k, dtype="<f8") * 0.25 for k in range(40)]
    rawarray.write(tmp / "g.ra", rows, filters=[("bitround", 30), "shuffle", "bytedelta"],
                   chunks=100, blocks=25)
    got = rawarray.read(tmp / "g.ra")
    for k in range(40):
        same_bits(np.asarray(got[k]), bitround_by_hand(rows[k], 30))
    with rawarray.open(tmp / "g.ra") as f:
        c = f.compression
        assert c["filters"] == [("bitround", 30), "shuffle", "bytedelta"]
        assert (c["chunks"], c["blocks"], c["rounded_to"]) == ((100,), (25,), 30)


# -- the two filters= ------------------------------------------------------------------------

def test_writers_refuse_row_predicates_saying_which_filters_is_which(tmp):
    a = np.arange(10.0)
    predicate = [("step", ">=", 1)]
    words = "filters= of a writer is the codec pipeline.*filters= of a reader"
    with pytest.raises(rawarray.RaError, match=words):
        rawarray.write(tmp / "a.ra", a, filters=predicate)
    with pytest.raises(rawarray.RaError, match=words):
        rawarray.write(tmp / "a.ra", a, filters=[[("step", ">=", 1)], [("step", "<", 0)]])
    with pytest.raises(rawarray.RaError, match=words):
        rawarray.RecordWriter(tmp / "r.ra", [("step", "<u8")], filters=predicate)
    with pytest.raises(rawarray.RaError, match=words):
        rawarray.ArrayWriter(tmp / "w.ra", (4,), "<f4", filters=predicate)
    assert not any(tmp.iterdir())


def test_readers_refuse_a_codec_pipeline_saying_which_filters_is_which(tmp):
    recs = np.zeros(5, [("step", "<u8")])
    rawarray.write(tmp / "r.ra", recs)
    words = "filters= of a reader selects rows.*filters= of a writer"
    for pipeline in (["shuffle"], [("bitround", 10)], "shuffle"):
        with pytest.raises(rawarray.RaError, match=words):
            rawarray.read(tmp / "r.ra", filters=pipeline)
        with rawarray.open(tmp / "r.ra") as f, pytest.raises(rawarray.RaError, match=words):
            f.to_arrow(filters=pipeline)


@pytest.mark.parametrize("kw, words", [
    (dict(filters=["snappy"]), r"filters\[0\]: .*snappy.*shuffle, bitshuffle, delta, bytedelta and bitround"),
    (dict(filters=["shuffle"] * 1000), r"filters: expected at most 8, found 1000"),
    (dict(filters=[("bitround", -1)]), r"filters\[0\].*whole number"),
    (dict(filters=[("shuffle", 3)]), r"filters\[0\].*shuffle takes no parameter"),
    (dict(filters=["bitround"]), r"filters\[0\]: filter bitround needs its keepbits: give it "
                                 r"as a tuple, \(\"bitround\", KEEPBITS\)"),
    (dict(filters=[("bitround", 24)]), r"bitround:24.*keep at most 23"),
    (dict(filters=["shuffle", ("bitround", 5)]), r"before every lossless filter"),
    (dict(filters="shuffle"), r"not a list"),
    (dict(chunks=(4, 8), blocks=(5, 8)), r"blocks.*axis 0: 1 ..= the chunk's 4"),
    (dict(chunks=(4, 8), blocks=(4, 0)), r"blocks \(4, 0\): axis 1 is 0"),
    (dict(blocks=(4,)), r"blocks"),
    (dict(blocks=4), r"blocks: expected a shape"),
    (dict(layout_version=3), r"layout version: expected 1 or 2, found 3"),
    (dict(codec="pco", layout_version=1), r"codec.*layout version 1"),
])
def test_hostile_settings_are_errors_naming_the_field(tmp, kw, words):
    a = sample("<f4", (8, 8))
    with pytest.raises(rawarray.RaError, match=words):
        rawarray.write(tmp / "h.ra", a, **kw)
    assert not (tmp / "h.ra").exists()


def test_bitround_is_refused_for_integers_naming_the_element_type(tmp):
    with pytest.raises(rawarray.RaError, match="bitround takes float"):
        rawarray.write(tmp / "i.ra", np.arange(10, dtype="<i4"), filters=[("bitround", 3)])


# -- issue 33 item 2: a damaged index entry ----------------------------------------------------

def flip_offset_bit(path, entry_at: int):
    """Flips bit 7 of byte 3 of the index entry's offset at file offset ``entry_at``: the
    offset grows by 2^31 and points past the committed size."""
    raw = bytearray(path.read_bytes())
    raw[entry_at + 3] ^= 0x80
    path.write_bytes(bytes(raw))


def test_a_rachunk1_entry_past_the_committed_size_warns_naming_the_chunk(tmp):
    a = np.arange(4 * 100, dtype="<i4").reshape(4, 100) + 1
    path = tmp / "v1.ra"
    rawarray.write(path, a, chunks=(1, 100), codec="zstd", layout_version=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a sound file warns of nothing
        np.testing.assert_array_equal(rawarray.read(path), a)
    h, s, _ = parse_by_hand(path.read_bytes())
    assert s[:8] == b"RACHUNK1"
    # doc/chunked.md 6.1: the config is 568 + 8n bytes, segment slot 0 at 56 + 8n; 6.2:
    # entries of 24 bytes. Chunk 2 is numpy's row 2 (grid coordinates [0, 2] in file order).
    n = len(h["dims"])
    (segment0,) = struct.unpack_from("<Q", s, 56 + 8 * n)
    assert segment0 == 568 + 8 * n
    flip_offset_bit(path, 48 + 8 * n + segment0 + 24 * 2)
    with pytest.warns(rawarray.RaWarning) as caught:
        got = rawarray.read(path)
    messages = [str(w.message) for w in caught if issubclass(w.category, rawarray.RaWarning)]
    assert len(messages) == 1, messages
    assert "chunk 2 (grid coordinates (2, 0))" in messages[0]
    assert "points past the committed data" in messages[0] and "ra verify" in messages[0]
    assert str(path) in messages[0]
    # What the format says of such a chunk: zeros, which the warning said; the rest intact.
    assert (got[2] == 0).all()
    np.testing.assert_array_equal(np.delete(got, 2, axis=0), np.delete(a, 2, axis=0))
    # The warning points at the user's line, not inside the package.
    assert caught[0].filename == __file__
    # Every way in warns: open, and a File's reads are of the file it warned about.
    with pytest.warns(rawarray.RaWarning, match="chunk 2"):
        f = rawarray.open(path, mmap=False)
    with f:
        assert (f[2] == 0).all() and (f[1] == a[1]).all()
    # As an error, for those who want one.
    with warnings.catch_warnings():
        warnings.simplefilter("error", rawarray.RaWarning)
        with pytest.raises(rawarray.RaWarning):
            rawarray.read(path)


def test_a_rachunk2_entry_with_a_flipped_bit_is_an_error_naming_the_chunk(tmp):
    a = np.arange(4 * 100, dtype="<i4").reshape(4, 100) + 1
    path = tmp / "v2.ra"
    rawarray.write(path, a, chunks=(1, 100), codec="zstd", statistics=False)
    c = config_v2(path.read_bytes())
    # doc/chunked.md 5.4: entries of 32 bytes without statistics.
    flip_offset_bit(path, c["section_at"] + c["segment0"] + 32 * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # an error, not a warning
        with pytest.raises(rawarray.RaError, match="chunk 2"):
            rawarray.read(path)
        with pytest.raises(rawarray.RaError, match="chunk 2"):
            with rawarray.open(path, mmap=False) as f:
                f[2]


def test_a_ragged_files_rachunk1_values_warn_naming_the_chunk(tmp):
    rows = [np.full(k % 7, k, dtype="<f4") for k in range(150)]        # 447 values
    path = tmp / "g.ra"
    rawarray.write(path, rows, chunks=100, codec="zstd", layout_version=1)
    raw = path.read_bytes()
    # doc/format.md 10.2 by hand: header (ndims 2), the slot count, the offsets' slots, then
    # the values' section; its RACHUNK1 config (doc/chunked.md 6.1, n = 1) and 24-byte entries.
    (slots,) = struct.unpack_from("<Q", raw, 64)
    section = 72 + 8 * slots
    assert raw[section:section + 8] == b"RACHUNK1"
    (segment0,) = struct.unpack_from("<Q", raw, section + 56 + 8)
    flip_offset_bit(path, section + segment0 + 24 * 1)               # values 100..200
    with pytest.warns(rawarray.RaWarning, match=r"chunk 1 \(grid coordinates \(1,\)\)"):
        got = rawarray.read(path)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    for k, r in enumerate(rows):
        if offsets[k] >= 200 or offsets[k + 1] <= 100:                 # outside chunk 1
            np.testing.assert_array_equal(got[k], r)
    assert (got.values[100:200] == 0).all()


# -- byte streams (features bit 1, doc/chunked.md 5.3) ---------------------------------------

def test_split_blocks_decode_with_the_zstandard_package(tmp):
    """The default zstd file of floats keeps each block as byte streams: its payload, parsed by
    hand from the spec, is 4 lengths then 4 streams, each a zstd frame that the zstandard
    package decodes (or the plane itself, stored as it is), and the planes are numpy's bytes."""
    import zstandard
    n, per_block = 100_000, 32_768
    a = (np.sin(np.arange(n) / 300.0) + np.random.default_rng(3).normal(0, 1e-3, n)).astype("<f4")
    rawarray.write(tmp / "s.ra", a, chunks=(n,), blocks=(per_block,), statistics=False)
    c = config_v2((tmp / "s.ra").read_bytes())
    assert c["codec"] == CODEC_IDS["zstd"] and c["filters"] == [(1, 0)]
    assert c["features"] == 2, "byte streams, no statistics"
    s = c["section"]
    off, ln, crc, flags = struct.unpack_from("<QQII", s, c["segment0"])
    assert flags & 1 == 0
    stored = s[off:off + ln]
    assert zlib.crc32(stored) == crc
    nb = -(-n // per_block)
    ends = [struct.unpack_from("<QI", stored, 12 * b) for b in range(nb)]
    payloads, prev = stored[12 * nb:], 0
    kinds = set()
    for b, (end, bcrc) in enumerate(ends):
        payload = payloads[prev:end]
        prev = end
        assert zlib.crc32(payload) == bcrc
        want = a[b * per_block:(b + 1) * per_block]
        m = want.size
        lens = struct.unpack_from("<4I", payload, 0)
        assert sum(lens) == len(payload) - 16
        planes, at = [], 16
        for j, k in enumerate(lens):
            stream = payload[at:at + k]
            at += k
            if k == m:
                planes.append(stream)
                kinds.add("raw")
            else:
                assert k < m and stream[:4] == b"\x28\xb5\x2f\xfd", (b, j, k)
                planes.append(zstandard.ZstdDecompressor().decompress(stream, max_output_size=m))
                kinds.add("zstd")
        # Plane j holds byte j of every element (the byte shuffle, 5.2).
        got = np.frombuffer(b"".join(planes), np.uint8).reshape(4, m).T.copy().view("<f4").ravel()
        np.testing.assert_array_equal(got, want)
    assert kinds == {"raw", "zstd"}, "a smooth field has planes that shrink and planes of noise"
    with rawarray.open(tmp / "s.ra") as f:
        # An array split in byte streams has no CRC per stream by default (arrays are read
        # whole; readers older than stream CRCs read these files).
        assert (f.compression["split"], f.compression["stream_crcs"]) == (True, False)
        np.testing.assert_array_equal(f[1000:1010], a[1000:1010])
    np.testing.assert_array_equal(rawarray.read(tmp / "s.ra"), a)


def test_split_can_be_turned_off_and_is_refused_where_it_cannot_be(tmp):
    a = np.sin(np.arange(5000) / 30.0).astype("<f8")
    rawarray.write(tmp / "one.ra", a, split=False)
    assert config_v2((tmp / "one.ra").read_bytes())["features"] & 2 == 0
    with rawarray.open(tmp / "one.ra") as f:
        assert f.compression["split"] is False
    np.testing.assert_array_equal(rawarray.read(tmp / "one.ra"), a)
    # lz4 splits only when asked; bytes of one element never do by default.
    rawarray.write(tmp / "lz.ra", a, codec="lz4", split=True)
    assert config_v2((tmp / "lz.ra").read_bytes())["features"] & 2 == 2
    np.testing.assert_array_equal(rawarray.read(tmp / "lz.ra"), a)
    rawarray.write(tmp / "u1.ra", np.arange(5000, dtype="u1"), codec="zstd")
    assert config_v2((tmp / "u1.ra").read_bytes())["features"] & 2 == 0
    # Chunks under 32 KiB keep one stream a block by default (a stream costs a frame header).
    rawarray.write(tmp / "small.ra", a[:1000], codec="zstd")
    assert config_v2((tmp / "small.ra").read_bytes())["features"] & 2 == 0
    for kw in ({"codec": "pco"}, {"codec": "none"}, {"layout_version": 1}):
        with pytest.raises(rawarray.RaError, match="split"):
            rawarray.write(tmp / "x.ra", a, split=True, **kw)
    with rawarray.RecordWriter(tmp / "r.ra", "<f4", codec="zstd", split=False) as w:
        w.append(np.arange(100, dtype="<f4"))
    assert config_v2((tmp / "r.ra").read_bytes())["features"] & 2 == 0


def test_stream_crcs_are_set_by_every_writer(tmp):
    """``stream_crcs=`` (config features bit 2, doc/chunked.md 5.3) on each writer: on for an
    array that has none by default, off for records that have them by default, refused
    without byte streams naming the setting; the values read back either way."""
    a = np.sin(np.arange(40_000) / 30.0).astype("<f8")
    rawarray.write(tmp / "a.ra", a, codec="zstd")
    assert config_v2((tmp / "a.ra").read_bytes())["features"] & 6 == 2  # split, no CRCs
    rawarray.write(tmp / "c.ra", a, codec="zstd", stream_crcs=True)
    assert config_v2((tmp / "c.ra").read_bytes())["features"] & 6 == 6
    with rawarray.open(tmp / "c.ra") as f:
        assert (f.compression["split"], f.compression["stream_crcs"]) == (True, True)
    np.testing.assert_array_equal(rawarray.read(tmp / "c.ra"), a)
    with pytest.raises(rawarray.RaError, match="stream_crcs"):
        rawarray.write(tmp / "x.ra", a, split=False, stream_crcs=True)
    dt = np.dtype([("step", "<u8"), ("energy", "<f8"), ("pos", "<f8", (3,))])
    r = np.zeros(20_000, dt)
    r["step"] = np.arange(20_000) // 64
    r["energy"] = np.cos(np.arange(20_000) / 99.0)
    with rawarray.RecordWriter(tmp / "r.ra", dt, codec="zstd", stream_crcs=False) as w:
        w.append(r)
    assert config_v2((tmp / "r.ra").read_bytes())["features"] & 6 == 2
    np.testing.assert_array_equal(rawarray.read(tmp / "r.ra"), r)
    with rawarray.ArrayWriter(tmp / "w.ra", (4, 100, 100), "<f4", chunks=(1, 100, 100),
                              codec="zstd", stream_crcs=True) as w:
        w[:] = np.arange(40_000, dtype="<f4").reshape(4, 100, 100)
    assert config_v2((tmp / "w.ra").read_bytes())["features"] & 6 == 6
    with pytest.raises(TypeError, match="stream_crcs"):
        rawarray.ArrayWriter(tmp / "w.ra", stream_crcs=True)
    rows = [np.arange(n, dtype="<f8") for n in range(0, 4000, 7)]
    rawarray.write(tmp / "g.ra", rows, codec="zstd", stream_crcs=True)
    with rawarray.open(tmp / "g.ra") as f:
        assert f.compression["stream_crcs"] is True
    with rawarray.RaggedWriter(tmp / "h.ra", "<f8", codec="zstd", stream_crcs=True) as w:
        for row in rows:
            w.append(row)
    with rawarray.open(tmp / "h.ra") as f:
        assert f.compression["stream_crcs"] is True
