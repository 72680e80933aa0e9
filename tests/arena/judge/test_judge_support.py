"""Shared by the judge tests (no tests here): attempts shaped as the runner records them."""

from __future__ import annotations

from typing import Any

import orjson

from arena.judge import JudgeInput
from shoppingbench.dialogue import ToolCall, create_dialogue_step
from shoppingbench.proxy.results import digest, tool_results
from shoppingbench.records import ProxyCall

QUERY = "Looking for a silver phone case from spigen priced under 300 pesos."
HITS = [
    {"product_id": "7001", "shop_id": "11", "title": "Spigen Rugged Armor Case Matte Black", "price": 249.0,
     "service": ["COD"], "sold_count": 120},
    {"product_id": "7002", "shop_id": "12", "title": "Spigen Liquid Crystal Glitter Case", "price": 289.5,
     "service": [], "sold_count": 40},
    {"product_id": "7003", "shop_id": "13", "title": "Generic Silicone Cover Pastel", "price": 99.0,
     "service": ["freeShipping"], "sold_count": 900},
]
VIEWS = [
    {"product_id": "7001", "short_description": "", "description": "Rugged armor.",
     "sku_options": {"1": {"color_family": "silver"}, "2": {"color_family": "gunmetal"}},
     "attributes": {"brand": ["spigen"], "material": ["thermoplastic polyurethane"]}},
    {"product_id": "7002", "short_description": "", "description": "Clear glitter.",
     "sku_options": {"1": {"color_family": "silver"}}, "attributes": {"brand": ["spigen"]}},
]
FIRST_THINK = ("The shopper wants a silver Spigen phone case under 300 pesos. I will search for "
               "spigen silver phone case with a price filter and then look at the candidates.")


def inference(seq: int, completion: str, *, tokens: int = 60, reasoning: str | None = None,
              status: int = 200) -> ProxyCall:
    return ProxyCall(seq=seq, kind="inference", method="POST", path="/v1/chat/completions", status=status,
                     started_at=1_000.0 + seq, duration_ms=900.0, model="qwen3-4b",
                     completion_text=completion, reasoning_text=reasoning, completion_tokens=tokens,
                     prompt_tokens=800)


def search(seq: int, path: str, product_ids: list[str]) -> ProxyCall:
    """The proxy's entry of a search (``HITS``) or view (``VIEWS``) returning ``product_ids``."""
    answer = [item for item in (VIEWS if path.endswith("view_product_information") else HITS)
              if item["product_id"] in product_ids]
    return ProxyCall(seq=seq, kind="search", method="GET", path=path,
                     params={"q": "spigen silver phone case"}, status=200,
                     started_at=1_000.0 + seq, duration_ms=4.0, product_ids=product_ids,
                     results=tool_results(orjson.dumps(answer)), response_sha256=digest(orjson.dumps(answer)))


def steps_for(analysis: str, *, extra_think: str = "") -> list[dict[str, Any]]:
    """Three steps: search, view the two Spigen cases, recommend; ``analysis`` is step 2's think."""
    return [
        create_dialogue_step(0, QUERY, think=FIRST_THINK + extra_think, timestamp=1.0, tool_calls=[
            ToolCall(name="find_product", parameters={"q": "spigen silver phone case", "price": "-300"},
                     result=HITS)]),
        create_dialogue_step(1, QUERY, think="Let me view the two Spigen cases." + extra_think, timestamp=2.0,
                             tool_calls=[ToolCall(name="view_product_information",
                                                  parameters={"product_ids": "7001,7002"}, result=VIEWS)]),
        create_dialogue_step(2, QUERY, think=analysis + extra_think, timestamp=3.0, tool_calls=[
            ToolCall(name="recommend_product", parameters={"product_ids": "7001"}, result="ok")]),
    ]


def attempt(analysis: str, *, first_tokens: int = 60, analysis_tokens: int = 80,
            step_analysis: str | None = None, extra_think: str = "") -> JudgeInput:
    """The model's second completion is ``analysis`` (verified); the steps may report something else."""
    log = [
        inference(0, f"<think>{FIRST_THINK}</think>", tokens=first_tokens),
        search(1, "/search/find_product", ["7001", "7002", "7003"]),
        inference(2, "<think>Let me view the two Spigen cases.</think>", tokens=20),
        search(3, "/search/view_product_information", ["7001", "7002"]),
        inference(4, f"<think>{analysis}</think>", tokens=analysis_tokens),
    ]
    steps = steps_for(analysis if step_analysis is None else step_analysis, extra_think=extra_think)
    return JudgeInput(query=QUERY, proxy_log=log, steps=steps)


NO_ANALYSIS = "I am done searching, I will recommend something now and finish the task for the user."
TITLE_ONLY = "The rugged armor model looks like exactly what the shopper described, so I will pick it."
CITES_ID = "Product 7001 comes in silver and is under the budget, so I will recommend it."
COMPARES = ("7001 costs 249 and 7002 costs 289.5; both come in silver, but 7001 is cheaper and has COD, "
            "so I recommend 7001 over 7002.")
