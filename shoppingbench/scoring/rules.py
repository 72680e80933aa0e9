"""One recommended product against one reward target: the ``gt`` and ``rule`` checks (SPEC 2).

Each rule names its source. "orm.py" is the original ShoppingBench ``src/agent/rewards/orm.py::
rule_score_reward``; "arena" is the reference arena's version of that function. Where they and
SPEC 2 disagree, SPEC 2 wins.
"""

from __future__ import annotations

from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.catalog.models import Product
from shoppingbench.problems.models import RewardTarget


class FieldTally(BaseModel):
    """Hits out of checks for one kind of constraint."""

    model_config = ConfigDict(frozen=True)

    hits: int = Field(ge=0)
    checks: int = Field(ge=0)

    @property
    def rate(self) -> float | None:
        """``hits / checks``; ``None`` when the target states nothing of this kind."""
        return self.hits / self.checks if self.checks else None


class TargetScore(BaseModel):
    """How the product recommended for one target fared."""

    model_config = ConfigDict(frozen=True)

    index: int
    target_product_id: str
    product_id: str | None
    """The id paired with this target; ``None`` when the answer had too few ids."""
    found: bool
    """The paired id exists in the catalog."""
    shop_id: str | None = None
    """Shop of the recommended product, when found."""
    product_price: float | None = None
    """Price of the recommended product, when found."""
    gt: bool
    title: FieldTally
    price: FieldTally
    service: FieldTally
    sku_attr: FieldTally
    title_similarities: list[float] = Field(default_factory=list)
    """Cosine similarity to each target title (empty when not computed: gt match or no product)."""

    @property
    def hits(self) -> int:
        return self.title.hits + self.price.hits + self.service.hits + self.sku_attr.hits

    @property
    def checks(self) -> int:
        return self.title.checks + self.price.checks + self.service.checks + self.sku_attr.checks

    @property
    def rule_exact(self) -> Fraction:
        """The rule score as an exact fraction, so ``>= 1`` can never fail on rounding.

        gt match -> 1 outright (orm.py); nothing to check -> 0 (SPEC 2; the arena agrees, orm.py
        would divide by zero); otherwise hits / checks.
        """
        if self.gt:
            return Fraction(1)
        return Fraction(self.hits, self.checks) if self.checks else Fraction(0)

    @property
    def rule(self) -> float:
        return float(self.rule_exact)


def attribute_pairs(target: RewardTarget) -> list[tuple[str, str]]:
    """Every (key, value) the target asks for: each sku pair, and each value of each attribute."""
    pairs = [(k, v) for option in target.sku_options for k, v in option.items()]
    pairs += [(k, v) for attribute in target.attributes for k, values in attribute.items() for v in values]
    return pairs


def sku_attr_hits(product: Product, pairs: list[tuple[str, str]]) -> int:
    """Pairs satisfied by the product's attributes or by ONE of its sku options, the best one.

    Exactly orm.py: a pair hits when it is among the attributes or in the chosen sku option; every
    option (and "no option", for products without skus) is tried and the most hits counts. So two
    pairs satisfied only by two different options count once, not twice: a buyer picks one variant.
    Matching is exact and case-sensitive (orm.py); SPEC 2 has catalog keys and values lower-case.
    """
    if not pairs:
        return 0
    attributes = {(k, v) for k, values in product.attributes.items() for v in values}
    options = [set(option.items()) for option in product.sku_options.values()]
    return max(sum(1 for pair in pairs if pair in attributes or pair in option)
               for option in [set(), *options])


def judge_target(index: int, target: RewardTarget, product_id: str | None, product: Product | None,
                 title_similarities: list[float], title_threshold: float) -> TargetScore:
    """Score one pairing. ``title_similarities`` must hold one value per target title unless the
    product is missing or is the target itself.

    - gt: ids equal (orm.py).
    - title: similarity >= threshold (orm.py, SPEC 2 "reaches"); on a gt match every title hits
      without embedding, as in the arena (same product, same title).
    - price: each condition with inclusive bounds (orm.py ``<=``/``>=``, SPEC 2).
    - service: each required flag must be in ``product.service`` (orm.py).
    - sku & attributes: see :func:`sku_attr_hits`.
    A missing product keeps the target's check counts with zero hits, so field rates still say
    what was asked and missed.
    """
    pairs = attribute_pairs(target)
    conditions = target.price_conditions()
    if product is None:
        return TargetScore(
            index=index, target_product_id=target.product_id, product_id=product_id, found=False, gt=False,
            title=FieldTally(hits=0, checks=len(target.title)),
            price=FieldTally(hits=0, checks=len(conditions)),
            service=FieldTally(hits=0, checks=len(target.service)),
            sku_attr=FieldTally(hits=0, checks=len(pairs)))
    gt = product.product_id == target.product_id
    title_hits = len(target.title) if gt else sum(1 for s in title_similarities if s >= title_threshold)
    return TargetScore(
        index=index, target_product_id=target.product_id, product_id=product.product_id, found=True,
        shop_id=product.shop_id, product_price=product.price, gt=gt,
        title=FieldTally(hits=title_hits, checks=len(target.title)),
        price=FieldTally(hits=sum(1 for c in conditions if c.satisfied_by(product.price)),
                         checks=len(conditions)),
        service=FieldTally(hits=sum(1 for s in target.service if s in product.service),
                           checks=len(target.service)),
        sku_attr=FieldTally(hits=sku_attr_hits(product, pairs), checks=len(pairs)),
        title_similarities=[] if gt else list(title_similarities))
