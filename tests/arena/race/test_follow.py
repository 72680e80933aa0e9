"""A followed race log (``arena/race/follow.py``): the state equals a full replay as the log grows, each
event is read once, and recorders see every event once, in order, beside the state it produced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from arena.race import FollowedLog, ManualClock, MemoryEventStore, RaceEngine, RaceEvent, RaceRules
from arena.race.state import RaceState, replay
from tests.arena.race.stores import CountingStore

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)


class Seen:
    """A recorder noting, for each event, how many events the states before and after it had folded."""

    def __init__(self) -> None:
        self.steps: list[tuple[int, int]] = []

    def record(self, event: RaceEvent, before: RaceState, after: RaceState) -> None:
        self.steps.append((before.events, after.events))


def test_the_state_and_every_recorder_follow_the_log_reading_each_event_once() -> None:
    clock = ManualClock(T0)
    log = CountingStore()
    engine = RaceEngine(log, RaceRules(), clock)
    log.loaded.clear()  # the engine's own read of the empty log
    first, second = Seen(), Seen()
    followed = FollowedLog(log, recorders=[first, second])
    assert followed.state() == RaceState()
    appended = []
    for n, hotkey in enumerate(("bob", "carol", "dave")):
        before = log.count()
        engine.submit(hotkey, str(n) * 64, commitment_block=n + 1)
        clock.advance(timedelta(minutes=5))
        appended.append(log.count() - before)
        state, steps = followed.read(lambda state: (state, list(first.steps)))
        assert state == replay(MemoryEventStore.load(log)) and state.events == log.count()
        assert steps == [(i, i + 1) for i in range(log.count())]
    assert second.steps == first.steps
    assert log.loaded == appended and all(appended)  # each read loaded only what was appended since
    followed.state()  # the log has not grown: nothing loaded
    assert log.loaded == appended


def test_a_recorder_that_raises_leaves_the_state_before_the_event_it_failed_on() -> None:
    clock = ManualClock(T0)
    log = MemoryEventStore()
    engine = RaceEngine(log, RaceRules(), clock)
    engine.submit("bob", "b" * 64, commitment_block=1)
    engine.submit("carol", "c" * 64, commitment_block=2)
    total = log.count()
    assert total >= 2

    class FailsOnce(Seen):
        def record(self, event: RaceEvent, before: RaceState, after: RaceState) -> None:
            if before.events == 1 and not getattr(self, "failed", False):
                self.failed = True
                raise RuntimeError("recorder bug")
            super().record(event, before, after)

    recorder = FailsOnce()
    followed = FollowedLog(log, recorders=[recorder])
    with pytest.raises(RuntimeError, match="recorder bug"):
        followed.state()
    assert recorder.steps == [(0, 1)]
    assert followed.state() == replay(log.load())
    assert recorder.steps == [(i, i + 1) for i in range(total)]
