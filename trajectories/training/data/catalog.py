"""The catalog a training run rolls out and evaluates on, opened once and handed to every step.

A pipeline opens its catalog's search engine once (:func:`opened_catalog`) and passes the engine to each
stage that rolls out and to the held-out evaluation; a stage run on its own (``worker train``) opens the
directory its config names for that run alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shoppingbench.catalog_dir import open_catalog
from shoppingbench.search.engine import BM25SearchEngine

Catalog = Path | BM25SearchEngine
"""A catalog directory, or its search engine already open."""


@contextmanager
def opened_catalog(catalog: Catalog) -> Iterator[BM25SearchEngine]:
    """``catalog``'s search engine for the block: an open engine as it is (whoever opened it closes it), a
    directory opened here and closed after the block."""
    if isinstance(catalog, BM25SearchEngine):
        yield catalog
        return
    engine = open_catalog(catalog)
    try:
        yield engine
    finally:
        engine.close()
