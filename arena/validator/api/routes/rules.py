"""``GET /rules``: the rules fingerprint this validator runs, its version and the parts it hashes, so an
operator or a miner can compare two validators part by part."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from arena.rules_fingerprint import RulesFingerprint
from arena.validator.api.views.view import ViewDep

router = APIRouter()


@router.get("/rules")
def rules(view: ViewDep) -> RulesFingerprint:
    if view.rules is None:
        raise HTTPException(status_code=404, detail="this API was started without its validator's rules")
    return view.rules
