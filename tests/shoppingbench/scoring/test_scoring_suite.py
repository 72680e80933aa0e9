"""Suite aggregates (whole suite as denominator) and named profiles."""

from __future__ import annotations

import pytest

from shoppingbench.scoring import (
    ORIGINAL,
    PRODUCTION_STRICT,
    AttemptScore,
    ScoringProfile,
    aggregate,
    get_profile,
    score_attempt,
)
from tests.shoppingbench.scoring.test_scoring_support import (
    FakeEmbedder,
    answered,
    lookup,
    product,
    product_problem,
    shop_problem,
    target,
)

COD = {"service": ["COD"]}
CATALOG = lookup(product("a", service=["COD"]), product("b", service=["COD"]), product("t1"))


def suite():
    return [
        product_problem(target("p1", **COD)),
        product_problem(target("p2", **COD)),
        product_problem(target("p3", **COD)),
        shop_problem(target("s1", **COD), target("s2", **COD)),
    ]


def test_missing_attempts_count_as_failures() -> None:
    problems = suite()
    embedder = FakeEmbedder()
    scores = [
        score_attempt(problems[0], answered("a"), CATALOG, embedder),  # success
        score_attempt(problems[1], answered("t1"), CATALOG, embedder),  # fails: no COD
        AttemptScore.failure(problems[3], "crashed"),
    ]
    result = aggregate(scores, problems)
    assert (result.problems, result.attempted, result.successes) == (4, 3, 1)
    assert result.success_rate == 0.25
    assert result.mean_rule == 0.25
    assert result.mean_format == pytest.approx(2 / 4)
    assert result.mean_length == pytest.approx(0.5 * 2 / 4)
    product_scores = result.by_category["product"]
    assert (product_scores.problems, product_scores.successes) == (3, 1)
    assert product_scores.success_rate == pytest.approx(1 / 3)
    assert result.by_category["shop"].success_rate == 0
    assert "voucher" not in result.by_category


def test_gt_rate_counts_problems_with_every_target_exact() -> None:
    problems = [
        shop_problem(target("a", **COD), target("b", **COD)),
        shop_problem(target("a", **COD), target("x")),
    ]
    embedder = FakeEmbedder()
    scores = [
        score_attempt(problems[0], answered("a,b"), CATALOG, embedder),
        score_attempt(problems[1], answered("a,b"), CATALOG, embedder),
    ]
    assert [s.gt for s in scores] == [1, 0.5]
    assert aggregate(scores, problems).gt_rate == 0.5


def test_empty_suite_is_all_zero() -> None:
    result = aggregate([], [])
    assert result.problems == 0 and result.success_rate == 0 and result.by_category == {}


def test_mixed_up_runs_are_rejected() -> None:
    problems = suite()
    score = AttemptScore.failure(problems[0], "x")
    with pytest.raises(ValueError, match="two scores"):
        aggregate([score, score], problems)
    with pytest.raises(ValueError, match="outside the suite"):
        aggregate([AttemptScore.failure(product_problem(target("zzz")), "x")], problems)
    with pytest.raises(ValueError, match="more than once"):
        aggregate([], [problems[0], problems[0]])


def test_profiles_by_name() -> None:
    assert get_profile("production-strict") is PRODUCTION_STRICT and PRODUCTION_STRICT.title_threshold == 0.7
    assert get_profile("original") is ORIGINAL and ORIGINAL.title_threshold == 0.5
    with pytest.raises(ValueError, match="production-strict"):
        get_profile("lenient")
    with pytest.raises(ValueError):
        ScoringProfile(name="broken", title_threshold=0)


def test_score_records_its_profile() -> None:
    problem = suite()[0]
    assert score_attempt(problem, answered("a"), CATALOG, FakeEmbedder()).profile == "production-strict"
    assert score_attempt(problem, answered("a"), CATALOG, FakeEmbedder(), ORIGINAL).profile == "original"
