"""``GET /``: the leaderboard page (``templates/leaderboard.html``); ``GET /api/leaderboard`` and
``GET /api/leaderboard/history``: the same answers as JSON (``views/leaderboard.py``)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from arena.validator.api.site.charts import Segment, Series, day_ticks, line_chart, reign_bar
from arena.validator.api.site.pages import page
from arena.validator.api.site.paging import MAX_PAGE_SIZE, PageDep, PageParams, cached_json
from arena.validator.api.views.leaderboard import Leaderboard, LeaderboardHistory, history, leaderboard
from arena.validator.api.views.models import by_submission_time
from arena.validator.api.views.view import ViewDep

CHART_DAYS = 90
SUBMISSIONS_SHOWN = 100
"""The page lists the latest submissions; ``/submissions`` has them all."""

router = APIRouter()


def score_chart(past: LeaderboardHistory) -> Markup:
    """Race scores per day over the window: the winner, the best challenger and the field's median."""
    races = sorted(past.items, key=lambda r: r.day)

    def line(name: str, values: list[tuple[date, float | None]]) -> Series:
        return Series(name, [(d.toordinal(), v) for d, v in values if v is not None])

    window = [past.since + timedelta(days=n) for n in range(past.days)]
    return line_chart(
        [
            line("winner", [(r.day, r.winner_score) for r in races]),
            line("best challenger", [(r.day, r.best_challenger_score) for r in races]),
            line("field median", [(r.day, r.field_median) for r in races]),
        ],
        title=f"Race scores per day, last {past.days} days",
        x_ticks=day_ticks(window),
        x_range=(past.since.toordinal(), past.until.toordinal()),
    )


def reign_chart(past: LeaderboardHistory) -> Markup:
    segments = [
        Segment(
            f"{s.hotkey[:10]}… ({s.submission_id})",
            s.start,
            s.end,
            href=f"/submissions/{s.submission_id}/page",
        )
        for s in past.reigns
    ]
    return reign_bar(
        segments, start=past.since, end=past.until, title=f"The winner's reign, last {past.days} days"
    )


@router.get("/", response_class=HTMLResponse)
def leaderboard_page(request: Request, view: ViewDep) -> Response:
    board = leaderboard(view, PageParams(page=1, page_size=MAX_PAGE_SIZE))
    past = history(view, CHART_DAYS, PageParams(page=1, page_size=CHART_DAYS * 2))
    state = view.state()
    latest = by_submission_time(state.submissions.values())[-SUBMISSIONS_SHOWN:]
    categories = sorted({c.category for row in board.items for c in row.categories})
    return page(
        request,
        "leaderboard.html",
        board=board,
        categories=categories,
        running=state.running,
        last=state.last_race,
        submissions=state.submissions,
        ordered=latest,
        hidden=len(state.submissions) - len(latest),
        # No race in the window: no chart frames saying "no data", one line saying why (the template).
        score_chart=score_chart(past) if past.items else None,
        reign_chart=reign_chart(past) if past.reigns else None,
        past=past,
        embargo_left=None
        if board.embargo_remaining_s is None
        else timedelta(seconds=board.embargo_remaining_s),
    )


@router.get("/api/leaderboard", response_model=Leaderboard)
def leaderboard_api(request: Request, view: ViewDep, paging: PageDep) -> Response:
    """The reigning winner and its embargo, the last race's standings (per-category success, mean judge
    quality, coefficient, final score) and what a challenger must beat now."""
    return cached_json(request, leaderboard(view, paging))


@router.get("/api/leaderboard/history", response_model=LeaderboardHistory)
def leaderboard_history_api(
    request: Request,
    view: ViewDep,
    paging: PageDep,
    days: Annotated[int, Query(ge=1, le=366, description="Days back from today")] = CHART_DAYS,
) -> Response:
    """Per finished race of the last ``days`` days (newest first): the winner's score, the best
    challenger's and the field's median; and who reigned when."""
    return cached_json(request, history(view, days, paging))
