"""SQLite product store: the catalog's source of truth for product details.

The search index holds only what ranking and filtering need; every field a tool returns comes from
here. Writes are upserts keyed by ``product_id``, so importing the same file twice changes nothing.
"""

from __future__ import annotations

import sqlite3
import threading
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
);
"""
# Rows are ~1-3 KB: SQLite advises WITHOUT ROWID only for rows under ~1/20 of a page, and 4 KB pages leave
# room for one or two such rows. A rowid table on 16 KB pages imports ~4x faster at ~1/3 of the size.
_PAGE_SIZE = 16_384
_LOOKUP_CHUNK = 500


class ProductStore:
    """Products keyed by id in one SQLite file (WAL mode; safe to share between threads)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"no product store at {self.path}; import a catalog first")
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._connection()  # open this thread's connection now so a bad path fails here, not later

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection.

        A sqlite3 connection carries one transaction state, and the tool server reads from a thread
        pool: threads sharing one connection could commit each other's half-done writes and would all
        queue on its mutex. So each thread opens its own (WAL lets readers run beside a writer).
        """
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            with self._lock:
                if self._closed:
                    raise sqlite3.ProgrammingError(f"the product store {self.path} is closed")
                db = self._connect()
                self._connections.append(db)
            self._local.db = db
        return db

    def _connect(self) -> sqlite3.Connection:
        # check_same_thread=False only so close() can close every thread's connection.
        if self.read_only:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            return sqlite3.connect(uri, uri=True, check_same_thread=False)
        db = sqlite3.connect(self.path, check_same_thread=False)
        db.execute(f"PRAGMA page_size={_PAGE_SIZE}")  # takes effect only when the file is new
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        return db

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for db in self._connections:
                db.close()
            self._connections.clear()

    def checkpoint(self) -> None:
        """Copy every committed page from the WAL into the main file and empty the WAL.

        After this (and with no writer since) the main file alone holds the whole store, so it can be
        renamed or copied without its ``-wal``.
        """
        busy, _, _ = self._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise sqlite3.OperationalError(f"could not checkpoint {self.path}: another connection is busy")

    def __enter__(self) -> ProductStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __len__(self) -> int:
        (count,) = self._connection().execute("SELECT COUNT(*) FROM products").fetchone()
        return int(count)

    def upsert(self, documents: Iterable[CatalogDocument]) -> int:
        """Insert or replace documents in one transaction; returns how many were written."""
        rows = [(d.id, d.contents, orjson.dumps(d.product.model_dump())) for d in documents]
        db = self._connection()
        with db:
            db.executemany(
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
            for product_id, blob in self._connection().execute(
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
            rows = self._connection().execute(
                "SELECT product_id, contents, product FROM products WHERE product_id > ? "
                "ORDER BY product_id LIMIT ?", (last, batch_size)
            ).fetchall()
            if not rows:
                return
            for product_id, contents, blob in rows:
                yield CatalogDocument(id=product_id, contents=contents,
                                      product=Product.model_validate(orjson.loads(blob)))
            last = rows[-1][0]
