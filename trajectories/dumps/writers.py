"""Deterministic, bounded-memory writers of one split: Parquet shards and matching JSONL.gz shards.

Same rows in, same bytes out: fixed shard and row-group sizes, fixed Parquet settings, gzip members
without a timestamp or file name. Rows are buffered one row group at a time, as their JSON lines: the
Parquet side reads the row group back from those lines with Arrow's JSON reader, off the interpreter
lock on a writer thread, instead of converting each row's Python objects again (the same values: the
reader parses what ``orjson`` wrote, floats to the same doubles).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq
from isal import isal_zlib

PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd", "compression_level": 1, "use_dictionary": False, "write_statistics": False,
    "data_page_size": 1 << 20,
}
GZIP_LEVEL = 1
"""ISA-L's level 1 (``isal``): standard gzip output, about eight times faster than zlib's level 1."""
GZIP_MEMBER_BYTES = 8 << 20
"""JSONL is gzipped in independent members of whole row groups, at least this much text each (or the
file's last), compressed in parallel; a multi-member gzip file is standard (``zcat``, Python's ``gzip``,
``datasets`` read it as one stream)."""


def row_group_table(lines: bytes, schema: pa.Schema) -> pa.Table:
    """The rows of ``lines`` (JSON objects, one a line) as one contiguous table of ``schema``; keys the
    schema does not have are left out, as ``Table.from_pylist`` leaves them."""
    # One block holding every line: one chunk per column, and no line is ever split.
    read = pa_json.read_json(
        pa.BufferReader(lines),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=len(lines) + 1),
        parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
    return pa.Table.from_arrays(read.select(schema.names).combine_chunks().columns, schema=schema)


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

    def write(self, lines: bytes) -> None:
        """Whole lines (a row group's): a member holds whole row groups."""
        self._buffer.append(lines)
        self._size += len(lines)
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
        self._lines: list[bytes] = []
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
        line = orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
        self._lines.append(line)
        self._rows_in_file += 1
        self.rows += 1
        if len(self._lines) >= self.row_group_rows or self._rows_in_file >= self.rows_per_file:
            self._flush()
        if self._rows_in_file >= self.rows_per_file:
            self._close_file()

    def _write_group(self, parquet: pq.ParquetWriter, lines: bytes) -> None:
        parquet.write_table(row_group_table(lines, self.schema), row_group_size=self.row_group_rows)

    def _flush(self) -> None:
        if not self._lines or self._parquet is None:
            return
        # The row group is read and compressed on a Parquet thread while the next one is built; one in
        # flight per writer at a time keeps memory bounded and row groups in order.
        self._wait()
        group = b"".join(self._lines)  # one copy of the row group serves both files
        self._writing = self._parquet_thread.submit(self._write_group, self._parquet, group)
        if self._jsonl is not None:
            self._jsonl.write(group)
        self._lines = []

    def close(self) -> None:
        """Finish the last shard."""
        self._flush()
        self._close_file()
