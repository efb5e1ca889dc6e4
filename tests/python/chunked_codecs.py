"""The chunked layout's codecs and format checked by the reference implementations.

`blocks DIR`: every DIR/NAME.raw has DIR/NAME.lz4 (a raw LZ4 block, ours) and DIR/NAME.zst (a
zstd frame, ours): both must decode with `lz4.block` and `zstandard` to the raw bytes; then
theirs are written as DIR/NAME.py.lz4 and DIR/NAME.py.zst for the Rust side to decode.

`read FILE.ra EXPECTED.bin`: FILE.ra is a chunked .ra file of little-endian elements; it is
decoded here from doc/chunked.md alone (config, index, block tables, lz4/zstd, byte and bit
shuffle, raw chunks, edge chunks) and compared with the plain data section EXPECTED.bin.
"""
import glob
import os
import struct
import sys
import zlib

import lz4.block
import numpy as np
import zstandard


def blocks(d):
    n = 0
    for raw_path in sorted(glob.glob(os.path.join(d, "*.raw"))):
        base = raw_path[:-4]
        raw = open(raw_path, "rb").read()
        ours_lz4 = open(base + ".lz4", "rb").read()
        ours_zst = open(base + ".zst", "rb").read()
        assert lz4.block.decompress(ours_lz4, uncompressed_size=len(raw)) == raw, base
        assert zstandard.ZstdDecompressor().decompress(ours_zst) == raw, base
        open(base + ".py.lz4", "wb").write(lz4.block.compress(raw, store_size=False))
        open(base + ".py.zst", "wb").write(zstandard.ZstdCompressor(level=3).compress(raw))
        n += 1
    print(f"ok {n}")


def unshuffle(b, w):
    k = len(b) // w
    return np.frombuffer(b, np.uint8).reshape(w, k).T.reshape(-1).tobytes()


def unbitshuffle(b, w):
    k = len(b) // w
    k8 = k - k % 8
    head = k8 * w
    bits = np.unpackbits(np.frombuffer(b[:head], np.uint8), bitorder="little")
    # plane 8j+b, element i -> bit b of byte j of element i
    planes = bits.reshape(w, 8, k8)  # [j][b][i]
    bytes_ = np.packbits(planes.transpose(2, 0, 1), axis=-1, bitorder="little")  # [i][j][1]
    return bytes_.reshape(-1).tobytes() + b[head:]


def read(path, expected_path):
    f = open(path, "rb").read()
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<8sQQQQQ", f, 0)
    assert magic == b"rawarray" and flags == 4, flags
    dims = struct.unpack_from(f"<{ndims}Q", f, 48)
    base = 48 + 8 * ndims
    s = f[base : base + size]
    assert s[:8] == b"RACHUNK1"
    filt, codec, level, _ = struct.unpack_from("<IIiI", s, 8)
    block_bytes, s0, nd = struct.unpack_from("<QQQ", s, 24)
    chunk = struct.unpack_from(f"<{nd}Q", s, 48)
    (crc,) = struct.unpack_from("<I", s, 48 + 8 * nd)
    assert crc == zlib.crc32(s[: 48 + 8 * nd])
    slots = struct.unpack_from("<64Q", s, 56 + 8 * nd)
    counts = [-(-d // c) for d, c in zip(dims, chunk)]
    nchunks = int(np.prod(counts)) if dims else 1
    out = np.zeros(int(np.prod(dims)) * elbyte if dims else elbyte, np.uint8)
    full = out.reshape(tuple(reversed(dims)) + (elbyte,))
    for n in range(nchunks):
        g, first, cap = 0, 0, s0
        while n >= first + cap:
            g += 1
            first, cap = s0 << (g - 1), s0 << (g - 1)
        off, ln, ecrc, eflags = struct.unpack_from("<QQII", s, slots[g] + 24 * (n - first))
        coords, rest = [], n
        for c in counts:
            coords.append(rest % c)
            rest //= c
        lo = [i * c for i, c in zip(coords, chunk)]
        shape = [min(c, d - l) for c, d, l in zip(chunk, dims, lo)]
        rawlen = int(np.prod(shape)) * elbyte
        if off == 0 and ln == 0:
            continue
        stored = s[off : off + ln]
        assert zlib.crc32(stored) == ecrc, n
        if eflags & 1:
            raw = stored
        else:
            nb = -(-rawlen // block_bytes)
            table = stored[: 12 * nb]
            payload = stored[12 * nb :]
            raw, prev = b"", 0
            for b in range(nb):
                end, bcrc = struct.unpack_from("<QI", table, 12 * b)
                blk = payload[prev:end]
                assert zlib.crc32(blk) == bcrc
                want = min(block_bytes, rawlen - b * block_bytes)
                if codec == 1:
                    dec = lz4.block.decompress(blk, uncompressed_size=want)
                elif codec == 2:
                    dec = zstandard.ZstdDecompressor().decompress(blk)
                else:
                    dec = blk
                assert len(dec) == want
                if filt == 1:
                    dec = unshuffle(dec, elbyte)
                elif filt == 2:
                    dec = unbitshuffle(dec, elbyte)
                raw += dec
                prev = end
        assert len(raw) == rawlen, (n, len(raw), rawlen)
        block = np.frombuffer(raw, np.uint8).reshape(tuple(reversed(shape)) + (elbyte,))
        idx = tuple(slice(l, l + s_) for l, s_ in zip(reversed(lo), reversed(shape)))
        full[idx] = block
    expected = open(expected_path, "rb").read()
    assert out.tobytes() == expected, "decoded section differs"
    print("ok", nchunks)


if __name__ == "__main__":
    {"blocks": blocks, "read": read}[sys.argv[1]](*sys.argv[2:])
