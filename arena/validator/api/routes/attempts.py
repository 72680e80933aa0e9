"""One attempt, step by step: ``GET /attempts/{id}`` (the viewer) and ``GET /api/attempts/{id}``.

Only attempts on public problems (``views.submission_view.is_public``): anything else, held-out problems
first of all, answers 404 exactly like an id that does not exist.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, Request, Response

from arena.race import RaceState
from arena.validator.api.site.pages import page
from arena.validator.api.site.paging import IMMUTABLE_MAX_AGE, cached_json
from arena.validator.api.views.attempt_view import AttemptDetail, attempt_detail
from arena.validator.api.views.submission_view import is_public
from arena.validator.api.views.view import ArenaView, ViewDep
from trajectories.store.site_reads import AttemptInContext, SiteReads

router = APIRouter()


def _owner(state: RaceState, found: AttemptInContext) -> str | None:
    """The submission whose run holds the attempt, as its run says; for a run that does not say (a
    defender's run stored before runs named their submission), the oldest submission of its code."""
    record = found.attempt.record
    registered = state.submissions.get(found.run_submission_id or "")
    if registered is not None and registered.code_hash == record.agent_hash:
        return registered.submission_id
    same_code = [s for s in state.submissions.values() if s.code_hash == record.agent_hash]
    chosen = sorted(same_code, key=lambda s: (s.submitted_at, s.submission_id))
    return chosen[0].submission_id if chosen else None


def public_attempt(view: ArenaView, attempt_id: int) -> AttemptDetail:
    """The viewer's model of attempt ``attempt_id``; 404 when there is none or it is not public."""
    state = view.state()
    found = SiteReads(view.store).attempt(attempt_id)
    if found is None or not is_public(state, found.run_kind, found.problem_suite):
        raise HTTPException(404, f"no public attempt {attempt_id}")
    return attempt_detail(found, _owner(state, found))


@router.get("/api/attempts/{attempt_id}", response_model=AttemptDetail)
def attempt_json(attempt_id: int, request: Request, view: ViewDep) -> Response:
    return cached_json(request, public_attempt(view, attempt_id), max_age=IMMUTABLE_MAX_AGE)


@router.get("/attempts/{attempt_id}", include_in_schema=False)
def attempt_page(attempt_id: int, request: Request, view: ViewDep) -> Response:
    detail = public_attempt(view, attempt_id)
    return page(
        request,
        "attempt.html",
        max_age=IMMUTABLE_MAX_AGE,
        a=detail,
        started=datetime.fromtimestamp(detail.started_at, UTC),
    )
