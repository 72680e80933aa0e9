"""Agents that try to spend more inference than their budget: token limits written as floats, strings or
booleans, many completions per call, and a hundred calls fired at once. The upstream is the
OpenAI-compatible test double on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.proxy import InferenceBudgets, InferenceConfig, ProxyServer
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server

CAP = 64
LONG_ANSWER = " ".join(f"word{i}" for i in range(500))


class Upstream:
    """The stub's policy: a long answer after ``delay_s``, or held until ``release`` is set."""

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.release: threading.Event | None = None

    def __call__(self, body: dict[str, Any]) -> StubReply:
        if self.release is not None:
            self.release.wait(30)
        time.sleep(self.delay_s)
        return StubReply(content=LONG_ANSWER)


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Upstream, Any]]:
    policy = Upstream()
    app = create_app(policy, models=["small"])
    with running_server(app) as url:
        yield f"{url}/v1", policy, app


@pytest.fixture()
def stub(upstream: tuple[str, Upstream, Any]) -> tuple[str, Upstream, list[dict[str, Any]]]:
    url, policy, app = upstream
    policy.delay_s, policy.release = 0.0, None
    app.state.requests.clear()
    return url, policy, app.state.requests


def _proxy(engine: BM25SearchEngine, url: str, **budgets: int | None) -> ProxyServer:
    config = InferenceConfig(base_url=url, models=["small"], max_tokens=CAP,
                             budgets=InferenceBudgets(**budgets))
    return ProxyServer(engine, config, channels=1, transport="tcp")


def _chat(base_url: str, **extra: Any) -> httpx.Response:
    return httpx.post(f"{base_url}/inference/chat/completions", timeout=60,
                      json={"messages": [{"role": "user", "content": "red shoes please"}], **extra})


@pytest.mark.parametrize("extra", [
    {"max_tokens": 1e9}, {"max_tokens": "999999"}, {"max_tokens": 12.0}, {"max_tokens": True},
    {"max_tokens": CAP + 1}, {"max_tokens": 0}, {"max_completion_tokens": "64"},
    {"max_completion_tokens": 10**6},
    {"n": 16}, {"n": 2}, {"n": "1"}, {"best_of": 4},
])
def test_inflated_token_limits_and_extra_completions_are_refused(
        small_engine: BM25SearchEngine, stub: tuple[str, Upstream, list[dict[str, Any]]],
        extra: dict[str, Any]) -> None:
    url, _, requests = stub
    with _proxy(small_engine, url) as proxy:
        proxy.begin(0, "run", "p1")
        answer = _chat(proxy.channels[0].url, **extra)
        (call,) = proxy.end(0)
    assert answer.status_code == call.status == 400 and call.error is not None
    assert requests == []  # nothing reached the upstream


def test_one_completion_within_the_cap_goes_through(small_engine: BM25SearchEngine,
                                                    stub: tuple[str, Upstream, list[dict[str, Any]]]) -> None:
    url, _, requests = stub
    with _proxy(small_engine, url) as proxy:
        proxy.begin(0, "run", "p1")
        answer = _chat(proxy.channels[0].url, max_tokens=CAP, n=1)
        proxy.end(0)
    assert answer.status_code == 200 and requests[0]["max_tokens"] == CAP and requests[0]["n"] == 1


def test_a_hundred_parallel_calls_never_exceed_the_token_budget(
        small_engine: BM25SearchEngine, stub: tuple[str, Upstream, list[dict[str, Any]]]) -> None:
    url, policy, requests = stub
    policy.delay_s = 0.05  # every call is still in flight when most others arrive
    with _proxy(small_engine, url, attempt_tokens=3_000, run_tokens=3_000, attempt_in_flight=None,
                attempt_calls=None) as proxy:
        proxy.begin(0, "run", "p1")
        with ThreadPoolExecutor(max_workers=100) as pool:
            answers = list(pool.map(lambda _: _chat(proxy.channels[0].url), range(100)))
        log = proxy.end(0)
    served = [a.json()["usage"] for a in answers if a.status_code == 200]
    assert sum(u["prompt_tokens"] + u["completion_tokens"] for u in served) <= 3_000
    assert sum((c.prompt_tokens or 0) + (c.completion_tokens or 0) for c in log) <= 3_000
    assert len(requests) == len(served) and {a.status_code for a in answers} == {200, 429}


def test_calls_in_flight_per_attempt_are_capped(small_engine: BM25SearchEngine,
                                                stub: tuple[str, Upstream, list[dict[str, Any]]]) -> None:
    url, policy, requests = stub
    policy.release = threading.Event()
    with _proxy(small_engine, url, attempt_in_flight=2) as proxy:
        proxy.begin(0, "run", "p1")
        with ThreadPoolExecutor(max_workers=6) as pool:
            pending = [pool.submit(_chat, proxy.channels[0].url) for _ in range(6)]
            refused = [f.result() for f in _first_done(pending, 4, requests)]
            held = len(requests)
            policy.release.set()
            answers = [f.result() for f in pending]
        proxy.end(0)
    assert held == 2 and all(r.status_code == 429 for r in refused)
    assert {r.json()["error"]["code"] for r in refused} == {"budget_busy"}  # retryable, unlike a spent budget
    assert sorted(a.status_code for a in answers) == [200, 200, 429, 429, 429, 429]


def _first_done(futures: list[Any], count: int, requests: list[dict[str, Any]]) -> list[Any]:
    """The first ``count`` futures to finish, once the others reached the upstream (which holds them)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [f for f in futures if f.done()]
        if len(done) >= count and len(requests) >= len(futures) - count:
            return done
        time.sleep(0.01)
    raise AssertionError(f"{len([f for f in futures if f.done()])} calls answered, {len(requests)} upstream")
