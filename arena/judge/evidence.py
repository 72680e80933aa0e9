"""What a judge reads about one attempt, made safe to read: bounded, typed views of untrusted steps.

The steps are the agent's own words (SPEC 3): any JSON, possibly junk, possibly huge, possibly
written to steer a judge. Nothing here trusts their shape; every text is clipped, every walk is
bounded, and a step that is not what the dialogue contract says is skipped, never an error.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import orjson
from pydantic import BaseModel, Field

from shoppingbench.records import AttemptRecord, ProxyCall

MIN_REASONING_TOKENS: Final = 30
"""Gate 1: an attempt whose model never wrote this many completion tokens in one call did not reason."""
MAX_STEPS: Final = 40
MAX_TEXT_CHARS: Final = 1_500
MAX_RESULT_CHARS: Final = 600
MAX_TOOLS_PER_STEP: Final = 5
_MAX_WALK_NODES: Final = 20_000
_MAX_MONEY_CHARS: Final = 20
_MAX_JSON_TEXT: Final = 1_000_000


class JudgeInput(BaseModel):
    """One attempt as a judge sees it: the query, the verified proxy log, the untrusted steps."""

    query: str
    proxy_log: list[ProxyCall] = Field(default_factory=list)
    steps: list[Any] = Field(default_factory=list)

    @classmethod
    def from_record(cls, record: AttemptRecord) -> JudgeInput:
        return cls(query=record.query, proxy_log=record.proxy_log, steps=record.steps)


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
    """What the tool results told the agent about one product."""

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


def _json_values(value: Any) -> Iterator[Any]:
    """Every node of a JSON-ish value, breadth first, at most ``_MAX_WALK_NODES`` of them."""
    queue: deque[Any] = deque([value])
    seen = 0
    while queue and seen < _MAX_WALK_NODES:
        node = queue.popleft()
        seen += 1
        if isinstance(node, str) and node[:1] in "[{" and len(node) <= _MAX_JSON_TEXT:
            try:
                node = orjson.loads(node)  # tool servers' answers sometimes arrive as JSON text
            except orjson.JSONDecodeError:
                continue
        yield node
        if isinstance(node, dict):
            queue.extend(node.values())
        elif isinstance(node, list):
            queue.extend(node)


def _option_values(raw: Any) -> Iterator[str]:
    """Values of ``sku_options`` (``{"1": {k: v}}``) and ``attributes`` (``{k: [v]}``)."""
    if not isinstance(raw, dict):
        return
    for value in raw.values():
        if isinstance(value, str):
            yield value.lower()
        elif isinstance(value, list):
            yield from (v.lower() for v in value if isinstance(v, str))
        elif isinstance(value, dict):
            yield from _option_values(value)


def products_in_results(steps: Sequence[Any]) -> dict[str, SeenProduct]:
    """Products the agent's tool results describe, merging what search and view calls each said."""
    found: dict[str, SeenProduct] = {}
    for step in steps:
        calls = _field(step, "completion", "message", "tool_call")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            for node in _json_values(call.get("result")):
                if not isinstance(node, dict) or not isinstance(node.get("product_id"), str | int):
                    continue
                product_id = str(node["product_id"])
                old = found.get(product_id, SeenProduct(product_id))
                title = node.get("title")
                values = {v for v in (*_option_values(node.get("sku_options")),
                                      *_option_values(node.get("attributes"))) if v.strip()}
                found[product_id] = SeenProduct(
                    product_id=product_id,
                    title=old.title or (title if isinstance(title, str) else ""),
                    price=old.price if old.price is not None else money(node.get("price")),
                    values=old.values | frozenset(values))
    return found


def inference_calls(proxy_log: Sequence[ProxyCall]) -> list[ProxyCall]:
    """The inference calls the proxy answered successfully, in order."""
    return [c for c in sorted(proxy_log, key=lambda c: c.seq) if c.kind == "inference" and c.status == 200]


def max_completion_tokens(proxy_log: Sequence[ProxyCall]) -> int:
    return max((c.completion_tokens or 0 for c in inference_calls(proxy_log)), default=0)


def passes_gate_one(proxy_log: Sequence[ProxyCall]) -> bool:
    """Gate 1, from the verified log only: some answered inference call wrote >= 30 completion tokens."""
    return max_completion_tokens(proxy_log) >= MIN_REASONING_TOKENS
