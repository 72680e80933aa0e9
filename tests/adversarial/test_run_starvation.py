"""Runs starving each other: a hostile run keeps four long inference calls in flight on a provider of
limited capacity while an honest run (the ReAct reference agent) goes beside it on the same provider, as
a validator runs a challenger beside another run. The honest run scores what it scores alone: the proxy
gives each run its share of the provider (``shoppingbench.proxy.shares``), so the hostile run's calls
beyond its share wait at the proxy, and the provider, never over its capacity, answers the honest calls.

Real pieces: the ReAct reference agent and the hostile agent in the bubblewrap sandbox behind the verified
proxy, one proxy per run, one slot each. The LLM is the scripted shopping policy served by
``shoppingbench.doubles.llm_server`` with a capacity limit: :data:`CAPACITY` calls at once, any call beyond
answered a 503, as an overloaded server answers it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import Capacity, StubReply, create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, iter_attempts
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.adversarial.support import MODEL, ROOMY, react_with
from tests.sandbox_support import UID_BASE, fake_grader

CAPACITY = 4
"""Calls the provider serves at once; the proxy is told so (``InferenceConfig.concurrency``)."""
SLOW = "Think about this for a very long while."
LONG_S = 3.0
"""How long the provider takes over each of the hostile run's calls."""
STOP = "STOP NOW"

HOG = f'''
import threading
import time

from shoppingbench.agent_sdk.proxy_client import ProxyClient


def agent_main(problem):
    client = ProxyClient(timeout=60.0, max_retries=0)
    done = threading.Event()
    deadline = time.monotonic() + 80

    def hold():
        while not done.is_set() and time.monotonic() < deadline:
            try:
                reply = client.chat([{{"role": "user", "content": {SLOW!r}}}], max_tokens=4096)
            except Exception:
                time.sleep(0.05)
                continue
            if {STOP!r} in (reply.content or ""):
                done.set()

    threads = [threading.Thread(target=hold) for _ in range({CAPACITY})]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return []
'''


class Provider:
    """The scripted shopping policy; the hostile run's calls take :data:`LONG_S` each until ``stop``."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    def __call__(self, body: dict[str, Any]) -> StubReply:
        if SLOW in str(body.get("messages")):
            return StubReply(content=STOP) if self.stop.is_set() else StubReply(content="hmm", delay_s=LONG_S)
        return shopping_policy(body)


@dataclass
class Arena:
    engine: BM25SearchEngine
    inference: InferenceConfig
    provider: Provider
    capacity: Capacity

    def run(self, agent: AgentFile, suite: Sequence[Problem], uid_base: int) -> list[AttemptRecord]:
        sandbox = SandboxConfig(backend="namespace", limits=ROOMY, uid_base=uid_base)
        records = {r.problem_id: r for r in iter_attempts(agent, suite, self.engine, fake_grader(self.engine),
                                                          inference=self.inference, sandbox=sandbox,
                                                          workers=1)}
        return [records[p.id] for p in suite]


@pytest.fixture(scope="module")
def arena(small_world: SampleWorld) -> Iterator[Arena]:
    engine: BM25SearchEngine = open_catalog(small_world.catalog_dir)
    provider = Provider()
    app = create_app(provider, models=[MODEL], capacity=CAPACITY, over_capacity="reject")
    with running_server(app) as url:
        inference = InferenceConfig(base_url=f"{url}/v1", models=[MODEL], timeout_s=30.0,
                                    concurrency=CAPACITY, share_wait_s=30.0)
        yield Arena(engine=engine, inference=inference, provider=provider, capacity=app.state.capacity)
    engine.close()


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(1)


@pytest.fixture(scope="module")
def victim(tmp_path_factory: pytest.TempPathFactory) -> AgentFile:
    return AgentFile.read(react_with("", tmp_path_factory.mktemp("victim") / "react.py"))


@pytest.fixture(scope="module")
def solo(arena: Arena, suite: list[Problem], victim: AgentFile) -> list[AttemptRecord]:
    records = arena.run(victim, suite, UID_BASE)
    assert any(r.score.success for r in records), "the case needs a problem the victim solves alone"
    return records


def test_a_run_keeping_long_calls_in_flight_does_not_starve_the_run_beside_it(
        arena: Arena, suite: list[Problem], victim: AgentFile, solo: list[AttemptRecord],
        tmp_path: Path, small_world: SampleWorld) -> None:
    hog = AgentFile.read(_write(tmp_path / "hog.py", HOG))
    hogged: list[AttemptRecord] = []
    hog_run = threading.Thread(target=lambda: hogged.extend(arena.run(hog, small_world.suite(1)[:1],
                                                                      UID_BASE + 8)), daemon=True)
    rejected_before = arena.capacity.rejected
    arena.provider.stop.clear()
    hog_run.start()
    try:
        deadline = time.monotonic() + 90
        while arena.capacity.in_flight < CAPACITY:  # the hostile run holds the whole provider
            assert hog_run.is_alive() and time.monotonic() < deadline, "the hostile run never filled it"
            time.sleep(0.05)
        beside = arena.run(victim, suite, UID_BASE + 4)
    finally:
        arena.provider.stop.set()
        hog_run.join(timeout=120)
    assert hogged, "the hostile run ran"
    assert not [c for r in beside for c in r.provider_errors()], "no call of the victim failed"
    assert not any(r.infra_failed for r in beside)
    assert not [r.failure for r in beside if r.failure is not None and r.failure.kind == "timeout"]
    assert [r.score.success for r in beside] == [r.score.success for r in solo]
    assert [r.score.gt for r in beside] == [r.score.gt for r in solo]
    assert arena.capacity.rejected == rejected_before, "the provider was never asked beyond its capacity"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
