"""Shopper wording for any catalog: openers, constraint clauses for unknown keys, distinguishing details.

The shared templates (``shoppingbench.problems.wording``) cover its own sku and attribute keys;
a real catalog has keys nobody listed, so those get generic wording that still states the value
verbatim ("with storage size 256gb"). Every choice is a draw from the caller's ``Draws``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from shoppingbench.problems import wording
from shoppingbench.problems.terms import Draws

PRODUCT_OPENERS: Final = (
    "Looking for {item}.", "I need {item}.", "Can you find {item}?", "Show me {item}.",
    "Searching for {item}.", "I'm looking for {item}.", "Help me find {item}.", "I want to buy {item}.",
    "Please find {item}.", "Find me {item}.", "Do you have {item}?", "Any good options for {item}?",
    "I'd like to order {item}.", "Could you look for {item}?", "Hi! I'm shopping for {item}.",
    "I'm hunting for {item}.", "Where can I get {item}?", "Recommend {item}, please.",
    "I'd like {item}.", "Can you help me pick {item}?", "My order today: {item}.",
    "Point me to {item}.", "Is there {item} in stock?", "I'm after {item}.",
)
"""How a product request opens; ``{item}`` is the item's description."""

GENERIC_VALUE_PHRASES: Final = (
    "with {k} {v}", "whose {k} is {v}", "with {v} as its {k}", "where the {k} is {v}", "with the {k} {v}",
)
"""Templates for sku and attribute keys the sample world's wording does not know."""

DETAIL_PHRASES: Final = (
    "that mentions {w}", "whose title mentions {w}", "described with {w}", "with {w} in its name",
    "listed with the words {w}",
)
"""Templates for a distinguishing detail: title words that set the target apart from similar listings."""

_KEY_TEXT: Final = re.compile(r"^[a-z][a-z0-9 ]{0,29}$")


def key_text(key: str) -> str:
    """A sku/attribute key as words ("storage_size" -> "storage size"); odd keys read as "option"."""
    text = key.replace("_", " ").strip().lower()
    return text if _KEY_TEXT.match(text) else "option"


def sku_clause(key: str, value: str, rng: Draws) -> str:
    if key in wording.SKU_PHRASES or value.startswith(("with ", "for ")):
        return wording.sku_phrase(key, value, rng)
    return rng.choice(GENERIC_VALUE_PHRASES).format(k=key_text(key), v=value)


def attribute_clause(key: str, value: str, rng: Draws) -> str:
    if key in wording.ATTRIBUTE_PHRASES:
        return wording.attribute_phrase(key, value, rng)
    return rng.choice(GENERIC_VALUE_PHRASES).format(k=key_text(key), v=value)


def detail_clause(words: Sequence[str], rng: Draws) -> str:
    return rng.choice(DETAIL_PHRASES).format(w=" ".join(words))


def product_query(item: str, rng: Draws) -> str:
    return rng.choice(PRODUCT_OPENERS).format(item=item)
