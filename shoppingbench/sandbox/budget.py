"""A host-wide count of sandboxes shared by the runs that overlap in one process.

Each run starts up to its ``workers`` slots, but a run's last wave leaves most of them idle until its
slowest attempt finishes. With a :class:`SlotBudget` passed to several concurrent runs, a slot holds one
unit from before its sandbox starts until its run has no more problems for it, then closes its sandbox
and gives the unit back: a waiting slot of another run starts in its place. The budget is a counting
semaphore, first come first served (the run started first gets its slots first and so finishes
first: the validator records outcomes in start order), with counters and an optional listener, so tests
assert on events rather than on timing; it schedules nothing beyond that.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

BudgetEventKind = Literal["waiting", "acquired", "released"]


@dataclass(frozen=True)
class BudgetEvent:
    """Slot ``slot`` of run ``run_id`` had to wait for a unit, took one or gave one back; ``in_use``: units
    held after it."""

    kind: BudgetEventKind
    run_id: str
    slot: int
    in_use: int


class SlotBudget:
    """At most ``units`` sandboxes at once across every run given this budget."""

    def __init__(self, units: int, *, listener: Callable[[BudgetEvent], None] | None = None) -> None:
        if units < 1:
            raise ValueError(f"a slot budget needs at least one unit, not {units}")
        self.units = units
        self._listener = listener
        self._condition = threading.Condition()
        self._in_use = 0
        self._tickets = 0
        self._serving = 0
        self._gone: set[int] = set()
        """Tickets served or cancelled ahead of their turn (waiters leave in any order when cancelled)."""
        self.peak_in_use = 0
        self.acquisitions = 0

    @property
    def in_use(self) -> int:
        with self._condition:
            return self._in_use

    def acquire(self, run_id: str, slot: int, cancelled: threading.Event | None = None) -> bool:
        """Wait for a unit (first come, first served); ``False`` if ``cancelled`` is set first (the run is
        being torn down: the caller must not start a sandbox). Call :meth:`wake` after setting it."""
        with self._condition:
            ticket = self._tickets
            self._tickets += 1
            try:
                if ticket != self._serving or self._in_use >= self.units:
                    self._notify(BudgetEvent("waiting", run_id, slot, self._in_use))
                while ticket != self._serving or self._in_use >= self.units:
                    if cancelled is not None and cancelled.is_set():
                        return False
                    self._condition.wait()
                self._in_use += 1
                self.peak_in_use = max(self.peak_in_use, self._in_use)
                self.acquisitions += 1
                event = BudgetEvent("acquired", run_id, slot, self._in_use)
            finally:
                # Served or gone: the next ticket's turn either way (a cancelled waiter must not block it).
                self._retire(ticket)
            self._notify(event)
            return True

    def release(self, run_id: str, slot: int) -> None:
        with self._condition:
            if self._in_use <= 0:
                raise RuntimeError(f"slot {slot} of run {run_id} released a unit it did not hold")
            self._in_use -= 1
            event = BudgetEvent("released", run_id, slot, self._in_use)
            self._condition.notify_all()
            self._notify(event)

    def wake(self) -> None:
        """Make every waiter look at its ``cancelled`` event again."""
        with self._condition:
            self._condition.notify_all()

    def _retire(self, ticket: int) -> None:
        self._gone.add(ticket)
        while self._serving in self._gone:
            self._gone.discard(self._serving)
            self._serving += 1
        self._condition.notify_all()

    def _notify(self, event: BudgetEvent) -> None:
        if self._listener is not None:
            self._listener(event)
