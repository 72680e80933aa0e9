"""The four shopping tools in the OpenAI tools protocol: schemas, system prompt, proxy-backed implementations,
and the chat messages of one executed turn.

A model trained by the worker (``trajectories.training``) sees exactly these: its training conversations
carry :data:`SYSTEM_PROMPT` and :data:`TOOL_SCHEMAS` (Qwen3's chat template renders the schemas inside
``<tools></tools>``), assistant turns with ``reasoning_content`` and ``tool_calls``, and one ``role: tool``
message per call holding :func:`tool_result_text`. An agent that prompts with the same pieces, built by
:func:`turn_messages`, shows the model at inference the text it was trained on.

Standard library and the SDK only: the sandbox mounts this package alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shoppingbench.agent_sdk.proxy_client import ProxyClient, ProxyError
from shoppingbench.agent_sdk.steps import ToolCallResult
from shoppingbench.agent_sdk.tools import execute_tool_call, generate_tool_call_id

SYSTEM_PROMPT = (
    "You are a shopping assistant on an online marketplace. Solve the user's request by calling tools, "
    "then recommend the products that meet every stated requirement with recommend_product and end with "
    "terminate. Think before each call and compare candidates by id, price and attributes."
)

MAX_TOOL_CHARS = 4000
"""Tool results longer than this are cut in what the model reads: the training side's default
(``trajectories.training.data.conversations.DataFilter.max_tool_chars``)."""

MAX_FIELD_CHARS = 400
"""Each text field of a result (a description, say) is cut to this first, so a view of four or five
products shows every one of them rather than the first description in full."""


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required}}}


_STRING = {"type": "string"}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function("find_product", "Lexical product search, 10 products per page, pages 1-5.", {
        "q": {"type": "string", "description": "A few keywords, never the whole request"},
        "page": {"type": "integer", "description": "Result page, 1-5"},
        "shop_id": {"type": "string", "description": "Search within one shop"},
        "price": {"type": "string", "description": "\"low-high\", \"low-\" or \"-high\" (inclusive)"},
        "sort": {"type": "string", "enum": ["priceasc", "pricedesc", "order"]},
        "service": {"type": "string", "description": "Comma list of official, freeShipping, COD, flashsale"},
    }, ["q"]),
    _function("view_product_information", "Descriptions, sku options and attributes of products.", {
        "product_ids": {"type": "string", "description": "Comma-separated product ids"}}, ["product_ids"]),
    _function("recommend_product", "Give the answer: product ids in the order the user listed the items.", {
        "product_ids": {"type": "string", "description": "Comma-separated product ids"}}, ["product_ids"]),
    _function("terminate", "End the dialogue.", {
        "status": {**_STRING, "enum": ["success", "failure"]}}, ["status"]),
]


def _ids(product_ids: str | Sequence[Any]) -> str:
    return product_ids if isinstance(product_ids, str) else ",".join(str(i) for i in product_ids)


def proxy_tools(proxy: ProxyClient) -> dict[str, Callable[..., Any]]:
    """The four tools as an agent's own table for ``execute_tool_call(..., tools=)``, searching through
    ``proxy``. They take what models send: ids and services as a comma string or a list."""

    def find_product(q: str, page: int = 1, shop_id: str | None = None, price: str | None = None,
                     sort: str | None = None, service: str | list[str] | None = None) -> list[dict[str, Any]]:
        services = ",".join(service) if isinstance(service, list) else service
        return proxy.find_product(str(q), page=page, shop_id=None if shop_id is None else str(shop_id),
                                  price=price, sort=sort or None, service=services or None)

    def view_product_information(product_ids: str | list[str]) -> list[dict[str, Any]]:
        return proxy.view_product_information(_ids(product_ids))

    def recommend_product(product_ids: str | list[str]) -> str:
        return f"Recommended to the user: {_ids(product_ids)}"

    def terminate(status: str = "success") -> str:
        return f"The dialogue has ended with status: {status}"

    return {tool.__name__: tool
            for tool in (find_product, view_product_information, recommend_product, terminate)}


def run_tool_call(call: Mapping[str, Any], tools: Mapping[str, Callable[..., Any]], *,
                  call_id: str | None = None) -> ToolCallResult:
    """Execute one ``{"name", "parameters"}`` call; a failure (unknown tool, wrong parameters, a search the
    proxy refused) becomes the call's result, so the model can correct itself. ``call_id`` replaces the
    derived id (which repeats when the model repeats a call, and a conversation needs unique ones)."""
    name, parameters = str(call["name"]), dict(call["parameters"])
    try:
        result = execute_tool_call(name, parameters, tools)
    except (ProxyError, TypeError, ValueError) as exc:
        result = {"name": name, "parameters": parameters,
                  "tool_call_id": generate_tool_call_id(name, parameters), "result": f"Error: {exc}"}
    if call_id is not None:
        result["tool_call_id"] = call_id
    return result


def compact_fields(value: Any, max_chars: int = MAX_FIELD_CHARS) -> Any:
    """``value`` with every string longer than ``max_chars`` (inside lists and dicts too) cut with ``...``."""
    if isinstance(value, str):
        return value if len(value) <= max_chars else value[:max_chars] + "..."
    if isinstance(value, list):
        return [compact_fields(item, max_chars) for item in value]
    if isinstance(value, dict):
        return {key: compact_fields(item, max_chars) for key, item in value.items()}
    return value


def tool_result_text(result: Any, max_chars: int = MAX_TOOL_CHARS) -> str:
    """A tool result as the model reads it: strings as they are, anything else as JSON with each text field
    cut to ``MAX_FIELD_CHARS``; then the whole cut after ``max_chars`` characters with ``...``."""
    text = result if isinstance(result, str) else json.dumps(compact_fields(result), ensure_ascii=False,
                                                             default=str)
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def turn_messages(think: str | None, results: Sequence[Mapping[str, Any]], response: str | None, *,
                  max_tool_chars: int = MAX_TOOL_CHARS) -> list[dict[str, Any]]:
    """One executed turn in the OpenAI tools protocol: the assistant message (``content`` = the response,
    the think as ``reasoning_content`` and ``reasoning``, ``tool_calls`` with ids and JSON-string
    arguments), then one ``role: tool`` message per call that has a result.

    The think goes under both names because servers differ: transformers' Qwen3 template (the training
    side) reads ``reasoning_content``, recent vLLM accepts ``reasoning`` in requests and hands it on under
    both. ``results`` are :class:`ToolCallResult` records; their ``tool_call_id`` links call and result.
    """
    assistant: dict[str, Any] = {"role": "assistant", "content": response or "",
                                 "reasoning_content": think or "", "reasoning": think or ""}
    if results:
        assistant["tool_calls"] = [{"id": r["tool_call_id"], "type": "function", "function": {
            "name": r["name"], "arguments": json.dumps(r["parameters"], ensure_ascii=False, default=str)}}
            for r in results]
    return [assistant, *({"role": "tool", "tool_call_id": r["tool_call_id"], "name": r["name"],
                          "content": tool_result_text(r["result"], max_tool_chars)}
                         for r in results if r["result"] is not None)]
