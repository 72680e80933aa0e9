"""The miner's side of a submission: ask every validator with a permit whether it would accept the file
(``POST /submissions/precheck``, read-only), commit the file's sha256 on chain only when none refuses (or
reuse the commitment a retry finds), sign the upload with the hotkey for each validator, post it, report
the answers. ``miner submit`` and the network demo's miners both submit through :func:`deliver`.

A refusal before the commitment costs nothing: :func:`deliver` returns without committing, and each
refusal says when to retry. A validator that does not answer the pre-check (down, or an older release
without the route) cannot refuse: the file is committed as before and that validator judges the upload.
The uploads follow the commitment at once, to every validator at the same time: a validator accepts an
upload only within the commitment's upload window (``RaceRules.upload_window_blocks``), after which the
commitment's qualifying draw exists. A commitment a validator finds inside the cooldown, or past its
upload window, can never be uploaded: ``recommit`` makes a new one (once the cooldown has passed)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

import httpx
from bittensor import Wallet, http_auth
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.table import Table

from arena.chain.btcli import register_command
from arena.chain.interface import Chain
from arena.chain.models import ChainError, Commitment, Neuron
from arena.race.clock import UtcDatetime
from arena.submissions.models import (
    PRECHECK_PATH,
    SUBMISSIONS_PATH,
    PrecheckAnswer,
    PrecheckRefusal,
    UploadBody,
)

ACCEPTED: Final = ("accepted", "already accepted")
"""The outcomes of a validator that holds the file."""
_UPLOADS_AT_ONCE: Final = 16
"""Validators uploaded to at the same time: a slow one must not push the others past the upload window."""


class PrecheckOutcome(BaseModel):
    """What one validator answered to the pre-check (``answer`` ``None``: it gave none)."""

    model_config = ConfigDict(frozen=True)

    uid: int
    hotkey: str
    url: str
    answer: PrecheckAnswer | None = None
    unanswered: str = Field(default="", description="Why there is no answer (unreachable, no such route)")


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
    retry_at: UtcDatetime | None = None


def _signed_post(client: httpx.Client, wallet: Wallet, validator: Neuron, path: str,
                 raw: bytes) -> httpx.Response:
    if validator.axon is None:
        raise ValueError(f"validator uid {validator.uid} has published no axon")
    # A fresh nonce per request: a retry must be signed again, or the validator sees a replay.
    headers = http_auth.sign(wallet, method="POST", path=path, body=raw, receiver_ss58=validator.hotkey)
    headers["Content-Type"] = "application/json"
    return client.post(validator.axon.url + path, content=raw, headers=headers)


def precheck(client: httpx.Client, wallet: Wallet, validator: Neuron, body: UploadBody) -> PrecheckOutcome:
    """Ask ``validator`` what it would answer to ``body`` now (signed for it; nothing is recorded)."""
    facts: dict[str, Any] = {"uid": validator.uid, "hotkey": validator.hotkey,
                             "url": validator.axon.url if validator.axon else ""}
    try:
        response = _signed_post(client, wallet, validator, PRECHECK_PATH, body.model_dump_json().encode())
    except httpx.HTTPError as exc:
        return PrecheckOutcome(**facts, unanswered=f"unreachable ({type(exc).__name__}: {exc})")
    if response.status_code == 200:
        try:
            return PrecheckOutcome(**facts, answer=PrecheckAnswer.model_validate_json(response.content))
        except ValidationError:
            return PrecheckOutcome(**facts, unanswered="an answer this miner cannot read")
    if response.status_code in (404, 405):
        return PrecheckOutcome(**facts, unanswered="no pre-check route (an older validator)")
    try:
        refused = response.json()
        refusal = PrecheckRefusal(error=str(refused.get("error")), detail=str(refused.get("detail", "")))
    except (ValueError, AttributeError, ValidationError):
        return PrecheckOutcome(**facts, unanswered=f"HTTP {response.status_code}: {response.text[:200]}")
    answer = PrecheckAnswer(hotkey=str(wallet.hotkey.ss58_address), sha256=body.sha256,
                            registered=refusal.error != "unregistered", refusals=[refusal])
    return PrecheckOutcome(**facts, answer=answer)


def upload(client: httpx.Client, wallet: Wallet, validator: Neuron, body: UploadBody) -> UploadOutcome:
    """Post ``body`` to ``validator``'s published axon, signed for that validator only."""
    if validator.axon is None:
        raise ValueError(f"validator uid {validator.uid} has published no axon")
    url = validator.axon.url
    raw = body.model_dump_json().encode()
    facts = {"uid": validator.uid, "hotkey": validator.hotkey, "url": url}
    try:
        response = _signed_post(client, wallet, validator, SUBMISSIONS_PATH, raw)
    except httpx.HTTPError as exc:
        return UploadOutcome(**facts, outcome="unreachable", detail=f"{type(exc).__name__}: {exc}")
    if response.status_code in (200, 201):
        outcome: Literal["accepted", "already accepted"] = (
            "accepted" if response.status_code == 201 else "already accepted")
        return UploadOutcome(**facts, outcome=outcome, status=response.status_code)
    retry_at = None
    try:
        answer = response.json()
        error, detail = str(answer.get("error")), str(answer.get("detail", ""))
        retry_at = answer.get("retry_at")
    except (ValueError, AttributeError):
        error, detail = "unexpected_answer", response.text[:200]
    return UploadOutcome(**facts, outcome="refused", status=response.status_code, error=error, detail=detail,
                         retry_at=retry_at)


@dataclass(frozen=True)
class Delivery:
    """One file's submission: its commitment (``None`` when a pre-check refusal stopped it before one was
    made; ``reused`` when a retry found it already committed), what each validator answered to the
    pre-check, and what each validator with a permit answered to the upload (nothing when none has
    published an endpoint yet, or nothing was committed)."""

    commitment: Commitment | None
    reused: bool
    outcomes: tuple[UploadOutcome, ...]
    prechecks: tuple[PrecheckOutcome, ...] = ()
    stopped: str = ""
    """Why nothing was committed (empty when it was)."""

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


def _latest_time(times: list[datetime | None]) -> datetime | None:
    known = [t for t in times if t is not None]
    return max(known) if known else None


def commitment_plan(prechecks: tuple[PrecheckOutcome, ...], latest: Commitment | None, sha256: str, *,
                    recommit: bool) -> tuple[Literal["reuse", "commit", "stop"], str]:
    """Whether to reuse the latest commitment, make a new one, or stop before committing (and why), from
    what the validators answered: any refusal stops; a latest commitment of this file is reused unless a
    validator finds it too early or past its upload window (then ``recommit`` makes a new one once no
    validator is still inside the cooldown) or ``recommit`` asks for a new one."""
    answers = [p.answer for p in prechecks if p.answer is not None]
    reuse = latest is not None and latest.data == sha256 and not recommit
    if reuse and all(a.commitment_ok for a in answers if a.registered):
        return "reuse", ""
    blocking = [r for a in answers for r in a.refusals if r.error != "cooldown"]
    if blocking:
        return "stop", "; ".join(f"{r.error}: {r.detail}" for r in blocking)
    waiting = [a for a in answers if not a.new_commitment_ok]
    if waiting:
        until = _latest_time([a.new_commitment_from for a in waiting])
        when = until.isoformat() if until else "the end of the cooldown"
        committed = latest is not None and latest.data == sha256
        again = "`miner submit --recommit`" if committed else "`miner submit`"
        return "stop", (f"cooldown: {len(waiting)} validator(s) would refuse a commitment made now, inside "
                        f"the cooldown of your previous submission; run {again} at or after {when}")
    if reuse:
        assert latest is not None
        closed = [a.upload_until_block for a in answers if a.upload_window_closed and a.upload_until_block]
        if closed:
            return "stop", (f"upload window: your commitment at block {latest.block} could be uploaded until "
                            f"block {max(closed)}, and its qualifying draw exists now, so it can never be "
                            "uploaded; run `miner submit --recommit` (a new commitment, uploaded at once)")
        too_early = _latest_time([a.commitment_retry_at for a in answers if not a.commitment_ok])
        ended = f" (which ended at {too_early.isoformat()})" if too_early else ""
        return "stop", (f"cooldown: your commitment at block {latest.block} ({latest.time.isoformat()}) came "
                        f"inside the cooldown of your previous submission{ended} and can never be "
                        "accepted; the cooldown allows a new one now: run `miner submit --recommit`")
    return "commit", ""


def deliver(chain: Chain, wallet: Wallet, body: UploadBody, sha256: str, *, timeout: float,
            recommit: bool = False, ask_first: bool = True) -> Delivery:
    """Ask every validator with a permit that published an endpoint whether it would accept ``body``;
    unless one refuses, commit ``sha256`` (once: a retry reuses the latest commitment of the file, unless
    ``recommit``) and upload ``body`` to each at once. ``ask_first=False`` commits and uploads without asking
    (what a miner who ignores the pre-check does: the validators' gates still judge the upload). Raises
    :class:`ChainError` when the hotkey is not registered or the chain refuses."""
    hotkey: str = wallet.hotkey.ss58_address
    if not chain.is_registered(hotkey):
        command = register_command(chain.netuid, wallet.name, wallet.hotkey_str)
        raise ChainError(f"hotkey {hotkey} is not registered on subnet {chain.netuid}: "
                         f"register it with `{command}`")
    validators = chain.metagraph().validators()
    with httpx.Client(timeout=timeout) as client:
        prechecks = tuple(precheck(client, wallet, validator, body) for validator in validators) \
            if ask_first else ()
        latest = chain.latest_commitment(hotkey)
        plan, why = commitment_plan(prechecks, latest, sha256, recommit=recommit)
        if plan == "stop":
            return Delivery(commitment=None, reused=False, outcomes=(), prechecks=prechecks, stopped=why)
        if plan == "reuse":
            assert latest is not None
            commitment, reused = latest, True
        else:
            commitment, reused = chain.commit(wallet, sha256), False
        # At once, right after the commitment: each validator takes the upload only within its window.
        with ThreadPoolExecutor(max_workers=max(1, min(_UPLOADS_AT_ONCE, len(validators)))) as pool:
            outcomes = tuple(pool.map(lambda validator: upload(client, wallet, validator, body), validators))
    return Delivery(commitment=commitment, reused=reused, outcomes=outcomes, prechecks=prechecks)


def precheck_table(prechecks: tuple[PrecheckOutcome, ...], title: str) -> Table:
    """One row per validator: what it would answer to the file, before anything is committed."""
    table = Table(title=title)
    for column in ("uid", "validator", "endpoint", "pre-check", "detail"):
        table.add_column(column)
    for p in prechecks:
        if p.answer is None:
            verdict, detail = "[yellow]no answer[/yellow]", p.unanswered
        elif p.answer.refusals:
            verdict = "[red]would refuse[/red]"
            detail = "; ".join(f"{r.error}: {r.detail}" for r in p.answer.refusals)
        elif p.answer.upload_window_closed:
            verdict = "[yellow]would accept a new commitment[/yellow]"
            detail = f"the latest one's upload window ended at block {p.answer.upload_until_block}"
        else:
            verdict, detail = "[green]would accept[/green]", ""
        table.add_row(str(p.uid), p.hotkey, p.url, verdict, detail)
    return table


def outcome_table(outcomes: tuple[UploadOutcome, ...], title: str) -> Table:
    """One row per validator: its uid, hotkey, endpoint, outcome and the reason of a refusal."""
    table = Table(title=title)
    for column in ("uid", "validator", "endpoint", "outcome", "detail"):
        table.add_column(column)
    for o in outcomes:
        colour = "green" if o.outcome in ACCEPTED else "red"
        detail = f"{o.error}: {o.detail}" if o.error else o.detail
        if o.error == "cooldown" and o.retry_at is not None:
            detail += f" (retry: `miner submit --recommit` at or after {o.retry_at.isoformat()})"
        table.add_row(str(o.uid), o.hotkey, o.url, f"[{colour}]{o.outcome}[/{colour}]", detail)
    return table
