"""A submission's page and its JSON: ``GET /submissions/{id}/page``, ``GET /api/submissions/{id}`` and
``GET /api/submissions/{id}/attempts`` (its public attempts, a page at a time).

Read from the race log (the submission, its timeline folded as the log grows) and the trajectory store
through the indexed reads of ``trajectories.store.site_reads`` (a submission's public attempts kept until
the log or the store grows: ``views.public_attempts``); the code is shown only where ``GET /code/{id}``
serves it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from arena.race import RaceState
from arena.race.state import Submission
from arena.validator.api.routes.code import published_code
from arena.validator.api.site.charts import bar_chart
from arena.validator.api.site.pages import page
from arena.validator.api.site.paging import Page, PageDep, PageParams, cached_json, paged
from arena.validator.api.views.public_attempts import PublicAttempts
from arena.validator.api.views.submission_view import (
    CodeStatus,
    SubmissionDetail,
    gate_counts,
    label_counts,
    run_summaries,
    verified_counts,
)
from arena.validator.api.views.view import ArenaView, ViewDep
from trajectories.store.site_reads import AttemptSummary, SiteReads

router = APIRouter()
_MADE = threading.Lock()


@dataclass(frozen=True)
class SubmissionSources:
    """What the submission routes keep between requests: each submission's public attempts
    (``views.public_attempts``; the timelines are the view's, folded with the race state)."""

    attempts: PublicAttempts


def app_sources(request: Request) -> SubmissionSources:
    """The app's :class:`SubmissionSources`, made on first use over its view."""
    with _MADE:
        sources: SubmissionSources | None = getattr(request.app.state, "submission_sources", None)
        if sources is None:
            view: ArenaView = request.app.state.view
            sources = SubmissionSources(PublicAttempts(SiteReads(view.store)))
            request.app.state.submission_sources = sources
        return sources


SourcesDep = Annotated[SubmissionSources, Depends(app_sources)]


@lru_cache(maxsize=32)
def highlighted(code: str) -> Markup:
    """``code`` as syntax-highlighted HTML (pygments, inline styles, line numbers; the text is escaped)."""
    formatter = HtmlFormatter(noclasses=True, linenos="inline", cssclass="highlight", wrapcode=True)
    return Markup(highlight(code, PythonLexer(), formatter))


def _submission(state: RaceState, submission_id: str) -> Submission:
    submission = state.submissions.get(submission_id)
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
    view: ArenaView, sources: SubmissionSources, submission_id: str
) -> tuple[SubmissionDetail, str | None]:
    """The submission page's figures, and its code when published."""
    state, timeline = view.timeline(submission_id)
    submission = _submission(state, submission_id)
    rows = sources.attempts.of(state, submission).counts
    code_status, code = _code(view, submission_id)
    detail = SubmissionDetail(
        submission=submission,
        timeline=timeline,
        runs=run_summaries(rows),
        gates=gate_counts(rows),
        labels=label_counts(rows),
        verified=verified_counts(rows),
        code=code_status,
        attempts_url=f"/api/submissions/{submission_id}/attempts",
    )
    return detail, code


def attempts_page(
    view: ArenaView, sources: SubmissionSources, submission_id: str, params: PageParams
) -> Page[AttemptSummary]:
    """A page of the submission's public attempts, oldest first: a slice of its ids, read by primary key."""
    state = view.state()
    ids = sources.attempts.of(state, _submission(state, submission_id)).ids
    chosen = ids[params.offset : params.offset + params.limit]
    return paged(SiteReads(view.store).summaries(chosen), params, total=len(ids))


@router.get("/api/submissions/{submission_id}", response_model=SubmissionDetail)
def submission_json(submission_id: str, request: Request, view: ViewDep, sources: SourcesDep) -> Response:
    detail, _ = submission_detail(view, sources, submission_id)
    return cached_json(request, detail)


@router.get("/api/submissions/{submission_id}/attempts", response_model=Page[AttemptSummary])
def submission_attempts(
    submission_id: str, request: Request, view: ViewDep, sources: SourcesDep, params: PageDep
) -> Response:
    return cached_json(request, attempts_page(view, sources, submission_id, params))


@router.get("/submissions/{submission_id}/page", include_in_schema=False)
def submission_page(
    submission_id: str, request: Request, view: ViewDep, sources: SourcesDep, params: PageDep
) -> Response:
    detail, code = submission_detail(view, sources, submission_id)
    attempts = attempts_page(view, sources, submission_id, params)
    chart = bar_chart(
        [(f"gate {g.stopped_at_gate}" if g.stopped_at_gate else g.label, g.attempts) for g in detail.gates],
        title="Attempts by the judge gate they stopped at",
    ) if detail.gates else None  # nothing judged yet: no empty chart
    return page(
        request,
        "submission.html",
        d=detail,
        attempts=attempts,
        last_page=max(1, -(-attempts.total // params.page_size)),
        gate_chart=chart,
        code_html=highlighted(code) if code is not None else None,
    )
