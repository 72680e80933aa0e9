"""Every race transition is one of these events; the ordered log of them IS the race's state.

Decisions are recorded, not re-derived: an event carries its outcome (qualified or not and the
threshold used, the winner, the margin required and the promotion test's bound, the embargo date), so
replaying the log rebuilds the same state even after the rules have been reconfigured. Fields added
after logs were first written have defaults, so those logs still replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from arena.judge.score import ProblemOutcome
from arena.race.clock import UtcDatetime
from shoppingbench.submission_check import CheckReport
from shoppingbench.submission_check.models import Category, Finding

Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]

RECORDED_FINDINGS = 20
"""A rejection keeps at most this many findings (a file full of answer ids could list thousands)."""
_REASON_FINDINGS = 5
_UNRECORDED = "static analysis refused the file (its findings were not recorded)"


class Rejection(BaseModel):
    """Why static analysis refused a submission. Security rejections carry a shorter cooldown."""

    model_config = ConfigDict(frozen=True)

    kind: Category
    reason: str
    findings: tuple[Finding, ...] = Field(default=(), description="Each rule broken, with its line")

    @classmethod
    def of(cls, kind: Category, findings: Sequence[Finding]) -> Rejection:
        """The rejection of ``kind`` over ``findings``; its reason names the first few."""
        named = "; ".join(f"{f.rule} (line {f.line}): {f.message}" if f.line else f"{f.rule}: {f.message}"
                          for f in findings[:_REASON_FINDINGS])
        more = len(findings) - _REASON_FINDINGS
        reason = (f"{named}; and {more} more" if more > 0 else named) or _UNRECORDED
        return cls(kind=kind, reason=reason, findings=tuple(findings[:RECORDED_FINDINGS]))

    @classmethod
    def from_report(cls, report: CheckReport) -> Rejection | None:
        """The rejection a static-analysis report calls for, ``None`` when the file passed."""
        return None if report.rejection is None else cls.of(report.rejection, report.findings)


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
    commitment_block: int | None = Field(
        default=None, ge=0, description="Chain block of the hotkey's first commitment of this file (a "
                                        "re-commitment of the same hash keeps it; its qualifying draw "
                                        "follows it); absent from logs written before it was recorded")


class SubmissionRejected(_Event):
    type: Literal["submission_rejected"] = "submission_rejected"
    hotkey: str
    code_hash: str
    kind: Category
    reason: str
    cooldown_until: UtcDatetime
    findings: tuple[Finding, ...] = Field(default=(), description="Absent from logs written before findings "
                                                                  "were recorded: they read as none")


class CopyOf(BaseModel):
    """The earlier commitment (of another hotkey) whose code a submission copies, or whose behaviour it
    repeats on the submission's own qualifying problems (``basis`` ``behaviour``)."""

    model_config = ConfigDict(frozen=True)

    hotkey: str
    code_hash: str
    commitment_block: int = Field(ge=0)
    similarity: float = Field(ge=0, le=1, description="1.0 when the normalised code is the same; the "
                                                      "behaviour similarity for a behaviour copy")
    basis: Literal["code", "behaviour"] = Field(default="code", description="What the copy was found by; "
                                                                            "older logs: code")
    submission_id: str | None = Field(default=None, description="The original's submission, when the "
                                                                "validator ran it (a behaviour copy)")

    def summary(self) -> str:
        """The copy as the miner, ``/submissions`` and the site name it: the original and how it was found."""
        where = f"block {self.commitment_block}, similarity {self.similarity:.2f}"
        if self.basis == "behaviour":
            return f"copy of {self.submission_id} (behaviour: {self.hotkey}'s {self.code_hash[:12]}, {where})"
        return f"copy of {self.hotkey}'s {self.code_hash[:12]} ({where})"


class SubmissionCopied(_Event):
    """The gate found the file a copy of an earlier commitment: it never qualifies, races or earns.

    When the file was already recorded as accepted (its original was uploaded after it but committed
    before it), that submission is marked: it leaves qualifying and the queue; one that already raced
    keeps its result but earns nothing from it.
    """

    type: Literal["submission_copied"] = "submission_copied"
    hotkey: str
    code_hash: str
    commitment_block: int = Field(ge=0)
    copy_of: CopyOf
    cooldown_until: UtcDatetime


class QualifyingFinished(_Event):
    type: Literal["qualifying_finished"] = "qualifying_finished"
    submission_id: str
    score: Score
    threshold: float
    qualified: bool
    winner: str | None = Field(default=None, description="The reigning winner whose score set the threshold; "
                                                         "None without one (and in older logs)")
    winner_score: Score | None = Field(default=None, description="The reigning winner's score on the same "
                                                                 "qualifying problems as the challenger")


class RaceStarted(_Event):
    type: Literal["race_started"] = "race_started"
    race_id: str
    day: date
    slot: UtcDatetime = Field(description="The day's scheduled race instant: reign ages count from it")
    seed: str
    seed_block: int | None = Field(default=None, ge=0, description="The block whose hash is the seed, when "
                                                                   "the entrants were chosen by it")
    suite_ids: tuple[str, ...]
    generator: str | None = Field(default=None, description="Key of the generator the day's schedule named "
                                                            "(logs from before the schedule have none)")
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
    outcomes: tuple[ProblemOutcome, ...] = Field(default=(), description="Per problem, in suite order; "
                                                                          "absent from older logs")


class RaceFinished(_Event):
    type: Literal["race_finished"] = "race_finished"
    race_id: str
    standings: tuple[str, ...] = Field(description="Submission ids, best first")
    winner: str = Field(description="The reigning winner after this race")
    promoted: bool
    required_margin: float
    lead_lower_bound: float | None = Field(
        default=None, description="One-sided lower confidence bound on the best challenger's lead over the "
                                  "defender (paired bootstrap over problems); None when not computed "
                                  "(no defender, or a result without per-problem outcomes)")
    embargo_until: UtcDatetime | None


class CodePublished(_Event):
    type: Literal["code_published"] = "code_published"
    submission_id: str


RaceEvent = Annotated[
    SubmissionAccepted | SubmissionRejected | SubmissionCopied | QualifyingFinished | RaceStarted
    | RaceSkipped | RaceResultRecorded | RaceFinished | CodePublished,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[RaceEvent] = TypeAdapter(RaceEvent)
