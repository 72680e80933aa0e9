"""The default generator's sampler: which targets a problem asks for and what it states, as ShoppingBench's.

ShoppingBench's ``src/agent/run_synthesize.py`` (read, not copied) decides a problem before an LLM
words it; this module makes the same decisions from a :class:`HashDraws` stream, so every validator
draws the same problem from the same seed, catalog and configuration:

- every target keeps its title; each sku option in turn is kept with probability 1/2 and the first
  kept one is stated whole; each attribute is kept with probability 1/2 with one of its values; each
  service is kept with probability 1/2; the price modes "less than", "greater than", "between" are
  tried in that order, each kept with probability 1/2, with bounds ``int(price + randint(0, int(price)))``
  and ``int(price - randint(0, int(price)))``, a mode whose bounds do not strictly contain the price
  (or whose lower bound is negative) passed over, and the first valid one stated;
- products are drawn uniformly; a shop problem asks for N = 2..4 products of one shop with at least N;
- a voucher is a platform voucher (N = 1..4 products from anywhere) or a shop voucher (N = 2..4 of one
  shop), each with probability 1/2; its items state no price; a basket under 100 is redrawn; threshold,
  discount, cap and budget are drawn as in the reference.

Deviations (named in :class:`GeneratorConfig`): values nobody can state are passed over without a
draw; the suite redraws requests whose items read alike. Sku options and attributes are tried in key
order, not in the order a catalog file happened to list them: the catalog fingerprint ignores key
order, so the same fingerprint must draw the same problems. A ``None`` result means the reference would
redraw: the caller moves on to its next candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from shoppingbench.catalog.models import SERVICES, Product
from shoppingbench.generator.config import GeneratorConfig
from shoppingbench.generator.writer.request import ItemRequest
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category, Voucher
from shoppingbench.problems.terms import PriceConditionJSON, stated_target
from shoppingbench.search.catalog_view import CatalogView

PRICE_MODES: Final = ("less than", "greater than", "between")
"""The price modes in the order the reference tries them."""
JUNK_VALUES: Final = frozenset({
    "-", "n/a", "na", "none", "no", "null", "not specified", "other", "others", "unknown", "default", "nil",
    "no brand", "oem", "generic", "unbranded", "0",
})
"""Values that say nothing about the product (deviation: never stated)."""
_DRAWS_PER_TARGET: Final = 8
"""Ranks tried for one target before the candidate gives up (used/excluded products are skipped)."""
_SHOPS_TRIED: Final = 100
"""Shops tried for one with enough products, as the reference's ``sample_products_in_shop``."""

IsFree = Callable[[str], bool]
"""Whether a product may still be a target (not used earlier in the suite, not excluded)."""


@dataclass(frozen=True, slots=True)
class SampledProblem:
    """What a problem asks before it is worded: its items, the shop they share and the voucher."""

    category: Category
    items: tuple[ItemRequest, ...]
    shop_id: str | None
    voucher: Voucher | None


def kept(rng: HashDraws, multiplier: int) -> bool:
    """The reference's keep draw: ``randint(0, multiplier) == 1`` (probability 1/2 at multiplier 1)."""
    return rng.randint(0, multiplier) == 1


def statable(value: str, config: GeneratorConfig) -> bool:
    """A value a shopper could state: short, one line, has a letter or digit, says something."""
    text = value.strip()
    return (bool(text) and len(text) <= config.max_value_chars and "\n" not in text
            and any(c.isalnum() for c in text) and text.lower() not in JUNK_VALUES)


def sample_sku_option(product: Product, rng: HashDraws, config: GeneratorConfig) -> dict[str, str]:
    """The first kept sku option in option-key order, whole (its statable pairs), or none."""
    for _, option in sorted(product.sku_options.items()):
        pairs = {k: v for k, v in option.items() if k.strip() and statable(v, config)}
        if pairs and kept(rng, config.multiplier):
            return pairs
    return {}


def sample_attributes(product: Product, rng: HashDraws,
                      config: GeneratorConfig) -> list[dict[str, list[str]]]:
    """Each attribute with a key and a statable value, kept in turn (in key order) with one value drawn."""
    out: list[dict[str, list[str]]] = []
    for key, values in sorted(product.attributes.items()):
        usable = [v for v in values if statable(v, config)]
        if key.strip() and usable and kept(rng, config.multiplier):
            out.append({key: [rng.choice(usable)]})
    return out


def sample_services(product: Product, rng: HashDraws, config: GeneratorConfig) -> list[str]:
    """Each of the product's services, kept in turn."""
    return [s for s in product.service if s in SERVICES and kept(rng, config.multiplier)]


def sample_price(price: float, rng: HashDraws, multiplier: int) -> PriceConditionJSON | None:
    """The first kept price mode whose bounds strictly contain ``price``, or none."""
    for mode in PRICE_MODES:
        if not kept(rng, multiplier):
            continue
        lower: int | None = None
        upper: int | None = None
        if mode in ("greater than", "between"):
            lower = int(price - rng.randint(0, int(price)))
        if mode in ("less than", "between"):
            upper = int(price + rng.randint(0, int(price)))
        if (lower is not None and (lower < 0 or price <= lower)) or (upper is not None and price >= upper):
            continue
        return {mode: [None if lower is None else float(lower), None if upper is None else float(upper)]}
    return None


def sample_item(product: Product, rng: HashDraws, config: GeneratorConfig, *,
                with_price: bool) -> ItemRequest:
    """The reward target of one item: its title and the kept sku option, attributes, services, price."""
    sku = sample_sku_option(product, rng, config)
    attributes = sample_attributes(product, rng, config)
    services = sample_services(product, rng, config)
    price = sample_price(product.price, rng, config.multiplier) if with_price and product.price > 0 else None
    target = stated_target(product, sku=sku, attributes=attributes, services=services,
                           prices=[] if price is None else [price])
    return ItemRequest(product=product, target=target)


def draw_product(catalog: CatalogView, rng: HashDraws, is_free: IsFree) -> Product | None:
    """A product drawn uniformly by rank among the free ones (a few ranks tried)."""
    for _ in range(_DRAWS_PER_TARGET):
        product_id = catalog.product_id_at(rng.below(catalog.size))
        if is_free(product_id):
            product = catalog.products([product_id]).get(product_id)
            if product is not None:
                return product
    return None


def draw_anywhere(catalog: CatalogView, rng: HashDraws, count: int, is_free: IsFree) -> list[Product] | None:
    """``count`` distinct free products, each drawn uniformly from the whole catalog."""
    picked: list[Product] = []
    taken: set[str] = set()

    def still_free(product_id: str) -> bool:
        return is_free(product_id) and product_id not in taken

    for _ in range(count):
        product = draw_product(catalog, rng, still_free)
        if product is None:
            return None
        picked.append(product)
        taken.add(product.product_id)
    return picked


def draw_shop(catalog: CatalogView, rng: HashDraws, count: int, is_free: IsFree) -> list[Product] | None:
    """``count`` free products of one shop, the shop drawn uniformly among those with ``count`` or more
    (a few shops tried, as the reference does, when the drawn one has too few free products)."""
    shops = catalog.shops_with_at_least(count)
    for _ in range(_SHOPS_TRIED if shops else 0):
        members = [m for m in catalog.shop_members(rng.choice(shops)) if is_free(m)]
        if len(members) >= count:
            chosen = rng.sample(members, count)
            found = catalog.products(chosen)
            return [found[m] for m in chosen] if len(found) == count else None
    return None


def sample_voucher(prices: Sequence[float], *, shop: bool, rng: HashDraws,
                   config: GeneratorConfig) -> Voucher | None:
    """The reference's voucher for a basket of ``prices``, or none where the reference redraws."""
    total = sum(prices)
    if total < config.voucher_min_total:
        return None
    threshold = rng.randint(int(total * config.threshold_share[0]), int(total * config.threshold_share[1]))
    fields: dict[str, object] = {"voucher_type": "shop" if shop else "platform", "threshold": threshold}
    if rng.random() < config.fixed_discount_odds:
        face_value = rng.randint(int(threshold * config.face_share[0]), int(threshold * config.face_share[1]))
        after = total - face_value
        fields |= {"discount_type": "fixed", "face_value": face_value, "discount": None, "cap": None}
    else:
        percent = rng.randint(*config.discount_percent)
        cap = rng.randint(int(threshold * percent / 100.0), threshold)
        if cap <= threshold * percent / 100.0:
            return None
        after = max(total * (1 - percent / 100.0), total - cap)
        fields |= {"discount_type": "percentage", "face_value": None, "discount": percent / 100.0, "cap": cap}
    budget = math.ceil(after) + rng.randint(0, math.ceil(after * config.budget_slack))
    return Voucher.model_validate({**fields, "price_after_voucher": after, "budget": budget})


def sample_problem(category: Category, catalog: CatalogView, rng: HashDraws, config: GeneratorConfig,
                   is_free: IsFree) -> SampledProblem | None:
    """One candidate problem of ``category``, or none where the reference would redraw."""
    if catalog.size == 0:
        return None
    if category == "product":
        product = draw_product(catalog, rng, is_free)
        if product is None:
            return None
        return SampledProblem(category, (sample_item(product, rng, config, with_price=True),), None, None)
    if category == "shop":
        picks = draw_shop(catalog, rng, rng.randint(*config.shop_items), is_free)
        if picks is None:
            return None
        items = tuple(sample_item(p, rng, config, with_price=True) for p in picks)
        return SampledProblem(category, items, picks[0].shop_id, None)
    shop = rng.random() < config.shop_voucher_odds
    if shop:
        picks = draw_shop(catalog, rng, rng.randint(*config.shop_voucher_items), is_free)
    else:
        picks = draw_anywhere(catalog, rng, rng.randint(*config.platform_voucher_items), is_free)
    if picks is None:
        return None
    voucher = sample_voucher([p.price for p in picks], shop=shop, rng=rng, config=config)
    if voucher is None:
        return None
    items = tuple(sample_item(p, rng, config, with_price=False) for p in picks)
    return SampledProblem(category, items, picks[0].shop_id if shop else None, voucher)
