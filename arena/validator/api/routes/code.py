"""``GET /code/{submission_id}``: an agent file, only once its embargo has lifted and it is published."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse

from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/code/{submission_id}", response_class=PlainTextResponse)
def code(submission_id: str, view: ViewDep) -> PlainTextResponse:
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
