"""A validator's runs record each problem's leak cluster as its exposure ledger placed it (the one source of
cluster ids): a problem asked again in disguise on a later day records its original's cluster, not the
suite's own clustering of it; without a ledger (a miner's local test), or for a problem the ledger never
placed, the suite's own clusters."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from structlog.testing import capture_logs

from arena.judge import OfflineJudge
from arena.suites import SqlExposureLedger, cluster_problems
from arena.suites.clusters import LeakConfig
from arena.validator.runs import SuiteRun
from shoppingbench.problems.models import Problem, RewardTarget
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile
from trajectories.doubles.synthetic import make_attempt
from trajectories.store import ProblemEntry, RunEntry, TrajectoryStore

AT = datetime(2026, 11, 22, 16, tzinfo=UTC)
SOURCE = b"print('an agent')\n"
AGENT = AgentFile(name="agent.py", source=SOURCE, sha256=hashlib.sha256(SOURCE).hexdigest())


def problem(problem_id: str, target: str, query: str) -> Problem:
    return Problem(id=problem_id, category="product", query=query,
                   targets=[RewardTarget(product_id=target, title=["zzz"])])


def scripted(agent: AgentFile, problems: Sequence[Problem], run_id: str) -> Iterator[AttemptRecord]:
    """The attempts a runner would yield (synthetic: what is recorded of them is the point here)."""
    rng = random.Random(run_id)
    for i, p in enumerate(problems):
        yield make_attempt(rng, "react", ProblemEntry.of(p), run_id=run_id, agent_hash=agent.sha256,
                           started_at=AT.timestamp() + i)


def recorded_clusters(store: TrajectoryStore, run_id: str) -> dict[str, str | None]:
    return {entry.id: entry.leak_cluster for entry in store.suite_problems(run_id)}


def run(store: TrajectoryStore, suite: Sequence[Problem], run_id: str,
        ledger: SqlExposureLedger | None) -> None:
    runs = SuiteRun(store=store, run_agent=scripted, judge=OfflineJudge(), validator="5Validator",
                    leak_config=LeakConfig(), ledger_clusters=ledger.clusters_of if ledger else None)
    runs.score(RunEntry(id=run_id, kind="race", suite=run_id), agent=AGENT, hotkey="5Alice", submitted_at=0.0,
               suite=suite)


def test_a_disguised_copy_records_its_originals_cluster_from_the_ledger(tmp_path: Path) -> None:
    ledger = SqlExposureLedger.open(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    first_day = [problem("p-1", "A", "a red kettle"), problem("p-2", "B", "walking boots")]
    # Day two asks both again, reworded, under ids that sort before the originals' (so the suite's own
    # clustering, keyed by each cluster's smallest id, names them differently), and one new problem.
    second_day = [problem("a-copy-1", "A", "a kettle, red"), problem("a-copy-2", "B", "boots for walking"),
                  problem("n-3", "C", "a desk lamp")]
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}") as store:
        ledger.expose(first_day, "race", "race-1", AT)
        run(store, first_day, "race-1", ledger)
        ledger.expose(second_day, "race", "race-2", AT + timedelta(days=1))
        run(store, second_day, "race-2", ledger)
        placed = ledger.clusters_of([p.id for p in (*first_day, *second_day)])
        assert placed["a-copy-1"] == placed["p-1"] == "p-1" and placed["a-copy-2"] == placed["p-2"] == "p-2"
        assert recorded_clusters(store, "race-2") == {"a-copy-1": "p-1", "a-copy-2": "p-2", "n-3": "n-3"}
        assert recorded_clusters(store, "race-1") == {"p-1": "p-1", "p-2": "p-2"}
        assert cluster_problems(second_day).cluster_of["a-copy-1"] == "a-copy-1", "the suite alone differs"


def test_without_a_ledger_or_a_placement_a_run_records_the_suites_own_clusters(tmp_path: Path) -> None:
    ledger = SqlExposureLedger.open(f"sqlite:///{tmp_path / 'arena.sqlite3'}")
    suite = [problem("q-2", "D", "a garden hose"), problem("q-1", "D", "a hose for the garden")]
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'local.sqlite3'}") as store:
        run(store, suite, "local", None)
        assert recorded_clusters(store, "local") == {"q-2": "q-1", "q-1": "q-1"}
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'validator.sqlite3'}") as store, \
            capture_logs() as logs:
        run(store, suite, "unplaced", ledger)  # never exposed: the ledger has not placed it
        assert recorded_clusters(store, "unplaced") == {"q-2": "q-1", "q-1": "q-1"}
    assert any(e["event"] == "suite_problems_not_in_ledger" and e["problems"] == 2 for e in logs)
