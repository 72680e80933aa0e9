"""A catalog's content fingerprint: the same hex digest on every machine for the same products.

The digest is SHA-256 over every product in id byte order: its id, then the SHA-256 of its indexed
``contents`` and of its product record re-serialised canonically (keys sorted), so neither SQLite's
layout nor the importer's key order matters. Hashing a million products takes seconds, so the result
is cached in ``<catalog_dir>/generator-fingerprint.json``, keyed by the build record (``catalog.json``,
rewritten by every build) and the store file's size and modification time.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing, suppress
from pathlib import Path
from typing import Final

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from shoppingbench.catalog_dir import BUILD_RECORD, STORE_FILE, catalog_exists
from shoppingbench.files import write_file_atomically

FINGERPRINT_SCHEME: Final = "sbfp-1"
CACHE_FILE: Final = "generator-fingerprint.json"
_BATCH: Final = 5_000


class _Cached(BaseModel):
    model_config = ConfigDict(frozen=True)

    scheme: str
    build_key: str
    fingerprint: str


def _build_key(catalog_dir: Path) -> str:
    """What identifies one build of the catalog: its build record and its store file's stat."""
    store = (catalog_dir / STORE_FILE).stat()
    record = (catalog_dir / BUILD_RECORD).read_bytes()
    return hashlib.sha256(record + f"|{store.st_size}|{store.st_mtime_ns}".encode()).hexdigest()


def hash_store(store_path: Path) -> str:
    """The fingerprint of the products in one SQLite product store (no cache)."""
    digest = hashlib.sha256(FINGERPRINT_SCHEME.encode())
    uri = f"{store_path.resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        last = ""
        while True:
            # Keyset paging by the primary key: bounded memory, SQLite's BINARY order is byte order.
            rows = db.execute("SELECT product_id, contents, product FROM products WHERE product_id > ? "
                              "ORDER BY product_id LIMIT ?", (last, _BATCH)).fetchall()
            if not rows:
                break
            for product_id, contents, blob in rows:
                canonical = orjson.dumps(orjson.loads(blob), option=orjson.OPT_SORT_KEYS)
                digest.update(len(product_id.encode()).to_bytes(4, "big") + product_id.encode())
                digest.update(hashlib.sha256(contents.encode()).digest())
                digest.update(hashlib.sha256(canonical).digest())
            last = rows[-1][0]
    return digest.hexdigest()


def catalog_fingerprint(catalog_dir: Path) -> str:
    """The content fingerprint of the built catalog in ``catalog_dir`` (hashed once per build, then cached).

    A catalog directory that cannot be written still gets its fingerprint, just without the cache.
    """
    catalog_dir = Path(catalog_dir)
    if not catalog_exists(catalog_dir):
        raise FileNotFoundError(f"no built catalog at {catalog_dir} (missing {BUILD_RECORD})")
    key = _build_key(catalog_dir)
    cache = catalog_dir / CACHE_FILE
    try:
        cached = _Cached.model_validate_json(cache.read_bytes())
        if cached.scheme == FINGERPRINT_SCHEME and cached.build_key == key:
            return cached.fingerprint
    except (OSError, ValidationError):
        pass
    fingerprint = hash_store(catalog_dir / STORE_FILE)
    with suppress(OSError):  # a read-only catalog directory: no cache, same answer
        write_file_atomically(cache, _Cached(scheme=FINGERPRINT_SCHEME, build_key=key,
                                             fingerprint=fingerprint).model_dump_json().encode())
    return fingerprint
