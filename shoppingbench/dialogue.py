"""The dialogue step an agent returns for each turn, and how its tagged text is rendered.

Shape (the agent contract): ``{"completion": {"reasoning_content", "content", "message": {"think"?,
"tool_call"?: [{name, parameters, tool_call_id, result}], "response"?}}, "extra_info": {"step",
"query", "timestamp"}}``. ``content`` holds the tagged text the format score reads:
``<think>..</think>``, ``<tool_call>[{"name", "parameters"}, ..]</tool_call>``, ``<response>..</response>``.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    tool_call_id: str | None = None
    result: Any = None


class StepMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    think: str | None = None
    tool_call: list[ToolCall] = Field(default_factory=list)
    response: str | None = None


class Completion(BaseModel):
    model_config = ConfigDict(extra="allow")

    reasoning_content: str | None = ""
    content: str = ""
    message: StepMessage = Field(default_factory=StepMessage)


class StepInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    step: int = 0
    query: str | None = None
    timestamp: float | int | str | None = None


class DialogueStep(BaseModel):
    model_config = ConfigDict(extra="allow")

    completion: Completion
    extra_info: StepInfo = Field(default_factory=StepInfo)


def render_content(think: str | None, tool_calls: list[ToolCall], response: str | None) -> str:
    """The tagged text of one step, in the order the format score expects."""
    parts: list[str] = []
    if think is not None:
        parts.append(f"<think>{think}</think>")
    if tool_calls:
        calls = [{"name": c.name, "parameters": c.parameters} for c in tool_calls]
        parts.append(f"<tool_call>{orjson.dumps(calls).decode()}</tool_call>")
    if response is not None:
        parts.append(f"<response>{response}</response>")
    return "\n".join(parts)


def create_dialogue_step(step: int, query: str, *, think: str | None = None,
                         tool_calls: list[ToolCall] | None = None, response: str | None = None,
                         reasoning_content: str = "", timestamp: float | None = None) -> dict[str, Any]:
    """Build one step as a plain JSON-able dict (what ``agent_main`` returns)."""
    calls = tool_calls or []
    message = StepMessage(think=think, tool_call=calls, response=response)
    model = DialogueStep(
        completion=Completion(reasoning_content=reasoning_content,
                              content=render_content(think, calls, response), message=message),
        extra_info=StepInfo(step=step, query=query,
                            timestamp=time.time() if timestamp is None else timestamp),
    )
    return model.model_dump(exclude_none=True)
