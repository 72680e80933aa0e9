"""One opened catalog directory: what the generator, the runner and the validator derive from it, each
derived once.

A :class:`CatalogDir` names a built catalog directory (``shoppingbench.catalog_dir``) and gives, lazily
and once each, its content fingerprint, its search engine, its title embedder and its request writer, so
the pieces that serve one catalog share them instead of hashing the store, loading the lexicon or
opening the index again. It closes the engine it opened (:meth:`CatalogDir.close`, or ``with``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import Final

from shoppingbench.catalog_dir import catalog_exists, open_catalog
from shoppingbench.generator.fingerprint import catalog_fingerprint
from shoppingbench.generator.writer import lexicon_path, writer_for_catalog
from shoppingbench.generator.writer.request import RequestWriter
from shoppingbench.scoring.embedder import CachedEmbedder, MiniLMEmbedder, TitleEmbedder
from shoppingbench.search.engine import BM25SearchEngine

TITLE_CACHE_FILE: Final = "generator-titles.sqlite"
"""The title-embedding cache kept beside the catalog (speed only)."""


@dataclass(frozen=True)
class CatalogDir:
    """The built catalog in ``path``. Each property is computed on first use and kept (a rebuild of the
    directory needs a new object); a property of a directory with no built catalog raises as its
    function does (:func:`open_catalog`, :func:`catalog_fingerprint`: ``FileNotFoundError``;
    :func:`writer_for_catalog`: ``LexiconError``)."""

    path: Path

    @property
    def exists(self) -> bool:
        """Whether the directory holds a finished build (asked afresh each time)."""
        return catalog_exists(self.path)

    @cached_property
    def fingerprint(self) -> str:
        """The generator's content fingerprint of the catalog (:func:`catalog_fingerprint`)."""
        return catalog_fingerprint(self.path)

    @cached_property
    def engine(self) -> BM25SearchEngine:
        """The search engine over the catalog (:func:`open_catalog`), closed by :meth:`close`."""
        return open_catalog(self.path)

    @cached_property
    def title_embedder(self) -> TitleEmbedder:
        """MiniLM with its cache file beside the catalog; in memory only where the catalog is read-only
        (the cache saves time, never changes a vector)."""
        try:
            return CachedEmbedder(MiniLMEmbedder(), self.path / TITLE_CACHE_FILE)
        except (OSError, sqlite3.Error):
            return CachedEmbedder(MiniLMEmbedder())

    @property
    def lexicon_path(self) -> Path:
        """The lexicon file the catalog's writer reads (:func:`lexicon_path`)."""
        return lexicon_path(self.path)

    @cached_property
    def writer(self) -> RequestWriter:
        """The catalog's request writer, from its lexicon (:func:`writer_for_catalog`)."""
        return writer_for_catalog(self.path)

    def close(self) -> None:
        """Close the engine if it was opened."""
        if "engine" in self.__dict__:
            self.engine.close()

    def __enter__(self) -> CatalogDir:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


@contextmanager
def opened_catalog_dir(catalog: CatalogDir | Path) -> Iterator[CatalogDir]:
    """``catalog`` for the block: a :class:`CatalogDir` as it is (whoever made it closes it), a directory
    opened here and closed after the block."""
    if isinstance(catalog, CatalogDir):
        yield catalog
        return
    with CatalogDir(Path(catalog)) as opened:
        yield opened
