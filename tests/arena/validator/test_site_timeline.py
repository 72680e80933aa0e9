"""Submission timelines folded from the race log (``views/timeline.py``): the race engine writes a real
in-memory log; the timelines read it as it grows, each event once, and place a copy found after its file
was accepted, and one refused at upload, on the right submission."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from arena.race import FollowedLog, ManualClock, RaceEngine, RaceRules
from arena.race.events import CopyOf
from arena.race.state import submission_id
from arena.validator.api.views.timeline import TimelineEntry, Timelines
from tests.arena.race.stores import CountingStore

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
ORIGINAL = CopyOf(hotkey="alice", code_hash="a" * 64, commitment_block=3, similarity=1.0)


def test_copies_land_on_their_submission_and_each_event_is_read_once() -> None:
    clock = ManualClock(T0)
    log = CountingStore()
    engine = RaceEngine(log, RaceRules(), clock)
    log.loaded.clear()  # the engine's own read of the empty log
    timelines = Timelines()
    followed = FollowedLog(log, recorders=[timelines])

    def of(sid: str) -> list[TimelineEntry]:
        return followed.read(lambda _: timelines.of(sid))

    bob = engine.submit("bob", "b" * 64, commitment_block=9).submission_id
    assert bob is not None
    assert [e.kind for e in of(bob)] == ["commitment", "upload", "static_analysis"]
    engine.submit("bob", "b" * 64, commitment_block=9, copy_of=ORIGINAL)  # found after it was accepted
    clock.advance(timedelta(minutes=5))
    engine.submit("carol", "c" * 64, commitment_block=10, copy_of=ORIGINAL)  # refused at upload
    carol = submission_id("carol", "c" * 64, clock.now())
    assert [e.kind for e in of(bob)] == ["commitment", "upload", "static_analysis", "copy"]
    assert [e.kind for e in of(carol)] == ["commitment", "upload", "copy"]
    assert "alice's file" in of(carol)[-1].detail
    assert of("unknown") == []
    assert log.loaded == [1, 2]  # the first event, then only the two appended since
