"""Requests reworded by a model, offline, for problem banks (never at race time, never for a seed-generated
suite: a model's words cannot be agreed on byte for byte).

The lexicon writer drafts each request: it states exactly what the reward checks, and its per-item
search terms are what the solvability check searches with. An OpenAI-compatible model then rewrites the
draft the way a shopper writes, free in structure (ShoppingBench's own problems were written by a model
from the same facts). A rewrite is kept only if it cannot have changed what the reward checks or given
the target away: every number of the draft is still there, no run of three title words appears that the
draft did not have, and it is not more than twice as long. A rewrite that fails is asked for once more
with the reason; then the draft stands, and the report counts it. A voucher's rules, which follow the
request as a fixed block in ShoppingBench's problems, are kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import openai
from pydantic import BaseModel

from shoppingbench.generator.writer.propose import ModelSettings, json_object, lost_numbers
from shoppingbench.generator.writer.request import ItemRequest, RequestWriter, WrittenRequest
from shoppingbench.problems.models import Category, Voucher
from shoppingbench.problems.terms import Draws

_WORD: Final = re.compile(r"[^\W_]+")
_MAX_GROWTH: Final = 2.0
_ATTEMPTS: Final = 2
_SYSTEM: Final = (
    "You rewrite shopping requests the way real online shoppers write them. Keep every requirement: each "
    "item, each option, attribute, service and price condition, every number and unit. Name each item by "
    "its basic kind in a few everyday words, never by its product title. Vary the sentence structure and "
    "use everyday synonyms; do not add requirements. Answer with one JSON object: {\"query\": \"...\"}.")


class RewriteReport(BaseModel):
    """How the model's rewrites went: kept, and drafts left standing with the last reason."""

    requests: int = 0
    rewritten: int = 0
    drafts_kept: int = 0
    reasons: list[str] = []


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def title_spans(text: str, titles: Sequence[str], length: int = 3) -> set[tuple[str, ...]]:
    """The runs of ``length`` consecutive title words that ``text`` contains, consecutively."""
    said = words(text)
    present = {tuple(said[i:i + length]) for i in range(len(said) - length + 1)}
    spans: set[tuple[str, ...]] = set()
    for title in titles:
        title_words = words(title)
        spans |= {run for i in range(len(title_words) - length + 1)
                  if (run := tuple(title_words[i:i + length])) in present}
    return spans


def rewrite_refusal(draft: str, rewrite: str, titles: Sequence[str]) -> str | None:
    """Why ``rewrite`` cannot replace ``draft`` (whose items have the product ``titles``), or ``None``."""
    if not rewrite.strip():
        return "empty"
    lost = lost_numbers(draft, rewrite)
    if lost:
        return f"loses the numbers {', '.join(lost)}"
    added = title_spans(rewrite, titles) - title_spans(draft, titles)
    if added:
        return f"repeats the title words {' '.join(sorted(added)[0])!r}"
    if len(words(rewrite)) > _MAX_GROWTH * max(len(words(draft)), 1):
        return "more than twice as long as the draft"
    return None


class ModelRewriter:
    """A :class:`RequestWriter` whose drafts (``base``'s) a model rewrites, each rewrite checked."""

    def __init__(self, base: RequestWriter, settings: ModelSettings) -> None:
        self.base = base
        self.settings = settings
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                    timeout=settings.timeout_s, max_retries=2)
        self.report = RewriteReport()

    @property
    def key(self) -> str:
        """Informative only: a model's rewrite is not reproducible, which is why banks are sealed files."""
        return f"model-rewrite/{self.settings.model}/{self.base.key}"

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest:
        draft = self.base.write(category, items, voucher, rng)
        # The voucher's rules follow the request as a fixed block, as in ShoppingBench's own problems.
        request, _, rules = draft.query.partition("\n\n")
        titles = [item.product.title for item in items]
        prompt = f"Rewrite this {category} request:\n{request}"
        reason = "no answer"
        for _ in range(_ATTEMPTS):
            rewrite, reason = self._ask(prompt)
            if rewrite is not None:
                reason = rewrite_refusal(request, rewrite, titles) or ""
            if rewrite is not None and not reason:
                self.report.rewritten += 1
                query = " ".join(rewrite.split()) + (f"\n\n{rules}" if rules else "")
                return WrittenRequest(query=query, items=draft.items)
            prompt = (f"Rewrite this {category} request:\n{request}\n\nYour last answer was refused "
                      f"({reason}). Try again.")
        self.report.drafts_kept += 1
        self.report.reasons.append(reason)
        return draft

    def _ask(self, prompt: str) -> tuple[str | None, str]:
        """The model's rewrite, or ``None`` and why there is none."""
        self.report.requests += 1
        try:
            reply = self.client.chat.completions.create(
                model=self.settings.model, temperature=0.7,
                messages=[{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}])
        except openai.OpenAIError as exc:
            return None, f"request failed: {type(exc).__name__}"
        parsed = json_object(reply.choices[0].message.content or "")
        query = None if parsed is None else parsed.get("query")
        if not isinstance(query, str):
            return None, "the reply is not a JSON object with a query"
        return query, ""
