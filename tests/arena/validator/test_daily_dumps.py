"""The validator's own daily dumps: each finished day written once, whole, split by the exposure ledger, and
after a crash exactly the days it had not written."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import orjson
import pytest

from arena.race.state import RunningRace
from arena.suites import SqlExposureLedger
from arena.validator.daily_dumps import DailyDumps, days_to_export
from shoppingbench.problems.models import Problem, RewardTarget
from trajectories.doubles.synthetic import make_attempt
from trajectories.dumps import SplitRule
from trajectories.store import ProblemEntry, TrajectoryStore

DAYS = (date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22))


def _running(day: date) -> RunningRace:
    slot = datetime.combine(day, time(16), UTC)
    return RunningRace(race_id=f"race-{day}", day=day, slot=slot, seed="s", suite_ids=("p",), entrants=(),
                       defender=None, started_at=slot)


@pytest.fixture
def dumps(tmp_path: Path) -> Iterator[DailyDumps]:
    """A store with attempts on each of DAYS (every problem raced that day, in the ledger)."""
    ledger = SqlExposureLedger.open(f"sqlite:///{tmp_path / 'arena.sqlite3'}",
                                    rule=SplitRule(held_out_fraction=0.5))
    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}") as store:
        _fill(store, ledger)
        yield DailyDumps(store=store, splits=ledger.splits, root=tmp_path / "dumps")


def _fill(store: TrajectoryStore, ledger: SqlExposureLedger) -> None:
    rng = random.Random(3)
    for n, day in enumerate(DAYS):
        problems = [Problem(id=f"d{n}-p{i}", category="product", query=f"a kettle number {n}{i}",
                            targets=[RewardTarget(product_id=f"prod-{n}-{i}", title=["zzz"])])
                    for i in range(4)]
        at = datetime.combine(day, time(16), UTC)
        ledger.expose(problems, "race", f"race-{day}", at)
        entries = [ProblemEntry.of(p) for p in problems]
        store.register_problems(entries)
        store.write_attempts([make_attempt(rng, "react", e, run_id=f"race-{day}", agent_hash="a" * 64,
                                           started_at=at.timestamp() + i) for i, e in enumerate(entries)])


def test_only_days_that_are_over_and_raced_are_due() -> None:
    exported = {DAYS[0]}.__contains__
    assert days_to_export(DAYS, exported, DAYS[2], None) == [DAYS[1]]
    assert days_to_export(DAYS, exported, DAYS[2] + timedelta(days=1), DAYS[1]) == []
    assert days_to_export(reversed(DAYS), lambda _day: False, DAYS[2] + timedelta(days=1), DAYS[2]) == [
        DAYS[0], DAYS[1]]


def test_each_finished_day_is_written_once_and_a_restart_resumes(dumps: DailyDumps) -> None:
    third_morning = datetime.combine(DAYS[2], time(9), UTC)
    # The second day's race runs on past midnight: that day is not finished.
    assert dumps.export_finished(third_morning, _running(DAYS[1])) == [DAYS[0]]
    first = dumps.root / DAYS[0].isoformat() / "manifest.json"
    manifest = orjson.loads(first.read_bytes())
    assert manifest["split_rule"] == {"source": "exposure_ledger"} and manifest["stats"]["attempts"] == 4
    written_at = first.stat().st_mtime_ns
    assert dumps.export_finished(third_morning, _running(DAYS[1])) == []
    assert dumps.export_finished(third_morning, None) == [DAYS[1]], "its race is over"

    # A crash while the third day was being written left its staging folder; the restarted validator
    # (nothing of the first one's memory) writes that day and no other.
    staging = dumps.root / f".{DAYS[2].isoformat()}.partial"
    (staging / "data").mkdir(parents=True)
    (staging / "data" / "train-00000.parquet").write_bytes(b"half a file")
    restarted = DailyDumps(store=dumps.store, splits=dumps.splits, root=dumps.root)
    assert restarted.export_finished(datetime.combine(DAYS[2] + timedelta(days=1), time(0, 5), UTC),
                                     None) == [DAYS[2]]
    assert not staging.exists()
    assert sorted(p.name for p in dumps.root.iterdir()) == [d.isoformat() for d in DAYS]
    assert first.stat().st_mtime_ns == written_at, "a written day is never written again"
    again = DailyDumps(store=dumps.store, splits=dumps.splits, root=dumps.root)
    assert again.export_finished(datetime.combine(DAYS[2] + timedelta(days=2), time(0), UTC), None) == []
    placed = dumps.splits().of
    for day in DAYS:
        splits = orjson.loads((dumps.root / day.isoformat() / "manifest.json").read_bytes())["splits"]
        expected: dict[str, int] = {}
        for n in range(4):
            side = placed[f"d{DAYS.index(day)}-p{n}"].split
            expected[side] = expected.get(side, 0) + 1
        assert splits == {s: expected[s] for s in ("train", "held_out") if s in expected}
