"""Voucher arithmetic and the ``budget`` grade (SPEC 2)."""

from __future__ import annotations

import pytest

from shoppingbench.problems.models import Voucher
from shoppingbench.scoring import fits_budget, price_after_voucher, score_attempt
from shoppingbench.scoring.budget import basket_total
from tests.shoppingbench.scoring.test_scoring_support import (
    FakeEmbedder,
    answered,
    lookup,
    product,
    target,
    voucher_problem,
)


def voucher(**fields: object) -> Voucher:
    base = {
        "voucher_type": "platform",
        "threshold": 0,
        "discount_type": "fixed",
        "face_value": 0,
        "budget": 0,
    }
    return Voucher.model_validate({**base, **fields})


def test_total_within_budget_fits_without_voucher() -> None:
    assert fits_budget([60.0, 40.0], {"a", "b"}, voucher(voucher_type="shop", threshold=1000, budget=100))


def test_threshold_is_inclusive() -> None:
    fixed = voucher(threshold=100, face_value=20, budget=80)
    assert fits_budget([100.0], {"a"}, fixed)
    assert not fits_budget([99.99], {"a"}, voucher(threshold=100, face_value=20, budget=79.99))


def test_below_threshold_no_discount() -> None:
    fixed = voucher(threshold=100, face_value=50, budget=60)
    assert price_after_voucher(90.0, {"a"}, fixed) is None
    assert not fits_budget([90.0], {"a"}, fixed)


def test_fixed_voucher_subtracts_face_value() -> None:
    fixed = voucher(threshold=75, face_value=24, budget=151)
    assert price_after_voucher(175.0, {"a"}, fixed) == 151
    assert fits_budget([100.0, 75.0], {"a", "b"}, fixed)
    assert not fits_budget([100.0, 75.01], {"a", "b"}, fixed)


@pytest.mark.parametrize(
    ("total", "expected"),
    [
        (1000.0, 900.0),  # 50% would save 500, the cap of 100 binds
        (100.0, 50.0),  # 50% saves 50, under the cap
    ],
)
def test_percentage_voucher_capped_saving(total: float, expected: float) -> None:
    percent = voucher(discount_type="percentage", face_value=None, discount=0.5, cap=100, budget=0)
    assert price_after_voucher(total, {"a"}, percent) == expected


def test_percentage_cap_decides_fit() -> None:
    percent = voucher(discount_type="percentage", face_value=None, discount=0.5, cap=100, budget=900)
    assert fits_budget([1000.0], {"a"}, percent)
    assert not fits_budget([1000.02], {"a"}, percent)


def test_shop_voucher_needs_one_shop() -> None:
    shop = voucher(voucher_type="shop", threshold=10, face_value=50, budget=100)
    assert fits_budget([70.0, 70.0], {"s1"}, shop)
    assert not fits_budget([70.0, 70.0], {"s1", "s2"}, shop)
    platform = voucher(voucher_type="platform", threshold=10, face_value=50, budget=100)
    assert fits_budget([70.0, 70.0], {"s1", "s2"}, platform)


def test_money_is_added_in_floats_as_the_reference_scorer_adds_it() -> None:
    """``ProblemScorer._eval_voucher`` adds ``product["price"]`` floats: 436.11 + 603.23 + 24.66 is
    1064.0000000000002, over a budget of 1064, although the decimal total fits."""
    assert not fits_budget([436.11, 603.23, 24.66], {"a"}, voucher(budget=1064))
    assert not fits_budget([0.1, 0.2], {"a"}, voucher(budget=0.3))
    assert fits_budget([436.11, 603.23, 24.66], {"a"}, voucher(budget=1064.01))


def test_the_discount_applies_to_the_float_total() -> None:
    # 1064.0000000000002 - 0 face value is still over 1064: the voucher does not rescue it either.
    assert not fits_budget([436.11, 603.23, 24.66], {"a"}, voucher(threshold=1000, face_value=0, budget=1064))
    assert fits_budget([436.11, 603.23, 24.66], {"a"}, voucher(threshold=1000, face_value=1, budget=1064))


def test_prices_are_added_left_to_right_without_compensation() -> None:
    # The reference's ``total_price += price``: 1e16 + 1 rounds back to 1e16; a compensated sum
    # (``sum`` from Python 3.12) would keep the 1.
    assert basket_total([1e16, 1.0, -1e16]) == 0.0
    assert basket_total([]) == 0.0


def test_a_voucher_attempt_at_a_float_boundary_fails_its_budget() -> None:
    problem = voucher_problem(target("a"), target("b"), target("c"), budget=1064)
    catalog = lookup(product("a", price=436.11), product("b", price=603.23), product("c", price=24.66))
    score = score_attempt(problem, answered("a,b,c"), catalog, FakeEmbedder())
    assert score.rule == 1 and score.budget is False and not score.success


def test_budget_needs_every_target_hit() -> None:
    problem = voucher_problem(target("t1", service=["COD"]), target("t2", service=["COD"]), budget=1000)
    catalog = lookup(product("a", service=["COD"]), product("b", service=[]))
    score = score_attempt(problem, answered("a,b"), catalog, FakeEmbedder())
    assert score.rule == 0.5 and score.budget is False and not score.success


def test_voucher_problem_succeeds_after_discount() -> None:
    problem = voucher_problem(
        target("t1", service=["COD"]),
        target("t2", service=["COD"]),
        voucher_type="shop",
        threshold=150,
        discount_type="percentage",
        face_value=None,
        discount=0.2,
        cap=30,
        budget=175,
    )
    same_shop = lookup(product("a", price=100.0, service=["COD"]), product("b", price=100.0, service=["COD"]))
    score = score_attempt(problem, answered("a,b"), same_shop, FakeEmbedder())
    assert score.budget is True and score.success and score.shop is None
    split = lookup(
        product("a", price=100.0, service=["COD"]), product("b", shop="s2", price=100.0, service=["COD"])
    )
    assert score_attempt(problem, answered("a,b"), split, FakeEmbedder()).budget is False
