"""The validator's own daily dumps (``ARENA_DUMPS_DIR`` set), which fill the site's dumps index without a
cron job: each finished day is exported once, split by the exposure ledger.

A day is finished once it is over and no race of it (or of an earlier day) is still running: a race's runs
go on after its slot, and their attempts belong to the day they started. Each dump is assembled next to
its folder and renamed into place (``trajectories.dumps.export``), so a crash leaves no half-written day,
and a day whose folder holds a manifest is never written again: after a restart the validator writes
exactly the finished days it had not written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import structlog

from arena.race.state import RunningRace
from trajectories.dumps import DumpWindow, ExportOptions, LedgerSplits, export_dump
from trajectories.dumps.days import stored_days
from trajectories.dumps.export import day_dump
from trajectories.store import TrajectoryStore

log = structlog.get_logger(__name__)


def days_to_export(stored: Iterable[date], exported: Callable[[date], bool], today: date,
                   running_day: date | None) -> list[date]:
    """The stored days, oldest first, that are over, not exported yet, and before any running race's day."""
    return [day for day in sorted(stored) if day < today and (running_day is None or day < running_day)
            and not exported(day)]


@dataclass
class DailyDumps:
    """Exports the finished days of ``store`` to ``root/YYYY-MM-DD``, split by ``splits()`` (the ledger's)."""

    store: TrajectoryStore
    splits: Callable[[], LedgerSplits]
    root: Path
    options: ExportOptions = field(default_factory=ExportOptions)
    _looked: tuple[date, date | None] | None = field(default=None, init=False)

    def export_finished(self, now: datetime, running: RunningRace | None) -> list[date]:
        """Write every finished day not written yet; returns them. The store is asked only when the day
        or the running race changed since the last complete pass."""
        looking = (now.astimezone(UTC).date(), running.day if running is not None else None)
        if looking == self._looked:
            return []
        due = days_to_export((d.day for d in stored_days(self.store)),
                             lambda day: day_dump(self.root, day) is not None, *looking)
        written: list[date] = []
        for day in due:
            out = self.root / day.isoformat()
            try:
                manifest = export_dump(self.store, DumpWindow.day(day), out, options=self.options,
                                       splits=self.splits(), progress=False, overwrite=True)
            except OSError as exc:  # a full or unwritable disk: the next tick tries again
                log.error("daily_dump_failed", day=day.isoformat(), out=str(out), error=str(exc))
                return written
            log.info("daily_dump_written", day=day.isoformat(), out=str(out), splits=manifest["splits"])
            written.append(day)
        self._looked = looking
        return written
