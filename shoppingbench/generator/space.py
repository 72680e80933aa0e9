"""How many distinct problems "sbgen-2" can reach per category: a documented, conservative count.

Counted per product as the distinct reward targets the sampler can state (targets x stated-constraint
sets), times the writer's phrasings counted as 1 (a lower bound: the writer protocol does not count its
phrasings, and every writer has at least one):

- one item's constraint sets = (1 + statable sku options) x product over statable attributes of
  (1 + distinct statable values) x 2 ** services x price forms (none, or "less than" when the price is
  at least 1; "greater than", "between" and the bounds are not counted);
- product problems = N x (lower quartile over a sample of products of constraint sets);
- shop problems = unordered same-shop pairs x (lower quartile of constraint sets) squared (pairs only:
  triples, quadruples and the order of items are not counted);
- voucher problems = single-item platform vouchers only: N x (lower quartile of constraint sets
  without a price) x 2 discount kinds (baskets, thresholds, caps and budgets are not counted).

The sample is ``config.sample_size`` products at evenly spaced ranks, so the count is deterministic.
"""

from __future__ import annotations

import statistics

from shoppingbench.catalog.models import SERVICES, Product
from shoppingbench.generator.config import GeneratorConfig
from shoppingbench.generator.sampler import statable
from shoppingbench.problems.models import Category
from shoppingbench.search.catalog_view import CatalogView


def constraint_sets(product: Product, config: GeneratorConfig, *, with_price: bool) -> int:
    """Distinct stated-constraint sets the sampler can draw for ``product`` (see the module docstring)."""
    options = sum(1 for option in product.sku_options.values()
                  if any(k.strip() and statable(v, config) for k, v in option.items()))
    count: int = 1 + options
    for key, values in product.attributes.items():
        if key.strip():
            count *= 1 + len({v for v in values if statable(v, config)})
    count *= 2 ** len({s for s in product.service if s in SERVICES})
    if with_price and product.price >= 1:
        count *= 2
    return count


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


def problem_space(catalog: CatalogView, config: GeneratorConfig) -> dict[Category, int]:
    """The conservative count of distinct problems per category (see the module docstring)."""
    sample = sample_products(catalog, config.sample_size)
    priced = _lower_quartile([constraint_sets(p, config, with_price=True) for p in sample])
    unpriced = _lower_quartile([constraint_sets(p, config, with_price=False) for p in sample])
    same_shop_pairs = sum(n * (n - 1) // 2 for n in catalog.shop_sizes())
    return {
        "product": catalog.size * priced,
        "shop": same_shop_pairs * priced * priced,
        "voucher": catalog.size * unpriced * 2,
    }
