"""The turn loop every LLM tool agent runs: ask the model, read its answer, run its calls, record the step.

An agent supplies only its protocol: how it asks (``ask``: the messages so far -> a :class:`ChatReply`),
which answers it keeps (``keeps``), how a call's id is chosen and what it appends after an executed turn
(``follow_up``). :func:`tool_loop` does the rest the same way for every agent: it stops when ``terminate``
ran, after ``max_steps`` recorded steps, after more than ``max_empty_replies`` unusable answers in a row,
or when the proxy refuses inference (the endpoint is gone or the budget is spent), and returns the steps
recorded so far, which is what gets scored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shoppingbench.agent_sdk.parsing import ParsedOutput, parse_model_output
from shoppingbench.agent_sdk.proxy_client import ChatReply, ProxyError
from shoppingbench.agent_sdk.shopping_tools import run_tool_call
from shoppingbench.agent_sdk.steps import ToolCallResult, create_dialogue_step

Ask = Callable[[list[dict[str, Any]]], ChatReply]
FollowUp = Callable[[ParsedOutput, list[ToolCallResult], ChatReply, dict[str, Any]], list[dict[str, Any]]]
"""(the parsed answer, its executed calls, the raw reply, the recorded step) -> messages to append."""


def tool_loop(query: str, messages: list[dict[str, Any]], *, ask: Ask,
              tools: Mapping[str, Callable[..., Any]], follow_up: FollowUp,
              keeps: Callable[[ParsedOutput], bool], numbered_call_ids: bool = False, max_steps: int = 16,
              max_empty_replies: int = 2) -> list[dict[str, Any]]:
    """Run the dialogue from ``messages`` (extended in place) and return its steps. With
    ``numbered_call_ids`` the calls get ids ``call_<step>_<index>`` (unique within the dialogue, as a
    conversation in the OpenAI tools protocol needs) instead of ids derived from name and arguments."""
    steps: list[dict[str, Any]] = []
    empty_replies = 0
    while len(steps) < max_steps:
        try:
            reply = ask(messages)
        except ProxyError:
            break
        parsed = parse_model_output(reply.content, reply.reasoning_content, reply.tool_calls)
        if not keeps(parsed):
            empty_replies += 1
            if empty_replies > max_empty_replies:
                break
            continue
        empty_replies = 0
        turn = len(steps)
        results = [run_tool_call(call, tools, call_id=f"call_{turn}_{index}" if numbered_call_ids else None)
                   for index, call in enumerate(parsed.tool_calls)]
        steps.append(create_dialogue_step(parsed.think, results, parsed.response, query, turn,
                                          reasoning_content=reply.reasoning_content))
        if any(r["name"] == "terminate" for r in results):
            break
        messages.extend(follow_up(parsed, results, reply, steps[-1]))
    return steps
