"""The dialogue step an agent returns for each turn: its typed model for host code, and a builder.

Shape (the agent contract): ``{"completion": {"reasoning_content", "content", "message": {"think"?,
"tool_call"?: [{name, parameters, tool_call_id, result}], "response"?}}, "extra_info": {"step",
"query", "timestamp"}}``. ``content`` holds the tagged text the format score reads:
``<think>..</think>``, ``<tool_call>[{"name", "parameters"}, ..]</tool_call>``, ``<response>..</response>``.

Agents build steps with the SDK (``shoppingbench.agent_sdk.create_dialogue_step``, the reference
arena's signature); the helpers here are the same code for host-side callers that hold typed
:class:`ToolCall` models.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.agent_sdk.steps import create_dialogue_step as _sdk_create_dialogue_step
from shoppingbench.agent_sdk.steps import format_content

__all__ = ["Completion", "DialogueStep", "StepInfo", "StepMessage", "ToolCall", "create_dialogue_step",
           "format_content"]


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


def create_dialogue_step(step: int, query: str, *, think: str | None = None,
                         tool_calls: list[ToolCall] | None = None, response: str | None = None,
                         reasoning_content: str = "", timestamp: float | None = None) -> dict[str, Any]:
    """One step as a plain JSON-able dict, from typed tool calls (the SDK builder does the work)."""
    calls = [call.model_dump(exclude_none=True) for call in tool_calls or []]
    return _sdk_create_dialogue_step(think, calls, response, query, step,
                                     reasoning_content=reasoning_content, timestamp=timestamp)
