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
    ProxyClient,
    ProxyError,
    ToolCallResult,
    create_dialogue_step,
    execute_tool_call,
    generate_tool_call_id,
    parse_model_output,
)

MAX_STEPS = 16
MAX_EMPTY_REPLIES = 2
MAX_TEXT_FIELD_CHARS = 600
"""Long descriptions are cut in what the model sees (the step keeps the full result)."""

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


def find_product(q: str, page: int = 1, shop_id: str | None = None, price: str | None = None,
                 sort: str | None = None, service: str | list[str] | None = None) -> list[dict[str, Any]]:
    services = ",".join(service) if isinstance(service, list) else service
    return _proxy.find_product(str(q), page=page, shop_id=None if shop_id is None else str(shop_id),
                               price=price, sort=sort or None, service=services or None)


def view_product_information(product_ids: str | list[str]) -> list[dict[str, Any]]:
    ids = product_ids if isinstance(product_ids, str) else ",".join(str(i) for i in product_ids)
    return _proxy.view_product_information(ids)


def recommend_product(product_ids: str | list[str]) -> str:
    ids = product_ids if isinstance(product_ids, str) else ",".join(str(i) for i in product_ids)
    return f"Recommended to the user: {ids}"


def terminate(status: str = "success") -> str:
    return f"The dialogue has ended with status: {status}"


TOOLS = {tool.__name__: tool
         for tool in (find_product, view_product_information, recommend_product, terminate)}
"""This agent's own tool table (not the process-wide registry, which other agents' modules also fill)."""


def _run(call: dict[str, Any]) -> ToolCallResult:
    """Execute one call; a failure becomes the call's result so the model can correct itself."""
    try:
        return execute_tool_call(call["name"], call["parameters"], TOOLS)
    except (ProxyError, TypeError, ValueError) as exc:
        return {"name": call["name"], "parameters": call["parameters"],
                "tool_call_id": generate_tool_call_id(call["name"], call["parameters"]),
                "result": f"Error: {exc}"}


def _compact(value: Any) -> Any:
    """``value`` with long text fields cut, for the prompt."""
    if isinstance(value, str) and len(value) > MAX_TEXT_FIELD_CHARS:
        return value[:MAX_TEXT_FIELD_CHARS] + "..."
    if isinstance(value, list):
        return [_compact(item) for item in value]
    if isinstance(value, dict):
        return {key: _compact(item) for key, item in value.items()}
    return value


def _observation(results: list[ToolCallResult], problems: list[str]) -> str:
    entries = [{"tool_call_id": r["tool_call_id"], "name": r["name"], "result": _compact(r["result"])}
               for r in results]
    text = f"<obs>{json.dumps(entries, ensure_ascii=False, default=str)}</obs>"
    if problems:
        text += "\nYour last answer had problems: " + "; ".join(problems)
    if not results:
        text += ("\nNo tool was called. The user cannot reply: continue with tool calls and finish with "
                 "recommend_product and terminate.")
    return text


def agent_main(problem: dict[str, Any]) -> list[dict[str, Any]]:
    """Solve one problem; ``problem`` carries ``query`` (and never the reward)."""
    query = str(problem.get("query", ""))
    model = os.environ.get("REACT_MODEL") or None
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": query}]
    steps: list[dict[str, Any]] = []
    empty_replies = 0
    while len(steps) < MAX_STEPS:
        try:
            reply = _proxy.chat(messages, model=model, temperature=0.0)
        except ProxyError:
            break  # the endpoint is gone or the run's budget is spent: score what we have
        parsed = parse_model_output(reply.content, reply.reasoning_content, reply.tool_calls)
        if not (parsed.think or parsed.tool_calls or parsed.response):
            empty_replies += 1
            if empty_replies > MAX_EMPTY_REPLIES:
                break
            continue
        empty_replies = 0
        results = [_run(call) for call in parsed.tool_calls]
        steps.append(create_dialogue_step(parsed.think, results, parsed.response, query, len(steps),
                                          reasoning_content=reply.reasoning_content))
        if any(r["name"] == "terminate" for r in results):
            break
        messages.append({"role": "assistant", "content": reply.content or steps[-1]["completion"]["content"]})
        messages.append({"role": "user", "content": _observation(results, parsed.problems)})
    return steps
