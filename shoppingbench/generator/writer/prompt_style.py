"""How a problem bank's prompt words its facts and asks for a style, drawn from the bank's private seed.

A model given every request's facts in the same words, in the same order, with the same instructions
writes every request alike, and copies the words: a parser written against one bank of such requests
reads the next (docs/validity.md). So each prompt draws, from pools that cover the forms real requests
use, how each fact is stated (services in the forms real requests use, price bounds in the lexicon's
everyday phrasings, which come from real requests; a stated value in the catalog lexicon's everyday
form, its key in a shopper's word), the order of each item's facts, and the style asked for: prose or a
list, whether to say how many items, to say one shop or to mention the voucher, how to open and close.
The pools are data (``prompt_pools.json``); the draw is a pure function of the task's ``style_seed``,
which the bank's writer draws from the bank's private seed and the problem, so the same bank seed gives
the same prompts.

The prompt's own wording of its facts (its templates, not the stated values) is what a model copies;
:func:`copied_wording` names the runs of :data:`COPY_NGRAM` words of it a request repeats that real
requests never use (``real_ngrams`` in the pools: the template runs the calibration requests do use).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.generator.writer.lexicon import Phrasing, Role, load_phrasing
from shoppingbench.problems.draws import HashDraws
from shoppingbench.problems.models import Category, PriceCondition, RewardTarget
from shoppingbench.problems.wording import number
from shoppingbench.scoring.rules import attribute_pairs

POOLS_FILE: Final = Path(__file__).with_name("prompt_pools.json")
PROMPT_KEY: Final = "bank-prompt-style-v1"
COPY_NGRAM: Final = 4
_WORD: Final = re.compile(r"[^\W_]+")
_PLACEHOLDER: Final = re.compile(r"\{[a-z]+\}")


class PromptPools(BaseModel):
    """The wordings a prompt is drawn from (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    asks: dict[Category, list[str]]
    product_headers: list[str] = Field(min_length=1)
    ordinals: list[str] = Field(min_length=1)
    title_facts: list[str] = Field(min_length=1)
    keyed_facts: list[str] = Field(min_length=1)
    forms: dict[str, list[str]]
    counts: list[str] = Field(min_length=1)
    shop_mentions: list[str] = Field(min_length=1)
    voucher_mentions: list[str] = Field(min_length=1)
    openings: list[str] = Field(min_length=1)
    starts: list[str] = Field(min_length=1)
    closings: list[str] = Field(min_length=1)
    services: dict[str, list[str]]
    """How the services are said, in the forms real requests use (never the catalog's own strings)."""
    real_ngrams: list[str]
    """Runs of :data:`COPY_NGRAM` template words the real calibration requests use (allowed to repeat)."""


@cache
def load_pools() -> PromptPools:
    return PromptPools.model_validate_json(POOLS_FILE.read_bytes())


@dataclass(frozen=True, slots=True)
class SaidValue:
    """A stated value as a shopper says it: the key's shopper words (none: the value alone), its role
    and the value in everyday form (every number of the raw value kept)."""

    key_words: tuple[str, ...]
    role: Role
    value: str


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact line of the prompt and its template's own word runs (the stated values cut out)."""

    text: str
    wording: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PromptPlan:
    """A drawn prompt: the ask, each item's facts in their drawn order (and its header), the style lines."""

    ask: str
    items: tuple[tuple[str, tuple[Fact, ...]], ...]
    style: tuple[str, ...]

    def text(self) -> str:
        if len(self.items) == 1:
            listed = "\n".join(f"- {fact.text}" for fact in self.items[0][1])
        else:
            listed = "\n\n".join(header + "\n" + "\n".join(f"- {fact.text}" for fact in facts)
                                 for header, facts in self.items)
        return f"{self.ask}\n\n{listed}\n\n" + " ".join(line for line in self.style if line)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _fact(template: str, **fields: str) -> Fact:
    """``template`` filled in, with the word runs between its placeholders as its wording."""
    return Fact(text=template.format(**fields), wording=tuple(part for part in _PLACEHOLDER.split(template)
                                                                if part.strip()))


def _value_fact(said: SaidValue, pools: PromptPools, phrasing: Phrasing, rng: HashDraws) -> Fact:
    if said.key_words:
        return _fact(rng.choice(pools.keyed_facts), k=rng.choice(said.key_words), v=said.value)
    clauses = phrasing.clauses.get(said.role) or ["{v}"]
    return _fact(rng.choice(clauses), v=said.value)


def _price_fact(condition: PriceCondition, phrasing: Phrasing, rng: HashDraws) -> Fact:
    currency = rng.choice(phrasing.currencies)
    template = rng.choice(phrasing.prices[condition.relation]).replace("{cur}", currency)
    return _fact(template, low=number(condition.low or 0), high=number(condition.high or 0))


def item_facts(target: RewardTarget, said: Sequence[SaidValue], rng: HashDraws) -> list[Fact]:
    """One item's facts as the model is given them, in a drawn order: what the reward checks, in a
    shopper's words drawn from the pools."""
    pools, phrasing = load_pools(), load_phrasing()
    facts = [_fact(rng.choice(pools.title_facts), title=target.title[0])] if target.title else []
    facts += [_value_fact(value, pools, phrasing, rng) for value in said]
    facts += [_fact(rng.choice(pools.services[service])) for service in target.service
              if service in pools.services]
    facts += [_price_fact(condition, phrasing, rng) for condition in target.price_conditions()]
    rng.shuffle(facts)
    return facts


def raw_said(target: RewardTarget) -> list[SaidValue]:
    """The stated values as the catalog says them (for a writer with no lexicon to say them otherwise)."""
    return [SaidValue(key_words=(key.replace("_", " "),), role="feature", value=value)
            for key, value in attribute_pairs(target)]


def _style(category: Category, items: int, pools: PromptPools, rng: HashDraws) -> tuple[str, ...]:
    form = "prose" if items == 1 else rng.choice(sorted(pools.forms))
    lines = [rng.choice(pools.forms[form])]
    if items > 1:
        lines.append(rng.choice(pools.counts))
    if category == "shop":
        lines.append(rng.choice(pools.shop_mentions))
    if category == "voucher":
        lines.append(rng.choice(pools.voucher_mentions))
    lines.append(rng.choice(pools.openings).format(start=rng.choice(pools.starts)))
    lines.append(rng.choice(pools.closings))
    return tuple(lines)


def _header(n: int, pools: PromptPools, template: str) -> str:
    return template.format(n=n, ordinal=pools.ordinals[(n - 1) % len(pools.ordinals)])


def prompt_plan(category: Category, targets: Sequence[RewardTarget], said: Sequence[Sequence[SaidValue]],
                style_seed: str) -> PromptPlan:
    """The prompt drawn for ``targets`` (each item's values as ``said``) from ``style_seed``."""
    pools = load_pools()
    rng = HashDraws(PROMPT_KEY, style_seed)
    ask = rng.choice(pools.asks[category])
    header = rng.choice(pools.product_headers)
    items = tuple((_header(n, pools, header), tuple(item_facts(target, values, rng)))
                  for n, (target, values) in enumerate(zip(targets, said, strict=True), start=1))
    return PromptPlan(ask=ask, items=items, style=_style(category, len(targets), pools, rng))


def ngrams(text: str, size: int = COPY_NGRAM) -> set[str]:
    """The runs of ``size`` words of ``text``, each as its words joined by a space."""
    tokens = words(text)
    return {" ".join(tokens[i:i + size]) for i in range(len(tokens) - size + 1)}


def copy_ngrams(plan: PromptPlan) -> set[str]:
    """The runs of :data:`COPY_NGRAM` words of the prompt's fact wording that real requests never use."""
    runs = {run for _, facts in plan.items for fact in facts for part in fact.wording for run in ngrams(part)}
    return runs - set(load_pools().real_ngrams)


def copied_wording(plan: PromptPlan, request: str) -> list[str]:
    """The runs of :func:`copy_ngrams` that ``request`` repeats, in order."""
    return sorted(copy_ngrams(plan) & ngrams(request))
