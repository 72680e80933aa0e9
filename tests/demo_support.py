"""The network demo's calendar in tests: a fixed start, never the wall clock, and the race slot derived
from it, so every run of a test that builds the demo sees the same days, race and embargo."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Final

DEMO_START: Final = datetime(2026, 11, 16, 9, 0, tzinfo=UTC)
"""A Monday: the race falls on Tuesday 09:15, its winner's embargo ends Wednesday 00:00."""
SLOT_AFTER_START: Final = timedelta(minutes=10)


def demo_race_time(start: datetime) -> time:
    """The daily race slot ``SLOT_AFTER_START`` after ``start`` (whole minutes): inside the demo's first
    weights epoch (a tempo is 20 min of blocks), so the demo passes it over for the next day's; that
    day's race then sets the weights in a later epoch, or the chain would keep the burn-only vector."""
    return (start + SLOT_AFTER_START).time().replace(second=0, microsecond=0)
