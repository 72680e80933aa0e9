"""The scripted shopping policies (test doubles for a hosted LLM): reading conversations in both history
styles, re-playing the plan turn by turn, citing and comparing candidates, and the sub-task model's
narrow answers, served through the real OpenAI-compatible stub."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from shoppingbench.agent_sdk import parse_model_output
from shoppingbench.llm_stub import create_app
from shoppingbench.llm_stub.policies import (
    CHOOSE_MARKER,
    EXTRACT_MARKER,
    Conversation,
    react_policy,
    read_voucher,
    shopping_policy,
    understand,
)
from shoppingbench.tools.serving import running_server

QUERY = "Looking for an insulated water bottle in silver priced under 500 pesos with free shipping."


def _hit(pid: str, title: str, price: float, shop: str) -> dict[str, Any]:
    return {"product_id": pid, "shop_id": shop, "title": title, "price": price, "service": ["freeShipping"],
            "sold_count": 1}


def _detail(pid: str, color: str) -> dict[str, Any]:
    return {"product_id": pid, "short_description": "", "description": "",
            "sku_options": {"1": {"color_family": color}}, "attributes": {"material": ["stainless steel"]}}


HITS = [_hit("101", "Insulated Water Bottle 750ml", 459.0, "7"), _hit("102", "Insulated Water Bottle 750ml",
                                                                       479.0, "7"),
        _hit("103", "Water Jug", 99.0, "8")]
DETAILS = [_detail("101", "black"), _detail("102", "silver"), _detail("103", "blue")]


def _chat(*turns: tuple[str, str]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": "You shop."},
                                       *({"role": role, "content": text} for role, text in turns)]}


def _obs(*results: Any) -> str:
    return "<obs>" + json.dumps([{"tool_call_id": str(i), "name": "x", "result": r}
                                 for i, r in enumerate(results)]) + "</obs>"


def _turn(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    reply = react_policy(body)
    parsed = parse_model_output(reply.content)
    assert parsed.think and not parsed.problems
    return reply.content, parsed.tool_calls


def test_a_product_request_is_searched_viewed_compared_and_answered() -> None:
    first, calls = _turn(_chat(("user", QUERY)))
    assert calls == [{"name": "find_product", "parameters": {"q": "insulated water bottle silver",
                                                             "price": "-500", "service": "freeShipping"}}]
    second, calls = _turn(_chat(("user", QUERY), ("assistant", first), ("user", _obs(HITS))))
    assert calls == [{"name": "view_product_information", "parameters": {"product_ids": "101,102,103"}}]
    assert "101 'Insulated Water Bottle 750ml' at 459.0" in second
    body = _chat(("user", QUERY), ("assistant", first), ("user", _obs(HITS)), ("assistant", second),
                 ("user", _obs(DETAILS)))
    final, calls = _turn(body)
    assert calls == [{"name": "recommend_product", "parameters": {"product_ids": "102"}},
                     {"name": "terminate", "parameters": {"status": "success"}}]
    think = parse_model_output(final).think or ""
    # Cites id, price and attributes of the pick and compares it with a rival, with the reason.
    assert "102 'Insulated Water Bottle 750ml' (price 479, shop 7; color_family: silver" in think
    assert "101 'Insulated Water Bottle 750ml' (price 459) fits less well: it has only" in think
    assert react_policy(body) == react_policy(json.loads(json.dumps(body)))  # deterministic


def test_the_reference_arenas_single_message_history_reads_the_same() -> None:
    first, _ = _turn(_chat(("user", QUERY)))
    history = (f"# Dialogue Records History\n<user>{QUERY}</user>\n\n<think>x</think>\n\n"
               + first[first.index("<tool_call>"):] + "\n\n"
               + "<obs>" + json.dumps([{"tool_call_id": "a", "results": HITS}]) + "</obs>")
    conversation = Conversation.read(_chat(("user", history)))
    assert conversation.query == QUERY and conversation.calls[0].answered
    assert conversation.calls[0].result == HITS
    _, calls = _turn(_chat(("user", history)))
    assert calls[0]["name"] == "view_product_information"


def test_no_hits_with_filters_retries_with_keywords_alone() -> None:
    first, _ = _turn(_chat(("user", QUERY)))
    _, calls = _turn(_chat(("user", QUERY), ("assistant", first), ("user", _obs([]))))
    assert calls == [{"name": "find_product", "parameters": {"q": "insulated water bottle silver"}}]


def test_a_one_shop_request_looks_inside_the_first_items_shop() -> None:
    query = "Find shops offering a silver water bottle and a blue lunch box."
    first, calls = _turn(_chat(("user", query)))
    assert [c["parameters"]["q"] for c in calls] == ["silver water bottle", "blue lunch box"]
    bottles = [_hit("201", "Water Bottle", 100.0, "1")]
    boxes = [_hit("301", "Lunch Box", 50.0, "2")]
    view, calls = _turn(_chat(("user", query), ("assistant", first), ("user", _obs(bottles, boxes))))
    assert [c["parameters"]["product_ids"] for c in calls] == ["201", "301"]
    turns = [("user", query), ("assistant", first), ("user", _obs(bottles, boxes)), ("assistant", view),
             ("user", _obs([_detail("201", "silver")], [_detail("301", "blue")]))]
    scoped, calls = _turn(_chat(*turns))
    assert calls == [{"name": "find_product", "parameters": {"q": "blue lunch box", "shop_id": "1"}}]
    assert "inside its shop 1" in scoped


def test_voucher_rules_and_request_reading() -> None:
    query = ("I need a stackable drawer organizer.\n\nMy budget is only `130`, but I have a voucher with the "
             "following rules:\n1. The voucher only applies to the products from the same shop.\n2. It is "
             "valid only when the total price of the products exceeds `113`.\n3. It provides a percentage "
             "discount of `25%` with a cap of `40`.")
    voucher = read_voucher(query)
    assert voucher is not None and voucher.voucher_type == "shop" and voucher.discount == 0.25
    assert (voucher.cap, voucher.threshold, voucher.budget) == (40, 113, 130)
    assert read_voucher("no rules here") is None
    assert [r.keywords for r in understand(query)] == ["stackable drawer organizer"]
    (item,) = understand("Any good options for a pair of sunglasses that ships for free in the 100 to 250.5 "
                         "pesos range?")
    assert (item.keywords, item.price, item.services) == ("sunglasses", "100-250.5", ["freeShipping"])


def test_sub_task_answers_through_the_served_stub() -> None:
    choose = {"model": "m", "messages": [
        {"role": "system", "content": f"{CHOOSE_MARKER}\nAnswer with the id."},
        {"role": "user", "content": "Wanted: silver water bottle\nCandidates:\n- 11 | Water Bottle | black\n"
                                    "- 12 | Water Bottle | silver\n- 13 | Mug | silver"}]}
    extract = {"model": "m", "messages": [
        {"role": "system", "content": EXTRACT_MARKER},
        {"role": "user", "content": "Looking for a shop that sells a desk fan made of plastic priced under "
                                    "300 pesos and a kettle with cash on delivery."}]}
    with running_server(create_app(shopping_policy)) as url:
        answers = [httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10).json()
                   for body in (choose, extract, _chat(("user", QUERY)))]
    contents = [a["choices"][0]["message"]["content"] for a in answers]
    assert contents[0] == "12"
    assert contents[1] == "desk fan plastic | -300 | none\nkettle | none | COD"
    assert contents[2].startswith("<think>")
    assert answers[0]["usage"]["completion_tokens"] < 30 < answers[2]["usage"]["completion_tokens"]


@pytest.mark.parametrize("messages", [[], [{"role": "user", "content": ""}], "junk",
                                      [{"role": "user", "content": [{"type": "text", "text": QUERY}]}]])
def test_odd_conversations_still_get_a_turn(messages: Any) -> None:
    reply = shopping_policy({"model": "m", "messages": messages})
    assert parse_model_output(reply.content).tool_calls
