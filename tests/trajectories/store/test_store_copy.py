"""A store copied into another database, both ways between SQLite and PostgreSQL: every attempt reads
back the same with its verdicts and id, and a later write continues after the copied ids."""

from __future__ import annotations

import pytest

from tests.trajectories.conftest import BACKENDS, fresh_store_url
from tests.trajectories.records import failed_record, react_record
from trajectories.store import AgentEntry, AttemptKey, AttemptWrite, JudgeVerdict, RunEntry, TrajectoryStore
from trajectories.store.copy import copy_store
from trajectories.store.repository import StoreError

ALICE = "a" * 64


def _fill(store: TrajectoryStore) -> list[AttemptKey]:
    store.register_agent(AgentEntry(code_hash=ALICE, hotkey="alice-hotkey"))
    store.register_run(RunEntry(id="q-1", kind="qualifying", suite="qualifying-alice"))
    judged = JudgeVerdict(model="judge-a", quality=0.7)
    records = [react_record(run_id="q-1", agent_hash=ALICE, problem_id=f"p{i}") for i in range(7)]
    records.append(failed_record(run_id="q-1", agent_hash=ALICE, problem_id="k1"))
    store.write_attempts([AttemptWrite(record=r, judge=judged) for r in records])
    return [AttemptKey.of(r) for r in records]


@pytest.mark.parametrize("source_backend", BACKENDS)
def test_a_copied_store_reads_back_the_same(source_backend: str, request: pytest.FixtureRequest) -> None:
    target_backend = "postgresql" if source_backend == "sqlite" else "sqlite"
    with (
        TrajectoryStore.open(fresh_store_url(source_backend, request, "source")) as source,
        TrajectoryStore.open(fresh_store_url(target_backend, request, "target")) as target,
    ):
        keys = _fill(source)
        copied = copy_store(source, target, batch=3)
        assert copied["attempts"] == len(keys) and copied["agents"] == 1 and copied["runs"] == 1
        for key in keys:
            assert target.get_attempt(key) == source.get_attempt(key)
        assert target.category_scores(["qualifying"]) == source.category_scores(["qualifying"])

        later = react_record(run_id="q-1", agent_hash=ALICE, problem_id="later")
        target.write_attempt(later)
        stored = target.get_attempt(AttemptKey.of(later))
        assert stored is not None
        assert stored.id > max(a.id for a in (source.get_attempt(k) for k in keys) if a is not None)

        with pytest.raises(StoreError, match="already holds attempts"):
            copy_store(source, target)
