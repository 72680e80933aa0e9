"""The race state of a log that another writer appends to (the work loop, in another thread or process).

Replayed once, then folded forward with only the events appended since: the reducer is pure, so the
result equals a full replay, and a reader polling a log that has not grown reads one number. Readers
that build more than the state from the log (the site's race history and submission timelines) record
each event as it is folded in (:class:`EventRecorder`), so the log is read once for all of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from arena.race.events import RaceEvent
from arena.race.state import RaceState, apply
from arena.race.store import EventStore

T = TypeVar("T")


class EventRecorder(Protocol):
    """Builds something from the log beside the state: called once per event, in log order, with the
    state before and after it, always under the follower's lock."""

    def record(self, event: RaceEvent, before: RaceState, after: RaceState) -> None: ...


class FollowedLog:
    def __init__(self, store: EventStore, recorders: Sequence[EventRecorder] = ()) -> None:
        self.store = store
        self._recorders = tuple(recorders)
        self._state = RaceState()
        self._lock = threading.Lock()  # API requests are served on several threads

    def state(self) -> RaceState:
        """The state after every event the log holds now."""
        return self.read(lambda state: state)

    def read(self, reader: Callable[[RaceState], T]) -> T:
        """``reader`` of the state after every event the log holds now, run before any later event is
        folded in: what it reads of the recorders was built from the same events as that state."""
        with self._lock:
            if self.store.count() != self._state.events:
                for event in self.store.load(start=self._state.events):
                    after = apply(self._state, event)
                    for recorder in self._recorders:
                        recorder.record(event, self._state, after)
                    # Moved with each event: should a recorder raise, the state stays before the event
                    # it failed on (the recorders listed before it have recorded it) and the next read
                    # starts there, not at the batch's start.
                    self._state = after
            return reader(self._state)
