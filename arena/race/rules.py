"""The race's decisions as pure functions: who qualifies, who ranks where, who is promoted."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from pydantic import BaseModel, ConfigDict, Field

from arena.race.calendar import MarginCurve, embargo_until
from arena.race.events import RaceFinished
from arena.race.state import RaceState, RunningRace

PROMOTION_EPSILON = 1e-9
"""Scores are means of a few hundred 0/1 outcomes; a difference this small is float noise, not a win."""


class RaceRules(BaseModel):
    model_config = ConfigDict(frozen=True)

    cooldown: timedelta = Field(default=timedelta(hours=12),
                                description="Between two submissions of a hotkey")
    security_rejection_cooldown: timedelta = Field(
        default=timedelta(hours=1), description="After a security rejection (an honest mistake, fixed fast)")
    qualify_ratio: float = Field(default=0.95, gt=0, le=1,
                                 description="Share of the reigning winner's qualifying score to clear")
    qualify_min_score: float = Field(default=0.01, ge=0, le=1,
                                     description="Absolute floor, also when there is no winner")
    race_time: time = Field(default=time(16, 0), description="Daily race slot, UTC")
    margin: MarginCurve = MarginCurve()


def qualifying_threshold(state: RaceState, rules: RaceRules) -> float:
    """``qualify_ratio`` x the reigning winner's qualifying score, never below ``qualify_min_score``."""
    reign = state.reign
    winner_score = state.submissions[reign.submission_id].qualifying_score if reign else None
    return max(rules.qualify_min_score, rules.qualify_ratio * (winner_score or 0.0))


def standings(race: RunningRace, state: RaceState) -> tuple[str, ...]:
    """Entrants best first: higher race score, then earlier submission, then submission id."""
    def key(sid: str) -> tuple[float, datetime, str]:
        return -race.results[sid], state.submissions[sid].submitted_at, sid

    return tuple(sorted(race.entrants, key=key))


def decide_race(race: RunningRace, state: RaceState, rules: RaceRules, now: datetime) -> RaceFinished:
    """The outcome of a race with every result in.

    The best challenger takes over when there is no winner yet, or when it beats the reigning winner's
    race score by more than the margin for the reign's age at this race's slot. Ties rank the earlier
    submission first and never unseat the winner.
    """
    ranked = standings(race, state)
    challengers = [sid for sid in ranked if sid != race.defender]
    best = challengers[0]
    if race.defender is None or state.reign is None:
        return RaceFinished(at=now, race_id=race.race_id, standings=ranked, winner=best, promoted=True,
                            required_margin=0.0, embargo_until=embargo_until(race.day))
    margin = rules.margin.margin(race.slot - state.reign.since)
    promoted = race.results[best] - race.results[race.defender] > margin + PROMOTION_EPSILON
    return RaceFinished(at=now, race_id=race.race_id, standings=ranked,
                        winner=best if promoted else race.defender, promoted=promoted, required_margin=margin,
                        embargo_until=embargo_until(race.day) if promoted else None)
