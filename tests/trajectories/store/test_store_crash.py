"""A write that dies half-way leaves whole attempts or none: never a partial one, never a partial batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoppingbench.records import AttemptRecord
from trajectories.doubles.synthetic import synthetic_day
from trajectories.store import AttemptKey, TrajectoryStore

DAY_START = 1_790_035_200.0
BATCH = 10

WRITER = """
import sys
from trajectories.store import TrajectoryStore
from trajectories.doubles.synthetic import synthetic_day
day = synthetic_day(day_start={day_start}, problems=100, agents=6, seed=3)
with TrajectoryStore.open(sys.argv[1]) as store:
    store.write_attempts(day.attempts(600, templates=6), batch_size={batch})
print("finished", flush=True)
"""


def _expected() -> list[AttemptRecord]:
    """What the writer writes (the times of synthetic attempts depend on the count: always 600)."""
    return list(synthetic_day(day_start=DAY_START, problems=100, agents=6, seed=3).attempts(600, templates=6))


def _children(pid: int) -> set[int]:
    tasks = Path(f"/proc/{pid}/task")
    return {int(child) for task in tasks.iterdir() for child in (task / "children").read_text().split()}


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its (gone) parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_killing_the_writer_mid_write_leaves_only_whole_batches(store_url: str, tmp_path: Path) -> None:
    """Also: the writer's echo processes (its records carry no echo measure) end with it, no orphans."""
    with TrajectoryStore.open(store_url):
        pass  # migrate first, so the writer's own upgrade is a no-op
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER.format(day_start=DAY_START, batch=BATCH), store_url],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[3])
    try:
        with TrajectoryStore.open(store_url, migrate=False) as probe:
            deadline = time.monotonic() + 60
            while probe.count_attempts() < 3 * BATCH:
                assert writer.poll() is None, "the writer ended before it could be killed"
                assert time.monotonic() < deadline, "the writer committed nothing within 60 s"
                time.sleep(0.02)
            echo_processes = _children(writer.pid)
            assert echo_processes, "the writer started no echo process: the test proved nothing about them"
            os.kill(writer.pid, signal.SIGKILL)
            writer.wait(timeout=30)
            assert writer.returncode == -signal.SIGKILL
            deadline = time.monotonic() + 30
            while left := {pid for pid in echo_processes if _alive(pid)}:
                assert time.monotonic() < deadline, f"echo processes {sorted(left)} outlived their writer"
                time.sleep(0.1)
            time.sleep(0.2)  # PostgreSQL notices the dead client and rolls its transaction back
            count = probe.count_attempts()
            assert count % BATCH == 0, f"{count} attempts stored: a batch was committed in part"
            assert count < 600, "the writer finished before it was killed: the test proved nothing"
            expected = _expected()
            stored = probe.load(probe.attempt_ids())
            assert sorted(AttemptKey.of(s.record) for s in stored) == sorted(
                AttemptKey.of(r) for r in expected[:count])
            by_key = {AttemptKey.of(r): r for r in expected}
            for attempt in stored:
                assert attempt.record == by_key[AttemptKey.of(attempt.record)]
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_a_failing_source_keeps_committed_batches_and_drops_the_open_one(store: TrajectoryStore) -> None:
    records = _expected()[:25]

    def source() -> Iterator[AttemptRecord]:
        yield from records
        raise RuntimeError("runner crashed")

    with pytest.raises(RuntimeError, match="runner crashed"):
        store.write_attempts(source(), batch_size=BATCH)
    stored = store.load(store.attempt_ids())
    assert len(stored) == 2 * BATCH
    assert {AttemptKey.of(s.record) for s in stored} == {AttemptKey.of(r) for r in records[:2 * BATCH]}


def test_a_bad_record_fails_its_batch_as_a_whole(store: TrajectoryStore) -> None:
    records = _expected()[:15]
    records[12] = records[12].model_copy(update={"finished_at": float("inf")})
    with pytest.raises(ValueError, match="finite"):
        store.write_attempts(records, batch_size=BATCH)
    assert store.count_attempts() == BATCH
