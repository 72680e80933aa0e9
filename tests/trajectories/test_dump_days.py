"""The days a store holds, and an empty day is refused rather than exported as a dataset without data."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from trajectories.doubles.synthetic import Style, make_attempt, make_problems
from trajectories.dumps import DumpWindow, export_dump
from trajectories.dumps.days import UNLABELLED, stored_days
from trajectories.dumps.export import EmptyWindow
from trajectories.labelling import label_stored
from trajectories.store import TrajectoryStore

MIDNIGHT = datetime(2026, 11, 21, tzinfo=UTC).timestamp()


def _fill(store: TrajectoryStore) -> None:
    """Day 1: 3 react, 2 sub-task, 1 scripted (half a second before midnight); day 3: 1 react at midnight."""
    rng = random.Random(3)
    problems = make_problems(rng, 7, per_cluster=1)
    store.register_problems(problems)
    plan: list[tuple[Style, float]] = [("react", 0), ("react", 600), ("react", 7200), ("sub_task", 60),
                                       ("sub_task", 120), ("scripted", 86_399.5), ("react", 2 * 86_400)]
    store.write_attempts([make_attempt(rng, style, problems[n], run_id=f"run-{n}", agent_hash=style * 8,
                                       started_at=MIDNIGHT + offset)
                          for n, (style, offset) in enumerate(plan)])


def test_days_are_listed_with_their_attempts_by_label(store: TrajectoryStore) -> None:
    assert stored_days(store) == []
    _fill(store)
    before = stored_days(store)
    assert [(d.day, d.attempts, d.labels) for d in before] == [
        (date(2026, 11, 21), 6, {UNLABELLED: 6}), (date(2026, 11, 23), 1, {UNLABELLED: 1})]
    label_stored(store, progress=False)
    after = {d.day: d.labels for d in stored_days(store)}
    assert after == {date(2026, 11, 21): {"agentic": 3, "no_llm": 1, "sub_task": 2},
                     date(2026, 11, 23): {"agentic": 1}}


def test_an_empty_day_is_refused_and_nothing_is_written(store: TrajectoryStore, tmp_path: Path) -> None:
    _fill(store)
    out = tmp_path / "dumps" / "2026-11-22"
    with pytest.raises(EmptyWindow, match="no attempt started in 2026-11-22"):
        export_dump(store, DumpWindow.day(date(2026, 11, 22)), out, progress=False)
    assert not out.exists() and list((tmp_path / "dumps").iterdir()) == []
    # An existing dump of that day is left as it was.
    out.mkdir()
    (out / "README.md").write_text("kept")
    with pytest.raises(EmptyWindow):
        export_dump(store, DumpWindow.day(date(2026, 11, 22)), out, progress=False, overwrite=True)
    assert (out / "README.md").read_text() == "kept"
    assert sorted(p.name for p in (tmp_path / "dumps").iterdir()) == ["2026-11-22"]
