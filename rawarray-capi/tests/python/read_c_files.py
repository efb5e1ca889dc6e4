"""numpy reads, through the rawarray package, the files the C API wrote (tests/c_api.rs).

    read_c_files.py arrays DIR              the arrays of write_check.c
    read_c_files.py records N FILE...       record files of records_check.c, by field name
Prints one line per file checked."""

import sys
from pathlib import Path

import numpy as np
import rawarray


def arrays(d: Path) -> None:
    nx, ny, nz = 40, 30, 20
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    want = (x + 100 * y + 10000 * z).astype(np.float32)
    for name in ["c_plain", "c_lz4whole", "c_zstd", "c_lz4", "c_pco", "c_big"]:
        a = rawarray.read(d / f"{name}.ra")
        assert a.shape == (nz, ny, nx) and a.dtype == np.float32, (name, a.shape, a.dtype)
        np.testing.assert_array_equal(a, want, err_msg=name)
        print("numpy ok", name)
    f = rawarray.open(d / "c_zstd.ra")
    assert f.params == {"units": "K", "dt": 0.5}, f.params
    assert f.compression["codec"] == "zstd" and f.compression["level"] == 5, f.compression
    print("numpy ok c_zstd params and compression")
    np.testing.assert_array_equal(rawarray.read(d / "c_f64.ra"), np.arange(1000) * 0.125 - 3.0)
    g = rawarray.read(d / "c_i32.ra")
    np.testing.assert_array_equal(g, (np.arange(7)[:, None] - 3) * 1000 + np.arange(11)[None, :])
    print("numpy ok c_f64 c_i32")


def records(n: int, files: list[str]) -> None:
    for name in files:
        r = rawarray.read(name)
        assert r.shape == (n,), (name, r.shape)
        assert list(r.dtype.names) == ["step", "position", "energy", "flag"], r.dtype
        assert r.dtype.itemsize == 29, r.dtype  # packed: no padding
        i = np.arange(n)
        np.testing.assert_array_equal(r["step"], i)
        np.testing.assert_array_equal(r["position"][:, 1], (0.5 * i).astype(np.float32))
        np.testing.assert_array_equal(r["energy"], 1.0 / (1.0 + i))
        np.testing.assert_array_equal(r["flag"], i % 3)
        assert rawarray.open(name).params == {"dt": 0.25, "code": "C"}
        print("numpy ok records", name)


if sys.argv[1] == "arrays":
    arrays(Path(sys.argv[2]))
else:
    records(int(sys.argv[2]), sys.argv[3:])
