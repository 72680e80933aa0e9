"""Reading the agent's answer and ending out of untrusted dialogue steps (SPEC 2).

The steps' shape is the agent contract of :mod:`shoppingbench.agent_sdk.steps`. They come from miner
code: anything may be missing, of the wrong type or not a dict at all. Every accessor here returns
"nothing" for such junk instead of raising, so one bad step never crashes the scorer; it just
contributes no answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def as_steps(steps: object) -> Sequence[object]:
    """The steps as a sequence; anything that is not a list or tuple is no steps at all."""
    return steps if isinstance(steps, list | tuple) else ()


def tool_calls(step: object) -> list[dict[str, Any]]:
    """The dict-shaped entries of ``completion.message.tool_call`` of one step."""
    if not isinstance(step, dict):
        return []
    completion = step.get("completion")
    message = completion.get("message") if isinstance(completion, dict) else None
    calls = message.get("tool_call") if isinstance(message, dict) else None
    if not isinstance(calls, list):
        return []
    return [call for call in calls if isinstance(call, dict)]


def _ids_from(value: object) -> list[str] | None:
    # The contract is a comma string; lists and bare integer ids are tolerated because models emit
    # them, and ids always compare as text (SPEC 2).
    if isinstance(value, str):
        return [value]
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list):
        # One level only: a list of ids, not arbitrary nesting.
        return [text for item in value if not isinstance(item, list) for text in (_ids_from(item) or [])]
    return None


def extract_answer(steps: object, *, production: bool = False) -> list[str]:
    """The ids of the last ``recommend_product`` call: split on commas, stripped, de-duplicated in order.

    With ``production``, as the reference arena's production scorer reads it: only a string answers,
    and empty entries are dropped rather than kept as skipped positions.

    The last call counts even when its ``product_ids`` is junk: that call then answers nothing,
    exactly like the original ``extract_recommed_product`` (a later call overwrites an earlier one
    whatever it holds). Stripping and de-duplication follow SPEC 2 and the reference arena. An empty
    entry (``"a,,c"``) stays as ``""``, a skipped position, so that ``c`` still pairs with the third
    target as in the original ``eval_shop``/``eval_voucher`` (``split(",")`` keeps empties); only
    real ids are de-duplicated, and trailing empties carry no position worth keeping.
    """
    last: list[str] = []
    for step in as_steps(steps):
        for call in tool_calls(step):
            if call.get("name") == "recommend_product":
                parameters = call.get("parameters")
                raw = parameters.get("product_ids") if isinstance(parameters, dict) else None
                last = ([raw] if isinstance(raw, str) else []) if production else _ids_from(raw) or []
    answer: list[str] = []
    seen: set[str] = set()
    for part in (part.strip() for text in last for part in text.split(",")):
        if part in seen or (production and not part):
            continue
        if part:
            seen.add(part)
        answer.append(part)
    while answer and not answer[-1]:
        answer.pop()
    return answer


def length_score(steps: object) -> float:
    """``1 / number of steps`` when the last step calls ``terminate``, else 0 (original ``length_reward``)."""
    sequence = as_steps(steps)
    if not sequence:
        return 0.0
    if any(call.get("name") == "terminate" for call in tool_calls(sequence[-1])):
        return 1.0 / len(sequence)
    return 0.0
