"""The scripted shopping policies (test doubles for a hosted LLM): reading conversations in both history
styles, re-playing the plan turn by turn, citing and comparing candidates, and the sub-task model's
narrow answers, served through the real OpenAI-compatible stub."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageFunctionToolCall

from shoppingbench.agent_sdk import parse_model_output
from shoppingbench.doubles.llm_server import create_app
from shoppingbench.doubles.scripted_policies import (
    CHOOSE_MARKER,
    EXTRACT_MARKER,
    REPEAT_MARKER,
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


# --- the OpenAI tools protocol ------------------------------------------------------------------

TOOLS: list[ChatCompletionFunctionToolParam] = [
    {"type": "function", "function": {"name": "find_product", "parameters": {"type": "object"}}}]


def _native_chat(*turns: tuple[list[dict[str, Any]], list[Any]]) -> dict[str, Any]:
    """A tools-protocol request: the query, then per turn the assistant's calls and one ``role: tool``
    message per call (answered in reverse order: the id, not the position, links a result to its call)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You shop."},
                                      {"role": "user", "content": QUERY}]
    for number, (calls, results) in enumerate(turns):
        ids = [f"call_{number}_{i}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": "", "reasoning_content": "thinking", "tool_calls": [
            {"id": i, "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["parameters"])}}
            for i, c in zip(ids, calls, strict=True)]})
        messages.extend({"role": "tool", "tool_call_id": i, "name": c["name"],
                         "content": r if isinstance(r, str) else json.dumps(r)}
                        for i, c, r in reversed(list(zip(ids, calls, results, strict=True))))
    return {"model": "m", "messages": messages, "tools": TOOLS}


def _native_turn(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    reply = react_policy(body)
    assert reply.content == "" and reply.reasoning
    return reply.reasoning, [{"name": c["name"], "parameters": c["arguments"]} for c in reply.tool_calls]


def test_a_tools_request_gets_the_same_plan_as_native_tool_calls_with_reasoning() -> None:
    _, tagged_calls = _turn(_chat(("user", QUERY)))
    think, calls = _native_turn(_native_chat())
    assert calls == tagged_calls and "I will search for each item" in think
    search = calls
    _, calls = _native_turn(_native_chat((search, [HITS])))
    assert calls == [{"name": "view_product_information", "parameters": {"product_ids": "101,102,103"}}]
    view = calls
    think, calls = _native_turn(_native_chat((search, [HITS]), (view, [DETAILS])))
    assert calls == [{"name": "recommend_product", "parameters": {"product_ids": "102"}},
                     {"name": "terminate", "parameters": {"status": "success"}}]
    assert "102 'Insulated Water Bottle 750ml' (price 479, shop 7; color_family: silver" in think


def test_tool_results_are_linked_by_id_and_cut_lists_keep_their_complete_entries() -> None:
    query = "Find shops offering a silver water bottle and a blue lunch box."
    searches = [{"name": "find_product", "parameters": {"q": "silver water bottle"}},
                {"name": "find_product", "parameters": {"q": "blue lunch box"}}]
    bottles = [_hit("201", "Water Bottle", 100.0, "1"), _hit("202", "Water Bottle", 90.0, "1")]
    cut = json.dumps(bottles)[:-40] + "..."  # as an agent cuts a long result: the second entry is lost
    body = _native_chat((searches, [cut, "Error: the proxy is down"]))
    body["messages"][1]["content"] = query
    first, second = Conversation.read(body).calls
    assert first.call == searches[0] and first.answered and first.result == bottles[:1]
    assert second.call == searches[1] and second.result == "Error: the proxy is down"


def test_the_served_stub_answers_a_tools_request_with_native_tool_calls() -> None:
    with running_server(create_app(shopping_policy)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": QUERY}],
                                                tools=TOOLS)
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    calls = [c for c in choice.message.tool_calls or []
             if isinstance(c, ChatCompletionMessageFunctionToolCall)]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("find_product", {"q": "insulated water bottle silver", "price": "-500", "service": "freeShipping"})]
    assert (choice.message.model_extra or {})["reasoning_content"].startswith("The shopper asks for 1 item")


def test_the_repeat_marker_gets_the_last_user_message_word_for_word() -> None:
    text = 'Product 7001 costs 249 and is cheaper than 7002. <tool_call>[{"name": "terminate"}]</tool_call>'
    body = {"messages": [{"role": "system", "content": f"{REPEAT_MARKER}\nRepeat the user's message."},
                         {"role": "user", "content": "Looking for a phone case."},
                         {"role": "user", "content": [{"type": "text", "text": text}]}]}
    assert shopping_policy(body).content == text
    assert shopping_policy({"messages": [{"role": "system", "content": REPEAT_MARKER}]}).content == ""
