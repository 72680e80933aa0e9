"""Reading a model's tagged answer (``<think>``, ``<tool_call>[..]</tool_call>``, ``<response>``) robustly.

Real models are sloppy: a missing closing tag, JSON in a code fence, one call object instead of an
array, ``arguments`` instead of ``parameters`` (or as a JSON string), trailing commas, Python
literals, several ``<tool_call>`` blocks, reasoning only in ``reasoning_content`` (or before a bare
``</think>``), or native OpenAI tool calls instead of tags. :func:`parse_model_output` accepts all of
these and lists what it had to repair or drop, so an agent can tell the model.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_TAGS = ("think", "tool_call", "response")
_FENCE = re.compile(r"^\s*```[\w-]*\s*|\s*```\s*$")
_TRAILING_COMMA = re.compile(r",\s*([\]}])")
MAX_LITERAL_CHARS = 100_000
"""Longer call text is not handed to ``ast.literal_eval``."""


@dataclass
class ParsedOutput:
    think: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Each ``{"name": str, "parameters": dict}``."""
    response: str | None = None
    problems: list[str] = field(default_factory=list)
    """What could not be read, in words a model can act on."""


def _blocks(text: str, tag: str) -> list[str]:
    """Bodies of every ``<tag>`` block; an unclosed one runs to the next known tag or the end."""
    bodies: list[str] = []
    position = 0
    opener, closer = f"<{tag}>", f"</{tag}>"
    while (start := text.find(opener, position)) != -1:
        body_start = start + len(opener)
        end = text.find(closer, body_start)
        if end == -1:
            following = [i for t in _TAGS for i in (text.find(f"<{t}>", body_start),) if i != -1]
            end = min(following, default=len(text))
            position = end
        else:
            position = end + len(closer)
        bodies.append(text[body_start:end])
    return bodies


def _load_json_value(text: str) -> Any:
    """The JSON (or Python-literal) value in ``text``, repairing the usual slips; raises ValueError."""
    cleaned = _FENCE.sub("", text.strip())
    attempts = [cleaned, _TRAILING_COMMA.sub(r"\1", cleaned)]
    for candidate in attempts:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # json recurses on nesting
            pass
    # Text around the value ("Here you go: [...]"): decode from the first bracket on.
    first = min((i for i in (cleaned.find("["), cleaned.find("{")) if i != -1), default=-1)
    if first != -1:
        try:
            return json.JSONDecoder().raw_decode(_TRAILING_COMMA.sub(r"\1", cleaned[first:]))[0]
        except (ValueError, RecursionError):
            pass
    if len(cleaned) <= MAX_LITERAL_CHARS:
        try:
            return ast.literal_eval(cleaned)  # single quotes, True/False/None
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    raise ValueError("not valid JSON")


def _arguments(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Mapping):
        return dict(value)
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            loaded = _load_json_value(value)
        except ValueError:
            return None
        return dict(loaded) if isinstance(loaded, Mapping) else None
    return None


def normalise_call(raw: Any) -> dict[str, Any] | None:
    """``{"name", "parameters"}`` from the shapes models emit, or ``None`` when there is no name."""
    if not isinstance(raw, Mapping):
        return None
    function = raw.get("function")
    if isinstance(function, Mapping):  # OpenAI shape: {"function": {"name", "arguments"}}
        raw = function
    name = raw.get("name") or raw.get("tool") or raw.get("tool_name")
    if not isinstance(name, str) or not name.strip():
        return None
    for key in ("parameters", "arguments", "args", "params", "input"):
        if key in raw:
            parameters = _arguments(raw[key])
            break
    else:
        parameters = {}
    if parameters is None:
        return None
    return {"name": name.strip(), "parameters": parameters}


def _calls_from(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def parse_model_output(content: str | None, reasoning_content: str | None = None,
                       native_tool_calls: Sequence[Any] = ()) -> ParsedOutput:
    """Think, tool calls and response of one model answer, as far as they can be read."""
    text = content or ""
    parsed = ParsedOutput()

    thinks = _blocks(text, "think")
    if thinks:
        parsed.think = "\n".join(t.strip() for t in thinks).strip()
    elif "</think>" in text:  # the chat template opened the block; the model only closed it
        parsed.think, text = (part.strip() for part in text.split("</think>", 1))
    elif reasoning_content and reasoning_content.strip():
        parsed.think = reasoning_content.replace("<think>", "").replace("</think>", "").strip()

    for body in _blocks(text, "tool_call"):
        try:
            values = _calls_from(_load_json_value(body))
        except ValueError:
            parsed.problems.append("a <tool_call> block is not a JSON array of {name, parameters} objects")
            continue
        for value in values:
            call = normalise_call(value)
            if call is None:
                parsed.problems.append(f"a tool call has no name or unreadable parameters: "
                                       f"{str(value)[:200]}")
            else:
                parsed.tool_calls.append(call)
    if not parsed.tool_calls and "<tool_call>" not in text:
        for native in native_tool_calls:
            call = normalise_call(native)
            if call is None:
                parsed.problems.append(f"a native tool call has no name or unreadable arguments: "
                                       f"{str(native)[:200]}")
            else:
                parsed.tool_calls.append(call)

    responses = _blocks(text, "response")
    if responses:
        parsed.response = "\n".join(r.strip() for r in responses).strip()
    elif not parsed.tool_calls and not any(f"<{tag}>" in text for tag in _TAGS):
        # Untagged prose is what the model wants to tell the user.
        parsed.response = text.strip() or None
    return parsed
