"""Reading the agent's answer and ending out of untrusted dialogue steps (SPEC 2).

The steps' shape is the agent contract of :mod:`shoppingbench.agent_sdk.steps`. They come from miner
code: anything may be missing, of the wrong type or not a dict at all. Every accessor here returns
"nothing" for such junk instead of raising, so one bad step never crashes the scorer; it just
contributes no answer. Where the reference arena's own scoring raises on junk and so fails the
problem, :func:`production_scorer_fails` says so, and the production profile fails the attempt.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


def as_steps(steps: object) -> Sequence[object]:
    """The steps as a sequence; anything that is not a list or tuple is no steps at all."""
    return steps if isinstance(steps, list | tuple) else ()


def _call_entries(step: object) -> list[object]:
    """The list at ``completion.message.tool_call`` of one step, whatever its entries are."""
    if not isinstance(step, dict):
        return []
    completion = step.get("completion")
    message = completion.get("message") if isinstance(completion, dict) else None
    calls = message.get("tool_call") if isinstance(message, dict) else None
    return calls if isinstance(calls, list) else []


def tool_calls(step: object) -> list[dict[str, Any]]:
    """The dict-shaped entries of ``completion.message.tool_call`` of one step."""
    return [call for call in _call_entries(step) if isinstance(call, dict)]


def _production_calls(step: object) -> Iterator[dict[str, Any]]:
    """The calls of one step that the reference arena's ``ProblemScorer._extract_recommended_product``
    reads: in order, up to the first it cannot read (not an object, no ``name``, or a
    ``recommend_product`` whose ``parameters`` is missing or not an object). There it raises, and its
    handler skips the rest of the step, so a later answer in the same step never counts."""
    for call in _call_entries(step):
        if not isinstance(call, dict) or "name" not in call:
            return
        if call["name"] == "recommend_product" and not isinstance(call.get("parameters"), dict):
            return
        yield call


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
    whatever it holds). With ``production``, a call the reference cannot read (no ``name``, or
    ``parameters`` not an object) ends its step instead: it and the step's later calls answer nothing
    and overwrite nothing. Stripping and de-duplication follow SPEC 2 and the reference arena. An empty
    entry (``"a,,c"``) stays as ``""``, a skipped position, so that ``c`` still pairs with the third
    target as in the original ``eval_shop``/``eval_voucher`` (``split(",")`` keeps empties); only
    real ids are de-duplicated, and trailing empties carry no position worth keeping.
    """
    last: list[str] = []
    for step in as_steps(steps):
        for call in _production_calls(step) if production else tool_calls(step):
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


def production_scorer_fails(steps: object) -> bool:
    """The reference arena's production scoring raises on this dialogue, and so fails the problem.

    The exception leaves the problem without a score, which its validator counts as failed
    (``subnet/validator/scoring_pool.py``, ``_score_problem``). It raises on a first step that is not an
    object (``dialogue[0].get("extra_info")``), and on a last step its ``length_reward`` cannot read: it
    indexes ``steps[-1]["completion"]["message"]`` and, when that message holds a ``tool_call``, every
    entry's ``name``. So a last step that is not an object, whose ``completion`` is not an object or has
    no ``message``, whose message is a truthy number or a string or list holding ``"tool_call"``, or whose
    ``tool_call`` is not a list or has an entry that is not an object with a ``name``. An empty dialogue
    is read (it scores 0).
    """
    sequence = as_steps(steps)
    if not sequence:
        return False
    first, last = sequence[0], sequence[-1]
    completion = last.get("completion") if isinstance(last, dict) else None
    if not isinstance(first, dict) or not isinstance(completion, dict) or "message" not in completion:
        return True
    message = completion["message"]
    if not message:
        return False
    if isinstance(message, str | list):
        return "tool_call" in message  # then indexed by a string: a TypeError
    if not isinstance(message, dict):
        return True  # ``in`` on a number is a TypeError
    calls = message.get("tool_call")
    if not calls:
        return False
    return not isinstance(calls, list) or any(not isinstance(c, dict) or "name" not in c for c in calls)
