"""The site's store reads on both backends: the scope keeps held-out, local and hidden suites out, an
agent's index lists its attempts in id order and counts what it lists, summaries come back in the order
asked, and every read goes through an index."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from sqlalchemy import event

from trajectories.doubles.synthetic import make_attempt, make_problems
from trajectories.store import AttemptWrite, JudgeVerdict, RunEntry, TrajectoryStore
from trajectories.store.site_reads import Scope, SiteReads

AGENT = "a" * 64
OTHER = "b" * 64
SCOPE = Scope(
    kinds=("qualifying", "race"), prefixes=("qualifying-", "race-"), hidden=frozenset({"qualifying-hidden"})
)
RUNS = (
    ("qualifying-s1-x", "qualifying", "qualifying-s1", AGENT, 4),
    ("race-s1-y", "race", "race-2026-11-18", AGENT, 5),
    ("qualifying-s1-z", "qualifying", "qualifying-hidden", AGENT, 2),
    ("held-s1", "held_out", "held-out-v1", AGENT, 3),
    ("local-s1", "local_test", "race-2026-11-18", AGENT, 1),
    ("race-s2-y", "race", "race-2026-11-18", OTHER, 3),
)
"""(run id, kind, problem suite, agent, attempts): 9 of the agent's 15 attempts are in scope."""


def _fill(store: TrajectoryStore) -> None:
    rng = random.Random(3)
    for run_id, kind, suite, agent, count in RUNS:
        problems = make_problems(rng, count, suite=suite)
        store.register_problems(problems)
        store.register_run(RunEntry(id=run_id, kind=kind, suite=suite))
        writes = []
        for n, problem in enumerate(problems):
            record = make_attempt(rng, "react", problem, run_id=run_id, agent_hash=agent, started_at=1e9 + n)
            writes.append(
                AttemptWrite(record=record, judge=JudgeVerdict(model="m", quality=(0.1, 0.9)[n % 2]))
            )
        store.write_attempts(writes)


def test_the_index_and_summaries_cover_exactly_the_scope_in_id_order(store: TrajectoryStore) -> None:
    _fill(store)
    reads = SiteReads(store)
    runs = ("qualifying-s1-", "race-s1-", "held-s1", "local-s1")
    index = reads.agent_index(AGENT, SCOPE, runs=runs)
    assert len(index.ids) == 9 and index.ids == sorted(index.ids)
    listed = reads.summaries(index.ids[5:]) + reads.summaries([10**9])
    assert [a.id for a in listed] == index.ids[5:]
    assert {a.run_id for a in reads.summaries(index.ids)} == {"qualifying-s1-x", "race-s1-y"}
    race = reads.agent_index(AGENT, SCOPE, runs=("race-s1-",))
    assert len(race.ids) == 5 and {a.run_kind for a in reads.summaries(race.ids)} == {"race"}
    assert sum(c.attempts for c in index.counts) == 9
    assert {(c.run_id, c.problem_suite) for c in index.counts} == {
        ("qualifying-s1-x", "qualifying-s1"),
        ("race-s1-y", "race-2026-11-18"),
    }
    assert sum(c.attempts for c in index.counts if c.judge_quality == 0.9) == 2 + 2
    assert reads.latest_attempt_id() == max(a.id for a in store.load(list(range(1, 100)))) == 18


def test_one_attempt_comes_back_whole_with_its_run_and_problem_suite(store: TrajectoryStore) -> None:
    _fill(store)
    reads = SiteReads(store)
    first = reads.agent_index(AGENT, SCOPE, runs=("race-s1-",)).ids[0]
    found = reads.attempt(first)
    assert found is not None and found.attempt.id == first
    assert (found.run_kind, found.problem_suite) == ("race", "race-2026-11-18")
    assert found.attempt.record.steps and found.attempt.record.proxy_log
    assert reads.attempt(10**9) is None
    assert SCOPE.admits("race", "race-2026-11-18") and not SCOPE.admits("held_out", "race-2026-11-18")
    assert not SCOPE.admits("qualifying", "qualifying-hidden") and not SCOPE.admits("race", "held-out-v1")


def _statements(store: TrajectoryStore, read: Callable[[], object]) -> list[tuple[str, Any]]:
    """The SQL statements (with their parameters) ``read`` sends to the database."""
    sent: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        read()
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    return [(s, p) for s, p in sent if s.lstrip().upper().startswith("SELECT")]


def test_every_read_goes_through_the_primary_key_or_the_agent_index(store: TrajectoryStore) -> None:
    _fill(store)
    reads = SiteReads(store)
    runs = ("qualifying-s1-", "race-s1-")
    sent = [
        *_statements(store, lambda: reads.agent_index(AGENT, SCOPE, runs=runs)),
        *_statements(store, lambda: reads.summaries([1, 2, 3])),
        *_statements(store, lambda: reads.attempt(3)),
        *_statements(store, reads.latest_attempt_id),
    ]
    assert len(sent) == 4
    sqlite = store.engine.dialect.name == "sqlite"
    with store.engine.connect() as connection:
        if not sqlite:
            connection.exec_driver_sql("SET enable_seqscan = off")  # a tiny table: ask what it would use
        for statement, parameters in sent:
            prefix = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
            plan = " ".join(
                str(row[-1]) for row in connection.exec_driver_sql(prefix + statement, parameters)
            )
            # SQLite: a SEARCH is by the primary key or an index (the plan names which); PostgreSQL: by name.
            used = ("SEARCH attempts",) if sqlite else ("ix_attempts_agent_hash", "pk_attempts")
            assert any(index in plan for index in used), plan
            assert "SCAN attempts" not in plan and "Seq Scan on attempts" not in plan, plan
