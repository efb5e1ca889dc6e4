"""Type stubs for the Rust half of the package (rawarray._rawarray)."""

from os import PathLike
from typing import Any, Literal, Sequence, TypedDict

#: A writer's codec pipeline: each filter a name or a (name, param) tuple, in order.
Filters = Sequence[str | tuple[str, int]]

class ChunkSettings(TypedDict):
    """A chunked section's settings as the library read them (dims in the file's order)."""

    codec: str
    level: int
    shuffle: str | None
    filters: list[tuple[str, int | None]]
    chunk: list[int]
    blocks: list[int] | None
    block_bytes: int
    layout_version: int
    statistics: bool
    split: bool
    stream_crcs: bool
    rounded_to: int | None

class RaError(ValueError):
    """A file that is not a valid .ra file, or a value that cannot be stored in one."""

class Buffer:
    """Read-only bytes (a memory map or decoded data) exported through the buffer protocol."""

    @property
    def is_mapped(self) -> bool: ...
    def __len__(self) -> int: ...

class RawFile:
    """An opened .ra file: validated header and trailer, read in O(1) of the file's size; every
    read goes through the one descriptor opened, and every copying read (decode, read_data,
    read_into, read_block) returns bytes of the file as opened or raises RaError saying the
    file changed."""

    def __init__(self, path: str | PathLike[str]) -> None: ...
    @property
    def eltype(self) -> int: ...
    @property
    def elbyte(self) -> int: ...
    @property
    def dims(self) -> list[int]: ...
    @property
    def flags(self) -> int: ...
    @property
    def storage(self) -> str:
        """How the data section is stored: "plain", "lz4-whole" or "chunked"."""
    @property
    def viewable(self) -> bool:
        """Whether numpy can view the data bytes as stored (plain, little-endian)."""
    @property
    def coded(self) -> bool:
        """Whether the data section is coded (LZ4 or chunked)."""
    @property
    def header_codec(self) -> str | None:
        """The codec the header alone names ("lz4-whole"), or None."""
    @property
    def size(self) -> int: ...
    @property
    def num_elements(self) -> int: ...
    @property
    def header_len(self) -> int: ...
    @property
    def type_label(self) -> str: ...
    @property
    def params_json(self) -> str | None: ...
    @property
    def schema_json(self) -> str | None: ...
    @property
    def trailer_error(self) -> str | None: ...
    @property
    def big_endian_records(self) -> bool: ...
    @property
    def file_len(self) -> int: ...
    def chunk_config(self) -> ChunkSettings | None:
        """The settings of a chunked file (read at open), None for any other."""
    def identity(self) -> tuple[int, int, int, bytes]: ...
    def element_kind(self) -> tuple[str, str]: ...
    def map(self) -> Buffer: ...
    def decode(self) -> Buffer: ...
    def read_data(self, start: int, len: int) -> Buffer: ...
    def read_into(self, start: int, out: memoryview) -> None: ...
    def read_block(self, ranges: list[tuple[int, int]]) -> Buffer: ...
    def read_element(self, key: Any) -> bytes | None: ...
    @property
    def extra_json(self) -> str | None: ...
    @property
    def rounded_to(self) -> int | None:
        """The mantissa bits the trailer's lossy mark says the data were rounded to."""
    @property
    def warnings(self) -> list[str]:
        """What the library noticed at open that a user must hear of (a RACHUNK1 index entry
        past the committed size), one message each, naming the chunk in file order."""
    def io_stats(self) -> tuple[int, int]: ...
    def stats(self, per_chunk: bool) -> dict[str, Any] | None: ...
    def select(self, filters: object) -> Buffer: ...

def write(
    path: str | PathLike[str],
    descr_json: str,
    dims: list[int],
    data: Buffer | memoryview | bytes,
    params_json: str | None = None,
    compress: bool = False,
    extra_json: str | None = None,
    codec: str | None = None,
    chunks: list[int] | None = None,
    level: int | None = None,
    shuffle: str | None = None,
    threads: int = 0,
    storage_options: dict[str, str] | None = None,
    filters: Filters | None = None,
    blocks: list[int] | None = None,
    layout_version: int | None = None,
    statistics: bool | None = None,
    split: bool | None = None,
    stream_crcs: bool | None = None,
) -> None: ...

def recover_url(url: str, storage_options: dict[str, str] | None = None) -> int:
    """Aborts the multipart uploads that dead writers left at an object-store URL (S3)."""

def storable_dtypes() -> list[str]:
    """The numpy dtype strings a file stores (the library's table), then "|b1" and "bfloat16"."""

def shown_url(text: str) -> str:
    """``text`` as a message may show it: a URL's password replaced by ``***``."""

def read_chunked_into(raw: RawFile, out: memoryview) -> None:
    """Decodes a file's whole array (any storage; the Python layer passes chunked files) into a
    writable buffer, the GIL released."""

class StoreFile:
    """A .ra object in an object store (s3://, s3a://, gs://, az://, abfs://, http(s)://,
    file://), read by the library's StoreArrayReader; present when the package is built with its
    Cargo feature `cloud` (on by default). The same getters as RawFile, and blocks by ranged
    requests."""

    def __init__(self, url: str, storage_options: dict[str, str] | None = None) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def eltype(self) -> int: ...
    @property
    def elbyte(self) -> int: ...
    @property
    def dims(self) -> list[int]: ...
    @property
    def flags(self) -> int: ...
    @property
    def storage(self) -> str:
        """How the data section is stored: "plain", "lz4-whole" or "chunked"."""
    @property
    def viewable(self) -> bool:
        """Whether numpy can view the data bytes as stored (plain, little-endian)."""
    @property
    def coded(self) -> bool:
        """Whether the data section is coded (LZ4 or chunked)."""
    @property
    def header_codec(self) -> str | None:
        """The codec the header alone names ("lz4-whole"), or None."""
    @property
    def size(self) -> int: ...
    @property
    def num_elements(self) -> int: ...
    @property
    def header_len(self) -> int: ...
    @property
    def type_label(self) -> str: ...
    @property
    def params_json(self) -> str | None: ...
    @property
    def schema_json(self) -> str | None: ...
    @property
    def trailer_error(self) -> str | None: ...
    @property
    def extra_json(self) -> str | None: ...
    @property
    def big_endian_records(self) -> bool: ...
    @property
    def file_len(self) -> int: ...
    def io_stats(self) -> tuple[int, int]: ...
    def identity(self) -> tuple[str, str | None, str | None, int, bytes]: ...
    def chunk_config(self) -> ChunkSettings | None: ...
    @property
    def rounded_to(self) -> int | None: ...
    def element_kind(self) -> tuple[str, str]: ...
    def decode(self) -> Buffer: ...
    def read_block(self, ranges: list[tuple[int, int]]) -> Buffer: ...

class StoreBlockWriter:
    """Many writers of one chunked object (the library's StoreArrayWriter): the client's (no
    session) and the workers' (the client's session); present with the feature `cloud`."""

    def __init__(self, url: str, descr_json: str, dims: list[int], codec: str | None = None,
                 chunks: list[int] | None = None, level: int | None = None,
                 shuffle: str | None = None, session: str | None = None,
                 storage_options: dict[str, str] | None = None) -> None: ...
    @property
    def session(self) -> str: ...
    @property
    def chunks(self) -> list[int]: ...
    @property
    def session_prefix(self) -> str: ...
    def write_block(self, ranges: list[tuple[int, int]], data: Any) -> None: ...
    def finish(self, fill_missing: bool = False) -> tuple[int, int, int, int, int, int]: ...
    def abort(self) -> int: ...

class ArrayWriter:
    """The library's ArrayWriter: blocks written in place from many threads and processes."""

    def __init__(
        self,
        path: str | PathLike[str],
        descr_json: str | None = None,
        dims: list[int] | None = None,
        codec: str | None = None,
        chunks: list[int] | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        threads: int = 0,
        filters: Filters | None = None,
        blocks: list[int] | None = None,
        layout_version: int | None = None,
        statistics: bool | None = None,
        split: bool | None = None,
        stream_crcs: bool | None = None,
    ) -> None: ...
    def header(self) -> tuple[int, int, list[int]]: ...
    def identity(self) -> tuple[int, int, bytes]: ...
    @property
    def created(self) -> bool: ...
    def write_block(self, ranges: list[tuple[int, int]], data: memoryview | bytes) -> None: ...
    def sync(self) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

class RecordWriter:
    """The library's record writer, fed with packed little-endian record bytes; threads may
    share it (its calls are serialized)."""

    def __init__(
        self,
        path: str | PathLike[str],
        descr_json: str,
        record_dims: list[int],
        params_json: str | None = None,
        append: bool = False,
        codec: str | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        chunk_records: int | None = None,
        threads: int = 0,
        filters: Filters | None = None,
        blocks: list[int] | None = None,
        layout_version: int | None = None,
        statistics: bool | None = None,
        split: bool | None = None,
        stream_crcs: bool | None = None,
    ) -> None: ...
    def append(self, data: memoryview | bytes) -> None: ...
    def flush(self) -> None: ...
    def sync(self) -> None: ...
    def close(self) -> None: ...
    def __len__(self) -> int: ...
    @property
    def flushed_len(self) -> int: ...
    @property
    def record_bytes(self) -> int: ...
    @property
    def closed(self) -> bool: ...

class RaggedFile:
    """A ragged file: header and trailer checked at open; offsets, values and rows as buffers
    over the library's DynRagged memory map (mmap=True), or copies read with positioned reads,
    each of the file as opened (mmap=False)."""

    def __init__(self, path: str | PathLike[str], mmap: bool = True) -> None: ...
    def identity(self) -> tuple[int, int, int, bytes]: ...
    @property
    def is_mapped(self) -> bool: ...
    def chunk_config(self) -> tuple[ChunkSettings, int, int] | None: ...
    @property
    def rounded_to(self) -> int | None: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def rows(self) -> int: ...
    @property
    def values_count(self) -> int: ...
    @property
    def value_dims(self) -> list[int]: ...
    @property
    def eltype(self) -> int: ...
    @property
    def elbyte(self) -> int: ...
    @property
    def slots(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def header_len(self) -> int: ...
    @property
    def is_text(self) -> bool: ...
    @property
    def schema_json(self) -> str | None: ...
    def element_kind(self) -> tuple[str, str]: ...
    def offsets(self) -> Buffer: ...
    def values(self) -> Buffer: ...
    def row(self, k: int) -> Buffer: ...
    def row_str(self, k: int) -> str: ...
    def check(self) -> None: ...
    def longest_row(self) -> int: ...

def holds(path: str | PathLike[str]) -> Literal["array", "rows"]: ...
def write_ragged(
    path: str | PathLike[str],
    descr_json: str,
    value_dims: list[int],
    offsets: memoryview | bytes,
    values: memoryview | bytes,
    text: bool = False,
    codec: str | None = None,
    level: int | None = None,
    shuffle: str | None = None,
    chunk_values: int | None = None,
    threads: int = 0,
    filters: Filters | None = None,
    block_values: int | None = None,
    layout_version: int | None = None,
    statistics: bool | None = None,
    split: bool | None = None,
    stream_crcs: bool | None = None,
) -> None: ...

class RaggedWriter:
    """The library's RaggedWriter, fed with each row's packed little-endian bytes; threads may
    share it (its calls are serialized)."""

    def __init__(
        self,
        path: str | PathLike[str],
        descr_json: str,
        text: bool = False,
        append: bool = False,
        codec: str | None = None,
        level: int | None = None,
        shuffle: str | None = None,
        chunk_values: int | None = None,
        threads: int = 0,
        filters: Filters | None = None,
        block_values: int | None = None,
        layout_version: int | None = None,
        statistics: bool | None = None,
        split: bool | None = None,
        stream_crcs: bool | None = None,
    ) -> None: ...
    def append(self, data: memoryview | bytes) -> None: ...
    def flush(self) -> None: ...
    def sync(self) -> None: ...
    def close(self) -> None: ...
    def __len__(self) -> int: ...
    @property
    def flushed_len(self) -> int: ...
    @property
    def closed(self) -> bool: ...

class ArrowStream:
    """A .ra file as an Arrow table: batches through the Arrow C stream interface."""
    def __init__(
        self,
        path: str | PathLike[str],
        batch_rows: int,
        columns: list[str] | None = None,
        filters: object | None = None,
        counter: IoCounter | None = None,
    ) -> None: ...
    @property
    def rows(self) -> int: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    def io_stats(self) -> tuple[int, int]: ...

class IoCounter:
    """The reads of a File's Arrow streams, added up."""
    def __init__(self) -> None: ...
    def get(self) -> tuple[int, int]: ...

def write_arrow(
    path: str | PathLike[str],
    data: object,
    params_json: str | None = None,
    total_rows: int | None = None,
) -> int: ...
