"""Reading a judge model's answer: the quality level and its explanation, from whatever came back.

Models wrap answers in ``<think>`` preambles, prose, code fences, or stop mid-JSON. The answer is
read from outside any thinking, and it must hold exactly one verdict: every quality value there (in
any JSON object, at any depth, and every ``quality: x`` pair, escaped quotes included, which also
rescues truncated JSON) must name the same level. An answer that gives 0.3 and then quotes an
injected ``{"reasoning_quality": 0.9}`` from the trajectory has no verdict: taking the last (or the
first) value would let text in the attempt choose its own score. A value that is not one of the five
levels is no answer at all either: guessing a level from 0.6 or 7 would let a confused model pick
scores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from arena.judge.verdict import allowed_quality

MAX_ANSWER_CHARS: Final = 50_000
MAX_EXPLANATION_CHARS: Final = 600
_QUALITY_KEYS: Final = ("reasoning_quality", "quality", "score", "reasoning_score")
_EXPLANATION_KEYS: Final = ("explanation", "reason", "rationale", "justification")
_THINK_BLOCK: Final = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_PAIR: Final = re.compile(
    r"[\\\"']*(?:reasoning[_ ]quality|reasoning[_ ]score|quality|score)[\\\"']*\s*[:=]\s*[\\\"']*"
    r"(-?\d+(?:\.\d+)?)",
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


def _quality_values(value: Any) -> Iterator[Any]:
    """Every value under a quality key in ``value`` and in the objects and lists nested in it."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, list):
            pending.extend(current)
        elif isinstance(current, dict):
            for key, nested in current.items():
                if key in _QUALITY_KEYS:
                    yield nested
                else:
                    pending.append(nested)


def _level(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        return allowed_quality(float(raw))
    except ValueError:
        return None


def _single_level(raw_values: list[Any]) -> float | None:
    """The level when every value names the same valid one; ``None`` for none, conflicting or invalid."""
    levels = {_level(raw) for raw in raw_values}
    return levels.pop() if len(levels) == 1 else None


def parse_answer(text: str | None) -> ParsedAnswer | None:
    """The one quality level and explanation in a judge model's reply, or ``None`` when it has none or
    more than one."""
    if not text:
        return None
    answer = _outside_thinking(text[:MAX_ANSWER_CHARS])
    verdicts = [found for found in _json_objects(answer) if _find_key(found, _QUALITY_KEYS) is not None]
    level = _single_level([*(raw for v in verdicts for raw in _quality_values(v)), *_PAIR.findall(answer)])
    if level is None:
        return None
    explanations = [e for v in verdicts if isinstance(e := _find_key(v, _EXPLANATION_KEYS), str)]
    partial = _PARTIAL_EXPLANATION.search(answer)
    explanation = explanations[0] if explanations else partial.group(1) if partial else answer
    return ParsedAnswer(level, _explanation(explanation))


def _explanation(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EXPLANATION_CHARS else text[:MAX_EXPLANATION_CHARS] + "..."
