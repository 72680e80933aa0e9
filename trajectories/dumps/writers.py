"""Deterministic, bounded-memory writers of one split: Parquet shards and matching JSONL.gz shards.

Same rows in, same bytes out: fixed shard and row-group sizes, fixed Parquet settings, gzip members
without a timestamp or file name. Rows are buffered one row group at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from isal import isal_zlib

PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd", "compression_level": 1, "use_dictionary": False, "write_statistics": False,
    "data_page_size": 1 << 20,
}
GZIP_LEVEL = 1
"""ISA-L's level 1 (``isal``): standard gzip output, about eight times faster than zlib's level 1."""
GZIP_MEMBER_BYTES = 8 << 20
"""JSONL is gzipped in independent members of this much text, compressed in parallel; a multi-member
gzip file is standard (``zcat``, Python's ``gzip``, ``datasets`` read it as one stream)."""


def gzip_member(data: bytes) -> bytes:
    # wbits=31: a gzip header with mtime 0 and no file name, so equal input gives equal bytes.
    compressor = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, 31)
    return bytes(compressor.compress(data) + compressor.flush())


class _GzipLines:
    """A .jsonl.gz file written as members compressed on ``pool``, appended in order."""

    def __init__(self, path: Path, pool: Executor) -> None:
        self._file: BinaryIO = path.open("wb")
        self._pool = pool
        self._buffer: list[bytes] = []
        self._size = 0
        self._pending: list[Future[bytes]] = []

    def write(self, line: bytes) -> None:
        self._buffer.append(line)
        self._size += len(line)
        if self._size >= GZIP_MEMBER_BYTES:
            self._submit()

    def _submit(self) -> None:
        if self._buffer:
            self._pending.append(self._pool.submit(gzip_member, b"".join(self._buffer)))
            self._buffer, self._size = [], 0
        # Bounded memory: at most a few members in flight.
        while len(self._pending) > 2:
            self._file.write(self._pending.pop(0).result())

    def close(self) -> None:
        self._submit()
        for future in self._pending:
            self._file.write(future.result())
        self._pending = []
        self._file.close()


class SplitWriter:
    """Rows of one split to ``{name}-{shard:05d}.parquet`` (and ``.jsonl.gz``) under ``directory``."""

    def __init__(self, directory: Path, name: str, schema: pa.Schema, *, rows_per_file: int,
                 row_group_rows: int, parquet_thread: Executor, jsonl_pool: Executor | None,
                 on_file: Callable[[Path, int], None]) -> None:
        self.directory = directory
        self.name = name
        self.schema = schema
        self.rows_per_file = rows_per_file
        self.row_group_rows = row_group_rows
        self._parquet_thread = parquet_thread
        self._jsonl_pool = jsonl_pool
        self._on_file = on_file
        self._writing: Future[None] | None = None
        self._columns: dict[str, list[Any]] = {field.name: [] for field in schema}
        self._buffered = 0
        self._shard = 0
        self._rows_in_file = 0
        self._parquet: pq.ParquetWriter | None = None
        self._jsonl: _GzipLines | None = None
        self.rows = 0

    def _path(self, suffix: str) -> Path:
        return self.directory / f"{self.name}-{self._shard:05d}{suffix}"

    def _open(self) -> None:
        self._parquet = pq.ParquetWriter(self._path(".parquet"), self.schema, **PARQUET_OPTIONS)
        if self._jsonl_pool is not None:
            self._jsonl = _GzipLines(self._path(".jsonl.gz"), self._jsonl_pool)

    def _wait(self) -> None:
        if self._writing is not None:
            self._writing.result()
            self._writing = None

    def _close_file(self) -> None:
        if self._parquet is None:
            return
        self._wait()
        self._parquet.close()
        self._on_file(self._path(".parquet"), self._rows_in_file)
        if self._jsonl is not None:
            self._jsonl.close()
            self._on_file(self._path(".jsonl.gz"), self._rows_in_file)
        self._parquet, self._jsonl = None, None
        self._shard += 1
        self._rows_in_file = 0

    def add(self, row: dict[str, Any]) -> None:
        if self._parquet is None:
            self._open()
        for name, values in self._columns.items():
            values.append(row[name])
        if self._jsonl is not None:
            self._jsonl.write(orjson.dumps(row) + b"\n")
        self._buffered += 1
        self._rows_in_file += 1
        self.rows += 1
        if self._buffered >= self.row_group_rows or self._rows_in_file >= self.rows_per_file:
            self._flush()
        if self._rows_in_file >= self.rows_per_file:
            self._close_file()

    def _flush(self) -> None:
        if not self._buffered or self._parquet is None:
            return
        table = pa.Table.from_pydict(self._columns, schema=self.schema)
        # Compression runs on the Parquet thread while the next row group is built; one in flight
        # at a time keeps memory bounded and row groups in order.
        self._wait()
        self._writing = self._parquet_thread.submit(self._parquet.write_table, table,
                                                    row_group_size=self.row_group_rows)
        self._columns = {name: [] for name in self._columns}
        self._buffered = 0

    def close(self) -> None:
        """Finish the last shard."""
        self._flush()
        self._close_file()
