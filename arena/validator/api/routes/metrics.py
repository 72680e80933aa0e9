"""``GET /metrics``: the app's Prometheus registry in the text exposition format."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from arena.validator.api.views.view import RegistryDep

router = APIRouter()


@router.get("/metrics", response_class=PlainTextResponse)
def prometheus(registry: RegistryDep) -> PlainTextResponse:
    return PlainTextResponse(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
