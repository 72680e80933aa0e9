"""The validator's view of the other validators: every tempo (or every ``ARENA_PEER_CHECK_BLOCKS`` blocks)
:class:`PeerWatch` reads all validators' weight rows, stake and axons from the chain, fetches each peer's
``GET /rules`` from its axon (a short timeout, in parallel; a peer that does not answer is "unknown", never
an error that stops the validator), computes the agreement (``arena.validator.agreement``) and logs one
warning naming what differs. The report it keeps is what ``/metrics`` exports.

A peer's answer is untrusted: a GET without redirects, its body capped at :data:`MAX_RULES_BYTES` and
parsed as a :class:`RulesFingerprint` or dropped; it only ever feeds the comparison.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Final

import httpx
import structlog
from pydantic import ValidationError

from arena.chain import Chain, ChainError, ValidatorWeights
from arena.rules_fingerprint import RulesFingerprint
from arena.validator.agreement import DEFAULT_TOLERANCE, AgreementReport, PeerRules, agreement

log = structlog.get_logger(__name__)

MAX_RULES_BYTES: Final = 256 * 1024
"""A ``/rules`` answer longer than this is not read (ours is a few kilobytes)."""
MAX_FETCHES: Final = 16
"""Peers asked at once."""
DEFAULT_TIMEOUT_S: Final = 3.0


def fetch_rules(client: httpx.Client, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> PeerRules:
    """``url``'s ``/rules``, or why it is unknown (never raises for what the peer does). ``timeout_s``
    bounds the whole answer too, not only each read: a peer dripping bytes is cut off."""
    deadline = time.monotonic() + timeout_s
    try:
        with client.stream("GET", f"{url.rstrip('/')}/rules") as response:
            if response.status_code != 200:
                return PeerRules(error=f"GET /rules answered {response.status_code}")
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_RULES_BYTES:
                    return PeerRules(error=f"GET /rules answered more than {MAX_RULES_BYTES} bytes")
                if time.monotonic() > deadline:
                    return PeerRules(error=f"GET /rules took longer than {timeout_s:g} s")
        return PeerRules(rules=RulesFingerprint.model_validate_json(body))
    except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
        return PeerRules(error=f"GET /rules failed: {type(exc).__name__}")
    except ValidationError:
        return PeerRules(error="GET /rules answered something other than a rules fingerprint")


def fetch_peer_rules(
    rows: Iterable[ValidatorWeights], own_hotkey: str, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, PeerRules]:
    """Every other validator's rules by hotkey, asked in parallel from its axon (no axon: unknown)."""
    peers = [row for row in rows if row.hotkey != own_hotkey and row.validator_permit]
    found = {row.hotkey: PeerRules(error="no axon served") for row in peers if row.axon is None}
    served = [row for row in peers if row.axon is not None]
    if not served:
        return found
    with (
        httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False) as client,
        ThreadPoolExecutor(max_workers=min(MAX_FETCHES, len(served))) as pool,
    ):
        answers = pool.map(
            lambda row: fetch_rules(client, row.axon.url if row.axon else "", timeout_s=timeout_s), served
        )
        found.update({row.hotkey: answer for row, answer in zip(served, answers, strict=True)})
    return found


def check_peers(
    chain: Chain,
    *,
    hotkey: str,
    rules: RulesFingerprint,
    block: int,
    tolerance: float = DEFAULT_TOLERANCE,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> AgreementReport:
    """One look at the other validators: the chain's weight rows (raises ``ChainError``), their rules."""
    rows = chain.validator_weights()
    seen = fetch_peer_rules(rows, hotkey, timeout_s=timeout_s)
    return agreement(block=block, hotkey=hotkey, rules=rules, rows=rows, peer_rules=seen, tolerance=tolerance)


def warn_on_disagreement(report: AgreementReport) -> None:
    """ONE warning for a report where something disagrees: every peer and what differs."""
    lines = report.disagreements()
    if lines:
        log.warning(
            "peers_disagree",
            block=report.block,
            disagreements=lines,
            stake_share=report.stake_share,
            weighted_by=report.weighted_by,
            other_fingerprints=report.other_fingerprints,
            hint="compare `validator peers` and the peers' GET /rules part by part "
            '(docs/validator.md, "Agreement with other validators")',
        )


@dataclass
class PeerWatch:
    """Checks the peers at most once per period of blocks (``check_blocks``, 0: the subnet's tempo, read
    again after each look rather than on every tick) and keeps the last report for ``/metrics``."""

    chain: Chain
    hotkey: str
    rules: RulesFingerprint
    tolerance: float = DEFAULT_TOLERANCE
    timeout_s: float = DEFAULT_TIMEOUT_S
    check_blocks: int = 0
    last: AgreementReport | None = field(default=None, init=False)
    _period: int | None = field(default=None, init=False)
    _blocks: int | None = field(default=None, init=False)

    def tick(self, block: int) -> AgreementReport | None:
        """Check the peers if ``block`` starts a new period; the new report, else ``None`` (also when the
        chain could not be read: logged, tried again on the next tick)."""
        try:
            if self._blocks is None:
                self._blocks = self.check_blocks or self.chain.tempo()
            period = block // self._blocks
            if period == self._period:
                return None
            report = check_peers(
                self.chain,
                hotkey=self.hotkey,
                rules=self.rules,
                block=block,
                tolerance=self.tolerance,
                timeout_s=self.timeout_s,
            )
        except ChainError as exc:
            log.warning("peers_unreadable", block=block, error=str(exc))
            return None
        self._period, self.last = period, report
        self._blocks = self.check_blocks or None
        log.info(
            "peers_checked",
            block=block,
            compared=report.compared,
            stake_share=report.stake_share,
            max_disagreement=report.max_disagreement,
            other_fingerprints=report.other_fingerprints,
            unknown_rules=report.unknown_rules,
        )
        warn_on_disagreement(report)
        return report


def peer_table(report: AgreementReport) -> list[dict[str, str]]:
    """The report as rows of text (hotkey, uid, stake, weights, rules), for a table."""
    rows = []
    for peer in report.peers:
        weights = (
            "no weights"
            if peer.distance is None
            else f"{'agrees' if peer.agrees else 'differs'} ({peer.distance:.3f})"
        )
        rules = {
            "match": "match",
            "unknown": f"unknown ({peer.rules_error or 'not asked'})",
            "differs": "differs: " + ", ".join(peer.differing_parts),
        }[peer.rules]
        rows.append(
            {
                "hotkey": peer.hotkey,
                "uid": str(peer.uid),
                "stake": f"{peer.stake:,.2f}",
                "weights": weights,
                "rules": rules,
            }
        )
    return rows
