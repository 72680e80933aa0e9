"""Streaming import of a ShoppingBench ``documents.jsonl`` (plain or gzipped) into a :class:`ProductStore`.

The reference catalog is ~1.4 GB gzipped (~2.5M lines), so the file is read in fixed-size chunks and
written in batches: memory stays bounded by one chunk, one batch and the longest line allowed.
"""

from __future__ import annotations

import gzip
import io
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import orjson
import structlog
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from shoppingbench.catalog.models import CatalogDocument, Product, document_for
from shoppingbench.catalog.store import ProductStore

log = structlog.get_logger(__name__)

_GZIP_MAGIC: Final = b"\x1f\x8b"
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_CHUNK_BYTES: Final = 1 << 20
MAX_LINE_BYTES: Final = 16 << 20
"""Longer lines are reported bad without being buffered whole, so one runaway line cannot exhaust memory."""
_WRAPPER_KEYS: Final = frozenset({"id", "contents", "product"})
_PROGRESS_EVERY: Final = 4_096


class LineError(BaseModel):
    """One bad line: its 1-based number in the (decompressed) file and why it was rejected."""

    line: int
    reason: str


class ImportReport(BaseModel):
    """What an import did. ``lines == imported + bad + blank``."""

    source: Path
    lines: int
    """Lines read, counting blank ones; a truncated or corrupt gzip tail counts as one (bad) line."""
    complete: bool = True
    """Whether the file was read to its end. False when a gzip stream is truncated or corrupt, or the
    file was cut mid-line (an unterminated last line that does not parse): the lines before the damage
    were imported, but the rest of the catalog is missing (``lines`` is then the number of the damaged
    line, ``stream_error`` why)."""
    stream_error: str | None = None
    imported: int
    """Valid lines upserted; a product that appears twice counts twice (the later line wins)."""
    bad: int
    blank: int
    """Whitespace-only lines: skipped, neither imported nor bad."""
    errors: list[LineError]
    """The first ``max_errors_reported`` bad lines, in file order."""
    seconds: float


class CatalogImportError(Exception):
    """A strict import met a bad line, or a catalog build met a source that ended early."""

    def __init__(self, source: Path, line: int, reason: str) -> None:
        super().__init__(f"{source}: line {line}: {reason}")
        self.source = source
        self.line = line
        self.reason = reason


class _BadLine(Exception):
    """Internal: the current line is not a valid catalog document; the message is the reason."""


class _Tail(bytes):
    """Internal: the file's last line when the file does not end with a newline (it may be cut short)."""


class _BrokenStream(Exception):
    """Internal: the compressed stream cannot be read past this point; the message is the reason."""


class _Rejections:
    """Bad lines of one import: raised at once when ``strict``, else counted and the first few kept."""

    def __init__(self, source: Path, strict: bool, max_reported: int) -> None:
        self.source, self.strict, self.max_reported = source, strict, max_reported
        self.count = 0
        self.errors: list[LineError] = []

    def add(self, line: int, reason: str) -> None:
        if self.strict:
            raise CatalogImportError(self.source, line, reason)
        self.count += 1
        if len(self.errors) < self.max_reported:
            self.errors.append(LineError(line=line, reason=reason))


def import_documents(source: Path, store: ProductStore, *, strict: bool = False, progress: bool = True,
                     batch_size: int = 5_000, max_errors_reported: int = 100) -> ImportReport:
    """Upsert every valid document of ``source`` into ``store`` and report the bad lines.

    ``source`` is a ``documents.jsonl`` file, gzipped or not (detected from its first bytes, not its
    name). Each line is a ShoppingBench document ``{"id", "contents", "product"}`` whose ``id`` equals
    ``product.product_id``. A line that is a bare product object (none of the keys ``id``, ``contents``
    or ``product``) is accepted too and wrapped with :func:`document_for`, so a plain product dump
    imports; a line that has some wrapper keys but lacks ``contents`` is bad. Blank lines are skipped.

    Bad lines (invalid JSON or UTF-8, not an object, invalid fields, mismatched ids, over
    ``MAX_LINE_BYTES``) are reported by 1-based line number; the import goes on with the next line.
    A truncated or corrupt gzip stream ends the import at that point, counts as one bad line and
    sets ``complete=False`` in the report: callers building a catalog must not treat it as whole. So
    does a last line without a newline that is not a valid document: the file was cut mid-line.

    Documents are written in transactions of ``batch_size`` valid documents, in file order; importing
    the same file again leaves the store as it was (upsert by product id).

    With ``strict=True`` the first bad line raises :class:`CatalogImportError` naming the file, line
    and reason. Exactly the documents of the batches completed before that line stay committed: the
    first ``(k // batch_size) * batch_size`` documents of the file, where ``k`` is the number of
    valid documents before the bad line. Nothing from the failing batch onward is written.

    ``progress`` shows a progress bar (compressed bytes read, lines/s) on stderr when it is a terminal.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    source = Path(source)
    size = source.stat().st_size
    log.info("catalog_import_started", source=str(source), bytes=size, strict=strict)
    started = time.perf_counter()
    lines = imported = blank = 0
    rejected = _Rejections(source, strict, max_errors_reported)
    reject = rejected.add
    stream_error: str | None = None
    batch: list[CatalogDocument] = []
    with source.open("rb") as raw, _progress_bar(progress, source.name, size) as bar:
        try:
            for line in _read_lines(raw):
                lines += 1
                if lines % _PROGRESS_EVERY == 0:
                    bar.update(raw.tell(), lines)
                if line is None:
                    reject(lines, f"line is longer than {MAX_LINE_BYTES} bytes")
                    continue
                if not line or line.isspace():
                    blank += 1
                    continue
                try:
                    batch.append(_parse_document(line))
                except _BadLine as exc:
                    reason = str(exc)
                    if isinstance(line, _Tail):
                        stream_error = reason = f"the file ended early (last line, no newline): {exc}"
                    reject(lines, reason)
                    continue
                if len(batch) >= batch_size:
                    imported += store.upsert(batch)
                    batch.clear()
        except _BrokenStream as exc:
            lines += 1
            stream_error = str(exc)
            reject(lines, stream_error)
        imported += store.upsert(batch)
        bar.update(raw.tell(), lines)

    report = ImportReport(source=source, lines=lines, complete=stream_error is None,
                          stream_error=stream_error, imported=imported, bad=rejected.count, blank=blank,
                          errors=rejected.errors, seconds=round(time.perf_counter() - started, 3))
    log.info("catalog_import_finished", source=str(source), lines=lines, imported=imported,
             bad=rejected.count, blank=blank, complete=report.complete, seconds=report.seconds)
    return report


def _read_lines(raw: io.BufferedReader) -> Iterator[bytes | None]:
    """Yield the file's lines without their newline (``None`` for an over-long line), reading in chunks.

    ``read1`` returns the data decompressed so far before a truncated gzip raises, so every complete
    line before the damage is still yielded; the incomplete line in flight is dropped. A last line
    without a newline is yielded as a :class:`_Tail`.
    """
    head = raw.read(2)
    raw.seek(0)
    stream: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="rb") if head == _GZIP_MAGIC else raw
    pending = b""
    oversized = False  # inside a line already reported as too long: drop bytes until its newline
    first = True
    while True:
        try:
            chunk = stream.read1(_CHUNK_BYTES)
        except EOFError as exc:
            raise _BrokenStream(f"the gzip stream is truncated ({exc}); nothing after this could be read") \
                from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise _BrokenStream(f"the gzip stream is corrupt ({exc}); nothing after this could be read") \
                from None
        if not chunk:
            break
        if first:
            chunk = chunk.removeprefix(_UTF8_BOM)
            first = False
        parts = chunk.split(b"\n")
        parts[0] = pending + parts[0]
        pending = parts.pop()
        for part in parts:
            if oversized:
                oversized = False  # this part is the tail of the long line, already reported
                continue
            yield part if len(part) <= MAX_LINE_BYTES else None
        if len(pending) > MAX_LINE_BYTES:
            if not oversized:
                yield None
            oversized = True
            pending = b""
    if pending and not oversized:
        yield _Tail(pending)


def _parse_document(line: bytes) -> CatalogDocument:
    try:
        value = orjson.loads(memoryview(line))  # orjson refuses bytes subclasses such as _Tail
    except orjson.JSONDecodeError as exc:
        raise _BadLine(_json_reason(line, exc)) from None
    if not isinstance(value, dict):
        raise _BadLine(f"expected a JSON object, got a JSON {_json_kind(value)}")
    if _WRAPPER_KEYS.isdisjoint(value):
        try:
            return document_for(Product.model_validate(value))
        except ValidationError as exc:
            raise _BadLine(f"not a document (no id, contents or product) nor a valid bare product: "
                           f"{_validation_reason(exc)}") from None
    try:
        document = CatalogDocument.model_validate(value)
    except ValidationError as exc:
        raise _BadLine(f"invalid document: {_validation_reason(exc)}") from None
    if document.id != document.product.product_id:
        raise _BadLine(f"id {document.id!r} differs from product.product_id {document.product.product_id!r}")
    return document


def _json_reason(line: bytes, exc: orjson.JSONDecodeError) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad_utf8:
        return f"not valid UTF-8 (byte 0x{line[bad_utf8.start]:02x} at byte offset {bad_utf8.start})"
    return f"invalid JSON: {exc.msg} at column {exc.colno}"


def _json_kind(value: object) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return kinds.get(type(value), "null")


def _validation_reason(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "value"
    problem = f"missing field {where!r}" if first["type"] == "missing" else f"{where}: {first['msg']}"
    more = exc.error_count() - 1
    return problem + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


class _ImportProgress:
    """Progress bar over compressed bytes read, with lines/s; does nothing when disabled."""

    def __init__(self, bar: Progress | None = None, task: TaskID | None = None) -> None:
        self._bar = bar
        self._task = task

    def update(self, position: int, lines: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=position, lines=lines)


class _LinesPerSecond(ProgressColumn):
    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        rate = f"{task.fields.get('lines', 0) / elapsed:,.0f}" if elapsed > 0 else "-"
        return Text(f"{rate} lines/s", style="progress.data.speed")


@contextmanager
def _progress_bar(enabled: bool, label: str, total_bytes: int) -> Iterator[_ImportProgress]:
    console = Console(stderr=True)
    # A bar redrawn into a log file or CI output is noise: only draw it on an interactive terminal.
    if not enabled or not console.is_terminal or console.is_dumb_terminal:
        yield _ImportProgress()
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TaskProgressColumn(),
                  DownloadColumn(), _LinesPerSecond(), TimeRemainingColumn(), console=console) as bar:
        yield _ImportProgress(bar, bar.add_task(f"importing {label}", total=total_bytes, lines=0))
