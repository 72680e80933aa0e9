"""The catalog a training run rolls out and evaluates on, opened once and handed to every step.

A pipeline opens its catalog once (``shoppingbench.generator.catalog.opened_catalog_dir``) and passes the
:class:`~shoppingbench.generator.catalog.CatalogDir` to each stage that rolls out and to the held-out
evaluation, which share its one search engine; a stage run on its own (``worker train``) opens the
directory its config names for that run alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shoppingbench.generator.catalog import CatalogDir, opened_catalog_dir
from shoppingbench.search.engine import BM25SearchEngine

Catalog = Path | CatalogDir
"""A catalog directory, or the run's opened one."""


@contextmanager
def opened_catalog(catalog: Catalog) -> Iterator[BM25SearchEngine]:
    """``catalog``'s search engine for the block: the opened catalog's own (whoever opened it closes it),
    or a directory's, opened here and closed after the block."""
    with opened_catalog_dir(catalog) as opened:
        yield opened.engine
