"""The cooldown between two submissions of a hotkey, as a pure function of its past verdicts (SPEC 4)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from arena.race.clock import UtcDatetime
from arena.race.rules import RaceRules


class PastVerdict(BaseModel):
    """A commitment this validator already judged: accepted, rejected by static analysis, or a copy (which
    costs the full cooldown like an accepted file)."""

    model_config = ConfigDict(frozen=True)

    commitment_block: int
    commitment_time: UtcDatetime
    outcome: Literal["accepted", "security", "integrity", "copy"]


def cooldown_until(history: Sequence[PastVerdict], rules: RaceRules) -> datetime | None:
    """When the hotkey may next commit: the latest verdict's commitment time plus its cooldown.

    The cooldown starts at the commitment (its block's time), not at the upload, so a slow network
    costs nobody time. A security rejection (an honest mistake, fixed fast) carries the shorter one.
    """
    if not history:
        return None
    latest = max(history, key=lambda v: v.commitment_block)
    span = rules.security_rejection_cooldown if latest.outcome == "security" else rules.cooldown
    return latest.commitment_time + span


def in_cooldown(commitment_time: datetime, history: Sequence[PastVerdict],
                rules: RaceRules) -> datetime | None:
    """The time the commitment should have waited for, when it came too early; ``None`` when it is fine."""
    until = cooldown_until(history, rules)
    return until if until is not None and commitment_time < until else None
