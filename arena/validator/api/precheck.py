"""``POST /submissions/precheck``: what the validator would answer to a file if the miner committed it now.

Read-only: it writes nothing (no verdict, no file, not even the nonce), so a miner asks every validator
before spending a commitment and with it a cooldown (``miner submit``). Signed like an upload
(``bittensor.http_auth``, bound to this validator's hotkey, the same body), so only a registered hotkey
learns anything about its own state. It runs the gate's checks that do not need the commitment to exist,
in the gate's order: registration, the cooldown (for the hotkey's latest commitment when it already is
this file, and for a new commitment made now), static analysis, and the copy rule as if the file were
committed in the next block. The answer is a :class:`~arena.submissions.client.PrecheckAnswer`; a request
the gate's screen or the signature check refuses gets the upload's refusal.
"""

from __future__ import annotations

from datetime import datetime

from bittensor import http_auth
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from arena.submissions.client import PRECHECK_PATH, PrecheckAnswer, PrecheckRefusal, register_command
from arena.submissions.copies import CodeEntry, code_features, verdicts_after_upload
from arena.submissions.gate import SubmissionGate
from arena.submissions.models import MAX_BODY_BYTES, RefusalCode, SubmissionRefused, UploadBody
from arena.submissions.rules import cooldown_until, in_cooldown
from shoppingbench.submission_check import check_agent
from shoppingbench.submission_check.similarity import fingerprint


def _authenticated(gate: SubmissionGate, headers: dict[str, str], body: bytes, received_at: datetime) -> str:
    try:
        caller = http_auth.verify(headers, body, method="POST", path=PRECHECK_PATH,
                                  self_hotkey_ss58=gate.validator_hotkey, max_age=gate.clock_skew_s,
                                  allowed_skew=gate.clock_skew_s, nonce_store=None,
                                  now_ns=int(received_at.timestamp() * 1e9))
    except http_auth.AuthError as exc:
        raise SubmissionRefused(RefusalCode.BAD_SIGNATURE, str(exc)) from None
    return caller.hotkey_ss58


def precheck(gate: SubmissionGate, hotkey: str, upload: UploadBody, source: bytes) -> PrecheckAnswer:
    """The gate's answer to ``upload`` from ``hotkey``, judged now, with nothing recorded."""
    reads = gate.chain_reads
    netuid = reads.chain.netuid
    refusals: list[PrecheckRefusal] = []
    if not reads.is_registered(hotkey):
        refusals.append(PrecheckRefusal(error=RefusalCode.UNREGISTERED.value,
                                        detail=f"hotkey {hotkey} is not registered on subnet {netuid}: "
                                               f"{register_command(netuid)}"))
        return PrecheckAnswer(hotkey=hotkey, sha256=upload.sha256, registered=False, refusals=refusals)
    now = gate._clock.now()  # the clock cooldowns are measured on
    rules = gate._rules
    history = gate.verdicts.history(hotkey)
    latest = reads.latest_commitment(hotkey, fresh=True).commitment
    new_from = cooldown_until(history, rules)
    answer = {"hotkey": hotkey, "sha256": upload.sha256, "registered": True,
              "new_commitment_ok": new_from is None or now >= new_from,
              "new_commitment_from": new_from}
    if latest is not None and latest.data == upload.sha256:
        answer["committed_block"] = latest.block
        judged = gate.verdicts.judged(hotkey, upload.sha256, latest.block)
        if judged is not None:
            _, verdict = judged
            answer["judged"] = "copy" if verdict.copy_of is not None else verdict.outcome
            answer["commitment_ok"] = verdict.copy_of is None and verdict.outcome == "accepted"
            if answer["commitment_ok"]:  # the validator holds it: an upload is answered "already accepted"
                return PrecheckAnswer(**answer)
        else:
            earlier = [v for v in history if v.commitment_block <= latest.block]
            too_early = in_cooldown(latest.time, earlier, rules)
            answer["commitment_ok"] = too_early is None
            if too_early is not None:
                answer["commitment_retry_at"] = too_early
    if not answer.get("commitment_ok") and not answer["new_commitment_ok"]:
        refusals.append(PrecheckRefusal(
            error=RefusalCode.COOLDOWN.value, retry_at=new_from,
            detail=f"inside the cooldown of the previous submission: commit at or after "
                   f"{new_from.isoformat() if new_from else now.isoformat()}"))
    report = check_agent(source, known_product_ids=gate._known_product_ids())
    if not report.ok:
        refusals.append(PrecheckRefusal(error=RefusalCode.STATIC_ANALYSIS.value,
                                        detail=f"static analysis rejects the file ({report.rejection})",
                                        rejection=report.rejection,
                                        findings=[f.model_dump(mode="json") for f in report.findings]))
    else:
        text = source.decode("utf-8-sig")
        reused = answer.get("commitment_ok") and latest is not None
        block = latest.block if reused and latest is not None else reads.chain.block() + 1
        entry = CodeEntry(hotkey=hotkey, sha256=upload.sha256, commitment_block=block,
                          fingerprint=fingerprint(text), features=code_features(text))
        stored = [(e, copied) for e, copied in gate.verdicts.code_entries() if e.key != entry.key]
        copy_of = verdicts_after_upload(entry, stored, locate=gate.files.path).get(entry.key)
        if copy_of is not None:
            refusals.append(PrecheckRefusal(
                error=RefusalCode.COPY.value, copy_of=copy_of.model_dump(mode="json"),
                detail=f"the file is a copy (similarity {copy_of.similarity:.2f}) of the file "
                       f"{copy_of.code_hash} committed by {copy_of.hotkey} at block "
                       f"{copy_of.commitment_block}: it would earn nothing"))
    return PrecheckAnswer(**answer, refusals=refusals)


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
            answer = await run_in_threadpool(precheck, gate, hotkey, upload, source)
        except SubmissionRefused as refusal:
            return JSONResponse(refusal.body(), status_code=refusal.status)
        return JSONResponse(answer.model_dump(mode="json"))

    return router
