"""The knobs of the default generator ("sbgen-2"): ShoppingBench's own sampling (``run_synthesize.py``).

Every default is the reference's; the fields exist so a test or a study can name what it varies, and
so the configuration digest in the generator's key says exactly what drew a suite. The two deviations
from the reference (values nobody can state, items that would read alike) are named here too.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

IntRange = tuple[int, int]
FloatRange = tuple[float, float]


class GeneratorConfig(BaseModel):
    """How "sbgen-2" samples problems. The defaults are the reference's and the race configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    multiplier: int = Field(default=1, ge=1)
    """Each sku option, attribute, service and price mode is kept when ``randint(0, multiplier) == 1``
    (the reference's multiplier 1: probability 1/2)."""
    shop_items: IntRange = (2, 4)
    """Items of one shop a shop problem asks for (uniform in the range)."""
    platform_voucher_items: IntRange = (1, 4)
    """Items, drawn from the whole catalog, a platform-voucher problem asks for."""
    shop_voucher_items: IntRange = (2, 4)
    """Items of one shop a shop-voucher problem asks for."""
    shop_voucher_odds: float = Field(default=0.5, ge=0, le=1)
    """Chance that a voucher problem's voucher is a shop voucher (else a platform voucher)."""
    voucher_min_total: float = Field(default=100, ge=0)
    """A voucher basket whose total price is below this is redrawn."""
    threshold_share: FloatRange = (0.1, 0.9)
    """The voucher threshold is ``randint(int(T * low), int(T * high))`` for the basket total ``T``."""
    fixed_discount_odds: float = Field(default=0.5, ge=0, le=1)
    """Chance of a fixed discount (else a percentage discount)."""
    face_share: FloatRange = (0.1, 0.5)
    """A fixed discount's face value is ``randint(int(th * low), int(th * high))`` for threshold ``th``."""
    discount_percent: IntRange = (10, 50)
    """A percentage discount, in whole percent; its cap is ``randint(int(th * d), th)``, kept only when
    ``cap > th * d`` (else the whole problem is redrawn, as in the reference)."""
    budget_slack: float = Field(default=0.1, ge=0)
    """The budget is ``ceil(pav) + randint(0, ceil(pav * budget_slack))`` (pav: price after voucher)."""
    max_value_chars: int = Field(default=40, ge=1)
    """DEVIATION (unstatable values): sku and attribute values longer than this, multi-line, without a
    letter or digit, or junk ("n/a", "none", ...) are never stated; an attribute or sku option left
    with none is passed over without a draw."""
    distinct_phrases: bool = True
    """DEVIATION (items that read alike): a request whose two items the writer words identically is
    redrawn, since nobody could tell which answer goes with which item."""
    alternatives_weighed: int = Field(default=5, ge=0)
    """When the target is not listed, the listed products (in listing order) that meet every stated
    constraint but the title whose titles the solvability check embeds, at most: bounds its cost."""
    candidates_per_problem: int = Field(default=25, ge=1)
    """Candidates tried per wanted problem before a category is taken as exhausted."""
    sample_size: int = Field(default=256, ge=1)
    """Products examined (at evenly spaced ranks) to estimate :meth:`ProblemGenerator.space`."""

    @model_validator(mode="after")
    def _ranges_are_ordered(self) -> GeneratorConfig:
        for name in ("shop_items", "platform_voucher_items", "shop_voucher_items", "threshold_share",
                     "face_share", "discount_percent"):
            low, high = getattr(self, name)
            if low > high or low < 0:
                raise ValueError(f"{name} must be (low, high) with 0 <= low <= high, got {(low, high)}")
        if self.shop_items[0] < 2 or self.shop_voucher_items[0] < 2:
            raise ValueError("a problem of one shop needs at least 2 items")
        if self.platform_voucher_items[0] < 1:
            raise ValueError("platform_voucher_items starts at 1")
        if self.threshold_share[1] > 1 or self.face_share[1] > 1 or self.discount_percent[1] > 100:
            raise ValueError("threshold_share and face_share are shares (<= 1), discount_percent <= 100")
        return self
