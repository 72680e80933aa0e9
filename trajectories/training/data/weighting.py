"""Reward-weighted rejection sampling: kept samples count in proportion to their reward (pure).

A sample's reward is the mean of the scorer's four graded figures of the attempt, ``rule``, ``gt``,
``format`` and ``length`` (each in [0, 1]; :func:`sample_reward`): every kept sample succeeded, so its rule
is 1, and the others tell an exact-product answer in a well-formed, short dialogue from a looser one. The
weight is applied by repetition, so the next trainer (TRL's ``SFTTrainer`` or ``KTOTrainer``) needs no
per-sample loss weight: with ``mode: reward`` a sample is repeated ``max(1, floor(max_repeats * r / r_max +
1/2))`` times, ``r_max`` the highest reward among the samples weighted together (:func:`repeats`), which is
proportional to the reward up to rounding; ``mode: uniform`` keeps each sample once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.scoring import AttemptScore

T = TypeVar("T")


class RewardWeighting(BaseModel):
    """How kept samples are weighted by their reward."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["uniform", "reward"] = Field(default="uniform", description=(
        "reward: repeat each kept sample in proportion to its reward; uniform: each once"))
    max_repeats: int = Field(default=4, ge=1, le=16, description=(
        "reward only: copies of the highest-reward sample; the others in proportion"))


def sample_reward(score: AttemptScore) -> float:
    """The mean of the attempt's ``rule``, ``gt``, ``format`` and ``length`` grades."""
    return (score.rule + score.gt + score.format + score.length) / 4


def repeats(rewards: Sequence[float], weighting: RewardWeighting) -> list[int]:
    """Copies of each sample (at least one) under ``weighting``."""
    top = max(rewards, default=0.0)
    if weighting.mode == "uniform" or top <= 0:
        return [1] * len(rewards)
    return [max(1, math.floor(weighting.max_repeats * reward / top + 0.5)) for reward in rewards]


def weighted(samples: Sequence[T], rewards: Sequence[float], weighting: RewardWeighting) -> list[T]:
    """``samples`` in order, each repeated as :func:`repeats` says."""
    if len(samples) != len(rewards):
        raise ValueError(f"{len(samples)} samples but {len(rewards)} rewards")
    return [sample for sample, copies in zip(samples, repeats(rewards, weighting), strict=True)
            for _ in range(copies)]
