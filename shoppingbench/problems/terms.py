"""The money terms of a request: a price range around a target's price, and a voucher that must be used.

Shared by the sample world's problem bank and the race-time generator. Both draw from a source of
randomness given by the caller (``random.Random`` or the generator's hash-derived draws), so the terms
are deterministic for a deterministic source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from shoppingbench.catalog.models import Product
from shoppingbench.problems.models import RewardTarget, Voucher

T = TypeVar("T")


class Draws(Protocol):
    """The random draws problem makers use (a subset of ``random.Random``'s methods)."""

    def random(self) -> float: ...

    def uniform(self, a: float, b: float) -> float: ...

    def randint(self, a: int, b: int) -> int: ...

    def choice(self, seq: Sequence[T]) -> T: ...

    def shuffle(self, x: list[Any]) -> None: ...


PriceConditionJSON = dict[str, list[float | None]]


def price_condition(price: float, rng: Draws, *, low_factor: tuple[float, float] = (0.5, 0.95),
                    high_factor: tuple[float, float] = (1.05, 1.6)) -> PriceConditionJSON:
    """A stated price range that contains ``price``: "greater than", "less than" or "between".

    The bounds are whole numbers drawn as ``price`` times a factor from ``low_factor`` / ``high_factor``.
    """
    low = math.floor(price * rng.uniform(*low_factor))
    high = math.ceil(price * rng.uniform(*high_factor))
    roll = rng.random()
    if roll < 0.35 and low >= 1:
        return {"greater than": [float(low), None]}
    if roll < 0.7:
        return {"less than": [None, float(high)]}
    return {"between": [float(max(low, 0)), float(high)]}


def make_voucher(prices: Sequence[float], *, shop: bool, rng: Draws) -> Voucher | None:
    """A voucher the basket ``prices`` can use, with a budget that only fits after the discount.

    ``shop`` makes it a shop voucher (the basket must come from one shop), else a platform voucher.
    ``None`` when no whole budget lies between the discounted and the full price (a discount of
    cents): such a basket cannot make a problem where the voucher matters.
    """
    total = round(sum(prices), 2)
    threshold = max(1, math.floor(total * rng.uniform(0.4, 0.98)))
    fields: dict[str, Any] = {"voucher_type": "shop" if shop else "platform", "threshold": threshold}
    if rng.random() < 0.5:
        face_value = max(1, round(total * rng.uniform(0.05, 0.35)))
        after = total - face_value
        fields |= {"discount_type": "fixed", "face_value": face_value, "discount": None, "cap": None}
    else:
        discount = rng.randint(5, 40) / 100
        full = total * discount
        cap = (rng.randint(max(1, math.ceil(full * 0.3)), max(1, math.floor(full))) if rng.random() < 0.4
               else math.ceil(full * rng.uniform(1.05, 3)))
        after = max(total * (1 - discount), total - cap)
        fields |= {"discount_type": "percentage", "face_value": None, "discount": discount, "cap": cap}
    # Any whole budget in [after, total) makes the voucher necessary and sufficient; lean tight.
    low, high = math.ceil(after - 1e-9), math.ceil(total) - 1
    if low > high:
        return None
    budget = low + int((high - low) * rng.random() ** 2)
    return Voucher.model_validate({**fields, "budget": budget, "price_after_voucher": round(after, 4)})


def stated_target(product: Product, *, sku: dict[str, str], attributes: list[dict[str, list[str]]],
                  services: list[str], prices: list[dict[str, list[float | None]]]) -> RewardTarget:
    """The reward target of ``product`` checking exactly what the request states about it."""
    reward: dict[str, Any] = {"product_id": product.product_id, "title": [product.title]}
    if sku:
        reward["sku_options"] = [sku]
    if attributes:
        reward["attributes"] = attributes
    if services:
        reward["service"] = services
    if prices:
        reward["price"] = prices
    return RewardTarget.model_validate(reward)
