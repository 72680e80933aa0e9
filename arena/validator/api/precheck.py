"""``POST /submissions/precheck``: what the validator would answer to a file if the miner committed it now.

Read-only: it writes nothing (no verdict, no file, not even the nonce), so a miner asks every validator
before spending a commitment and with it a cooldown (``miner submit``). Signed like an upload
(``bittensor.http_auth``, bound to this validator's hotkey, the same body), so only a registered hotkey
learns anything about its own state. The answer is the gate's
(:meth:`~arena.submissions.gate.SubmissionGate.precheck`: its checks that do not need the commitment to
exist, in its order), a :class:`~arena.submissions.models.PrecheckAnswer`; a request the gate's screen
or the signature check refuses gets the upload's refusal.
"""

from __future__ import annotations

from datetime import datetime

from bittensor import http_auth
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from arena.submissions.gate import SubmissionGate
from arena.submissions.models import (
    MAX_BODY_BYTES,
    PRECHECK_PATH,
    PrecheckAnswer,
    RefusalCode,
    SubmissionRefused,
    UploadBody,
)


def _authenticated(gate: SubmissionGate, headers: dict[str, str], body: bytes, received_at: datetime) -> str:
    try:
        caller = http_auth.verify(headers, body, method="POST", path=PRECHECK_PATH,
                                  self_hotkey_ss58=gate.validator_hotkey, max_age=gate.clock_skew_s,
                                  allowed_skew=gate.clock_skew_s, nonce_store=None,
                                  now_ns=int(received_at.timestamp() * 1e9))
    except http_auth.AuthError as exc:
        raise SubmissionRefused(RefusalCode.BAD_SIGNATURE, str(exc)) from None
    return caller.hotkey_ss58


def precheck_router(gate: SubmissionGate) -> APIRouter:
    router = APIRouter(tags=["submissions"])

    @router.post(PRECHECK_PATH, response_model=PrecheckAnswer)
    async def check(request: Request) -> JSONResponse:
        """Ask, before committing, whether an upload of this file would be accepted: signed and shaped like
        ``POST /submissions``; nothing is recorded. The answer lists every reason it would be refused and
        when a new commitment can be made."""
        received_at = gate.now()
        try:
            gate.screen(request.headers, received_at)
            body = await request.body()
            if len(body) > MAX_BODY_BYTES:
                raise SubmissionRefused(RefusalCode.TOO_LARGE, f"the body exceeds {MAX_BODY_BYTES} bytes")
            hotkey = await run_in_threadpool(_authenticated, gate, dict(request.headers), body, received_at)
            try:
                upload = UploadBody.model_validate_json(body)
                source = upload.source()
            except (ValidationError, ValueError) as exc:
                raise SubmissionRefused(RefusalCode.BAD_BODY, str(exc).splitlines()[0]) from None
            answer = await run_in_threadpool(gate.precheck, hotkey, upload, source)
        except SubmissionRefused as refusal:
            return JSONResponse(refusal.body(), status_code=refusal.status)
        return JSONResponse(answer.model_dump(mode="json"))

    return router
