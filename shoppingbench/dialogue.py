"""Typed models of the dialogue step an agent returns for each turn, and a builder from typed tool calls.

The step's shape (the agent contract) and its builder are owned by :mod:`shoppingbench.agent_sdk.steps`,
which ships into the sandbox on its own; these pydantic models describe and validate that shape for host
code (training, rewriting, tests), and :func:`create_dialogue_step` here calls the SDK's builder for
callers that hold typed :class:`ToolCall` models.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.agent_sdk.steps import create_dialogue_step as _sdk_create_dialogue_step

__all__ = ["Completion", "DialogueStep", "StepInfo", "StepMessage", "ToolCall", "create_dialogue_step"]


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
