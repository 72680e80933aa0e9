"""The OpenAI-compatible test double answers the real ``openai`` client exactly as a server would."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from shoppingbench.doubles.llm_server import StubReply, count_tokens, create_app
from shoppingbench.tools.serving import running_server


def _echo(body: dict[str, Any]) -> StubReply:
    last = body["messages"][-1]["content"]
    if last == "fail":
        return StubReply(content="overloaded", status=429)
    if last == "tool":
        return StubReply(content="<think>searching</think>", reasoning="plan",
                         tool_calls=[{"name": "find_product", "arguments": {"q": "kettle"}}])
    return StubReply(content=f"you said {last}")


def _client(url: str, key: str = "k") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)


def test_text_completion_with_usage_and_recorded_request() -> None:
    app = create_app(_echo, api_key="k", models=["m1"])
    with running_server(app) as url:
        result = _client(url).chat.completions.create(
            model="m1", messages=[{"role": "user", "content": "hello there"}], temperature=0)
    assert result.choices[0].message.content == "you said hello there"
    assert result.choices[0].finish_reason == "stop"
    assert result.usage is not None
    assert result.usage.prompt_tokens == 2
    assert result.usage.completion_tokens == count_tokens("you said hello there") == 4
    assert app.state.requests[0]["temperature"] == 0


def test_native_tool_calls_and_reasoning() -> None:
    with running_server(create_app(_echo)) as url:
        result = _client(url).chat.completions.create(model="any",
                                                      messages=[{"role": "user", "content": "tool"}])
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = [c for c in choice.message.tool_calls or []
             if isinstance(c, ChatCompletionMessageFunctionToolCall)]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("find_product", {"q": "kettle"})]
    assert choice.message.model_extra is not None
    assert choice.message.model_extra["reasoning_content"] == "plan"


def test_errors_are_openai_shaped() -> None:
    with running_server(create_app(_echo, api_key="k", models=["m1"])) as url:
        with pytest.raises(openai.AuthenticationError):
            _client(url, key="wrong").chat.completions.create(
                model="m1", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.NotFoundError):
            _client(url).chat.completions.create(model="m2", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.RateLimitError) as raised:
            _client(url).chat.completions.create(model="m1", messages=[{"role": "user", "content": "fail"}])
        assert "overloaded" in str(raised.value)
        with pytest.raises(openai.BadRequestError):
            _client(url).chat.completions.create(model="m1", messages="not a list")  # type: ignore[arg-type]


def test_max_tokens_cuts_with_finish_reason_length() -> None:
    with running_server(create_app(lambda body: StubReply(content='{"a": 1, "b": 2, "c": 3}'))) as url:
        result = _client(url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], max_tokens=6)
    assert result.choices[0].finish_reason == "length"
    assert result.choices[0].message.content == '{"a": 1'


def test_streaming_reassembles_to_the_same_message() -> None:
    with running_server(create_app(_echo)) as url:
        stream = _client(url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "streamed words"}], stream=True,
            stream_options={"include_usage": True})
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "you said streamed words"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4
