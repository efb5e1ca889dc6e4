"""An open reader never mixes two files in one read: while another process rewrites the file in
place (``cp new.ra p``: the same inode, truncated and written again) between and during reads,
every copying read returns one version of the file entirely, or raises the error that says the
file changed. Replacing the file by rename is not a change to the file opened (test_races.py)."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import rawarray

ROUNDS = 1000

# The rewriter: `cp`'s way (truncate, then write in pieces), alternating two versions, with
# pauses of random length so that reads fall both in quiet moments and across rewrites.
REWRITER = """
import os, random, sys, time
path, stop = sys.argv[1], sys.argv[2]
versions = [open(p, "rb").read() for p in sys.argv[3:]]
k = 0
print("ready", flush=True)
while not os.path.exists(stop):
    data = versions[k % len(versions)]
    with open(path, "r+b") as f:
        f.truncate(0)
        step = max(len(data) // 8, 1)
        for at in range(0, len(data), step):
            f.write(data[at:at + step])
            f.flush()
    k += 1
    time.sleep(random.random() * 0.002)
print(k, flush=True)
"""


def is_changed(e):
    return isinstance(e, rawarray.RaError) and "the file changed" in str(e)


class Rewriter:
    """The rewriting process, over `path`, of the files `versions`."""

    def __init__(self, tmp, path, versions):
        self.stop = tmp / "stop"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", REWRITER, str(path), str(self.stop), *map(str, versions)],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def finish(self):
        self.stop.touch()
        rewrites = int(self.proc.stdout.readline())
        self.proc.wait(timeout=30)
        return rewrites


def open_retrying(opener):
    """An open during a rewrite can meet a truncated file, or one that keeps changing: open
    again (an open is not a read; the reads are what this checks). By time, not by count: on a
    loaded machine an open of a chunked file (config and index read, then checked against the
    header) can outlast the rewriter's pauses of up to 2 ms many times in a row."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            return opener()
        except (rawarray.RaError, OSError):
            time.sleep(0.0002)
    raise AssertionError("could not open the file between rewrites in 30 s")


def run_rounds(tmp, path, versions, opener, reads):
    """ROUNDS rounds of: open, then each read of `reads` (functions of the open reader), each
    compared with what every version gives. Returns (reads equal to one version, reads that
    raised the change error); fails on a mixed read or any other error."""
    files = []
    for k, v in enumerate(versions):
        files.append(tmp / f"v{k}.ra")
        rawarray.write(files[-1], v[0], **v[1])
    wants = []
    for f in files:
        reader = opener(f)
        wants.append([np.asarray(read(reader)) for read in reads])
        reader.close()
    with open(path, "wb") as out:
        out.write(files[0].read_bytes())
    rewriter = Rewriter(tmp, path, files)
    whole = changed = 0
    try:
        for _ in range(ROUNDS):
            f = open_retrying(lambda: opener(path))
            with f:
                for i, read in enumerate(reads):
                    try:
                        got = np.asarray(read(f))
                    except Exception as e:      # noqa: BLE001 (anything else fails the test)
                        if not is_changed(e):
                            raise
                        changed += 1
                        continue
                    matches = [np.array_equal(got, w[i]) for w in wants]
                    assert any(matches), f"read {i} mixed the versions: {got!r}"
                    whole += 1
    finally:
        rewrites = rewriter.finish()
    print(f"{path.name}: {rewrites} rewrites; {whole} reads of one version, {changed} refused")
    assert rewrites > 20, rewrites
    return whole, changed


# Two versions of one shape, no value in common.
PLANE = (np.arange(40 * 100, dtype="<f8").reshape(40, 100), -1 - np.arange(40 * 100, dtype="<f8").reshape(40, 100))


@pytest.mark.parametrize("how", ["plain, mmap=False", "lz4", "chunked"])
def test_a_file_reads_one_version_per_read_while_rewritten_in_place(tmp, how):
    opts = {"plain, mmap=False": {}, "lz4": {"compress": True},
            "chunked": {"chunks": (8, 100), "codec": "zstd"}}[how]
    mmap = how != "plain, mmap=False"     # LZ4 and chunked files decode: copying reads anyway
    versions = [(v, opts) for v in PLANE]
    # A row, a block, an advanced key, and one element (read by the binding's own path).
    reads = [lambda f: f[0], lambda f: f[:, 50:], lambda f: f[[3, 37], ::7], lambda f: f[29, 71]]
    if how == "chunked":
        reads.append(lambda f: f.array())
    whole, changed = run_rounds(tmp, tmp / "p.ra", versions,
                                lambda p: rawarray.open(p, mmap=mmap), reads)
    # Both outcomes happened: reads of a quiet file, and reads across a rewrite refused.
    assert whole > 0 and changed > 0, (whole, changed)


def test_a_ragged_file_reads_one_version_per_read_while_rewritten_in_place(tmp):
    rows = [np.arange(k * 30, dtype="<f8") for k in range(40)]
    versions = [(rawarray.Ragged(rows), {}), (rawarray.Ragged([-1 - r for r in rows]), {})]
    reads = [lambda f: f[1], lambda f: f[39], lambda f: f.ragged().values]
    whole, changed = run_rounds(tmp, tmp / "r.ra", versions,
                                lambda p: rawarray.open(p, mmap=False), reads)
    assert whole > 0 and changed > 0, (whole, changed)


def test_a_compressed_ragged_file_too(tmp):
    rows = [np.arange(k * 30, dtype="<f4") for k in range(40)]
    opts = {"codec": "zstd", "chunks": 100}
    versions = [(rawarray.Ragged(rows), opts), (rawarray.Ragged([-1 - r for r in rows]), opts)]
    reads = [lambda f: f[20], lambda f: f.ragged().values]
    # Positioned reads: a map of a file truncated under it faults (as np.memmap's does).
    whole, changed = run_rounds(tmp, tmp / "rz.ra", versions,
                                lambda p: rawarray.open(p, mmap=False), reads)
    assert whole > 0 and changed > 0, (whole, changed)


def test_the_error_says_what_happened_and_what_to_do(tmp):
    path = tmp / "a.ra"
    rawarray.write(path, PLANE[0])
    f = rawarray.open(path, mmap=False)
    assert np.array_equal(f[0], PLANE[0][0])
    raw = path.read_bytes()
    with open(path, "r+b") as out:           # cp of the other version, in place
        out.truncate(0)
        rawarray.write(tmp / "b.ra", PLANE[1])
        out.write((tmp / "b.ra").read_bytes())
    assert len(raw) == path.stat().st_size
    for key in [(slice(None), slice(50, None)), (29, 71)]:
        with pytest.raises(rawarray.RaError) as e:
            f[key]
        msg = str(e.value)
        assert str(path) in msg and "the file changed since it was opened" in msg, key
        assert "open it again" in msg
    # Opened again, it reads the new version.
    with rawarray.open(path, mmap=False) as g:
        assert np.array_equal(g[:, 50:], PLANE[1][:, 50:])
    # A file replaced by rename is not the file opened: the open reader still reads its own.
    h = rawarray.open(path, mmap=False)
    rawarray.write(path, PLANE[0])
    assert np.array_equal(h[:, 50:], PLANE[1][:, 50:])
    os.remove(path)
    assert np.array_equal(h[0], PLANE[1][0])


def test_a_mapped_view_is_a_live_view(tmp):
    """As with np.memmap: a view of the map shows the bytes the file holds now."""
    path = tmp / "m.ra"
    rawarray.write(path, PLANE[0])
    with rawarray.open(path) as f:
        view = f.array()
        data_at = f.header["header_len"]
    with open(path, "r+b") as out:
        out.seek(data_at)
        out.write(PLANE[1][0].tobytes())
    assert np.array_equal(view[0], PLANE[1][0])
