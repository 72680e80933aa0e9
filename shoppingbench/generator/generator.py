"""The race-time problem generator: seeded, solvable product, shop and voucher problems over any catalog.

A :class:`ProblemGenerator` serves one catalog (the bundled sample world's or an imported ShoppingBench
catalog of millions of products) and turns a seed into a suite. The suite is a pure function of the
catalog's content fingerprint, the seed, :data:`GENERATOR_VERSION`, the configuration, the requested
counts and the excluded products, so every honest validator generates the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from types import TracebackType

from shoppingbench.catalog.build import open_catalog
from shoppingbench.generator.catalog_view import CatalogView
from shoppingbench.generator.config import GENERATOR_VERSION, KNOWN_VERSIONS, GeneratorConfig
from shoppingbench.generator.fingerprint import catalog_fingerprint
from shoppingbench.generator.space import problem_space
from shoppingbench.generator.suite import SuiteDraw
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.search.engine import BM25SearchEngine


class ProblemGenerator:
    """Generates suites from seeds over the catalog ``engine`` serves (``fingerprint`` names its content)."""

    def __init__(self, engine: BM25SearchEngine, *, fingerprint: str,
                 config: GeneratorConfig | None = None, version: str = GENERATOR_VERSION) -> None:
        if version not in KNOWN_VERSIONS:
            raise ValueError(f"unknown generator version {version!r}; this code knows "
                             f"{', '.join(KNOWN_VERSIONS)}")
        self.version = version
        self.engine = engine
        self.fingerprint = fingerprint
        self.config = config or GeneratorConfig()
        self._catalog = CatalogView(engine)
        self._owns_engine = False
        self._space: dict[Category, int] | None = None

    @classmethod
    def open(cls, catalog_dir: Path, config: GeneratorConfig | None = None, *,
             version: str = GENERATOR_VERSION) -> ProblemGenerator:
        """A generator of ``version`` over the built catalog in ``catalog_dir``; :meth:`close` closes the
        catalog. Raises ``ValueError`` for a version this code does not know."""
        fingerprint = catalog_fingerprint(catalog_dir)
        engine = open_catalog(catalog_dir)
        try:
            generator = cls(engine, fingerprint=fingerprint, config=config, version=version)
        except ValueError:
            engine.close()
            raise
        generator._owns_engine = True
        return generator

    @property
    def key(self) -> str:
        """Generator version, catalog fingerprint and a digest of the configuration: everything a suite
        depends on besides its seed and requested counts."""
        config = hashlib.sha256(self.config.model_dump_json().encode()).hexdigest()[:12]
        return f"{self.version}/{self.fingerprint}/{config}"

    def close(self) -> None:
        """Close the catalog if :meth:`open` opened it (an engine passed in belongs to the caller)."""
        if self._owns_engine:
            self.engine.close()

    def __enter__(self) -> ProblemGenerator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        """``per_category`` problems of each category, in ``CATEGORIES`` order, every one checked solvable.

        No product is a target twice in the suite, nor any of ``exclude_products``. A category comes out
        short only when the catalog cannot supply more (e.g. no shop sells two kinds of item).
        """
        unknown = set(per_category) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown problem categories {sorted(unknown)}; "
                             f"allowed: {', '.join(CATEGORIES)}")
        negative = {c: n for c, n in per_category.items() if n < 0}
        if negative:
            raise ValueError(f"problem counts must be >= 0, got {negative}")
        draw = SuiteDraw(self._catalog, fingerprint=self.fingerprint, seed=seed, config=self.config,
                         exclude=exclude_products)
        return [problem for category in CATEGORIES
                for problem in draw.category(category, per_category.get(category, 0))]

    def space(self) -> dict[Category, int]:
        """A conservative count of the distinct problems reachable per category (see ``generator.space``)."""
        if self._space is None:
            self._space = problem_space(self._catalog, self.config)
        return dict(self._space)
