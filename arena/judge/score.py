"""Final score = success rate x quality coefficient (SPEC 3).

The coefficient is 0.3 + q x 0.7 / 0.8 for a mean quality q below 0.8, and 1.0 from 0.8 up. The
levels bottom out at 0.1, so the lowest coefficient is 0.3875: an agent that never reasons keeps at
most 38.75% of its success rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from arena.judge.verdict import QUALITY_LEVELS, JudgeVerdict

FULL_CREDIT_QUALITY: Final = 0.8


def quality_coefficient(mean_quality: float) -> float:
    if not 0.0 <= mean_quality <= 1.0:
        raise ValueError(f"mean quality must lie in [0, 1], got {mean_quality}")
    return 1.0 if mean_quality >= FULL_CREDIT_QUALITY else 0.3 + mean_quality * 0.7 / FULL_CREDIT_QUALITY


class FinalScore(BaseModel):
    """An agent's score over a suite, with where its quality came from."""

    model_config = ConfigDict(frozen=True)

    success_rate: float = Field(ge=0, le=1)
    mean_quality: float = Field(ge=0, le=1)
    coefficient: float = Field(ge=0, le=1)
    score: float = Field(ge=0, le=1)
    verdicts: int = Field(ge=0)
    offline_verdicts: int = Field(ge=0, description="Verdicts from the offline rules (embedded or fallback)")
    judges: tuple[str, ...] = Field(description="Every judge that gave a verdict, sorted")

    @property
    def judge_label(self) -> str:
        """How the quality was judged, for tables and logs: e.g. ``model-a`` or ``offline-rules``."""
        if self.offline_verdicts == 0:
            return ", ".join(self.judges) or "none"
        return f"{', '.join(self.judges)} ({self.offline_verdicts}/{self.verdicts} offline)"


def final_score(success_rate: float, verdicts: Sequence[JudgeVerdict]) -> FinalScore:
    """Combine a suite's success rate with its attempts' verdicts (no verdicts: the lowest level)."""
    mean = sum(v.quality for v in verdicts) / len(verdicts) if verdicts else QUALITY_LEVELS[0]
    coefficient = quality_coefficient(mean)
    return FinalScore(success_rate=success_rate, mean_quality=mean, coefficient=coefficient,
                      score=success_rate * coefficient, verdicts=len(verdicts),
                      offline_verdicts=sum(v.offline for v in verdicts),
                      judges=tuple(sorted({v.judge for v in verdicts})))
