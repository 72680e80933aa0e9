"""One opened catalog directory: each derived value computed once, equal to its function's, shared by the
generators built from it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shoppingbench.catalog_dir import open_catalog
from shoppingbench.generator import CatalogDir, ProblemGenerator, catalog_fingerprint
from shoppingbench.generator import catalog as catalog_module
from shoppingbench.generator.writer import lexicon_path, writer_for_catalog
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.base import FindProductQuery


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the catalog object called each function it derives a value with."""
    counted: Counter[str] = Counter()

    def counting(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counted[name] += 1
            return function(*args, **kwargs)
        return wrapper

    for name in ("catalog_fingerprint", "open_catalog", "writer_for_catalog", "MiniLMEmbedder"):
        monkeypatch.setattr(catalog_module, name, counting(name, getattr(catalog_module, name)))
    return counted


def test_each_value_is_derived_once_and_equals_its_function(small_world: SampleWorld,
                                                            calls: Counter[str]) -> None:
    directory = small_world.catalog_dir
    with CatalogDir(directory) as catalog:
        for _ in range(3):
            fingerprint, engine, writer = catalog.fingerprint, catalog.engine, catalog.writer
            embedder = catalog.title_embedder
        assert calls == {"catalog_fingerprint": 1, "open_catalog": 1, "writer_for_catalog": 1,
                         "MiniLMEmbedder": 1}
        assert fingerprint == catalog_fingerprint(directory)
        assert writer.key == writer_for_catalog(directory).key
        assert catalog.lexicon_path == lexicon_path(directory) and catalog.exists
        assert embedder is catalog.title_embedder and engine is catalog.engine
        query = FindProductQuery(q="bottle")
        fresh = open_catalog(directory)
        try:
            assert engine.find_product(query) == fresh.find_product(query)
        finally:
            fresh.close()
    with pytest.raises(Exception, match="closed"):  # the object closed the engine it opened
        engine.find_product(query)


def test_closing_an_object_that_opened_nothing_opens_nothing(tmp_path: Path, calls: Counter[str]) -> None:
    with CatalogDir(tmp_path) as catalog:
        assert not catalog.exists
    assert not calls
    with pytest.raises(FileNotFoundError, match="no built catalog"):
        CatalogDir(tmp_path).fingerprint  # noqa: B018 (the property raises)


def test_generators_over_one_object_share_it_and_match_generators_over_the_directory(
        small_world: SampleWorld, calls: Counter[str]) -> None:
    with ProblemGenerator.open(small_world.catalog_dir) as own:
        key, suite = own.key, own.generate("shared-seed", {"product": 2, "shop": 1, "voucher": 1})
    calls.clear()
    with CatalogDir(small_world.catalog_dir) as catalog:
        with ProblemGenerator.open(catalog) as first, \
                ProblemGenerator.open(catalog, version="sbgen-1") as old:
            assert first.engine is old.engine is catalog.engine
            assert first.key == key and old.key != key
            assert first.generate("shared-seed", {"product": 2, "shop": 1, "voucher": 1}) == suite
        assert calls["open_catalog"] == calls["catalog_fingerprint"] == 1
        # A generator closing does not close the caller's catalog.
        assert catalog.engine.find_product(FindProductQuery(q="bottle"))
