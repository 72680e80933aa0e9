"""The OpenAI-compatible server over the tiny Qwen3, answering the real ``openai`` client, and its reading of
generated text in tool-calling requests as vLLM's hermes and qwen3 parsers read it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import torch
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam

from shoppingbench.agent_sdk import TOOL_SCHEMAS
from shoppingbench.tools.serving import running_server
from trajectories.training.serving.hf_server import LocalModel, ServingConfig, create_app, parse_generated

MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "You are a shopping assistant."},
    {"role": "user", "content": "Find me a red kettle."}]


@pytest.fixture(scope="module")
def local(tiny_model_dir: Path) -> LocalModel:
    return LocalModel.load(tiny_model_dir)


@pytest.fixture(scope="module")
def url(local: LocalModel) -> Iterator[str]:
    with running_server(create_app(local, ServingConfig(served_name="tiny", max_tokens_cap=12))) as base:
        yield base


def test_openai_client_gets_a_completion_with_usage(url: str, local: LocalModel) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    reply = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=8,
                                           temperature=0.0)
    plain = [{"role": str(m["role"]), "content": str(m.get("content"))} for m in MESSAGES]
    rendered: Any = local.tokenizer.apply_chat_template(plain, add_generation_prompt=True, tokenize=True,
                                                        return_dict=True)
    assert reply.model == "tiny" and reply.choices[0].message.role == "assistant"
    assert isinstance(reply.choices[0].message.content, str)
    assert reply.usage is not None and reply.usage.prompt_tokens == len(rendered["input_ids"])
    assert 0 < reply.usage.completion_tokens <= 8
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert [m.id for m in client.models.list()] == ["tiny"]


def test_greedy_is_deterministic_and_a_seed_repeats_a_sample(url: str) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")

    def ask(temperature: float, top_p: float = 1.0, seed: int | None = None) -> str | None:
        return client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=6, top_p=top_p,
                                              temperature=temperature, seed=seed).choices[0].message.content

    assert ask(0.0) == ask(0.0)
    assert ask(1.0, 0.9, 11) == ask(1.0, 0.9, 11)


def test_the_cap_bounds_max_tokens(url: str) -> None:
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 500, "temperature": 0.0}
    usage = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60).json()["usage"]
    assert 0 < usage["completion_tokens"] <= 12


def test_bad_requests_get_openai_style_errors(url: str) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="other", messages=MESSAGES)
    answer = httpx.post(f"{url}/v1/chat/completions",
                        json={"model": "tiny", "messages": MESSAGES, "stream": True})
    assert answer.status_code == 400 and "stream" in answer.json()["error"]["message"]
    assert httpx.post(f"{url}/v1/chat/completions", json={"messages": []}).status_code == 422
    # A role the chat template refuses is the client's error, not the server's death
    weird = httpx.post(f"{url}/v1/chat/completions", json={"messages": [{"role": "wizard", "content": "x"}]},
                       timeout=60)
    assert weird.status_code in (200, 400)
    assert httpx.get(f"{url}/v1/models").status_code == 200


def test_a_prompt_longer_than_the_context_is_refused(tiny_model_dir: Path) -> None:
    local = LocalModel.load(tiny_model_dir)
    local.model.config.max_position_embeddings = 16
    with running_server(create_app(local, ServingConfig(served_name="tiny"))) as base:
        answer = httpx.post(f"{base}/v1/chat/completions", json={"messages": MESSAGES}, timeout=60)
    assert answer.status_code == 400 and "context" in answer.json()["error"]["message"]


def test_a_directory_without_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        LocalModel.load(tmp_path)


# --- tool-calling requests: vLLM's parsers --------------------------------------------------------

SEARCH = '{"name": "find_product", "arguments": {"q": "café kettle", "price": "-500"}}'
VIEW = '{"name": "view_product_information", "arguments": {"product_ids": "11,12"}}'


def _calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in parse_generated(text).tool_calls]


def test_generated_tool_call_blocks_become_tool_calls_and_the_think_reasoning() -> None:
    text = (f"<think>\nA red kettle under 500: search, then view.\n</think>\n\n"
            f"<tool_call>\n{SEARCH}\n</tool_call>\n<tool_call>\n{VIEW}\n</tool_call>")
    parsed = parse_generated(text)
    assert parsed.reasoning_content == "\nA red kettle under 500: search, then view.\n"
    assert parsed.content == "\n\n"  # what precedes the first block, as vLLM leaves it
    assert _calls(text) == [("find_product", {"q": "café kettle", "price": "-500"}),
                            ("view_product_information", {"product_ids": "11,12"})]
    first, second = parsed.tool_calls
    assert first["type"] == "function" and first["id"].startswith("chatcmpl-tool-")
    assert first["id"] != second["id"]
    assert "café" in first["function"]["arguments"]  # not \u-escaped, as vLLM dumps arguments


def test_generated_text_without_calls_or_tags_reads_as_vllm_reads_it() -> None:
    # The template opened the think block; the model only closes it
    assert parse_generated("Compare the two.</think>\n\nThe first.") == parse_generated(
        "<think>Compare the two.</think>\n\nThe first.")
    answer = parse_generated("<think>Compare the two.</think>\n\nThe first.")
    assert (answer.reasoning_content, answer.content, answer.tool_calls) == ("Compare the two.",
                                                                             "\n\nThe first.", [])
    # No end of thinking: the generation stopped inside it, so all of it is reasoning
    unfinished = parse_generated("<think>\nstill weighing <tool_call>")
    assert (unfinished.reasoning_content, unfinished.content) == ("\nstill weighing <tool_call>", None)
    # The last block may be cut before its closing tag
    assert _calls(f"<think>x</think>\n\n<tool_call>\n{SEARCH}\n") == [
        ("find_product", {"q": "café kettle", "price": "-500"})]


@pytest.mark.parametrize("block", ['{"name": "find_product", "arguments": {"q": "kettle"',
                                   '["find_product", {"q": "kettle"}]', '{"name": 3, "arguments": {}}',
                                   '{"name": "find_product"}'],
                         ids=["cut-json", "not-an-object", "name-not-text", "no-arguments"])
def test_a_malformed_block_leaves_the_text_as_content(block: str) -> None:
    after_think = f"\n\n<tool_call>\n{SEARCH}\n</tool_call>\n<tool_call>\n{block}\n</tool_call>"
    parsed = parse_generated(f"<think>plan</think>{after_think}")
    assert (parsed.reasoning_content, parsed.content, parsed.tool_calls) == ("plan", after_think, [])


def test_a_tools_request_gets_the_parsed_message_end_to_end(url: str, local: LocalModel) -> None:
    """The tiny random model emits no tool call by itself: the server's answer must be exactly what the
    parsers make of the text greedy decoding generates for the same prompt."""
    schemas: Any = TOOL_SCHEMAS  # the OpenAI client and transformers type tool schemas each their own way
    messages: Any = MESSAGES
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    reply = client.chat.completions.create(model="tiny", messages=MESSAGES, tools=schemas, max_tokens=8,
                                           temperature=0.0)
    prompt: Any = local.tokenizer.apply_chat_template(
        messages, tools=schemas, add_generation_prompt=True, tokenize=True,
        return_dict=True, return_tensors="pt")
    with torch.inference_mode():
        output = local.model.generate(  # type: ignore[operator]
            input_ids=prompt["input_ids"], attention_mask=prompt["attention_mask"], max_new_tokens=8,
            do_sample=False, top_k=None, pad_token_id=local.tokenizer.pad_token_id)
    generated = output[0, prompt["input_ids"].shape[1]:].tolist()
    expected = parse_generated(str(local.tokenizer.decode(generated, skip_special_tokens=True)))
    stopped = local.tokenizer.eos_token_id in generated
    message = reply.choices[0].message
    assert message.content == expected.content
    assert (message.model_extra or {})["reasoning_content"] == expected.reasoning_content
    calls = [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)]
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in expected.tool_calls]
    assert reply.choices[0].finish_reason == (
        "tool_calls" if expected.tool_calls else "stop" if stopped else "length")
    assert reply.usage is not None and reply.usage.prompt_tokens == prompt["input_ids"].shape[1]


def test_an_assistant_turns_reasoning_reaches_the_template_under_either_name(url: str) -> None:
    def prompt_tokens(assistant: dict[str, Any]) -> int:
        body = {"model": "tiny", "max_tokens": 1, "tools": TOOL_SCHEMAS, "messages": [
            *MESSAGES, {"role": "assistant", "content": "", **assistant, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "find_product",
                                                              "arguments": '{"q": "red kettle"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "[]"}]}
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["usage"]["prompt_tokens"])

    think = "Search for red kettles first, then compare prices and colours."
    vllm_style = prompt_tokens({"reasoning": think})
    assert vllm_style == prompt_tokens({"reasoning_content": think}) > prompt_tokens({}) + 10
