"""Pure helpers of the local network demo: when its next race slot is and who stands where."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from arena.race import latest_race_day, race_slot
from arena.race.rules import RaceRules
from arena.race.state import RaceState

AFTER_SLOT = timedelta(minutes=5)
"""How far past a race slot the demo ticks: the race is due then, as for a validator ticking each minute."""


def next_race_tick(now: datetime, rules: RaceRules, *, wait: timedelta = timedelta(0)) -> datetime:
    """A few minutes past the first race slot strictly after ``now + wait``."""
    day = latest_race_day(now + wait, rules.race_time) + timedelta(days=1)
    return race_slot(day, rules.race_time) + AFTER_SLOT


@dataclass(frozen=True)
class Standing:
    """One submission on the leaderboard: raced entrants in finishing order, then the rest."""

    position: int | None
    hotkey: str
    status: str
    qualifying_score: float | None
    race_score: float | None
    winner: bool


def standings(state: RaceState) -> list[Standing]:
    last = state.last_race
    order = list(last.standings) if last is not None else []
    rest = sorted((s for s in state.submissions if s not in order),
                  key=lambda s: -(state.submissions[s].qualifying_score or 0.0))
    rows = []
    for n, submission_id in enumerate(order + rest, start=1):
        submission = state.submissions[submission_id]
        raced = last is not None and submission_id in last.results
        rows.append(Standing(
            position=n if raced else None, hotkey=submission.hotkey, status=submission.status,
            qualifying_score=submission.qualifying_score,
            race_score=last.results[submission_id] if last is not None and raced else None,
            winner=state.reign is not None and state.reign.submission_id == submission_id))
    return rows
