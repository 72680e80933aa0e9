"""The days a trajectory store holds: attempts per UTC day (by start) and per structural-filter label."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from trajectories.store import TrajectoryStore

UNLABELLED = "unlabelled"
"""The label of attempts the filter has not labelled yet (``dump label``; the export labels them itself)."""


@dataclass
class StoredDay:
    day: date
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        return sum(self.labels.values())


def stored_days(store: TrajectoryStore) -> list[StoredDay]:
    """Every UTC day with at least one attempt, oldest first, with its attempts by label."""
    counts = store.attempts_per_day_and_label()
    return [StoredDay(datetime.fromtimestamp(number * 86_400, UTC).date(),
                      dict(sorted(counts[number].items()))) for number in sorted(counts)]
