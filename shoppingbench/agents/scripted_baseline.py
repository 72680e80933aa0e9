"""A no-LLM scripted baseline agent: keyword search, constraint parsing by regex, best-match pick.

It is the floor every real agent should beat, and the demo's default agent when no LLM endpoint is
configured. It is a standalone agent file (the standard library and the agent SDK only), so the sandbox
runs it exactly like a miner's: ``agent_main(problem) -> list[dialogue step]``, reaching the tools only
through the proxy (``SANDBOX_PROXY_URL``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from shoppingbench.agent_sdk import ProxyClient, create_dialogue_step, generate_tool_call_id

CANDIDATES_VIEWED = 8

_SERVICE_PHRASES = {
    "freeShipping": ("free shipping", "free delivery", "ships free"),
    "official": ("official store", "official shop", "lazmall", "official"),
    "COD": ("cash on delivery", "cod", "pay on delivery"),
    "flashsale": ("flash sale", "lazflash", "flash deal"),
}
_NUMBER = r"(\d+(?:[.,]\d+)?)"
_PRICE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"(?:between|from)\s+(?:php\s*|₱)?{_NUMBER}\s*(?:php|pesos?)?\s*(?:and|to|-)\s*(?:php\s*|₱)?"
                rf"{_NUMBER}"), "between"),
    # "no more than 300" is an upper bound, although it contains "more than".
    (re.compile(rf"(?:over|above|(?<!no )more than|greater than|at least|exceeding|min(?:imum)?)\s+"
                rf"(?:php\s*|₱)?{_NUMBER}"), "low"),
    (re.compile(rf"(?:under|below|less than|no more than|at most|cheaper than|max(?:imum)?|up to)\s+"
                rf"(?:php\s*|₱)?{_NUMBER}"), "high"),
)
_SPLITTERS = re.compile(
    r"(?:\bfirst(?:ly)?,|\bsecond(?:ly)?,|\bthird(?:ly)?,|\bfourth(?:ly)?,|\blastly,|\bfinally,|\bnext,|"
    r";|\band also\b|\balong with\b|\bas well as\b|"
    # "a fan, a kettle and an iron": a comma or "and" starts a new item only before an article.
    r",?\s+and\s+(?=(?:a|an)\s)|,\s+(?=(?:a|an)\s))",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"\b(?:i'?m|i am|looking|searching|search|for|find|need|want|would|like|show|me|please|can|could|you|"
    r"help|get|a|an|the|some|that|which|is|are|with|and|in|of|to|from|it|its|my|shop|store|sells?|offers?|"
    r"items?|products?|these|those|all|also|both|priced|price|costs?|costing|pesos?|php|budget|only|"
    r"available|has|have|one|brand|color|colour|size|made|category)\b",
    re.IGNORECASE,
)


@dataclass
class Request:
    """One item the shopper asked for, as far as regexes can tell."""

    text: str
    keywords: str
    price: str | None = None
    services: list[str] = field(default_factory=list)


def _amount(text: str) -> float:
    return float(text.replace(",", ""))


def _price_filter(text: str) -> str | None:
    lowered = text.lower()
    for pattern, kind in _PRICE_PATTERNS:
        match = pattern.search(lowered)
        if match is None:
            continue
        if kind == "between":
            low, high = sorted((_amount(match.group(1)), _amount(match.group(2))))
            return f"{low:g}-{high:g}"
        return f"{_amount(match.group(1)):g}-" if kind == "low" else f"-{_amount(match.group(1)):g}"
    return None


def _services(text: str) -> list[str]:
    lowered = text.lower()
    return [name for name, phrases in _SERVICE_PHRASES.items()
            if any(re.search(rf"\b{re.escape(p)}\b", lowered) for p in phrases)]


def _keywords(text: str) -> str:
    without_prices = text.lower()
    for pattern, _ in _PRICE_PATTERNS:
        without_prices = pattern.sub(" ", without_prices)
    for phrases in _SERVICE_PHRASES.values():
        for phrase in phrases:
            without_prices = re.sub(rf"\b{re.escape(phrase)}\b", " ", without_prices)
    words = _FILLER.sub(" ", without_prices)
    return " ".join(re.findall(r"[\w'.-]+", words))


def parse_requests(query: str) -> list[Request]:
    """Split a shopper's message into item requests (the voucher rules are not items)."""
    wish = query.split("My budget", 1)[0]
    parts = [p.strip(" .,:") for p in _SPLITTERS.split(wish)]
    texts = [p for p in parts if len(_keywords(p).split()) >= 1] or [wish]
    return [Request(text=t, keywords=_keywords(t) or t, price=_price_filter(t), services=_services(t))
            for t in texts]


def _match_score(request: Request, detail: dict[str, Any], title: str) -> int:
    """How many of the request's words a candidate's title, sku values and attributes contain."""
    values = [title.lower()]
    for option in (detail.get("sku_options") or {}).values():
        values.extend(str(v).lower() for v in option.values())
    for attr_values in (detail.get("attributes") or {}).values():
        values.extend(str(v).lower() for v in attr_values)
    haystack = " ".join(values)
    return sum(1 for word in set(request.keywords.split()) if word in haystack)


class _Dialogue:
    """Accumulates the steps of one attempt and executes tool calls through the proxy."""

    def __init__(self, query: str, client: ProxyClient) -> None:
        self.query = query
        self.client = client
        self.steps: list[dict[str, Any]] = []

    def call(self, think: str, name: str, parameters: dict[str, Any]) -> Any:
        if name == "find_product":
            result: Any = self.client.find_product(**parameters)
        elif name == "view_product_information":
            result = self.client.view_product_information(parameters["product_ids"])
        else:
            result = None
        call = {"name": name, "parameters": parameters,
                "tool_call_id": generate_tool_call_id(name, parameters), "result": result}
        self.steps.append(create_dialogue_step(think, [call], None, self.query, len(self.steps)))
        return result


def _search(dialogue: _Dialogue, request: Request) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"q": request.keywords}
    if request.price:
        params["price"] = request.price
    if request.services:
        params["service"] = ",".join(request.services)
    hits: list[dict[str, Any]] = dialogue.call(
        f"Searching for '{request.keywords}' with the stated filters.", "find_product", params)
    if not hits and len(params) > 1:
        hits = dialogue.call("No hits with filters; retrying with keywords only.", "find_product",
                             {"q": request.keywords})
    return hits


def _ranked_candidates(dialogue: _Dialogue, request: Request,
                       prefer_cheap: bool) -> list[tuple[int, dict[str, Any]]]:
    hits = _search(dialogue, request)[:CANDIDATES_VIEWED]
    if not hits:
        return []
    ids = [h["product_id"] for h in hits]
    details = {d["product_id"]: d for d in dialogue.call(
        "Checking the candidates' options and attributes.", "view_product_information",
        {"product_ids": ",".join(ids)})}
    scored = [(_match_score(request, details.get(h["product_id"], {}), h["title"]), h) for h in hits]
    # Stable sort: between equally matching candidates the search rank decides, unless a budget makes
    # the cheaper one the better bet.
    if prefer_cheap:
        return sorted(scored, key=lambda pair: (-pair[0], pair[1]["price"]))
    return sorted(scored, key=lambda pair: -pair[0])


def choose_products(per_request: list[list[tuple[int, dict[str, Any]]]], same_shop: bool) -> list[str]:
    """One id per request: the best candidate, or with ``same_shop`` the best ones of the first shop
    (in search order) that has a candidate for every request."""
    if same_shop and len(per_request) > 1:
        # dict.fromkeys, not a set: tie order among shops must not depend on string hashing.
        shop_counts = Counter(shop for cands in per_request
                              for shop in dict.fromkeys(h["shop_id"] for _, h in cands))
        shared = [shop for shop, n in shop_counts.most_common() if n == len(per_request)]
        if shared:
            shop = shared[0]
            return [next(h["product_id"] for _, h in cands if h["shop_id"] == shop) for cands in per_request]
    # "" keeps the position of a request nothing was found for, so later ids still pair with their items.
    return [cands[0][1]["product_id"] if cands else "" for cands in per_request]


def agent_main(problem: dict[str, Any], client: ProxyClient | None = None) -> list[dict[str, Any]]:
    """Solve one problem; ``problem`` carries ``query`` (and never the reward)."""
    query = str(problem.get("query", ""))
    owned = client is None
    proxy = client or ProxyClient()
    try:
        dialogue = _Dialogue(query, proxy)
        requests = parse_requests(query)
        has_budget = "budget" in query.lower()
        per_request = [_ranked_candidates(dialogue, r, prefer_cheap=has_budget) for r in requests]
        wants_one_shop = "shop" in query.lower() or "same store" in query.lower()
        chosen = choose_products(per_request, same_shop=wants_one_shop)
        dialogue.call(f"Recommending the best match for each of the {len(requests)} request(s).",
                      "recommend_product", {"product_ids": ",".join(chosen)})
        status = "success" if any(chosen) else "failure"
        dialogue.call("Done.", "terminate", {"status": status})
        return dialogue.steps
    finally:
        if owned:
            proxy.close()
