"""``GET /rules``: the rules fingerprint this validator runs, its version and the parts it hashes, so an
operator or a miner can compare two validators part by part; and the warnings about how it races (not
hashed: they follow from the parts), such as racing the lexicon writer's wording on a real network."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from arena.rules_fingerprint import RulesFingerprint
from arena.validator.api.views.view import ViewDep

router = APIRouter()


class ServedRules(RulesFingerprint):
    """The rules fingerprint and the validator's warnings about how it races."""

    warnings: tuple[str, ...] = ()


@router.get("/rules")
def rules(view: ViewDep) -> ServedRules:
    if view.rules is None:
        raise HTTPException(status_code=404, detail="this API was started without its validator's rules")
    return ServedRules(**view.rules.model_dump(), warnings=view.warnings)
