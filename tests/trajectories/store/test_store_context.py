"""The store reads attempts with their problem, run and agent, and agents as registered (what a dump
exports), through its own connection or a snapshot's."""

from __future__ import annotations

import hashlib

from shoppingbench.records import AttemptRecord
from tests.trajectories.records import failed_record, react_record
from trajectories.store import AgentEntry, AttemptKey, ProblemEntry, RunEntry, TrajectoryStore
from trajectories.store.rows import payload_json

CODE = "def agent_main(problem):\n    return []\n"
ALICE = hashlib.sha256(CODE.encode()).hexdigest()
BOB = "b" * 64


def _id(store: TrajectoryStore, record: AttemptRecord) -> int:
    stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None
    return stored.id


def test_attempts_in_context_come_in_the_order_asked_chunk_by_chunk(store: TrajectoryStore) -> None:
    store.register_agent(AgentEntry(code_hash=ALICE, hotkey="alice-hotkey"))
    store.register_run(RunEntry(id="r-1", kind="race", validator="validator-hotkey", suite="race-1"))
    store.register_problems([ProblemEntry(id="p1", category="voucher", query="q", version=3, suite="race-1",
                                          leak_cluster="c-7", reward={"voucher": 1})])
    records = [react_record(run_id="r-1", agent_hash=ALICE, problem_id="p1"),
               failed_record(run_id="r-1", agent_hash=BOB, problem_id="p2"),
               react_record(run_id="r-2", agent_hash=ALICE, problem_id="p1")]
    store.write_attempts(records)
    first, second, third = (_id(store, record) for record in records)

    with store.snapshot() as connection:
        asked = [third, 10**9, first, second]
        chunks = list(store.attempts_in_context(asked, chunk=2, connection=connection))

    assert [[row.id for row in chunk] for chunk in chunks] == [[third], [first, second]]
    row = chunks[1][0]
    assert (row.run_id, row.agent_hash, row.problem_id) == ("r-1", ALICE, "p1")
    assert (row.problem_version, row.problem_suite, row.leak_cluster) == (3, "race-1", "c-7")
    assert (row.run_kind, row.validator, row.run_suite, row.hotkey) == ("race", "validator-hotkey", "race-1",
                                                                         "alice-hotkey")
    assert payload_json(row) == payload_json(store.fetch([first])[0])
    bobs, unregistered_run = chunks[1][1], chunks[0][0]
    assert (bobs.run_kind, bobs.hotkey, bobs.problem_version, bobs.leak_cluster) == ("race", None, 1, None)
    assert (unregistered_run.run_kind, unregistered_run.hotkey) == (None, "alice-hotkey")
    assert list(store.attempts_in_context([], chunk=2)) == []


def test_agents_are_read_as_registered_by_code_hash(store: TrajectoryStore) -> None:
    alice = AgentEntry(code_hash=ALICE, hotkey="alice-hotkey", submitted_at=1.0, embargo_until=2.0,
                       published_at=3.0, code=CODE)
    store.register_agent(alice)
    store.write_attempt(failed_record(agent_hash=BOB))

    assert store.agents([BOB, ALICE, "c" * 64, ALICE]) == sorted([alice, AgentEntry(code_hash=BOB)],
                                                                 key=lambda a: a.code_hash)
    with store.snapshot() as connection:
        assert store.agents({ALICE}, connection=connection) == [alice]
    assert store.agents([]) == []
