"""How far this validator agrees with the others it can see: a pure function of the chain's weight rows and
the peers' rules fingerprints, so every figure the gauges, the warning and ``validator peers`` show is
computed in one place and tested without a network.

Weights: each validator's row is compared as shares (uid -> fraction of its row, a uid missing from a row
counts 0); the distance of two rows is the largest difference of any one uid's share, and a peer agrees
when that is at most the tolerance. The agreement is the share of the compared peers' stake that agrees
(peers with a validator permit and a weight row); when their stake sums to 0 (a fresh subnet, a local
chain nobody staked on) every compared peer counts the same, and the report says so (``weighted_by``).

Rules: a peer whose ``/rules`` answered is ``match`` or ``differs`` (with the differing parts, by dotted
name down nested objects: ``suite_sizes.race``, ``judge_models``, and ``version`` for the rules version);
one without an axon, or whose ``/rules`` did not answer, is ``unknown``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from arena.chain import ValidatorWeights
from arena.rules_fingerprint import RulesFingerprint

DEFAULT_TOLERANCE: Final = 0.02
"""Largest difference of one uid's share at which two weight rows still agree: far above the chain's u16
rounding (1/65,535 of the row's largest weight), far below any difference a race decides."""
MAX_PART_NAMES: Final = 20
"""At most this many differing part names per peer (a peer's ``/rules`` is untrusted input)."""
MAX_PART_NAME: Final = 64

RulesStatus = Literal["match", "differs", "unknown"]


class PeerRules(BaseModel):
    """What a peer's ``/rules`` said: its fingerprint, or why it is unknown."""

    model_config = ConfigDict(frozen=True)

    rules: RulesFingerprint | None = None
    error: str | None = Field(default=None, description="Why the rules are unknown (no axon, no answer, ...)")


class PeerAgreement(BaseModel):
    """One other validator: its stake, how far its weights are from ours, and its rules."""

    model_config = ConfigDict(frozen=True)

    uid: int
    hotkey: str
    stake: float
    url: str | None = None
    distance: float | None = Field(
        default=None,
        description="Largest difference of one uid's share; None when either side has no weights",
    )
    agrees: bool | None = None
    rules: RulesStatus = "unknown"
    fingerprint: str | None = None
    differing_parts: tuple[str, ...] = ()
    rules_error: str | None = None


class AgreementReport(BaseModel):
    """Agreement with every other validator the chain shows, at ``block``."""

    model_config = ConfigDict(frozen=True)

    block: int
    hotkey: str
    fingerprint: str
    tolerance: float
    own_weights: bool = Field(description="Whether the chain holds weights of this validator to compare")
    stake_share: float | None = Field(
        description="Share of the compared peers' stake (or count, see "
        "weighted_by) whose weights agree; None: nothing compared"
    )
    weighted_by: Literal["stake", "count"] = "stake"
    compared: int = 0
    max_disagreement: float | None = None
    max_disagreement_hotkey: str | None = None
    other_fingerprints: int = 0
    unknown_rules: int = 0
    peers: tuple[PeerAgreement, ...] = ()

    def disagreements(self) -> list[str]:
        """One line per peer that disagrees (weights beyond the tolerance, or other rules), naming it and
        what differs; empty when all the peers seen agree."""
        lines = []
        for peer in self.peers:
            what = []
            if peer.agrees is False and peer.distance is not None:
                what.append(f"weights differ by {peer.distance:.3f} (tolerance {self.tolerance:g})")
            if peer.rules == "differs":
                what.append(", ".join(f"{part} differs" for part in peer.differing_parts) or "rules differ")
            if what:
                lines.append(f"{peer.hotkey} (uid {peer.uid}): {'; '.join(what)}")
        return lines


def weight_distance(ours: Mapping[int, float], theirs: Mapping[int, float]) -> float:
    """The largest difference of one uid's share between two rows (a uid missing from a row counts 0)."""
    return max((abs(ours.get(uid, 0.0) - theirs.get(uid, 0.0)) for uid in {*ours, *theirs}), default=0.0)


def differing_parts(ours: RulesFingerprint, theirs: RulesFingerprint) -> tuple[str, ...]:
    """The dotted names of the parts whose values differ (down nested objects), ``version`` first when
    the rules versions differ; at most :data:`MAX_PART_NAMES`, each cut to :data:`MAX_PART_NAME` and
    printable (a peer's part names are untrusted text bound for logs and terminals)."""
    names = ["version"] if ours.version != theirs.version else []
    names.extend(_differences(ours.parts, theirs.parts, ""))
    return tuple(_printable(name[:MAX_PART_NAME]) for name in names[:MAX_PART_NAMES])


def _printable(name: str) -> str:
    """``name`` with every character that would move a terminal's cursor or colour shown as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in name)


def _differences(ours: Mapping[str, Any], theirs: Mapping[str, Any], prefix: str) -> Iterable[str]:
    for key in sorted({*ours, *theirs}, key=str):
        mine, other = ours.get(key), theirs.get(key)
        if mine == other and (key in ours) == (key in theirs):
            continue
        if isinstance(mine, Mapping) and isinstance(other, Mapping):
            yield from _differences(mine, other, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def _rules_of(own: RulesFingerprint, seen: PeerRules | None) -> dict[str, Any]:
    if seen is None or seen.rules is None:
        return {"rules": "unknown", "rules_error": None if seen is None else seen.error}
    if seen.rules.fingerprint == own.fingerprint and seen.rules.version == own.version:
        return {"rules": "match", "fingerprint": seen.rules.fingerprint}
    return {
        "rules": "differs",
        "fingerprint": seen.rules.fingerprint,
        "differing_parts": differing_parts(own, seen.rules),
    }


def agreement(
    *,
    block: int,
    hotkey: str,
    rules: RulesFingerprint,
    rows: Iterable[ValidatorWeights],
    peer_rules: Mapping[str, PeerRules],
    tolerance: float = DEFAULT_TOLERANCE,
) -> AgreementReport:
    """This validator's (``hotkey``, running ``rules``) agreement with the other validators in ``rows``
    (the chain's weight rows at ``block``), given what each peer's ``/rules`` said (by hotkey)."""
    rows = list(rows)
    own = next((row.weights for row in rows if row.hotkey == hotkey), {})
    peers = []
    for row in sorted(rows, key=lambda r: r.uid):
        if row.hotkey == hotkey or not row.validator_permit:
            continue
        distance = weight_distance(own, row.weights) if own and row.weights else None
        peers.append(
            PeerAgreement(
                uid=row.uid,
                hotkey=row.hotkey,
                stake=row.stake,
                url=row.axon.url if row.axon else None,
                distance=distance,
                agrees=None if distance is None else distance <= tolerance,
                **_rules_of(rules, peer_rules.get(row.hotkey)),
            )
        )
    compared = [p for p in peers if p.distance is not None]
    total = sum(p.stake for p in compared)
    weighted_by: Literal["stake", "count"] = "stake" if total > 0 else "count"

    def weight(peer: PeerAgreement) -> float:
        return peer.stake if weighted_by == "stake" else 1.0

    share = (
        sum(weight(p) for p in compared if p.agrees) / sum(weight(p) for p in compared) if compared else None
    )
    worst = max(compared, key=lambda p: (p.distance or 0.0, -p.uid), default=None)
    return AgreementReport(
        block=block,
        hotkey=hotkey,
        fingerprint=rules.fingerprint,
        tolerance=tolerance,
        own_weights=bool(own),
        stake_share=share,
        weighted_by=weighted_by,
        compared=len(compared),
        max_disagreement=None if worst is None else worst.distance,
        max_disagreement_hotkey=None if worst is None else worst.hotkey,
        other_fingerprints=sum(p.rules == "differs" for p in peers),
        unknown_rules=sum(p.rules == "unknown" for p in peers),
        peers=tuple(peers),
    )
