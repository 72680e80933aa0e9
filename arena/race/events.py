"""Every race transition is one of these events; the ordered log of them IS the race's state.

Decisions are recorded, not re-derived: an event carries its outcome (qualified or not and the
threshold used, the winner and the margin required, the embargo date), so replaying the log rebuilds
the same state even after the rules have been reconfigured.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from arena.race.clock import UtcDatetime

Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: UtcDatetime


class SubmissionAccepted(_Event):
    """Static analysis passed; the hotkey's cooldown starts now; its older unraced agent is superseded."""

    type: Literal["submission_accepted"] = "submission_accepted"
    submission_id: str
    hotkey: str
    code_hash: str
    cooldown_until: UtcDatetime


class SubmissionRejected(_Event):
    type: Literal["submission_rejected"] = "submission_rejected"
    hotkey: str
    code_hash: str
    kind: Literal["security", "integrity"]
    reason: str
    cooldown_until: UtcDatetime


class QualifyingFinished(_Event):
    type: Literal["qualifying_finished"] = "qualifying_finished"
    submission_id: str
    score: Score
    threshold: float
    qualified: bool


class RaceStarted(_Event):
    type: Literal["race_started"] = "race_started"
    race_id: str
    day: date
    slot: UtcDatetime = Field(description="The day's scheduled race instant: reign ages count from it")
    seed: str
    suite_ids: tuple[str, ...]
    entrants: tuple[str, ...] = Field(min_length=1)
    defender: str | None


class RaceSkipped(_Event):
    type: Literal["race_skipped"] = "race_skipped"
    day: date
    reason: str


class RaceResultRecorded(_Event):
    type: Literal["race_result_recorded"] = "race_result_recorded"
    race_id: str
    submission_id: str
    score: Score


class RaceFinished(_Event):
    type: Literal["race_finished"] = "race_finished"
    race_id: str
    standings: tuple[str, ...] = Field(description="Submission ids, best first")
    winner: str = Field(description="The reigning winner after this race")
    promoted: bool
    required_margin: float
    embargo_until: UtcDatetime | None


class CodePublished(_Event):
    type: Literal["code_published"] = "code_published"
    submission_id: str


RaceEvent = Annotated[
    SubmissionAccepted | SubmissionRejected | QualifyingFinished | RaceStarted | RaceSkipped
    | RaceResultRecorded | RaceFinished | CodePublished,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[RaceEvent] = TypeAdapter(RaceEvent)
