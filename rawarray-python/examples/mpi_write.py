"""MPI ranks write one .ra file together: each rank writes its slab of a 3-D field through
``rawarray.ArrayWriter``, in place, on a shared filesystem.

    mpirun -n 4 python examples/mpi_write.py field.ra [NT NY NX]

(as root, OpenMPI wants ``--allow-run-as-root``; more ranks than cores, ``--oversubscribe``).
Every rank calls ``ArrayWriter(path, shape, dtype)``: exactly one creates the file (the library's
``open_or_create``), the others open it; rank ``r`` writes planes ``[r*n/size, (r+1)*n/size)``
of the first axis. After the barrier, rank 0 checks the file against the field computed whole.
The field is ``field(t, y, x)`` below, so any rank can compute any part of it.
"""

import sys

import numpy as np
from mpi4py import MPI

import rawarray


def field(t, y, x):
    """The value at each index: any rank computes any block the same way."""
    return np.sin(0.1 * t + 0.01 * y) * np.cos(0.02 * x) + t


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    path = sys.argv[1]
    shape = tuple(int(n) for n in sys.argv[2:5]) if len(sys.argv) >= 5 else (16, 64, 48)
    lo, hi = rank * shape[0] // size, (rank + 1) * shape[0] // size
    t, y, x = np.meshgrid(np.arange(lo, hi), np.arange(shape[1]), np.arange(shape[2]), indexing="ij")
    with rawarray.ArrayWriter(path, shape, "<f8") as w:
        w[lo:hi] = field(t, y, x)
        created = w.created
    # Every rank's writer is closed (synced) before anyone reads the file.
    creators = comm.allreduce(int(created))
    comm.Barrier()
    if rank == 0:
        whole = field(*np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"))
        ok = np.array_equal(rawarray.read(path), whole)
        print(f"{size} ranks wrote {path} {shape}: creators={creators} equal={ok}")
        if not ok or creators != 1:
            comm.Abort(1)


if __name__ == "__main__":
    main()
