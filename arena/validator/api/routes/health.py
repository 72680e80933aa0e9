"""``GET /health``: the API answers, with the race log's length and the validator's clock."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/health")
def health(view: ViewDep) -> dict[str, Any]:
    state = view.state()
    return {"status": "ok", "events": state.events, "time": view.clock.now().isoformat()}
