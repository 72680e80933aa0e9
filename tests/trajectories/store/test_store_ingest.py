"""A bulk write (the echo measure in worker processes) stores exactly what one attempt at a time stores."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from shoppingbench.echo import echoed_calls
from shoppingbench.records import AttemptRecord
from tests.trajectories.filter.test_filter_echo import laundered_record
from tests.trajectories.records import react_record
from trajectories.doubles.synthetic import synthetic_day
from trajectories.store import TrajectoryStore, ingest
from trajectories.store.rows import attempt_parts, echoed_in_json
from trajectories.store.schema import ATTEMPTS


def _records() -> list[AttemptRecord]:
    day = synthetic_day(day_start=1_790_035_200.0, problems=8, agents=3, seed=5)
    echoing = [laundered_record(f"p-echo-{n}") for n in range(7)]
    return [*echoing, react_record(), *day.attempts(24, templates=6)]


def _rows(store: TrajectoryStore) -> dict[tuple[str, str, str], dict[str, Any]]:
    with store.engine.connect() as connection:
        rows = connection.execute(select(ATTEMPTS)).mappings().all()
    return {
        (r["run_id"], r["agent_hash"], r["problem_id"]): {k: v for k, v in r.items() if k != "id"}
        for r in rows
    }


def test_the_echo_measure_from_the_stored_json_is_the_records() -> None:
    counts = []
    for record in _records():
        expected = len(echoed_calls(record.proxy_log, record.query))
        assert echoed_in_json(attempt_parts(record).proxy_log, record.query) == expected
        counts.append(expected)
    assert max(counts) == 2, "the records must include echoed completions, or this proves nothing"


def test_a_bulk_write_stores_what_single_writes_store(
    store: TrajectoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []

    class CountedPool(ProcessPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            started.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(ingest, "ProcessPoolExecutor", CountedPool)
    records = _records()
    assert store.write_attempts(records, batch_size=4) == len(records)
    assert started == [1], "a write of several batches measures echoes in worker processes"

    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'single.sqlite3'}") as single:
        for record in records:
            single.write_attempt(record)
        assert started == [1], "one attempt at a time starts no process"
        expected = _rows(single)
    bulk = _rows(store)
    assert bulk == expected
    assert sum(row["echoed_completions"] for row in bulk.values()) == 14


def test_a_bulk_write_in_a_daemonic_process_measures_in_its_own_thread(
    store: TrajectoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "_may_start_processes", lambda: False)
    monkeypatch.setattr(ingest, "ProcessPoolExecutor", None)  # would fail if used
    records = _records()
    assert store.write_attempts(records, batch_size=4) == len(records)
    assert sum(row["echoed_completions"] for row in _rows(store).values()) == 14


def test_a_source_failing_in_the_second_batch_keeps_the_first(store: TrajectoryStore) -> None:
    records = _records()

    def source() -> Iterator[AttemptRecord]:
        yield from records[:6]
        raise RuntimeError("runner crashed")

    with pytest.raises(RuntimeError, match="runner crashed"):
        store.write_attempts(source(), batch_size=4)
    assert store.count_attempts() == 4
