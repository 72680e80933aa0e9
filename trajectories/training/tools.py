"""The tool schemas and system prompt a trained model sees, in the OpenAI function format.

Qwen3's chat template renders ``tools`` inside ``<tools></tools>`` in the system turn and expects calls
as ``<tool_call>{"name", "arguments"}</tool_call>``; the same schemas serve training and evaluation,
whatever prompt the arena agent that produced a trajectory used.
"""

from __future__ import annotations

from typing import Any

SYSTEM_PROMPT = (
    "You are a shopping assistant on an online marketplace. Solve the user's request by calling tools, "
    "then recommend the products that meet every stated requirement with recommend_product and end with "
    "terminate. Think before each call and compare candidates by id, price and attributes."
)


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
