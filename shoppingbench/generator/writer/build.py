"""Build a catalog's lexicon offline: mine kinds, keys and values from its products (streamed), phrase them
deterministically, and let an optional model's phrasings (validated in :mod:`.propose`) replace them.

The deterministic part is a pure function of the products in the order given: kind phrases counted
once per distinct title (near-duplicate relistings count once), keys by how many products carry them,
each key's most frequent values with their cleaned everyday form when it differs from the raw value.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from shoppingbench.catalog.models import Product
from shoppingbench.generator.writer.lexicon import KeyPhrasing, Lexicon, Phrasing
from shoppingbench.generator.writer.rules import clean_value, key_phrasing, kind_candidates

MAX_KINDS: Final = 50_000
MIN_KIND_TITLES: Final = 2
MAX_KEYS: Final = 5_000
VALUES_PER_KEY: Final = 200
_PRUNE_AT: Final = 2_000_000
"""Distinct phrases held while counting before the rarest are dropped (bounds memory on huge catalogs)."""


@dataclass
class CatalogCounts:
    """What a scan of the catalog found: kinds per distinct title, keys and values per product."""

    products: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    keys: Counter[str] = field(default_factory=Counter)
    values: dict[str, Counter[str]] = field(default_factory=dict)
    _titles: set[bytes] = field(default_factory=set)

    def add(self, product: Product, noise: frozenset[str]) -> None:
        self.products += 1
        title = " ".join(product.title.lower().split())
        digest = hashlib.blake2b(title.encode(), digest_size=8).digest()
        if digest not in self._titles:
            self._titles.add(digest)
            self.kinds.update({phrase for phrase, _ in kind_candidates(product.title, noise)})
            if len(self.kinds) > _PRUNE_AT:
                self.kinds = Counter(dict(self.kinds.most_common(_PRUNE_AT // 2)))
        pairs = [(k, v) for option in product.sku_options.values() for k, v in option.items()]
        pairs += [(k, v) for k, vs in product.attributes.items() for v in vs]
        for key in {k for k, _ in pairs}:
            self.keys[key] += 1
        for key, value in set(pairs):
            self.values.setdefault(key, Counter())[value] += 1

    def top_keys(self) -> list[str]:
        return [key for key, _ in sorted(self.keys.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_KEYS]]

    def top_values(self, key: str) -> list[str]:
        counted = self.values.get(key, Counter())
        return [v for v, _ in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[:VALUES_PER_KEY]]


def scan(products: Iterable[Product], phrasing: Phrasing) -> CatalogCounts:
    counts = CatalogCounts()
    noise = frozenset(phrasing.noise_words)
    for product in products:
        counts.add(product, noise)
    return counts


def fallback_lexicon(counts: CatalogCounts, phrasing: Phrasing) -> Lexicon:
    """The deterministic lexicon: kinds mined, keys humanised by role, values cleaned."""
    kinds = {phrase: n for phrase, n in sorted(counts.kinds.items(), key=lambda kv: (-kv[1], kv[0]))
             if n >= MIN_KIND_TITLES}
    kinds = dict(list(kinds.items())[:MAX_KINDS])
    keys: dict[str, KeyPhrasing] = {}
    values: dict[str, dict[str, str]] = {}
    for key in counts.top_keys():
        keys[key] = key_phrasing(key, phrasing)
        cleaned = {raw: clean_value(raw, keys[key].role, phrasing) for raw in counts.top_values(key)}
        changed = {raw: text for raw, text in cleaned.items() if text and text != raw}
        if changed:
            values[key] = changed
    return Lexicon(catalog_products=counts.products, kinds=kinds, keys=keys, values=values, phrasing=phrasing)


def extended(base: Lexicon, earlier: Lexicon | None) -> Lexicon:
    """``base`` with an earlier lexicon's key and value phrasings kept where they name the same keys."""
    if earlier is None:
        return base
    keys = {**base.keys, **{k: v for k, v in earlier.keys.items() if k in base.keys}}
    values = {key: {**base.values.get(key, {}), **earlier.values.get(key, {})}
              for key in sorted(set(base.values) | {k for k in earlier.values if k in base.keys})}
    return base.model_copy(update={"keys": keys, "values": values})


