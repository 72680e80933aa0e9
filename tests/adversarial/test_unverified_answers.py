"""Answers bound to verified tool results (issue 14, item 1; SPEC 3 "Verified answers").

Seen: a ReAct agent whose code appended a tabulated answer in a final ``recommend_product`` step scored
9/9 and was labelled ``agentic``. Through the real sandbox, proxy and scripted model: such an attempt is
not a success, is recorded with the reason ``unverified_answer`` (the reference scorer's success kept
beside it), is flagged in the store and the dump, is not ``agentic`` and never reaches training data.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from shoppingbench.grading.verified import UNVERIFIED_ANSWER, returned_ids
from shoppingbench.problems.models import Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from tests.adversarial.support import ROOMY, inference, react_with
from tests.sandbox_support import run_agent
from trajectories.dumps.export import DumpWindow, ExportOptions, export_dump
from trajectories.dumps.splits import SplitRule
from trajectories.filter import label_attempt
from trajectories.store import ProblemEntry, TrajectoryStore
from trajectories.training.data.conversations import DataFilter, select_conversations

__all__ = ["inference"]

HIDDEN_ANSWER = '''
from shoppingbench.agent_sdk import create_dialogue_step

ANSWERS = {answers!r}
_honest_main = agent_main


def agent_main(problem):
    steps = _honest_main(problem)
    ids = ANSWERS.get(problem["query"], "")
    call = {{"name": "recommend_product", "parameters": {{"product_ids": ids}}, "tool_call_id": "hidden",
             "result": "ok"}}
    steps.append(create_dialogue_step("Recommending.", [call], None, query=problem["query"],
                                      step=len(steps), timestamp=1.0))
    return steps
'''


def _hidden_answer_agent(suite: list[Problem], tmp_path: Path) -> Path:
    """The ReAct agent plus a table of every problem's answer, appended after the model's own answer."""
    answers = {p.query: ",".join(t.product_id for t in p.targets) for p in suite}
    return react_with(HIDDEN_ANSWER.format(answers=answers), tmp_path / "hidden_answer.py")


@pytest.fixture(scope="module")
def suite(small_world: SampleWorld) -> list[Problem]:
    return small_world.suite(2)


@pytest.fixture(scope="module")
def records(suite: list[Problem], small_engine: BM25SearchEngine, inference: InferenceConfig,
            tmp_path_factory: pytest.TempPathFactory) -> list[AttemptRecord]:
    """The hidden-answer agent over the suite, in the sandbox (the namespace backend, as validators run)."""
    agent = _hidden_answer_agent(suite, tmp_path_factory.mktemp("agents"))
    return run_agent(agent, suite, small_engine, limits=ROOMY, workers=2, inference=inference)


def test_answers_no_tool_returned_fail_as_unverified(records: list[AttemptRecord]) -> None:
    cheated = [r for r in records if not set(r.score.answer) <= returned_ids(r.proxy_log)]
    assert cheated, "the table's answers were retrieved honestly everywhere: no attack to refuse"
    for record in records:
        if record in cheated:
            assert record.failure is not None and record.failure.kind == UNVERIFIED_ANSWER
            assert record.answer_verified is False and not record.score.success
            assert record.score.rule == 0 and record.score.answer == record.reference_score.answer
            # The exact reference scorer still says what it said: the table was right.
            assert record.reference_score is not None and record.reference_score.success
            assert record.steps, "the dialogue is kept for the store and the judge"
        else:
            assert record.answer_verified is True and record.failure is None
    # The model never recommended the table's ids: its code did, so the attempt is not agentic.
    for record in cheated:
        verdict = label_attempt(record.proxy_log, record.steps)
        assert verdict.label != "agentic" and not verdict.evidence.recommendation_emitted


def test_unverified_attempts_are_flagged_in_store_and_dump_and_never_trained_on(
        suite: list[Problem], records: list[AttemptRecord], tmp_path: Path) -> None:
    cheated = {r.problem_id for r in records if r.answer_verified is False}
    assert cheated
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'store.sqlite3'}") as store:
        store.register_problems(ProblemEntry.of(p, leak_cluster=f"cluster-{p.id}") for p in suite)
        store.write_attempts(records)
        stored = store.load(store.attempt_ids())
        assert {s.record.problem_id for s in stored if s.record.failure
                and s.record.failure.kind == UNVERIFIED_ANSWER} == cheated
        since = datetime.fromtimestamp(min(r.started_at for r in records) - 1, UTC)
        until = datetime.fromtimestamp(max(r.started_at for r in records) + 1, UTC)
        dump = tmp_path / "dump"
        export_dump(store, DumpWindow(since, until), dump, progress=False,
                    options=ExportOptions(split_rule=SplitRule(held_out_fraction=0)))
    rows = [row for path in sorted((dump / "data").glob("*.parquet"))
            for row in pq.read_table(path).to_pylist()]
    flagged = {row["problem_id"] for row in rows if row["answer_verified"] is False}
    assert flagged == cheated
    assert all(row["failure_kind"] == UNVERIFIED_ANSWER and row["reference_success"] is not None
               for row in rows if row["problem_id"] in cheated)
    # Even a filter that keeps every label never trains on them.
    everything = DataFilter(labels=frozenset({"agentic", "sub_task", "no_llm"}))
    selection = select_conversations([dump], everything)
    assert not {c.problem_id for c in selection.conversations} & cheated
    assert selection.dropped[UNVERIFIED_ANSWER] == len(cheated)
