"""Weights from the last completed race: one deterministic u16 vector over the metagraph (SPEC 4).

The reigning winner gets ``winner_share``; the rest of the top half of finishers (by race score) share
``taper_share`` on a linear taper (the best of them the most); everything else goes to the burn uid.
The taper is over distinct code: a finisher whose code turned out to be a copy of another's
(``copy_of``) takes no slot and does not count towards the half. A hotkey missing from the metagraph is
dropped and its share burnt, so nobody else's share moves when someone deregisters. Before the first
race everything burns.

Shares are exact fractions and the tie-break is total: equal scores order by :func:`seeded_tie_break`, a
hash of the race's seed and the hotkey, which nobody can compute (nor grind a hotkey for) before the
seed's block exists. The same race results give the same bytes on every validator, in any input order.
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
                           description=":func:`seeded_tie_break` of the race's seed and the hotkey")
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
