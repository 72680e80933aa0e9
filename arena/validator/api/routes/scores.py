"""``GET /scores``: per run, agent and category, the attempts and scores of the validator's own runs, a
page of runs at a time (newest first): a validator's store grows by tens of thousands of attempts a day,
so a page sums only its own runs' attempts (through the attempts' run index)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from arena.validator.api.site.paging import MAX_PAGE_SIZE, PageDep
from arena.validator.api.views.view import ViewDep
from trajectories.store import CategoryScore, RunKind

SCORED_RUNS: tuple[RunKind, ...] = ("qualifying", "race")
"""The runs ``/scores`` sums up: the validator's own (not miners' local tests or held-out evaluations)."""

router = APIRouter()


class RunScoresPage(BaseModel):
    """One page of runs (newest first) with each run's rows per agent and category."""

    items: list[CategoryScore]
    page: int = Field(ge=1)
    page_size: int = Field(ge=1, le=MAX_PAGE_SIZE, description="Runs per page")
    total: int = Field(ge=0, description="Runs in the whole list, across pages")


@router.get("/scores")
def scores(view: ViewDep, params: PageDep) -> RunScoresPage:
    run_ids, total = view.store.scored_runs(SCORED_RUNS, offset=params.offset, limit=params.limit)
    items = view.store.category_scores(SCORED_RUNS, run_ids=run_ids) if run_ids else []
    return RunScoresPage(items=items, page=params.page, page_size=params.page_size, total=total)
