"""``create_app``: the validator's public API over an :class:`ArenaView`, one router per resource."""

from __future__ import annotations

from collections.abc import Hashable

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from prometheus_client import CollectorRegistry

from arena.submissions import SubmissionGate, submissions_router
from arena.validator.api.cache import ResponseCache
from arena.validator.api.precheck import precheck_router
from arena.validator.api.routes import (
    attempts,
    code,
    dumps,
    embargo,
    health,
    leaderboard,
    metrics,
    qualifying,
    race,
    rules,
    scores,
    submission_pages,
    submissions,
    winner,
)
from arena.validator.api.site.errors import html_errors
from arena.validator.api.site.pages import STATIC_DIR
from arena.validator.api.views.monitoring import ProviderHealthCollector, StateCollector
from arena.validator.api.views.view import ArenaView
from trajectories.store.site_reads import SiteReads

ROUTERS = (health.router, metrics.router, race.router, submissions.router, winner.router, scores.router,
           embargo.router, qualifying.router, code.router, rules.router, leaderboard.router,
           submission_pages.router, attempts.router, dumps.router)
"""In the order their paths are listed in the OpenAPI document."""


def records_version(view: ArenaView) -> Hashable:
    """What the site's answers are computed from, as a key that changes when any of it changes: the race
    log's length, the newest attempt's id and the dump folder's modification time (a day exported)."""
    dumps = view.dumps_dir
    exported = dumps.stat().st_mtime_ns if dumps is not None and dumps.is_dir() else None
    return view.state().events, SiteReads(view.store).latest_attempt_id(), exported


def create_app(view: ArenaView, *, gate: SubmissionGate | None = None,
               registry: CollectorRegistry | None = None) -> FastAPI:
    """The API over ``view``; ``gate`` mounts ``POST /submissions`` and ``POST /submissions/precheck``;
    ``registry`` holds the loop's ``TickMetrics`` (a fresh one otherwise)."""
    # FastAPIOffline: FastAPI with /docs and /redoc served from the package (operators' browsers often
    # cannot reach a CDN, and FastAPI's default pages then stay white).
    app = FastAPIOffline(title="Shopping arena validator")
    html_errors(app)
    app.state.view = view
    app.state.registry = registry or CollectorRegistry()
    app.state.registry.register(StateCollector(view))
    app.state.registry.register(ProviderHealthCollector())
    if gate is not None:
        app.include_router(submissions_router(gate))
        app.include_router(precheck_router(gate))
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    # Public pages and JSON answered once per URL and version of the records (``cache.py``).
    app.add_middleware(ResponseCache, version=lambda: records_version(view))
    return app
