"""The miner's side of a submission: commit the file's sha256 on chain (or reuse the commitment a retry
finds), sign the upload with the hotkey for each validator with a permit, post it, report the answers.
``miner submit`` and the network demo's miners both submit through :func:`deliver`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import httpx
from bittensor import Wallet, http_auth
from pydantic import BaseModel, ConfigDict
from rich.table import Table

from arena.chain.interface import Chain
from arena.chain.models import ChainError, Commitment, Neuron
from arena.submissions.models import SUBMISSIONS_PATH, UploadBody

ACCEPTED: Final = ("accepted", "already accepted")
"""The outcomes of a validator that holds the file."""


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


@dataclass(frozen=True)
class Delivery:
    """One file's submission: its commitment (``reused`` when a retry found it already committed) and what
    each validator with a permit answered (nothing when none has published an endpoint yet)."""

    commitment: Commitment
    reused: bool
    outcomes: tuple[UploadOutcome, ...]

    @property
    def delivered(self) -> bool:
        """Every validator holds the file (and there was one to hold it)."""
        return bool(self.outcomes) and all(o.outcome in ACCEPTED for o in self.outcomes)


def commit_once(chain: Chain, wallet: Wallet, sha256: str) -> tuple[Commitment, bool]:
    """The hotkey's commitment of ``sha256``, and whether it was reused: the latest one if it already is
    (a retry, whose cooldown must not restart), else a new one."""
    latest = chain.latest_commitment(wallet.hotkey.ss58_address)
    if latest is not None and latest.data == sha256:
        return latest, True
    return chain.commit(wallet, sha256), False


def deliver(chain: Chain, wallet: Wallet, body: UploadBody, sha256: str, *, timeout: float) -> Delivery:
    """Commit ``sha256`` (once) and upload ``body`` to every validator with a permit that published an
    endpoint. Raises :class:`ChainError` when the hotkey is not registered or the chain refuses."""
    hotkey: str = wallet.hotkey.ss58_address
    if not chain.is_registered(hotkey):
        raise ChainError(f"hotkey {hotkey} is not registered on subnet {chain.netuid}: register it first")
    commitment, reused = commit_once(chain, wallet, sha256)
    validators = chain.metagraph().validators()
    with httpx.Client(timeout=timeout) as client:
        outcomes = tuple(upload(client, wallet, validator, body) for validator in validators)
    return Delivery(commitment=commitment, reused=reused, outcomes=outcomes)


def outcome_table(outcomes: tuple[UploadOutcome, ...], title: str) -> Table:
    """One row per validator: its uid, hotkey, endpoint, outcome and the reason of a refusal."""
    table = Table(title=title)
    for column in ("uid", "validator", "endpoint", "outcome", "detail"):
        table.add_column(column)
    for o in outcomes:
        colour = "green" if o.outcome in ACCEPTED else "red"
        detail = f"{o.error}: {o.detail}" if o.error else o.detail
        table.add_row(str(o.uid), o.hotkey, o.url, f"[{colour}]{o.outcome}[/{colour}]", detail)
    return table
