"""Repeat-the-tool-call laundering (issue 22, item 3; SPEC 6: agentic means the model emitted the calls).

Seen: code that asks the model to repeat each tool call before the code runs it got every attempt
labelled ``agentic`` (15/15), so parser-made dialogues would enter the dumps and SFT as model reasoning.
Through the real namespace sandbox, verified proxy and scripted model: none is ``agentic``, every echoed
completion is counted, and the count is kept in the store and exported in the dump.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from tests.adversarial.echo_agents import repeat_calls_agent
from tests.adversarial.support import ROOMY, inference
from tests.sandbox_support import run_agent
from trajectories.dumps.export import DumpWindow, ExportOptions, export_dump
from trajectories.dumps.splits import SplitRule
from trajectories.filter import label_attempt
from trajectories.labelling import label_stored
from trajectories.store import ProblemEntry, TrajectoryStore

__all__ = ["inference"]


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(2)


@pytest.fixture(scope="module")
def laundered(suite: list[Problem], small_engine: BM25SearchEngine, inference: InferenceConfig,
              tmp_path_factory: pytest.TempPathFactory) -> list[AttemptRecord]:
    agent = repeat_calls_agent(tmp_path_factory.mktemp("agents"))
    records = run_agent(agent, suite, small_engine, limits=ROOMY, workers=2, inference=inference)
    assert all(r.failure is None for r in records), [r.stderr_tail for r in records]
    return records


def test_repeated_tool_calls_are_not_the_models(laundered: list[AttemptRecord]) -> None:
    for record in laundered:
        completions = [c for c in record.proxy_log if c.kind == "inference"]
        assert completions and all("<tool_call>" in (c.completion_text or "") for c in completions)
        verdict = label_attempt(record.proxy_log, record.steps, query=record.query)
        assert verdict.label == "sub_task", verdict.reasons
        evidence = verdict.evidence
        assert evidence.matched_tool_calls == 0 and evidence.executed_tool_calls >= 1
        assert evidence.echoed_completions == len(completions)
        assert any("only repeated" in reason for reason in verdict.reasons)


def test_laundered_attempts_are_marked_in_store_and_dump(suite: list[Problem], laundered: list[AttemptRecord],
                                                         tmp_path: Path) -> None:
    expected = {r.problem_id: sum(c.kind == "inference" for c in r.proxy_log) for r in laundered}
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'store.sqlite3'}") as store:
        store.register_problems(ProblemEntry.of(p, leak_cluster=f"cluster-{p.id}") for p in suite)
        store.write_attempts(laundered)
        assert label_stored(store, progress=False)["agentic"] == 0
        with store.engine.connect() as connection:
            stored: dict[str, int] = dict(connection.exec_driver_sql(
                "SELECT problem_id, echoed_completions FROM attempts").all())
        assert stored == expected
        since = datetime.fromtimestamp(min(r.started_at for r in laundered) - 1, UTC)
        until = datetime.fromtimestamp(max(r.started_at for r in laundered) + 1, UTC)
        dump = tmp_path / "dump"
        export_dump(store, DumpWindow(since, until), dump, progress=False,
                    options=ExportOptions(split_rule=SplitRule(held_out_fraction=0)))
    rows = [row for path in sorted((dump / "data").glob("*.parquet"))
            for row in pq.read_table(path).to_pylist()]
    assert {row["problem_id"]: row["echoed_completions"] for row in rows} == expected
    assert {row["filter_label"] for row in rows} == {"sub_task"}
