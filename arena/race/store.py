"""Where race events live: an append-only log behind a small interface, in memory or in SQL.

``append`` takes the number of events the writer has already seen: a log that has grown since means a
second writer, and the append fails rather than interleaving two histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import DateTime, Engine, String, Text, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.race.events import EVENT_ADAPTER, RaceEvent
from arena.storage import Base, ConcurrentWriterError, open_database


class EventStore(Protocol):
    def load(self, start: int = 0) -> list[RaceEvent]:
        """The events from the ``start``-th one (0-based) on, in order."""
        ...

    def count(self) -> int:
        """How many events the log holds: a cheap way to see whether it grew."""
        ...

    def append(self, events: Sequence[RaceEvent], *, expected: int) -> None:
        """Append ``events`` after the first ``expected`` ones, all or nothing."""
        ...


class MemoryEventStore:
    def __init__(self) -> None:
        self._events: list[RaceEvent] = []

    def load(self, start: int = 0) -> list[RaceEvent]:
        return self._events[start:]

    def count(self) -> int:
        return len(self._events)

    def append(self, events: Sequence[RaceEvent], *, expected: int) -> None:
        if expected != len(self._events):
            raise ConcurrentWriterError(f"the log holds {len(self._events)} events, "
                                        f"the writer saw {expected}")
        self._events.extend(events)


class RaceEventRow(Base):
    __tablename__ = "race_events"

    seq: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    type: Mapped[str] = mapped_column(String(40))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    payload: Mapped[str] = mapped_column(Text, doc="The event as JSON: the source of truth on replay")


class SqlEventStore:
    """The race log as one table, ``race_events(seq, type, at, payload)``, in any SQLAlchemy database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str) -> SqlEventStore:
        return cls(open_database(url))

    def load(self, start: int = 0) -> list[RaceEvent]:
        with Session(self.engine) as session:
            rows = session.scalars(select(RaceEventRow).where(RaceEventRow.seq >= start)
                                   .order_by(RaceEventRow.seq)).all()
            events = [EVENT_ADAPTER.validate_json(row.payload) for row in rows]
            if [row.seq for row in rows] != list(range(start, start + len(rows))):
                raise ConcurrentWriterError("the race log has gaps in its sequence numbers")
        return events

    def count(self) -> int:
        with Session(self.engine) as session:
            return self._next_seq(session)

    @staticmethod
    def _next_seq(session: Session) -> int:
        last = session.scalar(select(RaceEventRow.seq).order_by(RaceEventRow.seq.desc()).limit(1))
        return 0 if last is None else last + 1

    def append(self, events: Sequence[RaceEvent], *, expected: int) -> None:
        try:
            with Session(self.engine) as session, session.begin():
                if self._next_seq(session) != expected:
                    raise ConcurrentWriterError(f"the race log has grown past the {expected} events this "
                                                "writer saw: is a second validator using this database?")
                session.add_all(RaceEventRow(seq=expected + i, type=e.type, at=e.at,
                                             payload=EVENT_ADAPTER.dump_json(e).decode())
                                for i, e in enumerate(events))
        except IntegrityError as exc:
            raise ConcurrentWriterError("another writer appended the same sequence numbers") from exc
