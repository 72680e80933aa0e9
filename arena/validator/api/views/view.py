"""What the routes read: the validator's records (``ArenaView``), handed to each route as a dependency.

Everything is read from the race log (the source of truth: the work loop may run in another thread or
process; its state is folded forward as the log grows, ``arena.race.FollowedLog``) and the trajectory
store, and the rules fingerprint the validator was assembled under. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from prometheus_client import CollectorRegistry

from arena.race import Clock, EventStore, FollowedLog, RaceRules, RaceState
from arena.rules_fingerprint import RulesFingerprint
from arena.submissions.store import FileStore
from arena.validator.api.views.history import HistoryRecorder, RaceHistory
from arena.validator.api.views.timeline import TimelineEntry, Timelines
from trajectories.store import TrajectoryStore


@dataclass
class ArenaView:
    """Read-only access to what the validator recorded, and the rules it runs (``rules`` ``None``: not
    given; ``race_rules``: the race's, for what a challenger must beat, the defaults unless given;
    ``dumps_dir``: the daily dumps the site lists and serves, none unless given; ``warnings``: what readers
    of ``/rules`` must know about how this validator races)."""

    events: EventStore
    store: TrajectoryStore
    files: FileStore
    clock: Clock
    rules: RulesFingerprint | None = None
    race_rules: RaceRules = field(default_factory=RaceRules)
    dumps_dir: Path | None = None
    warnings: tuple[str, ...] = ()
    _history: HistoryRecorder = field(init=False, repr=False)
    _timelines: Timelines = field(init=False, repr=False)
    _log: FollowedLog = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # One follower of the log for the state, the history and the timelines: each event read once.
        self._history = HistoryRecorder()
        self._timelines = Timelines()
        self._log = FollowedLog(self.events, recorders=(self._history, self._timelines))

    def state(self) -> RaceState:
        return self._log.state()

    def followed(self) -> tuple[RaceState, RaceHistory]:
        """The race state and the log's history (races, reigns), from the same events."""
        return self._log.read(lambda state: (state, self._history.snapshot()))

    def timeline(self, submission_id: str) -> tuple[RaceState, list[TimelineEntry]]:
        """The race state and the submission's timeline (empty: unknown), from the same events."""
        return self._log.read(lambda state: (state, self._timelines.of(submission_id)))


def app_view(request: Request) -> ArenaView:
    """The view the app was created over."""
    view: ArenaView = request.app.state.view
    return view


def app_registry(request: Request) -> CollectorRegistry:
    """The Prometheus registry the app serves on ``/metrics``."""
    registry: CollectorRegistry = request.app.state.registry
    return registry


ViewDep = Annotated[ArenaView, Depends(app_view)]
RegistryDep = Annotated[CollectorRegistry, Depends(app_registry)]
