"""The validator's public HTTP API: race state, qualifiers, winner, scores, embargo, published code,
a server-rendered leaderboard, ``/metrics`` (Prometheus) and ``/health``; plus the submissions router.

Everything is read from the race log (the source of truth: the work loop may run in another thread or
process; its state is folded forward as the log grows, ``arena.race.FollowedLog``) and the trajectory
store. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_args

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, PlainTextResponse
from jinja2 import Environment, select_autoescape
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from pydantic import BaseModel

from arena.race import Clock, EventStore, FollowedLog, RaceState
from arena.race.state import Submission, SubmissionStatus
from arena.submissions import SubmissionGate, submissions_router
from arena.submissions.store import FileStore
from arena.validator.runs import qualifying_suite_name
from arena.validator.service import TickReport
from trajectories.store import CategoryScore, ProblemEntry, RunKind, TrajectoryStore

SCORED_RUNS: tuple[RunKind, ...] = ("qualifying", "race")
"""The runs ``/scores`` sums up: the validator's own (not miners' local tests or held-out evaluations)."""


@dataclass
class ArenaView:
    """Read-only access to what the validator recorded."""

    events: EventStore
    store: TrajectoryStore
    files: FileStore
    clock: Clock
    _log: FollowedLog = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._log = FollowedLog(self.events)

    def state(self) -> RaceState:
        return self._log.state()


class EmbargoEntry(BaseModel):
    submission_id: str
    hotkey: str
    embargo_until: datetime | None
    published_at: datetime | None


class WinnerView(BaseModel):
    submission_id: str
    hotkey: str
    code_hash: str
    since: datetime
    race_id: str
    embargo: EmbargoEntry


def _embargo(state: RaceState, submission: Submission) -> EmbargoEntry:
    sid = submission.submission_id
    return EmbargoEntry(submission_id=sid, hotkey=submission.hotkey, embargo_until=state.embargoed.get(sid),
                        published_at=state.published.get(sid))


def _winner(state: RaceState) -> WinnerView | None:
    reign = state.reign
    if reign is None:
        return None
    submission = state.submissions[reign.submission_id]
    return WinnerView(submission_id=reign.submission_id, hotkey=reign.hotkey, code_hash=submission.code_hash,
                      since=reign.since, race_id=reign.race_id, embargo=_embargo(state, submission))


class StateCollector(Collector):
    """Gauges computed from the race log at scrape time."""

    def __init__(self, view: ArenaView) -> None:
        self.view = view

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self.view.state()
        events = GaugeMetricFamily("arena_race_events", "Events in the race log")
        events.add_metric([], state.events)
        by_status = GaugeMetricFamily("arena_submissions", "Submissions by status", labels=["status"])
        counts: dict[str, int] = {}
        for submission in state.submissions.values():
            counts[submission.status] = counts.get(submission.status, 0) + 1
        for status in get_args(SubmissionStatus):
            by_status.add_metric([status], counts.get(status, 0))
        running = GaugeMetricFamily("arena_race_running", "1 while a race runs")
        running.add_metric([], 1 if state.running else 0)
        pending = GaugeMetricFamily("arena_race_pending_runs", "Entrants of the running race owing a result")
        pending.add_metric([], len(state.running.pending) if state.running else 0)
        embargoed = GaugeMetricFamily("arena_embargoed_agents", "Winning agents whose code is still private")
        embargoed.add_metric([], len(state.embargoed))
        yield from (events, by_status, running, pending, embargoed)


class TickMetrics:
    """Counters the work loop updates after each tick."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.ticks = Counter("arena_validator_ticks", "Completed ticks", registry=registry)
        self.failures = Counter("arena_validator_tick_failures", "Ticks that raised", registry=registry)
        self.weights = Counter("arena_validator_weights_set", "Weight vectors set on chain",
                               registry=registry)
        self.runs = Counter("arena_validator_suite_runs", "Qualifying and race runs scored", ["kind"],
                            registry=registry)

    def observe(self, report: TickReport) -> None:
        self.ticks.inc()
        if report.weights_set_at is not None:
            self.weights.inc()
        self.runs.labels("race").inc(len(report.race_results))
        self.runs.labels("qualifying").inc(report.qualifying_runs)


_PAGE = Environment(autoescape=select_autoescape(default=True, default_for_string=True)).from_string("""\
<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shopping arena leaderboard</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head>
<body><h1>Shopping arena leaderboard</h1>
<section id="winner"><h2>Reigning winner</h2>
{% if winner %}<p><b class="hotkey">{{ winner.hotkey }}</b> (submission {{ winner.submission_id }}),
since race {{ winner.race_id }}; code
{% if winner.embargo.published_at %}<a href="/code/{{ winner.submission_id }}">published</a>
{% else %}under embargo until {{ winner.embargo.embargo_until }}{% endif %}</p>
{% else %}<p>No race has crowned a winner yet: all weight goes to the burn uid.</p>{% endif %}</section>
<section id="race"><h2>Race</h2>
{% if running %}<p>Race {{ running.race_id }} running: {{ running.results|length }} of
{{ running.entrants|length }} results in.</p>{% endif %}
{% if last %}<table id="standings"><tr><th>#</th><th>submission</th><th>hotkey</th><th>race score</th></tr>
{% for sid in last.standings %}<tr><td>{{ loop.index }}</td><td>{{ sid }}</td>
<td>{{ submissions[sid].hotkey }}</td><td>{{ "%.4f"|format(last.results[sid]) }}</td></tr>{% endfor %}
</table><p>Race {{ last.race_id }}: winner {{ last.winner }}{% if last.promoted %} (promoted){% endif %},
required margin {{ "%.4f"|format(last.required_margin) }}{% if last.lead_lower_bound is not none %},
lower bound on the best challenger's lead {{ "%.4f"|format(last.lead_lower_bound) }}{% endif %}.</p>
{% else %}<p>No race finished yet.</p>{% endif %}</section>
<section id="submissions"><h2>Submissions</h2>
<table><tr><th>submission</th><th>hotkey</th><th>submitted</th><th>status</th><th>qualifying score</th></tr>
{% for s in ordered %}<tr><td>{{ s.submission_id }}</td><td>{{ s.hotkey }}</td><td>{{ s.submitted_at }}</td>
<td>{{ s.status }}{% if s.rejection %} <span class="rejection" title="{{ s.rejection.reason }}">({{
s.rejection.kind }}: {{ s.rejection.findings|map(attribute="rule")|unique|join(", ") or s.rejection.reason
}})</span>{% endif %}{% if s.copy_of %} <span class="copy">(copy of {{ s.copy_of.hotkey }} at block {{
s.copy_of.commitment_block }})</span>{% endif %}</td><td>{% if s.qualifying_score is not none %}{{
"%.4f"|format(s.qualifying_score) }}
{% endif %}</td></tr>{% endfor %}</table></section>
</body></html>
""")


def create_app(view: ArenaView, *, gate: SubmissionGate | None = None,
               registry: CollectorRegistry | None = None) -> FastAPI:
    """The API over ``view``; ``gate`` mounts ``POST /submissions``; ``registry`` holds the loop's
    ``TickMetrics`` (a fresh one otherwise)."""
    app = FastAPI(title="Shopping arena validator")
    metrics = registry or CollectorRegistry()
    metrics.register(StateCollector(view))
    if gate is not None:
        app.include_router(submissions_router(gate))

    @app.get("/health")
    def health() -> dict[str, Any]:
        state = view.state()
        return {"status": "ok", "events": state.events, "time": view.clock.now().isoformat()}

    @app.get("/metrics", response_class=PlainTextResponse)
    def prometheus() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(metrics), media_type=CONTENT_TYPE_LATEST)

    @app.get("/race")
    def race() -> dict[str, Any]:
        state = view.state()
        return {"running": state.running.model_dump(mode="json") if state.running else None,
                "last_race": state.last_race.model_dump(mode="json") if state.last_race else None,
                "last_settled_day": state.last_settled_day}

    @app.get("/qualifiers")
    def qualifiers() -> list[Submission]:
        state = view.state()
        return sorted((s for s in state.submissions.values() if s.status == "qualified"),
                      key=lambda s: (s.submitted_at, s.submission_id))

    @app.get("/submissions")
    def submissions() -> list[Submission]:
        return sorted(view.state().submissions.values(), key=lambda s: (s.submitted_at, s.submission_id))

    @app.get("/winner")
    def winner() -> WinnerView | None:
        return _winner(view.state())

    @app.get("/scores")
    def scores() -> list[CategoryScore]:
        return view.store.category_scores(SCORED_RUNS)

    @app.get("/embargo")
    def embargo() -> list[EmbargoEntry]:
        state = view.state()
        ids = sorted({*state.embargoed, *state.published})
        return [_embargo(state, state.submissions[sid]) for sid in ids]

    @app.get("/qualifying/{submission_id}")
    def qualifying(submission_id: str) -> list[ProblemEntry]:
        """A submission's qualifying problems with their answers: public once its qualifying run is scored
        (they were generated after its commitment, so publishing them helps nobody's later run)."""
        submission = view.state().submissions.get(submission_id)
        if submission is None:
            raise HTTPException(404, f"no submission {submission_id}")
        if submission.qualifying_score is None:
            raise HTTPException(404, f"the qualifying problems of {submission_id} are published once its "
                                     "qualifying run is scored")
        return view.store.suite_problems(qualifying_suite_name(submission_id))

    @app.get("/code/{submission_id}", response_class=PlainTextResponse)
    def code(submission_id: str) -> PlainTextResponse:
        state = view.state()
        submission = state.submissions.get(submission_id)
        if submission is None:
            raise HTTPException(404, f"no submission {submission_id}")
        if submission_id not in state.published:
            until = state.embargoed.get(submission_id)
            why = (f"under embargo until {until.isoformat()}" if until
                   else "not published (only a promoted winner's code is, after its embargo)")
            raise HTTPException(403, f"code of {submission_id} is {why}")
        path = view.files.path(submission.code_hash)
        if not path.exists():
            raise HTTPException(404, f"this validator does not hold the file of {submission_id}")
        return PlainTextResponse(path.read_text(encoding="utf-8", errors="replace"))

    @app.get("/", response_class=HTMLResponse)
    def leaderboard() -> HTMLResponse:
        state = view.state()
        ordered = sorted(state.submissions.values(), key=lambda s: (s.submitted_at, s.submission_id))
        return HTMLResponse(_PAGE.render(winner=_winner(state), running=state.running, last=state.last_race,
                                         submissions=state.submissions, ordered=ordered))

    return app
