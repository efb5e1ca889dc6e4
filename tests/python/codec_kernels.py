"""The codec kernels (rawarray_serde::codec::{bytedelta, bitround, delta, pco}) checked by their
Python peers: python-blosc2, numcodecs and pcodec.

`codec_kernels.py DIR`: DIR/manifest.json lists cases written by tests/codec_kernels.rs, each
with DIR/NAME.raw (the input block) and, except for pco's, DIR/NAME.ours (our output):

- `bytedelta` (width, blocksize): NAME.ours is our byte shuffle then bytedelta of each block of
  `blocksize` bytes of NAME.raw (the last block shorter). python-blosc2 compresses NAME.raw as
  one chunk with SHUFFLE + BYTEDELTA, typesize `width` (width 1: see blosc2_bytedelta), that
  block size, never split, through a
  codec registered here that records the filtered block it is handed (Blosc2 has no "no codec"
  that still filters: clevel 0 or an incompressible block store the raw bytes unfiltered), so
  what it records is exactly Blosc2's filter output. That is written as NAME.theirs. Then
  Blosc2 decompresses the chunk with the same codec handing back *our* filtered blocks: its
  inverse filters must give NAME.raw.
- `bitround` (dtype, keepbits): NAME.theirs = numcodecs.BitRound(keepbits).encode(NAME.raw).
- `delta` (dtype): NAME.theirs = numcodecs.Delta(dtype).encode(NAME.raw).
- `pco` (dtype): NAME.ours is our pco block: pcodec.standalone.simple_decompress must give
  NAME.raw's numbers, of that dtype; NAME.theirs = pcodec.standalone.simple_compress(NAME.raw).

The Rust side compares NAME.theirs with NAME.ours (or decodes NAME.theirs for pco). Prints
`ok N` for N cases.
"""
import json
import os
import sys

import blosc2
import numcodecs
import numpy as np
from pcodec import ChunkConfig, standalone

CAPTURE_CODEC_ID = 200
_recorded = []
_to_hand_back = []


def _record(src, dst, meta, schunk):
    _recorded.append(bytes(src))
    dst[0] = 0
    return 1  # "compressed" to one byte: Blosc2 keeps the stream, no memcpy fallback


def _hand_back(src, dst, meta, schunk):
    block = _to_hand_back.pop(0)
    assert len(block) == dst.size, (len(block), dst.size)
    dst[:] = np.frombuffer(block, np.uint8)
    return dst.size


def blosc2_bytedelta(name, raw, width, blocksize, ours):
    if width == 1:
        # python-blosc2 drops BYTEDELTA at typesize 1 ("Bytedelta does not work on typesize
        # 1", blosc2_ext.pyx), though bytedelta.c takes meta 1 as one stream: typesize 2 and
        # BYTEDELTA alone with meta 1 (a byte shuffle of width 1 is the identity).
        typesize, filters, meta = 2, [blosc2.Filter.BYTEDELTA], [1]
    else:
        typesize, filters, meta = width, [blosc2.Filter.SHUFFLE, blosc2.Filter.BYTEDELTA], [0, width]
    cparams = blosc2.CParams(
        codec=CAPTURE_CODEC_ID,
        clevel=5,
        typesize=typesize,
        nthreads=1,
        blocksize=blocksize,
        splitmode=blosc2.SplitMode.NEVER_SPLIT,
        filters=filters,
        filters_meta=meta,
    )
    schunk = blosc2.SChunk(chunksize=len(raw), cparams=cparams, dparams=blosc2.DParams(nthreads=1))
    _recorded.clear()
    schunk.append_data(raw)
    recorded = list(_recorded)
    # Blosc2 skips its codec for a filtered block that is one repeated byte (a run, stored as
    # that byte). Where our block is such a run and Blosc2 recorded nothing for it, its block
    # is taken to be ours: the decode direction below checks that, as Blosc2 then rebuilds the
    # block from the run through its inverse filters.
    theirs, hand_back = [], []
    for at in range(0, len(raw), blocksize):
        block = ours[at : at + blocksize]
        their_block = recorded[0] if recorded else None
        if len(set(block)) == 1 and (
            their_block is None or len(their_block) != len(block) or len(set(their_block)) == 1
        ):
            theirs.append(block)
            continue
        assert their_block is not None, f"{name}: Blosc2 handed its codec fewer blocks than {len(raw)} bytes make"
        assert len(their_block) == len(block), (
            f"{name}: Blosc2 handed its codec a block of {len(their_block)} bytes at {at}, "
            f"expected {len(block)}"
        )
        theirs.append(recorded.pop(0))
        hand_back.append(block)
    assert not recorded, f"{name}: Blosc2 handed its codec more blocks than {len(raw)} bytes make"
    # Blosc2's inverse filters on our filtered blocks.
    _to_hand_back[:] = hand_back
    back = schunk.decompress_chunk(0)
    assert not _to_hand_back, f"{name}: Blosc2 did not ask for every block"
    if back != raw:
        at = next(i for i in range(len(raw)) if back[i] != raw[i])
        raise AssertionError(
            f"{name}: Blosc2's SHUFFLE + BYTEDELTA inverse of our blocks differs from the input "
            f"at byte {at} of {len(raw)}"
        )
    return b"".join(theirs)


def main(d):
    blosc2.register_codec("rawarray-capture", CAPTURE_CODEC_ID, _record, _hand_back)
    cases = json.load(open(os.path.join(d, "manifest.json")))
    for case in cases:
        base = os.path.join(d, case["name"])
        raw = open(base + ".raw", "rb").read()
        kind = case["kind"]
        if kind == "bytedelta":
            ours = open(base + ".ours", "rb").read()
            theirs = blosc2_bytedelta(case["name"], raw, case["width"], case["blocksize"], ours)
        elif kind == "bitround":
            a = np.frombuffer(raw, case["dtype"])
            theirs = numcodecs.BitRound(case["keepbits"]).encode(a.copy()).tobytes()
        elif kind == "delta":
            a = np.frombuffer(raw, case["dtype"])
            theirs = numcodecs.Delta(dtype=case["dtype"]).encode(a).tobytes()
        elif kind == "pco":
            ours = open(base + ".ours", "rb").read()
            a = np.frombuffer(raw, case["dtype"])
            got = standalone.simple_decompress(ours)
            assert got.dtype == a.dtype, (case["name"], got.dtype, a.dtype)
            assert got.tobytes() == raw, f"{case['name']}: pcodec decodes our block to other numbers"
            theirs = standalone.simple_compress(a, ChunkConfig())
        else:
            raise ValueError(f"unknown case kind {kind}")
        open(base + ".theirs", "wb").write(theirs)
    print(f"ok {len(cases)}")


if __name__ == "__main__":
    main(sys.argv[1])
