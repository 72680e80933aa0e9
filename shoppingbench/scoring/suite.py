"""Suite aggregates: the success rate (ASR, the headline) and its companions (SPEC 2).

The denominator is always the whole suite: a problem without an attempt (crash, timeout, never
run) counts as a failure with all grades 0, as in the reference arena's ``compute_aggregate``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.scoring.attempt import AttemptScore


class CategoryScore(BaseModel):
    """Aggregates over a set of problems."""

    model_config = ConfigDict(frozen=True)

    problems: int = Field(ge=0)
    attempted: int = Field(ge=0)
    successes: int = Field(ge=0)
    success_rate: float = Field(ge=0, le=1)
    gt_rate: float = Field(ge=0, le=1)
    """Share of problems where every target's exact product was recommended (original ``gt >= 1``)."""
    mean_rule: float = Field(ge=0, le=1)
    mean_format: float = Field(ge=0, le=1)
    mean_length: float = Field(ge=0, le=1)


class SuiteScore(CategoryScore):
    """Whole-suite aggregates plus the same per category present in the suite."""

    by_category: dict[Category, CategoryScore] = Field(default_factory=dict)


def _summarise(problems: Sequence[Problem], scores: dict[str, AttemptScore]) -> CategoryScore:
    attempts = [scores[p.id] for p in problems if p.id in scores]
    n = len(problems)

    def over_all(values: list[float]) -> float:
        # Divides by every problem, attempted or not: missing attempts count as 0.
        return sum(values) / n if n else 0.0

    successes = sum(1 for s in attempts if s.success)
    return CategoryScore(
        problems=n, attempted=len(attempts), successes=successes,
        success_rate=over_all([1.0] * successes),
        gt_rate=over_all([1.0 for s in attempts if s.gt >= 1]),
        mean_rule=over_all([s.rule for s in attempts]),
        mean_format=over_all([s.format for s in attempts]),
        mean_length=over_all([s.length for s in attempts]))


def aggregate(scores: Sequence[AttemptScore], suite: Sequence[Problem]) -> SuiteScore:
    """Aggregate attempt scores over ``suite``.

    Raises ``ValueError`` for a suite with repeated problem ids, two scores for one problem, or a
    score for a problem outside the suite: each means the caller mixed up runs, and silently
    picking one would change the headline number.
    """
    suite_ids = [p.id for p in suite]
    if len(set(suite_ids)) != len(suite_ids):
        raise ValueError("the suite lists a problem id more than once")
    by_id: dict[str, AttemptScore] = {}
    for score in scores:
        if score.problem_id in by_id:
            raise ValueError(f"two scores for problem {score.problem_id}")
        by_id[score.problem_id] = score
    strangers = set(by_id) - set(suite_ids)
    if strangers:
        raise ValueError(f"scores for problems outside the suite: {', '.join(sorted(strangers)[:5])}")
    overall = _summarise(suite, by_id)
    per_category = {c: _summarise([p for p in suite if p.category == c], by_id)
                    for c in CATEGORIES if any(p.category == c for p in suite)}
    return SuiteScore(**overall.model_dump(), by_category=per_category)
