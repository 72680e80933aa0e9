"""Dialogue steps: what ``agent_main`` returns, one per turn of the agent.

Shape (the agent contract): ``{"completion": {"reasoning_content", "content", "message": {"think"?,
"tool_call"?: [{name, parameters, tool_call_id, result}], "response"?}}, "extra_info": {"step",
"query", "timestamp"}}``. ``content`` holds the tagged text the format score reads:
``<think>..</think>``, ``<tool_call>[{"name", "parameters"}, ..]</tool_call>``, ``<response>..</response>``.

The signature of :func:`create_dialogue_step` is the reference arena's (``think, tool_results,
response, query, step``), so agents written for it build identical steps here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict


class ToolCallResult(TypedDict):
    """One executed tool call as a step records it (``execute_tool_call`` returns these)."""

    name: str
    parameters: dict[str, Any]
    tool_call_id: str
    result: Any


def format_content(think: str | None, tool_calls: Sequence[Mapping[str, Any]], response: str | None) -> str:
    """The tagged text of one step, in the order the format score expects.

    Empty parts are left out, as in the reference arena. Values JSON cannot encode are written as
    their ``str()`` so that a step is always renderable.
    """
    parts: list[str] = []
    if think:
        parts.append(f"<think>{think}</think>")
    if tool_calls:
        calls = [{"name": call.get("name"), "parameters": call.get("parameters", {})} for call in tool_calls]
        parts.append(f"<tool_call>{json.dumps(calls, ensure_ascii=False, default=str)}</tool_call>")
    if response:
        parts.append(f"<response>{response}</response>")
    return "\n".join(parts)


def create_dialogue_step(think: str | None = None, tool_results: Sequence[Mapping[str, Any]] = (),
                         response: str | None = None, query: str = "", step: int = 0, *,
                         reasoning_content: str = "", timestamp: float | None = None) -> dict[str, Any]:
    """Build one step as a plain JSON-able dict.

    ``tool_results`` are ``{name, parameters, tool_call_id, result}`` dicts, usually from
    :func:`~shoppingbench.agent_sdk.tools.execute_tool_call`. ``timestamp`` defaults to now (Unix
    seconds); a step without one earns only half format credit.
    """
    calls = [dict(call) for call in tool_results]
    message: dict[str, Any] = {}
    if think:
        message["think"] = think
    if calls:
        message["tool_call"] = calls
    if response:
        message["response"] = response
    return {
        "completion": {"reasoning_content": reasoning_content,
                       "content": format_content(think, calls, response), "message": message},
        "extra_info": {"step": step, "query": query,
                       "timestamp": time.time() if timestamp is None else timestamp},
    }
