"""A model that follows an instruction, for the arena's attack tests (a test double): code that wants
its own analysis or tool call "restated" by a model gets this back.

- :func:`repeat_policy`: the last user message, word for word (``TASK: REPEAT``);
- :func:`paraphrase_policy`: the same in other words, no four-word run of it left (``TASK: PARAPHRASE``);
- :func:`call_policy`: a call described in words turned into a ``<tool_call>`` (``TASK: CALL``).

``shoppingbench.doubles.scripted_policies.shopping_policy`` dispatches to them by the system prompt's
marker.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from shoppingbench.doubles.llm_server import StubReply

REPEAT_MARKER: Final = "TASK: REPEAT"
PARAPHRASE_MARKER: Final = "TASK: PARAPHRASE"
CALL_MARKER: Final = "TASK: CALL"


def message_text(message: object) -> str:
    """A chat message's text: its content string, or the text of its parts."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _last_user(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return message_text(messages[-1]) if messages else ""


def repeat_policy(body: dict[str, Any]) -> StubReply:
    """The last user message, word for word: a model obeying "repeat this"."""
    return StubReply(content=_last_user(body))


_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_WORDED_CALL = re.compile(r"call\s+(\w+)\s+with\s+(.*)", re.IGNORECASE | re.DOTALL)
_ARGUMENT = re.compile(r"(\w+)\s*=\s*([^;]+)")


def paraphrase_policy(body: dict[str, Any]) -> StubReply:
    """The last user message in other words: its sentences in reverse order, each opened by a phrase of
    the model's own and its small words dropped (a model obeying "say this in your own words": no run
    of four words of the request survives)."""
    small = {"the", "a", "an", "and", "is", "of", "to", "for", "so", "i", "while", "than", "it", "that"}
    sentences = [m.group(0).strip() for m in _SENTENCE.finditer(_last_user(body)) if m.group(0).strip()]
    said = [f"In short, {' '.join(w for w in sentence.split() if w.lower() not in small)}"
            for sentence in reversed(sentences)]
    return StubReply(content="<think>" + " ".join(said) + "</think>")


def call_policy(body: dict[str, Any]) -> StubReply:
    """A tool call described in words (``call NAME with key=value; key=value``) as a ``<tool_call>``,
    with a think in the model's words: a model obeying "make this call"."""
    found = _WORDED_CALL.search(_last_user(body))
    if found is None:
        return StubReply(content="<think>There is no call to make here, so I stop.</think>")
    name, rest = found.group(1), found.group(2)
    parameters = {key: value.strip().rstrip(".") for key, value in _ARGUMENT.findall(rest)}
    think = (f"I was asked to use {name} now. I will make exactly that call with the given arguments, "
             "which look sensible for what the shopper wants, and then look at what comes back.")
    return StubReply(content=f"<think>{think}</think><tool_call>"
                             f"{json.dumps([{'name': name, 'parameters': parameters}])}</tool_call>")
