"""An LLM agent speaking the OpenAI tools protocol: what the training worker's models are trained on.

Each request carries the SDK's ``SYSTEM_PROMPT`` and ``tools=TOOL_SCHEMAS``. The model's calls come back
as structured ``tool_calls`` (vLLM with a tool-call parser) or, from a server that returns raw text, as
Qwen3/hermes ``<tool_call>{"name", "arguments"}</tool_call>`` blocks in ``content``; its think as
``reasoning_content`` or a ``<think>`` block. The agent runs the calls through the proxy (a failing call's
error becomes its result), records the turn as a dialogue step, and appends the turn the way training
conversations hold it (``turn_messages``): the assistant message with the think and the ``tool_calls``,
then one ``role: tool`` message per call with the result as JSON text cut at ``MAX_TOOL_CHARS``. So the
prompt of every request renders, through Qwen3's chat template, exactly as
``trajectories.training.data.conversations.steps_to_messages`` renders the steps recorded so far.

That parity decides what cannot be said to the model: a reply with neither a readable call nor text
for the user is not sent back (a training conversation would not hold it) and is asked again, and the
agent gives up after ``MAX_EMPTY_REPLIES`` such replies in a row; calls it could not read are dropped
silently. It stops on ``terminate``, after ``MAX_STEPS`` turns, or when the proxy refuses inference
(the endpoint is gone or the budget is spent).

A standalone agent file (standard library and the agent SDK only): the runner runs it like a miner's.
The model is ``SANDBOX_DEFAULT_MODEL`` unless ``TOOL_CALLING_MODEL`` names another allowed one.
"""

from __future__ import annotations

import os
from typing import Any

from shoppingbench.agent_sdk import (
    SYSTEM_PROMPT,
    TOOL_SCHEMAS,
    ChatReply,
    ParsedOutput,
    ProxyClient,
    ToolCallResult,
    proxy_tools,
    tool_loop,
    turn_messages,
)

MAX_STEPS = 16
MAX_EMPTY_REPLIES = 2

_proxy = ProxyClient(timeout=120.0, max_retries=3, retry_delay=1.0)

TOOLS = proxy_tools(_proxy)
"""This agent's own tool table (not the process-wide registry, which other agents' modules also fill)."""


def _keeps(parsed: ParsedOutput) -> bool:
    # A think-only answer is never sent back: no training conversation holds such a turn
    return bool(parsed.tool_calls or parsed.response)


def _follow_up(parsed: ParsedOutput, results: list[ToolCallResult], _reply: ChatReply,
               _step: dict[str, Any]) -> list[dict[str, Any]]:
    return turn_messages(parsed.think, results, parsed.response)


def agent_main(problem: dict[str, Any]) -> list[dict[str, Any]]:
    """Solve one problem; ``problem`` carries ``query`` (and never the reward)."""
    query = str(problem.get("query", ""))
    model = os.environ.get("TOOL_CALLING_MODEL") or None
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": query}]
    return tool_loop(query, messages, ask=lambda sent: _proxy.chat(sent, model=model, temperature=0.0,
                                                                   tools=TOOL_SCHEMAS),
                     tools=TOOLS, follow_up=_follow_up, keeps=_keeps, numbered_call_ids=True,
                     max_steps=MAX_STEPS, max_empty_replies=MAX_EMPTY_REPLIES)
