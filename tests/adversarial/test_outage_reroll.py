"""Failures re-rolled as outages: agents that make the inference provider fail on purpose, to have the
problems they fail re-run and finally left out of the score. (a) After answering, the agent keeps slow
calls in flight and makes one more: a provider of limited capacity answers it a 503, and the proxy's
probe too. (b) When unsure of its answer (here: one naming several products), the agent drops it and
sends an input that takes the provider down for a moment (the probe after it fails too). Neither gains:
an attempt that answered is scored on its answer, and one the provider failed on every try counts as
the agent's failure.

Real pieces: the ReAct reference agent with the attack appended, in the bubblewrap sandbox behind the
verified proxy, one slot, the offline judge, SQLite trajectory stores. The LLM is the scripted shopping
policy served by ``shoppingbench.doubles.llm_server``, with a capacity limit and a crashing input.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arena.judge import FinalScore, OfflineJudge
from arena.suites.clusters import LeakConfig
from arena.validator import sandbox_runner
from arena.validator.runs import RetriesPending, RunAgent, SuiteRun
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import Fault, Faults, StubReply, create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.adversarial.support import MODEL, react_with
from tests.sandbox_support import UID_BASE, fake_grader
from trajectories.store import AttemptKey, RunEntry, TrajectoryStore

SLOW = "Think about this for a long while."
SLOW_S = 3.0
CAPACITY = 3
"""Calls the provider serves at once: one more is answered a 503 (as an overloaded server does)."""
BREAK = "BREAK-THE-SERVER " * 8
"""An input that crashes the provider: it fails it, and the provider is down for the next request."""
RETRIES = 2
RUN = RunEntry(id="race-reroll", kind="race", suite="race-day")

AFTER_ANSWERING = f'''
import threading as _threading
from shoppingbench.agent_sdk.proxy_client import ProxyClient as _Client

_react_main = agent_main


def agent_main(problem):
    steps = _react_main(problem)
    client = _Client(timeout=60.0, max_retries=0)

    def slow():
        try:
            client.chat([{{"role": "user", "content": {SLOW!r}}}], max_tokens=8)
        except Exception:
            pass

    threads = [_threading.Thread(target=slow) for _ in range({CAPACITY})]
    for thread in threads:
        thread.start()
    import time as _time
    _time.sleep(0.5)
    try:
        client.chat([{{"role": "user", "content": "one more"}}], max_tokens=8)
    except Exception:
        pass
    for thread in threads:
        thread.join()
    return steps
'''

WHEN_UNSURE = f'''
import json as _json
from shoppingbench.agent_sdk.proxy_client import ProxyClient as _Client

_react_main = agent_main


def _answered_ids(steps):
    ids = ""
    for step in steps:
        for call in ((step.get("completion") or {{}}).get("message") or {{}}).get("tool_call") or []:
            if call.get("name") == "recommend_product":
                ids = str((call.get("parameters") or {{}}).get("product_ids", ""))
    return [i for i in ids.split(",") if i.strip()]


def agent_main(problem):
    steps = _react_main(problem)
    if len(_answered_ids(steps)) == 1:  # sure of a one-product answer; unsure of several, or of none
        return steps
    try:
        _Client(timeout=60.0, max_retries=0).chat([{{"role": "user", "content": {BREAK!r}}}], max_tokens=8)
    except Exception:
        pass
    return [s for s in steps if "recommend_product" not in _json.dumps(s)]
'''


class LimitedProvider:
    """The scripted policy on a server that serves :data:`CAPACITY` calls at once (the slow ones hold a
    place for :data:`SLOW_S`): any call beyond is answered a 503."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy_until: list[float] = []

    def __call__(self, body: dict[str, Any]) -> StubReply:
        now = time.monotonic()
        with self._lock:
            self._busy_until = [end for end in self._busy_until if end > now]
            if SLOW in str(body.get("messages")):
                self._busy_until.append(now + SLOW_S)
                return StubReply(content="a long thought", delay_s=SLOW_S)
            if len(self._busy_until) >= CAPACITY:
                return StubReply(content="The server is over capacity.", status=503)
        return shopping_policy(body)


class CrashingFaults(Faults):
    """:class:`Faults` whose breaking input takes the provider down for the request after it too."""

    def __init__(self) -> None:
        super().__init__()
        self.crashes = 0

    def take(self, body: dict[str, Any] | None = None) -> Fault | None:
        if body is not None and BREAK in str(body.get("messages")):
            self.crashes += 1
            self.fail_next(1, Fault(status=503))  # still restarting when the next request comes
            return Fault(status=500)
        return super().take(body)


@dataclass
class Arena:
    run_agent: RunAgent
    faults: CrashingFaults


@pytest.fixture(scope="module")
def arena(small_world: SampleWorld) -> Iterator[Arena]:
    engine: BM25SearchEngine = open_catalog(small_world.catalog_dir)
    faults = CrashingFaults()
    with running_server(create_app(LimitedProvider(), models=[MODEL], faults=faults)) as url:
        run_agent = sandbox_runner(engine, fake_grader(engine),
                                   inference=InferenceConfig(base_url=f"{url}/v1", models=[MODEL]),
                                   sandbox=SandboxConfig(backend="namespace", uid_base=UID_BASE), workers=1)
        yield Arena(run_agent=run_agent, faults=faults)
    engine.close()


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(2)


def scored(store: TrajectoryStore, run_agent: RunAgent, agent: AgentFile, suite: Sequence[Problem]
           ) -> FinalScore:
    """The run scored as a validator's ticks score it: again after every ``RetriesPending``."""
    runs = SuiteRun(store=store, run_agent=run_agent, judge=OfflineJudge(), validator="5Validator",
                    leak_config=LeakConfig(), infra_retries=RETRIES)
    for _ in range(RETRIES):
        try:
            return runs.score(RUN, agent=agent, hotkey="5Mallory", submitted_at=0.0, suite=suite)
        except RetriesPending:
            continue
    return runs.score(RUN, agent=agent, hotkey="5Mallory", submitted_at=0.0, suite=suite)


def records(store: TrajectoryStore, agent: AgentFile, suite: Sequence[Problem]) -> list[AttemptRecord]:
    found = [store.get_attempt(AttemptKey("race-reroll", agent.sha256, p.id)) for p in suite]
    return [attempt.record for attempt in found if attempt is not None]


@pytest.fixture(scope="module")
def honest(arena: Arena, suite: list[Problem], tmp_path_factory: pytest.TempPathFactory) -> FinalScore:
    agent = AgentFile.read(react_with("", tmp_path_factory.mktemp("honest") / "react.py"))
    store = TrajectoryStore.open(f"sqlite:///{tmp_path_factory.mktemp('honest-store') / 't.sqlite3'}")
    try:
        result = scored(store, arena.run_agent, agent, suite)
    finally:
        store.close()
    assert len(result.outcomes) == len(suite)
    assert not all(o.success for o in result.outcomes), "the attacks need a problem ReAct fails"
    return result


def test_slow_calls_kept_in_flight_after_answering_cannot_turn_failures_into_outages(
        arena: Arena, suite: list[Problem], honest: FinalScore, tmp_path: Path) -> None:
    agent = AgentFile.read(react_with(AFTER_ANSWERING, tmp_path / "after_answering.py"))
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 't.sqlite3'}")
    try:
        result = scored(store, arena.run_agent, agent, suite)
        attempts = records(store, agent, suite)
    finally:
        store.close()
    outages = [[c for c in r.provider_errors() if c.provider_down] for r in attempts]
    assert all(outages), "the provider answered the last call and the probe a 503 on every attempt"
    assert not any(r.infra_failed for r in attempts)
    assert [o.problem_id for o in result.outcomes] == [p.id for p in suite]  # every failure counted
    assert [o.success for o in result.outcomes] == [o.success for o in honest.outcomes]
    assert result.success_rate == honest.success_rate < 1.0


def test_a_provider_breaking_input_sent_when_unsure_re_rolls_nothing_into_a_gain(
        arena: Arena, suite: list[Problem], honest: FinalScore, tmp_path: Path) -> None:
    agent = AgentFile.read(react_with(WHEN_UNSURE, tmp_path / "when_unsure.py"))
    crashes = arena.faults.crashes
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 't.sqlite3'}")
    try:
        result = scored(store, arena.run_agent, agent, suite)
        attempts = records(store, agent, suite)
    finally:
        store.close()
        arena.faults.clear()
    assert arena.faults.crashes > crashes, "the agent was unsure at least once"
    assert [o.problem_id for o in result.outcomes] == [p.id for p in suite]  # nothing left out
    broken = [r for r in attempts if r.infra_failed]
    assert broken and all(r.infra_retries == RETRIES and not r.score.success for r in broken)
    assert result.success_rate <= honest.success_rate and result.score <= honest.score
