"""A catalog directory: the product store plus the search index built from it (above ``catalog/`` and
``search/``, which it ties together).

Layout: ``<dir>/products.sqlite3`` (details, source of truth), ``<dir>/index/`` (BM25 postings and
filter columns) and ``<dir>/catalog.json`` (the last build's report).

A build is exactly the union of its source files, whatever the directory held before: the sources are
imported into a fresh ``products.sqlite3.partial``, the index is built from it, then the store is
renamed over ``products.sqlite3`` and ``catalog.json`` is written last. ``catalog.json`` is removed
before the index or store is touched, so a build cut short is never taken as done; a build that fails
while importing (bad line under ``--strict``, truncated or corrupt source, more bad lines than
``max_bad``) leaves the previous catalog as it was.

One build at a time: a build holds an exclusive lock (``flock``) on ``.<name>.build.lock`` beside the
directory (in its parent, so the directory holds the catalog alone) from its first file to
``catalog.json``. A second build of the same directory waits for it; when the first one built the very
same sources and its result passes the second's ``strict`` / ``max_bad``, the second takes that catalog
as its own instead of building it again (two runs that each build a missing catalog at once get one
build between them, and neither removes the other's partial files).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import structlog
from pydantic import BaseModel, ValidationError

from shoppingbench.catalog.importer import CatalogImportError, ImportReport, import_documents
from shoppingbench.catalog.store import ProductStore
from shoppingbench.files import write_file_atomically
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import IndexStats, build_index

log = structlog.get_logger(__name__)

STORE_FILE = "products.sqlite3"
PARTIAL_STORE_FILE = STORE_FILE + ".partial"
INDEX_DIR = "index"
BUILD_RECORD = "catalog.json"
# SQLite opens a -wal (or hot -journal) found beside a database whatever file it belongs to, so a
# leftover one would be replayed onto a store renamed into place.
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class CatalogBuildReport(BaseModel):
    catalog_dir: Path
    imported: list[ImportReport]
    """One report per source file, in the order given."""
    index: IndexStats


class TooManyBadLines(Exception):
    """A build skipped more bad lines than it was allowed: the previous catalog was kept."""

    def __init__(self, reports: list[ImportReport], max_bad: int) -> None:
        bad = sum(report.bad for report in reports)
        super().__init__(f"{bad} bad line{'s' if bad != 1 else ''} skipped, more than the {max_bad} allowed; "
                         "the previous catalog was kept")
        self.reports = reports
        self.max_bad = max_bad


def _remove_side_files(path: Path) -> None:
    for suffix in _SQLITE_SIDE_FILES:
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def build_lock_path(catalog_dir: Path) -> Path:
    """The file a build of ``catalog_dir`` locks, beside the directory."""
    resolved = catalog_dir.resolve()
    return resolved.parent / f".{resolved.name}.build.lock"


@contextmanager
def _build_lock(catalog_dir: Path) -> Iterator[None]:
    """Hold the directory's build lock for the block, waiting for a build that holds it."""
    with open(build_lock_path(catalog_dir), "ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("catalog_build_waiting", catalog_dir=str(catalog_dir))
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file releases the lock, also when the process dies


def _record_identity(record: Path) -> tuple[int, int] | None:
    try:
        stat = record.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def _built_meanwhile(catalog_dir: Path, paths: Sequence[Path], before: tuple[int, int] | None, *,
                     strict: bool, max_bad: int | None) -> CatalogBuildReport | None:
    """The report of a build that finished since this one started (its record is not the one seen then,
    ``before``), when it imported exactly ``paths`` and its bad lines are within this build's limits:
    building again would give the same catalog."""
    record = catalog_dir / BUILD_RECORD
    if _record_identity(record) in (None, before):
        return None  # no build finished meanwhile (none ran, or the one waited for failed)
    try:
        report = CatalogBuildReport.model_validate_json(record.read_bytes())
    except (OSError, ValidationError):
        return None
    bad = sum(imported.bad for imported in report.imported)
    if [imported.source.resolve() for imported in report.imported] != [path.resolve() for path in paths] \
            or (strict and bad) or (max_bad is not None and bad > max_bad):
        return None
    return report


def build_catalog(sources: Path | Sequence[Path], catalog_dir: Path, *, strict: bool = False,
                  max_bad: int | None = None, progress: bool = True) -> CatalogBuildReport:
    """Build the catalog from one or more ``documents.jsonl[.gz]`` files (shards), replacing its contents.

    The catalog holds exactly the union of ``sources`` (a product id seen twice keeps its last line), so
    building the same sources again gives the same catalog. Raises :class:`CatalogImportError` on the
    first bad line with ``strict``, and always when a source ends early or is corrupt (a truncated
    gzip, a plain file cut mid-line): a catalog missing the tail of its source must not be taken as
    complete. Raises :class:`TooManyBadLines` when the sources hold more than ``max_bad`` bad lines
    together (``None``: any number). A build already running on ``catalog_dir`` is waited for; when it
    built the same sources within these limits, its report is returned and nothing is built again.
    """
    paths = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(s) for s in sources]
    if not paths:
        raise ValueError("build_catalog needs at least one source file")
    catalog_dir.mkdir(parents=True, exist_ok=True)
    before = _record_identity(catalog_dir / BUILD_RECORD)
    with _build_lock(catalog_dir):
        done = _built_meanwhile(catalog_dir, paths, before, strict=strict, max_bad=max_bad)
        if done is not None:
            log.info("catalog_built_meanwhile", catalog_dir=str(catalog_dir))
            return done
        return _build_locked(paths, catalog_dir, strict=strict, max_bad=max_bad, progress=progress)


def _build_locked(paths: Sequence[Path], catalog_dir: Path, *, strict: bool, max_bad: int | None,
                  progress: bool) -> CatalogBuildReport:
    """:func:`build_catalog`'s work, under the directory's build lock."""
    record = catalog_dir / BUILD_RECORD
    partial = catalog_dir / PARTIAL_STORE_FILE
    partial.unlink(missing_ok=True)  # left over by a build that was killed
    _remove_side_files(partial)
    reports: list[ImportReport] = []
    try:
        with ProductStore(partial) as store:
            for path in paths:
                report = import_documents(path, store, strict=strict, progress=progress)
                if not report.complete:
                    raise CatalogImportError(
                        path, report.lines, f"the file ended early or is corrupt at line {report.lines} "
                        f"({report.stream_error}); re-download it")
                reports.append(report)
            if max_bad is not None and sum(report.bad for report in reports) > max_bad:
                raise TooManyBadLines(reports, max_bad)
            # From here the index and store are replaced one after the other: without the record the
            # directory is never opened half-swapped.
            record.unlink(missing_ok=True)
            index = build_index(store.iter_documents(), catalog_dir / INDEX_DIR, total=len(store),
                                progress=progress)
            store.checkpoint()  # every page in the main file, so the rename carries the whole store
    except BaseException:
        partial.unlink(missing_ok=True)  # a failed build's scratch store is a second catalog's worth of disk
        _remove_side_files(partial)
        raise
    store_path = catalog_dir / STORE_FILE
    _remove_side_files(store_path)  # the old store's WAL would otherwise be replayed onto the new file
    _remove_side_files(partial)  # at most empty after the checkpoint; nothing may pair with them later
    os.replace(partial, store_path)
    report_out = CatalogBuildReport(catalog_dir=catalog_dir, imported=reports, index=index)
    write_file_atomically(record, report_out.model_dump_json(indent=2).encode())
    log.info("catalog_built", catalog_dir=str(catalog_dir), sources=[str(p) for p in paths],
             products=index.documents, bad_lines=sum(r.bad for r in reports))
    return report_out


def catalog_exists(catalog_dir: Path) -> bool:
    return (catalog_dir / BUILD_RECORD).exists()


def open_catalog(catalog_dir: Path) -> BM25SearchEngine:
    """The search engine over a built catalog directory (open it after a build to see the new files)."""
    if not catalog_exists(catalog_dir):
        raise FileNotFoundError(
            f"no catalog at {catalog_dir}: build one with `arena catalog import DOCUMENTS --catalog-dir "
            f"{catalog_dir}` or run `arena demo` to build the bundled sample world")
    return BM25SearchEngine(catalog_dir / INDEX_DIR, ProductStore(catalog_dir / STORE_FILE, read_only=True))
