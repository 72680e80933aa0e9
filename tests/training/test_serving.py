"""The OpenAI-compatible server over the tiny Qwen3, answering the real ``openai`` client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from shoppingbench.tools.serving import running_server
from trajectories.training.serving import LocalModel, ServingConfig, create_app

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
