"""Every reference file (C, Julia and Python writers) read by the package equals numpy's own view
of the same bytes, parsed by hand here; order="F" gives the file's dims, F-contiguous."""

import hashlib

import numpy as np
import pytest

import rawarray
from conftest import REFERENCE, numpy_view_by_hand, parse_by_hand

FILES = sorted(p.name for p in REFERENCE.glob("*.ra"))


def test_all_reference_files_are_here():
    assert len(FILES) == 13, FILES


@pytest.mark.parametrize("name", FILES)
def test_reference_file_reads_as_numpy_sees_it(name):
    path = REFERENCE / name
    before = hashlib.md5(path.read_bytes()).hexdigest()
    want = numpy_view_by_hand(path)
    got = rawarray.read(path)
    assert got.shape == want.shape
    assert got.dtype.kind == want.dtype.kind and got.dtype.itemsize == want.dtype.itemsize
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous
    f = rawarray.read(path, order="F")
    h, _, _ = parse_by_hand(path.read_bytes())
    assert f.shape == tuple(h["dims"])
    assert f.flags.f_contiguous
    np.testing.assert_array_equal(f, want.T)
    assert hashlib.md5(path.read_bytes()).hexdigest() == before


def test_test_ra_holds_k_minus_i_over_k():
    # The reference README: element k (column-major) of test.ra is k - i/k.
    a = rawarray.read(REFERENCE / "test.ra", order="F").ravel(order="F")
    k = np.arange(1, 12)
    np.testing.assert_allclose(a[1:], k - 1j / k)
    assert a[0].real == 0 and np.isinf(a[0].imag)


def test_compressed_mnist_equals_plain():
    z = rawarray.read(REFERENCE / "mnist_8_z.ra")
    plain = rawarray.read(REFERENCE / "mnist_8.ra")
    np.testing.assert_array_equal(z, plain)
    assert z.flags.owndata is False and z.flags.writeable is False


def test_open_reports_the_header():
    with rawarray.open(REFERENCE / "mnist_8_z.ra") as f:
        assert f.header == {
            "eltype": 2, "elbyte": 1, "dims": [28, 28, 3], "flags": 2, "size": 486,
            "header_len": 72, "big_endian": False, "compressed": True,
        }
        assert f.shape == (3, 28, 28)
        assert f.dtype == np.dtype("u1")
        assert f.params is None and f.schema is None
