"""Weights from the last completed race: one deterministic u16 vector over the metagraph (SPEC 4).

The reigning winner gets ``winner_share``; the rest of the top half of finishers (by race score) share
``taper_share`` on a linear taper (the best of them the most); everything else goes to the burn uid.
The taper is over distinct code: a finisher whose code turned out to be a copy of another's
(``copy_of``) takes no slot and does not count towards the half. A hotkey missing from the metagraph is
dropped and its share burnt, so nobody else's share moves when someone deregisters. Before the first
race everything burns.

Shares are exact fractions and the tie-break is total: equal scores keep the race standings' order
(:func:`standings_tie_break`), which is :func:`seeded_tie_break`, a hash of the race's seed and the
hotkey that nobody can compute (nor grind a hotkey for) before the seed's block exists, except among
agents alike on every problem, where the earlier commitment comes first. The same race results give the
same bytes on every validator, in any input order.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

U16_MAX: Final = 65_535


class WeightRules(BaseModel):
    model_config = ConfigDict(frozen=True)

    winner_share: float = Field(default=0.6, ge=0, le=1)
    taper_share: float = Field(default=0.2, ge=0, le=1)
    burn_uid: int = Field(default=0, ge=0, le=U16_MAX)

    @model_validator(mode="after")
    def _shares_fit(self) -> WeightRules:
        if _exact(self.winner_share) + _exact(self.taper_share) > 1:
            raise ValueError("winner_share + taper_share must not exceed 1")
        return self


class Finisher(BaseModel):
    """One entrant of a completed race."""

    model_config = ConfigDict(frozen=True)

    hotkey: str = Field(min_length=1)
    score: float = Field(ge=0, le=1, allow_inf_nan=False)
    tie_break: str = Field(pattern=r"^[0-9a-f]{64}$",
                           description="The order among equal scores, lower first: the race standings' "
                                       "(:func:`standings_tie_break`) or :func:`seeded_tie_break`")
    copy_of: str | None = Field(default=None, description="The hotkey whose earlier code this finisher's "
                                                          "is a copy of: it takes no taper slot")


class WeightVector(BaseModel):
    """Non-zero u16 weights by ascending uid, as ``set_weights`` takes them."""

    model_config = ConfigDict(frozen=True)

    uids: tuple[int, ...]
    weights: tuple[int, ...]

    @field_validator("weights")
    @classmethod
    def _u16(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 0 < w <= U16_MAX for w in value):
            raise ValueError("weights are non-zero u16 values")
        return value

    def to_bytes(self) -> bytes:
        """Canonical encoding (little-endian u16 uid, u16 weight pairs): equal vectors, equal bytes."""
        return b"".join(struct.pack("<HH", uid, weight) for uid, weight in zip(self.uids, self.weights,
                                                                                 strict=True))


def _exact(value: float) -> Fraction:
    """The decimal a person configured (0.6), not the nearest binary float's expansion."""
    return Fraction(repr(value))


def seeded_tie_break(seed: str, hotkey: str) -> str:
    """The order of ``hotkey`` among equal race scores of the race seeded ``seed`` (lower first).

    The seed is the hash of a block final only at race time, so before it exists no hotkey can be chosen
    (or ground) to win a tie, and the order changes from race to race rather than following hotkey order.
    """
    return hashlib.sha256(f"tie-break\0{seed}\0{hotkey}".encode()).hexdigest()


def standings_tie_break(position: int) -> str:
    """The tie-break of the finisher at ``position`` (0 first) of a race's standings, which already
    break ties (:func:`arena.race.rules.standings`: the seeded order, the earlier commitment among
    near-identical agents): equal scores keep that order in the weights."""
    return f"{position:064x}"


def ranking(finishers: Sequence[Finisher]) -> list[Finisher]:
    """Best first: higher score, then the lower seeded tie-break (hotkey last: equal only for one hotkey)."""
    return sorted(finishers, key=lambda f: (-f.score, f.tie_break, f.hotkey))


def race_shares(finishers: Sequence[Finisher], winner: str | None, rules: WeightRules) -> dict[str, Fraction]:
    """Each paid hotkey's share of the emission; ``1 - sum`` is what burns."""
    hotkeys = [f.hotkey for f in finishers]
    if len(set(hotkeys)) != len(hotkeys):
        raise ValueError("a hotkey finished a race twice")
    if winner is None:
        return {}
    shares = {winner: _exact(rules.winner_share)}
    distinct = [f for f in finishers if f.copy_of is None]
    entrants = len({f.hotkey for f in distinct} | {winner})
    others = [f.hotkey for f in ranking(distinct) if f.hotkey != winner]
    tapered = others[:math.ceil(entrants / 2) - 1]
    total_rank = len(tapered) * (len(tapered) + 1) // 2
    for rank, hotkey in enumerate(tapered):
        shares[hotkey] = _exact(rules.taper_share) * (len(tapered) - rank) / total_rank
    return shares


def weight_vector(shares: Mapping[str, Fraction], metagraph: Sequence[str], burn_uid: int) -> WeightVector:
    """``shares`` over the metagraph's uids (``metagraph[uid]`` is that uid's hotkey), the rest burnt."""
    if burn_uid >= len(metagraph):
        raise ValueError(f"burn uid {burn_uid} is not in a metagraph of {len(metagraph)} uids")
    uid_of: dict[str, int] = {}
    for uid, hotkey in enumerate(metagraph):
        if hotkey in uid_of:
            raise ValueError(f"hotkey {hotkey} holds two uids ({uid_of[hotkey]} and {uid})")
        uid_of[hotkey] = uid
    by_uid: dict[int, Fraction] = {}
    for hotkey, share in shares.items():
        if hotkey in uid_of and share > 0:
            by_uid[uid_of[hotkey]] = by_uid.get(uid_of[hotkey], Fraction(0)) + share
    burnt = 1 - sum(by_uid.values(), Fraction(0))
    if burnt < 0:
        raise ValueError("shares add up to more than 1")
    by_uid[burn_uid] = by_uid.get(burn_uid, Fraction(0)) + burnt
    top = max(by_uid.values())
    # Round half up on exact fractions: no float, no platform difference.
    scaled = {uid: math.floor(share / top * U16_MAX + Fraction(1, 2)) for uid, share in by_uid.items()}
    uids = tuple(sorted(uid for uid, weight in scaled.items() if weight > 0))
    return WeightVector(uids=uids, weights=tuple(scaled[uid] for uid in uids))


def compute_weights(finishers: Sequence[Finisher], winner: str | None, metagraph: Sequence[str],
                    rules: WeightRules) -> WeightVector:
    """The weight vector for the last completed race (``winner`` ``None``: no race yet, all burns)."""
    return weight_vector(race_shares(finishers, winner, rules), metagraph, rules.burn_uid)


# -- what the chain accepts --------------------------------------------------------------------------------

PAD_SHARE: Final = Fraction(1, 100_000)
"""The share every uid gets on top of its own when a vector names fewer uids than the subnet's minimum: the
``1e-5`` of the SDK's ``process_weights_for_netuid``."""


class WeightLimits(BaseModel):
    """The subnet hyperparameters a weight row must meet (``MinAllowedWeights``, ``MaxWeightsLimit``).

    Subtensor's defaults for a new subnet: at least 1 weight, no cap (65535 = 1.0)."""

    model_config = ConfigDict(frozen=True)

    min_allowed_weights: int = Field(default=1, ge=0, le=U16_MAX, description="Weights a row must hold at "
                                     "least (at most the subnet's size counts)")
    max_weight_limit: int = Field(default=U16_MAX, ge=0, le=U16_MAX, description="Cap on one weight's "
                                  "share of the row, in 65535ths (65535: no cap)")


def limits_violation(vector: WeightVector, limits: WeightLimits, *, n_uids: int,
                     self_uid: int | None = None) -> str | None:
    """Why subtensor refuses ``vector`` on a subnet of ``n_uids`` uids under ``limits`` (its error name and
    the numbers), ``None`` when it accepts it: at least ``min(min_allowed_weights, n_uids)`` entries
    (``check_length``) and no weight above ``max_weight_limit / 65535`` of the row's total
    (``check_vec_max_limited``), a lone weight on the caller's own uid being exempt from both."""
    if self_uid is not None and vector.uids == (self_uid,):
        return None
    needed = min(limits.min_allowed_weights, n_uids)
    if len(vector.uids) < needed:
        return f"WeightVecLengthIsLow: {len(vector.uids)} weights, the subnet asks for at least {needed}"
    if limits.max_weight_limit < U16_MAX and vector.weights:
        top, total = max(vector.weights), sum(vector.weights)
        if top * U16_MAX > limits.max_weight_limit * total:
            return (f"MaxWeightExceeded: the largest weight is {top / total:.4%} of the row, the subnet caps "
                    f"one at {limits.max_weight_limit / U16_MAX:.4%}")
    return None


def _clip_to_max_weight(shares: Mapping[int, Fraction], limit: Fraction) -> dict[int, Fraction]:
    """``shares`` normalised to 1 with none above ``limit``: the SDK's ``normalize_max_weight`` (its
    ``clip_to_max_weight``), on exact fractions and without its float epsilon. Every weight above a cutoff
    is cut to it, the cutoff chosen so that the largest lands exactly on ``limit``; the mass cut spreads
    over the others in proportion to their weights. Uniform when no distribution over these uids fits."""
    total = sum(shares.values(), Fraction(0))
    normalised = {uid: share / total for uid, share in shares.items()}
    count = len(normalised)
    if max(normalised.values()) <= limit:
        return normalised
    if count * limit <= 1:
        return dict.fromkeys(normalised, Fraction(1, count))
    estimation = sorted(normalised.values())
    cumulative = [sum(estimation[:i + 1], Fraction(0)) for i in range(count)]
    kept = sum(1 for i, e in enumerate(estimation) if e / ((count - i - 1) * e + cumulative[i]) < limit)
    cutoff = limit * cumulative[kept - 1] / (1 - limit * (count - kept))
    clipped = {uid: min(share, cutoff) for uid, share in normalised.items()}
    clipped_total = sum(clipped.values(), Fraction(0))
    return {uid: share / clipped_total for uid, share in clipped.items()}


def _quantised_up(shares: Mapping[int, Fraction]) -> WeightVector:
    """Max-upscaled u16 weights rounded up: the row's total never falls below the exact one, so the
    largest weight's share never rises above the exact largest share."""
    top = max(shares.values())
    scaled = {uid: math.ceil(share / top * U16_MAX) for uid, share in shares.items() if share > 0}
    uids = tuple(sorted(scaled))
    return WeightVector(uids=uids, weights=tuple(scaled[uid] for uid in uids))


def process_weights(vector: WeightVector, limits: WeightLimits, *, n_uids: int,
                    self_uid: int | None = None) -> WeightVector:
    """``vector`` as the chain accepts it on a subnet of ``n_uids`` uids under ``limits``.

    A vector the chain accepts is returned unchanged (the race's shares stay exact). Otherwise it is
    processed as the SDK's ``process_weights_for_netuid`` does (exclude quantile 0), on exact fractions:
    when it names fewer uids than ``min_allowed_weights``, every uid of the subnet gets
    :data:`PAD_SHARE` on top of its own share; then the largest shares are clipped to
    ``max_weight_limit`` (:func:`_clip_to_max_weight`). Where no distribution over the named uids can
    meet the cap, the shares spread over every uid (padded likewise) before the clip. The result is
    quantised rounding up, so it meets both limits exactly. ``ValueError`` when nothing can (a cap
    below ``1 / n_uids``) or ``vector`` names a uid outside the subnet.
    """
    if limits_violation(vector, limits, n_uids=n_uids, self_uid=self_uid) is None:
        return vector
    if any(uid >= n_uids for uid in vector.uids):
        raise ValueError(f"weights name uids outside a subnet of {n_uids} uids")
    limit = Fraction(limits.max_weight_limit, U16_MAX)
    if limits.max_weight_limit < U16_MAX and n_uids * limit < 1:
        raise ValueError(f"no weights meet a cap of {float(limit):.4%} on a subnet of {n_uids} uids")
    total = sum(vector.weights)
    shares = {uid: Fraction(weight, total) for uid, weight in zip(vector.uids, vector.weights, strict=True)}

    def padded(given: Mapping[int, Fraction]) -> dict[int, Fraction]:
        return {uid: given.get(uid, Fraction(0)) + PAD_SHARE for uid in range(n_uids)}

    if len(shares) < min(limits.min_allowed_weights, n_uids):
        shares = padded(shares)
    if limits.max_weight_limit < U16_MAX:
        if len(shares) * limit < 1:
            shares = padded(shares)
        shares = _clip_to_max_weight(shares, limit)
    processed = _quantised_up(shares)
    refused = limits_violation(processed, limits, n_uids=n_uids, self_uid=self_uid)
    if refused is not None:  # not reachable by the arithmetic above; never send what the chain refuses
        raise ValueError(f"processed weights still break the subnet's limits: {refused}")
    return processed
