"""The generator's version and knobs.

``GENERATOR_VERSION`` names the output format: any change that alters a generated problem's bytes for
the same catalog, seed and configuration must bump it (validators compare it before racing together).
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

GENERATOR_VERSION: Final = "sbgen-1"

IntRange = tuple[int, int]
FloatRange = tuple[float, float]


class GeneratorConfig(BaseModel):
    """How problems are drawn and worded. The defaults are the race configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    product_constraints: IntRange = (1, 3)
    """Constraints stated for the target of a product problem (before extra detail on retries)."""
    item_constraints: IntRange = (0, 2)
    """Constraints stated per item of a shop or voucher problem."""
    shop_items: IntRange = (2, 4)
    """Items of one shop a shop problem asks for."""
    voucher_items: IntRange = (1, 3)
    """Items a voucher problem asks for."""
    voucher_one_shop_odds: float = Field(default=0.4, ge=0, le=1)
    """Chance that a multi-item voucher basket comes from one shop with a shop voucher."""
    price_low_factor: FloatRange = (0.5, 0.95)
    """A stated lower price bound is the price times a factor from this range (floored)."""
    price_high_factor: FloatRange = (1.05, 1.6)
    """A stated upper price bound is the price times a factor from this range (ceiled)."""
    type_words: IntRange = (2, 4)
    """Length of the title span that names the item ("insulated water bottle")."""
    detail_levels: int = Field(default=3, ge=1, le=5)
    """Descriptions tried per candidate; each level adds a distinguishing title word or constraint."""
    detail_odds: float = Field(default=0.25, ge=0, le=1)
    """Chance that a first description already carries a distinguishing title word."""
    brand_odds: float = Field(default=0.35, ge=0, le=1)
    """Chance that an item's brand (when its title or attributes carry it) opens its description."""
    candidates_per_problem: int = Field(default=25, ge=1)
    """Candidates tried per wanted problem before a category is taken as exhausted."""
    shop_sample: int = Field(default=48, ge=2)
    """Products of a shop looked at when picking a shop problem's other items."""
    max_value_chars: int = Field(default=40, ge=1)
    """Longer sku/attribute values (free text rather than a value) are never stated as constraints."""
    sample_size: int = Field(default=256, ge=1)
    """Products examined (at evenly spaced ranks) to estimate :meth:`ProblemGenerator.space`."""

    @model_validator(mode="after")
    def _ranges_are_ordered(self) -> GeneratorConfig:
        for name in ("product_constraints", "item_constraints", "shop_items", "voucher_items",
                     "price_low_factor", "price_high_factor", "type_words"):
            low, high = getattr(self, name)
            if low > high or low < 0:
                raise ValueError(f"{name} must be (low, high) with 0 <= low <= high, got {(low, high)}")
        if self.shop_items[0] < 2:
            raise ValueError("a shop problem needs at least 2 items")
        if self.voucher_items[0] < 1 or self.type_words[0] < 1:
            raise ValueError("voucher_items and type_words start at 1")
        if not (self.price_low_factor[1] <= 1 <= self.price_high_factor[0]):
            raise ValueError("price factors must keep the price inside its range (low <= 1 <= high)")
        return self
