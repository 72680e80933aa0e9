"""Is a request solvable with the real tools? The keyword search an agent would make, checked on pages 1..5.

Shared by every problem maker (the sample world's bank and the race-time generator) and by the checks
that re-verify their output: a request's words that occur in a target's indexed text, with the price and
service filters the request states, must list the target on one of pages 1..5 of ``find_product``
(shop-scoped for a shop's other items).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

from shoppingbench.catalog.models import Product, build_contents
from shoppingbench.problems.models import RewardTarget
from shoppingbench.search.base import MAX_PAGE, PAGE_SIZE, FindProductQuery, PriceRange, SearchHit

WORD: Final = re.compile(r"[a-z0-9]+(?:[.:-][a-z0-9]+)*")
"""A word as requests and product texts are compared: lower-case letters and digits, inner ``.:-`` kept."""


class ProductFinder(Protocol):
    """The part of :class:`~shoppingbench.search.base.SearchEngine` problem checks use."""

    def find_product(self, query: FindProductQuery) -> list[SearchHit]: ...


@runtime_checkable
class ListingFinder(Protocol):
    """An engine that can return everything pages 1..5 would list in one call (a faster check)."""

    def find_product(self, query: FindProductQuery) -> list[SearchHit]: ...

    def listing(self, query: FindProductQuery) -> list[str]: ...


def request_keywords(query: str, product: Product) -> str:
    """The request's words that also occur in the product's indexed text, in request order.

    This is how an agent turns a request into a search for one of its items: it keeps the words
    that describe the item and drops the chatter ("looking for", prices, voucher rules).
    """
    vocabulary = set(WORD.findall(build_contents(product).lower()))
    return " ".join(dict.fromkeys(w for w in WORD.findall(query.lower()) if w in vocabulary))


def target_filters(target: RewardTarget) -> tuple[PriceRange | None, tuple[str, ...]]:
    """The ``find_product`` price and service filters a request states for ``target``."""
    price = None
    for condition in target.price_conditions():
        price = PriceRange(low=condition.low, high=condition.high)
    return price, tuple(target.service)


def listed(engine: ProductFinder, query: FindProductQuery) -> list[str]:
    """Every product id pages 1..5 of ``find_product`` list for ``query``, in order.

    An engine with ``listing`` answers in one ranking instead of one per page; the pages are slices of
    that same list, so the answer is the same.
    """
    if not query.q.strip():
        return []
    if isinstance(engine, ListingFinder):
        return engine.listing(query)
    ids: list[str] = []
    for page in range(1, MAX_PAGE + 1):
        hits = engine.find_product(query.model_copy(update={"page": page}))
        ids += [hit.product_id for hit in hits]
        if len(hits) < PAGE_SIZE:
            break
    return ids


def reachable(engine: ProductFinder, product_id: str, q: str, *, price: PriceRange | None = None,
              services: tuple[str, ...] = (), shop_id: str | None = None) -> bool:
    """Whether ``find_product`` lists ``product_id`` on one of pages 1..5 for this query and filters."""
    query = FindProductQuery(q=q, price=price, service=services, shop_id=shop_id)
    return product_id in listed(engine, query)


def items_solvable(engine: ProductFinder, query: str, items: Sequence[tuple[Product, RewardTarget]],
                   shop_id: str | None = None) -> bool:
    """Every item reachable from the request, and at least one of them globally.

    With ``shop_id`` (a request for several items of one shop) an item that the global search misses
    may be found by a search scoped to that shop, as an agent does once it has found the shop.
    """
    found_globally = False
    for product, target in items:
        q = request_keywords(query, product)
        price, services = target_filters(target)
        if reachable(engine, product.product_id, q, price=price, services=services):
            found_globally = True
            continue
        if shop_id is None or not reachable(engine, product.product_id, q, price=price, services=services,
                                            shop_id=shop_id):
            return False
    return found_globally
