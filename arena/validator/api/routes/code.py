"""``GET /code/{submission_id}``: an agent file, only once its embargo has lifted and it is published."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse

from arena.validator.api.views.view import ArenaView, ViewDep

router = APIRouter()


def published_code(view: ArenaView, submission_id: str) -> str:
    """The file of ``submission_id`` if it may be shown; ``HTTPException`` (404 or 403, saying why) if not.
    The one rule for showing code, here and on the submission page."""
    state = view.state()
    submission = state.submissions.get(submission_id)
    if submission is None:
        raise HTTPException(404, f"no submission {submission_id}")
    if submission_id not in state.published:
        until = state.embargoed.get(submission_id)
        why = (
            f"under embargo until {until.isoformat()}"
            if until
            else "not published (only a promoted winner's code is, after its embargo)"
        )
        raise HTTPException(403, f"code of {submission_id} is {why}")
    path = view.files.path(submission.code_hash)
    if not path.exists():
        raise HTTPException(404, f"this validator does not hold the file of {submission_id}")
    return path.read_text(encoding="utf-8", errors="replace")


@router.get("/code/{submission_id}", response_class=PlainTextResponse)
def code(submission_id: str, view: ViewDep) -> PlainTextResponse:
    return PlainTextResponse(published_code(view, submission_id))
