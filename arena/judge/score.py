"""Final score = success rate x quality coefficient (SPEC 3).

The coefficient is 0.3 + q x 0.7 / 0.8 for a mean quality q below 0.8, and 1.0 from 0.8 up. The
levels bottom out at 0.1, so the lowest coefficient is 0.3875: an agent that never reasons keeps at
most 38.75% of its success rate. As in the reference arena, the coefficient and the final score are
rounded to 4 decimals (half to even, Python's ``round``), so two agents the reference calls tied are
tied here too, and a threshold compares the same number on both. A score keeps its per-problem
outcomes, so two agents run on the same suite can be compared problem by problem (the race's
promotion test).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field

from arena.judge.verdict import QUALITY_LEVELS, JudgeVerdict

FULL_CREDIT_QUALITY: Final = 0.8
SCORE_DECIMALS: Final = 4
"""The reference arena rounds the coefficient and the final score to this many decimals."""


def round_scores(values: ArrayLike) -> NDArray[np.float64]:
    """Each value rounded to :data:`SCORE_DECIMALS` by Python's ``round``, as the reference arena rounds.

    Not ``np.round``: it multiplies by 10**4 first, and that product can round onto a half the value is
    below, so the two differ at halves (0.69375, the coefficient of a mean quality 0.45, is stored a hair
    under: ``round`` gives 0.6937, ``np.round`` 0.6938). ``round`` rounds the stored value itself.
    """
    as_python_round = np.frompyfunc(lambda value: round(float(value), SCORE_DECIMALS), 1, 1)
    return np.asarray(as_python_round(np.asarray(values, dtype=np.float64)), dtype=np.float64)


def quality_coefficients(mean_qualities: ArrayLike) -> NDArray[np.float64]:
    """:func:`quality_coefficient` elementwise, unchecked (for many resampled means at once); the same
    float arithmetic and the same rounding, so equal means give equal coefficients."""
    means = np.asarray(mean_qualities, dtype=np.float64)
    return round_scores(np.where(means >= FULL_CREDIT_QUALITY, 1.0, 0.3 + means * 0.7 / FULL_CREDIT_QUALITY))


def quality_coefficient(mean_quality: float) -> float:
    """The coefficient of one mean quality, rounded to :data:`SCORE_DECIMALS` with ``round``, as the
    reference arena does."""
    if not 0.0 <= mean_quality <= 1.0:
        raise ValueError(f"mean quality must lie in [0, 1], got {mean_quality}")
    raw = 1.0 if mean_quality >= FULL_CREDIT_QUALITY else 0.3 + mean_quality * 0.7 / FULL_CREDIT_QUALITY
    return round(raw, SCORE_DECIMALS)


class ProblemOutcome(BaseModel):
    """One problem of a suite run: did the attempt succeed, and the judged quality of its reasoning."""

    model_config = ConfigDict(frozen=True)

    problem_id: str
    success: bool
    quality: float = Field(ge=0, le=1, allow_inf_nan=False)


class FinalScore(BaseModel):
    """An agent's score over a suite, with where its quality came from."""

    model_config = ConfigDict(frozen=True)

    success_rate: float = Field(ge=0, le=1)
    mean_quality: float = Field(ge=0, le=1)
    coefficient: float = Field(ge=0, le=1)
    score: float = Field(ge=0, le=1)
    verdicts: int = Field(ge=0)
    offline_verdicts: int = Field(ge=0, description="Verdicts from the offline rules (embedded or fallback)")
    echoed_verdicts: int = Field(default=0, ge=0, description=(
        "Verdicts on attempts with echoed completions (the model only repeated what the agent sent)"))
    judges: tuple[str, ...] = Field(description="Every judge that gave a verdict, sorted")
    outcomes: tuple[ProblemOutcome, ...] = Field(default=(), description="Per problem, in suite order, when "
                                                                          "the score was made from them")

    @property
    def judge_label(self) -> str:
        """How the quality was judged, for tables and logs: e.g. ``model-a`` or ``offline-rules``."""
        if self.offline_verdicts == 0:
            return ", ".join(self.judges) or "none"
        return f"{', '.join(self.judges)} ({self.offline_verdicts}/{self.verdicts} offline)"


def final_score(success_rate: float, verdicts: Sequence[JudgeVerdict]) -> FinalScore:
    """Combine a suite's success rate with its attempts' verdicts (no verdicts: the lowest level); the
    score is the product of the rate and the rounded coefficient, itself rounded (the reference's order)."""
    mean = sum(v.quality for v in verdicts) / len(verdicts) if verdicts else QUALITY_LEVELS[0]
    coefficient = quality_coefficient(mean)
    return FinalScore(success_rate=success_rate, mean_quality=mean, coefficient=coefficient,
                      score=round(success_rate * coefficient, SCORE_DECIMALS), verdicts=len(verdicts),
                      offline_verdicts=sum(v.offline for v in verdicts),
                      echoed_verdicts=sum(v.echoed_completions > 0 for v in verdicts),
                      judges=tuple(sorted({v.judge for v in verdicts})))


def suite_score(successes: Sequence[bool], verdicts: Sequence[JudgeVerdict],
                problem_ids: Sequence[str]) -> FinalScore:
    """The final score of a suite run from each problem's success and verdict (all in suite order),
    keeping the per-problem outcomes."""
    if not len(successes) == len(verdicts) == len(problem_ids) > 0:
        raise ValueError("a suite score needs one success and one verdict for each of its problems")
    outcomes = tuple(ProblemOutcome(problem_id=pid, success=success, quality=verdict.quality)
                     for pid, success, verdict in zip(problem_ids, successes, verdicts, strict=True))
    score = final_score(sum(successes) / len(successes), verdicts)
    return score.model_copy(update={"outcomes": outcomes})
