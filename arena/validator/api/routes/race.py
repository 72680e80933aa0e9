"""``GET /race``: the running race, the last finished one and the last settled day."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/race")
def race(view: ViewDep) -> dict[str, Any]:
    state = view.state()
    return {"running": state.running.model_dump(mode="json") if state.running else None,
            "last_race": state.last_race.model_dump(mode="json") if state.last_race else None,
            "last_settled_day": state.last_settled_day}
