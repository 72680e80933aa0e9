"""Drawing one "sbgen-2" suite: sampled like ShoppingBench, worded by the catalog's writer, checked solvable.

Every candidate has two draw streams keyed by (version, catalog fingerprint, seed, category, candidate
number): one for the sampler, one for the writer, so a new lexicon changes the wording but never which
targets and constraints a candidate draws. A suite is a pure function of those, the configuration, the
writer, the requested counts and the excluded products. A candidate the reference would redraw, whose
items read alike, or that the shopper's words cannot solve is replaced by the next candidate.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Final

from shoppingbench.generator.config import GeneratorConfig
from shoppingbench.generator.sampler import sample_problem
from shoppingbench.generator.solvable import SolvabilityCheck
from shoppingbench.generator.writer.request import GeneratedProblem, RequestWriter
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category, Problem
from shoppingbench.search.catalog_view import CatalogView

VERSION: Final = "sbgen-2"


class SuiteDraw:
    """One suite in the making: the products it used and the streams it drew from."""

    def __init__(self, catalog: CatalogView, *, fingerprint: str, seed: str, config: GeneratorConfig,
                 exclude: AbstractSet[str], writer: RequestWriter, check: SolvabilityCheck) -> None:
        self.catalog = catalog
        self.fingerprint = fingerprint
        self.seed = seed
        self.config = config
        self.exclude = exclude
        self.writer = writer
        self.check = check
        self.used: set[str] = set()

    def _free(self, product_id: str) -> bool:
        return product_id not in self.used and product_id not in self.exclude

    def category(self, category: Category, wanted: int) -> list[GeneratedProblem]:
        """Up to ``wanted`` problems of ``category``; fewer only when the candidates run out."""
        made: list[GeneratedProblem] = []
        for number in range(wanted * self.config.candidates_per_problem):
            if len(made) == wanted:
                break
            problem = self._candidate(category, number)
            if problem is not None:
                made.append(problem)
        return made

    def _candidate(self, category: Category, number: int) -> GeneratedProblem | None:
        key = (VERSION, self.fingerprint, self.seed, category, str(number))
        sampled = sample_problem(category, self.catalog, HashDraws(*key), self.config, self._free)
        if sampled is None:
            return None
        written = self.writer.write(category, sampled.items, sampled.voucher, HashDraws(*key, "writer"))
        if self.config.distinct_phrases and len({i.phrase for i in written.items}) < len(written.items):
            return None
        search_terms = tuple(i.search_terms for i in written.items)
        if not self.check.solvable(sampled, search_terms):
            return None
        self.used.update(item.product.product_id for item in sampled.items)
        problem = Problem(category=category, query=written.query, targets=[i.target for i in sampled.items],
                          voucher=sampled.voucher)
        return GeneratedProblem(problem, search_terms)
