"""Shared by the race-log tests (no tests here): an in-memory log that counts what each read loads."""

from __future__ import annotations

from arena.race import MemoryEventStore, RaceEvent


class CountingStore(MemoryEventStore):
    """The in-memory log, noting how many events each read loaded."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[int] = []

    def load(self, start: int = 0) -> list[RaceEvent]:
        events = super().load(start)
        self.loaded.append(len(events))
        return events
