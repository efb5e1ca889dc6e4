"""The Python blocks of the README and of the guides (doc/python.md, doc/arrow.md) run as
written, each file's in order in a scratch folder of its own."""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "doc" / "python.md"]


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_python_blocks_run(doc, tmp_path, monkeypatch):
    blocks = python_blocks(doc)
    assert blocks, f"{doc} has a Python block"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {"__name__": "readme"})
    assert os.path.exists("field.ra")


def test_the_arrow_guide_python_blocks_run(tmp_path, monkeypatch):
    # The blocks query a record file run.ra of steps and energies, and its Parquet twin (which
    # the guide makes with `ra convert run.ra run.parquet`, here pyarrow's own writer).
    import numpy as np
    import pyarrow.parquet as pq
    import rawarray

    doc = ROOT / "doc" / "arrow.md"
    blocks = python_blocks(doc)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    run = np.zeros(4, [("step", "<u4"), ("energy", "<f8")])
    run["step"], run["energy"] = [0, 0, 1, 1], [1.0, 3.0, 2.0, 4.0]
    rawarray.write("run.ra", run)
    pq.write_table(rawarray.open("run.ra").to_arrow(), "run.parquet")
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {"__name__": "readme"})
    assert (rawarray.read("copy.ra") == run).all()


def test_the_ragged_example_stores_the_float32_it_shows(tmp_path, monkeypatch):
    # The guide's ragged example writes float32 rows; it must store float32 (eltype 3, elbyte 4),
    # as the header's own bytes say, not float64.
    monkeypatch.chdir(tmp_path)
    for block in python_blocks(ROOT / "doc" / "python.md"):
        if '"events.ra"' in block:
            exec(compile(block, "doc/python.md", "exec"), {"__name__": "readme"})
            break
    else:
        pytest.fail("doc/python.md has the ragged example writing events.ra")
    head = Path("events.ra").read_bytes()[:32]
    eltype = int.from_bytes(head[16:24], "little")
    elbyte = int.from_bytes(head[24:32], "little")
    assert (eltype, elbyte) == (3, 4)
