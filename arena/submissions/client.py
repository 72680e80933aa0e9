"""The miner's side of the signed upload: sign with the hotkey, post to each validator, report."""

from __future__ import annotations

from typing import Literal

import httpx
from bittensor import Wallet, http_auth
from pydantic import BaseModel, ConfigDict

from arena.chain.models import Neuron
from arena.submissions.models import SUBMISSIONS_PATH, UploadBody


class UploadOutcome(BaseModel):
    """What one validator answered."""

    model_config = ConfigDict(frozen=True)

    uid: int
    hotkey: str
    url: str
    outcome: Literal["accepted", "already accepted", "refused", "unreachable"]
    status: int | None = None
    error: str | None = None
    detail: str = ""


def upload(client: httpx.Client, wallet: Wallet, validator: Neuron, body: UploadBody) -> UploadOutcome:
    """Post ``body`` to ``validator``'s published axon, signed for that validator only."""
    if validator.axon is None:
        raise ValueError(f"validator uid {validator.uid} has published no axon")
    url = validator.axon.url
    raw = body.model_dump_json().encode()
    # A fresh nonce per request: a retry must be signed again, or the validator sees a replay.
    headers = http_auth.sign(wallet, method="POST", path=SUBMISSIONS_PATH, body=raw,
                             receiver_ss58=validator.hotkey)
    headers["Content-Type"] = "application/json"
    facts = {"uid": validator.uid, "hotkey": validator.hotkey, "url": url}
    try:
        response = client.post(url + SUBMISSIONS_PATH, content=raw, headers=headers)
    except httpx.HTTPError as exc:
        return UploadOutcome(**facts, outcome="unreachable", detail=f"{type(exc).__name__}: {exc}")
    if response.status_code in (200, 201):
        outcome: Literal["accepted", "already accepted"] = (
            "accepted" if response.status_code == 201 else "already accepted")
        return UploadOutcome(**facts, outcome=outcome, status=response.status_code)
    try:
        answer = response.json()
        error, detail = str(answer.get("error")), str(answer.get("detail", ""))
    except (ValueError, AttributeError):
        error, detail = "unexpected_answer", response.text[:200]
    return UploadOutcome(**facts, outcome="refused", status=response.status_code, error=error, detail=detail)
