"""The xarray backend: ``xr.open_dataset(path, engine="rawarray")`` opens field and record files
lazily, with the dim names, coordinates and params the trailer holds, and ``isel``/``sel`` read
only the selected bytes (counted by the library's I/O statistics of the File the backend
opened)."""

import numpy as np
import pytest

import rawarray
from rawarray import _core

xr = pytest.importorskip("xarray", reason="xarray is not installed (tests/python/requirements.txt pins it)")


@pytest.fixture
def opened(monkeypatch):
    """Every rawarray.File opened while the test runs (the backend's ones among them)."""
    files = []
    init = _core.File.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        files.append(self)

    monkeypatch.setattr(_core.File, "__init__", spy)
    return files


def test_a_field_opens_lazily_with_its_names_coords_and_params(tmp, opened):
    a = (np.arange(6 * 5 * 4) * 0.5).reshape(6, 5, 4).astype("<f4")
    path = tmp / "temperature.ra"
    time = np.arange(6) * 10.0
    rawarray.write(path, a, dim_names=["time", "y", "x"], coords={"time": time, "x": [1, 2, 3, 4]},
                   params={"units": "K", "dt": 10.0})
    with rawarray.open(path) as f:
        assert f.dim_names == ("time", "y", "x")
        np.testing.assert_array_equal(f.coords["time"], time)
    # Closing keeps the metadata, the trailer's names and coords among it.
    assert f.closed and f.dim_names == ("time", "y", "x") and f.params["units"] == "K"
    np.testing.assert_array_equal(f.coords["x"], [1, 2, 3, 4])
    ds = xr.open_dataset(path, engine="rawarray")
    v = ds["temperature"]
    assert v.dims == ("time", "y", "x") and v.shape == a.shape and v.dtype == a.dtype
    assert ds.attrs == {"units": "K", "dt": 10.0}
    np.testing.assert_array_equal(ds["time"].values, time)
    np.testing.assert_array_equal(ds["x"].values, [1, 2, 3, 4])
    (f,) = [f for f in opened if f.path == str(path) and not f.closed]
    assert f.io_stats["bytes"] == 0                      # opening read no data
    got = v.isel(time=2, x=slice(1, 3)).values
    np.testing.assert_array_equal(got, a[2, :, 1:3])
    assert f.io_stats["bytes"] == 5 * 2 * 4              # 5 rows of 2 floats
    before = f.io_stats["bytes"]
    got = v.sel(time=[50.0, 0.0], x=4).values            # outer selection, not numpy's
    np.testing.assert_array_equal(got, a[[5, 0], :, 3])
    assert f.io_stats["bytes"] - before == 2 * 5 * 4
    ds.close()
    assert f.closed


def test_a_record_file_is_a_dataset_of_its_fields(tmp, opened):
    dt = np.dtype([("step", "<u8"), ("e", "<f8"), ("pos", "<f4", (3,))])
    path = tmp / "run.ra"
    with rawarray.RecordWriter(path, dt, params={"dt": 0.1}) as w:
        recs = np.zeros(40, dt)
        recs["step"] = np.arange(40)
        recs["e"] = -np.arange(40) * 0.5
        recs["pos"] = np.arange(120).reshape(40, 3)
        w.append(recs)
    ds = xr.open_dataset(path)                           # guessed from the extension
    assert set(ds.data_vars) == {"step", "e", "pos"}
    assert ds["pos"].dims == ("record", "pos_0") and ds.sizes["record"] == 40
    assert ds.attrs == {"dt": 0.1}
    (f,) = [f for f in opened if f.path == str(path)]
    sel = ds.isel(record=slice(10, 14))
    np.testing.assert_array_equal(sel["e"].values, recs["e"][10:14])
    assert f.io_stats["bytes"] == 4 * dt.itemsize        # the four records, nothing else
    np.testing.assert_array_equal(ds["pos"].isel(record=[3, 1], pos_0=2).values, recs["pos"][[3, 1], 2])
    ds.close()


def test_guess_can_open_by_magic_or_extension(tmp):
    from rawarray._xarray import RawArrayBackend

    rawarray.write(tmp / "noext", np.zeros(3))
    (tmp / "other.nc").write_bytes(b"CDF\x01")
    b = RawArrayBackend()
    assert b.guess_can_open(str(tmp / "x.ra")) and b.guess_can_open(tmp / "noext")
    assert not b.guess_can_open(str(tmp / "other.nc"))


def test_bad_names_and_coords_are_refused_naming_them(tmp):
    a = np.zeros((2, 3))
    with pytest.raises(rawarray.RaError, match="dim_names"):
        rawarray.write(tmp / "a.ra", a, dim_names=["y"])
    with pytest.raises(rawarray.RaError, match=r"coords\['x'\]: expected 3"):
        rawarray.write(tmp / "a.ra", a, dim_names=["y", "x"], coords={"x": [1, 2]})
    assert not (tmp / "a.ra").exists()
