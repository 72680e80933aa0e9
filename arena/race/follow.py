"""The race state of a log that another writer appends to (the work loop, in another thread or process).

Replayed once, then folded forward with only the events appended since: the reducer is pure, so the
result equals a full replay, and a reader polling a log that has not grown reads one number.
"""

from __future__ import annotations

import threading

from arena.race.state import RaceState, apply
from arena.race.store import EventStore


class FollowedLog:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._state = RaceState()
        self._lock = threading.Lock()  # API requests are served on several threads

    def state(self) -> RaceState:
        """The state after every event the log holds now."""
        with self._lock:
            if self.store.count() != self._state.events:
                state = self._state
                for event in self.store.load(start=state.events):
                    state = apply(state, event)
                self._state = state
            return self._state
