"""The store sums up its attempts per run, agent and category, and per structural-filter label."""

from __future__ import annotations

import pytest

from shoppingbench.records import AttemptRecord
from tests.trajectories.records import failed_record, react_record
from trajectories.filter import label_attempt
from trajectories.store import (
    AgentEntry,
    AttemptKey,
    AttemptWrite,
    CategoryScore,
    JudgeVerdict,
    RunEntry,
    TrajectoryStore,
)

ALICE = "a" * 64
BOB = "b" * 64


def _judged(record: AttemptRecord, quality: float) -> AttemptWrite:
    return AttemptWrite(record=record, judge=JudgeVerdict(model="judge-a", quality=quality))


def _fill(store: TrajectoryStore) -> None:
    """Alice's qualifying run (two vouchers judged 0.6 and 0.8, one failed product), Bob's race (one
    failed product, never judged) and a local test of Alice's that no validator score counts."""
    store.register_agent(AgentEntry(code_hash=ALICE, hotkey="alice-hotkey"))
    store.register_run(RunEntry(id="q-1", kind="qualifying", suite="qualifying-alice"))
    store.register_run(RunEntry(id="r-1", kind="race", suite="race-2026-11-21"))
    store.register_run(RunEntry(id="t-1", kind="local_test"))
    store.write_attempts([
        _judged(react_record(run_id="q-1", agent_hash=ALICE, problem_id="v1"), 0.6),
        _judged(react_record(run_id="q-1", agent_hash=ALICE, problem_id="v2"), 0.8),
        failed_record(run_id="q-1", agent_hash=ALICE, problem_id="k1"),
        failed_record(run_id="r-1", agent_hash=BOB, problem_id="k1"),
        react_record(run_id="t-1", agent_hash=ALICE, problem_id="v1"),
    ])


def test_category_scores_sum_up_each_run_agent_and_category_of_the_runs_asked(store: TrajectoryStore) -> None:
    _fill(store)

    scores = store.category_scores(["qualifying", "race"])

    assert [(s.run_id, s.category) for s in scores] == [("q-1", "product"), ("q-1", "voucher"),
                                                         ("r-1", "product")]
    product, voucher, race = scores
    assert product == CategoryScore(run_id="q-1", kind="qualifying", suite="qualifying-alice",
                                    agent_hash=ALICE, hotkey="alice-hotkey", category="product", attempts=1,
                                    success_rate=0.0, mean_quality=None)
    assert voucher.attempts == 2 and voucher.success_rate == 1.0
    assert voucher.mean_quality == pytest.approx(0.7)
    assert race == CategoryScore(run_id="r-1", kind="race", suite="race-2026-11-21", agent_hash=BOB,
                                 hotkey=None, category="product", attempts=1, success_rate=0.0,
                                 mean_quality=None)
    assert [s.run_id for s in store.category_scores(["local_test"])] == ["t-1"]
    assert store.category_scores([]) == []


def test_provider_failures_count_as_the_runs_score_counts_them(store: TrajectoryStore) -> None:
    """An attempt the provider failed on every try, scored by its run as the agent's failure (its verdict
    stored with it), counts as a failure; one still owed a retry (no verdict) is left out."""
    store.register_run(RunEntry(id="r-1", kind="race", suite="race-2026-11-21"))
    spent = failed_record(run_id="r-1", agent_hash=BOB, problem_id="k1").model_copy(
        update={"infra_failed": True, "infra_retries": 2})
    owed = failed_record(run_id="r-1", agent_hash=BOB, problem_id="k2").model_copy(
        update={"infra_failed": True, "infra_retries": 1})
    store.write_attempts([_judged(failed_record(run_id="r-1", agent_hash=BOB, problem_id="k0"), 0.3),
                          _judged(spent, 0.1), AttemptWrite(record=owed)])

    (product,) = store.category_scores(["race"])
    assert (product.attempts, product.success_rate) == (2, 0.0)
    assert product.mean_quality == pytest.approx(0.2)
    store.set_judge_verdict(AttemptKey.of(owed), JudgeVerdict(model="judge-a", quality=0.2))  # now scored
    (product,) = store.category_scores(["race"])
    assert product.attempts == 3 and product.mean_quality == pytest.approx(0.2)


def test_scored_runs_page_newest_first_and_scores_read_only_their_runs(store: TrajectoryStore) -> None:
    _fill(store)
    store.register_run(RunEntry(id="r-0", kind="race", suite="race-2026-11-20", started_at=1.0))
    store.register_run(RunEntry(id="r-2", kind="race", suite="race-2026-11-22", started_at=3.0))

    assert store.scored_runs(["qualifying", "race"], offset=0, limit=2) == (["r-2", "r-0"], 4)
    assert store.scored_runs(["qualifying", "race"], offset=2, limit=2) == (["q-1", "r-1"], 4)
    assert store.scored_runs(["local_test"], offset=0, limit=5) == (["t-1"], 1)
    only = store.category_scores(["qualifying", "race"], run_ids=["r-1"])
    assert [(s.run_id, s.category) for s in only] == [("r-1", "product")]
    assert store.category_scores(["qualifying", "race"], run_ids=[]) == []


def test_attempts_per_label_counts_the_unlabelled_apart(store: TrajectoryStore) -> None:
    assert store.attempts_per_label() == {}
    _fill(store)
    record = react_record(run_id="q-1", agent_hash=ALICE, problem_id="v1")
    verdict = label_attempt(record.proxy_log, record.steps)
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None
    store.set_labels([(stored.id, verdict)])

    assert store.attempts_per_label() == {verdict.label: 1, "unlabelled": 4}
