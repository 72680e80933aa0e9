"""Does a basket fit a voucher problem's budget? (SPEC 2; reference arena ``ProblemScorer._eval_voucher``.)

Money is Python floats, summed one price at a time in target order and compared as the reference arena's
scorer compares it, because a validator must reach the reference's verdict on the same basket: prices
436.11 + 603.23 + 24.66 add up to 1064.0000000000002, over a budget of 1064, so that basket fails
although its decimal total fits (the original ``run_evaluate.py::eval_voucher`` adds floats the same way).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Sequence
from functools import reduce

from shoppingbench.problems.models import Voucher


def basket_total(prices: Sequence[float]) -> float:
    """The prices added left to right, as the reference's ``total_price += product["price"]`` does.

    Not ``sum``: from Python 3.12 it compensates float rounding, which would pass baskets the reference fails.
    """
    return reduce(operator.add, prices, 0.0)


def price_after_voucher(total: float, shop_ids: Collection[str], voucher: Voucher) -> float | None:
    """The discounted total, or ``None`` when the voucher does not apply.

    Applies to a platform voucher, or a shop voucher whose products all come from one shop; the
    total must reach the threshold: ``total >= threshold`` as in the reference and SPEC 2, even
    though the generated queries say "exceeds". Fixed: ``total - face_value``. Percentage:
    ``max(total * (1 - discount), total - cap)`` (the cap limits the saving).
    """
    if voucher.voucher_type == "shop" and len(set(shop_ids)) != 1:
        return None
    if total < voucher.threshold:
        return None
    if voucher.discount_type == "fixed":
        assert voucher.face_value is not None  # Voucher validates this
        return total - voucher.face_value
    assert voucher.discount is not None and voucher.cap is not None  # Voucher validates these
    return max(total * (1 - voucher.discount), total - voucher.cap)


def fits_budget(prices: Sequence[float], shop_ids: Collection[str], voucher: Voucher) -> bool:
    """The basket's total is within budget as is, or after the voucher applies (the reference's order)."""
    total = basket_total(prices)
    if total <= voucher.budget:
        return True
    discounted = price_after_voucher(total, shop_ids, voucher)
    return discounted is not None and discounted <= voucher.budget
