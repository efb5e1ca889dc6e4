#!/usr/bin/env python3
"""Compression peers on the same arrays, in one process: what a user gets from Blosc2 (B2ND), pcodec, numcodecs,
zarr v3, HDF5 (shuffle + zstd through hdf5plugin) and plain zstd. `cargo bench --bench compress` runs this script
(RA_BENCH_PEERS=<python of a venv with the peers>) and measures the chunked layout on the arrays it saves, so that
both sides' rows land in one table, in one run; it can also run alone.

Data: a smooth 3-D f32 field with 1e-3 noise, random normal f32, and 76-byte N-body records (the field of issue 34's
table). Figures: ratio (raw bytes / bytes stored), compress and decompress GB/s of the raw bytes. Blosc2, pcodec and
numcodecs compress in memory (as the Rust bench does); zarr and HDF5 write files (their usual use), in --dir.
A peer that is not installed is skipped with a printed reason.

--planes MIB: instead, a smooth f32 field of MIB MiB (numpy shape (MIB, 512, 512)), written with Blosc2's B2ND at its
default chunks and blocks (shuffle + zstd 3), then the time to open the file and read the middle plane across each
axis, and one element (best of --runs, page cache warm).

--save-data DIR writes the arrays as raw little-endian bytes with meta.json (shapes, the records' numpy descr).
Usage: compress_peers.py [--n 256] [--threads 1] [--dir /dev/shm/peers] [--runs 3] [--json OUT] [--save-data DIR]
                         [--planes MIB]"""
import argparse, os, shutil, sys, time, json
import numpy as np

LOSSY_BITS = (7, 10, 14)


def smooth_field(shape, rng):
    nz, ny, nx = shape
    f = (np.sin(np.linspace(0, 4 * np.pi, nz, dtype=np.float32))[:, None, None]
         * np.cos(0.7 * np.linspace(0, 4 * np.pi, ny, dtype=np.float32))[None, :, None]
         + 0.3 * np.sin(1.3 * np.linspace(0, 4 * np.pi, nx, dtype=np.float32))[None, None, :]).astype(np.float32)
    # Noise in f32 one plane at a time: a 1 GiB field never needs a 2 GiB f64 temporary.
    for k in range(nz):
        f[k] += np.float32(1e-3) * rng.standard_normal((ny, nx), dtype=np.float32)
    return f


RECORD = np.dtype([('step', '<u8'), ('time', '<f8'), ('id', '<u4'), ('position', '<f8', (3,)),
                   ('velocity', '<f8', (3,)), ('energy', '<f8')])


def records(n, rng):
    bodies, steps = 64, n // 64
    a = np.zeros(bodies * steps, RECORD)
    s = np.repeat(np.arange(steps), bodies); i = np.tile(np.arange(bodies), steps)
    a['step'] = s; a['time'] = s * 1e-3; a['id'] = i
    t = s * 1e-3
    for k in range(3):
        a['position'][:, k] = np.cos(t + i + k) * (1 + i / 64)
        a['velocity'][:, k] = -np.sin(t + i + k) * (1 + i / 64)
    a['energy'] = -0.5 + 1e-6 * rng.normal(size=a.shape)
    return a


def best(f, runs, setup=None):
    """The best time of `runs` calls of f (of f(setup()), untimed setup, when given) and the last result."""
    ts = []
    r = None
    for _ in range(runs):
        x = setup() if setup else None
        t0 = time.perf_counter(); r = f(x) if setup else f(); ts.append(time.perf_counter() - t0)
    return min(ts), r


def save(dirname, name, arr, meta):
    os.makedirs(dirname, exist_ok=True)
    arr.tofile(os.path.join(dirname, name + '.bin'))
    meta[name] = dict(shape=list(arr.shape), dtype=arr.dtype.descr if arr.dtype.names else arr.dtype.str,
                      itemsize=arr.dtype.itemsize)
    with open(os.path.join(dirname, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=1)


def skip(what, why):
    print(f'skipped: {what}: {why}', file=sys.stderr)


def compression(a, rows):
    rng = np.random.default_rng(7)
    datasets = {
        'field': ('smooth f32 field', smooth_field((a.n, a.n, a.n), rng)),
        'random': ('random normal f32', rng.normal(size=(a.n, a.n, a.n)).astype(np.float32)),
        'nbody': ('N-body records (76 B)', records(a.n ** 3 // 19, rng)),
    }
    meta = {}
    if a.save_data:
        for key, (_, arr) in datasets.items():
            save(a.save_data, key, arr, meta)
    try:
        import blosc2
        blosc2.set_nthreads(a.threads)
    except ImportError as e:
        blosc2 = None; skip('Blosc2', e)
    try:
        import zstandard
    except ImportError as e:
        zstandard = None; skip('plain zstd', e)
    try:
        from pcodec import standalone as pco_standalone, ChunkConfig
    except ImportError as e:
        pco_standalone = None; skip('pcodec', e)
    try:
        import numcodecs
    except ImportError as e:
        numcodecs = None; skip('numcodecs', e)
    try:
        import zarr
        from zarr.codecs import BloscCodec
    except ImportError as e:
        zarr = None; skip('zarr v3', e)
    try:
        import h5py, hdf5plugin
    except ImportError as e:
        h5py = None; skip('HDF5', e)
    for key, (name, arr) in datasets.items():
        raw = arr.tobytes(); nb = len(raw)
        digest = hash(raw)
        floats = arr.dtype.kind == 'f'

        def row(who, size, tc, td, max_rel=None):
            rows.append(dict(data=key, label=name, who=who, ratio=nb / size, c_gbs=nb / tc / 1e9,
                             d_gbs=nb / td / 1e9, max_rel_err=max_rel))

        def rel_err(back):
            back = np.asarray(back).reshape(arr.shape).view(arr.dtype)
            d = np.abs(back.astype(np.float64) - arr.astype(np.float64))
            m = np.abs(arr.astype(np.float64)) > 0
            return float(np.max(d[m] / np.abs(arr[m].astype(np.float64))))

        if zstandard is not None:
            cz = zstandard.ZstdCompressor(level=3, threads=a.threads if a.threads > 1 else 0)
            tc, comp = best(lambda: cz.compress(raw), a.runs)
            dz = zstandard.ZstdDecompressor()
            td, _ = best(lambda: dz.decompress(comp), a.runs)
            row('zstd 3 whole buffer (no shuffle)', len(comp), tc, td)
        if blosc2 is not None:
            def b2nd(label, filters, meta_, lossy=None, codec=blosc2.Codec.ZSTD, clevel=3):
                cp = blosc2.CParams(codec=codec, clevel=clevel, typesize=arr.dtype.itemsize,
                                    filters=filters, filters_meta=meta_, nthreads=a.threads)
                dp = blosc2.DParams(nthreads=a.threads)
                if arr.dtype.names is None:
                    # trunc_prec rounds the input buffer in place: each run compresses a fresh copy (untimed).
                    tc, b = best(lambda x: blosc2.asarray(x, cparams=cp, dparams=dp), a.runs, setup=arr.copy)
                    td, back = best(lambda: b[...], a.runs)
                    size = b.schunk.cbytes
                    where = f'B2ND, chunks {b.chunks}, blocks {b.blocks}'
                else:
                    tc, c = best(lambda: blosc2.compress2(raw, cparams=cp), a.runs)
                    td, back = best(lambda: blosc2.decompress2(c, dparams=dp), a.runs)
                    size = len(c)
                    where = f'compress2, typesize {arr.dtype.itemsize}'
                    back = np.frombuffer(back, arr.dtype)
                row(f'blosc2 {label} ({where})', size, tc, td, rel_err(back) if lossy else None)
            S, BD, TP = blosc2.Filter.SHUFFLE, blosc2.Filter.BYTEDELTA, blosc2.Filter.TRUNC_PREC
            b2nd('shuffle+zstd 3', [S], [0])
            b2nd('shuffle+bytedelta+zstd 3', [S, BD], [0, 0])
            # LZ4 at clevel 5 (Blosc2's LZ4_compress_fast acceleration 10 - clevel = 5) and 9 (acceleration 1,
            # LZ4_compress_default's effort, as our lz4 codec).
            b2nd('shuffle+lz4 5', [S], [0], codec=blosc2.Codec.LZ4, clevel=5)
            b2nd('shuffle+lz4 9', [S], [0], codec=blosc2.Codec.LZ4, clevel=9)
            if floats:
                for bits in LOSSY_BITS:
                    b2nd(f'trunc_prec({bits})+shuffle+zstd 3', [TP, S], [bits, 0], lossy=True)
                    b2nd(f'trunc_prec({bits})+shuffle+bytedelta+zstd 3', [TP, S, BD], [bits, 0, 0], lossy=True)
            else:
                skip(f'blosc2 trunc_prec on {name}', 'it takes floats of 4 or 8 bytes')
        if pco_standalone is not None:
            if floats:
                flat = arr.reshape(-1)
                tc, comp = best(lambda: pco_standalone.simple_compress(flat, ChunkConfig(compression_level=8)), a.runs)
                td, _ = best(lambda: pco_standalone.simple_decompress(comp), a.runs)
                row('pcodec 1.1 standalone, level 8 (one thread)', len(comp), tc, td)
            else:
                skip(f'pcodec on {name}', 'it takes numeric arrays, not records')
        if numcodecs is not None:
            if floats:
                for bits in LOSSY_BITS:
                    br, zs = numcodecs.BitRound(keepbits=bits), numcodecs.Zstd(level=3)
                    # BitRound.encode rounds its input in place: each run rounds a fresh copy (untimed).
                    tc, comp = best(lambda x: zs.encode(br.encode(x)), a.runs, setup=arr.copy)
                    td, back = best(lambda: np.frombuffer(zs.decode(comp), arr.dtype), a.runs)
                    row(f'numcodecs BitRound({bits})+Zstd(3), whole buffer (one thread)', len(comp), tc, td,
                        rel_err(back))
            else:
                skip(f'numcodecs BitRound on {name}', 'it takes floats')
        if zarr is not None:
            if arr.dtype.names is None:
                path = os.path.join(a.dir, 'z.zarr')
                zarr.config.set({'async.concurrency': a.threads, 'threading.max_workers': a.threads})
                def comp_z():
                    shutil.rmtree(path, ignore_errors=True)
                    z = zarr.create_array(path, shape=arr.shape, dtype=arr.dtype,
                                          chunks=tuple(min(64, n) for n in arr.shape),
                                          compressors=[BloscCodec(cname='zstd', clevel=3, shuffle='shuffle')])
                    z[...] = arr
                tc, _ = best(comp_z, a.runs)
                size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
                td, _ = best(lambda: zarr.open_array(path)[...], a.runs)
                row('zarr v3 blosc shuffle+zstd 3, chunks 64^3 (files)', size, tc, td)
            else:
                skip(f'zarr v3 on {name}', 'structured dtypes are not in zarr v3\'s core data types')
        if h5py is not None:
            path = os.path.join(a.dir, 'h.h5')
            chunks = tuple(min(c, n) for c, n in zip((64, 64, 64) if arr.ndim == 3 else (65536,), arr.shape))
            def comp_h():
                with h5py.File(path, 'w') as f:
                    f.create_dataset('a', data=arr, chunks=chunks, shuffle=True, **hdf5plugin.Zstd(clevel=3))
            tc, _ = best(comp_h, a.runs)
            size = os.path.getsize(path)
            def read_h():
                with h5py.File(path) as f:
                    return f['a'][...]
            td, _ = best(read_h, a.runs)
            row(f'HDF5 shuffle+zstd 3 (hdf5plugin), chunks {chunks} (file)', size, tc, td)
        assert hash(arr.tobytes()) == digest, f'{name}: a peer changed its input'


def planes(a, rows):
    import blosc2
    blosc2.set_nthreads(a.threads)
    rng = np.random.default_rng(7)
    arr = smooth_field((a.planes, 512, 512), rng)
    if a.save_data:
        save(a.save_data, 'plane_field', arr, {})
    path = os.path.join(a.dir, 'plane.b2nd')
    cp = blosc2.CParams(codec=blosc2.Codec.ZSTD, clevel=3, typesize=4, filters=[blosc2.Filter.SHUFFLE],
                        filters_meta=[0], nthreads=a.threads)
    dp = blosc2.DParams(nthreads=a.threads)
    b = blosc2.asarray(arr, urlpath=path, mode='w', cparams=cp, dparams=dp)
    who = f'blosc2 B2ND shuffle+zstd 3, default chunks {b.chunks}, blocks {b.blocks}'
    blocks = b.blocks
    size = os.path.getsize(path)
    del b
    mid = tuple(s // 2 for s in arr.shape)
    keys = {
        'plane across numpy axis 0 [k, :, :]': (mid[0], slice(None), slice(None)),
        'plane across numpy axis 1 [:, j, :]': (slice(None), mid[1], slice(None)),
        'plane across numpy axis 2 [:, :, i]': (slice(None), slice(None), mid[2]),
        'one element [k, j, i]': mid,
    }
    for what, key in keys.items():
        t, got = best(lambda: blosc2.open(path, dparams=dp)[key], a.runs)
        assert np.array_equal(got, arr[key]), what
        rows.append(dict(data='plane_field', who=who, read=what, ms=t * 1e3, ratio=arr.nbytes / size, blocks=list(blocks),
                         key=[[k.start, k.stop] if isinstance(k, slice) else k for k in key]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=256); ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--dir', default='/dev/shm/peers'); ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--json', default=None); ap.add_argument('--save-data', default=None)
    ap.add_argument('--planes', type=int, default=0, help='MiB of the plane-read field (0: the compression table)')
    a = ap.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True); os.makedirs(a.dir)
    rows = []
    if a.planes:
        planes(a, rows)
        for r in rows:
            print(f"{r['who']:70} {r['read']:40} {r['ms']:9.3f} ms")
    else:
        compression(a, rows)
        print(f"{'data':24} {'writer':90} {'ratio':>6} {'comp GB/s':>9} {'dec GB/s':>8}")
        for r in rows:
            print(f"{r['label']:24} {r['who']:90} {r['ratio']:6.3f} {r['c_gbs']:9.2f} {r['d_gbs']:8.2f}")
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(dict(threads=a.threads, runs=a.runs, rows=rows), f, indent=1)


if __name__ == '__main__':
    main()
