"""A "sub-task" agent: Python drives the tool loop, the LLM only lists items and picks among candidates.

This is the shape that dominated the reference arena's firehose (SPEC 6): the model never decides
which tool to call. One short call lists the requested items (``keywords | price | services`` per
line); then, per item, Python searches with those filters, views the top hits and asks the model for
the id of the best candidate; for a one-shop request it looks inside the first item's shop for the
rest. The dialogue it returns is well formed, but its tool calls never appear in a model completion,
which is exactly what the structural filter must recognise and reject.

A standalone agent file (standard library and the agent SDK only): the runner runs it like a miner's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from shoppingbench.agent_sdk import ProxyClient, ProxyError, create_dialogue_step, generate_tool_call_id

CANDIDATES_SHOWN = 5

EXTRACT_PROMPT = """TASK: EXTRACT_ITEMS
List every product the shopper wants, one line per product, in the order they are mentioned:
search keywords | price range as low-high, low- or -high, or none | services (official, freeShipping, \
COD, flashsale) comma-separated, or none
Answer with the lines only."""

CHOOSE_PROMPT = """TASK: CHOOSE_CANDIDATE
Pick the candidate that best matches the wanted product. Answer with its product id only."""

_proxy = ProxyClient(timeout=60.0, max_retries=3, retry_delay=1.0)
_PRICE = re.compile(r"^\d*(?:\.\d+)?-\d*(?:\.\d+)?$")
_SERVICES = ("official", "freeShipping", "COD", "flashsale")


@dataclass
class Item:
    keywords: str
    price: str | None
    services: str | None


def read_items(answer: str, query: str) -> list[Item]:
    """The model's item lines; the whole query as one item when nothing usable came back."""
    items = []
    for line in answer.splitlines():
        parts = [part.strip() for part in line.strip(" -*").split("|")]
        if not parts[0]:
            continue
        price = parts[1] if len(parts) > 1 and _PRICE.match(parts[1]) and parts[1] != "-" else None
        wanted = [s for s in (parts[2].split(",") if len(parts) > 2 else []) if s.strip() in _SERVICES]
        items.append(Item(parts[0], price, ",".join(s.strip() for s in wanted) or None))
    return items or [Item(query, None, None)]


class _Attempt:
    def __init__(self, query: str) -> None:
        self.query = query
        self.steps: list[dict[str, Any]] = []

    def tool(self, think: str, name: str, parameters: dict[str, Any]) -> Any:
        try:
            if name == "find_product":
                result: Any = _proxy.find_product(**parameters)
            elif name == "view_product_information":
                result = _proxy.view_product_information(parameters["product_ids"])
            else:
                result = f"{name} done"
        except ProxyError as exc:
            result = f"Error: {exc}"
        call = {"name": name, "parameters": parameters,
                "tool_call_id": generate_tool_call_id(name, parameters), "result": result}
        self.steps.append(create_dialogue_step(think, [call], None, self.query, len(self.steps)))
        return result

    def search(self, item: Item, shop_id: str | None = None) -> list[dict[str, Any]]:
        parameters = {k: v for k, v in {"q": item.keywords, "shop_id": shop_id, "price": item.price,
                                        "service": item.services}.items() if v is not None}
        hits = self.tool(f"Searching for '{item.keywords}'.", "find_product", parameters)
        if not (isinstance(hits, list) and hits) and (item.price or item.services):
            bare = {"q": item.keywords, **({"shop_id": shop_id} if shop_id else {})}
            hits = self.tool("Nothing passed the filters; searching by keywords only.", "find_product", bare)
        return [h for h in hits if isinstance(h, dict)][:CANDIDATES_SHOWN] if isinstance(hits, list) else []

    def choose(self, item: Item, hits: list[dict[str, Any]]) -> dict[str, Any] | None:
        """View the hits and let the model name the best; the first hit when its answer is no id."""
        if not hits:
            return None
        ids = ",".join(str(h.get("product_id")) for h in hits)
        details = self.tool("Checking the candidates' options.", "view_product_information",
                            {"product_ids": ids})
        by_id = {str(d.get("product_id")): d for d in details if isinstance(d, dict)} \
            if isinstance(details, list) else {}
        lines = [f"- {h.get('product_id')} | {h.get('title')} | price {h.get('price')} | "
                 f"shop {h.get('shop_id')} | {_values(by_id.get(str(h.get('product_id')), {}))}"
                 for h in hits]
        prompt = f"Wanted: {item.keywords}\nCandidates:\n" + "\n".join(lines)
        try:
            answer = _proxy.chat([{"role": "system", "content": CHOOSE_PROMPT},
                                  {"role": "user", "content": prompt}], max_tokens=20).content.strip()
        except ProxyError:
            answer = ""
        return next((h for h in hits if str(h.get("product_id")) == answer), hits[0])


def _values(detail: dict[str, Any]) -> str:
    values: list[str] = []
    for option in (detail.get("sku_options") or {}).values():
        if isinstance(option, dict):
            values.extend(str(v) for v in option.values())
    for attribute in (detail.get("attributes") or {}).values():
        if isinstance(attribute, list):
            values.extend(str(v) for v in attribute)
    return ", ".join(dict.fromkeys(values))


def agent_main(problem: dict[str, Any]) -> list[dict[str, Any]]:
    """Solve one problem; ``problem`` carries ``query`` and ``category`` (never the reward)."""
    query = str(problem.get("query", ""))
    attempt = _Attempt(query)
    try:
        listing = _proxy.chat([{"role": "system", "content": EXTRACT_PROMPT},
                               {"role": "user", "content": query}], max_tokens=200).content
    except ProxyError:
        listing = ""
    items = read_items(listing, query)
    picks = [attempt.choose(item, attempt.search(item)) for item in items]
    one_shop = str(problem.get("category", "")).lower() == "shop" or "same shop" in query
    if one_shop and len(items) > 1 and picks[0] is not None \
            and len({str(p.get("shop_id")) for p in picks if p is not None}) != 1:
        shop = str(picks[0].get("shop_id"))
        picks[1:] = [attempt.choose(item, attempt.search(item, shop_id=shop)) or pick
                     for item, pick in zip(items[1:], picks[1:], strict=True)]
    ids = [str(p.get("product_id")) if p is not None else "" for p in picks]
    attempt.tool("Recommending the chosen products.", "recommend_product", {"product_ids": ",".join(ids)})
    attempt.tool("Done.", "terminate", {"status": "success" if any(ids) else "failure"})
    return attempt.steps
