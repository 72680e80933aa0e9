"""PostgreSQL's bulk path (``trajectories/store/pgcopy.py``): new attempts go by ``COPY``, stored ones by
the upsert, and the outcome is the upsert's whatever another writer did meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError

from shoppingbench.records import AttemptRecord
from tests.trajectories.conftest import fresh_store_url
from tests.trajectories.store.test_store_ingest import _rows
from trajectories.doubles.synthetic import synthetic_day
from trajectories.store import (
    AttemptKey,
    AttemptWrite,
    JudgeVerdict,
    TrajectoryStore,
    ingest,
    pgcopy,
    repository,
)
from trajectories.store.schema import ATTEMPTS

JUDGED = JudgeVerdict(model="judge-a", quality=0.7)


@pytest.fixture
def pg_store(request: pytest.FixtureRequest) -> Iterator[TrajectoryStore]:
    with TrajectoryStore.open(fresh_store_url("postgresql", request)) as opened:
        yield opened


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row count of every ``COPY`` the store ran (successful or not)."""
    counted: list[int] = []
    real = pgcopy.copy_rows

    def counting(connection: Any, table: Any, rows: Any, types: Any) -> bool:
        counted.append(len(rows))
        return real(connection, table, rows, types)

    monkeypatch.setattr(pgcopy, "copy_rows", counting)
    return counted


def _day(count: int, seed: int = 5) -> list[AttemptRecord]:
    day = synthetic_day(day_start=1_790_035_200.0, problems=12, agents=4, seed=seed)
    return [r.measure_echoes() for r in day.attempts(count, templates=6)]


def _expected(tmp_path: Path, writes: list[list[AttemptRecord | AttemptWrite]]) -> dict[Any, Any]:
    """The rows the same writes leave in a SQLite store, one attempt at a time (never a ``COPY``)."""
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'single.sqlite3'}") as single:
        for write in writes:
            for item in write:
                single.write_attempt(item)
        return _rows(single)


def test_a_batch_of_new_attempts_is_copied_and_stores_what_single_writes_store(
    pg_store: TrajectoryStore, copies: list[int], tmp_path: Path
) -> None:
    records = _day(40)
    judged = AttemptWrite(record=records[0], judge=JUDGED)
    assert pg_store.write_attempts([judged, *records[1:]], batch_size=20) == 40
    assert copies == [20, 20]
    assert _rows(pg_store) == _expected(tmp_path, [[judged, *records[1:]]])
    with pg_store.engine.connect() as connection:
        ids = list(connection.execute(select(ATTEMPTS.c.id).order_by(ATTEMPTS.c.id)).scalars())
    assert ids == list(range(1, 41)), "copied rows take their ids from the table's sequence, in order"


def test_stored_attempts_in_a_copied_batch_are_upserted(
    pg_store: TrajectoryStore, copies: list[int], tmp_path: Path
) -> None:
    """Re-writes keep a verdict when their content is the same and drop it when it changed, as always."""
    records = _day(40)
    first = [AttemptWrite(record=r, judge=JUDGED) for r in records[:10]]
    changed = records[1].model_copy(update={"finished_at": records[1].finished_at + 1})
    again = [records[0], changed, *records[2:]]
    pg_store.write_attempts(first, batch_size=40)
    pg_store.write_attempts(again, batch_size=40)
    assert copies == [30], "the 10 stored attempts are not copied, the 30 new ones are"
    assert _rows(pg_store) == _expected(tmp_path, [first, again])
    kept, dropped = (pg_store.get_attempt(AttemptKey.of(r)) for r in (records[0], records[1]))
    assert kept is not None and kept.judge == JUDGED
    assert dropped is not None and dropped.judge is None and dropped.record == changed


def test_a_small_batch_is_upserted(pg_store: TrajectoryStore, copies: list[int]) -> None:
    records = _day(repository.COPY_MIN_ROWS + 4)
    pg_store.write_attempts(records[:4], batch_size=10)
    pg_store.write_attempt(records[4])
    # A batch whose new attempts are fewer than the minimum, though the batch is large enough.
    pg_store.write_attempts(records[:repository.COPY_MIN_ROWS + 3], batch_size=100)
    assert copies == []
    assert pg_store.count_attempts() == repository.COPY_MIN_ROWS + 3


def test_an_attempt_stored_by_another_writer_after_the_look_up_falls_back_to_the_upsert(
    pg_store: TrajectoryStore, copies: list[int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The race the look-up cannot see: another writer commits one of the batch's keys between the
    look-up and the ``COPY`` (here: the look-up answers as it would have just before that commit)."""
    records = _day(30)
    other = AttemptWrite(record=records[7], judge=JUDGED)
    with TrajectoryStore.open(pg_store.engine.url) as recorder:
        recorder.write_attempt(other)

    monkeypatch.setattr(pgcopy, "stored_keys", lambda *args: set())
    assert pg_store.write_attempts(records, batch_size=30) == 30
    assert copies == [30], "the copy was tried, failed on the taken key, and rolled back alone"
    assert _rows(pg_store) == _expected(tmp_path, [[other], records])
    stored = pg_store.get_attempt(AttemptKey.of(records[7]))
    assert stored is not None and stored.judge == JUDGED, "the upsert's rule: same content keeps its verdict"


def _rows_changed(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> None:
    """Every attempt row encoded from now on carries ``changes`` (values no honest record makes)."""
    real = ingest.attempt_row
    monkeypatch.setattr(ingest, "attempt_row", lambda *args: real(*args) | changes)


def test_an_integer_beyond_its_column_is_refused_as_by_the_upsert_never_wrapped_around(
    pg_store: TrajectoryStore, copies: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """psycopg's binary ``COPY`` would store 2**40 in a 32-bit column as 0: such a batch goes to the
    upsert, which the server refuses, and the batch is rolled back as a whole."""
    records = _day(20)
    pg_store.write_attempts(records[:2])
    _rows_changed(monkeypatch, steps_size=2**40)
    with pytest.raises(DBAPIError, match="out of range"):
        pg_store.write_attempts(records, batch_size=20)
    assert copies == [18]
    assert pg_store.count_attempts() == 2
    assert {row["steps_size"] < 2**31 for row in _rows(pg_store).values()} == {True}


def test_a_copy_refused_by_the_database_raises_as_sqlalchemy_errors_do_and_writes_nothing(
    pg_store: TrajectoryStore, copies: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _day(20)
    pg_store.write_attempts(records[:2])
    _rows_changed(monkeypatch, failure_kind="time\x00out")  # PostgreSQL text holds no NUL
    with pytest.raises(DBAPIError, match="COPY attempts"):
        pg_store.write_attempts(records, batch_size=20)
    assert copies == [18]
    assert pg_store.count_attempts() == 2, "the failing batch is rolled back as a whole"
