"""What a judge reads about one attempt, made safe to read: bounded, typed views of untrusted steps, and
the products the tools verifiably returned (from the proxy log, never from the steps).

The steps are the agent's own words (SPEC 3): any JSON, possibly junk, possibly huge, possibly
written to steer a judge. Nothing here trusts their shape; every text is clipped, every walk is
bounded, and a step that is not what the dialogue contract says is skipped, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property
from typing import Any, Final

import orjson
from pydantic import BaseModel, Field, PrivateAttr

from shoppingbench.echo import echoed_calls
from shoppingbench.records import AttemptRecord, ProxyCall

MIN_REASONING_TOKENS: Final = 30
"""Gate 1: an attempt whose model never wrote this many completion tokens in one call did not reason."""
MAX_STEPS: Final = 40
MAX_TEXT_CHARS: Final = 1_500
MAX_RESULT_CHARS: Final = 600
MAX_TOOLS_PER_STEP: Final = 5
_MAX_MONEY_CHARS: Final = 20


class JudgeInput(BaseModel):
    """One attempt as a judge sees it: the query, the verified proxy log, the untrusted steps."""

    query: str
    proxy_log: list[ProxyCall] = Field(default_factory=list)
    steps: list[Any] = Field(default_factory=list)
    steered: dict[int, str] = Field(default_factory=dict, description=(
        "The attempt's steered requests by seq, with why (trajectories.filter.decided, measured over the "
        "whole run): their completions answered the agent's code, not the shopper"))
    _record_echoes: frozenset[int] | None = PrivateAttr(default=None)

    @classmethod
    def from_record(cls, record: AttemptRecord) -> JudgeInput:
        """The record as a judge sees it, with the record's echo measure (``AttemptRecord.echoed_calls``:
        the one the grader took when it built the record, else measured now), not measured again, and the
        steered requests its run's measure left with it."""
        judged = cls(query=record.query, proxy_log=record.proxy_log, steps=record.steps,
                     steered=record.carried_steering() or {})
        judged._record_echoes = frozenset(record.echoed_calls())
        return judged

    @cached_property
    def echoed(self) -> frozenset[int]:
        """The ``seq`` of each answered inference call whose completion only repeated its request
        (``shoppingbench.echo``): the model did not write it, so no gate counts it."""
        if self._record_echoes is not None:
            return self._record_echoes
        return frozenset(echoed_calls(self.proxy_log, self.query))

    @cached_property
    def not_decided(self) -> frozenset[int]:
        """The completions that are not the model's own decision: echoed or steered."""
        return self.echoed | self.steered.keys()

    @cached_property
    def written_calls(self) -> list[ProxyCall]:
        """The answered inference calls whose completion the model wrote and decided (neither echoed nor
        steered), in order."""
        return [call for call in inference_calls(self.proxy_log) if call.seq not in self.not_decided]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit} more characters cut]"


def as_text(value: Any, limit: int) -> str:
    """Any JSON-ish value as bounded text (strings as they are, the rest as JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return clip(value, limit)
    try:
        return clip(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode(), limit)
    except (TypeError, orjson.JSONEncodeError):
        return clip(repr(value), limit)


def _field(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


@dataclass(frozen=True, slots=True)
class ToolView:
    name: str
    parameters: str
    result: str


@dataclass(frozen=True, slots=True)
class StepView:
    """One step's think, tool calls (with results) and response, each clipped."""

    index: int
    think: str
    tools: tuple[ToolView, ...]
    response: str


def step_views(steps: Sequence[Any]) -> tuple[list[StepView], int]:
    """Bounded views of the first ``MAX_STEPS`` well-formed steps, and how many steps were left out."""
    views: list[StepView] = []
    for index, step in enumerate(steps[:MAX_STEPS]):
        message = _field(step, "completion", "message")
        if not isinstance(message, dict):
            continue
        calls = message.get("tool_call")
        tools = tuple(
            ToolView(name=as_text(call.get("name"), 100), parameters=as_text(call.get("parameters"), 500),
                     result=as_text(call.get("result"), MAX_RESULT_CHARS))
            for call in (calls if isinstance(calls, list) else [])[:MAX_TOOLS_PER_STEP]
            if isinstance(call, dict)
        )
        views.append(StepView(index=index, think=as_text(message.get("think"), MAX_TEXT_CHARS), tools=tools,
                              response=as_text(message.get("response"), MAX_TEXT_CHARS)))
    return views, len(steps) - len(views)


@dataclass(frozen=True, slots=True)
class SeenProduct:
    """What the tools verifiably returned about one product (the proxy's record of their answers)."""

    product_id: str
    title: str = ""
    price: Decimal | None = None
    values: frozenset[str] = frozenset()
    """Lower-case sku option and attribute values."""


def money(value: Any) -> Decimal | None:
    """A price as an exact two-decimal amount, or ``None`` when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    text = str(value).replace(",", "")
    if len(text) > _MAX_MONEY_CHARS:
        return None  # a product id or a digit run, not a price
    try:
        amount = Decimal(text)
        return amount.quantize(Decimal("0.01")) if amount.is_finite() else None
    except InvalidOperation:
        return None


def verified_products(proxy_log: Sequence[ProxyCall]) -> dict[str, SeenProduct]:
    """Products the tools returned to the attempt, merging what its search and view answers each said.

    Only the proxy's record counts: tool results in the agent's steps are its own claims and may be
    forged (an agent can feed its model invented titles and prices and report them as results).
    """
    found: dict[str, SeenProduct] = {}
    for call in sorted(proxy_log, key=lambda c: c.seq):
        if call.kind != "search" or call.status != 200:
            continue
        for returned in call.results:
            old = found.get(returned.product_id, SeenProduct(returned.product_id))
            found[returned.product_id] = SeenProduct(
                product_id=returned.product_id, title=old.title or (returned.title or ""),
                price=old.price if old.price is not None else money(returned.price),
                values=old.values | frozenset(returned.values))
    return found


def inference_calls(proxy_log: Sequence[ProxyCall]) -> list[ProxyCall]:
    """The inference calls the proxy answered successfully, in order."""
    return [c for c in sorted(proxy_log, key=lambda c: c.seq) if c.kind == "inference" and c.status == 200]


def max_completion_tokens(proxy_log: Sequence[ProxyCall]) -> int:
    return max((c.completion_tokens or 0 for c in inference_calls(proxy_log)), default=0)


def passes_gate_one(proxy_log: Sequence[ProxyCall]) -> bool:
    """Gate 1, from the verified log only: some answered inference call wrote >= 30 completion tokens.

    Judges pass :attr:`JudgeInput.written_calls`, so an echoed completion's tokens do not count."""
    return max_completion_tokens(proxy_log) >= MIN_REASONING_TOKENS
