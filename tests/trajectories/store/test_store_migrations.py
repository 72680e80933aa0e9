"""Migrations build the schema the models describe, on an empty and on a populated database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import insert, inspect, select
from sqlalchemy.exc import IntegrityError

from shoppingbench.records import AttemptRecord
from tests.trajectories.records import encode_attempt, failed_record, react_record
from trajectories.store import AttemptKey, JudgeVerdict, StoreError, TrajectoryStore, blobs
from trajectories.store.engine import make_engine
from trajectories.store.entries import AttemptWrite
from trajectories.store.migrate import SchemaError, current_revision, downgrade, head_revision, upgrade
from trajectories.store.rows import DERIVED_COLUMNS
from trajectories.store.schema import AGENTS, ATTEMPTS, PROBLEMS, RUNS, Base

VERIFIED_ANSWER_COLUMNS = ("answer_verified", "reference_success")
"""Added by migration 0003."""
ECHO_COLUMNS = ("echoed_completions",)
"""Added by migration 0004."""
INFRA_COLUMNS = ("infra_failed",)
"""Added by migration 0005."""
GATE_COLUMNS = ("judge_gates_passed",)
"""Added by migration 0007 (with the runs' ``submission_id``, ``race_id`` and ``role``)."""
HEAD = "0007"


def test_an_empty_database_migrates_to_exactly_the_models(store_url: str) -> None:
    engine = make_engine(store_url)
    try:
        assert current_revision(engine) is None
        upgrade(engine)
        assert current_revision(engine) == head_revision() == HEAD
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        assert differences == []
        upgrade(engine)  # up to date: a no-op
        assert current_revision(engine) == HEAD
        downgrade(engine, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade(engine)
        assert {"problems", "agents", "runs", "attempts"} <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_populated_database_keeps_its_attempts_through_the_upgrade(store_url: str) -> None:
    engine = make_engine(store_url)
    records = [react_record(), failed_record()]
    try:
        upgrade(engine, "0001")
        with engine.begin() as connection:
            # What a 0001-era writer stored: the record columns, no verdict columns yet.
            for table, rows in ((PROBLEMS, [{"id": r.problem_id, "version": 1, "category": r.category,
                                             "query": r.query.replace("\x00", "")} for r in records]),
                                (AGENTS, [{"code_hash": r.agent_hash} for r in records]),
                                (RUNS, [{"id": "run-1"}])):
                connection.execute(insert(table).values(rows))
            old_rows = [{k: v for k, v in encode_attempt(AttemptWrite(record=r)).items()
                         if k not in (*DERIVED_COLUMNS, *VERIFIED_ANSWER_COLUMNS, *ECHO_COLUMNS,
                                      *INFRA_COLUMNS)}
                        for r in records]
            connection.execute(insert(ATTEMPTS).values(old_rows))
        with pytest.raises(StoreError, match="dump migrate"):
            TrajectoryStore.open(store_url, migrate=False)
    finally:
        engine.dispose()

    with TrajectoryStore.open(store_url) as store:
        assert store.count_attempts() == 2
        for record in records:
            stored = store.get_attempt(AttemptKey.of(record))
            assert stored is not None and stored.record == record and stored.judge is None
        verdict = JudgeVerdict(model="offline", quality=0.5)
        assert store.set_judge_verdict(AttemptKey.of(records[0]), verdict)
        stored = store.get_attempt(AttemptKey.of(records[0]))
        assert stored is not None and stored.judge == verdict


def test_a_store_a_newer_release_upgraded_is_refused(store_url: str) -> None:
    engine = make_engine(store_url)
    try:
        upgrade(engine)
        with engine.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0999'")
        with pytest.raises(SchemaError, match=f"the trajectory store at .* is at schema revision '0999', "
                                              f"which this code does not know \\(its newest is '{HEAD}'\\)"):
            TrajectoryStore.open(store_url)
        assert current_revision(engine) == "0999"
    finally:
        engine.dispose()


def test_concurrent_upgrades_do_not_collide(store_url: str) -> None:
    """Two validators starting at once on one fresh database: both end at head, neither fails."""
    script = ("import sys; from trajectories.store import TrajectoryStore; "
              "TrajectoryStore.open(sys.argv[1]).close()")
    upgrades = [subprocess.Popen([sys.executable, "-c", script, store_url], stderr=subprocess.PIPE, text=True,
                                 cwd=Path(__file__).resolve().parents[3]) for _ in range(2)]
    results = [(u.wait(timeout=120), u.stderr.read() if u.stderr else "") for u in upgrades]
    engine = make_engine(store_url)
    try:
        # PostgreSQL's advisory lock serialises them; on SQLite the database's write lock, taken before
        # the version is read, and the switch to WAL waiting for the other process.
        assert [code for code, _ in results] == [0, 0], results
        assert current_revision(engine) == HEAD
        with engine.connect() as connection:
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    finally:
        engine.dispose()


def test_the_embedded_store_runs_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 's.sqlite3'}") as store:
        with store.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        row = {k: v for k, v in encode_attempt(AttemptWrite(record=react_record())).items()}
        with pytest.raises(IntegrityError), store.engine.begin() as connection:
            connection.execute(insert(ATTEMPTS).values(row))  # no such run, agent or problem


def _row_written_before_0003(record: AttemptRecord) -> dict[str, Any]:
    """The row a 0002-era writer stored: no verified-answer columns, and neither the record's header nor
    its proxy log knows the fields added with them (reference score, answer check, tool results)."""
    row = {k: v for k, v in encode_attempt(AttemptWrite(record=record)).items()
           if k not in (*VERIFIED_ANSWER_COLUMNS, *ECHO_COLUMNS, *INFRA_COLUMNS, *GATE_COLUMNS)}
    header = blobs.loads(row["header"])
    for name in ("reference_score", "answer_verified"):
        del header[name]
    steps = blobs.dumps(record.steps)
    calls = [{k: v for k, v in entry.items() if k not in ("results", "response_sha256")}
             for entry in blobs.compact_proxy_log(record.proxy_log)]
    proxy_log = blobs.dumps(calls)
    return row | {"header": blobs.dumps(header).decode(), "payload": blobs.compress(steps + proxy_log),
                  "steps_size": len(steps), "proxy_log_size": len(proxy_log)}


def test_0003_upgrades_a_0002_database_with_its_rows_readable(store_url: str) -> None:
    engine = make_engine(store_url)
    record = react_record()
    try:
        upgrade(engine, "0002")
        with engine.begin() as connection:
            connection.execute(insert(PROBLEMS).values(id=record.problem_id, version=1,
                                                       category=record.category, query="q"))
            connection.execute(insert(AGENTS).values(code_hash=record.agent_hash))
            connection.execute(insert(RUNS).values(id=record.run_id))
            connection.execute(insert(ATTEMPTS).values(_row_written_before_0003(record)))
        upgrade(engine)
        with engine.connect() as connection:
            columns = connection.execute(select(ATTEMPTS.c.success, *(ATTEMPTS.c[c] for c in
                                                                      VERIFIED_ANSWER_COLUMNS))).one()
    finally:
        engine.dispose()
    # Never checked, and no rule overrode the score then: the reference success is the success.
    assert tuple(columns) == (True, None, True)
    with TrajectoryStore.open(store_url, migrate=False) as store:
        stored = store.get_attempt(AttemptKey.of(record))
    assert stored is not None
    old = stored.record
    assert old.answer_verified is None and old.reference_score is None
    assert all(call.results == [] and call.response_sha256 is None for call in old.proxy_log)
    assert [c.product_ids for c in old.proxy_log] == [c.product_ids for c in record.proxy_log]
    assert old.steps == record.steps and old.score == record.score


def test_0005_upgrades_a_0004_database_and_summaries_leave_out_provider_failures(store_url: str) -> None:
    """Rows written before the flag read back as not infra-failed (NULL column, no header field); an
    attempt written infra-failed after the upgrade is left out of the per-category scores."""
    engine = make_engine(store_url)
    record = react_record()
    try:
        upgrade(engine, "0004")
        row = {k: v for k, v in encode_attempt(AttemptWrite(record=record)).items()
               if k not in (*INFRA_COLUMNS, *GATE_COLUMNS)}
        header = blobs.loads(row["header"])
        for name in ("infra_failed", "infra_retries"):
            del header[name]
        with engine.begin() as connection:
            connection.execute(insert(PROBLEMS).values(id=record.problem_id, version=1,
                                                       category=record.category, query="q"))
            connection.execute(insert(AGENTS).values(code_hash=record.agent_hash))
            connection.execute(insert(RUNS).values(id=record.run_id, kind="race"))
            connection.execute(insert(ATTEMPTS).values(row | {"header": blobs.dumps(header).decode()}))
        upgrade(engine)
        with engine.connect() as connection:
            assert connection.execute(select(ATTEMPTS.c.infra_failed)).scalar_one() is None
    finally:
        engine.dispose()
    with TrajectoryStore.open(store_url) as store:
        stored = store.get_attempt(AttemptKey.of(record))
        assert stored is not None and stored.record == record and not stored.record.infra_failed
        (before,) = store.category_scores(["race"])
        assert before.attempts == 1
        store.write_attempt(record.model_copy(update={"infra_failed": True}))
        assert store.category_scores(["race"]) == []


OLD_RUNS = (
    # (id, kind, suite) as the arena wrote them before 0007, and what the upgrade reads off them
    ("qualifying-1f2e3d4c5b6a7988-0123456789ab", "qualifying", "qualifying-1f2e3d4c5b6a7988",
     ("1f2e3d4c5b6a7988", None, "challenger")),
    ("qualifying-defender-" + "c" * 32, "qualifying", "qualifying-1f2e3d4c5b6a7988",
     (None, None, "defender")),
    ("behaviour-00aa11bb22cc33dd", "qualifying", "qualifying-1f2e3d4c5b6a7988",
     ("00aa11bb22cc33dd", None, "original")),
    ("race-1f2e3d4c5b6a7988-ba9876543210", "race", "race-2026-11-18",
     ("1f2e3d4c5b6a7988", "2026-11-18", "entrant")),
    ("9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e", "local_test", "local-test", (None, None, None)),
    ("race-of-an-unregistered-run", None, None, (None, None, None)),
)
OLD_QUALITIES = (0.1, 0.3, 0.5, 0.7, 0.9, 0.2)
"""One old verdict a run: the five levels back-fill 0..4 gates passed; a quality off the levels, none."""


def test_0007_back_fills_runs_identity_and_verdicts_gates_from_the_old_formats(store_url: str) -> None:
    engine = make_engine(store_url)
    records = [react_record(run_id=run_id, problem_id=f"p{n}") for n, (run_id, *_) in enumerate(OLD_RUNS)]
    unjudged = react_record(run_id=OLD_RUNS[0][0], problem_id="p-unjudged")
    try:
        upgrade(engine, "0006")
        with engine.begin() as connection:
            for record in [*records, unjudged]:
                connection.execute(insert(PROBLEMS).values(id=record.problem_id, version=1,
                                                           category=record.category, query="q"))
            connection.execute(insert(AGENTS).values(code_hash=records[0].agent_hash))
            for run_id, kind, suite, _ in OLD_RUNS:
                connection.execute(insert(RUNS).values(id=run_id, kind=kind, suite=suite))
            writes = [AttemptWrite(record=r, judge=JudgeVerdict(model="m", quality=q))
                      for r, q in zip(records, OLD_QUALITIES, strict=True)] + [AttemptWrite(record=unjudged)]
            connection.execute(insert(ATTEMPTS).values(
                [{k: v for k, v in encode_attempt(w).items() if k not in GATE_COLUMNS} for w in writes]))
        upgrade(engine)
        with engine.connect() as connection:
            identities = {row.id: (row.submission_id, row.race_id, row.role) for row in connection.execute(
                select(RUNS.c.id, RUNS.c.submission_id, RUNS.c.race_id, RUNS.c.role))}
    finally:
        engine.dispose()
    assert identities == {run_id: identity for run_id, _, _, identity in OLD_RUNS}
    with TrajectoryStore.open(store_url) as store:
        gates = [store.get_attempt(AttemptKey.of(r)) for r in records]
        assert [g.judge.gates_passed if g and g.judge else "?" for g in gates] == [0, 1, 2, 3, 4, None]
        stored = store.get_attempt(AttemptKey.of(unjudged))
        assert stored is not None and stored.judge is None
        # A verdict stored after the upgrade keeps the gate it was given, whatever its quality says.
        assert store.set_judge_verdict(AttemptKey.of(records[5]), JudgeVerdict(model="m", quality=0.2,
                                                                              gates_passed=1))
        again = store.get_attempt(AttemptKey.of(records[5]))
        assert again is not None and again.judge is not None and again.judge.gates_passed == 1


def test_0006_stores_the_payload_out_of_line_without_compressing_it_again(store_url: str) -> None:
    """On PostgreSQL the payload column's storage is EXTERNAL after the upgrade and EXTENDED again after
    the downgrade; rows written under either storage read back the same. SQLite only moves the revision."""
    engine = make_engine(store_url)
    postgres = engine.dialect.name == "postgresql"

    def payload_storage() -> str | None:
        if not postgres:
            return None
        with engine.connect() as connection:
            return connection.exec_driver_sql(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = 'attempts'::regclass "
                "AND attname = 'payload'").scalar_one()

    try:
        upgrade(engine, "0005")
        assert payload_storage() == ("x" if postgres else None)
    finally:
        engine.dispose()
    before, after = react_record(), failed_record()
    with TrajectoryStore.open(store_url) as store:
        assert payload_storage() == ("e" if postgres else None)
        store.write_attempts([before])
    engine = make_engine(store_url)
    try:
        downgrade(engine, "0005")
        assert payload_storage() == ("x" if postgres else None)
    finally:
        engine.dispose()
    with TrajectoryStore.open(store_url) as store:
        store.write_attempts([after])
        for record in (before, after):
            stored = store.get_attempt(AttemptKey.of(record))
            assert stored is not None and stored.record == record
