"""Read and write RawArray (``.ra``) files as numpy arrays.

A ``.ra`` file is a header of little-endian ``u64`` words, then an n-d array's bytes in
column-major order (the first dim varies fastest), then optional trailing bytes such as the
metadata trailer of record files. This package is a thin layer over the Rust library
``rawarray-serde``: every header, trailer and schema is validated there, and numpy gets views of
the bytes the library hands over (a memory map of the file, or decoded bytes), without a copy.

Shapes follow the seed's Python convention: numpy's shape is the file's dims reversed, in C
order, so a file of dims ``[3, n]`` (``n`` points of 3 floats) is an array of shape ``(n, 3)``.
``order="F"`` gives the file's own dims in Fortran order (Julia's and Matlab's shape). Neither
moves any data.

>>> import numpy as np, rawarray, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "points.ra")
>>> rawarray.write(path, np.arange(6, dtype="<f4").reshape(2, 3))
>>> rawarray.read(path).shape
(2, 3)
>>> rawarray.open(path).header["dims"]
[3, 2]
"""

from importlib.metadata import version as _version

from ._api import loads, open, read, recover_url, to_dask, write
from ._dtype import RaWarning
from ._file import File
from ._rawarray import RaError
from ._ragged import Ragged, RaggedFile
from ._writers import ArrayWriter, RaggedWriter, RecordWriter

#: The installed package's version, from its metadata (pyproject.toml's, as built).
__version__ = _version("rawarray")

__all__ = ["read", "open", "write", "File", "RecordWriter", "ArrayWriter", "RaError", "RaWarning",
           "loads", "to_dask", "Ragged", "RaggedFile", "RaggedWriter", "recover_url"]

# The classes are the package's: their reprs, and pickles, name `rawarray`, not the private
# module they are defined in.
for _cls in (File, RecordWriter, ArrayWriter, RaWarning, Ragged, RaggedFile, RaggedWriter):
    _cls.__module__ = __name__
del _cls
