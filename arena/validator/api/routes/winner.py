"""``GET /winner``: the reigning winner with its embargo, or ``null``."""

from __future__ import annotations

from fastapi import APIRouter

from arena.validator.api.views.models import WinnerView, reigning_winner
from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/winner")
def winner(view: ViewDep) -> WinnerView | None:
    return reigning_winner(view.state())
