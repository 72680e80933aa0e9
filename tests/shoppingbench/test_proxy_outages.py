"""Provider failures through the verified proxy: a 5xx, a hang past the timeout and a dropped connection
of the inference provider are logged as ``provider_error`` calls and counted in the provider's health;
the proxy's own refusals (budget 429, model 403) and the provider's 4xx are not.

The provider is the OpenAI-compatible test double (``shoppingbench.doubles.llm_server``) under a real
uvicorn server, failing on command (its ``Faults`` schedule and its ``/admin/faults`` endpoint).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from prometheus_client import generate_latest

from shoppingbench.doubles.llm_server import Fault, Faults, StubReply, create_app
from shoppingbench.proxy import InferenceBudgets, InferenceConfig, ProxyServer, inference
from shoppingbench.proxy.health import PROVIDER_REGISTRY
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server

TIMEOUT_S = 0.5
"""The proxy's upstream timeout here; a hang lasts four times as long."""


def _policy(body: dict[str, Any]) -> StubReply:
    return StubReply(content="fine", reasoning="thinking")


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[str, Faults]]:
    faults = Faults()
    with running_server(create_app(_policy, models=["small"], faults=faults)) as url:
        yield url, faults


def _client(proxy: ProxyServer) -> httpx.Client:
    channel = proxy.channels[0]
    assert channel.unix_path is not None
    return httpx.Client(base_url="http://proxy", transport=httpx.HTTPTransport(uds=str(channel.unix_path)),
                        timeout=30)


def _chat(client: httpx.Client, model: str = "small") -> int:
    return client.post("/inference/chat/completions",
                       json={"model": model, "messages": [{"role": "user", "content": "hi"}]}).status_code


def _metric(name: str, **labels: str) -> float:
    value = PROVIDER_REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_provider_failures_are_classified_and_refusals_are_not(
        small_engine: BM25SearchEngine, provider: tuple[str, Faults]) -> None:
    url, faults = provider
    config = InferenceConfig(base_url=f"{url}/v1", models=["small", "other"], timeout_s=TIMEOUT_S,
                             budgets=InferenceBudgets(attempt_calls=6))
    before = {kind: _metric("arena_provider_errors_total", provider="inference", kind=kind)
              for kind in ("http_5xx", "timeout", "connection")}
    calls_before = _metric("arena_provider_calls_total", provider="inference")
    # Each failed call is followed by the proxy's probe, which the provider, down, fails too.
    faults.fail_next(2, Fault(kind="status", status=503))
    faults.fail_next(2, Fault(kind="hang", hang_s=4 * TIMEOUT_S))
    faults.fail_next(2, Fault(kind="drop"))
    with ProxyServer(small_engine, config, channels=1) as proxy, _client(proxy) as client:
        proxy.begin(0, "run", "p1")
        statuses = [_chat(client) for _ in range(4)]  # 503, hang, drop, then an answer
        statuses.append(_chat(client, model="other"))  # the provider's own 404 for a model it lacks
        statuses.append(_chat(client, model="forbidden"))  # the proxy's allowlist: 403
        statuses += [_chat(client) for _ in range(2)]  # the 7th call is over the budget: 429
        calls = proxy.end(0)
    assert statuses == [503, 502, 502, 200, 404, 403, 200, 429]
    assert [c.provider_error for c in calls] == ["http_5xx", "timeout", "connection", None, None, None, None,
                                                 None]
    assert [c.provider_down for c in calls] == [True, True, True, None, None, None, None, None]
    assert calls[4].error == "inference upstream answered 404"
    for kind in ("http_5xx", "timeout", "connection"):
        assert _metric("arena_provider_errors_total", provider="inference", kind=kind) == before[kind] + 1
    # Forwarded calls only: the proxy's own refusals never reach the provider.
    assert _metric("arena_provider_calls_total", provider="inference") == calls_before + 6
    assert _metric("arena_provider_last_success_timestamp_seconds", provider="inference") > 0
    assert b"arena_provider_latency_seconds_bucket" in generate_latest(PROVIDER_REGISTRY)


def test_a_request_that_breaks_the_provider_is_the_agents_failure_not_an_outage(
        small_engine: BM25SearchEngine, provider: tuple[str, Faults]) -> None:
    """An agent that makes the provider fail on purpose gets no re-run: the probe after its call is
    answered, so the call is logged as a provider error the provider was not down for."""
    url, faults = provider
    faults.break_on("crash the server")
    config = InferenceConfig(base_url=f"{url}/v1", models=["small"], timeout_s=TIMEOUT_S)
    try:
        with ProxyServer(small_engine, config, channels=1) as proxy, _client(proxy) as client:
            proxy.begin(0, "run", "p1")
            broken = client.post("/inference/chat/completions", json={
                "model": "small", "messages": [{"role": "user", "content": "please crash the server"}]})
            answered = _chat(client)
            calls = proxy.end(0)
    finally:
        faults.clear()
    assert (broken.status_code, answered) == (500, 200)
    assert [(c.provider_error, c.provider_down) for c in calls] == [("http_5xx", False), (None, None)]


POOL = 100
"""Connections of the client that forwards the agents' calls (httpx's default pool)."""


def _capacity_policy(body: dict[str, Any]) -> StubReply:
    text = str(body.get("messages"))
    if "slow" in text:
        return StubReply(content="late", delay_s=5.0)
    if "unlucky" in text:  # a 5xx a little later, while another call of the agent waits for a connection
        return StubReply(content="overloaded", status=503, delay_s=0.5)
    return StubReply(content="OK")


def test_calls_an_agent_keeps_in_flight_cannot_make_the_probe_fail(
        small_engine: BM25SearchEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent fills every connection to the provider with slow calls (budgets allowing), so that the
    probe after one of its calls fails would wait behind them until it times out and read as an outage:
    the probe has connections of its own and is answered."""
    monkeypatch.setattr(inference, "PROBE_TIMEOUT_S", 1.0)
    app = create_app(_capacity_policy, models=["small"])
    budgets = InferenceBudgets(attempt_calls=None, attempt_tokens=None, attempt_in_flight=None)
    config = InferenceConfig(base_url="", models=["small"], max_tokens=8, timeout_s=20, budgets=budgets)

    def chat(url: str, text: str) -> int:
        return httpx.post(f"{url}/inference/chat/completions", timeout=30, json={
            "model": "small", "messages": [{"role": "user", "content": text}]}).status_code

    def arrived(count: int) -> None:
        deadline = time.monotonic() + 20
        while len(app.state.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(app.state.requests) >= count

    with running_server(app) as upstream, \
            ProxyServer(small_engine, config.model_copy(update={"base_url": f"{upstream}/v1"}), channels=1,
                        transport="tcp") as proxy, ThreadPoolExecutor(POOL + 1) as pool:
        url = proxy.channels[0].url
        proxy.begin(0, "run", "p1")
        slow = [pool.submit(chat, url, "slow") for _ in range(POOL - 1)]
        arrived(POOL - 1)
        unlucky = pool.submit(chat, url, "unlucky")
        arrived(POOL)
        time.sleep(0.1)
        slow.append(pool.submit(chat, url, "slow"))  # takes the unlucky call's connection when it frees
        statuses = [unlucky.result(), *(f.result() for f in slow)]
        calls = proxy.end(0)
    assert statuses == [503] + [200] * POOL
    (failed,) = [c for c in calls if c.provider_error is not None]
    assert (failed.provider_error, failed.provider_down) == ("http_5xx", False)


def test_the_double_takes_fault_commands_over_http(provider: tuple[str, Faults]) -> None:
    url, faults = provider
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.post("/admin/faults", json={"count": 1, "after": 1, "status": 500}).status_code == 200
        body = {"model": "small", "messages": [{"role": "user", "content": "hi"}]}
        first, second, third = (client.post("/v1/chat/completions", json=body) for _ in range(3))
        assert (first.status_code, second.status_code, third.status_code) == (200, 500, 200)
        assert second.json()["error"]["type"] == "server_error"
        assert client.post("/admin/faults", json={"always": True, "status": 502}).status_code == 200
        assert [client.post("/v1/chat/completions", json=body).status_code for _ in range(2)] == [502, 502]
        assert client.delete("/admin/faults").status_code == 200
        assert client.post("/v1/chat/completions", json=body).status_code == 200
        assert client.post("/admin/faults", content=b"junk").status_code == 400
    faults.clear()
