"""The race calendar as pure functions of time and rules: cooldowns, race slots, margins, embargoes."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

_SATURDAY: Final = 5


class MarginCurve(BaseModel):
    """How much a challenger must beat the reigning winner by, as the reign ages.

    ``margin(age) = floor + (initial - floor) * 2 ** (-age / half_life_days)``: a fresh winner is
    protected by ``initial``, halving the excess over ``floor`` every ``half_life_days``.
    """

    model_config = ConfigDict(frozen=True)

    initial: float = Field(default=0.05, ge=0, le=1)
    floor: float = Field(default=0.01, ge=0, le=1)
    half_life_days: float = Field(default=7.0, gt=0)

    @model_validator(mode="after")
    def _floor_below_initial(self) -> MarginCurve:
        if self.floor > self.initial:
            raise ValueError("the margin floor must not exceed the initial margin")
        return self

    def margin(self, age: timedelta) -> float:
        days = max(age, timedelta(0)) / timedelta(days=1)
        return self.floor + (self.initial - self.floor) * float(2.0 ** (-days / self.half_life_days))


def race_slot(day: date, race_time: time) -> datetime:
    """The instant of ``day``'s race."""
    return datetime.combine(day, race_time, tzinfo=UTC)


def latest_race_day(now: datetime, race_time: time) -> date:
    """The day of the most recent race slot at or before ``now``."""
    today = now.astimezone(UTC).date()
    return today if now >= race_slot(today, race_time) else today - timedelta(days=1)


def embargo_until(race_day: date) -> datetime:
    """Midnight UTC starting the first weekday after ``race_day`` (a Friday win publishes on Monday)."""
    day = race_day + timedelta(days=1)
    while day.weekday() >= _SATURDAY:
        day += timedelta(days=1)
    return datetime.combine(day, time(0), tzinfo=UTC)
