"""Describe one target product from its real fields: a title span that names it, plus stated constraints.

No vocabulary is assumed. The item's name is a span of consecutive title words (preferring rare,
distinctive words); constraints are read off the product: one sku option's key/value pairs, attribute
values, services, and a price range around its price. Every constrained value appears verbatim in the
description, so the target satisfies its reward by construction. A higher ``detail`` adds
distinguishing title words and one more constraint, for targets a plain description cannot reach.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from shoppingbench.catalog.models import SERVICES, Product, build_contents
from shoppingbench.generator.sbgen1.config import GeneratorConfig
from shoppingbench.generator.sbgen1.wording import attribute_clause, detail_clause, sku_clause
from shoppingbench.problems import wording
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import RewardTarget
from shoppingbench.problems.solvability import WORD
from shoppingbench.problems.terms import price_condition, stated_target
from shoppingbench.search.analysis import analyze

Rarity = Callable[[str], float]
"""How distinctive a word is in the catalog (higher is rarer), e.g. its inverse document frequency."""

CONNECTORS: Final = frozenset({
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "with",
    "w", "x", "is", "are", "be", "it", "its", "that", "this", "these", "your", "you", "our", "my", "new",
})
"""Words a name span never starts or ends with (and that never count as a distinguishing detail)."""
JUNK_VALUES: Final = frozenset({
    "-", "n/a", "na", "none", "no", "null", "not specified", "other", "others", "unknown", "default", "nil",
    "no brand", "oem", "generic", "unbranded", "0",
})
"""Values that say nothing about the product: never stated as constraints or brands."""
_SEGMENT_BREAK: Final = re.compile(r"[|/,;()\[\]{}<>+*!?:\"'~=]|\s-\s|【|】|（|）")
_MAX_WORD: Final = 24


@dataclass(frozen=True, slots=True)
class Item:
    """One requested item: its target with the stated constraints, and the words describing it."""

    product: Product
    target: RewardTarget
    phrase: str


def title_segments(title: str) -> list[list[str]]:
    """The title's words in runs that punctuation does not break ("a | b (c)" -> [a], [b], [c])."""
    segments = []
    for part in _SEGMENT_BREAK.split(title.lower()):
        words = [w for w in WORD.findall(part) if len(w) <= _MAX_WORD]
        if words:
            segments.append(words)
    return segments


def _spans(segments: Sequence[Sequence[str]], lengths: tuple[int, int],
           is_head: Callable[[str], bool]) -> list[tuple[str, ...]]:
    """Spans of up to ``lengths[1]`` consecutive words ending at a head word, never starting with a
    connector; those of at least ``lengths[0]`` words when there are any."""
    spans: dict[tuple[str, ...], None] = {}
    for words in segments:
        heads = [word not in CONNECTORS and is_head(word) for word in words]
        for end in range(len(words)):
            if not heads[end] or (end + 1 < len(words) and heads[end + 1]):
                continue  # a head followed by another ("school bag") ends at the second
            for size in range(1, lengths[1] + 1):
                if end - size + 1 < 0:
                    break
                span = tuple(words[end - size + 1:end + 1])
                if span[0] not in CONNECTORS and not all(w.isdigit() for w in span):
                    spans.setdefault(span)
    long_enough = [span for span in spans if len(span) >= lengths[0]]
    return long_enough or list(spans)


def name_spans(title: str, category: str, lengths: tuple[int, int]) -> list[tuple[str, ...]]:
    """Every span of consecutive title words that could name the item ("insulated water bottle").

    The span ends at a title word that the product's category also uses (its last level, else the one
    above: "Water Bottles" heads "... water bottle"); a product whose category shares no word with its
    title falls back to spans ending at a word of letters only, then at any word with a letter.
    Punctuation in the title breaks spans.
    """
    segments = title_segments(title)
    levels = [level for level in category.lower().split(">") if level.strip()]
    for level in (levels[-1:], levels[-2:]):
        terms = frozenset(term for text in level for term in analyze(text))

        def in_category(word: str, terms: frozenset[str] = terms) -> bool:
            return not terms.isdisjoint(analyze(word))

        spans = _spans(segments, lengths, in_category)
        if spans:
            return spans
    # No category word in the title: end at a plain word ("brick set"), a code ("q892") only if need be.
    return (_spans(segments, lengths, lambda word: word.isalpha())
            or _spans(segments, lengths, lambda word: any(c.isalpha() for c in word)))


def usable_value(value: str, config: GeneratorConfig) -> bool:
    """A value worth stating: short, one line, has letters or digits, says something."""
    text = value.strip()
    return (bool(text) and text == value and len(text) <= config.max_value_chars and "\n" not in text
            and any(c.isalnum() for c in text) and text.lower() not in JUNK_VALUES)


def sku_pairs(product: Product, config: GeneratorConfig) -> dict[str, list[tuple[str, str]]]:
    """Each sku option's usable (key, value) pairs, by option key (options with none are left out)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name in sorted(product.sku_options):
        pairs = [(k, v) for k, v in sorted(product.sku_options[name].items())
                 if k.strip() and usable_value(v, config)]
        if pairs:
            out[name] = pairs
    return out


def attribute_values(product: Product, config: GeneratorConfig) -> dict[str, list[str]]:
    """Each attribute's usable values, by key (attributes with none are left out)."""
    out: dict[str, list[str]] = {}
    for key in sorted(product.attributes):
        values = [v for v in dict.fromkeys(product.attributes[key]) if usable_value(v, config)]
        if key.strip() and values:
            out[key] = values
    return out


def services(product: Product) -> list[str]:
    """The product's services the search tool can filter on, in the product's order."""
    return [s for s in dict.fromkeys(product.service) if s in SERVICES]


def constraint_kinds(product: Product, config: GeneratorConfig) -> list[str]:
    """What can be stated about ``product``: ``sku``, ``attr:<key>`` per attribute, ``service``, ``price``."""
    kinds: list[str] = []
    if sku_pairs(product, config):
        kinds.append("sku")
    kinds += [f"attr:{key}" for key in attribute_values(product, config)]
    if services(product):
        kinds.append("service")
    if product.price > 0:
        kinds.append("price")
    return kinds


def describable(product: Product, config: GeneratorConfig) -> bool:
    """Whether ``product`` can be a target: its title has at least one word that can name it."""
    return bool(name_spans(product.title, product.category, config.type_words))


def item_kind(product: Product) -> str:
    """What sort of item this is, for keeping the items of one request distinct: its category, else
    the last word of its title."""
    if product.category.strip():
        return product.category.strip().lower()
    words = WORD.findall(product.title.lower())
    return words[-1] if words else product.product_id


def _brand(product: Product, vocabulary: set[str]) -> str | None:
    brand = product.brand.strip().lower()
    words = WORD.findall(brand)
    if not words or brand in JUNK_VALUES or len(brand) > 30 or not all(w in vocabulary for w in words):
        return None
    return " ".join(words)


def _pick_span(spans: Sequence[tuple[str, ...]], rarity: Rarity, rng: HashDraws) -> tuple[str, ...]:
    """A name span from the more distinctive half (by summed rarity; ties by title position)."""
    ranked = sorted(range(len(spans)), key=lambda i: (-sum(rarity(w) for w in set(spans[i])), i))
    top = ranked[:max(3, (len(ranked) + 1) // 2)]
    return spans[rng.choice(top)]


def describe(product: Product, rng: HashDraws, *, detail: int, constraints: tuple[int, int],
             config: GeneratorConfig, rarity: Rarity) -> Item:
    """Word a request for ``product``; ``detail`` (0..) adds distinguishing words and a constraint."""
    vocabulary = set(WORD.findall(build_contents(product).lower()))
    span = _pick_span(name_spans(product.title, product.category, config.type_words), rarity, rng)

    kinds = constraint_kinds(product, config)
    wanted = rng.randint(*constraints) + detail
    chosen = set(rng.sample(kinds, min(wanted, len(kinds))))

    prefix: list[str] = []
    clauses: list[str] = []
    stated: set[str] = set(span)
    sku: dict[str, str] = {}
    if "sku" in chosen:
        options = sku_pairs(product, config)
        pairs = options[rng.choice(sorted(options))]
        picked = pairs if len(pairs) > 1 and rng.random() < 0.4 else [rng.choice(pairs)]
        for key, value in picked:
            sku[key] = value
            stated.update(WORD.findall(value.lower()))
            if "colo" in key.lower() and rng.random() < 0.5 and " " not in value:
                prefix.append(value)
            else:
                clauses.append(sku_clause(key, value, rng))
    attributes: list[dict[str, list[str]]] = []
    for key, values in attribute_values(product, config).items():
        if f"attr:{key}" in chosen:
            value = rng.choice(values)
            attributes.append({key: [value]})
            stated.update(WORD.findall(value.lower()))
            clauses.append(attribute_clause(key, value, rng))
    brand = _brand(product, vocabulary)
    if (brand is not None and not any("brand" in a for a in attributes) and not set(brand.split()) & stated
            and rng.random() < config.brand_odds + 0.3 * detail):
        prefix.insert(0, brand)
        stated.update(brand.split())
    extra = detail + (1 if rng.random() < config.detail_odds else 0)
    if extra:
        others = [w for w in dict.fromkeys(w for words in title_segments(product.title) for w in words)
                  if w not in stated and w not in CONNECTORS and not w.isdigit()]
        others.sort(key=lambda w: -rarity(w))
        if others[:extra]:
            clauses.insert(0, detail_clause(others[:extra], rng))
    stated_services: list[str] = []
    if "service" in chosen:
        offered = services(product)
        stated_services = rng.sample(offered, 2 if len(offered) > 1 and rng.random() < 0.2 else 1)
        stated_services.sort(key=offered.index)
        clauses += [wording.service_phrase(s, rng) for s in stated_services]
    prices: list[dict[str, list[float | None]]] = []
    if "price" in chosen:
        condition = price_condition(product.price, rng, low_factor=config.price_low_factor,
                                    high_factor=config.price_high_factor)
        prices.append(condition)
        relation, (low, high) = next(iter(condition.items()))
        clauses.append(wording.price_phrase(relation, low, high, rng))

    phrase = wording.item_phrase(" ".join([*prefix, *span]), clauses, rng, price_last=bool(prices))
    target = stated_target(product, sku=sku, attributes=attributes, services=stated_services, prices=prices)
    return Item(product=product, target=target, phrase=phrase)
