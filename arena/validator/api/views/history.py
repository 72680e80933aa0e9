"""The race log's history, folded forward with the state: every race (its results, per-problem outcomes
and decision), every change of reign, the latest qualifying decision.

:class:`HistoryRecorder` is one of the recorders of the API's :class:`~arena.race.FollowedLog`: each event
appended since the last request is loaded once, applied to the state and recorded here, so the
leaderboard's charts and tables never replay the log (``ArenaView.followed()``). Requests read an
immutable :class:`RaceHistory` snapshot taken under the follower's lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime

from arena.judge import ProblemOutcome
from arena.race import RaceEvent, RaceState
from arena.race.events import QualifyingFinished, RaceFinished, RaceResultRecorded, RaceStarted


@dataclass(frozen=True)
class RaceRecord:
    """One race as the log tells it; ``finished_at`` is ``None`` while it runs."""

    race_id: str
    day: date
    slot: datetime
    suite_ids: tuple[str, ...]
    entrants: tuple[str, ...]
    defender: str | None
    results: Mapping[str, float] = field(default_factory=dict)
    outcomes: Mapping[str, tuple[ProblemOutcome, ...]] = field(default_factory=dict)
    standings: tuple[str, ...] = ()
    winner: str | None = None
    promoted: bool = False
    required_margin: float | None = None
    lead_lower_bound: float | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class ReignChange:
    """From ``at`` on, ``submission_id`` (``None``: nobody) reigned."""

    at: datetime
    submission_id: str | None
    hotkey: str | None


@dataclass(frozen=True)
class RaceHistory:
    """Races in log order, reign changes in log order, and the latest qualifying decision."""

    races: tuple[RaceRecord, ...] = ()
    reigns: tuple[ReignChange, ...] = ()
    last_qualifying: QualifyingFinished | None = None

    def finished(self) -> list[RaceRecord]:
        return [race for race in self.races if race.finished_at is not None]


class HistoryRecorder:
    """Builds the history event by event (an :class:`~arena.race.follow.EventRecorder`: only under the
    follower's lock)."""

    def __init__(self) -> None:
        self.races: list[RaceRecord] = []
        self.position: dict[str, int] = {}
        self.reigns: list[ReignChange] = []
        self.last_qualifying: QualifyingFinished | None = None
        self._snapshot: RaceHistory | None = RaceHistory()

    def _update(self, race_id: str, **changes: object) -> None:
        n = self.position[race_id]
        self.races[n] = replace(self.races[n], **changes)  # type: ignore[arg-type]

    def record(self, event: RaceEvent, before: RaceState, after: RaceState) -> None:
        self._snapshot = None
        match event:
            case RaceStarted():
                self.position[event.race_id] = len(self.races)
                self.races.append(
                    RaceRecord(
                        race_id=event.race_id,
                        day=event.day,
                        slot=event.slot,
                        suite_ids=event.suite_ids,
                        entrants=event.entrants,
                        defender=event.defender,
                    )
                )
            case RaceResultRecorded():
                race = self.races[self.position[event.race_id]]
                self._update(
                    event.race_id,
                    results={**race.results, event.submission_id: event.score},
                    outcomes={**race.outcomes, event.submission_id: event.outcomes},
                )
            case RaceFinished():
                self._update(
                    event.race_id,
                    standings=event.standings,
                    winner=event.winner,
                    promoted=event.promoted,
                    required_margin=event.required_margin,
                    lead_lower_bound=event.lead_lower_bound,
                    finished_at=event.at,
                )
            case QualifyingFinished():
                self.last_qualifying = event
            case _:
                pass
        was = before.reign.submission_id if before.reign else None
        now = after.reign
        if was != (now.submission_id if now else None):
            self.reigns.append(
                ReignChange(
                    at=now.since if now else event.at,
                    submission_id=now.submission_id if now else None,
                    hotkey=now.hotkey if now else None,
                )
            )

    def snapshot(self) -> RaceHistory:
        """The history so far, immutable (taken again only after new events)."""
        if self._snapshot is None:
            self._snapshot = RaceHistory(
                races=tuple(self.races), reigns=tuple(self.reigns), last_qualifying=self.last_qualifying
            )
        return self._snapshot
