"""Voucher arithmetic and the ``budget`` grade (SPEC 2)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from shoppingbench.problems.models import Voucher
from shoppingbench.scoring import fits_budget, price_after_voucher, score_attempt
from tests.shoppingbench.scoring.test_scoring_support import (
    FakeEmbedder,
    answered,
    lookup,
    product,
    target,
    voucher_problem,
)


def voucher(**fields) -> Voucher:
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
    assert price_after_voucher(Fraction(90), {"a"}, fixed) is None
    assert not fits_budget([90.0], {"a"}, fixed)


def test_fixed_voucher_subtracts_face_value() -> None:
    fixed = voucher(threshold=75, face_value=24, budget=151)
    assert price_after_voucher(Fraction(175), {"a"}, fixed) == 151
    assert fits_budget([100.0, 75.0], {"a", "b"}, fixed)
    assert not fits_budget([100.0, 75.01], {"a", "b"}, fixed)


@pytest.mark.parametrize(
    ("total", "expected"),
    [
        (1000, Fraction(900)),  # 50% would save 500, the cap of 100 binds
        (100, Fraction(50)),  # 50% saves 50, under the cap
    ],
)
def test_percentage_voucher_capped_saving(total: int, expected: Fraction) -> None:
    percent = voucher(discount_type="percentage", face_value=None, discount=0.5, cap=100, budget=0)
    assert price_after_voucher(Fraction(total), {"a"}, percent) == expected


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


def test_money_is_exact_decimal() -> None:
    assert 0.1 + 0.2 > 0.3  # the float trap the scorer must not fall into
    assert fits_budget([0.1, 0.2], {"a"}, voucher(budget=0.3))


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
