"""The generator schedule: which problem generator (version, configuration, lexicon) makes the suites of
each day, so a subnet can upgrade its generator without its validators disagreeing (SPEC 5).

A subnet announces an upgrade as a race day that every validator's configuration names. The schedule is
an ordered list of entries, each in force from its ``from_day`` until the next entry's; the first entry
also covers every day before its own ``from_day`` (the arena's history before the first upgrade). Days
before an upgrade therefore replay with the generator they were generated with, and the burnt-cluster
history a later race depends on stays exact on a validator that joins late.

Everything here is pure; opening the generators and reading the lexicon files is
:mod:`arena.suites.generators`' work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class ScheduleError(ValueError):
    """A generator schedule this validator cannot run: the message names the entry and what differs."""


class GeneratorSpec(BaseModel):
    """One generator: a version this code knows, overrides of its configuration, the lexicon it reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = Field(min_length=1, description="A generator version (`sbgen-1`, ...)")
    config: Mapping[str, Any] = Field(default_factory=dict,
                                      description="Overrides of the version's GeneratorConfig fields")
    lexicon_sha256: str | None = Field(default=None, pattern=SHA256_PATTERN,
                                       description="sha256 of the lexicon file the version reads, pinned")

    def label(self) -> str:
        """The spec as canonical JSON: the same text for equal specs whatever the order of their config keys
        (specs are looked up by it: a ``config`` mapping cannot be hashed)."""
        return orjson.dumps(self.model_dump(mode="json", exclude_none=True),
                            option=orjson.OPT_SORT_KEYS).decode()


class ScheduleEntry(GeneratorSpec):
    """A spec and the race day it takes effect from."""

    from_day: date

    def spec(self) -> GeneratorSpec:
        return GeneratorSpec(version=self.version, config=self.config, lexicon_sha256=self.lexicon_sha256)


class GeneratorSchedule(BaseModel):
    """The entries in force one after another, strictly ordered by day."""

    model_config = ConfigDict(frozen=True)

    entries: tuple[ScheduleEntry, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _strictly_ordered(self) -> GeneratorSchedule:
        for before, after in zip(self.entries, self.entries[1:], strict=False):
            if after.from_day <= before.from_day:
                raise ValueError(f"generator schedule entries must be strictly ordered by from_day: "
                                 f"{after.from_day} ({after.version}) follows {before.from_day} "
                                 f"({before.version})")
        return self

    @classmethod
    def single(cls, spec: GeneratorSpec) -> GeneratorSchedule:
        """``spec`` for every day: a subnet that never upgraded."""
        return cls(entries=(ScheduleEntry(from_day=date.min, **spec.model_dump()),))

    def specs(self) -> tuple[GeneratorSpec, ...]:
        """Every distinct spec the schedule names, in order of first use."""
        return tuple({entry.spec().label(): entry.spec() for entry in self.entries}.values())

    def spec_for(self, day: date) -> GeneratorSpec:
        """The spec in force on race day ``day``: the last entry from on or before it, else the first."""
        in_force = self.entries[0]
        for entry in self.entries[1:]:
            if entry.from_day > day:
                break
            in_force = entry
        return in_force.spec()

    def spec_for_week(self, week: str) -> GeneratorSpec:
        """The spec of ISO week ``week``'s qualifying suite: the one in force on its Monday, so the suite
        stays the same all week even when an upgrade takes effect mid-week."""
        year, number = week.split("-W")
        return self.spec_for(date.fromisocalendar(int(year), int(number), 1))


def require_known_versions(schedule: GeneratorSchedule, known: Iterable[str]) -> None:
    """Raise :class:`ScheduleError` naming the first entry whose version this code cannot generate."""
    versions = tuple(known)
    for entry in schedule.entries:
        if entry.version not in versions:
            raise ScheduleError(f"the generator schedule entry from {entry.from_day} names version "
                                f"{entry.version!r}, which this code does not know (it knows "
                                f"{', '.join(versions)}): upgrade the validator before that day")

