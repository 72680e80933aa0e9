"""The format score: how many steps carry well-formed tagged output (SPEC 2).

The tag rules are those of the original ``rewards/prm.py::format_reward`` (think mode). By default they
apply to ``completion.content`` as SPEC 2 and the agent contract say ("the step's output"). With
``production=True`` (the ``production-strict`` profile) a step is graded as the reference arena's
production scorer (``ProblemScorer.score_problem``) grades it: its ``message`` rendered into tags (the
``content`` is not read, so the two disagreeing cannot matter), a timestamp counting only as a positive
JSON number (``true`` counts as 1; a string does not count), and a step whose message or ``extra_info``
the reference cannot read scores 0. The timestamp half credit is the reference arena's
``TIMESTAMP_MISSING_PENALTY = 0.5``.
"""

from __future__ import annotations

import json
import math
from itertools import permutations
from typing import Any, Final

import orjson

from shoppingbench.scoring.answer import as_steps

ROLES: Final = ("think", "tool_call", "response")
MISSING_TIMESTAMP_CREDIT: Final = 0.5


def _spans(content: str) -> dict[str, tuple[int, int]] | None:
    """Each present role's (open, close) positions; ``None`` if any role's tags are unbalanced."""
    spans: dict[str, tuple[int, int]] = {}
    for role in ROLES:
        opens, closes = content.count(f"<{role}>"), content.count(f"</{role}>")
        if opens == closes == 0:
            continue
        if opens != 1 or closes != 1:
            return None
        start, end = content.index(f"<{role}>"), content.index(f"</{role}>")
        if start >= end:
            return None
        spans[role] = (start, end)
    return spans


def _valid_tool_calls(body: str) -> bool:
    try:
        calls = orjson.loads(body)
    except ValueError:  # orjson.JSONDecodeError, including out-of-range numbers
        return False
    # An empty array passes, as in the original: it is a JSON array of zero well-formed calls.
    return isinstance(calls, list) and all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("parameters"), dict)
        for c in calls)


def is_well_formed(content: object) -> bool:
    """Exactly one ``<think>`` block plus one ``<tool_call>`` (a JSON array of ``{name, parameters}``)
    and/or one ``<response>``; no block opens or closes inside another. Text outside blocks is
    allowed, as in the original."""
    if not isinstance(content, str):
        return False
    spans = _spans(content)
    if spans is None or "think" not in spans or ("tool_call" not in spans and "response" not in spans):
        return False
    if "tool_call" in spans:
        start, end = spans["tool_call"]
        if not _valid_tool_calls(content[start + len("<tool_call>"):end]):
            return False
    return not any(outer[0] < inner[0] < outer[1] or outer[0] < inner[1] < outer[1]
                   for outer, inner in permutations(spans.values(), 2))


def has_timestamp(step: object) -> bool:
    """A positive finite number or a non-blank string in ``extra_info.timestamp``.

    The arena accepts numbers only; strings are accepted here because the step contract allows a
    textual timestamp (``StepInfo.timestamp``), and SPEC 2 penalises only a missing one.
    """
    info = step.get("extra_info") if isinstance(step, dict) else None
    stamp = info.get("timestamp") if isinstance(info, dict) else None
    if isinstance(stamp, bool):
        return False
    if isinstance(stamp, int):
        # No float conversion: a 400-digit JSON integer would overflow it.
        return stamp > 0
    if isinstance(stamp, float):
        return math.isfinite(stamp) and stamp > 0
    return isinstance(stamp, str) and bool(stamp.strip())


_MESSAGE_TEXT: Final = ("user", "think", "response")
_MESSAGE_LISTS: Final = ("tool_call", "obs")


def _reference_json(value: list[Any]) -> str:
    """``ujson.dumps`` as the reference renders a list: compact, ASCII-escaped, ``/`` escaped."""
    return json.dumps(value, separators=(",", ":")).replace("/", "\\/")


def rendered_message(step: object) -> str | None:
    """``completion.message`` rendered as the reference's ``Message.to_string(OUTPUT_ROLES)``; ``None``
    when the reference cannot build its ``Message`` from it (not an object, a text part that is not a
    string, a list part that is not a list of objects)."""
    completion = step.get("completion") if isinstance(step, dict) else None
    message = completion.get("message") if isinstance(completion, dict) else None
    if not isinstance(message, dict):
        return None
    if any(k in message and not isinstance(message[k], str) for k in _MESSAGE_TEXT) or any(
            k in message and not _is_object_list(message[k]) for k in _MESSAGE_LISTS):
        return None
    parts = []
    for role in ROLES:
        value = message.get(role)
        if value:
            try:
                text = value if isinstance(value, str) else _reference_json(value)
            except RecursionError:  # nesting too deep to render: the reference fails on it too
                return None
            parts.append(f"<{role}>{text}</{role}>")
    return "\n".join(parts)


def _is_object_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def has_reference_timestamp(step: dict[str, Any]) -> bool | None:
    """The reference's test: a positive JSON number (``true`` is 1); ``None`` when ``extra_info`` is
    there but not an object (the reference then skips the step)."""
    info = step.get("extra_info", {})
    if not isinstance(info, dict):
        return None
    stamp = info.get("timestamp")
    return isinstance(stamp, (int, float)) and not stamp <= 0


def _production_step_format(step: object) -> float:
    rendered = rendered_message(step)
    if rendered is None or not is_well_formed(rendered):
        return 0.0
    assert isinstance(step, dict)  # rendered_message read a message from it
    stamped = has_reference_timestamp(step)
    if stamped is None:
        return 0.0
    return 1.0 if stamped else MISSING_TIMESTAMP_CREDIT


def step_format(step: object, *, production: bool = False) -> float:
    """1 for a well-formed step, half that without a timestamp, 0 for junk."""
    if production:
        return _production_step_format(step)
    completion = step.get("completion") if isinstance(step, dict) else None
    content = completion.get("content") if isinstance(completion, dict) else None
    if not is_well_formed(content):
        return 0.0
    return 1.0 if has_timestamp(step) else MISSING_TIMESTAMP_CREDIT


def format_score(steps: object, *, production: bool = False) -> float:
    """Mean step credit; 0 for a dialogue without steps."""
    sequence = as_steps(steps)
    if not sequence:
        return 0.0
    return sum(step_format(step, production=production) for step in sequence) / len(sequence)
