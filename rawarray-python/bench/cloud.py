"""rawarray on S3 against zarr v3 and h5py, on moto's S3 server on loopback: time and requests
for parts of a chunked field read from its URL, and the upload of the field (issue 36).

    python rawarray-python/bench/cloud.py [--mib 1024] [--runs 5] [--only upload|reads]
                                          [--moto-as-is]

Run it with the Python of a virtual environment that has the rawarray package (built with its
Cargo feature ``cloud``, as the tests build it: tests/common/python.rs). What else it needs
(moto's server, zarr, s3fs, h5py, hdf5plugin) it installs there first, at the versions pinned
in tests/python/requirements.txt and rawarray-python/bench/requirements.txt. ``RA_BENCH_MIB``
sets the size as ``--mib`` does.

The field is float32 of numpy shape ``(MIB, 512, 512)`` (1 MiB a plane): smooth waves plus a
little noise. Every system stores it in chunks of 64 x 64 x 64 with zstd level 3 after a byte
shuffle: rawarray's chunked layout (``codec="zstd", shuffle="byte"``), zarr v3 with
``BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")`` in zarr's own fsspec store (s3fs),
HDF5 with ``shuffle=True`` and hdf5plugin's Zstd(3), written locally, uploaded, and read by
``h5py.File(s3fs.open(...))`` with s3fs's default read-ahead. The server is moto's, in a
child process of this script behind a counter of the requests it answers and the bytes they
move (bodies both ways: "MiB" in the table); moto's ranged GET is made to cost what it returns,
as S3's does (see ``ranged_gets_cost_their_range``).

Each read opens the array afresh (a new file system object for zarr and h5py, so no cache of a
previous run helps) and is timed from the open to the values in memory: the median of
``--runs`` (the whole array and the uploads, which alternate ra and zarr: of
``max(1, runs // 2)``). Requests are those of one run.
"""

import argparse
import json
import logging
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUCKET = "bench"
CHUNK = 64
KEY = SECRET = "test"


def pinned(requirements: Path, names: list[str]) -> list[str]:
    """The pinned lines of ``names`` in a requirements file (the one home of the versions)."""
    out = []
    for line in requirements.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==", line.strip())
        if m and m.group(1).lower() in names:
            out.append(line.strip())
    missing = set(names) - {re.match(r"[A-Za-z0-9_.\-]+", p).group(0).lower() for p in out}
    if missing:
        raise SystemExit(f"{requirements}: no pinned line for {', '.join(sorted(missing))}")
    return out


def ensure_installed() -> None:
    """Installs the peers and moto into this environment if any is missing."""
    want = {"moto": "moto", "zarr": "zarr", "s3fs": "s3fs", "h5py": "h5py",
            "hdf5plugin": "hdf5plugin"}
    missing = []
    for module, package in want.items():
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if not missing:
        return
    if sys.prefix == sys.base_prefix:
        raise SystemExit(f"{', '.join(missing)} missing: run this with a virtual environment's "
                         "Python (it installs them there), e.g. target/tmp/python-env/bin/python")
    reqs = pinned(ROOT / "tests/python/requirements.txt", ["moto"])
    reqs += pinned(HERE / "requirements.txt", ["zarr", "s3fs", "boto3", "h5py", "hdf5plugin"])
    print(f"installing {' '.join(reqs)} into {sys.prefix}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", *reqs], check=True)


# --- the server: moto behind a counter ---------------------------------------------------------

def ranged_gets_cost_their_range() -> None:
    """moto answers a ranged GET by reading the whole object (``FakeKey.value``) and slicing
    it, so a request for 64 KiB of a 700 MiB object costs 700 MiB of copying there; S3 does
    not. Each object's bytes are kept once read, so that a ranged GET costs what it returns
    (and a format of one large object is not charged for moto's shortcut). A write drops
    them."""
    from moto.s3.models import FakeKey  # noqa: PLC0415

    plain = FakeKey.value

    def fget(self):
        v = self.__dict__.get("_bench_value")
        if v is None:
            v = self.__dict__["_bench_value"] = plain.fget(self)
        return v

    def fset(self, new):
        self.__dict__.pop("_bench_value", None)
        plain.fset(self, new)

    FakeKey.value = property(fget, fset)


def completions_join_once() -> None:
    """moto's CompleteMultipartUpload joins the parts in Python four times over (a bytearray
    of the object and one for its whole-object CRC64, then ``bytes`` of each) before storing
    it: 4.8 s for 768 MiB in one process, 10 of the 17 s of a 1 GiB upload behind this
    server. S3 assembles an object server-side, and the request costs its client about the
    same for any size. Here the parts are joined once and the checksum computed over that one
    copy: the same checks, object, ETag and checksum as moto's own ``complete``."""
    import hashlib  # noqa: PLC0415

    from moto.s3 import models  # noqa: PLC0415

    def complete(self, body):
        parts, last = [], None
        for pn, etag in body:
            part = self.parts.get(pn)
            if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
                raise models.InvalidPart()
            if last is not None and last.contentsize < models.S3_UPLOAD_PART_MIN_SIZE:
                raise models.EntityTooSmall()
            parts.append(part)
            last = part
        if not parts:
            raise models.MalformedXML
        value = b"".join(p.value for p in parts)
        md5s = b"".join(bytes.fromhex(p.etag.replace('"', "")) for p in parts)
        checksum = models.MultipartChecksumBuilder(
            self.metadata.get("x-amz-checksum-algorithm"),
            self.metadata.get("x-amz-checksum-type"))
        if checksum.checksum_type == "COMPOSITE":
            for p in parts:
                checksum.addPart(p.value)
        else:
            checksum.complete_object = value  # bytes(value) in build() is value itself
            checksum.part_count = len(parts)
        return value, f"{hashlib.md5(md5s).hexdigest()}-{len(parts)}", checksum.build()

    models.FakeMultipart.complete = complete


def serve(port: int, as_is: bool) -> None:
    """moto's S3 on ``port``, counting every request but ``/_stats`` (GET: the counts as JSON;
    POST: reset them): requests by method, bytes received (bodies) and sent. Unless ``as_is``,
    moto costs what S3 would for ranged GETs, completions and large objects (see the
    functions it calls)."""
    from moto.moto_server.werkzeug_app import (  # noqa: PLC0415
        DomainDispatcherApplication, MotoRequestHandler, create_backend_app)
    from werkzeug.serving import make_server  # noqa: PLC0415

    if not as_is:
        ranged_gets_cost_their_range()
        completions_join_once()
    # moto keeps each object's (and each part's) bytes in a SpooledTemporaryFile of 5 MiB: a
    # larger one is written to a temporary file on this machine's disk, a smaller one stays in
    # memory. S3 charges neither, but here a format of one large object (ours, in parts of
    # 16 MiB) would pay this machine's disk, twice (the parts, then the object), and zarr's
    # 0.7 MiB chunks would not. Every object stays in memory.
    if not as_is:
        os.environ.setdefault("MOTO_S3_DEFAULT_KEY_BUFFER_SIZE", str(1 << 40))
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()
    stats: dict[str, int] = {}

    def counted(environ, start_response):
        if environ.get("PATH_INFO") == "/_stats":
            with lock:
                if environ["REQUEST_METHOD"] == "POST":
                    stats.clear()
                body = json.dumps(stats).encode()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        method = environ["REQUEST_METHOD"]
        with lock:
            stats["requests"] = stats.get("requests", 0) + 1
            stats[method] = stats.get(method, 0) + 1
            stats["bytes_in"] = stats.get("bytes_in", 0) + int(environ.get("CONTENT_LENGTH")
                                                               or 0)
        out = app(environ, start_response)

        def body():
            n = 0
            try:
                for piece in out:
                    n += len(piece)
                    yield piece
            finally:
                if hasattr(out, "close"):
                    out.close()
                with lock:
                    stats["bytes_out"] = stats.get("bytes_out", 0) + n
        return body()

    make_server("127.0.0.1", port, counted, threaded=True,
                request_handler=MotoRequestHandler).serve_forever()


class Server:
    def __init__(self, as_is: bool = False):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(self.port)]
                                     + (["--moto-as-is"] if as_is else []),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit("the moto server did not start")
                time.sleep(0.1)
        req = urllib.request.Request(f"{self.endpoint}/{BUCKET}", data=b"", method="PUT")
        with urllib.request.urlopen(req) as r:
            assert r.status == 200, r.status

    def stats(self, reset: bool = False) -> dict[str, int]:
        req = urllib.request.Request(f"{self.endpoint}/_stats", data=b"" if reset else None,
                                     method="POST" if reset else "GET")
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    def close(self):
        self.proc.kill()
        self.proc.wait()


# --- the systems ---------------------------------------------------------------------------------

def field(mib: int) -> np.ndarray:
    z, y, x = np.ogrid[0:mib, 0:512, 0:512]
    a = (np.sin(z / 37.0, dtype=np.float32) + np.cos(y / 23.0, dtype=np.float32)
         * np.sin(x / 41.0, dtype=np.float32))
    a = np.broadcast_to(a, (mib, 512, 512)).astype(np.float32)
    rng = np.random.default_rng(7)
    for k in range(0, mib, 64):
        a[k:k + 64] += rng.normal(0, 0.01, a[k:k + 64].shape).astype(np.float32)
    return a


class Systems:
    def __init__(self, server: Server):
        self.server = server
        self.options = {"key": KEY, "secret": SECRET, "endpoint_url": server.endpoint,
                        "client_kwargs": {"region_name": "us-east-1"}, "use_ssl": False}

    def fs(self, asynchronous=False):
        import s3fs  # noqa: PLC0415
        return s3fs.S3FileSystem(key=KEY, secret=SECRET, endpoint_url=self.server.endpoint,
                                 client_kwargs={"region_name": "us-east-1"},
                                 skip_instance_cache=True, asynchronous=asynchronous)

    def zarr_store(self, read_only: bool):
        import zarr  # noqa: PLC0415
        opts = dict(self.options, skip_instance_cache=True)
        opts.pop("use_ssl")
        return zarr.storage.FsspecStore.from_url(f"s3://{BUCKET}/field.zarr",
                                                 storage_options=opts, read_only=read_only)

    # uploads
    def write_ra(self, a):
        import rawarray  # noqa: PLC0415
        rawarray.write(f"s3://{BUCKET}/field.ra", a, chunks=(CHUNK,) * 3, codec="zstd", level=3,
                       shuffle="byte", storage_options=self.options)

    def drop(self, name):
        """Deletes ``name`` (an object, or a zarr array's every object) from the bucket."""
        fs = self.fs()
        if fs.exists(f"{BUCKET}/{name}"):
            fs.rm(f"{BUCKET}/{name}", recursive=True)

    def write_zarr(self, a):
        import zarr  # noqa: PLC0415
        z = zarr.create_array(self.zarr_store(read_only=False), shape=a.shape, dtype=a.dtype,
                              chunks=(CHUNK,) * 3, overwrite=True,
                              compressors=zarr.codecs.BloscCodec(cname="zstd", clevel=3,
                                                                 shuffle="shuffle"))
        z[...] = a

    def write_h5(self, a, local: Path):
        import h5py  # noqa: PLC0415
        import hdf5plugin  # noqa: PLC0415
        with h5py.File(local, "w") as f:
            f.create_dataset("a", data=a, chunks=(CHUNK,) * 3, shuffle=True,
                             **hdf5plugin.Zstd(clevel=3))
        self.fs().put_file(str(local), f"{BUCKET}/field.h5")

    # reads: each opens afresh
    def read_ra(self, key):
        import rawarray  # noqa: PLC0415
        with rawarray.open(f"s3://{BUCKET}/field.ra", storage_options=self.options) as f:
            return np.asarray(f[key])

    def read_zarr(self, key):
        import zarr  # noqa: PLC0415
        return np.asarray(zarr.open_array(self.zarr_store(read_only=True), mode="r")[key])

    def read_h5(self, key):
        import h5py  # noqa: PLC0415
        import hdf5plugin  # noqa: F401, PLC0415 (registers the Zstd filter)
        with self.fs().open(f"{BUCKET}/field.h5", "rb") as fh, h5py.File(fh, "r") as f:
            return np.asarray(f["a"][key])


def measure(server: Server, fn, runs: int):
    """(median seconds, requests of one run, bytes moved (both ways) in that run, the result);
    the run of the most requests, if runs differ."""
    times, counts, out = [], [], None
    for _ in range(runs):
        server.stats(reset=True)
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
        counts.append(server.stats())
    worst = max(counts, key=lambda c: c.get("requests", 0))
    moved = worst.get("bytes_in", 0) + worst.get("bytes_out", 0)
    return statistics.median(times), worst.get("requests", 0), moved, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=int(os.environ.get("RA_BENCH_MIB", 1024)),
                    help="size of the field in MiB (planes of 512 x 512 float32), a multiple "
                         "of 64; default 1024, or RA_BENCH_MIB")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["upload", "reads"],
                    help="measure only the uploads, or only the reads (after one upload each)")
    ap.add_argument("--moto-as-is", action="store_true",
                    help="moto as it is: ranged GETs that copy the whole object, completions "
                         "that join the parts four times over, objects over 5 MiB in files")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.moto_as_is)
        return
    if args.mib % CHUNK or args.mib < 2 * CHUNK:
        raise SystemExit("--mib: a multiple of 64, at least 128")
    ensure_installed()
    # zarr's s3fs sessions are closed at exit, not by each run: aiohttp's warning says so.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    import zarr  # noqa: PLC0415

    import rawarray  # noqa: PLC0415

    a = field(args.mib)
    server = Server(args.moto_as_is)
    sysm = Systems(server)
    rows = []
    try:
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
            # Alternated, so that the machine's drift (and moto's memory growing as it keeps
            # the objects it replaced) falls on both alike: the median of each. Each system
            # writes a new object (its previous one deleted first, untimed), then over the one
            # it just wrote.
            ups = {}
            for _ in range(max(1, args.runs // 2) if args.only != "reads" else 0):
                for kind in ("new", "over"):
                    for sys_name, write, name in (("ra", sysm.write_ra, "field.ra"),
                                                  ("zarr", sysm.write_zarr, "field.zarr")):
                        if kind == "new":
                            sysm.drop(name)
                        ups.setdefault((kind, sys_name), []).append(
                            measure(server, lambda write=write: write(a), 1))
            if args.only == "reads":
                sysm.write_ra(a)
                sysm.write_zarr(a)
            if args.only != "upload":
                sysm.write_h5(a, Path(d) / "field.h5")
        for kind, what in (("new", "upload the array (a new object)"),
                           ("over", "upload the array over the last one")):
            if ups:
                up_ra, up_zarr = (sorted(ups[kind, k], key=lambda m: m[0])[len(ups[kind, k]) // 2]
                                  for k in ("ra", "zarr"))
                rows.append((what, up_ra[:3], up_zarr[:3], None))
        n, m = a.shape[0], a.shape[1]
        # A box that crosses chunk borders in every dim (8 chunks in each system).
        b0 = n // 2 - 32
        reads = [
            ("one element a[k, j, i]", (n // 2 + 3, 200, 301)),
            ("a plane a[k, :, :]", (n // 2 + 3, slice(None), slice(None))),
            ("a plane a[:, j, :]", (slice(None), 200, slice(None))),
            ("a plane a[:, :, i]", (slice(None), slice(None), 301)),
            ("a 64^3 box across chunks", (slice(b0, b0 + 64), slice(m // 2 - 32, m // 2 + 32),
                                          slice(100, 164))),
            ("the whole array", (slice(None),) * 3),
        ]
        for name, key in reads if args.only != "upload" else []:
            runs = max(1, args.runs // 2) if name == "the whole array" else args.runs
            got = {}
            for sys_name, fn in (("ra", sysm.read_ra), ("zarr", sysm.read_zarr),
                                 ("h5py", sysm.read_h5)):
                t, req, nbytes, out = measure(server, lambda fn=fn: fn(key), runs)
                np.testing.assert_array_equal(out, a[key], err_msg=f"{sys_name} {name}")
                got[sys_name] = (t, req, nbytes)
            rows.append((name, got["ra"], got["zarr"], got["h5py"]))
    finally:
        server.close()

    print(f"\nfloat32 field of numpy shape {a.shape} ({a.nbytes / 2**20:.0f} MiB), chunks "
          f"{CHUNK}^3, zstd 3 + byte shuffle; moto {__import__('moto').__version__}{' as it is' if args.moto_as_is else ''}, "
          f"zarr {zarr.__version__}, rawarray {getattr(rawarray, '__version__', '?')}; "
          f"median of {args.runs} runs (whole array and uploads: {max(1, args.runs // 2)})\n")
    print("| operation | ra ms | zarr ms | h5py ms | ra req | zarr req | h5py req | "
          "ra MiB | zarr MiB | h5py MiB | time ra/zarr | req ra/zarr | target met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    misses = []
    for name, ra, zr, h5 in rows:
        at_most = name.startswith(("one element", "upload"))
        req_ok = ra[1] <= zr[1] if at_most else ra[1] < zr[1]
        time_ok = ra[0] <= zr[0]
        failed = [w for w, ok in (("requests", req_ok), ("time", time_ok)) if not ok]
        verdict = "no: " + " and ".join(failed) if failed else "yes"
        if failed:
            misses.append(name)
        h = ("{:.1f}".format(h5[0] * 1e3), str(h5[1]), "{:.1f}".format(h5[2] / 2**20)) \
            if h5 else ("", "", "")
        print(f"| {name} | {ra[0] * 1e3:.1f} | {zr[0] * 1e3:.1f} | {h[0]} | {ra[1]} | {zr[1]} | "
              f"{h[1]} | {ra[2] / 2**20:.1f} | {zr[2] / 2**20:.1f} | {h[2]} | "
              f"{ra[0] / zr[0]:.2f} | {ra[1] / max(zr[1], 1):.2f} | {verdict} |")
    print("\nTargets (issue 36): no more requests than zarr for one element, fewer for planes, "
          "boxes and the whole array (the upload: no more), and no slower.")
    print("All met." if not misses else f"Not met: {'; '.join(misses)}.")


if __name__ == "__main__":
    main()
