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

from arena.race import Clock, EventStore, RaceRules, RaceState
from arena.rules_fingerprint import RulesFingerprint
from arena.submissions.store import FileStore
from arena.validator.api.views.history import FollowedHistory, RaceHistory
from trajectories.store import TrajectoryStore


@dataclass
class ArenaView:
    """Read-only access to what the validator recorded, and the rules it runs (``rules`` ``None``: not
    given; ``race_rules``: the race's, for what a challenger must beat, the defaults unless given;
    ``dumps_dir``: the daily dumps the site lists and serves, none unless given)."""

    events: EventStore
    store: TrajectoryStore
    files: FileStore
    clock: Clock
    rules: RulesFingerprint | None = None
    race_rules: RaceRules = field(default_factory=RaceRules)
    dumps_dir: Path | None = None
    _log: FollowedHistory = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._log = FollowedHistory(self.events)

    def state(self) -> RaceState:
        return self._log.state()

    def followed(self) -> tuple[RaceState, RaceHistory]:
        """The race state and the log's history (races, reigns), from the same events."""
        return self._log.followed()


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
