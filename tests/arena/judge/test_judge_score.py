"""Final score = success rate x coefficient (SPEC 3), labelled with its judges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.judge import QUALITY_LEVELS, JudgeVerdict, final_score, quality_coefficient
from arena.judge.score import quality_coefficients


def verdict(quality: float, judge: str = "model-a", offline: bool = False) -> JudgeVerdict:
    return JudgeVerdict(quality=quality, judge=judge, offline=offline, explanation="-", attempts=1)


@pytest.mark.parametrize(("q", "coefficient"), [(0.0, 0.3), (0.1, 0.3875), (0.4, 0.65), (0.7, 0.9125),
                                                (0.8, 1.0), (0.9, 1.0), (1.0, 1.0)])
def test_coefficient(q: float, coefficient: float) -> None:
    assert quality_coefficient(q) == pytest.approx(coefficient)


@given(st.floats(0, 1), st.floats(0, 1))
def test_coefficient_is_monotone(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert quality_coefficient(low) <= quality_coefficient(high) <= 1.0


def test_final_score_and_labels() -> None:
    score = final_score(0.5, [verdict(0.9), verdict(0.7, "offline-rules", offline=True)])
    assert score.mean_quality == pytest.approx(0.8) and score.score == pytest.approx(0.5)
    assert score.offline_verdicts == 1 and score.judge_label == "model-a, offline-rules (1/2 offline)"
    assert final_score(1.0, [verdict(0.1)] * 3).score == pytest.approx(0.3875)
    assert final_score(1.0, []).mean_quality == QUALITY_LEVELS[0]
    assert final_score(0.4, [verdict(0.9)]).judge_label == "model-a"


def test_coefficient_and_score_are_rounded_to_four_decimals_as_the_reference() -> None:
    # Mean quality 13/30: 0.3 + 0.4333.. x 0.875 = 0.679166..; the reference says 0.6792, and the score
    # is the rate times that rounded coefficient, rounded again: 2/3 x 0.6792 = 0.45280 -> 0.4528.
    verdicts = [verdict(0.3), verdict(0.5), verdict(0.5)]
    assert quality_coefficient(13 / 30) == 0.6792
    score = final_score(2 / 3, verdicts)
    assert score.coefficient == 0.6792 and score.score == 0.4528


def test_many_coefficients_round_a_half_as_one_does() -> None:
    # A mean quality of 0.45 gives 0.69375, stored a hair under the half: the reference's ``round``
    # says 0.6937 (``np.round`` says 0.6938), and the promotion test's coefficients must agree.
    assert quality_coefficient(0.45) == 0.6937
    assert quality_coefficients([0.45, 13 / 30, 0.9]).tolist() == [0.6937, 0.6792, 1.0]


def test_scores_closer_than_the_fourth_decimal_tie() -> None:
    # Unrounded these differ by 4e-5; the reference ranks them as a tie, so must we.
    assert final_score(0.50004, [verdict(0.9)]).score == final_score(0.5, [verdict(0.9)]).score == 0.5
    assert final_score(0.50006, [verdict(0.9)]).score == 0.5001


@pytest.mark.parametrize("bad", [0.0, 0.2, 0.6, 1.0, -0.1])
def test_verdicts_only_carry_the_five_levels(bad: float) -> None:
    with pytest.raises(ValueError, match="one of"):
        verdict(bad)
    with pytest.raises(ValueError):
        quality_coefficient(1.5)
