"""The site's store reads on both backends: the scope keeps held-out, local and hidden suites out, an
agent's index lists the attempts of the runs its submission registered (by the runs' columns, never by
their ids) in id order and counts what it lists, summaries come back in the order asked, and every read
goes through an index."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from sqlalchemy import event

from trajectories.doubles.synthetic import make_attempt, make_problems
from trajectories.store import AttemptWrite, JudgeVerdict, RunEntry, TrajectoryStore
from trajectories.store.site_reads import AgentRuns, Scope, SiteReads

AGENT = "a" * 64
OTHER = "b" * 64
SCOPE = Scope(kinds=("qualifying", "race"), suites=frozenset({"qualifying-1", "race-2026-11-18"}))
RUNS = (
    (RunEntry(id="qualifying-1-x", kind="qualifying", submission_id="1", role="challenger"), "qualifying-1",
     AGENT, 4),
    (RunEntry(id="race-1-y", kind="race", submission_id="1", race_id="2026-11-18", role="entrant"),
     "race-2026-11-18", AGENT, 5),
    (RunEntry(id="qualifying-1-z", kind="qualifying", submission_id="1", role="challenger"),
     "qualifying-hidden", AGENT, 2),
    (RunEntry(id="held-1", kind="held_out", submission_id="1"), "held-out-v1", AGENT, 3),
    (RunEntry(id="local-1", kind="local_test"), "race-2026-11-18", AGENT, 1),
    (RunEntry(id="qualifying-defender-aaaa", kind="qualifying", submission_id="0", role="defender"),
     "qualifying-1", AGENT, 1),
    # Submission "11" (the same code, submitted again): its run's id starts like "1"'s, its column differs.
    (RunEntry(id="qualifying-11-x", kind="qualifying", submission_id="11", role="challenger"),
     "qualifying-1", AGENT, 2),
    (RunEntry(id="race-2-y", kind="race", submission_id="2", race_id="2026-11-18", role="entrant"),
     "race-2026-11-18", OTHER, 3),
)
"""(run, problem suite, agent, attempts): 10 of the agent's 18 attempts are in scope and in submission "1"'s
runs: its own qualifying and race runs, and its code's run as the defender."""
MINE = AgentRuns(submission_id="1", roles=("challenger", "entrant"), code_roles=("defender",))


def _fill(store: TrajectoryStore) -> None:
    rng = random.Random(3)
    for run, suite, agent, count in RUNS:
        problems = make_problems(rng, count, suite=suite)
        store.register_problems(problems)
        store.register_run(run.model_copy(update={"suite": suite}))
        writes = []
        for n, problem in enumerate(problems):
            record = make_attempt(rng, "react", problem, run_id=run.id, agent_hash=agent, started_at=1e9 + n)
            verdict = JudgeVerdict(model="m", quality=(0.1, 0.9)[n % 2], gates_passed=(0, 4)[n % 2])
            writes.append(AttemptWrite(record=record, judge=verdict))
        store.write_attempts(writes)


def test_the_index_and_summaries_cover_exactly_the_scope_in_id_order(store: TrajectoryStore) -> None:
    _fill(store)
    reads = SiteReads(store)
    index = reads.agent_index(AGENT, SCOPE, runs=MINE)
    assert len(index.ids) == 10 and index.ids == sorted(index.ids)
    listed = reads.summaries(index.ids[5:]) + reads.summaries([10**9])
    assert [a.id for a in listed] == index.ids[5:]
    shown = {a.run_id for a in reads.summaries(index.ids)}
    assert shown == {"qualifying-1-x", "race-1-y", "qualifying-defender-aaaa"}
    race = reads.agent_index(AGENT, SCOPE, runs=AgentRuns(submission_id="1", roles=("entrant",)))
    assert len(race.ids) == 5 and {a.run_kind for a in reads.summaries(race.ids)} == {"race"}
    again = reads.agent_index(AGENT, SCOPE, runs=AgentRuns(submission_id="11", roles=("challenger",)))
    assert {a.run_id for a in reads.summaries(again.ids)} == {"qualifying-11-x"}
    assert sum(c.attempts for c in index.counts) == 10
    assert {(c.run_id, c.run_role, c.run_race_id, c.problem_suite) for c in index.counts} == {
        ("qualifying-1-x", "challenger", None, "qualifying-1"),
        ("race-1-y", "entrant", "2026-11-18", "race-2026-11-18"),
        ("qualifying-defender-aaaa", "defender", None, "qualifying-1"),
    }
    assert sum(c.attempts for c in index.counts if c.judge_gates_passed == 4) == 2 + 2
    assert reads.latest_attempt_id() == max(a.id for a in store.load(list(range(1, 100)))) == 21


def test_one_attempt_comes_back_whole_with_its_run_and_problem_suite(store: TrajectoryStore) -> None:
    _fill(store)
    reads = SiteReads(store)
    first = reads.agent_index(AGENT, SCOPE, runs=AgentRuns(submission_id="1", roles=("entrant",))).ids[0]
    found = reads.attempt(first)
    assert found is not None and found.attempt.id == first
    assert (found.run_kind, found.problem_suite) == ("race", "race-2026-11-18")
    assert (found.run_submission_id, found.run_race_id, found.run_role) == ("1", "2026-11-18", "entrant")
    assert found.attempt.judge is not None and found.attempt.judge.gates_passed == 0
    assert found.attempt.record.steps and found.attempt.record.proxy_log
    assert reads.attempt(10**9) is None
    assert SCOPE.admits("race", "race-2026-11-18") and not SCOPE.admits("held_out", "race-2026-11-18")
    assert not SCOPE.admits("qualifying", "qualifying-hidden") and not SCOPE.admits("race", "held-out-v1")
    assert not SCOPE.admits("race", None)


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
    sent = [
        *_statements(store, lambda: reads.agent_index(AGENT, SCOPE, runs=MINE)),
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
