"""A hostile no-LLM parser of the generator's wording: the agent a miner who read the writer would write.

It is the validity benchmark's probe (``benchmarks.validity``): if it does much better on generated
problems than on real ones, race scores measure clause parsing, not shopping. It splits a query into
item clauses at the writer's connectors, reads each clause's price phrase, services and stated values,
searches ``find_product`` with the rest as keywords and the price and services as filters, then checks
candidates' sku options and attributes with ``view_product_information`` and keeps the one that carries
most stated values (a shop problem: the first shop with a match for every item, searched shop by shop;
a voucher problem: the cheaper of equal matches). Tuned only on problems generated over the bundled
sample world, never on the calibration set. A standalone agent file: the standard library and the
agent SDK only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from shoppingbench.agent_sdk import ProxyClient, create_dialogue_step, generate_tool_call_id

VIEWED = 10
SHOPS_TRIED = 6
_NUMBER = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_MONEY = r"(?:php\s*|₱\s*|p\s*)?"
_UNIT = r"\s*(?:php|pesos?|peso)?"
_PRICES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"\b(?:between|from|in the range(?: of)?|range of)\s+{_MONEY}{_NUMBER}{_UNIT}"
                rf"\s*(?:and|to|-)\s*{_MONEY}{_NUMBER}{_UNIT}"), "between"),
    (re.compile(rf"{_MONEY}{_NUMBER}{_UNIT}\s*(?:-|to)\s*{_MONEY}{_NUMBER}{_UNIT}"), "between"),
    (re.compile(rf"\b(?:under|below|less than|no more than|at most|not more than|cheaper than|"
                rf"max(?:imum)?|up to|within|no higher than|not over|not exceeding|tops)\s+"
                rf"{_MONEY}{_NUMBER}{_UNIT}"), "high"),
    (re.compile(rf"\b(?:over|above|(?<!no )more than|greater than|at least|exceeding|min(?:imum)?|"
                rf"starting (?:at|from)|higher than|upwards of|north of)\s+{_MONEY}{_NUMBER}{_UNIT}"), "low"),
)
_SERVICES: dict[str, tuple[str, ...]] = {
    "freeShipping": ("free shipping", "free delivery", "ships free", "shipping is free", "delivered free",
                     "no shipping fee", "free shipping fee"),
    "official": ("official store", "official shop", "lazmall", "laz mall", "official seller",
                 "authentic store", "official brand"),
    "COD": ("cash on delivery", "cod", "pay on delivery", "pay upon delivery", "pay when it arrives",
            "payment on delivery"),
    "flashsale": ("flash sale", "lazflash", "flash deal", "flash deals", "on sale right now"),
}
_SPLIT = re.compile(
    r"(?:(?<=[.!?])\s+(?=[A-Z])|;|\n+|\b(?:also|additionally|plus|lastly|finally|next|then|besides|"
    r"first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|and also|as well as|along with|"
    r"together with)\b,?|"
    r",?\s+and\s+(?=(?:a|an|some|one)\s)|,\s+(?=(?:a|an)\s))",
    re.IGNORECASE,
)
_FILLER = frozenset({
    "i", "im", "i'm", "am", "looking", "look", "search", "searching", "find", "finding", "need", "needs",
    "want", "wants", "would", "like", "show", "me", "please", "can", "could", "you", "help", "get", "a",
    "an", "the", "some", "that", "which", "is", "are", "with", "and", "in", "of", "to", "from", "it",
    "its", "my", "shop", "shops", "store", "stores", "sell", "sells", "selling", "offer", "offers",
    "items", "item", "products", "product", "these", "those", "all", "also", "both", "priced", "price",
    "prices", "cost", "costs", "costing", "pesos", "peso", "php", "budget", "only", "available", "has",
    "have", "one", "any", "good", "option", "options", "for", "something", "by", "on", "at", "or",
    "should", "must", "be", "comes", "come", "while", "where", "whose", "made", "it's", "each", "them",
    "they", "same", "seller", "just", "after", "ideally", "preferably", "really", "kind", "sort", "type",
})


Scored = list[tuple[float, dict[str, Any]]]


@dataclass
class Clause:
    """One requested item as the writer's wording gives it away."""

    text: str
    keywords: list[str]
    price: str | None = None
    services: list[str] = field(default_factory=list)


def _amount(text: str) -> float:
    return float(text.replace(",", ""))


def price_filter(text: str) -> tuple[str | None, str]:
    """The clause's price bound as a ``find_product`` filter, and the clause without the phrase."""
    lowered = text.lower()
    for pattern, kind in _PRICES:
        match = pattern.search(lowered)
        if match is None:
            continue
        rest = lowered[:match.start()] + " " + lowered[match.end():]
        if kind == "between":
            low, high = sorted((_amount(match.group(1)), _amount(match.group(2))))
            return f"{low:g}-{high:g}", rest
        bound = _amount(match.group(1))
        return (f"{bound:g}-" if kind == "low" else f"-{bound:g}"), rest
    return None, lowered


def services_of(text: str) -> tuple[list[str], str]:
    """The services a clause asks for, and the clause without their phrases."""
    found: list[str] = []
    for name, phrases in _SERVICES.items():
        for phrase in sorted(phrases, key=len, reverse=True):
            pattern = rf"\b{re.escape(phrase)}\b"
            if re.search(pattern, text):
                if name not in found:
                    found.append(name)
                text = re.sub(pattern, " ", text)
    return found, text


def parse_clause(text: str) -> Clause:
    price, rest = price_filter(text)
    services, rest = services_of(rest)
    keywords = [w for w in re.findall(r"[a-z0-9][a-z0-9'.-]*", rest) if (w not in _FILLER and not w.isdigit())
                or (w.isdigit() and len(w) <= 4 and price is None)]
    return Clause(text=text, keywords=keywords, price=price, services=services)


def split_query(query: str) -> tuple[list[Clause], str]:
    """The item clauses of a query and its voucher block (empty when it has none)."""
    wish, _, voucher = query.partition("My budget")
    clauses = [parse_clause(part.strip(" .,:")) for part in _SPLIT.split(wish) if part and part.strip(" .,:")]
    items = [c for c in clauses if c.keywords]
    return items or [parse_clause(wish)], voucher


def budget_of(voucher_block: str) -> float | None:
    match = re.search(r"`(\d+(?:\.\d+)?)`", voucher_block)
    return float(match.group(1)) if match else None


def match_score(clause: Clause, detail: dict[str, Any], title: str) -> float:
    """Stated words found in the candidate's best sku option and attributes (title words count half)."""
    attributes = " ".join(str(v).lower() for values in (detail.get("attributes") or {}).values()
                          for v in values)
    options = [" ".join(str(v).lower() for v in option.values())
               for option in (detail.get("sku_options") or {}).values()] or [""]
    best = 0.0
    for option in options:
        haystack = f" {option} {attributes} "
        score = sum(1.0 for w in set(clause.keywords) if f" {w} " in haystack or f"{w} " in haystack)
        score += sum(0.5 for w in set(clause.keywords) if w in title.lower())
        best = max(best, score)
    return best


class _Dialogue:
    """The attempt's steps; every tool call goes through the proxy."""

    def __init__(self, query: str, client: ProxyClient) -> None:
        self.query = query
        self.client = client
        self.steps: list[dict[str, Any]] = []

    def call(self, think: str, name: str, parameters: dict[str, Any]) -> Any:
        result: Any = None
        if name == "find_product":
            result = self.client.find_product(**parameters)
        elif name == "view_product_information":
            result = self.client.view_product_information(parameters["product_ids"])
        call = {"name": name, "parameters": parameters,
                "tool_call_id": generate_tool_call_id(name, parameters), "result": result}
        self.steps.append(create_dialogue_step(think, [call], None, self.query, len(self.steps)))
        return result


def candidates(dialogue: _Dialogue, clause: Clause, shop_id: str | None = None) -> Scored:
    """The clause's search hits, best match first (ties: search rank)."""
    params: dict[str, Any] = {"q": " ".join(clause.keywords)}
    if clause.price:
        params["price"] = clause.price
    if clause.services:
        params["service"] = ",".join(clause.services)
    if shop_id is not None:
        params["shop_id"] = shop_id
    hits: list[dict[str, Any]] = dialogue.call(f"Searching for {params}.", "find_product", params)[:VIEWED]
    if not hits:
        return []
    details = {d["product_id"]: d for d in dialogue.call(
        "Checking sku options and attributes.", "view_product_information",
        {"product_ids": ",".join(h["product_id"] for h in hits)})}
    scored = [(match_score(clause, details.get(h["product_id"], {}), h["title"]), h) for h in hits]
    return sorted(scored, key=lambda pair: -pair[0])


def _best(scored: Scored, cheap: bool) -> dict[str, Any] | None:
    if not scored:
        return None
    top = scored[0][0]
    tied = [h for s, h in scored if s == top]
    return min(tied, key=lambda h: h["price"]) if cheap else tied[0]


def one_shop(dialogue: _Dialogue, clauses: list[Clause], first: Scored,
             cheap: bool) -> list[str]:
    """The first shop (best match of the first item first) with a match for every item."""
    shops = list(dict.fromkeys(h["shop_id"] for _, h in first))[:SHOPS_TRIED]
    for shop in shops:
        picks = [_best([(s, h) for s, h in first if h["shop_id"] == shop], cheap)]
        picks += [_best(candidates(dialogue, clause, shop), cheap) for clause in clauses[1:]]
        if all(pick is not None for pick in picks):
            return [pick["product_id"] for pick in picks if pick is not None]
    return []


def agent_main(problem: dict[str, Any], client: ProxyClient | None = None) -> list[dict[str, Any]]:
    """Solve one problem from its ``query`` alone."""
    query = str(problem.get("query", ""))
    proxy = client or ProxyClient()
    try:
        dialogue = _Dialogue(query, proxy)
        clauses, voucher = split_query(query)
        cheap = budget_of(voucher) is not None
        first = candidates(dialogue, clauses[0])
        chosen: list[str] = []
        if len(clauses) > 1 and ("shop" in query.lower() or "store" in query.lower() or not voucher):
            chosen = one_shop(dialogue, clauses, first, cheap)
        if not chosen:
            picks = [_best(first, cheap)] + [_best(candidates(dialogue, c), cheap) for c in clauses[1:]]
            chosen = [pick["product_id"] if pick else "" for pick in picks]
        dialogue.call("Recommending one product per item.", "recommend_product",
                      {"product_ids": ",".join(chosen)})
        dialogue.call("Done.", "terminate", {"status": "success" if any(chosen) else "failure"})
        return dialogue.steps
    finally:
        if client is None:
            proxy.close()
