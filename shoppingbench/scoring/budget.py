"""Does a basket fit a voucher problem's budget? (SPEC 2; original ``run_evaluate.py::eval_voucher``.)

Money is compared exactly on the decimal values as written (``Fraction(repr(x))``): in floats,
prices 0.1 + 0.2 would exceed a budget of 0.3. The original uses floats; the two only differ in
such last-digit cases.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from fractions import Fraction

from shoppingbench.problems.models import Voucher


def exact(amount: float) -> Fraction:
    """The decimal amount as written (the shortest repr of the float), as an exact fraction."""
    return Fraction(repr(float(amount)))


def price_after_voucher(total: Fraction, shop_ids: Collection[str], voucher: Voucher) -> Fraction | None:
    """The discounted total, or ``None`` when the voucher does not apply.

    Applies to a platform voucher, or a shop voucher whose products all come from one shop; the
    total must reach the threshold: ``total >= threshold`` as in the original and SPEC 2, even
    though the generated queries say "exceeds". Fixed: ``total - face_value``. Percentage:
    ``max(total * (1 - discount), total - cap)`` (the cap limits the saving).
    """
    if voucher.voucher_type == "shop" and len(set(shop_ids)) != 1:
        return None
    if total < exact(voucher.threshold):
        return None
    if voucher.discount_type == "fixed":
        assert voucher.face_value is not None  # Voucher validates this
        return total - exact(voucher.face_value)
    assert voucher.discount is not None and voucher.cap is not None  # Voucher validates these
    return max(total * (1 - exact(voucher.discount)), total - exact(voucher.cap))


def fits_budget(prices: Sequence[float], shop_ids: Collection[str], voucher: Voucher) -> bool:
    """The basket's total is within budget as is, or after the voucher applies (original order)."""
    total = sum((exact(p) for p in prices), Fraction(0))
    budget = exact(voucher.budget)
    if total <= budget:
        return True
    discounted = price_after_voucher(total, shop_ids, voucher)
    return discounted is not None and discounted <= budget
