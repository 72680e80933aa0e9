"""Promotion that run-to-run noise cannot decide: a paired bootstrap over the race's problems.

The same agent scores differently from run to run (its LLM calls are sampled), so a challenger's lead
over the reigning winner on one suite is partly luck. Both ran the same problems, so the comparison is
paired: resample the problem indices with replacement, recompute both final scores (success rate x
quality coefficient, SPEC 3) on each resample, and take the lower ``1 - confidence`` quantile of the
differences as a one-sided lower bound on the lead. A challenger is promoted only when its lead
exceeds the margin and that bound is above zero.

Every honest validator must reach the same bound from the same results, on any platform: the
generator is the raw PCG64 bit stream seeded from the race seed (NumPy guarantees that a fixed seed
always gives PCG64 the same integer stream, unlike ``Generator`` methods, which may change between
versions), indices are its words modulo the suite size, and the resampled sums are integer sums
(qualities in millionths), so no floating-point summation order can differ.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.random import PCG64
from numpy.typing import NDArray

from arena.judge.score import ProblemOutcome, quality_coefficients, round_scores

PROMOTION_EPSILON: Final = 1e-9
"""Scores are means of a few hundred 0/1 outcomes; a difference this small is float noise, not a win."""

QUALITY_UNITS: Final = 1_000_000
"""Qualities are summed as integer millionths (the judge's levels are tenths: exact)."""


def bootstrap_generator(seed: str) -> PCG64:
    """The bit generator of the race seeded ``seed``: the same on every validator."""
    return PCG64(int.from_bytes(hashlib.sha256(b"promotion\0" + seed.encode()).digest(), "big"))


def resampled_scores(successes: NDArray[np.int64], qualities: NDArray[np.int64],
                     indices: NDArray[np.int64]) -> NDArray[np.float64]:
    """Final score of each resample (row of ``indices``) of one agent's per-problem outcomes, rounded as
    a published score is."""
    problems = indices.shape[1]
    success_rates: NDArray[np.float64] = successes[indices].sum(axis=1) / problems
    mean_qualities = qualities[indices].sum(axis=1) / (problems * QUALITY_UNITS)
    return round_scores(success_rates * quality_coefficients(mean_qualities))


def paired_lead_bound(challenger: tuple[NDArray[np.int64], NDArray[np.int64]],
                      defender: tuple[NDArray[np.int64], NDArray[np.int64]], generator: PCG64, *,
                      resamples: int, confidence: float) -> float:
    """One-sided ``confidence`` lower bound on the challenger's final-score lead over the defender.

    Each agent is ``(successes, qualities)``: 0/1 and integer millionths, one entry per problem, both
    agents in the same problem order. Draws ``resamples`` x problems words from ``generator``.
    """
    problems = len(challenger[0])
    words = generator.random_raw((resamples, problems))
    indices = (words % np.uint64(problems)).astype(np.int64)
    leads = resampled_scores(*challenger, indices) - resampled_scores(*defender, indices)
    return float(np.sort(leads)[math.floor((1 - confidence) * resamples)])


def outcome_arrays(outcomes: Sequence[ProblemOutcome]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(successes, qualities)`` as :func:`paired_lead_bound` takes them."""
    return (np.array([o.success for o in outcomes], dtype=np.int64),
            np.array([round(o.quality * QUALITY_UNITS) for o in outcomes], dtype=np.int64))


def lead_lower_bound(challenger: Sequence[ProblemOutcome], defender: Sequence[ProblemOutcome], seed: str, *,
                     resamples: int, confidence: float) -> float | None:
    """The bound for a race seeded ``seed``; ``None`` when the two did not record outcomes on the same
    problems in the same order (e.g. results from a log written before outcomes were kept)."""
    if not challenger or [o.problem_id for o in challenger] != [o.problem_id for o in defender]:
        return None
    return paired_lead_bound(outcome_arrays(challenger), outcome_arrays(defender), bootstrap_generator(seed),
                             resamples=resamples, confidence=confidence)


def clears(lead: float, margin: float, bound: float | None) -> bool:
    """The promotion rule: the lead beats the margin and, when it was computed, the bound is above zero."""
    return lead > margin + PROMOTION_EPSILON and (bound is None or bound > 0)
