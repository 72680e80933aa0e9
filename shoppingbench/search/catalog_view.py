"""The catalog as the generator reads it: products by rank in a content-only order, shops, word rarity.

Ranks follow product id byte order, so "product k of N" is the same product on every machine that
serves the same catalog, and costs one lookup in the memory-mapped index plus one keyed store read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from shoppingbench.catalog.models import Product
from shoppingbench.search.analysis import analyze
from shoppingbench.search.engine import BM25SearchEngine


class CatalogView:
    """Read access to one catalog for problem making (not thread-safe: one per generator)."""

    def __init__(self, engine: BM25SearchEngine) -> None:
        self.engine = engine
        self.size = len(engine)
        self._rarity: dict[str, float] = {}
        self._shop_counts: dict[str, int] | None = None
        self._shops_from: dict[int, list[str]] = {}

    def product_id_at(self, rank: int) -> str:
        return self.engine.product_id_at(rank)

    def products(self, product_ids: Iterable[str]) -> dict[str, Product]:
        return self.engine.get_products(list(product_ids))

    def shop_members(self, shop_id: str) -> list[str]:
        """The shop's product ids in byte order."""
        return self.engine.shop_product_ids(shop_id)

    def shop_sizes(self) -> list[int]:
        return self.engine.shop_sizes()

    def shops_with_at_least(self, count: int) -> list[str]:
        """The ids of the shops with ``count`` or more products, in byte order (computed once per count)."""
        shops = self._shops_from.get(count)
        if shops is None:
            if self._shop_counts is None:
                self._shop_counts = self.engine.shop_counts()
            shops = sorted((s for s, n in self._shop_counts.items() if n >= count), key=str.encode)
            self._shops_from[count] = shops
        return shops

    def rarity(self, word: str) -> float:
        """Inverse document frequency of the word's rarest analysed term (0 for stop words)."""
        cached = self._rarity.get(word)
        if cached is None:
            frequencies = [self.engine.document_frequency(term) for term in analyze(word)]
            cached = max((math.log(1 + self.size / df) for df in frequencies if df), default=0.0)
            self._rarity[word] = cached
        return cached
