"""Wording metrics of the validity benchmark: how a query names and constrains its items (pure functions).

Every metric reads a query against its reward targets, so a real problem and its twin (the writer's query
for the same targets) are measured the same way. The definitions, exactly:

- **words**: a text lower-cased, split into runs of ``[a-z0-9]`` (every other character separates words);
  a word of another script is a run of its letters (``\\w`` minus ``_``), so ``"尺码"`` is one word.
- **title span** (per item): the query contains 3 consecutive words of the item's first reward title,
  consecutively, after the connectors (:data:`CONNECTORS`: articles, conjunctions, short prepositions) are
  removed from both texts. So ``"bags for women"`` and ``"bags women"`` are the same span, and a span of
  connectors alone never counts.
- **raw key** (per item): the query states one of the item's sku/attribute keys (:func:`is_raw_key`) as
  written or with ``_`` read as a space, as whole words. A key is raw unless it is one plain word a
  shopper says (letters only, e.g. ``brand``, ``size``, ``pattern``); catalog field words that read as
  a form's label (:data:`FIELD_WORDS`: ``model``, ``variation``, ``type``, ...) are raw too. The field
  list is what brings the real queries near the figures of issue 21 (8 / 12 / 9%): on the calibration
  set it measures 6 / 10 / 7%.
- **verbatim value** (per stated value): the value's words appear consecutively in the query.
- **constraints** (per item): sku pairs + attribute pairs + services + price conditions.
- **gap** (per category): an agent's success on the twins minus its success on the real problems, paired
  per problem (a twin shares its real problem's targets), with the standard error of the mean of the
  per-problem differences (sample standard deviation over the square root of the problems); **pooled**
  over categories, each weighted by its problems, its standard error from the categories' own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.scoring.rules import attribute_pairs

_WORD: Final = re.compile(r"[^\W_]+")
SPAN_WORDS: Final = 3
CONNECTORS: Final = frozenset({"a", "an", "the", "and", "or", "for", "with", "of", "in", "on", "to", "by",
                               "at", "from"})
FIELD_WORDS: Final = frozenset({"model", "variation", "variant", "type", "spec", "specification", "services",
                                "interest", "feature"})


def words(text: str) -> list[str]:
    """``text`` lower-cased and split into words (see the module docstring)."""
    return _WORD.findall(text.lower())


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as consecutive words (an empty needle never does)."""
    size = len(needle)
    if size == 0:
        return False
    return any(list(haystack[i:i + size]) == list(needle) for i in range(len(haystack) - size + 1))


def has_title_span(query: str, title: str, span: int = SPAN_WORDS) -> bool:
    """Whether ``query`` repeats ``span`` consecutive non-connector words of ``title``."""
    query_words = [w for w in words(query) if w not in CONNECTORS]
    title_words = [w for w in words(title) if w not in CONNECTORS]
    spans = {tuple(query_words[i:i + span]) for i in range(len(query_words) - span + 1)}
    return any(tuple(title_words[i:i + span]) in spans for i in range(len(title_words) - span + 1))


def is_raw_key(key: str) -> bool:
    """A key a shopper would not say: anything but one plain lower-case word, or a form's field label."""
    plain = key.strip().lower()
    return re.fullmatch(r"[a-z]+", plain) is None or plain in FIELD_WORDS


def target_keys(target: RewardTarget) -> list[str]:
    """The sku option and attribute keys a target states, in reward order."""
    return ([k for option in target.sku_options for k in option]
            + [k for attr in target.attributes for k in attr])


def target_values(target: RewardTarget) -> list[str]:
    """The sku option and attribute values a target states, in reward order."""
    return [v for _, v in attribute_pairs(target)]


def states_raw_key(query: str, target: RewardTarget) -> bool:
    """Whether ``query`` names one of ``target``'s raw keys, as written or with ``_`` read as a space."""
    query_words = words(query)
    return any(_contains(query_words, words(key)) for key in target_keys(target) if is_raw_key(key))


def value_is_verbatim(query: str, value: str) -> bool:
    """Whether every word of ``value`` appears in ``query``, consecutively and in order."""
    return _contains(words(query), words(value))


def constraint_count(target: RewardTarget) -> int:
    """The constraints a reward target checks besides its title."""
    return (sum(len(option) for option in target.sku_options) + sum(len(attr) for attr in target.attributes)
            + len(target.service) + len(target.price))


@dataclass(frozen=True, slots=True)
class WordingFigures:
    """The wording metrics of a set of problems (shares in [0, 1], rounded for the report)."""

    problems: int
    items: int
    title_span_share: float
    raw_key_share: float
    verbatim_value_share: float
    query_words: float
    constraints_per_item: float
    items_per_problem: float


def _share(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 0.0


def _mean(amount: int, count: int) -> float:
    return round(amount / count, 2) if count else 0.0


def wording_figures(problems: Sequence[Problem]) -> WordingFigures:
    """The metrics of ``problems`` (each item against its own target; values over every stated value)."""
    items = [(p.query, t) for p in problems for t in p.targets]
    values = [(query, v) for query, t in items for v in target_values(t)]
    spans = sum(1 for query, t in items if any(has_title_span(query, title) for title in t.title[:1]))
    return WordingFigures(
        problems=len(problems), items=len(items),
        title_span_share=_share(spans, len(items)),
        raw_key_share=_share(sum(1 for query, t in items if states_raw_key(query, t)), len(items)),
        verbatim_value_share=_share(sum(1 for q, v in values if value_is_verbatim(q, v)), len(values)),
        query_words=_mean(sum(len(words(p.query)) for p in problems), len(problems)),
        constraints_per_item=_mean(sum(constraint_count(t) for _, t in items), len(items)),
        items_per_problem=_mean(len(items), len(problems)),
    )


@dataclass(frozen=True, slots=True)
class Gap:
    """Twins' success minus real success over ``problems`` problems, and its standard error."""

    gap: float
    se: float
    problems: int


def paired_gap(real: Sequence[bool], twin: Sequence[bool]) -> Gap:
    """The gap of outcomes paired by position (``twin[i]`` is the twin of ``real[i]``)."""
    if len(real) != len(twin):
        raise ValueError(f"paired outcomes of {len(real)} real and {len(twin)} twin problems")
    count = len(real)
    if count == 0:
        return Gap(0.0, 0.0, 0)
    differences = [int(t) - int(r) for r, t in zip(real, twin, strict=True)]
    mean = sum(differences) / count
    variance = sum((d - mean) ** 2 for d in differences) / (count - 1) if count > 1 else 0.0
    return Gap(round(mean, 4), round(math.sqrt(variance / count), 4), count)


def pooled_gap(gaps: Sequence[Gap]) -> Gap:
    """The categories' gaps pooled, each weighted by its problems; independent categories' errors add in
    quadrature."""
    total = sum(g.problems for g in gaps)
    if total == 0:
        return Gap(0.0, 0.0, 0)
    gap = sum(g.gap * g.problems for g in gaps) / total
    se = math.sqrt(sum((g.se * g.problems) ** 2 for g in gaps)) / total
    return Gap(round(gap, 4), round(se, 4), total)
