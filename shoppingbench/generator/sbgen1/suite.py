"""Drawing one suite: candidates per category from seeded streams, each checked solvable before it is kept.

Every candidate has its own draw stream keyed by (generator version, catalog fingerprint, seed,
category, candidate number), so a suite is a pure function of those, the configuration, the
requested counts and the excluded products. Targets are drawn uniformly by rank; a product already
used in the suite or excluded is never a target. A candidate whose request the real search cannot
solve is re-described with more detail, then replaced by the next candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from shoppingbench.catalog.models import Product
from shoppingbench.generator.sbgen1.config import GENERATOR_VERSION, GeneratorConfig
from shoppingbench.generator.sbgen1.describe import Item, describable, describe, item_kind
from shoppingbench.generator.sbgen1.wording import product_query
from shoppingbench.problems import wording
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category, Problem, Voucher
from shoppingbench.problems.solvability import items_solvable
from shoppingbench.problems.terms import make_voucher
from shoppingbench.scoring.budget import basket_total, fits_budget
from shoppingbench.search.catalog_view import CatalogView

_DRAWS_PER_TARGET = 8
"""Ranks tried for one target before the candidate gives up (used/excluded products are skipped)."""


def voucher_decides(prices: Sequence[float], shop_ids: Sequence[str], voucher: Voucher) -> bool:
    """The basket is over budget as is, and within it once the voucher applies (floats, as scored)."""
    return basket_total(prices) > voucher.budget and fits_budget(prices, set(shop_ids), voucher)


class SuiteDraw:
    """One suite in the making: the products it used and the streams it drew from."""

    def __init__(self, catalog: CatalogView, *, fingerprint: str, seed: str, config: GeneratorConfig,
                 exclude: AbstractSet[str]) -> None:
        self.catalog = catalog
        self.fingerprint = fingerprint
        self.seed = seed
        self.config = config
        self.exclude = exclude
        self.used: set[str] = set()

    def _free(self, product_id: str) -> bool:
        return product_id not in self.used and product_id not in self.exclude

    def category(self, category: Category, wanted: int) -> list[Problem]:
        """Up to ``wanted`` problems of ``category``; fewer only when the candidates run out."""
        made: list[Problem] = []
        if self.catalog.size == 0:
            return made
        for number in range(wanted * self.config.candidates_per_problem):
            if len(made) == wanted:
                break
            rng = HashDraws(GENERATOR_VERSION, self.fingerprint, self.seed, category, str(number))
            problem = self._candidate(category, rng)
            if problem is not None:
                made.append(problem)
        return made

    # -- picking targets ------------------------------------------------------------------------

    def _draw_product(self, rng: HashDraws, avoid_kinds: AbstractSet[str] = frozenset()) -> Product | None:
        for _ in range(_DRAWS_PER_TARGET):
            product_id = self.catalog.product_id_at(rng.below(self.catalog.size))
            if not self._free(product_id):
                continue
            product = self.catalog.products([product_id]).get(product_id)
            if (product is not None and describable(product, self.config)
                    and item_kind(product) not in avoid_kinds):
                return product
        return None

    def _shop_picks(self, rng: HashDraws, count: int) -> list[Product] | None:
        """An anchor drawn uniformly, then up to ``count - 1`` more items of other kinds from its shop."""
        anchor = self._draw_product(rng)
        if anchor is None:
            return None
        members = [m for m in self.catalog.shop_members(anchor.shop_id)
                   if m != anchor.product_id and self._free(m)]
        if not members:
            return None
        looked_at = rng.sample(members, min(len(members), self.config.shop_sample))
        found = self.catalog.products(looked_at)
        picked = [anchor]
        kinds = {item_kind(anchor)}
        for product_id in looked_at:
            product = found.get(product_id)
            if product is None or item_kind(product) in kinds or not describable(product, self.config):
                continue
            picked.append(product)
            kinds.add(item_kind(product))
            if len(picked) == count:
                break
        return picked if len(picked) >= 2 else None

    def _anywhere(self, rng: HashDraws, count: int) -> list[Product] | None:
        """``count`` products of distinct kinds, each drawn uniformly from the whole catalog."""
        picked: list[Product] = []
        for _ in range(count):
            product = self._draw_product(rng, {item_kind(p) for p in picked})
            if product is None or product.product_id in {p.product_id for p in picked}:
                return None
            picked.append(product)
        return picked

    # -- candidates ------------------------------------------------------------------------------

    def _candidate(self, category: Category, rng: HashDraws) -> Problem | None:
        config = self.config
        if category == "product":
            product = self._draw_product(rng)
            return None if product is None else self._attempt(category, [product], None,
                                                              config.product_constraints, rng)
        if category == "shop":
            picks = self._shop_picks(rng, rng.randint(*config.shop_items))
            return None if picks is None else self._attempt(category, picks, picks[0].shop_id,
                                                            config.item_constraints, rng)
        count = rng.randint(*config.voucher_items)
        if count > 1 and rng.random() < config.voucher_one_shop_odds:
            shop_picks = self._shop_picks(rng, count)
            if shop_picks is None:
                return None
            return self._attempt(category, shop_picks, shop_picks[0].shop_id, config.item_constraints, rng)
        picks = self._anywhere(rng, count)
        return None if picks is None else self._attempt(category, picks, None, config.item_constraints, rng)

    def _attempt(self, category: Category, picks: list[Product], shop_id: str | None,
                 constraints: tuple[int, int], rng: HashDraws) -> Problem | None:
        voucher = None
        if category == "voucher":
            prices = [p.price for p in picks]
            voucher = make_voucher(prices, shop=shop_id is not None, rng=rng)
            if voucher is None or not voucher_decides(prices, [p.shop_id for p in picks], voucher):
                return None
        for detail in range(self.config.detail_levels):
            items = [describe(p, rng, detail=detail, constraints=constraints, config=self.config,
                              rarity=self.catalog.rarity) for p in picks]
            if len({item.phrase for item in items}) < len(items):
                continue  # two items worded alike could not be told apart
            query = self._query(category, items, voucher, rng)
            pairs = [(item.product, item.target) for item in items]
            if items_solvable(self.catalog.engine, query, pairs, shop_id if len(items) > 1 else None):
                self.used.update(p.product_id for p in picks)
                return Problem(category=category, query=query, targets=[i.target for i in items],
                               voucher=voucher)
        return None

    @staticmethod
    def _query(category: Category, items: Sequence[Item], voucher: Voucher | None, rng: HashDraws) -> str:
        phrases = [item.phrase for item in items]
        if category == "product":
            return product_query(phrases[0], rng)
        if category == "shop":
            return wording.shop_query(phrases, rng)
        assert voucher is not None
        return f"{wording.voucher_items(phrases, rng)}\n\n{wording.voucher_rules(voucher)}"
