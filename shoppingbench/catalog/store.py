"""SQLite product store: the catalog's source of truth for product details.

The search index holds only what ranking and filtering need; every field a tool returns comes from
here. Writes are upserts keyed by ``product_id``, so importing the same file twice changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType

import orjson

from shoppingbench.catalog.models import CatalogDocument, Product

_SCHEMA = """
CREATE TABLE IF NOT EXISTS products (
    product_id TEXT PRIMARY KEY,
    contents   TEXT NOT NULL,
    product    BLOB NOT NULL
) WITHOUT ROWID;
"""
_LOOKUP_CHUNK = 500


class ProductStore:
    """Products keyed by id in one SQLite file (WAL mode, safe for concurrent readers)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        if read_only:
            if not self.path.exists():
                raise FileNotFoundError(f"no product store at {self.path}; import a catalog first")
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ProductStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM products").fetchone()
        return int(count)

    def upsert(self, documents: Iterable[CatalogDocument]) -> int:
        """Insert or replace documents in one transaction; returns how many were written."""
        rows = [(d.id, d.contents, orjson.dumps(d.product.model_dump())) for d in documents]
        with self._db:
            self._db.executemany(
                "INSERT INTO products (product_id, contents, product) VALUES (?, ?, ?) "
                "ON CONFLICT(product_id) DO UPDATE SET contents=excluded.contents, product=excluded.product",
                rows,
            )
        return len(rows)

    def get_many(self, product_ids: list[str]) -> dict[str, Product]:
        """The products found among ``product_ids``, keyed by id."""
        found: dict[str, Product] = {}
        unique = list(dict.fromkeys(product_ids))
        for start in range(0, len(unique), _LOOKUP_CHUNK):
            chunk = unique[start:start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            for product_id, blob in self._db.execute(
                f"SELECT product_id, product FROM products WHERE product_id IN ({marks})", chunk
            ):
                found[product_id] = Product.model_validate(orjson.loads(blob))
        return found

    def get(self, product_id: str) -> Product | None:
        return self.get_many([product_id]).get(product_id)

    def iter_documents(self, batch_size: int = 5_000) -> Iterator[CatalogDocument]:
        """Every stored document in product_id order, read in batches (bounded memory)."""
        last = ""
        while True:
            rows = self._db.execute(
                "SELECT product_id, contents, product FROM products WHERE product_id > ? "
                "ORDER BY product_id LIMIT ?", (last, batch_size)
            ).fetchall()
            if not rows:
                return
            for product_id, contents, blob in rows:
                yield CatalogDocument(id=product_id, contents=contents,
                                      product=Product.model_validate(orjson.loads(blob)))
            last = rows[-1][0]
