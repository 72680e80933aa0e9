"""The race (SPEC 4): submissions, qualifying, the daily race, promotion and embargo, as an event log."""

from arena.race.calendar import MarginCurve, embargo_until, latest_race_day, race_slot
from arena.race.clock import Clock, ManualClock, SystemClock
from arena.race.engine import RaceEngine, SubmitOutcome
from arena.race.events import EVENT_ADAPTER, RaceEvent, Rejection
from arena.race.follow import FollowedLog
from arena.race.rules import RaceRules
from arena.race.state import InvalidEvent, RaceState, replay
from arena.race.store import EventStore, MemoryEventStore, SqlEventStore

__all__ = [
    "EVENT_ADAPTER",
    "Clock",
    "EventStore",
    "FollowedLog",
    "InvalidEvent",
    "ManualClock",
    "MarginCurve",
    "MemoryEventStore",
    "RaceEngine",
    "RaceEvent",
    "RaceRules",
    "RaceState",
    "Rejection",
    "SqlEventStore",
    "SubmitOutcome",
    "SystemClock",
    "embargo_until",
    "latest_race_day",
    "race_slot",
    "replay",
]
