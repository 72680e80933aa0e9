"""Provider outages cost miners nothing while retries last: attempts the inference provider failed are
re-run later (only those, a bounded number of times, with the same problem; still failed after them,
they count as failures), a judge that failed for most of a run is asked again instead of the run being
scored offline, and a budget refusal is the agent's own failure.

Real pieces: the ReAct reference agent in the bubblewrap sandbox behind the verified proxy, one slot (so
the order of LLM calls, and with it where an outage lands, is deterministic), the offline or the LLM judge,
SQLite trajectory stores. Test doubles only for the hosted LLMs: the scripted shopping policy and a judge
model served by ``shoppingbench.doubles.llm_server``, failing on command (``Faults``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from arena.judge import (
    FallbackJudge,
    FinalScore,
    JudgeCallConfig,
    JudgeInput,
    JudgeModel,
    JudgeVerdict,
    LLMJudge,
    OfflineJudge,
)
from arena.race import ManualClock, SqlEventStore
from arena.race.events import RaceResultRecorded
from arena.settings import ArenaSettings
from arena.storage import open_database
from arena.submissions.store import FileStore
from arena.suites import FixedSource
from arena.suites.clusters import LeakConfig
from arena.validator import open_validator, sandbox_runner
from arena.validator.api import ArenaView
from arena.validator.api import create_app as create_api
from arena.validator.runs import RetriesPending, RunAgent, SuiteRun, judge_failed
from shoppingbench.agents import react_llm
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import Fault, Faults, StubReply, create_app
from shoppingbench.doubles.scripted_policies import shopping_policy
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceBudgets, InferenceConfig
from shoppingbench.proxy.health import observe_call
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.serving import running_server
from tests.arena.validator.test_validator import REACT, START, accept_upload, raced_suite
from tests.chain_support import CountingChain, make_wallet, register
from tests.sandbox_support import UID_BASE, fake_grader
from trajectories.filter.decided import carry_run_steering
from trajectories.store import AttemptKey, RunEntry, TrajectoryStore

MODEL = "stub-shopper"
AGENT = AgentFile.read(Path(react_llm.__file__))
FAILS_ONE_CALL = 3 * 2
"""Failed provider calls that make the agent give up one LLM call (its SDK tries each call 3 times, and
the proxy probes the provider after each failure: the probe must fail too for an outage)."""
JUDGE_ANSWER = StubReply(content='{"reasoning_quality": 0.9, "explanation": "compares two candidates"}')


@dataclass
class Provider:
    """The agents' inference provider (the scripted policy) and the runner over it, failing on command."""

    faults: Faults
    run_agent: RunAgent
    url: str
    engine: BM25SearchEngine

    def runner(self, **budgets: int) -> RunAgent:
        return sandbox_runner(self.engine, fake_grader(self.engine),
                              inference=InferenceConfig(base_url=f"{self.url}/v1", models=[MODEL],
                                                        budgets=InferenceBudgets(**budgets)),
                              sandbox=SandboxConfig(backend="namespace", uid_base=UID_BASE), workers=1)


@pytest.fixture(scope="module")
def provider(small_world: SampleWorld) -> Iterator[Provider]:
    engine = open_catalog(small_world.catalog_dir)
    faults = Faults()
    with running_server(create_app(shopping_policy, models=[MODEL], faults=faults)) as url:
        found = Provider(faults=faults, run_agent=lambda *a: iter(()), url=url, engine=engine)
        found.run_agent = found.runner()
        yield found
    engine.close()


@pytest.fixture()
def faults(provider: Provider) -> Iterator[Faults]:
    provider.faults.clear()
    yield provider.faults
    provider.faults.clear()


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(1)


@pytest.fixture(scope="module")
def baseline(provider: Provider, suite: list[Problem], tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[FinalScore, list[int]]:
    """The run without an outage, and the LLM calls each problem's attempt made (in suite order)."""
    provider.faults.clear()
    with opened(tmp_path_factory.mktemp("baseline") / "t.sqlite3") as store:
        runs = suite_run(store, provider.run_agent)
        score = runs.score(**run_args(suite))
        calls = [sum(c.kind == "inference" for c in attempt(store, p).proxy_log) for p in suite]
    assert all(calls), "every attempt of the ReAct agent asks the LLM"
    return score, calls


@contextmanager
def opened(path: Path) -> Iterator[TrajectoryStore]:
    store = TrajectoryStore.open(f"sqlite:///{path}")
    try:
        yield store
    finally:
        store.close()


def suite_run(store: TrajectoryStore, run_agent: RunAgent, **fields: Any) -> SuiteRun:
    return SuiteRun(store=store, run_agent=run_agent, judge=fields.pop("judge", OfflineJudge()),
                    validator="5Validator", leak_config=LeakConfig(), **fields)


def run_args(suite: Sequence[Problem], run_id: str = "race-outage") -> dict[str, Any]:
    return {"run": RunEntry(id=run_id, kind="race", suite="race-day"), "agent": AGENT, "hotkey": "5Alice",
            "submitted_at": 0.0, "suite": suite}


def attempt(store: TrajectoryStore, problem: Problem, run_id: str = "race-outage") -> AttemptRecord:
    stored = store.get_attempt(AttemptKey(run_id, AGENT.sha256, problem.id))
    assert stored is not None
    return stored.record


def recording(run_agent: RunAgent, asked: list[list[str]]) -> RunAgent:
    """``run_agent``, noting which problems each call runs."""
    def run(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
        asked.append([p.id for p in problems])
        return run_agent(agent, problems, run_id)
    return run


def test_an_outage_mid_run_retries_only_the_failed_attempts_and_scores_as_without_it(
        provider: Provider, faults: Faults, suite: list[Problem], baseline: tuple[FinalScore, list[int]],
        tmp_path: Path) -> None:
    score, calls = baseline
    faults.fail_next(2 * FAILS_ONE_CALL, Fault(status=503), after=calls[0])  # the 2nd and 3rd attempts
    asked: list[list[str]] = []
    with opened(tmp_path / "t.sqlite3") as store:
        runs = suite_run(store, recording(provider.run_agent, asked))
        with pytest.raises(RetriesPending) as pending:
            runs.score(**run_args(suite))
        failed = [p.id for p in suite[1:3]]
        assert list(pending.value.problem_ids) == failed and not pending.value.judge
        assert [attempt(store, p).infra_failed for p in suite] == [False, True, True]
        assert all(c.provider_error == "http_5xx" for c in attempt(store, suite[1]).provider_errors())
        assert store.get_attempt(AttemptKey("race-outage", AGENT.sha256, failed[0])).judge is None  # type: ignore[union-attr]
        assert runs.score(**run_args(suite)) == score  # later: the two re-run, on the same problems
        assert asked == [[p.id for p in suite], failed]
        assert [attempt(store, p).infra_retries for p in suite] == [0, 1, 1]
        assert store.count_attempts() == len(suite)


def test_a_restart_mid_retry_neither_loses_nor_doubles_an_attempt(
        provider: Provider, faults: Faults, suite: list[Problem], baseline: tuple[FinalScore, list[int]],
        tmp_path: Path) -> None:
    score, calls = baseline
    faults.fail_next(2 * FAILS_ONE_CALL, Fault(kind="drop"), after=calls[0])
    path = tmp_path / "t.sqlite3"
    with opened(path) as store, pytest.raises(RetriesPending):
        suite_run(store, provider.run_agent).score(**run_args(suite))

    class Killed(BaseException):
        pass

    def killed_after_one(agent: AgentFile, problems: Sequence[Problem],
                         run_id: str) -> Iterator[AttemptRecord]:
        records = provider.run_agent(agent, problems, run_id)
        yield next(records)  # stored, then the validator dies mid-retry (no cleanup runs in the run)
        raise Killed

    with opened(path) as store, pytest.raises(Killed):
        suite_run(store, killed_after_one).score(**run_args(suite))
    asked: list[list[str]] = []
    with opened(path) as store:  # the restarted validator
        assert suite_run(store, recording(provider.run_agent, asked)).score(**run_args(suite)) == score
        assert asked == [[suite[2].id]]
        assert store.count_attempts() == len(suite)
        assert [attempt(store, p).infra_retries for p in suite] == [0, 1, 1]


def test_a_persistent_outage_scores_what_it_has_loudly_and_never_against_the_agent(
        provider: Provider, faults: Faults, suite: list[Problem], baseline: tuple[FinalScore, list[int]],
        tmp_path: Path) -> None:
    score, calls = baseline
    faults.fail_next(1_000, Fault(kind="status", status=502), after=calls[0])  # down after the 1st attempt
    with opened(tmp_path / "t.sqlite3") as store:
        runs = suite_run(store, provider.run_agent, infra_retries=5)
        for _ in range(2):
            with pytest.raises(RetriesPending):
                runs.score(**run_args(suite))
        with capture_logs() as logs:
            final = runs.score(**run_args(suite), final=True)  # e.g. the race's deadline passed
        assert [attempt(store, p).infra_retries for p in suite] == [0, 2, 2]
        # GET /scores counts what the score counts: the attempts owed a retry are left out there too.
        assert [(s.category, s.attempts) for s in store.category_scores(["race"])] == [(suite[0].category, 1)]
    (error,) = [e for e in logs if e["event"] == "suite_run_recorded_with_missing_attempts"]
    assert error["log_level"] == "error" and error["missing"] == [p.id for p in suite[1:]]
    assert error["reason"] == "deadline passed"
    assert [o.problem_id for o in final.outcomes] == [suite[0].id]  # not failures: left out of the score
    assert final.outcomes[0] == score.outcomes[0]
    assert final.success_rate == float(score.outcomes[0].success)


def test_retries_are_bounded(provider: Provider, faults: Faults, suite: list[Problem],
                             baseline: tuple[FinalScore, list[int]], tmp_path: Path) -> None:
    faults.outage(Fault(status=503))
    with opened(tmp_path / "t.sqlite3") as store:
        runs = suite_run(store, provider.run_agent, infra_retries=1)
        with pytest.raises(RetriesPending):
            runs.score(**run_args(suite[:1]))
        with capture_logs() as logs:
            final = runs.score(**run_args(suite[:1]))  # the one retry failed too: the agent's failure
        assert attempt(store, suite[0]).infra_retries == 1
        assert store.get_attempt(AttemptKey("race-outage", AGENT.sha256, suite[0].id)).judge is not None  # type: ignore[union-attr]
        # GET /scores counts it as the score does: one attempt, failed.
        assert [(s.attempts, s.success_rate) for s in store.category_scores(["race"])] == [(1, 0.0)]
    assert [(o.problem_id, o.success) for o in final.outcomes] == [(suite[0].id, False)]
    assert final.score == 0.0
    (counted,) = [e for e in logs if e["event"] == "suite_run_counted_provider_failures"]
    assert counted["failed"] == [suite[0].id]
    assert not [e for e in logs if e["event"] == "suite_run_recorded_with_missing_attempts"]


def test_a_spent_budget_is_the_agents_failure_and_is_not_retried(
        provider: Provider, faults: Faults, suite: list[Problem], tmp_path: Path) -> None:
    asked: list[list[str]] = []
    with opened(tmp_path / "t.sqlite3") as store:
        runs = suite_run(store, recording(provider.runner(attempt_calls=1), asked))
        result = runs.score(**run_args(suite[:1]))  # no RetriesPending
        record = attempt(store, suite[0])
    assert [c.status for c in record.refused_calls()] == [429]
    assert not record.infra_failed and record.provider_errors() == []
    assert [o.problem_id for o in result.outcomes] == [suite[0].id]  # counted, as the agent's own doing
    assert asked == [[suite[0].id]]


def test_a_request_that_breaks_the_provider_is_the_agents_failure_and_is_not_retried(
        provider: Provider, faults: Faults, suite: list[Problem], tmp_path: Path) -> None:
    """A miner cannot turn hard problems into unscored ones by making the provider fail on purpose: the
    proxy's probe is answered, so the attempt counts as the agent's failure."""
    faults.break_on(suite[0].query)
    asked: list[list[str]] = []
    with opened(tmp_path / "t.sqlite3") as store:
        result = suite_run(store, recording(provider.run_agent, asked)).score(**run_args(suite[:1]))
        record = attempt(store, suite[0])
    errors = record.provider_errors()
    assert errors and all(c.provider_error == "http_5xx" and c.provider_down is False for c in errors)
    assert not record.infra_failed and not record.score.success
    assert [o.problem_id for o in result.outcomes] == [suite[0].id] and asked == [[suite[0].id]]


@pytest.fixture(scope="module")
def judge_provider() -> Iterator[tuple[str, Faults]]:
    faults = Faults()
    with running_server(create_app(lambda body: JUDGE_ANSWER, faults=faults)) as url:
        yield f"{url}/v1", faults


def llm_judge(base_url: str) -> FallbackJudge:
    return FallbackJudge(LLMJudge([JudgeModel(name="judge-a", base_url=base_url)],
                                  JudgeCallConfig(timeout_s=5.0, max_rounds=1), sleep=lambda _: None))


def test_a_judge_failing_for_most_of_a_run_retries_it_instead_of_scoring_offline(
        provider: Provider, faults: Faults, suite: list[Problem], judge_provider: tuple[str, Faults],
        tmp_path: Path) -> None:
    base_url, judge_faults = judge_provider
    judge_faults.clear()
    with opened(tmp_path / "healthy.sqlite3") as store:
        healthy = suite_run(store, provider.run_agent, judge=llm_judge(base_url)).score(**run_args(suite))
    assert healthy.offline_verdicts == 0 and healthy.verdicts == len(suite)
    judge_faults.fail_next(2, Fault(status=503))  # 2 of 3 judge calls fail: more than half
    with opened(tmp_path / "t.sqlite3") as store:
        runs = suite_run(store, provider.run_agent, judge=llm_judge(base_url))
        with pytest.raises(RetriesPending) as pending:
            runs.score(**run_args(suite))
        assert pending.value.judge and pending.value.problem_ids == ()
        assert runs.score(**run_args(suite)) == healthy  # judged again once the judge answers
    judge_faults.fail_next(1, Fault(kind="drop"))  # 1 of 3 fails: today's offline fallback for that one
    with opened(tmp_path / "below.sqlite3") as store:
        below = suite_run(store, provider.run_agent, judge=llm_judge(base_url)).score(**run_args(suite))
    assert below.offline_verdicts == 1 and below.verdicts == len(suite)
    judge_faults.clear()


def test_verdicts_asked_again_are_judged_only_after_the_runs_steering_is_measured(
        provider: Provider, faults: Faults, suite: list[Problem], judge_provider: tuple[str, Faults],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The records a retried run reads back from the store carry no steering measure (it lives with the
    record in memory): asking the judge again before the run is measured would judge steered
    completions as the model's own."""
    base_url, judge_faults = judge_provider
    judge_faults.clear()
    events: list[str] = []

    def measured(records: Any) -> None:
        events.append("measured")
        carry_run_steering(records)

    class Spy(FallbackJudge):
        def judge(self, item: JudgeInput) -> JudgeVerdict:
            events.append("judged")
            return super().judge(item)

    monkeypatch.setattr("arena.validator.runs.carry_run_steering", measured)
    judge = llm_judge(base_url)
    judge_faults.fail_next(2, Fault(status=503))  # most of the run's judge calls fail: it is asked again
    with opened(tmp_path / "t.sqlite3") as store:
        runs = suite_run(store, provider.run_agent, judge=Spy(judge.primary))
        with pytest.raises(RetriesPending):
            runs.score(**run_args(suite))
        events.clear()
        runs.score(**run_args(suite))  # a new scoring of the stored run, as after a restart
    judge_faults.clear()
    assert events[0] == "measured" and "judged" in events, events


def test_judge_failure_rule() -> None:
    def verdicts(*calls: tuple[int, int]) -> list[JudgeVerdict]:
        return [JudgeVerdict(quality=0.5, judge="m", offline=False, explanation="", attempts=a,
                             failed_calls=f) for a, f in calls]

    assert not judge_failed(verdicts((1, 1), (1, 1)))  # 2 calls: fewer than 3
    assert judge_failed(verdicts((1, 1), (1, 1), (1, 0)))  # 2 of 3
    assert not judge_failed(verdicts((2, 1), (2, 1)))  # exactly half of 4
    assert judge_failed(verdicts((3, 2), (0, 0)))  # 2 of 3 within one verdict


def test_a_race_waits_for_retries_until_its_deadline_then_records_what_it_has_loudly(
        provider: Provider, faults: Faults, small_world: SampleWorld, tmp_path: Path) -> None:
    clock = ManualClock(START)
    chain = CountingChain(tmp_path / "chain.sqlite3", clock=clock, tempo=100, weights_rate_limit=50)
    wallets = {name: make_wallet(tmp_path / "wallets", name, seed=name) for name in ("owner", "alice", "v")}
    for name, wallet in wallets.items():
        register(chain, wallet, validator_permit=name == "v")
    (tmp_path / "v").mkdir()
    settings = ArenaSettings(home=tmp_path / "v", qualifying_suite_per_category=2, race_suite_per_category=1,
                             infra_retries=10, race_retry_deadline_hours=2)
    with ProblemGenerator.open(small_world.catalog_dir) as generator, \
            opened(tmp_path / "trajectories.sqlite3") as store:
        validator = open_validator(settings=settings, chain=chain, wallet=wallets["v"], clock=clock,
                                   sources=FixedSource(generator), run_agent=provider.run_agent, store=store)
        validator.tick()
        accept_upload(validator.files, validator.arena_db, wallets["alice"], REACT, block=chain.block(),
                      at=clock.now())
        clock.advance(timedelta(minutes=5))
        assert len(validator.tick().qualified) == 1  # 09:05, the provider answers
        faults.outage(Fault(status=503))
        clock.advance(timedelta(hours=7))  # 16:05: the race starts while the provider is down
        with capture_logs() as logs:
            started = validator.tick()
            clock.advance(timedelta(hours=1))
            waited = validator.tick()  # 17:05: still before the deadline (18:05)
            clock.advance(timedelta(hours=1))
            recorded = validator.tick()  # 18:05: the deadline
        assert started.race_started == "2026-11-19" and started.race_results == waited.race_results == []
        assert len(recorded.race_results) == 1
        suite_ids = list(raced_suite(validator))
        results = [e for e in validator.race.store.load() if isinstance(e, RaceResultRecorded)]
    chain.close()
    assert [e["event"] for e in logs].count("race_run_waiting_for_retries") == 2
    (loud,) = [e for e in logs if e["event"] == "race_result_recorded_with_missing_attempts"]
    assert loud["log_level"] == "error" and loud["missing"] == suite_ids
    (result,) = results
    assert result.outcomes == () and result.score == 0.0  # nothing scored: no attempt counted as failed


def test_metrics_serve_both_providers_health(tmp_path: Path) -> None:
    observe_call("judge", seconds=0.2, error="junk", at=1_700_000_000.0)
    observe_call("inference", seconds=1.5, error=None, at=1_700_000_001.0)
    database = open_database(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    with opened(tmp_path / "t.sqlite3") as store:
        view = ArenaView(events=SqlEventStore(database), store=store, files=FileStore(tmp_path / "agents"),
                         clock=ManualClock(START))
        with running_server(create_api(view)) as url, httpx.Client(base_url=url) as http:
            text = http.get("/metrics").text
    database.dispose()
    assert 'arena_provider_errors_total{kind="junk",provider="judge"}' in text
    assert 'arena_provider_calls_total{provider="inference"}' in text
    assert 'arena_provider_latency_seconds_bucket{le="2.0",provider="inference"}' in text
    assert 'arena_provider_last_success_timestamp_seconds{provider="inference"} 1.700000001e+09' in text
