#!/usr/bin/env python3
"""Where a lossless setting at 1.10x Blosc2's ratio spends its decoding, plane by plane (issue
34's lossless target; doc/benchmarks.md, "Lossless past 1.10x Blosc2's ratio"). The compress
bench's smooth field (256^3 f32, made as `compress_peers.py` makes it, seed 7) cut in blocks of
32,768 elements (128 KiB), each block's byte planes (or 16-bit halves) coded as their own zstd
frames with python-zstandard, as the layout's byte streams code them; decoding timed frame by
frame, one thread. Printed per setting: the ratio, the bytes an element of each plane, the
best of `--reps` repetitions' decoding time of all frames, and each plane's best. Each frame is
one call from Python (2,048 calls a repetition, about a microsecond each, the same count in
every setting), so the times hold that overhead.

    python benches/python/lossless_planes.py

Settings: `shuffle` (the default's planes), `shuffle+bytedelta+bytedelta` (the pipeline that
reaches the ratio), and two that are not filters of the layout, measured to see whether a new
filter would pay: the element's high 16 bits (sign, exponent, top mantissa bits) as one integer
with a second-order delta along the block, zigzag-coded, in two planes, beside the low 16 bits
as they are (`hi16 delta2 zigzag`), and the same without zigzag.

Needs numpy and zstandard (`pip install numpy zstandard`).
"""
import argparse, os, sys, time

import numpy as np
import zstandard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compress_peers import smooth_field  # noqa: E402

BLOCK = 32768


def planes_of(a, width):
    v = a.view(np.uint8).reshape(a.shape[0], a.shape[1], width)
    return [np.ascontiguousarray(v[:, :, k]) for k in range(width)]


def delta(a):
    d = a.copy()
    d[:, 1:] = a[:, 1:] - a[:, :-1]
    return d


def settings(blocks):
    hi = (blocks >> 16).astype(np.uint16)
    lo = (blocks & 0xFFFF).astype(np.uint16)
    r = delta(delta(hi)).astype(np.int16).astype(np.int32)
    zigzag = ((r << 1) ^ (r >> 31)).astype(np.uint16)
    return {
        'shuffle': planes_of(blocks, 4),
        'shuffle+bytedelta+bytedelta': [delta(delta(p)) for p in planes_of(blocks, 4)],
        'hi16 delta2 zigzag': planes_of(lo, 2) + planes_of(zigzag, 2),
        'hi16 delta2': planes_of(lo, 2) + planes_of(delta(delta(hi)), 2),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--level', type=int, default=3)
    p.add_argument('--reps', type=int, default=7)
    a = p.parse_args()
    field = smooth_field((256, 256, 256), np.random.default_rng(7))
    blocks = field.view(np.uint32).reshape(-1, BLOCK)
    cc, dc = zstandard.ZstdCompressor(level=a.level), zstandard.ZstdDecompressor()
    print(f'| setting (zstd {a.level}) | ratio | bytes an element, by plane | decode ms '
          '| by plane |')
    print('|---|---:|---|---:|---|')
    for name, planes in settings(blocks).items():
        frames = [[cc.compress(pl[b].tobytes()) for pl in planes]
                  for b in range(blocks.shape[0])]
        per = [sum(len(f[k]) for f in frames) for k in range(len(planes))]
        for b, f in enumerate(frames):  # every frame decodes to its plane
            assert all(dc.decompress(x) == pl[b].tobytes() for x, pl in zip(f, planes))
        # Best of `reps` for the whole (all frames of a repetition) and for each plane.
        best_all, best = float('inf'), [float('inf')] * len(planes)
        for _ in range(a.reps):
            spent = [0.0] * len(planes)
            for f in frames:
                for k, x in enumerate(f):
                    t = time.perf_counter()
                    dc.decompress(x)
                    spent[k] += time.perf_counter() - t
            best_all = min(best_all, sum(spent))
            best = [min(b, s) for b, s in zip(best, spent)]
        print(f'| {name} | {field.nbytes / sum(per):.4f} | '
              f'{", ".join(f"{x / field.size:.3f}" for x in per)} | {best_all * 1e3:.1f} | '
              f'{", ".join(f"{x * 1e3:.1f}" for x in best)} |')


if __name__ == '__main__':
    main()
