"""Problem bank for a catalog: product, shop and voucher requests whose rewards come from real listings.

Each requested item is a catalog product (the target) plus a few constraints read off that product:
sku pairs from one of its options, attribute values, services and a price range that contains its
price. The request states every constraint in shopper wording, so the target satisfies its reward by
construction. Solvability is checked, not hoped for: a keyword search made of the request's words that
occur in the target (what an agent would type), with the stated price and service filters, must
reach the target within pages 1..5 (shop-scoped for the shop's other items). Problems that fail are
re-described with more detail or replaced.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from shoppingbench.catalog.models import Product, build_contents
from shoppingbench.problems import wording
from shoppingbench.problems.models import CATEGORIES, Category, Problem, RewardTarget, Voucher
from shoppingbench.problems.solvability import (
    ProductFinder,
    items_solvable,
    reachable,
    request_keywords,
    target_filters,
)
from shoppingbench.problems.terms import make_voucher, price_condition, stated_target
from shoppingbench.world.vocabulary import LEAF_BY_PATH

DEFAULT_COUNTS: Final[Mapping[str, int]] = {"product": 200, "shop": 100, "voucher": 100}

_CANDIDATES_PER_PROBLEM: Final = 12
_DETAIL_LEVELS: Final = 3

__all__ = ["DEFAULT_COUNTS", "ProductFinder", "generate_problems", "reachable", "request_keywords",
           "target_filters"]


@dataclass(frozen=True, slots=True)
class _Item:
    """One requested item: its target with stated constraints and the words describing it."""

    product: Product
    target: RewardTarget
    phrase: str


def _describe(product: Product, rng: random.Random, detail: int, constraints: tuple[int, int]) -> _Item:
    """Word a request for ``product``; ``detail`` (0..2) adds identifying words on retries."""
    leaf = LEAF_BY_PATH.get(product.category)
    title = product.title.lower()
    contents = build_contents(product).lower()
    types = [t for t in (leaf.types if leaf else ()) if t in title]
    product_type = max(types, key=len) if types else " ".join(title.split()[:3])
    # A feature sharing a word with the type reads badly ("genuine leather leather belt").
    type_words = set(product_type.split())
    features = [f for f in (leaf.features if leaf else ()) if f in title and not type_words & set(f.split())]
    models = [m for m in (leaf.models if leaf else ()) if m in title]

    wanted = rng.randint(*constraints) + detail
    kinds: list[str] = []
    if product.sku_options:
        kinds.append("sku")
    kinds += [f"attr:{key}" for key in product.attributes]
    if product.service:
        kinds.append("service")
    kinds.append("price")
    chosen = set(rng.sample(kinds, min(wanted, len(kinds))))

    prefix: list[str] = []
    clauses: list[str] = []
    sku: dict[str, str] = {}
    if "sku" in chosen:
        option = product.sku_options[rng.choice(sorted(product.sku_options))]
        keys = sorted(option)
        for key in rng.sample(keys, len(keys) if rng.random() < 0.4 else 1):
            sku[key] = option[key]
        for key in keys:
            if key not in sku:
                continue
            if key == "color_family" and rng.random() < 0.5:
                prefix.append(sku[key])
            else:
                clauses.append(wording.sku_phrase(key, sku[key], rng))
    attributes: list[dict[str, list[str]]] = []
    for key in sorted(product.attributes):
        if f"attr:{key}" in chosen:
            value = rng.choice(product.attributes[key])
            attributes.append({key: [value]})
            clauses.append(wording.attribute_phrase(key, value, rng))
    stated_brand = any("brand" in a for a in attributes)
    brand_odds = 0.35 + 0.3 * detail
    if product.brand and not stated_brand and product.brand in contents and rng.random() < brand_odds:
        prefix.insert(0, product.brand)
    if models and rng.random() < 0.4 + 0.3 * detail:
        prefix.append(rng.choice(models).upper())
    for feature in rng.sample(features, min(len(features), rng.randint(0, 1) + detail)):
        if feature.startswith(("with ", "for ")):
            clauses.insert(0, feature)
        else:
            prefix.insert(0, feature)
    services: list[str] = []
    if "service" in chosen:
        services = rng.sample(product.service, 2 if len(product.service) > 1 and rng.random() < 0.2 else 1)
        services.sort(key=product.service.index)
        clauses += [wording.service_phrase(s, rng) for s in services]
    prices: list[dict[str, list[float | None]]] = []
    if "price" in chosen:
        condition = price_condition(product.price, rng)
        prices.append(condition)
        relation, (low, high) = next(iter(condition.items()))
        clauses.append(wording.price_phrase(relation, low, high, rng))

    phrase = wording.item_phrase(" ".join([*prefix, product_type]), clauses, rng, price_last=bool(prices))
    target = stated_target(product, sku=sku, attributes=attributes, services=services, prices=prices)
    return _Item(product=product, target=target, phrase=phrase)


class _Builder:
    """Draws problems of each category from one catalog, checking each against ``engine``."""

    def __init__(self, products: Sequence[Product], engine: ProductFinder, rng: random.Random) -> None:
        self.products = products
        self.engine = engine
        self.rng = rng
        by_shop: dict[str, list[int]] = defaultdict(list)
        for index, product in enumerate(products):
            by_shop[product.shop_id].append(index)
        # Shops that sell items from at least two leaf categories can anchor multi-item requests.
        self.multi_shops = sorted(
            shop for shop, indices in by_shop.items()
            if len({products[i].category for i in indices}) >= 2
        )
        self.by_shop = by_shop
        self.used: set[tuple[str, ...]] = set()

    def _distinct_items(self, pool: Sequence[int], count: int) -> list[Product]:
        """Up to ``count`` products from ``pool``, one per leaf category, so answers pair up unambiguously."""
        picked: list[Product] = []
        categories: set[str] = set()
        for index in self.rng.sample(list(pool), len(pool)):
            product = self.products[index]
            if product.category not in categories:
                categories.add(product.category)
                picked.append(product)
                if len(picked) == count:
                    break
        return picked

    def _anywhere(self, count: int) -> list[Product]:
        """``count`` random products from distinct leaf categories, any shops."""
        picked: dict[str, Product] = {}
        for _ in range(50 * count):  # bounded: a tiny catalog may have fewer categories than asked
            product = self.products[self.rng.randrange(len(self.products))]
            picked.setdefault(product.category, product)
            if len(picked) == count:
                break
        return list(picked.values())

    def _attempt(self, category: Category, picks: list[Product], shop_id: str | None,
                 constraints: tuple[int, int]) -> Problem | None:
        key = (category, *sorted(p.product_id for p in picks))
        if key in self.used:
            return None
        for detail in range(_DETAIL_LEVELS):
            items = [_describe(p, self.rng, detail, constraints) for p in picks]
            voucher = self._voucher(picks, shop_id) if category == "voucher" else None
            if category == "voucher" and voucher is None:
                return None
            query = self._query(category, items, voucher)
            pairs = [(item.product, item.target) for item in items]
            if items_solvable(self.engine, query, pairs, shop_id if len(items) > 1 else None):
                self.used.add(key)
                return Problem(category=category, query=query, targets=[i.target for i in items],
                               voucher=voucher)
        return None

    def _query(self, category: Category, items: Sequence[_Item], voucher: Voucher | None) -> str:
        phrases = [item.phrase for item in items]
        if category == "product":
            return wording.product_query(phrases[0], self.rng)
        if category == "shop":
            return wording.shop_query(phrases, self.rng)
        assert voucher is not None
        return f"{wording.voucher_items(phrases, self.rng)}\n\n{wording.voucher_rules(voucher)}"

    def _voucher(self, picks: Sequence[Product], shop_id: str | None) -> Voucher | None:
        """A voucher the targets can use, with a budget that only fits after the discount (or ``None``)."""
        return make_voucher([p.price for p in picks], shop=shop_id is not None, rng=self.rng)

    def product(self) -> Problem | None:
        for _ in range(_CANDIDATES_PER_PROBLEM):
            product = self.products[self.rng.randrange(len(self.products))]
            problem = self._attempt("product", [product], None, (1, 3))
            if problem is not None:
                return problem
        return None

    def _shop_picks(self, low: int, high: int) -> tuple[list[Product], str] | None:
        if not self.multi_shops:
            return None
        shop_id = self.rng.choice(self.multi_shops)
        picks = self._distinct_items(self.by_shop[shop_id], self.rng.randint(low, high))
        return (picks, shop_id) if len(picks) >= low else None

    def shop(self) -> Problem | None:
        for _ in range(_CANDIDATES_PER_PROBLEM):
            drawn = self._shop_picks(2, 4)
            if drawn is not None and (problem := self._attempt("shop", drawn[0], drawn[1], (0, 2))):
                return problem
        return None

    def voucher(self) -> Problem | None:
        for _ in range(_CANDIDATES_PER_PROBLEM):
            count = self.rng.randint(1, 3)
            if count > 1 and self.rng.random() < 0.4:
                drawn = self._shop_picks(count, count)
                if drawn is None:
                    continue
                picks, shop_id = drawn
            else:
                picks = self._anywhere(count)
                shop_id = None
            if (problem := self._attempt("voucher", picks, shop_id, (0, 2))) is not None:
                return problem
        return None


def generate_problems(products: Sequence[Product], *, engine: ProductFinder,
                      counts: Mapping[str, int] = DEFAULT_COUNTS, seed: int = 0) -> list[Problem]:
    """A deterministic problem bank over ``products``, every problem checked for solvability.

    ``engine`` must index exactly ``products``: each problem is kept only if its targets are
    reachable through that engine's ``find_product``, the tool agents will use. Categories are produced
    in the order product, shop, voucher. A category may come out short only when the catalog cannot
    support more solvable problems of it (e.g. no shop sells two kinds of item).
    """
    unknown = set(counts) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown problem categories {sorted(unknown)}; allowed: {', '.join(CATEGORIES)}")
    if not products:
        return []
    builder = _Builder(products, engine, random.Random(seed))
    makers = {"product": builder.product, "shop": builder.shop, "voucher": builder.voucher}
    problems: list[Problem] = []
    for category in CATEGORIES:
        wanted = counts.get(category, 0)
        made = 0
        # Each maker already retries many candidates; a streak of failures means the catalog is exhausted.
        failures = 0
        while made < wanted and failures < 5:
            problem = makers[category]()
            if problem is None:
                failures += 1
                continue
            problems.append(problem)
            made += 1
    return problems
