"""The unbiased pass@k estimator on inputs whose answer is known."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from trajectories.training.evaluation.passk import pass_at_k


def _enumerated(n: int, c: int, k: int) -> Fraction:
    """pass@k by brute force: the share of k-subsets of n attempts that contain a success."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(attempts[i] for i in subset) for subset in subsets), len(subsets))


@pytest.mark.parametrize(("n", "c", "k"), [(1, 0, 1), (1, 1, 1), (5, 2, 1), (5, 2, 3), (8, 1, 8), (8, 3, 4),
                                           (10, 0, 5), (10, 9, 2), (7, 4, 4)])
def test_matches_enumeration(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(float(_enumerated(n, c, k)), abs=1e-12)


def test_known_values() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)              # pass@1 is the success rate
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)               # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(8, 8 - 7, 8) == 1.0                          # k = n with one success
    assert pass_at_k(200, 0, 100) == 0.0
    assert pass_at_k(1000, 1, 500) == pytest.approx(0.5)          # big binomials stay exact


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_impossible_inputs_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
