"""``GET /``: the leaderboard page (``templates/leaderboard.html``, Jinja2 with autoescape)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from arena.validator.api.views.models import by_submission_time, reigning_winner
from arena.validator.api.views.view import ViewDep

PAGES = Environment(loader=PackageLoader("arena.validator.api"),
                    autoescape=select_autoescape(default=True, default_for_string=True))
"""The API package's ``templates/`` folder, every page autoescaped."""

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def leaderboard(view: ViewDep) -> HTMLResponse:
    state = view.state()
    page = PAGES.get_template("leaderboard.html")
    return HTMLResponse(page.render(winner=reigning_winner(state), running=state.running,
                                    last=state.last_race, submissions=state.submissions,
                                    ordered=by_submission_time(state.submissions.values())))
