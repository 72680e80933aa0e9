"""Requests written by a model, offline, for problem banks (never at race time, never for a seed-generated
suite: a model's words cannot be agreed on byte for byte).

The lexicon writer drafts each request: it states exactly what the reward checks, and its per-item search
terms are what the solvability check searches with. A source of rewrites then words the request the way a
shopper writes, free in structure. The model source (:class:`ChatModelRewrites`) follows ShoppingBench's own
recipe (``src/agent/prompt/synthesize.md``): the model is given each item's requirements (its title, the
stated sku options and attributes, services and price condition), never the draft, and asked for the query,
naming each item by its kind as a shopper would, and saying what the catalog's field names mean rather than
writing them (docs/validity.md measures each line of the prompt with recorded model answers). How the
prompt words each fact, orders them and which style it asks for are drawn per request from the bank's
seed (:mod:`~shoppingbench.generator.writer.prompt_style`), and so is which of several sources writes it.
A rewrite is kept only if it cannot have dropped a requirement, pasted the product or copied the prompt:
every number of the stated values and price bounds is still there (not a key's, a title's or a list's
item numbers: they are not requirements), no run of :data:`TITLE_REPEAT_WORDS` title words (of
:data:`SINGLE_TITLE_REPEAT_WORDS` in a one-product request), no run of
the prompt's own fact wording that real requests never use
(:func:`~shoppingbench.generator.writer.prompt_style.copied_wording`), and it is not more than twice as
long as the draft. A rewrite that fails is asked for once more with the reason; then the draft stands,
and the report counts it. A voucher's rules, which follow the request as a fixed block in ShoppingBench's
problems, are the draft's.

A one-product request is held to a shorter run: it names one product, so a model that keeps the listing's
words (Claude calls a "Sliding Gate Roller ..." a sliding gate roller) hands the search its title, and
recorded passes of one prompt put the share of product requests with three title words in a row at
0.22-0.34 against GPT-4.1's 0.17 (docs/validity.md).

Shorter runs of title words are not refused in requests for several products: GPT-4.1's own requests
repeat three title words for a fifth to a third of their items (the validity benchmark measures the share
against its bound, <= 0.30), and refusing them refused 43% of its shop requests and 52% of its voucher
requests taken as rewrites of their drafts, against 5% and 11% without
(``python -m benchmarks.validity --replay-real``, docs/validity.md): those drafts would have stayed in a
bank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import openai
from pydantic import BaseModel

from shoppingbench.generator.writer.compose import LexiconWriter
from shoppingbench.generator.writer.prompt_style import (
    PromptPlan,
    SaidValue,
    copied_wording,
    prompt_plan,
    raw_said,
)
from shoppingbench.generator.writer.propose import ModelSettings, json_object, lost_numbers
from shoppingbench.generator.writer.request import ItemRequest, RequestWriter, WrittenRequest
from shoppingbench.generator.writer.rules import longest_title_run
from shoppingbench.problems.models import Category, PriceCondition, RewardTarget, Voucher
from shoppingbench.problems.terms import Draws
from shoppingbench.problems.wording import number
from shoppingbench.scoring.rules import attribute_pairs

_WORD: Final = re.compile(r"[^\W_]+")
_MAX_GROWTH: Final = 2.0
_ATTEMPTS: Final = 2
_STYLE_SEEDS: Final = 2**62
DEFAULT_TEMPERATURE: Final = 0.7
TITLE_REPEAT_WORDS: Final = 6
"""A run of this many title words in a row repeats the product's title (1-2% of GPT-4.1's items have one)."""
SINGLE_TITLE_REPEAT_WORDS: Final = 4
"""The run that repeats the title of a one-product request's product."""
_SYSTEM: Final = ("You write the requests that shoppers type when they look for products in an online shop. "
                  "Answer with one JSON object and nothing else: {\"query\": \"...\"}.")
_NOTES: Final = (
    "The title is not a requirement: take from it only what kind of product it is, said in two or three "
    "words the way a shopper would rather than copied from it, and never repeat it. State every other "
    "requirement, keeping every number and unit as given. The facts above are worded for you only: say "
    "them in your own words and your own order, never in the words they are given in. Where one still "
    "reads like a catalog field name (like color_family or units_hb), never write it as it is: say what "
    "it means.")


class RewriteReport(BaseModel):
    """How the rewrites went: kept, and drafts left standing with the last reason."""

    requests: int = 0
    rewritten: int = 0
    drafts_kept: int = 0
    reasons: list[str] = []


@dataclass(frozen=True, slots=True)
class RewriteTask:
    """What a rewrite is for: the request's category, its items and the lexicon writer's draft of it
    (without a voucher's rules block); each item's stated values as a shopper says them (none given: as
    the catalog says them) and the seed the prompt's wording and style are drawn from
    (:mod:`~shoppingbench.generator.writer.prompt_style`)."""

    category: Category
    items: Sequence[ItemRequest]
    draft: str
    said: Sequence[Sequence[SaidValue]] = ()
    style_seed: str = ""

    def plan(self) -> PromptPlan:
        """The prompt drawn for this task: a pure function of its items, values said and style seed."""
        said = self.said or [raw_said(item.target) for item in self.items]
        return prompt_plan(self.category, [item.target for item in self.items], said, self.style_seed)


class RewriteSource(Protocol):
    """Where rewrites come from: ``rewrite`` answers a task (and why the last answer for it was refused
    or missing, if it was) with a rewrite, or ``None`` and why there is none."""

    @property
    def name(self) -> str: ...

    def rewrite(self, task: RewriteTask, refused: str | None) -> tuple[str | None, str]: ...


def _price_bound(condition: PriceCondition) -> str:
    low, high = number(condition.low or 0), number(condition.high or 0)
    return {"less than": f"below {high}", "greater than": f"above {low}",
            "between": f"between {low} and {high}"}[condition.relation]


def stated_numbers_text(items: Sequence[ItemRequest]) -> str:
    """The stated values and price bounds of ``items``: the numbers in them are requirements (a key's
    digits, "variation3", and the title's are not)."""
    parts: list[str] = []
    for target in (item.target for item in items):
        parts += [value for _, value in attribute_pairs(target)]
        parts += [_price_bound(condition) for condition in target.price_conditions()]
    return " ; ".join(parts)


def requirements_prompt(task: RewriteTask) -> str:
    """The model's request: the items' requirements, worded and ordered as drawn for the task, the style
    asked for, and how to write the query (ShoppingBench's recipe)."""
    return f"{task.plan().text()}\n\n{_NOTES}"


def model_prompt(task: RewriteTask, refused: str | None) -> str:
    """What the model is asked for ``task``: its requirements, and why its last answer was ``refused``."""
    prompt = requirements_prompt(task)
    return prompt if refused is None else f"{prompt}\n\nYour last answer was refused ({refused}). Try again."


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def rewrite_refusal(task: RewriteTask, rewrite: str) -> str | None:
    """Why ``rewrite`` cannot stand for ``task``'s request, or ``None``."""
    if not rewrite.strip():
        return "empty"
    lost = lost_numbers(stated_numbers_text(task.items), rewrite)
    if lost:
        return f"loses the numbers {', '.join(lost)}"
    longest = TITLE_REPEAT_WORDS if len(task.items) > 1 else SINGLE_TITLE_REPEAT_WORDS
    if any(longest_title_run(rewrite, item.product.title) >= longest for item in task.items):
        return f"repeats {longest} or more words of a product's title in a row"
    copied = copied_wording(task.plan(), rewrite)
    if copied:
        return f"repeats the prompt's wording \"{copied[0]}\""
    if len(_words(rewrite)) > _MAX_GROWTH * max(len(_words(task.draft)), 1):
        return "more than twice as long as the draft"
    return None


class ChatModelRewrites:
    """Requests written by an OpenAI-compatible chat model from the items' requirements."""

    def __init__(self, settings: ModelSettings, temperature: float = DEFAULT_TEMPERATURE) -> None:
        self.settings = settings
        self.temperature = temperature
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                    timeout=settings.timeout_s, max_retries=2)

    @property
    def name(self) -> str:
        return f"model-rewrite/{self.settings.model}"

    def rewrite(self, task: RewriteTask, refused: str | None) -> tuple[str | None, str]:
        try:
            reply = self.client.chat.completions.create(
                model=self.settings.model, temperature=self.temperature,
                messages=[{"role": "system", "content": _SYSTEM},
                          {"role": "user", "content": model_prompt(task, refused)}])
        except openai.OpenAIError as exc:
            return None, f"request failed: {type(exc).__name__}"
        parsed = json_object(reply.choices[0].message.content or "")
        query = None if parsed is None else parsed.get("query")
        if not isinstance(query, str):
            return None, "the reply is not a JSON object with a query"
        return query, ""


def said_values(base: RequestWriter, target: RewardTarget) -> list[SaidValue]:
    """``target``'s stated values as ``base`` says them: a lexicon writer's key words and everyday values
    (the forms its own requests state, which the reward accepts), else the catalog's."""
    if not isinstance(base, LexiconWriter):
        return raw_said(target)
    return [SaidValue(key_words=tuple(s.key.words), role=s.key.role, value=s.value)
            for s in base.statements(target)]


class CheckedRewriter:
    """A :class:`RequestWriter` whose drafts (``base``'s) the ``sources`` rewrite, each rewrite checked.

    Each request's writer (one of ``sources``) and its prompt's wording and style are drawn from the
    request's draws, which a bank derives from its private seed and the problem's slot; ``written_by``
    names, per query written, the source that wrote it (or ``base``'s key where the draft stands)."""

    def __init__(self, base: RequestWriter, *sources: RewriteSource) -> None:
        if not sources:
            raise ValueError("a checked rewriter needs at least one rewrite source")
        self.base = base
        self.sources = sources
        self.report = RewriteReport()
        self.written_by: dict[str, str] = {}

    @property
    def key(self) -> str:
        """Informative only: a model's rewrite is not reproducible, which is why banks are sealed files."""
        return f"{'+'.join(source.name for source in self.sources)}/{self.base.key}"

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest:
        draft = self.base.write(category, items, voucher, rng)
        # The voucher's rules follow the request as a fixed block, as in ShoppingBench's own problems.
        request, _, rules = draft.query.partition("\n\n")
        said = [said_values(self.base, item.target) for item in items]
        task = RewriteTask(category, items, request, said, style_seed=str(rng.randint(0, _STYLE_SEEDS)))
        source = rng.choice(self.sources)
        refused: str | None = None
        reason = "no answer"
        for _ in range(_ATTEMPTS):
            self.report.requests += 1
            rewrite, reason = source.rewrite(task, refused)
            if rewrite is not None:
                reason = rewrite_refusal(task, rewrite) or ""
            if rewrite is not None and not reason:
                self.report.rewritten += 1
                query = " ".join(rewrite.split()) + (f"\n\n{rules}" if rules else "")
                self.written_by[query] = source.name
                return WrittenRequest(query=query, items=draft.items)
            refused = reason
        self.report.drafts_kept += 1
        self.report.reasons.append(reason)
        self.written_by[draft.query] = self.base.key
        return draft


def model_rewriter(base: RequestWriter, models: Sequence[ModelSettings],
                   temperature: float = DEFAULT_TEMPERATURE) -> CheckedRewriter:
    """``base``'s drafts rewritten by the chat models ``models`` name (each request's drawn from its
    draws), sampled at ``temperature``, each rewrite checked."""
    return CheckedRewriter(base, *(ChatModelRewrites(settings, temperature) for settings in models))
