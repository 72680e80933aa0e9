"""Per-target rules of SPEC 2: gt, title, price, service, sku & attribute pairs."""

from __future__ import annotations

from fractions import Fraction

import pytest

from shoppingbench.problems.models import RewardTarget
from shoppingbench.scoring import ORIGINAL, PRODUCTION_STRICT, judge_target, score_attempt, sku_attr_hits
from tests.shoppingbench.scoring.test_scoring_support import (
    FakeEmbedder,
    answered,
    at_cosine,
    lookup,
    product,
    product_problem,
    target,
)


def judge(reward: dict, item, sims: list[float] | None = None, threshold: float = 0.7):
    return judge_target(0, RewardTarget.model_validate(reward), item.product_id, item, sims or [], threshold)


@pytest.mark.parametrize(
    ("condition", "price", "hit"),
    [
        ({"between": [100, 200]}, 100.0, True),
        ({"between": [100, 200]}, 200.0, True),
        ({"between": [100, 200]}, 99.99, False),
        ({"between": [100, 200]}, 200.01, False),
        ({"greater than": [26, None]}, 26.0, True),
        ({"greater than": [26, None]}, 25.99, False),
        ({"less than": [None, 50]}, 50.0, True),
        ({"less than": [None, 50]}, 50.01, False),
    ],
)
def test_price_bounds_are_inclusive(condition: dict, price: float, hit: bool) -> None:
    score = judge(target("t", price=[condition]), product("p", price=price))
    assert (score.price.hits, score.price.checks) == (int(hit), 1)
    assert score.rule == float(hit)


def test_each_required_service_is_one_check() -> None:
    score = judge(target("t", service=["official", "COD"]), product("p", service=["official", "flashsale"]))
    assert (score.service.hits, score.service.checks) == (1, 2)
    assert score.rule_exact == Fraction(1, 2)


def test_sku_pair_satisfied_by_an_attribute() -> None:
    item = product("p", attrs={"color_family": ["black", "white"]})
    score = judge(target("t", sku_options=[{"color_family": "black"}]), item)
    assert (score.sku_attr.hits, score.sku_attr.checks) == (1, 1)


def test_attribute_pair_satisfied_by_a_sku_option() -> None:
    item = product("p", sku={"1": {"color_family": "red"}, "2": {"color_family": "black"}})
    score = judge(target("t", attributes=[{"color_family": ["black"]}]), item)
    assert (score.sku_attr.hits, score.sku_attr.checks) == (1, 1)


def test_each_attribute_value_is_its_own_pair() -> None:
    item = product("p", attrs={"material": ["leather"], "fa_pattern": ["plain"]})
    score = judge(
        target("t", attributes=[{"material": ["leather", "canvas"]}, {"fa_pattern": ["plain"]}]), item
    )
    assert (score.sku_attr.hits, score.sku_attr.checks) == (2, 3)


def test_sku_pairs_split_across_two_options_count_once() -> None:
    # black only exists in size m, xl only in red: no single variant is black AND xl.
    item = product(
        "p", sku={"1": {"color_family": "black", "size": "m"}, "2": {"color_family": "red", "size": "xl"}}
    )
    score = judge(target("t", sku_options=[{"color_family": "black", "size": "xl"}]), item)
    assert (score.sku_attr.hits, score.sku_attr.checks) == (1, 2)
    assert score.rule_exact < 1


def test_one_sku_option_satisfying_every_pair_counts_all() -> None:
    item = product(
        "p", sku={"1": {"color_family": "black", "size": "m"}, "2": {"color_family": "black", "size": "xl"}}
    )
    score = judge(target("t", sku_options=[{"color_family": "black", "size": "xl"}]), item)
    assert (score.sku_attr.hits, score.sku_attr.checks) == (2, 2)


def test_attribute_hits_add_to_the_best_option() -> None:
    item = product(
        "p",
        attrs={"material": ["cotton"]},
        sku={"1": {"color_family": "black", "size": "m"}, "2": {"color_family": "red", "size": "s"}},
    )
    pairs = [("color_family", "black"), ("size", "xl"), ("material", "cotton")]
    assert sku_attr_hits(item, pairs) == 2


def test_pairs_match_case_sensitively() -> None:
    score = judge(
        target("t", attributes=[{"color_family": ["Black"]}]), product("p", attrs={"color_family": ["black"]})
    )
    assert score.sku_attr.hits == 0


@pytest.mark.parametrize(("similarity", "hit"), [(0.70001, True), (0.69999, False)])
def test_title_threshold_is_reached_or_not(similarity: float, hit: bool) -> None:
    problem = product_problem(target("t", title=["Target title"]))
    embedder = FakeEmbedder({"Target title": at_cosine(similarity), "Offered title": [1.0, 0.0]})
    score = score_attempt(problem, answered("p"), lookup(product("p", title="Offered title")), embedder)
    assert score.targets[0].title_similarities == [pytest.approx(similarity, abs=1e-6)]
    assert score.targets[0].title.hits == int(hit)
    assert score.success is hit


def test_similarity_exactly_at_the_threshold_hits() -> None:
    # [1, 0] . [0.5, 0.5, 0.5, 0.5] is exactly 0.5 in float32: "reaches the threshold" means >=.
    problem = product_problem(target("t", title=["Target title"]))
    embedder = FakeEmbedder({"Target title": [0.5, 0.5, 0.5, 0.5], "Offered title": [1.0, 0.0]})
    score = score_attempt(
        problem, answered("p"), lookup(product("p", title="Offered title")), embedder, ORIGINAL
    )
    assert score.targets[0].title_similarities == [0.5]
    assert score.targets[0].title.hits == 1


def test_original_profile_accepts_half_similar_titles() -> None:
    problem = product_problem(target("t", title=["Target title"]))
    embedder = FakeEmbedder({"Target title": at_cosine(0.6), "Offered title": [1.0, 0.0]})
    catalog = lookup(product("p", title="Offered title"))
    assert not score_attempt(problem, answered("p"), catalog, embedder, PRODUCTION_STRICT).success
    assert score_attempt(problem, answered("p"), catalog, embedder, ORIGINAL).success


def test_every_target_title_is_a_check() -> None:
    problem = product_problem(target("t", title=["Close title", "Far title"]))
    embedder = FakeEmbedder(
        {"Close title": at_cosine(0.9), "Far title": at_cosine(0.1), "Offered": [1.0, 0.0]}
    )
    score = score_attempt(problem, answered("p"), lookup(product("p", title="Offered")), embedder)
    assert (score.targets[0].title.hits, score.targets[0].title.checks) == (1, 2)
    assert score.rule == 0.5


def test_ground_truth_scores_rule_one_even_when_constraints_fail() -> None:
    problem = product_problem(
        target("t", title=["Something else"], price=[{"less than": [None, 10]}], service=["official"])
    )
    embedder = FakeEmbedder()
    score = score_attempt(problem, answered("t"), lookup(product("t", price=500.0)), embedder)
    assert score.gt == 1 and score.rule == 1 and score.success
    # Fields still report what actually matched; the title needs no embedding (same product).
    assert score.price_rate == 0 and score.service_rate == 0 and score.title_rate == 1
    assert embedder.calls == []


def test_target_with_nothing_to_check_scores_zero() -> None:
    score = judge(target("t"), product("p"))
    assert score.checks == 0 and score.rule == 0
    assert judge(target("t"), product("t")).rule == 1


def test_rule_is_exact_for_thirds() -> None:
    # 1/3 + 1/3 + 1/3 in floats is 1.0, but 0.1 * 3 style sums can fall short: fractions never do.
    problem = product_problem(target("t", service=["official", "COD", "flashsale"]))
    item = product("p", service=["official", "COD", "flashsale"])
    score = score_attempt(problem, answered("p"), lookup(item), FakeEmbedder())
    assert score.targets[0].rule_exact == 1 and score.success
