"""``worker watch``: train on each new day of arena data as it arrives.

Each poll: with a store, every finished UTC day since ``since`` that holds attempts and has no dump yet is
exported into the dumps root (``YYYY-MM-DD/``, the same export as ``dump export``); then, if the newest
complete dump has not been trained on, the pipeline runs over the last ``window_days`` dumps into
``OUT/YYYY-MM-DD/``. Days that arrived together are trained on once (the newest day's window covers
them). Progress is kept in ``OUT/watch-state.json``, written atomically after each day, and the pipeline
itself resumes stage by stage, so a worker killed at any point picks up where it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import structlog
from pydantic import BaseModel, Field

from shoppingbench.files import write_file_atomically
from trajectories.dumps import DumpWindow, ExportOptions, export_dump
from trajectories.store import TrajectoryStore
from trajectories.training.pipeline import day_dumps, window
from trajectories.training.stages.stage import NothingToTrain

log = structlog.get_logger(__name__)

STATE_FILE = "watch-state.json"


class WatchState(BaseModel):
    trained: dict[str, str] = Field(default_factory=dict, description="day -> the pipeline's output")
    skipped: dict[str, str] = Field(default_factory=dict, description=(
        "day -> why its window gave nothing to train on (not retried; a later day's window covers it)"))

    @classmethod
    def read(cls, out: Path) -> WatchState:
        path = out / STATE_FILE
        return cls.model_validate_json(path.read_bytes()) if path.exists() else cls()

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        write_file_atomically(out / STATE_FILE, self.model_dump_json(indent=2).encode())


def export_new_days(store: TrajectoryStore, dumps_root: Path, *, since: date, today: date,
                    options: ExportOptions) -> list[Path]:
    """Dump every finished day in ``[since, today)`` that has attempts and no dump yet; the new dumps."""
    written: list[Path] = []
    day = since
    while day < today:
        target = dumps_root / day.isoformat()
        span = DumpWindow.day(day)
        if not (target / "manifest.json").exists() and store.attempt_ids(span.since.timestamp(),
                                                                         span.until.timestamp()):
            export_dump(store, span, target, options=options, progress=False, overwrite=True)
            log.info("training.watch_day_exported", day=day.isoformat(), out=str(target))
            written.append(target)
        day += timedelta(days=1)
    return written


Train = Callable[[list[Path], Path], None]
"""(the window's dumps, the day's output directory) -> None: runs the pipeline."""


@dataclass
class Watcher:
    dumps_root: Path
    out: Path
    train: Train
    window_days: int = 7
    store: TrajectoryStore | None = None
    since: date | None = None
    export_options: ExportOptions = field(default_factory=ExportOptions)
    today: Callable[[], date] = field(default=lambda: datetime.now(UTC).date())

    def poll(self) -> str | None:
        """One look for new data; the day trained on, if any."""
        if self.store is not None:
            today = self.today()
            export_new_days(self.store, self.dumps_root, since=self.since or today - timedelta(days=1),
                            today=today, options=self.export_options)
        dumps = day_dumps(self.dumps_root)
        state = WatchState.read(self.out)
        if not dumps or dumps[-1].name in state.trained or dumps[-1].name in state.skipped:
            return None
        newest = dumps[-1]
        days = window(dumps, newest, self.window_days)
        target = self.out / newest.name
        log.info("training.watch_day_started", day=newest.name, window=[d.name for d in days],
                 out=str(target))
        try:
            self.train(days, target)
        except NothingToTrain as exc:
            state.skipped[newest.name] = str(exc)
            state.write(self.out)
            log.warning("training.watch_day_skipped", day=newest.name, reason=str(exc))
            return None
        state.trained[newest.name] = str(target)
        state.write(self.out)
        log.info("training.watch_day_finished", day=newest.name)
        return newest.name

    def run(self, interval_s: float, *, once: bool = False) -> None:
        """Poll every ``interval_s``; a failed poll (a GPU error, a full disk) is logged and retried."""
        while True:
            try:
                self.poll()
            except Exception:  # the pipeline resumes where it stopped, so the next poll continues the work
                log.exception("training.watch_poll_failed")
                if once:
                    raise
            if once:
                return
            time.sleep(interval_s)
