"""``GET /``: the leaderboard page (``templates/leaderboard.html``, rendered by ``site.pages.page``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from arena.validator.api.site.pages import page
from arena.validator.api.views.models import by_submission_time, reigning_winner
from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def leaderboard(request: Request, view: ViewDep) -> Response:
    state = view.state()
    return page(
        request,
        "leaderboard.html",
        winner=reigning_winner(state),
        running=state.running,
        last=state.last_race,
        submissions=state.submissions,
        ordered=by_submission_time(state.submissions.values()),
    )
