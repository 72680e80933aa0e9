"""``GET /qualifying/{submission_id}``: a submission's qualifying problems, once its run is scored."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from arena.validator.api.views.view import ViewDep
from arena.validator.runs import qualifying_suite_name
from trajectories.store import ProblemEntry

router = APIRouter()


@router.get("/qualifying/{submission_id}")
def qualifying(submission_id: str, view: ViewDep) -> list[ProblemEntry]:
    """A submission's qualifying problems with their answers: public once its qualifying run is scored
    (they were generated after its commitment, so publishing them helps nobody's later run)."""
    submission = view.state().submissions.get(submission_id)
    if submission is None:
        raise HTTPException(404, f"no submission {submission_id}")
    if submission.qualifying_score is None:
        raise HTTPException(404, f"the qualifying problems of {submission_id} are published once its "
                                 "qualifying run is scored")
    return view.store.suite_problems(qualifying_suite_name(submission_id))
