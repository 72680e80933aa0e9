"""``POST /submissions``: the router a validator mounts to receive signed agent uploads.

The cheap checks (``SubmissionGate.screen``) run on the event loop; signature verification, database
writes and static analysis run on worker threads, so a flood of bad requests never waits behind them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from arena.submissions.gate import SubmissionGate
from arena.submissions.models import MAX_BODY_BYTES, SUBMISSIONS_PATH, RefusalCode, SubmissionRefused

_REFUSAL_SCHEMA: dict[str, Any] = {"description": "Refused: `{\"error\": code, \"detail\": why}`",
                                   "content": {"application/json": {"example": {
                                       "error": "cooldown", "detail": "...", "retry_at": "..."}}}}


async def _read_capped(request: Request) -> bytes:
    """The raw body, refused as soon as it outgrows the limit (never buffered past it)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise SubmissionRefused(RefusalCode.TOO_LARGE, f"the body exceeds {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise SubmissionRefused(RefusalCode.TOO_LARGE, f"the body exceeds {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def submissions_router(gate: SubmissionGate) -> APIRouter:
    router = APIRouter(tags=["submissions"])

    @router.post(SUBMISSIONS_PATH, status_code=201,
                 responses={200: {"description": "This commitment was already accepted"},
                            **dict.fromkeys((400, 401, 403, 409, 413, 421, 422, 429), _REFUSAL_SCHEMA)})
    async def submit(request: Request) -> JSONResponse:
        """Upload an agent file, signed with the miner's hotkey (``bittensor.http_auth``, bound to this
        validator's hotkey). JSON body: ``{"name", "sha256", "code_b64"}``; ``sha256`` must be the
        hotkey's latest commitment on chain, made outside the cooldown of its previous submission."""
        received_at = gate.now()
        try:
            # On the event loop, before the body is read: refusals that need no thread nor database are
            # answered at once, even while every worker thread waits on a slow disk.
            gate.screen(request.headers, received_at)
            body = await _read_capped(request)
            path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            submission, created = await run_in_threadpool(
                gate.receive, dict(request.headers), body, method=request.method, path=path,
                received_at=received_at)
        except SubmissionRefused as refusal:
            return JSONResponse(refusal.body(), status_code=refusal.status)
        return JSONResponse(submission.model_dump(mode="json"), status_code=201 if created else 200)

    return router
