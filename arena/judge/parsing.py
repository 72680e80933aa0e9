"""Reading a judge model's answer: the quality level and its explanation, from whatever came back.

Models wrap answers in ``<think>`` preambles, prose, code fences, or stop mid-JSON. The answer is
taken from outside any thinking: the last JSON object carrying a quality key, else the last
``quality: x`` pair (which also rescues truncated JSON). A value that is not one of the five levels
is no answer at all: guessing a level from 0.6 or 7 would let a confused model pick scores.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from arena.judge.verdict import allowed_quality

MAX_ANSWER_CHARS: Final = 50_000
MAX_EXPLANATION_CHARS: Final = 600
_QUALITY_KEYS: Final = ("reasoning_quality", "quality", "score", "reasoning_score")
_EXPLANATION_KEYS: Final = ("explanation", "reason", "rationale", "justification")
_THINK_BLOCK: Final = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_PAIR: Final = re.compile(
    r"[\"']?(?:reasoning[_ ]quality|reasoning[_ ]score|quality|score)[\"']?\s*[:=]\s*[\"']?(-?\d+(?:\.\d+)?)",
    re.IGNORECASE)
_PARTIAL_EXPLANATION: Final = re.compile(r"\"(?:explanation|reason|rationale)\"\s*:\s*\"((?:[^\"\\]|\\.)*)")
_DECODER: Final = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    quality: float
    explanation: str


def _outside_thinking(text: str) -> str:
    text = _THINK_BLOCK.sub(" ", text)
    lower = text.lower()
    if "</think>" in lower:  # the opening tag was in the prompt template: keep what follows the close
        return text[lower.rindex("</think>") + len("</think>"):]
    if "<think>" in lower:  # still thinking when it stopped: nothing after it is an answer
        return text[:lower.index("<think>")]
    return text


def _json_objects(text: str) -> list[dict[str, Any]]:
    objects = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            objects.append(value)
        position = text.find("{", end)
    return objects


def _find_key(value: Any, keys: tuple[str, ...], depth: int = 0) -> Any:
    """The first value under one of ``keys``, searching nested objects a few levels deep."""
    if not isinstance(value, dict) or depth > 3:
        return None
    for key in keys:
        if key in value:
            return value[key]
    for nested in value.values():
        found = _find_key(nested, keys, depth + 1)
        if found is not None:
            return found
    return None


def _level(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        return allowed_quality(float(raw))
    except ValueError:
        return None


def parse_answer(text: str | None) -> ParsedAnswer | None:
    """The quality level and explanation in a judge model's reply, or ``None`` when it has none."""
    if not text:
        return None
    answer = _outside_thinking(text[:MAX_ANSWER_CHARS])
    for candidate in reversed(_json_objects(answer)):
        raw = _find_key(candidate, _QUALITY_KEYS)
        if raw is None:
            continue
        level = _level(raw)
        if level is None:
            return None
        explanation = _find_key(candidate, _EXPLANATION_KEYS)
        return ParsedAnswer(level, _explanation(explanation if isinstance(explanation, str) else answer))
    pairs = _PAIR.findall(answer)
    if not pairs:
        return None
    level = _level(pairs[-1])
    if level is None:
        return None
    partial = _PARTIAL_EXPLANATION.search(answer)
    return ParsedAnswer(level, _explanation(partial.group(1) if partial else answer))


def _explanation(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXPLANATION_CHARS else text[:MAX_EXPLANATION_CHARS] + "..."
