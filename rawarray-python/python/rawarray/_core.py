"""The names that lived in this module before the package was split by concept (``_api``,
``_file``, ``_dtype``, ``_values``, ``_writers``, ``_ragged``): pickles made then name
``rawarray._core._reopen`` and ``_reopen_writer``, which must still load. Nothing in the
package imports this module."""

from ._api import loads, open, read, to_dask, write
from ._dtype import RaWarning
from ._file import File, _reopen
from ._rawarray import RaError
from ._values import _as_writer_dtype
from ._writers import ArrayWriter, RecordWriter, _reopen_writer

__all__ = ["ArrayWriter", "File", "RaError", "RaWarning", "RecordWriter", "loads", "open", "read",
           "to_dask", "write", "_as_writer_dtype", "_reopen", "_reopen_writer"]
