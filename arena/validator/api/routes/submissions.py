"""``GET /qualifiers`` and ``GET /submissions``: the submissions waiting for the next race, and all of
them, oldest first."""

from __future__ import annotations

from fastapi import APIRouter

from arena.race.state import Submission
from arena.validator.api.views.models import by_submission_time
from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/qualifiers")
def qualifiers(view: ViewDep) -> list[Submission]:
    return by_submission_time(s for s in view.state().submissions.values() if s.status == "qualified")


@router.get("/submissions")
def submissions(view: ViewDep) -> list[Submission]:
    return by_submission_time(view.state().submissions.values())
