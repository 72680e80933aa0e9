"""The verified proxy over real sockets: attribution by channel, search and inference forwarding, the
allowlist and budgets, and a log that holds exactly the calls made.

The inference upstream is the OpenAI-compatible test double (``shoppingbench.doubles``) under a real
uvicorn server: a hosted LLM cannot run here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from shoppingbench.agent_sdk import ProxyClient, ProxyError
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.proxy import InferenceBudgets, InferenceConfig, ProxyServer
from shoppingbench.proxy.app import MAX_BODY_BYTES
from shoppingbench.proxy.budgets import Ledger, Refusal, Reservation, Spending
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server

API_KEY = "upstream-key"


def _policy(body: dict[str, Any]) -> StubReply:
    last = body["messages"][-1]["content"]
    if last == "fail":
        return StubReply(content="upstream broke", status=500)
    return StubReply(content=f"You said: {last}", reasoning="thinking it over",
                     tool_calls=[{"name": "find_product", "arguments": {"q": last}}])


@pytest.fixture(scope="module")
def engine(small_engine: BM25SearchEngine) -> BM25SearchEngine:
    return small_engine


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with running_server(create_app(_policy, api_key=API_KEY, models=["small", "large"])) as url:
        yield f"{url}/v1"


def _config(upstream: str, **budgets: int | None) -> InferenceConfig:
    return InferenceConfig(base_url=upstream, api_key=API_KEY, models=["small", "large"], max_tokens=64,
                           budgets=InferenceBudgets(**budgets))


def _client(proxy: ProxyServer, slot: int) -> httpx.Client:
    channel = proxy.channels[slot]
    assert channel.unix_path is not None
    return httpx.Client(base_url="http://proxy", transport=httpx.HTTPTransport(uds=str(channel.unix_path)),
                        timeout=30)


def _chat(client: httpx.Client, text: str, **extra: Any) -> httpx.Response:
    return client.post("/inference/chat/completions",
                       json={"messages": [{"role": "user", "content": text}], **extra})


def test_a_channel_without_a_running_attempt_is_refused(engine: BM25SearchEngine) -> None:
    with ProxyServer(engine, InferenceConfig(), channels=1) as proxy, _client(proxy, 0) as client:
        assert client.get("/search/find_product", params={"q": "shoe"}).status_code == 403
        proxy.begin(0, "run", "p1")
        assert client.get("/search/find_product", params={"q": "shoe"}).status_code == 200
        assert len(proxy.end(0)) == 1
        assert client.get("/search/find_product", params={"q": "shoe"}).status_code == 403
        proxy.begin(0, "run", "p2")
        assert proxy.end(0) == []  # the refused calls belong to no attempt


def test_search_calls_are_logged_with_their_parameters_and_returned_ids(engine: BM25SearchEngine) -> None:
    with ProxyServer(engine, InferenceConfig(), channels=1) as proxy, _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        hits = client.get("/search/find_product", params={"q": "bag", "page": "1", "sort": "priceasc"}).json()
        ids = [hit["product_id"] for hit in hits[:3]]
        details = client.post("/search/view_product_information", json={"product_ids": ids}).json()
        bad = client.get("/search/find_product", params={"q": "bag " * 600, "page": "1"})  # overlong
        raw = client.get("/search/get_product_raw", params={"product_id": ids[0]})
        log = proxy.end(0)
    assert hits and [d["product_id"] for d in details] == ids
    assert (bad.status_code, raw.status_code) == (422, 404)
    assert [(c.seq, c.kind, c.method, c.path, c.status) for c in log] == [
        (0, "search", "GET", "/search/find_product", 200),
        (1, "search", "POST", "/search/view_product_information", 200),
        (2, "search", "GET", "/search/find_product", 422),
        (3, "other", "GET", "/search/get_product_raw", 404)]
    assert log[0].params == {"q": "bag", "page": "1", "sort": "priceasc"}
    assert log[0].product_ids == [hit["product_id"] for hit in hits]
    assert log[1].params == {"product_ids": ids} and log[1].product_ids == ids
    assert log[2].product_ids == [] and log[2].error is not None and "2000 characters" in log[2].error
    assert all(c.duration_ms > 0 and c.started_at > 0 for c in log)


def test_each_channel_logs_only_its_own_attempts_calls(engine: BM25SearchEngine) -> None:
    with ProxyServer(engine, InferenceConfig(), channels=3) as proxy:
        for slot in range(3):
            proxy.begin(slot, "run", f"problem-{slot}")

        def calls(slot: int) -> None:
            with _client(proxy, slot) as client:
                for i in range(8):
                    # A request cannot claim another attempt: attribution ignores everything it sends.
                    client.get("/search/find_product", params={"q": f"slot{slot} item{i}"},
                               headers={"X-Problem-Id": "problem-0", "Host": "elsewhere"})

        threads = [threading.Thread(target=calls, args=(slot,)) for slot in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        logs = [proxy.end(slot) for slot in range(3)]
    for slot, log in enumerate(logs):
        assert [c.params["q"] for c in log] == [f"slot{slot} item{i}" for i in range(8)]
        assert [c.seq for c in log] == list(range(8))


def test_inference_is_forwarded_and_logged_in_full(engine: BM25SearchEngine, upstream: str) -> None:
    with ProxyServer(engine, _config(upstream), channels=1) as proxy, _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        answer = _chat(client, "red shoes", model="large", temperature=0.2, max_tokens=50)
        default = _chat(client, "no model named")
        (call, second) = proxy.end(0)
    assert answer.status_code == 200
    message = answer.json()["choices"][0]["message"]
    assert message["content"] == "You said: red shoes" and message["reasoning_content"] == "thinking it over"
    assert call.kind == "inference" and call.model == "large" and call.status == 200
    assert call.request_messages == [{"role": "user", "content": "red shoes"}]
    assert call.params == {"model": "large", "temperature": 0.2, "max_tokens": 50, "stream": False}
    assert call.completion_text == "You said: red shoes" and call.reasoning_text == "thinking it over"
    assert call.completion_tool_calls == [{"name": "find_product", "arguments": {"q": "red shoes"}}]
    usage = answer.json()["usage"]
    assert call.prompt_tokens == usage["prompt_tokens"]
    assert call.completion_tokens == usage["completion_tokens"]
    assert default.status_code == 200 and second.model == "small"  # the allowlist's first model


def test_forced_parameters_override_what_the_agent_asked(engine: BM25SearchEngine, upstream: str) -> None:
    config = _config(upstream).model_copy(update={"forced_params": {"temperature": 1.0, "top_p": 0.95}})
    with ProxyServer(engine, config, channels=1) as proxy, _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        asked_greedy = _chat(client, "red shoes", temperature=0.0)
        asked_nothing = _chat(client, "blue shoes")
        (greedy, plain) = proxy.end(0)
    assert asked_greedy.status_code == asked_nothing.status_code == 200
    # The log holds what went upstream, so a sampled rollout is never mistaken for a greedy one
    assert greedy.params["temperature"] == plain.params["temperature"] == 1.0
    assert greedy.params["top_p"] == plain.params["top_p"] == 0.95


@pytest.mark.parametrize(("body", "status", "error"), [
    ({"model": "gpt-5", "messages": []}, 403, "not allowed"),
    ({"model": "small", "messages": [], "stream": True}, 400, "streaming"),
    ({"model": "small", "messages": "hello"}, 400, "messages"),
    ({"model": "small", "messages": [{"role": "user", "content": "fail"}]}, 500, "upstream answered 500"),
])
def test_refused_and_failed_inference_calls_are_logged_with_the_reason(
        engine: BM25SearchEngine, upstream: str, body: dict[str, Any], status: int, error: str) -> None:
    with ProxyServer(engine, _config(upstream), channels=1) as proxy, _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        response = client.post("/inference/chat/completions", json=body)
        (call,) = proxy.end(0)
    assert response.status_code == status == call.status
    assert call.error is not None and error in call.error


def test_inference_without_an_upstream_or_with_junk_answers_clearly(engine: BM25SearchEngine) -> None:
    with ProxyServer(engine, InferenceConfig(models=["small"]), channels=1) as proxy, \
            _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        missing = _chat(client, "hi")
        junk = client.post("/inference/chat/completions", content=b"{not json")
        proxy.end(0)
    assert missing.status_code == 503 and "no inference endpoint" in missing.json()["error"]["message"]
    assert junk.status_code == 400
    unreachable = InferenceConfig(base_url="http://127.0.0.1:9/v1", models=["small"])
    with ProxyServer(engine, unreachable, channels=1) as proxy, _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        response = _chat(client, "hi")
        (call,) = proxy.end(0)
    assert response.status_code == 502 and call.error is not None and "ConnectError" in call.error


def test_call_budgets_answer_429_per_attempt_and_per_run(engine: BM25SearchEngine, upstream: str) -> None:
    with ProxyServer(engine, _config(upstream, attempt_calls=2, run_calls=3), channels=1) as proxy, \
            _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        first = [_chat(client, "a").status_code for _ in range(3)]
        log = proxy.end(0)
        proxy.begin(0, "run", "p2")
        second = [_chat(client, "b").status_code for _ in range(2)]
        proxy.end(0)
    assert first == [200, 200, 429] and second == [200, 429]
    assert log[2].error is not None and "2 of 2 inference calls of this attempt" in log[2].error


def test_token_budget_reserves_the_worst_case_and_settles_what_the_upstream_reports(
        engine: BM25SearchEngine, upstream: str) -> None:
    with ProxyServer(engine, _config(upstream, attempt_tokens=200), channels=1) as proxy, \
            _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        answers = [_chat(client, "one two three four five") for _ in range(10)]
        log = proxy.end(0)
    statuses = [a.status_code for a in answers]
    spent = [(c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in log if c.status == 200]
    assert statuses[:3] == [200, 200, 200] and statuses[-1] == 429
    assert answers[-1].json()["error"]["code"] == "budget_exhausted"
    assert sum(spent) <= 200  # settled to the reported usage, never past the budget
    granted = [c.params["max_tokens"] for c in log if c.status == 200]
    assert granted[0] == 64 and granted[-1] < 64  # lowered to what the budget had left


def test_an_oversized_body_is_refused(engine: BM25SearchEngine) -> None:
    with ProxyServer(engine, InferenceConfig(), channels=1) as proxy, _client(proxy, 0) as client:
        proxy.begin(0, "run", "p1")
        response = client.post("/search/find_product", content=b"x" * (MAX_BODY_BYTES + 1))
        (call,) = proxy.end(0)
    assert response.status_code == 413 and call.error == "request body too large"


def test_tcp_channels_attribute_by_port(engine: BM25SearchEngine) -> None:
    with ProxyServer(engine, InferenceConfig(), channels=2, transport="tcp") as proxy:
        proxy.begin(1, "run", "p1")
        other = httpx.get(f"{proxy.channels[0].url}/search/find_product", params={"q": "x"})
        mine = httpx.get(f"{proxy.channels[1].url}/search/find_product", params={"q": "x", "page": 1})
        log = proxy.end(1)
    assert (other.status_code, mine.status_code, len(log)) == (403, 200, 1)
    assert orjson.loads(mine.content) and log[0].product_ids


def test_budget_rules() -> None:
    ledger = Ledger(InferenceBudgets(attempt_calls=3, attempt_tokens=None, attempt_in_flight=2,
                                     run_calls=None, run_tokens=100))
    attempt = Spending()
    first = ledger.reserve(attempt, prompt_bound=10, max_tokens=30)
    assert first == Reservation(max_tokens=30, held=40) and ledger.run.reserved == 40
    second = ledger.reserve(attempt, prompt_bound=10, max_tokens=80)
    assert second == Reservation(max_tokens=50, held=60)  # lowered to the 60 tokens left
    busy = ledger.reserve(attempt, prompt_bound=10, max_tokens=10)
    assert isinstance(busy, Refusal) and not busy.final and "in flight" in busy.message
    assert isinstance(first, Reservation) and isinstance(second, Reservation)
    ledger.settle(attempt, first, 25)
    ledger.settle(attempt, second, 70)
    assert (attempt.tokens, attempt.reserved, attempt.in_flight, ledger.run.tokens) == (95, 0, 0, 95)
    spent = ledger.reserve(attempt, prompt_bound=10, max_tokens=10)
    assert isinstance(spent, Refusal) and spent.final and "tokens of this run" in spent.message


def test_the_sdk_gives_up_at_once_on_a_spent_budget(engine: BM25SearchEngine, upstream: str) -> None:
    with ProxyServer(engine, _config(upstream, attempt_calls=1), channels=1, transport="tcp") as proxy, \
            ProxyClient(proxy.channels[0].url, retry_delay=5.0, rate_limit_retry_delay=5.0) as sdk:
        proxy.begin(0, "run", "p1")
        sdk.chat([{"role": "user", "content": "a"}], model="small")
        started = time.monotonic()
        with pytest.raises(ProxyError) as raised:
            sdk.chat([{"role": "user", "content": "b"}], model="small")
        waited = time.monotonic() - started
        log = proxy.end(0)
    assert raised.value.status == 429 and "budget" in str(raised.value)
    assert waited < 2.0  # a retry would have slept 5 s first
    assert [call.status for call in log] == [200, 429]  # one refused call, not one per retry
