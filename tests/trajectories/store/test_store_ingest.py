"""A bulk write (the echo measure in worker processes) stores exactly what one attempt at a time stores."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from shoppingbench.echo import echoed_calls
from shoppingbench.records import ECHO_MEASURE_KEY, AttemptRecord
from tests.trajectories.filter.test_filter_echo import laundered_record
from tests.trajectories.records import react_record
from trajectories.doubles.synthetic import synthetic_day
from trajectories.store import TrajectoryStore, ingest, repository
from trajectories.store.entries import AttemptWrite
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


# --- the echo count the records carry (``AttemptRecord.measure_echoes``, taken by the grader) -------


def _measured() -> list[AttemptRecord]:
    return [record.model_copy().measure_echoes() for record in _records()]


def test_records_carrying_their_measure_store_it_and_nothing_is_measured(
    store: TrajectoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _measured()
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'measured.sqlite3'}") as measured_here:
        measured_here.write_attempts(_records(), batch_size=4)  # no measure carried: measured by the store
        expected = _rows(measured_here)
    monkeypatch.setattr(ingest, "ProcessPoolExecutor", None)  # would fail if used
    monkeypatch.setattr(ingest, "echoed_calls", None)
    assert store.write_attempts(records, batch_size=4) == len(records)
    assert _rows(store) == expected
    assert sum(row["echoed_completions"] for row in expected.values()) == 14


def test_a_batch_mixing_carried_and_missing_counts_measures_only_the_missing(
    store: TrajectoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured: list[str] = []

    def counting(proxy_log: Any, query: str) -> list[int]:
        measured.append(query)
        return echoed_calls(proxy_log, query)

    monkeypatch.setattr(ingest, "_may_start_processes", lambda: False)  # measured in this process: counted
    monkeypatch.setattr(ingest, "echoed_calls", counting)
    # Every third record changed its query since it was measured: its carried count no longer fits.
    records = [r.model_copy(update={"query": f"{r.query} again"}) if n % 3 == 0 else r
               for n, r in enumerate(_measured())]
    assert store.write_attempts(records, batch_size=4) == len(records)
    assert measured == [r.query for r in records[::3]], "only the changed ones are measured"
    rows = _rows(store)
    for record in records:
        key = (record.run_id, record.agent_hash, record.problem_id)
        assert rows[key]["echoed_completions"] == len(echoed_calls(record.proxy_log, record.query))


def test_a_measure_forged_by_changing_the_log_after_it_is_not_stored(store: TrajectoryStore) -> None:
    """A record measured, then given another proxy log (an echoing one): the store measures again."""
    honest = next(r for r in _measured() if r.carried_echoes() == [])
    echoing = laundered_record("p-forged")
    forged = honest.model_copy(update={"proxy_log": echoing.proxy_log, "query": echoing.query})
    forged.__dict__[ECHO_MEASURE_KEY] = honest.__dict__[ECHO_MEASURE_KEY]  # says 0 echoed
    assert forged.carried_echoes() is None
    store.write_attempts([forged, *_measured()[8:12]], batch_size=2)
    row = _rows(store)[(forged.run_id, forged.agent_hash, forged.problem_id)]
    assert row["echoed_completions"] == 2


def test_upserts_of_many_rows_split_into_statements_store_what_single_writes_store(
    store: TrajectoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repository, "ROWS_PER_STATEMENT", 7)
    monkeypatch.setattr(repository, "UPSERTS_KEPT", 2)
    records = _measured()
    store.write_attempts(records, batch_size=10)
    store.write_attempts(records[:13], batch_size=13)  # re-writes: the upsert updates the rows
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'single.sqlite3'}") as single:
        for record in records:
            single.write_attempt(record)
        expected = _rows(single)
    assert _rows(store) == expected
    assert len(store._attempt_upserts) <= 2


def test_no_batch_is_written_after_one_that_failed_at_the_writer() -> None:
    """The writer compresses and writes while the next batches are encoded: once one fails, no later one
    is stored."""
    stored: list[list[str]] = []

    def store_batch(writes: list[AttemptWrite], rows: list[dict[str, Any]]) -> None:
        if len(stored) == 1:
            raise RuntimeError("database gone")
        stored.append([w.record.problem_id for w in writes])

    writes = [AttemptWrite(record=r) for r in _measured()]
    with pytest.raises(RuntimeError, match="database gone"):
        ingest.write_batches(store_batch, writes, 3)
    assert stored == [[w.record.problem_id for w in writes[:3]]]


def test_the_synthetic_day_carries_each_copys_own_measure() -> None:
    """The store benchmark's records carry the measure as the grader's do: taken on each copy (its
    query is the copy's), equal to the measure taken again."""
    day = synthetic_day(day_start=1_790_035_200.0, problems=8, agents=3, seed=5)
    records = list(day.attempts(24, templates=2, measure_echoes=True))
    assert len({r.query for r in records}) > 2
    for record in records:
        assert record.carried_echoes() == echoed_calls(record.proxy_log, record.query)
    assert all(r.carried_echoes() is None for r in day.attempts(6, templates=2))


def _objects(value: Any) -> Iterator[int]:
    """The ids of the containers and strings of JSON data. Dict keys are left out (``orjson`` shares the
    keys it parses), and so are strings of at most one character (CPython keeps one copy of each)."""
    if isinstance(value, dict | list):
        yield id(value)
        for child in value.values() if isinstance(value, dict) else value:
            yield from _objects(child)
    elif isinstance(value, str) and len(value) > 1:
        yield id(value)


def test_the_synthetic_day_holds_its_json_as_the_runner_and_the_proxy_do() -> None:
    """The benchmark's records are laid out as production's, where the cost of encoding them depends on
    it: the steps are parsed from the agent's answer (``shoppingbench.sandbox.slot``) and each inference
    call's messages from its own request body (``shoppingbench.proxy.inference``), so no value of the
    steps is an object of the proxy log, and no message text is shared between calls."""
    day = synthetic_day(day_start=1_790_035_200.0, problems=6, agents=3, seed=5)
    for record in day.attempts(12, templates=4):
        logged = {i for c in record.proxy_log for i in _objects([*c.params.values(), c.request_messages])}
        assert not set(_objects(record.steps)) & logged
        texts = [set(_objects(c.request_messages)) for c in record.proxy_log
                 if c.request_messages is not None]
        for before, after in pairwise(texts):
            assert not before & after
