"""Hallucinated product ids: ids an attempt named (viewed or recommended) that no earlier verified search
returned. Held-out evaluation reports them per attempt; GRPO's hallucination penalty applies the same rule
per episode (:func:`count_unseen_ids`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from shoppingbench.dialogue import DialogueStep
from shoppingbench.records import ProxyCall

ID_TOOLS = frozenset({"view_product_information", "recommend_product"})
"""Tools whose ``product_ids`` must come from an earlier search."""


class Hallucinations(BaseModel):
    """Product ids an attempt named (viewed or recommended) that no earlier verified search returned."""

    steps: int = Field(ge=0, description="Dialogue steps of the attempt")
    steps_hallucinated: int = Field(ge=0, description="Steps naming at least one unseen id")
    ids_checked: int = Field(ge=0)
    ids_hallucinated: int = Field(ge=0)
    per_step: list[int] = Field(default_factory=list, description="Unseen ids named in each step")


def named_product_ids(value: Any) -> list[str]:
    """The ids a ``product_ids`` argument names, however it was sent."""
    # The tools take one id, a comma-separated string, or a list (the agent SDK accepts all three)
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if isinstance(item, str | int) and str(item).strip()]
    return []


def _parse_step(raw: Any) -> DialogueStep | None:
    try:
        return DialogueStep.model_validate(raw)
    except Exception:  # untrusted steps: malformed or absurdly nested ones simply name no ids
        return None


def _verified_searches(proxy_log: Sequence[ProxyCall]) -> Iterator[list[str]]:
    for call in sorted(proxy_log, key=lambda c: c.seq):
        if call.kind == "search" and call.path.endswith("/find_product") and call.status == 200:
            yield list(call.product_ids)


def count_unseen_ids(steps: Iterable[Sequence[tuple[str, Mapping[str, Any]]]],
                     searches: Iterator[list[str]]) -> Hallucinations:
    """The counting rule on its own: ``steps`` are each step's ``(tool name, parameters)`` calls in order, and
    every ``find_product`` call reveals the next ids of ``searches`` (what that search really returned);
    every id a ``view_product_information`` or ``recommend_product`` call names that no earlier search
    revealed counts as hallucinated. Shared by the proxy-log check below and GRPO's in-process episodes."""
    seen: set[str] = set()
    per_step: list[int] = []
    checked = 0
    for calls in steps:
        unseen = 0
        for name, parameters in calls:
            if name == "find_product":
                seen.update(next(searches, []))
            elif name in ID_TOOLS:
                ids = named_product_ids(parameters.get("product_ids"))
                checked += len(ids)
                unseen += sum(1 for product_id in ids if product_id not in seen)
        per_step.append(unseen)
    return Hallucinations(steps=len(per_step), steps_hallucinated=sum(1 for n in per_step if n),
                          ids_checked=checked, ids_hallucinated=sum(per_step), per_step=per_step)


def count_hallucinations(steps: Sequence[Any], proxy_log: Sequence[ProxyCall]) -> Hallucinations:
    """Walk the steps in order; a ``find_product`` call reveals the ids its matching verified proxy
    call returned (the n-th search of the steps is the n-th successful search in the log; the step's
    own claimed result is never trusted), and every id a ``view_product_information`` or
    ``recommend_product`` call names that was not revealed before counts as hallucinated."""
    parsed = (_parse_step(raw) for raw in steps)
    calls = ([(call.name, call.parameters) for call in step.completion.message.tool_call]
             if step is not None else [] for step in parsed)
    return count_unseen_ids(calls, _verified_searches(proxy_log))
