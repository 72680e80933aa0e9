"""Fair shares of one inference provider among runs at once (``shoppingbench.proxy.shares``): each run's
proxy forwards no more than its even share of the provider's calls and tokens; a call beyond waits at the
proxy (bounded), its wait never counted toward the provider's timeout; a call other runs' load keeps from
the provider past the bound is crowded out, an outage of the attempt rather than the agent's failure.

The provider is the OpenAI-compatible test double with a capacity limit (``create_app(capacity=...)``),
under a real uvicorn server; each run is a real :class:`ProxyServer` on a loopback TCP channel.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.settings import ArenaSettings
from arena.validator.assemble import shared_provider
from shoppingbench.doubles.llm_server import Capacity as ServedCapacity
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.grading.outages import crowded_out, rule_outage
from shoppingbench.proxy import InferenceBudgets, InferenceConfig, ProxyServer
from shoppingbench.proxy.health import PROVIDER_REGISTRY
from shoppingbench.proxy.inference import BUDGET_BUSY, CROWDED_OUT
from shoppingbench.proxy.shares import Capacity, Load, blocked_by, provider_shares, share_of
from shoppingbench.records import AttemptFailure, AttemptRecord, ProxyCall
from shoppingbench.scoring.attempt import AttemptScore
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.sandbox_support import problem


def test_each_run_gets_an_even_share_and_waits_on_its_own_load_before_others() -> None:
    assert [share_of(8, n) for n in (1, 2, 3, 8, 9)] == [8, 4, 2, 1, 1]
    assert share_of(None, 3) is None
    four = Capacity(calls=4)
    assert blocked_by(four, 2, Load(1), Load(3), 0) is None
    assert blocked_by(four, 2, Load(2), Load(2), 0) == "own"  # its share of 2 is in flight
    assert blocked_by(four, 2, Load(1), Load(4), 0) == "others"  # under its share, the provider full
    assert blocked_by(Capacity(), 5, Load(99), Load(99), 10**9) is None  # no limit stated
    tokens = Capacity(tokens=1000)
    assert blocked_by(tokens, 2, Load(0), Load(1, 900), 800) == "others"
    assert blocked_by(tokens, 2, Load(1, 400), Load(1, 400), 200) == "own"  # 600 > its 500
    assert blocked_by(tokens, 2, Load(0), Load(0), 5000) is None  # a first call always fits
    assert blocked_by(tokens, 2, Load(0), Load(1, 400), 500) is None


def _policy(body: dict[str, Any]) -> StubReply:
    text = str(body.get("messages"))
    if "slow" in text:
        return StubReply(content="late", delay_s=2.0)
    if "medium" in text:
        return StubReply(content="soon", delay_s=1.0)
    return StubReply(content="OK")


@contextmanager
def _provider(capacity: int) -> Iterator[tuple[str, ServedCapacity]]:
    app = create_app(_policy, models=["small"], capacity=capacity, over_capacity="reject")
    with running_server(app) as url:
        yield f"{url}/v1", app.state.capacity


def _chat(proxy: ProxyServer, text: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{proxy.channels[0].url}/inference/chat/completions", timeout=30, json={
        "model": "small", "messages": [{"role": "user", "content": text}], **body})


def _until(condition: Any, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@contextmanager
def _runs(engine: BM25SearchEngine, config: InferenceConfig, count: int) -> Iterator[list[ProxyServer]]:
    """``count`` runs at once on one provider, each with an attempt begun on its channel."""
    with ExitStack() as stack:
        proxies = [stack.enter_context(ProxyServer(engine, config, channels=1, transport="tcp"))
                   for _ in range(count)]
        for number, proxy in enumerate(proxies):
            proxy.begin(0, f"run-{number}", "p1")
        yield proxies


def test_a_run_takes_no_more_than_its_share_and_the_run_beside_it_goes_at_once(
        small_engine: BM25SearchEngine) -> None:
    with _provider(4) as (url, served), ThreadPoolExecutor(6) as pool:
        config = InferenceConfig(base_url=url, models=["small"], concurrency=4, share_wait_s=20)
        with _runs(small_engine, config, 2) as (hog, honest):
            held = [pool.submit(_chat, hog, "slow") for _ in range(4)]
            _until(lambda: served.in_flight == 2, "the hostile run's share reached the provider")
            answered = _chat(honest, "quick")
            assert answered.status_code == 200
            assert served.in_flight == 2 and not any(f.done() for f in held)  # beside its calls in flight
            assert [f.result().status_code for f in held] == [200] * 4  # the two beyond its share waited
            hog_calls, honest_calls = hog.end(0), honest.end(0)
    assert served.most == 2 + 1 and served.rejected == 0
    assert not [c for c in hog_calls + honest_calls if c.provider_error is not None]
    shares = provider_shares(url)
    assert shares.active() == 0 and shares.load() == Load()  # both left when their proxies closed


@contextmanager
def _held_by_two_others(engine: BM25SearchEngine, config: InferenceConfig, pool: ThreadPoolExecutor,
                        served: ServedCapacity) -> Iterator[tuple[ProxyServer, list[Future[httpx.Response]]]]:
    """Three runs share a provider of 2 calls at once (a share of one call each): two of them hold it
    with slow calls, so the third, under its share, can only wait on their load."""
    with _runs(engine, config, 3) as (first, second, third):
        held = [pool.submit(_chat, first, "slow"), pool.submit(_chat, second, "slow")]
        _until(lambda: served.in_flight == 2, "the two runs hold the provider")
        yield third, held


def test_waiting_on_other_runs_is_not_counted_toward_the_providers_timeout(
        small_engine: BM25SearchEngine) -> None:
    with _provider(2) as (url, served), ThreadPoolExecutor(4) as pool:
        config = InferenceConfig(base_url=url, models=["small"], concurrency=2, timeout_s=2.5,
                                 share_wait_s=20)
        with _held_by_two_others(small_engine, config, pool, served) as (waiting, held):
            started = time.monotonic()
            answer = _chat(waiting, "slow")  # waits for a slow call of another run, then 2 s upstream
            took = time.monotonic() - started
            (call,) = waiting.end(0)
            assert [f.result().status_code for f in held] == [200, 200]
    assert answer.status_code == 200 and took > config.timeout_s
    assert (call.provider_error, call.provider_down, call.error) == (None, None, None)
    assert served.rejected == 0


def _metric(name: str) -> float:
    return PROVIDER_REGISTRY.get_sample_value(name, {"provider": "inference"}) or 0.0


def test_a_call_other_runs_keep_from_the_provider_past_the_bound_is_an_outage_not_the_agents(
        small_engine: BM25SearchEngine) -> None:
    with _provider(2) as (url, served), ThreadPoolExecutor(4) as pool:
        config = InferenceConfig(base_url=url, models=["small"], concurrency=2, share_wait_s=0.5,
                                 budgets=InferenceBudgets(attempt_calls=1))
        with _held_by_two_others(small_engine, config, pool, served) as (waiting, held):
            forwarded = _metric("arena_provider_calls_total")
            refused = _chat(waiting, "quick")
            assert _metric("arena_provider_calls_total") == forwarded  # it never reached the provider
            assert [f.result().status_code for f in held] == [200, 200]
            again = _chat(waiting, "quick")  # the refused call was given back: the budget of 1 is whole
            crowded, answered = waiting.end(0)
    assert (refused.status_code, again.status_code) == (503, 200)
    assert (crowded.provider_error, crowded.provider_down) == ("timeout", True)
    assert crowded.error is not None and crowded.error.startswith(CROWDED_OUT) and crowded_out(crowded)
    assert crowded.queued_ms >= 500 and answered.queued_ms < crowded.queued_ms  # it waited out share_wait_s
    assert not crowded_out(answered)
    # The attempt that gave up is the provider's failure, even with a call answered beside the crowded one.
    beside = answered.model_copy(update={"started_at": crowded.started_at,
                                         "duration_ms": crowded.duration_ms + 1000})
    ruling = rule_outage(_failed_attempt([crowded, beside]))
    assert (ruling.infra_failed, ruling.reason) == (True, "outage")


def _failed_attempt(proxy_log: list[ProxyCall]) -> AttemptRecord:
    task = problem("p-1", "red shoes under 30")
    return AttemptRecord(run_id="run", problem_id=task.id, category=task.category, query=task.query,
                         agent_hash="a" * 64, steps=[], proxy_log=proxy_log,
                         score=AttemptScore.failure(task, "gave up"),
                         failure=AttemptFailure(kind="crash", reason="gave up"), started_at=0.0,
                         finished_at=100.0)


def test_a_call_beyond_its_own_runs_share_waits_then_is_refused_as_busy(
        small_engine: BM25SearchEngine) -> None:
    with _provider(2) as (url, served), ThreadPoolExecutor(2) as pool:
        config = InferenceConfig(base_url=url, models=["small"], concurrency=2, share_wait_s=0.5)
        with _runs(small_engine, config, 2) as (mine, _other):
            slow = pool.submit(_chat, mine, "slow")
            _until(lambda: served.in_flight == 1, "its share of one is at the provider")
            busy = _chat(mine, "quick")
            assert slow.result().status_code == 200
            calls = mine.end(0)
    assert busy.status_code == 429 and busy.json()["error"]["code"] == BUDGET_BUSY
    assert [(c.provider_error, c.provider_down) for c in calls] == [(None, None), (None, None)]
    assert not crowded_out(calls[1])


def test_a_run_holds_no_more_tokens_in_flight_than_its_share(small_engine: BM25SearchEngine) -> None:
    with _provider(4) as (url, served), ThreadPoolExecutor(2) as pool:
        config = InferenceConfig(base_url=url, models=["small"], tokens_in_flight=3000, share_wait_s=0.5)
        with _runs(small_engine, config, 1) as (alone,):
            slow = pool.submit(_chat, alone, "slow", max_tokens=2000)
            _until(lambda: served.in_flight == 1, "the first call holds 2,000 tokens and more")
            over = _chat(alone, "quick", max_tokens=2000)
            small = _chat(alone, "quick", max_tokens=100)
            assert slow.result().status_code == 200
            alone.end(0)
    assert (over.status_code, small.status_code) == (429, 200)


@pytest.mark.parametrize("over", ["queue", "reject"])
def test_the_double_serves_its_capacity_at_once_and_queues_or_rejects_the_rest(over: Any) -> None:
    app = create_app(_policy, models=["small"], capacity=1, over_capacity=over)
    body = {"model": "small", "messages": [{"role": "user", "content": "medium"}]}
    with running_server(app) as url, ThreadPoolExecutor(2) as pool:
        first = pool.submit(httpx.post, f"{url}/v1/chat/completions", json=body, timeout=30)
        _until(lambda: app.state.capacity.in_flight == 1, "the first call is being served")
        second = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)
        assert first.result().status_code == 200
    capacity = app.state.capacity
    assert capacity.most == 1
    if over == "queue":
        assert second.status_code == 200 and capacity.rejected == 0
    else:
        assert second.status_code == 503 and capacity.rejected == 1
        assert second.json()["error"]["type"] == "server_error"


def test_a_validators_runs_share_the_configured_capacity(tmp_path: Path) -> None:
    settings = ArenaSettings(home=tmp_path, inference_concurrency=6, inference_tokens_in_flight=90_000,
                             inference_share_wait_s=12)
    endpoint = shared_provider(InferenceConfig(base_url="http://llm/v1"), settings)
    assert (endpoint.concurrency, endpoint.tokens_in_flight, endpoint.share_wait_s) == (6, 90_000, 12)
    stated = shared_provider(InferenceConfig(base_url="http://llm/v1", concurrency=2), settings)
    assert stated.concurrency == 2  # a double stating its own capacity keeps it
    assert ArenaSettings(home=tmp_path).inference_concurrency == 16
