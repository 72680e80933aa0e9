"""Each submission's timeline, folded from the race log as it grows: commitment, upload, static analysis,
qualifying, races, promotion, embargo and publication, each with the time the log recorded it.

The race state keeps only where a submission stands now (its last race's figures, its current reign);
the timeline keeps every step it went through. :class:`Timelines` records each event as the API's
:class:`arena.race.FollowedLog` folds it in (the log read once, then only the events appended since; no
replay per request), against the state it followed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.race import RaceState
from arena.race.events import (
    CodePublished,
    QualifyingFinished,
    RaceEvent,
    RaceFinished,
    RaceResultRecorded,
    RaceStarted,
    SubmissionAccepted,
    SubmissionCopied,
    SubmissionRejected,
)
from arena.race.state import submission_id
from shoppingbench.submission_check.models import Finding

StepKind = Literal[
    "commitment",
    "upload",
    "static_analysis",
    "copy",
    "qualifying",
    "race_started",
    "race_result",
    "race_finished",
    "promotion",
    "embargo",
    "publication",
]


class TimelineEntry(BaseModel):
    """One step of a submission's life, as the race log recorded it."""

    model_config = ConfigDict(frozen=True)

    kind: StepKind
    at: datetime | None = Field(description="When the validator recorded it (None: a chain block only)")
    title: str
    detail: str = ""
    block: int | None = Field(default=None, description="Chain block (the commitment)")
    race_id: str | None = None
    score: float | None = None
    findings: tuple[Finding, ...] = Field(default=(), description="Static-analysis findings, rule and line")


def _accepted(event: SubmissionAccepted) -> list[TimelineEntry]:
    commitment = (
        [
            TimelineEntry(
                kind="commitment",
                at=None,
                block=event.commitment_block,
                title=f"committed at block {event.commitment_block}",
                detail=f"code hash {event.code_hash}",
            )
        ]
        if event.commitment_block is not None
        else []
    )
    return [
        *commitment,
        TimelineEntry(kind="upload", at=event.at, title="uploaded to this validator"),
        TimelineEntry(
            kind="static_analysis",
            at=event.at,
            title="static analysis passed",
            detail="no finding: the file may run",
        ),
    ]


def _rejected(event: SubmissionRejected) -> list[TimelineEntry]:
    return [
        TimelineEntry(kind="upload", at=event.at, title="uploaded to this validator"),
        TimelineEntry(
            kind="static_analysis",
            at=event.at,
            title=f"rejected by static analysis ({event.kind})",
            detail=event.reason,
            findings=event.findings,
        ),
    ]


def _qualifying(event: QualifyingFinished) -> TimelineEntry:
    verdict = "qualified" if event.qualified else "not qualified"
    against = (
        f"; the reigning winner scored {event.winner_score:.4f} on the same problems"
        if event.winner_score is not None
        else ""
    )
    return TimelineEntry(
        kind="qualifying",
        at=event.at,
        score=event.score,
        title=f"{verdict}: scored {event.score:.4f} on its qualifying problems",
        detail=f"threshold {event.threshold:.4f}{against}",
    )


def _finished(event: RaceFinished, sid: str, defender: str | None) -> list[TimelineEntry]:
    rank = event.standings.index(sid) + 1
    entries = [
        TimelineEntry(
            kind="race_finished",
            at=event.at,
            race_id=event.race_id,
            title=f"race {event.race_id} finished: ranked {rank} of {len(event.standings)}",
            detail=f"required margin {event.required_margin:.4f}"
            + (
                f"; lower bound on the best challenger's lead {event.lead_lower_bound:.4f}"
                if event.lead_lower_bound is not None
                else ""
            ),
        )
    ]
    if event.winner == sid and event.promoted:
        entries.append(
            TimelineEntry(
                kind="promotion",
                at=event.at,
                race_id=event.race_id,
                title=f"promoted: the reigning winner after race {event.race_id}",
            )
        )
        if event.embargo_until is not None:
            entries.append(
                TimelineEntry(
                    kind="embargo",
                    at=event.at,
                    race_id=event.race_id,
                    title=f"code under embargo until {event.embargo_until.isoformat()}",
                )
            )
    elif sid == defender and event.winner == sid:
        entries.append(
            TimelineEntry(
                kind="promotion",
                at=event.at,
                race_id=event.race_id,
                title=f"defended the title in race {event.race_id}",
            )
        )
    return entries


def _copied(before: RaceState, after: RaceState, event: SubmissionCopied) -> dict[str, list[TimelineEntry]]:
    original = event.copy_of
    entry = TimelineEntry(
        kind="copy",
        at=event.at,
        title="refused as a copy: it never races nor earns",
        detail=f"copies {original.hotkey}'s file {original.code_hash} (committed at block "
        f"{original.commitment_block}, similarity {original.similarity:.2f})"
        + (f": it acts as submission {original.submission_id} on its qualifying problems"
           if original.basis == "behaviour" else ""),
    )
    changed = [
        sid
        for sid, s in after.submissions.items()
        if s.copy_of is not None
        and (sid not in before.submissions or before.submissions[sid].copy_of != s.copy_of)
    ]
    out: dict[str, list[TimelineEntry]] = {}
    for sid in changed:
        new = sid not in before.submissions
        out[sid] = [
            *(
                [
                    TimelineEntry(
                        kind="commitment",
                        at=None,
                        block=event.commitment_block,
                        title=f"committed at block {event.commitment_block}",
                    ),
                    TimelineEntry(kind="upload", at=event.at, title="uploaded to this validator"),
                ]
                if new
                else []
            ),
            entry,
        ]
    return out


def entries_of(before: RaceState, after: RaceState, event: RaceEvent) -> dict[str, list[TimelineEntry]]:
    """What ``event`` (which turned ``before`` into ``after``) adds to each submission's timeline."""
    match event:
        case SubmissionAccepted():
            return {event.submission_id: _accepted(event)}
        case SubmissionRejected():
            return {submission_id(event.hotkey, event.code_hash, event.at): _rejected(event)}
        case SubmissionCopied():
            return _copied(before, after, event)
        case QualifyingFinished():
            return {event.submission_id: [_qualifying(event)]}
        case RaceStarted():
            started = f"{len(event.entrants)} entrants" + (
                f", defender {event.defender}" if event.defender else ", no defender"
            )
            return {
                sid: [
                    TimelineEntry(
                        kind="race_started",
                        at=event.at,
                        race_id=event.race_id,
                        title=f"entered race {event.race_id} ({len(event.suite_ids)} problems)",
                        detail=started,
                    )
                ]
                for sid in event.entrants
            }
        case RaceResultRecorded():
            return {
                event.submission_id: [
                    TimelineEntry(
                        kind="race_result",
                        at=event.at,
                        race_id=event.race_id,
                        score=event.score,
                        title=f"scored {event.score:.4f} in race {event.race_id}",
                    )
                ]
            }
        case RaceFinished():
            defender = before.running.defender if before.running else None
            return {sid: _finished(event, sid, defender) for sid in event.standings}
        case CodePublished():
            return {
                event.submission_id: [TimelineEntry(kind="publication", at=event.at, title="code published")]
            }
    return {}


class Timelines:
    """Every submission's timeline, recorded event by event (an
    :class:`~arena.race.follow.EventRecorder`: only under the follower's lock)."""

    def __init__(self) -> None:
        self._entries: dict[str, list[TimelineEntry]] = {}

    def record(self, event: RaceEvent, before: RaceState, after: RaceState) -> None:
        for key, added in entries_of(before, after, event).items():
            self._entries.setdefault(key, []).extend(added)

    def of(self, sid: str) -> list[TimelineEntry]:
        """The timeline of submission ``sid`` so far (empty: unknown)."""
        return list(self._entries.get(sid, ()))
