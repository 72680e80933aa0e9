"""Reward-weighted rejection sampling (pure): a kept sample's copies follow its reward."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shoppingbench.scoring import AttemptScore
from trajectories.training.data.weighting import RewardWeighting, repeats, sample_reward, weighted

REWARD = RewardWeighting(mode="reward", max_repeats=4)


def _score(**grades: float) -> AttemptScore:
    return AttemptScore(problem_id="p", category="product", success=True,
                        **{"gt": 0.0, "rule": 1.0, "found": 1.0, "format": 1.0, "length": 1.0, **grades})


def test_the_reward_is_the_mean_of_rule_gt_format_and_length() -> None:
    assert sample_reward(_score(gt=1.0)) == 1.0
    assert sample_reward(_score(gt=0.0, length=0.5)) == pytest.approx(0.625)
    assert sample_reward(_score(gt=0.0, format=0.0, length=0.0)) == 0.25


def test_copies_are_proportional_to_the_reward_and_never_zero() -> None:
    assert repeats([1.0, 0.5, 0.75, 0.05], REWARD) == [4, 2, 3, 1]
    assert repeats([0.5, 0.25], REWARD) == [4, 2]  # relative to the best of the samples weighted together
    assert repeats([0.5, 0.25], RewardWeighting(mode="uniform")) == [1, 1]
    assert repeats([0.0, 0.0], REWARD) == [1, 1] and repeats([], REWARD) == []
    assert weighted(["a", "b"], [1.0, 0.5], REWARD) == ["a"] * 4 + ["b"] * 2
    with pytest.raises(ValueError, match="2 samples but 1 rewards"):
        weighted(["a", "b"], [1.0], REWARD)


def test_the_weighting_is_validated_when_loaded() -> None:
    with pytest.raises(ValidationError):
        RewardWeighting.model_validate({"mode": "by_reward"})
    with pytest.raises(ValidationError):
        RewardWeighting.model_validate({"mode": "reward", "max_repeats": 0})
