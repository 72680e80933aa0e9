"""A catalog directory: the product store plus the search index built from it.

Layout: ``<dir>/products.sqlite3`` (details, source of truth), ``<dir>/index/`` (BM25 postings and
filter columns) and ``<dir>/catalog.json`` (the last build's report). The index is always rebuilt from
the store, so an import that added or replaced products never leaves a stale index behind; the report
is removed when a build starts and written when it ends, so a build cut short is never taken as done.
"""

from __future__ import annotations

from pathlib import Path

import structlog
from pydantic import BaseModel

from shoppingbench.catalog.importer import ImportReport, import_documents
from shoppingbench.catalog.store import ProductStore
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.search.index import IndexStats, build_index

log = structlog.get_logger(__name__)

STORE_FILE = "products.sqlite3"
INDEX_DIR = "index"
BUILD_RECORD = "catalog.json"


class CatalogBuildReport(BaseModel):
    catalog_dir: Path
    imported: ImportReport
    index: IndexStats


def build_catalog(source: Path, catalog_dir: Path, *, strict: bool = False,
                  progress: bool = True) -> CatalogBuildReport:
    """Import ``documents.jsonl[.gz]`` into the catalog's store, then rebuild its index."""
    catalog_dir.mkdir(parents=True, exist_ok=True)
    record = catalog_dir / BUILD_RECORD
    record.unlink(missing_ok=True)
    with ProductStore(catalog_dir / STORE_FILE) as store:
        imported = import_documents(source, store, strict=strict, progress=progress)
        index = build_index(store.iter_documents(), catalog_dir / INDEX_DIR, total=len(store),
                            progress=progress)
    report = CatalogBuildReport(catalog_dir=catalog_dir, imported=imported, index=index)
    record.write_text(report.model_dump_json(indent=2))
    log.info("catalog_built", catalog_dir=str(catalog_dir), products=index.documents,
             bad_lines=imported.bad)
    return report


def catalog_exists(catalog_dir: Path) -> bool:
    return (catalog_dir / BUILD_RECORD).exists()


def open_catalog(catalog_dir: Path) -> BM25SearchEngine:
    """The search engine over a built catalog directory."""
    if not catalog_exists(catalog_dir):
        raise FileNotFoundError(
            f"no catalog at {catalog_dir}: build one with `arena catalog import DOCUMENTS --catalog-dir "
            f"{catalog_dir}` or run `arena demo` to build the bundled sample world")
    return BM25SearchEngine(catalog_dir / INDEX_DIR, ProductStore(catalog_dir / STORE_FILE, read_only=True))
