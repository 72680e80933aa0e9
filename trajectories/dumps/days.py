"""The days a trajectory store holds: attempts per UTC day (by start) and per structural-filter label."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from sqlalchemy import Integer, cast, func, select

from trajectories.store import TrajectoryStore
from trajectories.store.schema import ATTEMPTS

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
    seconds = ATTEMPTS.c.started_at / 86_400
    # PostgreSQL's cast rounds, SQLite's truncates: floor where the backend has it.
    number = cast(func.floor(seconds), Integer) if store.engine.dialect.name == "postgresql" \
        else cast(seconds, Integer)
    query = (select(number.label("day"), ATTEMPTS.c.filter_label, func.count().label("n"))
             .group_by(number, ATTEMPTS.c.filter_label))
    days: dict[int, StoredDay] = {}
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    with store.engine.connect() as connection:
        for day_number, label, n in connection.execute(query):
            counts[day_number][label or UNLABELLED] = counts[day_number].get(label or UNLABELLED, 0) + n
    for day_number, labels in counts.items():
        days[day_number] = StoredDay(datetime.fromtimestamp(day_number * 86_400, UTC).date(),
                                     dict(sorted(labels.items())))
    return [days[n] for n in sorted(days)]
