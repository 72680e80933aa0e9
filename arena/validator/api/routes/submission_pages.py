"""A submission's page and its JSON: ``GET /submissions/{id}/page``, ``GET /api/submissions/{id}`` and
``GET /api/submissions/{id}/attempts`` (its public attempts, a page at a time).

Read from the race log (the submission, its timeline) and the trajectory store through the indexed reads
of ``trajectories.store.site_reads``; the code is shown only where ``GET /code/{id}`` serves it.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from arena.race.state import Submission
from arena.validator.api.routes.code import published_code
from arena.validator.api.site.charts import bar_chart
from arena.validator.api.site.pages import page
from arena.validator.api.site.paging import Page, PageDep, PageParams, cached_json, paged
from arena.validator.api.views.submission_view import (
    CodeStatus,
    SubmissionDetail,
    gate_counts,
    label_counts,
    public_scope,
    run_summaries,
    submission_runs,
    verified_counts,
)
from arena.validator.api.views.timeline import Timelines
from arena.validator.api.views.view import ArenaView, ViewDep
from trajectories.store.site_reads import AttemptSummary, SiteReads

router = APIRouter()
_TIMELINES = threading.Lock()


def app_timelines(request: Request) -> Timelines:
    """The app's submission timelines, made on first use over the view's race log."""
    with _TIMELINES:
        timelines: Timelines | None = getattr(request.app.state, "timelines", None)
        if timelines is None:
            timelines = Timelines(request.app.state.view.events)
            request.app.state.timelines = timelines
        return timelines


TimelinesDep = Annotated[Timelines, Depends(app_timelines)]


@lru_cache(maxsize=32)
def highlighted(code: str) -> Markup:
    """``code`` as syntax-highlighted HTML (pygments, inline styles, line numbers; the text is escaped)."""
    formatter = HtmlFormatter(noclasses=True, linenos="inline", cssclass="highlight", wrapcode=True)
    return Markup(highlight(code, PythonLexer(), formatter))


def _submission(view: ArenaView, submission_id: str) -> Submission:
    submission = view.state().submissions.get(submission_id)
    if submission is None:
        raise HTTPException(404, f"no submission {submission_id}")
    return submission


def _code(view: ArenaView, submission_id: str) -> tuple[CodeStatus, str | None]:
    try:
        code = published_code(view, submission_id)
    except HTTPException as refused:
        return CodeStatus(visible=False, reason=str(refused.detail), url=None), None
    published = view.state().published[submission_id]
    return CodeStatus(
        visible=True, reason=f"published {published:%Y-%m-%d %H:%M} UTC", url=f"/code/{submission_id}"
    ), code


def submission_detail(
    view: ArenaView,
    timelines: Timelines,
    submission_id: str,
) -> tuple[SubmissionDetail, str | None]:
    """The submission page's figures, and its code when published."""
    submission = _submission(view, submission_id)
    rows = SiteReads(view.store).agent_counts(
        submission.code_hash, public_scope(view.state()), runs=submission_runs(submission)
    )
    code_status, code = _code(view, submission_id)
    return SubmissionDetail(
        submission=submission,
        timeline=timelines.of(submission_id),
        runs=run_summaries(rows, submission.code_hash),
        gates=gate_counts(rows),
        labels=label_counts(rows),
        verified=verified_counts(rows),
        code=code_status,
        attempts_url=f"/api/submissions/{submission_id}/attempts",
    ), code


def attempts_page(view: ArenaView, submission_id: str, params: PageParams) -> Page[AttemptSummary]:
    submission = _submission(view, submission_id)
    items, total = SiteReads(view.store).agent_attempts(
        submission.code_hash,
        public_scope(view.state()),
        runs=submission_runs(submission),
        offset=params.offset,
        limit=params.limit,
    )
    return paged(items, params, total=total)


@router.get("/api/submissions/{submission_id}", response_model=SubmissionDetail)
def submission_json(submission_id: str, request: Request, view: ViewDep, timelines: TimelinesDep) -> Response:
    detail, _ = submission_detail(view, timelines, submission_id)
    return cached_json(request, detail)


@router.get("/api/submissions/{submission_id}/attempts", response_model=Page[AttemptSummary])
def submission_attempts(submission_id: str, request: Request, view: ViewDep, params: PageDep) -> Response:
    return cached_json(request, attempts_page(view, submission_id, params))


@router.get("/submissions/{submission_id}/page", include_in_schema=False)
def submission_page(
    submission_id: str, request: Request, view: ViewDep, timelines: TimelinesDep, params: PageDep
) -> Response:
    detail, code = submission_detail(view, timelines, submission_id)
    attempts = attempts_page(view, submission_id, params)
    chart = bar_chart(
        [(f"gate {g.stopped_at_gate}" if g.stopped_at_gate else g.label, g.attempts) for g in detail.gates],
        title="Attempts by the judge gate they stopped at",
    )
    return page(
        request,
        "submission.html",
        d=detail,
        attempts=attempts,
        last_page=max(1, -(-attempts.total // params.page_size)),
        gate_chart=chart,
        code_html=highlighted(code) if code is not None else None,
    )
