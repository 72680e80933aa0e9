"""``GET /embargo``: the winners whose code is embargoed or already published, with both dates."""

from __future__ import annotations

from fastapi import APIRouter

from arena.validator.api.views.models import EmbargoEntry, embargo_entry
from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/embargo")
def embargo(view: ViewDep) -> list[EmbargoEntry]:
    state = view.state()
    ids = sorted({*state.embargoed, *state.published})
    return [embargo_entry(state, state.submissions[sid]) for sid in ids]
