"""Cooldowns, race slots, reign margins and embargoes across weekends, month and year ends."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.race import ManualClock, MarginCurve, MemoryEventStore, RaceEngine, RaceRules, Rejection
from arena.race.calendar import embargo_until, latest_race_day
from shoppingbench.submission_check import check_agent

T0 = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)  # a Friday


@pytest.mark.parametrize(("race_day", "published"), [
    (date(2026, 11, 16), date(2026, 11, 17)),  # Monday -> Tuesday
    (date(2026, 11, 19), date(2026, 11, 20)),  # Thursday -> Friday
    (date(2026, 11, 20), date(2026, 11, 23)),  # Friday -> Monday
    (date(2026, 11, 21), date(2026, 11, 23)),  # Saturday -> Monday
    (date(2026, 11, 22), date(2026, 11, 23)),  # Sunday -> Monday
    (date(2026, 7, 31), date(2026, 8, 3)),     # Friday at a month end
    (date(2027, 12, 31), date(2028, 1, 3)),    # Friday at a year end
    (date(2026, 12, 31), date(2027, 1, 1)),    # Thursday at a year end
    (date(2028, 2, 28), date(2028, 2, 29)),    # Monday before a leap day
    (date(2027, 2, 26), date(2027, 3, 1)),     # Friday at a non-leap February end
])
def test_embargo_ends_at_the_next_weekday(race_day: date, published: date) -> None:
    assert embargo_until(race_day) == datetime.combine(published, time(0), tzinfo=UTC)


@given(st.dates(min_value=date(2000, 1, 1), max_value=date(2200, 12, 31)))
def test_embargo_is_the_first_weekday_after_the_race(race_day: date) -> None:
    until = embargo_until(race_day)
    assert until.time() == time(0) and until.tzinfo == UTC
    end = until.date()
    assert end > race_day and end.weekday() < 5 and (end - race_day).days <= 3
    between = [race_day + timedelta(days=d) for d in range(1, (end - race_day).days)]
    assert all(day.weekday() >= 5 for day in between)


def test_latest_race_day() -> None:
    assert latest_race_day(datetime(2026, 11, 20, 15, 59, tzinfo=UTC), time(16)) == date(2026, 11, 19)
    assert latest_race_day(datetime(2026, 11, 20, 16, 0, tzinfo=UTC), time(16)) == date(2026, 11, 20)
    assert latest_race_day(datetime(2027, 1, 1, 0, 0, tzinfo=UTC), time(16)) == date(2026, 12, 31)


def test_margin_decays_to_its_floor() -> None:
    curve = MarginCurve(initial=0.05, floor=0.01, half_life_days=7)
    assert curve.margin(timedelta(0)) == pytest.approx(0.05)
    assert curve.margin(timedelta(days=7)) == pytest.approx(0.03)
    assert curve.margin(timedelta(days=14)) == pytest.approx(0.02)
    assert curve.margin(timedelta(days=700)) == pytest.approx(0.01)
    assert curve.margin(timedelta(days=-1)) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        MarginCurve(initial=0.01, floor=0.02)


def test_cooldown_edges() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RaceRules(), clock)
    assert engine.submit("hk", "code-1").status == "accepted"
    clock.advance(timedelta(hours=12) - timedelta(microseconds=1))
    waiting = engine.submit("hk", "code-2")
    assert waiting.status == "cooling_down" and waiting.retry_at == T0 + timedelta(hours=12)
    assert engine.submit("other", "code-9").status == "accepted"  # cooldowns are per hotkey
    clock.advance(timedelta(microseconds=1))
    assert engine.submit("hk", "code-2").status == "accepted"


def test_rejections_start_a_cooldown_security_ones_shorter() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RaceRules(), clock)
    assert engine.submit("sec", "a", Rejection(kind="security", reason="imports socket")).status == "rejected"
    integrity = Rejection(kind="integrity", reason="hard-coded ids")
    assert engine.submit("int", "b", integrity).status == "rejected"
    clock.advance(timedelta(hours=1))
    assert engine.submit("sec", "a2").status == "accepted"
    assert engine.submit("int", "b2").status == "cooling_down"
    clock.advance(timedelta(hours=11))
    assert engine.submit("int", "b2").status == "accepted"
    assert [s.hotkey for s in engine.pending_qualifying()] == ["sec", "int"]


def test_static_analysis_reports_map_to_rejections() -> None:
    clock = ManualClock(T0)
    engine = RaceEngine(MemoryEventStore(), RaceRules(), clock)
    unsafe = check_agent(b"import socket\n\ndef agent_main(problem):\n    return []\n")
    cheating = check_agent(b"def agent_main(problem):\n    return ['4410867766']\n",
                           known_product_ids={"4410867766"})
    fine = check_agent(b"def agent_main(problem):\n    return []\n")
    assert Rejection.from_report(fine) is None
    security, integrity = Rejection.from_report(unsafe), Rejection.from_report(cheating)
    assert security is not None and security.kind == "security" and "network" in security.reason
    assert integrity is not None and integrity.kind == "integrity"
    assert engine.submit("a", unsafe.sha256, security).retry_at == T0 + timedelta(hours=1)
    assert engine.submit("b", cheating.sha256, integrity).retry_at == T0 + timedelta(hours=12)
    assert engine.submit("c", fine.sha256, Rejection.from_report(fine)).status == "accepted"


def test_a_refused_submission_changes_nothing() -> None:
    clock = ManualClock(T0)
    store = MemoryEventStore()
    engine = RaceEngine(store, RaceRules(), clock)
    engine.submit("hk", "a")
    before = engine.state
    engine.submit("hk", "b")
    assert engine.state == before and len(store.load()) == 1
