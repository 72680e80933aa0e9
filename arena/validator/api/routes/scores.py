"""``GET /scores``: per run, agent and category, the attempts and scores of the validator's own runs, a
page of runs at a time (newest first): a validator's store grows by tens of thousands of attempts a day,
so a page sums only its own runs' attempts (through the attempts' run index).

A run's figures are served once its suite is public (``views/submission_view.public_scope``): a race run's
when the race has finished, a qualifying run's when its submission's qualifying run is scored. Until
then the run is listed (it counts in ``total``) under ``withheld``, with no rows: a running race's
per-submission, per-category success is not shown while the race runs."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from arena.validator.api.site.paging import MAX_PAGE, MAX_PAGE_SIZE, PageDep
from arena.validator.api.views.submission_view import public_scope
from arena.validator.api.views.view import ViewDep
from trajectories.store import CategoryScore, RunKind

SCORED_RUNS: tuple[RunKind, ...] = ("qualifying", "race")
"""The runs ``/scores`` sums up: the validator's own (not miners' local tests or held-out evaluations)."""

router = APIRouter()


class RunScoresPage(BaseModel):
    """One page of runs (newest first) with each public run's rows per agent and category."""

    items: list[CategoryScore]
    page: int = Field(ge=1, le=MAX_PAGE)
    page_size: int = Field(ge=1, le=MAX_PAGE_SIZE, description="Runs per page")
    total: int = Field(ge=0, description="Runs in the whole list, across pages")
    withheld: list[str] = Field(default_factory=list, description=(
        "Runs of this page whose figures are not public yet (a race still running, a qualifying run not "
        "scored): listed without rows"))


@router.get("/scores")
def scores(view: ViewDep, params: PageDep) -> RunScoresPage:
    state = view.state()
    run_ids, total = view.store.scored_runs(SCORED_RUNS, offset=params.offset, limit=params.limit)
    rows = view.store.category_scores(SCORED_RUNS, run_ids=run_ids) if run_ids else []
    scope = public_scope(state)
    hidden = {row.run_id for row in rows if not scope.admits(row.kind, row.suite)}
    return RunScoresPage(items=[row for row in rows if row.run_id not in hidden], page=params.page,
                         page_size=params.page_size, total=total,
                         withheld=[run_id for run_id in run_ids if run_id in hidden])
