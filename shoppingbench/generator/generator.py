"""The race-time problem generator: seeded, solvable product, shop and voucher problems over any catalog.

A :class:`ProblemGenerator` serves one catalog (the bundled sample world's or an imported ShoppingBench
catalog of millions of products) with one generator version (see :mod:`shoppingbench.generator.versions`)
and turns a seed into a suite. The suite is a pure function of the catalog's content fingerprint, the
seed, the version, the configuration, the writer (its lexicon), the requested counts and the excluded
products, so every honest validator generates the same bytes; :attr:`ProblemGenerator.key` names all
but the seed, the counts and the exclusions.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel

from shoppingbench.generator.catalog import CatalogDir
from shoppingbench.generator.versions import DEFAULT_VERSION, Generation, get_version
from shoppingbench.generator.writer.request import GeneratedProblem, RequestWriter
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.scoring.embedder import CachedEmbedder, MiniLMEmbedder, TitleEmbedder
from shoppingbench.search.catalog_view import CatalogView
from shoppingbench.search.engine import BM25SearchEngine


class ProblemGenerator:
    """Generates suites from seeds over the catalog ``engine`` serves (``fingerprint`` names its content).

    ``writer`` words requests (the catalog's lexicon writer; required by versions that use one, ignored
    by "sbgen-1"); ``embedder`` scores title similarity when the solvability check weighs a product
    other than the target (MiniLM, as the scorer, by default).
    """

    def __init__(self, engine: BM25SearchEngine, *, fingerprint: str, writer: RequestWriter | None = None,
                 config: BaseModel | None = None, version: str = DEFAULT_VERSION,
                 embedder: TitleEmbedder | None = None) -> None:
        self.engine = engine
        self.fingerprint = fingerprint
        self.version = get_version(version)
        if self.version.uses_writer and writer is None:
            raise ValueError(f"generator {self.version.name} words requests with a writer: pass the "
                             "catalog's (CatalogDir.writer)")
        self.writer = writer if self.version.uses_writer else None
        self.config = self.version.check_config(config)
        self._catalog = CatalogView(engine)
        self._generation = Generation(self._catalog, fingerprint, writer,
                                      embedder or CachedEmbedder(MiniLMEmbedder()))
        self._owns_engine = False
        self._space: dict[Category, int] | None = None

    @classmethod
    def open(cls, catalog: CatalogDir | Path, config: BaseModel | None = None, *,
             version: str = DEFAULT_VERSION) -> ProblemGenerator:
        """A generator of ``version`` over the built catalog ``catalog`` (a directory, or a
        :class:`CatalogDir` whose engine, fingerprint, writer and title embedder it shares), with the
        catalog's writer. :meth:`close` closes a catalog opened here from a directory; a
        :class:`CatalogDir` passed in belongs to the caller. An unknown version is a ``ValueError`` naming
        the known ones."""
        opened = catalog if isinstance(catalog, CatalogDir) else CatalogDir(Path(catalog))
        owned = opened is not catalog
        try:
            writer = opened.writer if get_version(version).uses_writer else None
            fingerprint = opened.fingerprint
            generator = cls(opened.engine, fingerprint=fingerprint, writer=writer, config=config,
                            version=version, embedder=opened.title_embedder)
        except BaseException:
            if owned:
                opened.close()
            raise
        generator._owns_engine = owned
        return generator

    @property
    def key(self) -> str:
        """Everything a suite depends on besides its seed, counts and exclusions: version / catalog
        fingerprint / configuration digest / writer key (the writer key is left out by "sbgen-1")."""
        return self.version.key(self._generation, self.config)

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
        checked = self.generate_checked(seed, per_category, exclude_products=exclude_products)
        return [generated.problem for generated in checked]

    def generate_checked(self, seed: str, per_category: Mapping[Category, int], *,
                         exclude_products: AbstractSet[str] = frozenset()) -> list[GeneratedProblem]:
        """:meth:`generate`'s problems, each with the shopper words per target its check searched with
        (for re-checking a suite independently)."""
        unknown = set(per_category) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown problem categories {sorted(unknown)}; "
                             f"allowed: {', '.join(CATEGORIES)}")
        negative = {c: n for c, n in per_category.items() if n < 0}
        if negative:
            raise ValueError(f"problem counts must be >= 0, got {negative}")
        draw = self.version.draw(self._generation, self.config, seed, exclude_products)
        return [problem for category in CATEGORIES
                for problem in draw.category(category, per_category.get(category, 0))]

    def space(self) -> dict[Category, int]:
        """A conservative count of the distinct problems reachable per category (see the version's space)."""
        if self._space is None:
            self._space = self.version.space(self._catalog, self.config)
        return dict(self._space)
