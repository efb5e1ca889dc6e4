#!/usr/bin/env python3
"""lz4 compression speed, ours against Blosc2, on one thread and the same arrays (issue 34's
target "lz4 compression of the f32 arrays at least Blosc2's speed", measured on the default
write path): the compress bench's smooth field and random normal f32 (256^3 each, made as
`compress_peers.py` makes them, seed 7), Blosc2 B2ND with shuffle + LZ4 at clevel 5 and 9
(`nthreads=1`), and `examples/lz4_encode` (our `lz4` codec: shuffle, default chunks and blocks,
statistics on, as `WriteOptions::chunked().codec(Codec::Lz4)` writes, and with `NOSTATS`),
alternated round by round, best of `--reps` each.

    cargo build --release -p rawarray-serde --example lz4_encode
    python benches/python/lz4_blosc2.py --ours target/release/examples/lz4_encode

Needs numpy and blosc2 (the peers' environment of `cargo bench --bench compress`).
"""
import argparse, os, subprocess, sys, tempfile, time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compress_peers import smooth_field  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--ours', required=True, help='the lz4_encode example binary')
    p.add_argument('--dir', default=None, help='where the arrays go (default: a temporary folder)')
    p.add_argument('--reps', type=int, default=7)
    p.add_argument('--rounds', type=int, default=2)
    a = p.parse_args()
    import blosc2
    d = a.dir or tempfile.mkdtemp()
    rng = np.random.default_rng(7)
    arrays = {'field': smooth_field((256, 256, 256), rng),
              'random': rng.normal(size=(256, 256, 256)).astype(np.float32)}
    arrays['field'].tofile(os.path.join(d, 'lz4_encode-64-f'))
    arrays['random'].tofile(os.path.join(d, 'lz4_encode-64-r'))
    best = {}
    for _ in range(a.rounds):
        for name, arr in arrays.items():
            for clevel in (5, 9):
                cp = blosc2.CParams(codec=blosc2.Codec.LZ4, clevel=clevel, typesize=4,
                                    filters=[blosc2.Filter.SHUFFLE], filters_meta=[0], nthreads=1)
                for _ in range(a.reps):
                    t = time.perf_counter()
                    b = blosc2.asarray(arr, cparams=cp, dparams=blosc2.DParams(nthreads=1))
                    t = time.perf_counter() - t
                    key = (name, f'Blosc2 shuffle+lz4 clevel {clevel}')
                    best[key] = min(best.get(key, (1e9, 0))[0], t), arr.nbytes / b.schunk.cbytes
            for label, env in (('ours, lz4 (statistics on: the default)', {}),
                               ('ours, lz4 without statistics', {'NOSTATS': '1'})):
                out = subprocess.run([a.ours], env={**os.environ, **env, 'RA_BENCH_DIR': d, 'MB': '64',
                                                    'REPS': str(a.reps), 'WHICH': name},
                                     check=True, capture_output=True, text=True).stdout
                for line in out.splitlines():
                    # "field: 67108864 -> 52008545 in 56.4 ms, 1.19 GB/s"
                    w = line.split()
                    t, ratio = float(w[5]) / 1e3, int(w[1]) / int(w[3])
                    key = (name, label)
                    best[key] = min(best.get(key, (1e9, 0))[0], t), ratio
    print('| array | writer | ratio | compress GB/s | time / Blosc2 clevel 5 |')
    print('|---|---|---:|---:|---:|')
    for (name, label), (t, ratio) in best.items():
        base = best[(name, 'Blosc2 shuffle+lz4 clevel 5')][0]
        print(f'| {name} | {label} | {ratio:.3f} | {arrays[name].nbytes / t / 1e9:.2f} | {t / base:.2f} |')


if __name__ == '__main__':
    main()
