"""The capacity benchmark's quick mode end to end (subprocess sandbox, 10-20 ms LLM calls, 1 and 2 slots),
and its parts: the latency fit, the agent's calls per problem, the lost/doubled count."""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from pathlib import Path

import orjson
import pytest

from benchmarks.capacity import benchmark as capacity
from benchmarks.capacity.llm import Latency, LatencyPolicy, agent_source
from benchmarks.capacity.probe import lost_and_doubled
from shoppingbench.sample_world import SampleWorld

KEYS = {"sandbox", "attempts_per_hour", "rss_mb_per_slot", "validator_rss_mb", "validator_cpu_share",
        "busy_day_hours_16_slots", "busy_day_hours_16_slots_plain", "busy_day_basis", "lost_attempts",
        "doubled_attempts",
        "store_bytes_per_attempt", "store_growth_mb_per_busy_day", "per_slots"}


def test_quick_mode_runs_the_validator_path_and_loses_and_doubles_nothing(
        small_world: SampleWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capacity.main(["--quick", "--world-dir", str(small_world.world_dir), "--home", str(tmp_path / "home")])
    result = orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result) >= KEYS
    assert result["sandbox"] == "none" and result["quick"] is True
    assert set(result["attempts_per_hour"]) == {"1", "2"}
    assert (result["lost_attempts"], result["doubled_attempts"]) == (0, 0)
    for figures in result["per_slots"].values():
        # A busy day's shape: two runs of two problems owed together, computed concurrently.
        assert (figures["runs"], figures["problems_per_run"], figures["attempts"]) == (2, 2, 4)
        assert figures["concurrent_runs"] == 2 and figures["tail_s"] >= 0
        assert figures["attempts_per_hour"] > 0 and figures["failures"] == {}
        assert figures["judged_online"] == figures["attempts"]  # the judge double answered every attempt
        assert figures["proxy_calls_per_attempt"] >= 4  # 2-3 model calls, each with a search, then the answer
        assert figures["validator_rss_mb"] > 0 and figures["rss_mb_per_slot"] > 0
    assert result["busy_day_hours_16_slots"] is None and result["busy_day_basis"] == "no 16-slot run"
    assert result["store_bytes_per_attempt"] > 0


def test_the_latency_double_fits_its_median_and_95th_percentile() -> None:
    latency = Latency(p50_s=2.0, p95_s=8.0, seed=3)
    policy = LatencyPolicy(latency, latency)
    delays = sorted(policy.delay(latency) for _ in range(20_000))
    assert statistics.median(delays) == pytest.approx(2.0, rel=0.05)
    assert delays[int(0.95 * len(delays))] == pytest.approx(8.0, rel=0.08)
    assert statistics.fmean(delays) == pytest.approx(latency.mean_s, rel=0.08)
    first, second = LatencyPolicy(latency, latency), LatencyPolicy(latency, latency)
    assert [first.delay(latency) for _ in range(5)] == [second.delay(latency) for _ in range(5)]


def test_the_agent_draws_its_calls_per_problem_in_range_from_the_seed() -> None:
    source = agent_source(seed=7, calls_low=8, calls_high=20).decode()
    namespace: dict[str, object] = {}
    exec(compile(source, "capacity_agent.py", "exec"), namespace)  # our own generated file

    class Counting:
        def __init__(self) -> None:
            self.chats = 0

        def chat(self, messages: list[dict[str, str]], **_: object) -> object:
            self.chats += 1
            return type("Reply", (), {"content": "<think>ok</think>"})()

        def find_product(self, *_: object, **__: object) -> list[object]:
            return []

    calls = Counter[int]()
    rng = random.Random(0)
    for _ in range(200):
        query = f"a kettle under {rng.randint(100, 900)} pesos"
        client = Counting()
        namespace["_scripted_agent_main"] = lambda problem, proxy: []
        namespace["agent_main"]({"query": query}, client)  # type: ignore[operator]
        calls[client.chats] += 1
    assert set(calls) <= set(range(8, 21)) and len(calls) >= 10
    assert math.isclose(sum(k * v for k, v in calls.items()) / 200, 14, abs_tol=1.5)
    with pytest.raises(ValueError, match="low <= high"):
        agent_source(seed=0, calls_low=9, calls_high=8)


def test_lost_and_doubled_compare_the_stored_keys_with_the_scheduled_ones() -> None:
    scheduled = [("run-a", "p1"), ("run-a", "p2"), ("run-b", "p1")]
    assert lost_and_doubled(scheduled, Counter(dict.fromkeys(scheduled, 1))) == (0, 0)
    stored = Counter({("run-a", "p1"): 2, ("run-b", "p1"): 1, ("run-c", "p9"): 1})
    assert lost_and_doubled(scheduled, stored) == (1, 2)
