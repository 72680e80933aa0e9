"""Requests reworded by a model, offline, for problem banks (never at race time, never for a seed-generated
suite: a model's words cannot be agreed on byte for byte).

The lexicon writer drafts each request: it states exactly what the reward checks, and its per-item
search terms are what the solvability check searches with. A source of rewrites (an OpenAI-compatible
model, :class:`ChatModelRewrites`) then rewrites the draft the way a shopper writes, free in structure
(ShoppingBench's own problems were written by a model from the same facts). A rewrite is kept only if it
cannot have dropped a requirement: every number of the draft is still there (a list's item numbers,
"1." or "(2)", are layout, not requirements) and it is not more than twice as long. A rewrite that fails
is asked for once more with the reason; then the draft stands, and the report counts it. A voucher's
rules, which follow the request as a fixed block in ShoppingBench's problems, are kept as they are.

Title words are not checked: the model sees the draft only, never a product's title, so a run of title
words in its rewrite is ordinary words the title shares ("kitchen storage rack"), as in a third of the
real requests; the validity benchmark measures the share against its bound. With such runs refused (as
the benchmark counts them), the checks refused 43% of GPT-4.1's own shop requests and 52% of its voucher
requests taken as rewrites of their drafts, against 5% and 11% without (``python -m benchmarks.validity
--replay-real``, docs/validity.md): those drafts would have stayed in a bank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Protocol

import openai
from pydantic import BaseModel

from shoppingbench.generator.writer.propose import ModelSettings, json_object, lost_numbers
from shoppingbench.generator.writer.request import ItemRequest, RequestWriter, WrittenRequest
from shoppingbench.problems.models import Category, Voucher
from shoppingbench.problems.terms import Draws

_WORD: Final = re.compile(r"[^\W_]+")
_LIST_NUMBER: Final = re.compile(r"(?:^|(?<=[:.;!?])\s+|\n)\(?\d{1,2}[.)](?=\s)")
"""An item's number in a listed request ("items: 1. A pen ... (2) A shirt"), at the text's start or after
a sentence's or a colon's end; a number inside a clause ("a 27. Also") is a requirement."""
_MAX_GROWTH: Final = 2.0
_ATTEMPTS: Final = 2
_SYSTEM: Final = (
    "You rewrite shopping requests the way real online shoppers write them. Keep every requirement: each "
    "item, each option, attribute, service and price condition, every number and unit. Name each item by "
    "its basic kind in a few everyday words, never by its product title. Vary the sentence structure and "
    "use everyday synonyms; do not add requirements. Answer with one JSON object: {\"query\": \"...\"}.")


class RewriteReport(BaseModel):
    """How the rewrites went: kept, and drafts left standing with the last reason."""

    requests: int = 0
    rewritten: int = 0
    drafts_kept: int = 0
    reasons: list[str] = []


class RewriteSource(Protocol):
    """Where rewrites come from: ``rewrite`` answers a draft request (and why the last answer for it was
    refused or missing, if it was) with a rewrite, or ``None`` and why there is none."""

    @property
    def name(self) -> str: ...

    def rewrite(self, category: Category, request: str, refused: str | None) -> tuple[str | None, str]: ...


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def rewrite_refusal(draft: str, rewrite: str) -> str | None:
    """Why ``rewrite`` cannot replace ``draft``, or ``None``."""
    if not rewrite.strip():
        return "empty"
    lost = lost_numbers(_LIST_NUMBER.sub(" ", draft), rewrite)
    if lost:
        return f"loses the numbers {', '.join(lost)}"
    if len(_words(rewrite)) > _MAX_GROWTH * max(len(_words(draft)), 1):
        return "more than twice as long as the draft"
    return None


class ChatModelRewrites:
    """Rewrites from an OpenAI-compatible chat model."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                    timeout=settings.timeout_s, max_retries=2)

    @property
    def name(self) -> str:
        return f"model-rewrite/{self.settings.model}"

    def rewrite(self, category: Category, request: str, refused: str | None) -> tuple[str | None, str]:
        prompt = f"Rewrite this {category} request:\n{request}"
        if refused is not None:
            prompt += f"\n\nYour last answer was refused ({refused}). Try again."
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


class CheckedRewriter:
    """A :class:`RequestWriter` whose drafts (``base``'s) ``source`` rewrites, each rewrite checked."""

    def __init__(self, base: RequestWriter, source: RewriteSource) -> None:
        self.base = base
        self.source = source
        self.report = RewriteReport()

    @property
    def key(self) -> str:
        """Informative only: a model's rewrite is not reproducible, which is why banks are sealed files."""
        return f"{self.source.name}/{self.base.key}"

    def write(self, category: Category, items: Sequence[ItemRequest], voucher: Voucher | None,
              rng: Draws) -> WrittenRequest:
        draft = self.base.write(category, items, voucher, rng)
        # The voucher's rules follow the request as a fixed block, as in ShoppingBench's own problems.
        request, _, rules = draft.query.partition("\n\n")
        refused: str | None = None
        reason = "no answer"
        for _ in range(_ATTEMPTS):
            self.report.requests += 1
            rewrite, reason = self.source.rewrite(category, request, refused)
            if rewrite is not None:
                reason = rewrite_refusal(request, rewrite) or ""
            if rewrite is not None and not reason:
                self.report.rewritten += 1
                query = " ".join(rewrite.split()) + (f"\n\n{rules}" if rules else "")
                return WrittenRequest(query=query, items=draft.items)
            refused = reason
        self.report.drafts_kept += 1
        self.report.reasons.append(reason)
        return draft


def model_rewriter(base: RequestWriter, settings: ModelSettings) -> CheckedRewriter:
    """``base``'s drafts rewritten by the chat model ``settings`` names, each rewrite checked."""
    return CheckedRewriter(base, ChatModelRewrites(settings))
