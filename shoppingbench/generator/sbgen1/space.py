"""How many distinct problems the generator can reach per category: a documented, conservative count.

Counted per product, at the first description level only, ignoring clause order, price bounds,
brand and detail words and every clause template except the opener:

- one item's descriptions = name spans x stated-constraint sets, where a set picks ``lo..hi`` of
  the product's constraint kinds and each kind contributes its distinct values (one sku pair, one
  attribute value, one service, and the price as "less than" or "between"; bounds not counted);
- product problems = N x (lower quartile over a sample of products of item descriptions x openers);
- shop problems = same-shop product pairs x the sampled share of pairs of two kinds x (lower quartile of
  item descriptions) squared (pairs only: triples, quadruples and wording are not counted);
- voucher problems = single-item vouchers only: N x (lower quartile of item descriptions) x 2
  discount kinds (baskets of 2-3 items, budgets and wording are not counted).

The sample is ``config.sample_size`` products at evenly spaced ranks, so the count is deterministic.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from shoppingbench.catalog.models import Product
from shoppingbench.generator.sbgen1.config import GeneratorConfig
from shoppingbench.generator.sbgen1.describe import (
    attribute_values,
    constraint_kinds,
    describable,
    item_kind,
    name_spans,
    services,
    sku_pairs,
)
from shoppingbench.generator.sbgen1.wording import PRODUCT_OPENERS
from shoppingbench.problems.models import Category
from shoppingbench.search.catalog_view import CatalogView

_PRICE_FORMS = 2
"""A price is always statable as "less than" and "between" ("greater than" needs a bound of 1+)."""


def _kind_values(product: Product, kind: str, config: GeneratorConfig) -> int:
    if kind == "sku":
        return len({pair for pairs in sku_pairs(product, config).values() for pair in pairs})
    if kind.startswith("attr:"):
        return len(attribute_values(product, config)[kind.removeprefix("attr:")])
    if kind == "service":
        return len(services(product))
    return _PRICE_FORMS


def constraint_sets(values: Sequence[int], low: int, high: int) -> int:
    """Sets of ``low..high`` kinds, each kind with ``values[k]`` choices: elementary symmetric sums."""
    sums = [1] + [0] * len(values)
    for count in values:
        for size in range(len(values), 0, -1):
            sums[size] += sums[size - 1] * count
    return sum(sums[low:min(high, len(values)) + 1])


def item_descriptions(product: Product, constraints: tuple[int, int], config: GeneratorConfig) -> int:
    """Distinct first-level descriptions of one product (name span x constraint set)."""
    if not describable(product, config):
        return 0
    values = [_kind_values(product, kind, config) for kind in constraint_kinds(product, config)]
    spans = name_spans(product.title, product.category, config.type_words)
    return len(spans) * constraint_sets(values, *constraints)


def _lower_quartile(counts: list[int]) -> int:
    if len(counts) < 4:
        return min(counts, default=0)
    return int(statistics.quantiles(counts, n=4, method="inclusive")[0])


def sample_products(catalog: CatalogView, size: int) -> list[Product]:
    """``size`` products at evenly spaced ranks (all of them in a smaller catalog)."""
    count = min(size, catalog.size)
    ids = [catalog.product_id_at(i * catalog.size // count) for i in range(count)]
    found = catalog.products(ids)
    return [found[i] for i in ids if i in found]


def _distinct_kind_share(catalog: CatalogView, sample: Sequence[Product], config: GeneratorConfig) -> float:
    """Among pairs of products of the sampled products' shops, the share of pairs of two kinds."""
    pairs = distinct = 0
    for product in sample[:32]:
        members = catalog.shop_members(product.shop_id)[:config.shop_sample]
        kinds = Counter(item_kind(p) for p in catalog.products(members).values())
        total = sum(kinds.values())
        pairs += total * (total - 1) // 2
        distinct += (total * total - sum(c * c for c in kinds.values())) // 2
    return distinct / pairs if pairs else 0.0


def problem_space(catalog: CatalogView, config: GeneratorConfig) -> dict[Category, int]:
    """The conservative count of distinct problems per category (see the module docstring)."""
    sample = sample_products(catalog, config.sample_size)
    product_counts = [item_descriptions(p, config.product_constraints, config) for p in sample]
    item_counts = [item_descriptions(p, config.item_constraints, config) for p in sample]
    same_shop_pairs = sum(n * (n - 1) // 2 for n in catalog.shop_sizes())
    item = _lower_quartile(item_counts)
    return {
        "product": catalog.size * _lower_quartile(product_counts) * len(PRODUCT_OPENERS),
        "shop": int(same_shop_pairs * _distinct_kind_share(catalog, sample, config)) * item * item,
        "voucher": catalog.size * item * 2,
    }
