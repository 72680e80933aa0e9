"""Does a chat-format conversation survive the tokenizer's chat template? (``benchmarks.dumps``, the tests.)

A conversation round-trips when ``apply_chat_template(messages, tools=tools)`` renders it without error,
the rendering offers every tool schema's name, and the ``<tool_call>`` blocks of each rendered assistant
turn, read back by the arena's own parser (:func:`shoppingbench.agent_sdk.parsing.parse_model_output`),
are exactly that turn's ``tool_calls``: the same names and the same arguments, in order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jinja2 import TemplateError
from transformers import PreTrainedTokenizerBase

from shoppingbench.agent_sdk.parsing import parse_model_output

ASSISTANT_START = "<|im_start|>assistant\n"
TURN_END = "<|im_end|>"


def expected_calls(messages: Sequence[dict[str, Any]]) -> list[list[tuple[str, Any]]]:
    """Per assistant turn, its calls as ``(name, arguments as a JSON value)``."""
    turns = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        calls = []
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            calls.append((call["function"]["name"],
                          json.loads(arguments) if isinstance(arguments, str) else arguments))
        turns.append(calls)
    return turns


def rendered_calls(text: str) -> list[list[tuple[str, Any]]] | None:
    """Per rendered assistant turn, the calls its ``<tool_call>`` blocks hold; None if one is unreadable."""
    turns = []
    for segment in text.split(ASSISTANT_START)[1:]:
        parsed = parse_model_output(segment.split(TURN_END, 1)[0])
        if parsed.problems:
            return None
        turns.append([(call["name"], call["parameters"]) for call in parsed.tool_calls])
    return turns


def round_trips(tokenizer: PreTrainedTokenizerBase, messages: Sequence[dict[str, Any]],
                tools: Sequence[dict[str, Any]]) -> bool:
    """Whether ``messages`` render with ``tools`` and parse back to the same tool calls."""
    turns = [{key: value for key, value in message.items() if value is not None} for message in messages]
    try:
        expected = expected_calls(turns)
        text = tokenizer.apply_chat_template(turns, tools=list(tools), tokenize=False)
    except (TemplateError, TypeError, ValueError, KeyError):
        return False
    if not isinstance(text, str):
        return False
    names = [tool.get("function", tool).get("name") for tool in tools]
    if not all(isinstance(name, str) and f'"{name}"' in text for name in names):
        return False
    return rendered_calls(text) == expected
