"""An LLM ReAct agent: the model reads the request, calls the tools in tagged output, sees the results.

Each turn the model answers ``<think>..</think>`` plus ``<tool_call>[{"name", "parameters"}]</tool_call>``
and/or ``<response>..</response>``; the agent runs the calls through the proxy, records the turn as a
dialogue step and sends the results back as ``<obs>[{"tool_call_id", "name", "result"}]</obs>``, until
the model calls ``terminate`` or ``MAX_STEPS`` turns have passed. Parsing forgives sloppy output
(see ``shoppingbench.agent_sdk.parsing``) and tells the model what it could not read.

A standalone agent file (standard library and the agent SDK only): the runner runs it like a miner's.
The model is ``SANDBOX_DEFAULT_MODEL`` unless ``REACT_MODEL`` names another allowed one.
"""

from __future__ import annotations

import json
import os
from typing import Any

from shoppingbench.agent_sdk import (
    ChatReply,
    ParsedOutput,
    ProxyClient,
    ToolCallResult,
    compact_fields,
    proxy_tools,
    tool_loop,
)

MAX_STEPS = 16
MAX_EMPTY_REPLIES = 2

_proxy = ProxyClient(timeout=120.0, max_retries=3, retry_delay=1.0)

SYSTEM_PROMPT = """You are a shopping assistant on an online marketplace. You solve the user's request \
by calling tools, then recommend the products that meet every stated requirement.

# Tools
1. find_product(q, page=1, shop_id=None, price=None, sort=None, service=None): lexical search, 10 \
products per page, pages 1-5. q: a few keywords (product type, brand, key attributes), never the whole \
request. price: "low-high", "low-" or "-high" (inclusive). sort: "priceasc", "pricedesc" or "order" \
(best sellers). service: comma list of "official", "freeShipping", "COD", "flashsale" (all required). \
shop_id: search within one shop. Returns product_id, shop_id, title, price, service, sold_count.
2. view_product_information(product_ids): comma-separated ids; returns each product's descriptions, \
sku_options and attributes. Check colours, sizes, materials, brands and other options here.
3. recommend_product(product_ids): your answer, comma-separated ids in the order the user listed the \
items. Requests for one shop need every product from the same shop; voucher requests need the total \
price, after the voucher, within the budget.
4. terminate(status): ends the dialogue, "success" or "failure". Recommend before you terminate.

# How to work
- Search with short keyword queries and the stated price and service filters; view the best candidates.
- Compare at least two candidates explicitly in <think>, citing product ids, prices and attributes, \
and say why one fits better.
- Tool results arrive in <obs>..</obs>; the user will not answer questions, so finish on your own.

# Output format
Always answer exactly:
<think>your reasoning</think>
<tool_call>[{"name": "tool name", "parameters": {"parameter": "value"}}]</tool_call>
You may add <response>text for the user</response> after the tool call."""


TOOLS = proxy_tools(_proxy)
"""This agent's own tool table (not the process-wide registry, which other agents' modules also fill)."""


def _observation(results: list[ToolCallResult], problems: list[str]) -> str:
    entries = [{"tool_call_id": r["tool_call_id"], "name": r["name"], "result": compact_fields(r["result"])}
               for r in results]
    text = f"<obs>{json.dumps(entries, ensure_ascii=False, default=str)}</obs>"
    if problems:
        text += "\nYour last answer had problems: " + "; ".join(problems)
    if not results:
        text += ("\nNo tool was called. The user cannot reply: continue with tool calls and finish with "
                 "recommend_product and terminate.")
    return text


def _keeps(parsed: ParsedOutput) -> bool:
    return bool(parsed.think or parsed.tool_calls or parsed.response)


def _follow_up(parsed: ParsedOutput, results: list[ToolCallResult], reply: ChatReply,
               step: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": reply.content or step["completion"]["content"]},
            {"role": "user", "content": _observation(results, parsed.problems)}]


def agent_main(problem: dict[str, Any]) -> list[dict[str, Any]]:
    """Solve one problem; ``problem`` carries ``query`` (and never the reward)."""
    query = str(problem.get("query", ""))
    model = os.environ.get("REACT_MODEL") or None
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": query}]
    return tool_loop(query, messages, ask=lambda sent: _proxy.chat(sent, model=model, temperature=0.0),
                     tools=TOOLS, follow_up=_follow_up, keeps=_keeps, max_steps=MAX_STEPS,
                     max_empty_replies=MAX_EMPTY_REPLIES)
