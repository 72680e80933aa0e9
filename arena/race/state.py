"""The race state and the pure reducer that folds events into it.

``replay(events)`` is the only way state is made: the engine applies each event it appends through
the same :func:`apply`, so the state after a restart (replay of the stored log) is identical to the
state before it. An event that does not fit the state means a corrupt or foreign log and raises.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.judge.score import ProblemOutcome
from arena.race.clock import UtcDatetime
from arena.race.events import (
    CodePublished,
    CopyOf,
    QualifyingFinished,
    RaceEvent,
    RaceFinished,
    RaceResultRecorded,
    RaceSkipped,
    RaceStarted,
    Rejection,
    SubmissionAccepted,
    SubmissionCopied,
    SubmissionRejected,
)

SubmissionStatus = Literal["qualifying", "qualified", "not_qualified", "superseded", "racing", "raced",
                           "rejected", "copy"]
_UNRACED: tuple[SubmissionStatus, ...] = ("qualifying", "qualified", "not_qualified", "superseded")


class InvalidEvent(ValueError):
    """An event that cannot follow the current state: the log is corrupt or was written by another writer."""


def submission_id(hotkey: str, code_hash: str, at: datetime) -> str:
    return hashlib.sha256(f"{hotkey}\n{code_hash}\n{at.isoformat()}".encode()).hexdigest()[:16]


class Submission(BaseModel):
    model_config = ConfigDict(frozen=True)

    submission_id: str
    hotkey: str
    code_hash: str
    submitted_at: UtcDatetime = Field(description="When this validator recorded it (local time: never a "
                                                  "tie-break, validators differ on it)")
    commitment_block: int | None = Field(default=None, description="Chain block of its commitment; None "
                                                                   "only in logs written before it was kept")
    status: SubmissionStatus = "qualifying"
    qualifying_score: float | None = None
    qualified_at: UtcDatetime | None = Field(default=None, description="When it qualified (None: it has not)")
    races: tuple[str, ...] = ()
    rejection: Rejection | None = Field(default=None, description="Why static analysis refused the file "
                                                                  "(status rejected): it never races")
    copy_of: CopyOf | None = Field(default=None, description="The earlier commitment this file copies "
                                                             "(status copy, or raced before the copy was "
                                                             "found): it earns nothing")


class Reign(BaseModel):
    model_config = ConfigDict(frozen=True)

    submission_id: str
    hotkey: str
    since: UtcDatetime = Field(description="Slot of the promoting race: the reign's age counts from it")
    race_id: str


class RunningRace(BaseModel):
    model_config = ConfigDict(frozen=True)

    race_id: str
    day: date
    slot: UtcDatetime
    seed: str
    suite_ids: tuple[str, ...]
    generator: str | None = Field(default=None, description="Key of the generator that made the suite")
    entrants: tuple[str, ...]
    defender: str | None
    started_at: UtcDatetime
    results: dict[str, float] = Field(default_factory=dict)
    outcomes: dict[str, tuple[ProblemOutcome, ...]] = Field(
        default_factory=dict, description="Per-problem outcomes of each result that carried them")

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(s for s in self.entrants if s not in self.results)


class CompletedRace(BaseModel):
    model_config = ConfigDict(frozen=True)

    race_id: str
    day: date
    generator: str | None = Field(default=None, description="Key of the generator that made the suite")
    seed: str = Field(description="The race's seed: equal scores break on a hash of it and the hotkey")
    entrants: tuple[str, ...]
    results: dict[str, float]
    standings: tuple[str, ...]
    winner: str
    promoted: bool
    required_margin: float
    lead_lower_bound: float | None = None
    finished_at: UtcDatetime


class RaceState(BaseModel):
    """Everything the race knows, rebuilt from its events."""

    model_config = ConfigDict(frozen=True)

    events: int = Field(default=0, description="How many events have been applied")
    submissions: dict[str, Submission] = Field(default_factory=dict)
    cooldown_until: dict[str, UtcDatetime] = Field(default_factory=dict)
    running: RunningRace | None = None
    last_race: CompletedRace | None = None
    last_settled_day: date | None = Field(default=None,
                                          description="Latest day whose race started or was skipped")
    reign: Reign | None = None
    embargoed: dict[str, UtcDatetime] = Field(default_factory=dict,
                                              description="Winners' code awaiting publication, until when")
    published: dict[str, UtcDatetime] = Field(default_factory=dict)

    def latest_of(self, hotkey: str) -> Submission | None:
        mine = [s for s in self.submissions.values() if s.hotkey == hotkey]
        return max(mine, key=lambda s: (s.submitted_at, s.submission_id)) if mine else None


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidEvent(message)


def _set_status(state: RaceState, submission_id: str, status: SubmissionStatus,
                **changes: object) -> dict[str, Submission]:
    submissions = dict(state.submissions)
    submissions[submission_id] = submissions[submission_id].model_copy(update={"status": status, **changes})
    return submissions


def _superseding(state: RaceState, hotkey: str) -> dict[str, Submission]:
    """The submissions with the hotkey's agent still waiting to race superseded by its newer file."""
    return {sid: s.model_copy(update={"status": "superseded"})
            if s.hotkey == hotkey and s.status in ("qualifying", "qualified") else s
            for sid, s in state.submissions.items()}


def _accepted(state: RaceState, event: SubmissionAccepted) -> RaceState:
    _require(event.submission_id not in state.submissions, f"submission {event.submission_id} already exists")
    submissions = _superseding(state, event.hotkey)
    submissions[event.submission_id] = Submission(submission_id=event.submission_id, hotkey=event.hotkey,
                                                  code_hash=event.code_hash, submitted_at=event.at,
                                                  commitment_block=event.commitment_block)
    cooldowns = {**state.cooldown_until, event.hotkey: event.cooldown_until}
    return state.model_copy(update={"submissions": submissions, "cooldown_until": cooldowns})


def _copied(state: RaceState, event: SubmissionCopied) -> RaceState:
    """Mark the hotkey's recorded submission of this file a copy, or record the file as one."""
    mine = [s for s in state.submissions.values()
            if s.hotkey == event.hotkey and s.code_hash == event.code_hash and s.status != "rejected"]
    if mine:
        found = max(mine, key=lambda s: (s.submitted_at, s.submission_id))
        status = "copy" if found.status in _UNRACED else found.status
        return state.model_copy(update={"submissions": _set_status(state, found.submission_id, status,
                                                                    copy_of=event.copy_of)})
    submissions = _superseding(state, event.hotkey)
    sid = submission_id(event.hotkey, event.code_hash, event.at)
    submissions[sid] = Submission(submission_id=sid, hotkey=event.hotkey, code_hash=event.code_hash,
                                  submitted_at=event.at, commitment_block=event.commitment_block,
                                  status="copy", copy_of=event.copy_of)
    cooldowns = {**state.cooldown_until, event.hotkey: event.cooldown_until}
    return state.model_copy(update={"submissions": submissions, "cooldown_until": cooldowns})


def _rejected(state: RaceState, event: SubmissionRejected) -> RaceState:
    # Kept so that the API can say why; the id is derived as for an accepted file, so old logs get one too.
    sid = submission_id(event.hotkey, event.code_hash, event.at)
    rejected = Submission(submission_id=sid, hotkey=event.hotkey, code_hash=event.code_hash,
                          submitted_at=event.at, status="rejected",
                          rejection=Rejection(kind=event.kind, reason=event.reason, findings=event.findings))
    return state.model_copy(update={"submissions": {**state.submissions, sid: rejected},
                                    "cooldown_until": {**state.cooldown_until,
                                                       event.hotkey: event.cooldown_until}})


def _qualifying(state: RaceState, event: QualifyingFinished) -> RaceState:
    submission = state.submissions.get(event.submission_id)
    _require(submission is not None and submission.status == "qualifying",
             f"submission {event.submission_id} is not waiting for qualifying")
    _require(event.winner is None or (state.reign is not None and event.winner == state.reign.submission_id),
             f"qualifying of {event.submission_id} measured against {event.winner}, not the reigning winner")
    status: SubmissionStatus = "qualified" if event.qualified else "not_qualified"
    return state.model_copy(update={"submissions": _set_status(
        state, event.submission_id, status, qualifying_score=event.score,
        qualified_at=event.at if event.qualified else None)})


def _started(state: RaceState, event: RaceStarted) -> RaceState:
    _require(state.running is None, f"race {event.race_id} started while another race runs")
    _require(state.last_settled_day is None or event.day > state.last_settled_day,
             f"race day {event.day} is not after the last settled day {state.last_settled_day}")
    _require(event.defender == (state.reign.submission_id if state.reign else None),
             "the defender must be the reigning winner")
    submissions = dict(state.submissions)
    for sid in event.entrants:
        _require(sid in submissions, f"race entrant {sid} is unknown")
        entrant = submissions[sid]
        _require(entrant.status == "qualified" or sid == event.defender,
                 f"race entrant {sid} is not qualified")
        submissions[sid] = entrant.model_copy(update={"status": "racing",
                                                      "races": (*entrant.races, event.race_id)})
    running = RunningRace(race_id=event.race_id, day=event.day, slot=event.slot, seed=event.seed,
                          suite_ids=event.suite_ids, generator=event.generator,
                          entrants=event.entrants, defender=event.defender, started_at=event.at)
    return state.model_copy(update={"submissions": submissions, "running": running,
                                    "last_settled_day": event.day})


def _skipped(state: RaceState, event: RaceSkipped) -> RaceState:
    _require(state.running is None, "a race day was skipped while a race runs")
    _require(state.last_settled_day is None or event.day > state.last_settled_day,
             f"race day {event.day} is not after the last settled day {state.last_settled_day}")
    return state.model_copy(update={"last_settled_day": event.day})


def _result(state: RaceState, event: RaceResultRecorded) -> RaceState:
    race = state.running
    _require(race is not None and race.race_id == event.race_id, f"race {event.race_id} is not running")
    assert race is not None
    _require(event.submission_id in race.pending,
             f"{event.submission_id} has no pending run in {race.race_id}")
    outcomes = {**race.outcomes, event.submission_id: event.outcomes} if event.outcomes else race.outcomes
    running = race.model_copy(update={"results": {**race.results, event.submission_id: event.score},
                                      "outcomes": outcomes})
    return state.model_copy(update={"running": running})


def _finished(state: RaceState, event: RaceFinished) -> RaceState:
    race = state.running
    _require(race is not None and race.race_id == event.race_id and not race.pending,
             f"race {event.race_id} is not running with every result in")
    assert race is not None
    _require(sorted(event.standings) == sorted(race.entrants) and event.winner in race.entrants,
             "race standings must rank exactly the entrants")
    submissions = dict(state.submissions)
    for sid in race.entrants:
        submissions[sid] = submissions[sid].model_copy(update={"status": "raced"})
    reign = state.reign
    embargoed = dict(state.embargoed)
    if event.promoted:
        _require(event.embargo_until is not None and event.winner != race.defender,
                 "a promotion crowns a challenger and carries its embargo")
        assert event.embargo_until is not None
        winner = submissions[event.winner]
        reign = Reign(submission_id=winner.submission_id, hotkey=winner.hotkey,
                      since=race.slot, race_id=race.race_id)
        embargoed[event.winner] = event.embargo_until
    else:
        _require(reign is not None and event.winner == reign.submission_id,
                 "only a promotion changes the winner")
    completed = CompletedRace(race_id=race.race_id, day=race.day, generator=race.generator, seed=race.seed,
                              entrants=race.entrants,
                              results=race.results, standings=event.standings, winner=event.winner,
                              promoted=event.promoted, required_margin=event.required_margin,
                              lead_lower_bound=event.lead_lower_bound, finished_at=event.at)
    return state.model_copy(update={"submissions": submissions, "running": None, "last_race": completed,
                                    "reign": reign, "embargoed": embargoed})


def _published(state: RaceState, event: CodePublished) -> RaceState:
    until = state.embargoed.get(event.submission_id)
    _require(until is not None, f"{event.submission_id} has no embargoed code")
    assert until is not None
    _require(event.at >= until, f"{event.submission_id} published before its embargo ends ({until})")
    embargoed = {k: v for k, v in state.embargoed.items() if k != event.submission_id}
    return state.model_copy(update={"embargoed": embargoed,
                                    "published": {**state.published, event.submission_id: event.at}})


def apply(state: RaceState, event: RaceEvent) -> RaceState:
    """The state after ``event``; raises :class:`InvalidEvent` when the event cannot follow ``state``."""
    match event:
        case SubmissionAccepted():
            new = _accepted(state, event)
        case SubmissionRejected():
            new = _rejected(state, event)
        case SubmissionCopied():
            new = _copied(state, event)
        case QualifyingFinished():
            new = _qualifying(state, event)
        case RaceStarted():
            new = _started(state, event)
        case RaceSkipped():
            new = _skipped(state, event)
        case RaceResultRecorded():
            new = _result(state, event)
        case RaceFinished():
            new = _finished(state, event)
        case CodePublished():
            new = _published(state, event)
    return new.model_copy(update={"events": state.events + 1})


def replay(events: Iterable[RaceEvent]) -> RaceState:
    state = RaceState()
    for event in events:
        state = apply(state, event)
    return state
