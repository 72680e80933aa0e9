"""The store keeps every field of an attempt, writes idempotently, and never loses an attempt's context."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select

from shoppingbench.records import AttemptRecord
from tests.trajectories.records import T0, failed_record, react_record
from trajectories.filter import label_attempt
from trajectories.store import (
    AgentEntry,
    AttemptKey,
    AttemptWrite,
    JudgeVerdict,
    ProblemEntry,
    RunEntry,
    TrajectoryStore,
)
from trajectories.store.schema import AGENTS, ATTEMPTS, PROBLEMS, RUNS

VERDICT = JudgeVerdict(model="judge-a", quality=0.7, explanation="compares 1001 and 1002 on price",
                       details={"attempts": 1, "gates": [0.1, 0.3]})


def test_a_realistic_attempt_round_trips_field_for_field(store: TrajectoryStore) -> None:
    record = react_record()
    label = label_attempt(record.proxy_log, record.steps)
    store.write_attempts([AttemptWrite(record=record, judge=VERDICT, label=label), failed_record()])

    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None
    assert stored.record == record
    # Equality of models can hide a type change (1 == 1.0): compare the JSON too.
    assert stored.record.model_dump_json() == record.model_dump_json()
    assert stored.judge == VERDICT
    assert stored.label == label
    assert stored.record.proxy_log[2].request_messages == record.proxy_log[2].request_messages
    assert len(stored.record.proxy_log[2].request_messages or []) == 4

    failed = store.get_attempt(AttemptKey.of(failed_record()))
    assert failed is not None and failed.record == failed_record()
    assert failed.judge is None and failed.label is None
    assert store.get_attempt(AttemptKey("run-1", "a" * 64, "missing")) is None


def test_rewriting_an_attempt_never_duplicates_it(store: TrajectoryStore) -> None:
    record = react_record()
    store.write_attempt(AttemptWrite(record=record, judge=VERDICT))
    store.write_attempts([record, record])
    assert store.count_attempts() == 1
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None
    assert stored.judge == VERDICT, "an identical re-write must keep the verdict already stored"

    changed = record.model_copy(update={"finished_at": record.finished_at + 1})
    store.write_attempt(changed)
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None and stored.record == changed
    assert stored.judge is None, "a verdict about the old content must not stay on new content"
    assert store.count_attempts() == 1

    newer = VERDICT.model_copy(update={"quality": 0.9})
    store.write_attempt(AttemptWrite(record=changed, judge=newer))
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None and stored.judge == newer


def test_the_same_key_twice_in_one_batch_keeps_the_last(store: TrajectoryStore) -> None:
    first = react_record()
    second = first.model_copy(update={"stderr_tail": "second"})
    store.write_attempts([first, second])
    assert store.count_attempts() == 1
    stored = store.get_attempt(AttemptKey.of(first))
    assert stored is not None and stored.record.stderr_tail == "second"


def test_unregistered_context_is_created_and_registration_only_adds_knowledge(store: TrajectoryStore) -> None:
    record = react_record()
    store.write_attempt(record)
    with store.engine.connect() as connection:
        problem = connection.execute(select(PROBLEMS)).one()
        run = connection.execute(select(RUNS)).one()
        agent = connection.execute(select(AGENTS)).one()
    assert (problem.id, problem.category, problem.version, problem.leak_cluster) == ("p1", "voucher", 1, None)
    assert "\x00" not in problem.query and problem.query.startswith("Tìm bình nước")
    assert (run.id, run.kind, agent.code_hash, agent.hotkey) == ("run-1", None, "a" * 64, None)

    store.register_problems([ProblemEntry(id="p1", category="voucher", query=record.query, version=3,
                                          suite="race-7", leak_cluster="c-42",
                                          reward={"reward": [], "voucher": {}})])
    store.register_run(RunEntry(id="run-1", kind="race", validator="5Val", started_at=T0))
    store.finish_run("run-1", T0 + 100)
    store.register_run(RunEntry(id="run-1", kind="race"))  # knows less: must not erase what is known
    code = "def agent_main(problem):\n    return []\n"
    code_hash = hashlib.sha256(code.encode()).hexdigest()
    store.register_agent(AgentEntry(code_hash=code_hash, hotkey="5Hk", code=code))
    with store.engine.connect() as connection:
        problem = connection.execute(select(PROBLEMS)).one()
        run = connection.execute(select(RUNS)).one()
    assert (problem.version, problem.suite, problem.leak_cluster) == (3, "race-7", "c-42")
    assert (run.kind, run.validator, run.started_at, run.finished_at) == ("race", "5Val", T0, T0 + 100)
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None and stored.record == record, "registration must not touch attempts"


def test_agent_code_must_be_the_submitted_file() -> None:
    with pytest.raises(ValueError, match="does not hash"):
        AgentEntry(code_hash="0" * 64, code="print('hi')\n")
    with pytest.raises(ValueError, match="NUL"):
        code = "x = 1\x00"
        AgentEntry(code_hash=hashlib.sha256(code.encode()).hexdigest(), code=code)


def test_hostile_agent_output_is_stored_not_fatal(store: TrajectoryStore) -> None:
    """Values orjson refuses (64-bit overflow, lone surrogates, deep nesting) fall back to exact JSON."""
    deep: object = "bottom"
    for _ in range(300):
        deep = [deep]
    steps = [{"completion": {"content": "\ud800 lone surrogate", "message": {"big": 10**40}}}, {"deep": deep},
             "not a dict", None, 3.5]
    record = react_record().model_copy(update={"steps": steps, "stderr_tail": "\udcff\x00"})
    store.write_attempt(record)
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None
    assert stored.record.steps == steps
    assert stored.record.stderr_tail == "\udcff\x00"


def test_non_finite_times_are_refused_before_anything_is_written(store: TrajectoryStore) -> None:
    bad = react_record(problem_id="p9").model_copy(update={"started_at": float("nan")})
    with pytest.raises(ValueError, match="finite"):
        store.write_attempts([react_record(), bad])
    assert store.count_attempts() == 0


def test_attempt_ids_select_a_window_in_key_order(store: TrajectoryStore) -> None:
    records: list[AttemptRecord] = [
        react_record(run_id="run-b", problem_id="p1", started_at=T0 + 10),
        react_record(run_id="run-a", problem_id="p2", started_at=T0 + 20),
        react_record(run_id="run-a", problem_id="p1", started_at=T0 + 30),
        react_record(run_id="run-a", problem_id="p3", started_at=T0 + 40),
    ]
    store.write_attempts(records, batch_size=3)
    ids = store.attempt_ids(T0 + 10, T0 + 40)
    keys = [(s.record.run_id, s.record.problem_id) for s in store.load(ids)]
    assert keys == [("run-a", "p1"), ("run-a", "p2"), ("run-b", "p1")]
    with store.engine.connect() as connection:
        assert connection.execute(select(ATTEMPTS.c.id)).all().__len__() == 4


def test_a_snapshot_does_not_see_later_writes(store: TrajectoryStore) -> None:
    store.write_attempt(react_record(problem_id="p1"))
    with store.snapshot() as connection:
        assert store.attempt_ids(connection=connection) == store.attempt_ids()
        store.write_attempt(react_record(problem_id="p2"))  # committed by another connection
        assert len(store.attempt_ids(connection=connection)) == 1
    assert len(store.attempt_ids()) == 2


def test_data_no_json_can_hold_is_refused_with_the_attempt_named(store: TrajectoryStore) -> None:
    bottom: list[object] = []
    nested = bottom
    for _ in range(5_000):
        inner: list[object] = []
        nested.append(inner)
        nested = inner
    record = react_record().model_copy(update={"steps": [bottom]})
    refusal = r"attempt \('run-1', 'a+', 'p1'\) cannot be stored: .*nested too deeply"
    with pytest.raises(ValueError, match=refusal):
        store.write_attempt(record)
    assert store.count_attempts() == 0
