"""``GET /scores``: per run, agent and category, the attempts and scores of the validator's own runs."""

from __future__ import annotations

from fastapi import APIRouter

from arena.validator.api.views.view import ViewDep
from trajectories.store import CategoryScore, RunKind

SCORED_RUNS: tuple[RunKind, ...] = ("qualifying", "race")
"""The runs ``/scores`` sums up: the validator's own (not miners' local tests or held-out evaluations)."""

router = APIRouter()


@router.get("/scores")
def scores(view: ViewDep) -> list[CategoryScore]:
    return view.store.category_scores(SCORED_RUNS)
