"""``rawarray.open("s3://bucket/key")``: objects read through the library's StoreArrayReader,
against moto's S3 server on loopback (moto is pinned in tests/python/requirements.txt; the
package is built with its Cargo feature ``cloud`` by tests/python_package.rs). The store is
configured only by the environment (``AWS_*``), as object_store's builders read it; values are
checked against numpy's view of the same bytes, and the bytes fetched against the library's
count of them."""

import os
import pickle
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import rawarray
from conftest import make_ra, start_server

BUCKET = "rawarray"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's server on a loopback port, a bucket in it, and the environment that points
    object_store's S3 builder at it (restored afterwards). Yields the endpoint."""
    exe = Path(sys.executable).parent / "moto_server"
    assert exe.exists(), f"{exe}: moto[server] is pinned in tests/python/requirements.txt"
    server, port = start_server(lambda port: [str(exe), "-H", "127.0.0.1", "-p", str(port)],
                                "moto", tmp_path_factory.mktemp("moto") / "moto.log")
    endpoint = f"http://127.0.0.1:{port}"
    saved = dict(os.environ)
    try:
        # The bucket, by an unsigned request (moto takes them for new buckets and objects).
        req = urllib.request.Request(f"{endpoint}/{BUCKET}", data=b"", method="PUT")
        with urllib.request.urlopen(req) as r:
            assert r.status == 200, r.status
        os.environ.update(AWS_ENDPOINT=endpoint, AWS_ALLOW_HTTP="true", AWS_REGION="us-east-1",
                          AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test")
        yield endpoint
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.kill()
        server.wait()


def put(endpoint: str, path: str, body: bytes, **kw) -> None:
    """PUT ``/bucket/key`` by boto3 (moto's own dependency), an S3 client independent of ours;
    moto refuses unsigned overwrites."""
    import boto3  # noqa: PLC0415

    bucket, key = path.lstrip("/").split("/", 1)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
    s3.put_object(Bucket=bucket, Key=key, Body=body, **kw)


def upload(s3: str, key: str, tmp: Path, array: np.ndarray, acl=None, **kw) -> str:
    """``rawarray.write`` of ``array`` put at ``key`` (with S3's ``acl``); the object's URL."""
    rawarray.write(tmp / "upload.ra", array, **kw)
    put(s3, f"/{BUCKET}/{key}", (tmp / "upload.ra").read_bytes(), **({"ACL": acl} if acl else {}))
    return f"s3://{BUCKET}/{key}"


def field(shape):
    return (np.arange(np.prod(shape)) * 0.37 % 11 - 5).reshape(shape).astype("<f4")


KEYS = [(), 3, -1, (slice(None), 2), (Ellipsis, 7), (1, slice(None, None, -3), slice(2, 9, 2)),
        (np.newaxis, slice(-2, None), Ellipsis, 0), (slice(5, 1, -1), -4, slice(None))]


def test_an_object_reads_as_numpy_reads_its_bytes(tmp, s3):
    a = field((6, 10, 12))
    url = upload(s3, "runs/field.ra", tmp, a, params={"dt": 0.25}, dim_names=["t", "y", "x"])
    with rawarray.open(url) as f:
        assert (f.path, f.shape, f.dtype, f.ndim, f.size, f.nbytes) == (url, a.shape, a.dtype, 3,
                                                                         a.size, a.nbytes)
        assert f.params == {"dt": 0.25} and f.dim_names == ("t", "y", "x")
        np.testing.assert_array_equal(f.array(), a)
        for key in KEYS:
            np.testing.assert_array_equal(f[key], a[key], err_msg=str(key))
        with pytest.raises(IndexError, match="out of bounds for axis 1"):
            f[0, 10]
    # xarray's backend takes the URL too: a lazily indexed variable named after the object.
    xr = pytest.importorskip("xarray", reason="xarray is not installed")
    with xr.open_dataset(url, engine="rawarray") as ds:
        assert ds["field"].dims == ("t", "y", "x") and ds.attrs == {"dt": 0.25}
        np.testing.assert_array_equal(ds["field"].isel(t=2, x=slice(3, 9)).values, a[2, :, 3:9])
    # LZ4 (fetched whole once, then cut from) and big-endian objects (bytes built by hand).
    url = upload(s3, "runs/lz4.ra", tmp, a, compress=True)
    with rawarray.open(url) as f:
        assert f.header["compressed"]
        for key in KEYS:
            np.testing.assert_array_equal(f[key], a[key], err_msg=str(key))
    big = (np.arange(7 * 5).reshape(7, 5) * -3).astype(">i4")
    put(s3, f"/{BUCKET}/big.ra", make_ra(1, 4, [5, 7], big.tobytes(), flags=1))
    with rawarray.open(f"s3://{BUCKET}/big.ra") as f:
        assert f.header["big_endian"]
        np.testing.assert_array_equal(f[2:, ::2], big[2:, ::2])
        np.testing.assert_array_equal(f.array(), big)


def test_a_key_fetches_only_the_runs_it_touches(tmp, s3):
    # Planes of 2 MiB: the runs of a column are farther apart than the 1 MiB the reader
    # bridges, so each is a request of its own.
    a = np.arange(4 * 512 * 1024, dtype="<f4").reshape(4, 512, 1024)
    url = upload(s3, "runs/big.ra", tmp, a)
    f = rawarray.open(url)
    opened = f.io_stats
    assert opened["reads"] <= 2 and opened["bytes"] <= 2 * 65536  # the header, and the tail

    def fetched(key):
        before = f.io_stats
        got = f[key]
        np.testing.assert_array_equal(got, a[key])
        after = f.io_stats
        return after["reads"] - before["reads"], after["bytes"] - before["bytes"]

    assert fetched(2) == (1, 512 * 1024 * 4)          # a plane: one run
    assert fetched((1, 300, 17)) == (1, 4)            # an element
    assert fetched((slice(None), 300, 17)) == (4, 16)  # a column: four runs, one per plane
    assert fetched((3, slice(10, 12))) == (1, 2 * 1024 * 4)


def test_a_chunked_object_reads_its_subsets_and_shows_its_chunks(tmp, s3):
    a = field((6, 10, 12))
    url = upload(s3, "runs/chunked.ra", tmp, a, codec="zstd", chunks=(2, 5, 6), shuffle="bit")
    with rawarray.open(url) as f:
        # The same settings as the local file's (read from its config by another path).
        with rawarray.open(tmp / "upload.ra") as local:
            assert local.chunks == (2, 5, 6)
            assert f.compression == local.compression
        assert f.chunks == (2, 5, 6)
        c = f.compression
        assert (c["codec"], c["level"], c["shuffle"], c["chunks"]) == ("zstd", 3, "bit", (2, 5, 6))
        assert c["ratio"] == a.nbytes / f.header["size"]
        for key in KEYS:
            np.testing.assert_array_equal(f[key], a[key], err_msg=str(key))
        np.testing.assert_array_equal(f.array(), a)
    # A box inside one chunk fetches that chunk alone, measured on a new open of an object
    # larger than what the open fetches (its first and last 64 KiB: a small object, as the one
    # above, comes whole), with chunks between those. The reads of an opened object share a
    # cache of the bytes fetched: read again, the box fetches nothing.
    b = np.random.default_rng(7).standard_normal((6, 200, 240)).astype("<f4")  # no pattern
    url = upload(s3, "runs/chunked_big.ra", tmp, b, codec="zstd", chunks=(2, 100, 120))
    assert (tmp / "upload.ra").stat().st_size > 4 * (64 << 10)
    with rawarray.open(url) as f:
        before = f.io_stats["reads"]
        np.testing.assert_array_equal(f[3, 150:, :60], b[3, 150:, :60])
        assert f.io_stats["reads"] - before == 1
        np.testing.assert_array_equal(f[3, 150:, :60], b[3, 150:, :60])
        assert f.io_stats["reads"] - before == 1
        # Arrow streams read local files: a URL says so, naming what reads it.
        with pytest.raises(rawarray.RaError, match="read local files; `ra sql`"):
            f.to_arrow()
    # A plain object has no chunks; an LZ4 one names its whole block.
    with rawarray.open(upload(s3, "runs/plain.ra", tmp, a)) as f:
        assert (f.chunks, f.compression) == (None, None)
    with rawarray.open(upload(s3, "runs/lz4w.ra", tmp, a, compress=True)) as f:
        assert f.chunks is None and f.compression["codec"] == "lz4-whole"


def test_an_object_written_again_is_refused(tmp, s3):
    a = field((3, 4, 5))
    url = upload(s3, "runs/again.ra", tmp, a)
    f = rawarray.open(url)
    pickled = pickle.dumps(f)
    g = pickle.loads(pickled)  # unchanged: opens again
    np.testing.assert_array_equal(g[1], a[1])
    upload(s3, "runs/again.ra", tmp, a + 1)  # the same size and header, other bytes
    with pytest.raises(OSError, match=f"{url}: .*changed since it was opened"):
        f[0]
    with pytest.raises(rawarray.RaError, match="written again"):
        pickle.loads(pickled)
    with rawarray.open(url) as h:
        np.testing.assert_array_equal(h[0], a[0] + 1)


def test_a_large_write_is_the_local_files_bytes_in_numbered_parts(tmp, s3):
    # 48 MiB of noise, chunked: parts of 16 MiB. The chunks go up as they are encoded and the
    # first part (header, config, index) last (doc/cloud.md, "one writer, the head last"): the
    # object is byte for byte the local file, in as many parts as 16 MiB cut it into (S3's
    # ETag of a multipart object ends in "-N"), and no upload is left.
    big = np.random.default_rng(5).random((48, 512, 512), dtype=np.float32)
    kw = {"chunks": (8, 512, 512), "codec": "lz4"}
    url = f"s3://{BUCKET}/runs/big.ra"
    rawarray.write(url, big, **kw)
    rawarray.write(tmp / "big.ra", big, **kw)
    c = _boto(s3)
    got = c.get_object(Bucket=BUCKET, Key="runs/big.ra")
    assert got["Body"].read() == (tmp / "big.ra").read_bytes()
    parts = -(-(tmp / "big.ra").stat().st_size // (16 << 20))
    assert parts >= 3 and got["ETag"].strip('"').endswith(f"-{parts}"), (parts, got["ETag"])
    assert c.list_multipart_uploads(Bucket=BUCKET, Prefix="runs/big.ra").get("Uploads", []) == []
    np.testing.assert_array_equal(rawarray.read(url), big)


def test_to_dask_on_a_cluster_reads_the_object(tmp, s3):
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    a = field((20, 16, 24)).astype("<f8")
    url = upload(s3, "runs/dask.ra", tmp, a)
    # The workers start after the fixture set AWS_*: they configure their stores from it.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        x = rawarray.to_dask(url, chunks=(6, 16, 24))
        np.testing.assert_allclose(x.mean(axis=0).compute(), a.mean(axis=0), rtol=1e-12)
        np.testing.assert_array_equal(x[3:17:4, ::-2, 5].compute(), a[3:17:4, ::-2, 5])
        assert len(set(client.run(os.getpid).values())) == 2


def test_other_urls(tmp, s3, monkeypatch):
    a = field((3, 4, 5))
    upload(s3, "runs/http.ra", tmp, a, acl="public-read")
    # The same object by plain HTTP (no signature: it is public), and a local file.
    for url in (f"{s3}/{BUCKET}/runs/http.ra", (tmp / "upload.ra").resolve().as_uri()):
        with rawarray.open(url) as f:
            np.testing.assert_array_equal(f[1:, 2], a[1:, 2], err_msg=url)
    with pytest.raises(FileNotFoundError, match=f"s3://{BUCKET}/runs/missing.ra"):
        rawarray.open(f"s3://{BUCKET}/runs/missing.ra")
    # gs:// is read too (by object_store's GCS client): with no credentials anywhere (none in
    # the environment, no gcloud configuration under HOME), the failed request says where they
    # were looked for and what to set, whatever the network answered (here: nothing, or a 403
    # of the instance metadata service or of the bucket).
    for name in [n for n in os.environ if n.startswith(("GOOGLE_", "CLOUDSDK_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp))
    with pytest.raises(OSError, match="gs://bucket/field.ra: .*no credentials were given: .*"
                                      "GOOGLE_APPLICATION_CREDENTIALS.*\"anon\": True"):
        rawarray.open("gs://bucket/field.ra")
    # A URL kind it does not read lists those it does.
    with pytest.raises(rawarray.RaError, match="not an object-store URL.*s3://, s3a://, gs://"):
        rawarray.open("ftp://host/field.ra")


# Many writers of one object: rawarray.ArrayWriter(url, ...) (doc/cloud.md).

def _boto(endpoint: str):
    import boto3  # noqa: PLC0415

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


def _leftovers(endpoint: str, key: str) -> tuple[list[str], list[str]]:
    """The objects and the multipart uploads under the hidden folder of ``key``'s writers,
    as S3 lists them (boto3, independent of the library)."""
    folder, name = key.rsplit("/", 1)
    prefix = f"{folder}/.{name}.rawarray-parts/"
    c = _boto(endpoint)
    objects = [o["Key"] for o in c.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]
    uploads = [u["Key"] for u in c.list_multipart_uploads(Bucket=BUCKET, Prefix=prefix).get("Uploads", [])]
    return objects, uploads


def test_blocks_from_many_writers_make_one_object_copied_by_the_store(s3):
    # Raw chunks (codec "none") of 6 MiB: blocks of 5 MiB or more go by UploadPartCopy.
    a = np.random.default_rng(7).random((18, 512, 512), dtype=np.float32)
    url = f"s3://{BUCKET}/many/copied.ra"
    w = rawarray.ArrayWriter(url, a.shape, a.dtype, chunks=(6, 512, 512), codec="none")
    assert isinstance(w, rawarray.ArrayWriter) and w.chunks == (6, 512, 512)
    # Each "worker" gets the writer pickled, as dask sends it.
    for z in (12, 0, 6):
        worker = pickle.loads(pickle.dumps(w))
        assert not worker.created and worker.session == w.session
        worker[z:z + 6] = a[z:z + 6]
    # A block upload killed mid-way: its multipart upload left open in the session's folder.
    c = _boto(s3)
    dead = f"many/.copied.ra.rawarray-parts/{w.session}/b0-1_0-1_0-1"
    up = c.create_multipart_upload(Bucket=BUCKET, Key=dead)
    c.upload_part(Bucket=BUCKET, Key=dead, UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 100)
    with pytest.raises(FileNotFoundError):
        rawarray.open(url)  # nothing at the URL before close
    w.close()
    done = w.finished
    assert done["blocks"] == 3 and done["chunks"] == 3, done
    # The first block's first 5 MiB (less the header) go with the header; the rest of it
    # is under 5 MiB and is streamed; the other two blocks (12 MiB) are copied by the store.
    assert done["copied"] == 12 << 20 and done["parts"] == 3, done
    assert done["streamed"] == done["bytes"] - done["copied"] < 7 << 20, done
    with rawarray.open(url) as f:
        assert f.chunks == (6, 512, 512)
        np.testing.assert_array_equal(f[...], a)
    assert _leftovers(s3, "many/copied.ra") == ([], [])


def test_an_unfinished_store_writes_nothing_and_recover_removes_its_blocks(s3):
    a = field((8, 6, 10))
    url = f"s3://{BUCKET}/many/partial.ra"
    w = rawarray.ArrayWriter(url, a.shape, a.dtype, chunks=(2, 6, 10), codec="zstd")
    w[0:2] = a[0:2]
    w[4:8] = a[4:8]
    with pytest.raises(ValueError, match=r"not whole chunks"):
        w[1:3] = a[1:3]
    # A chunk missing (axis 0 at 2:4, named in numpy's order): refused, nothing written.
    with pytest.raises(rawarray.RaError,
                       match=r"1 of 4 chunks were never written.*The first missing: block \[2:4, 0:6, 0:10\]$"):
        w.close()
    with pytest.raises(FileNotFoundError):
        rawarray.open(url)
    assert len(_leftovers(s3, "many/partial.ra")[0]) == 2
    # A whole write of the URL killed mid-upload: its multipart upload left open at the key.
    c = _boto(s3)
    up = c.create_multipart_upload(Bucket=BUCKET, Key="many/partial.ra")
    c.upload_part(Bucket=BUCKET, Key="many/partial.ra", UploadId=up["UploadId"], PartNumber=1,
                  Body=b"x" * 100)
    # The client died here: recover removes what its session and the dead upload left.
    assert rawarray.recover_url(url) == 3
    assert _leftovers(s3, "many/partial.ra") == ([], [])
    assert c.list_multipart_uploads(Bucket=BUCKET, Prefix="many/partial.ra").get("Uploads", []) == []
    # An exception inside `with` aborts: the blocks go, nothing is written.
    with pytest.raises(KeyError), rawarray.ArrayWriter(url, a.shape, a.dtype, chunks=(2, 6, 10)) as w:
        w[0:2] = a[0:2]
        raise KeyError("the computation failed")
    assert _leftovers(s3, "many/partial.ra") == ([], [])
    with pytest.raises(FileNotFoundError):
        rawarray.open(url)
    # fill_missing writes the chunks never written as zeros.
    w = rawarray.ArrayWriter(url, a.shape, a.dtype, chunks=(2, 6, 10))
    w[6:8] = a[6:8]
    w.close(fill_missing=True)
    want = np.zeros_like(a)
    want[6:8] = a[6:8]
    np.testing.assert_array_equal(rawarray.read(url), want)


def test_da_store_from_a_two_process_cluster_writes_the_array(tmp, s3):
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    a = field((24, 16, 30)).astype("<f8")
    url = f"s3://{BUCKET}/many/dask.ra"
    marker = tmp / "killed"

    def compute(block, block_info=None):
        # The worker running the block at z = 8 dies the first time: dask runs it again on the
        # other worker (or the restarted one); its dead attempt left no block.
        z = block_info[0]["array-location"][0][0]
        if z == 8 and not marker.exists():
            marker.write_text("killed")
            os.kill(os.getpid(), 9)
        return block

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(set(client.run(os.getpid).values())) == 2
        x = da.from_array(a, chunks=(4, 16, 30)).map_blocks(compute, dtype=a.dtype)
        with rawarray.ArrayWriter(url, a.shape, a.dtype, chunks=(4, 16, 30), codec="zstd") as w:
            da.store(x, w, lock=False)
        assert marker.exists()
        assert w.finished["blocks"] == 6 and w.finished["chunks"] == 6, w.finished
        np.testing.assert_array_equal(rawarray.read(url), a)
        assert _leftovers(s3, "many/dask.ra") == ([], [])

        # A store that fails (a block that cannot be computed): nothing at the URL, no blocks.
        def fail(block, block_info=None):
            if block_info[0]["array-location"][0][0] == 12:
                raise ArithmeticError("this block cannot be computed")
            return block

        url2 = f"s3://{BUCKET}/many/failed.ra"
        y = da.from_array(a, chunks=(4, 16, 30)).map_blocks(fail, dtype=a.dtype)
        with pytest.raises(ArithmeticError), \
                rawarray.ArrayWriter(url2, a.shape, a.dtype, chunks=(4, 16, 30)) as w:
            da.store(y, w, lock=False)
        with pytest.raises(FileNotFoundError):
            rawarray.open(url2)
        # The abort removed the blocks written before the failure; a task still running then
        # may upload its block after it: recover removes those once the cluster is idle.
        deadline = time.monotonic() + 30
        while any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        rawarray.recover_url(url2)
        assert _leftovers(s3, "many/failed.ra") == ([], [])
        with pytest.raises(FileNotFoundError):
            rawarray.open(url2)
