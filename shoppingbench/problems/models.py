"""Typed ShoppingBench problems: product, shop and voucher requests with verifiable rewards (SPEC 2).

The models mirror the public file format (``{"query", "reward", "voucher"?}``) so that a problem
read from ShoppingBench JSONL or the reference arena's suite JSON writes back unchanged.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Category = Literal["product", "shop", "voucher"]
CATEGORIES: tuple[Category, ...] = ("product", "shop", "voucher")
PriceRelation = Literal["less than", "greater than", "between"]


class PriceCondition(BaseModel):
    """One stated price constraint, bounds inclusive."""

    model_config = ConfigDict(frozen=True)

    relation: PriceRelation
    low: float | None = None
    high: float | None = None

    def satisfied_by(self, price: float) -> bool:
        return (self.low is None or price >= self.low) and (self.high is None or price <= self.high)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    if not math.isfinite(number):
        # A NaN or infinite bound would make the target unsatisfiable or the check meaningless.
        raise ValueError(f"a price bound must be a finite number, got {value!r}")
    return number


def parse_price_condition(
    raw: Mapping[str, Sequence[float | None]] | Mapping[PriceRelation, Sequence[float | None]],
) -> PriceCondition:
    """Read ``{"between": [lo, hi]}``, ``{"greater than": [lo, null]}`` or ``{"less than": [.., hi]}``."""
    if len(raw) != 1:
        raise ValueError(f"a price condition has exactly one relation, got {sorted(raw)}")
    relation, bounds = next(iter(raw.items()))
    numbers = [_number(b) for b in bounds]
    if relation == "between":
        if len(numbers) != 2 or None in numbers:
            raise ValueError(f"'between' needs two bounds, got {bounds}")
        return PriceCondition(relation="between", low=numbers[0], high=numbers[1])
    present = [n for n in numbers if n is not None]
    if len(present) != 1:
        raise ValueError(f"{relation!r} needs exactly one bound, got {bounds}")
    if relation == "greater than":
        return PriceCondition(relation="greater than", low=present[0])
    if relation == "less than":
        return PriceCondition(relation="less than", high=present[0])
    raise ValueError(f"unknown price relation {relation!r}")


class RewardTarget(BaseModel):
    """One product the user asked for and the constraints the query states about it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    product_id: str = Field(min_length=1)
    title: list[str] = Field(default_factory=list)
    sku_options: list[dict[str, str]] = Field(default_factory=list)
    attributes: list[dict[str, list[str]]] = Field(default_factory=list)
    service: list[str] = Field(default_factory=list)
    price: list[dict[PriceRelation, list[float | None]]] = Field(default_factory=list)

    @field_validator("product_id", mode="before")
    @classmethod
    def _id_is_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("title", mode="before")
    @classmethod
    def _title_is_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("price")
    @classmethod
    def _prices_parse(cls, value: list[dict[PriceRelation, list[float | None]]]) -> Any:
        for raw in value:
            parse_price_condition(raw)
        return value

    def price_conditions(self) -> list[PriceCondition]:
        return [parse_price_condition(raw) for raw in self.price]


class Voucher(BaseModel):
    """The voucher and budget of a voucher problem."""

    # Infinite or NaN money would make every budget comparison meaningless.
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    voucher_type: Literal["platform", "shop"]
    threshold: float = Field(ge=0)
    discount_type: Literal["fixed", "percentage"]
    face_value: float | None = Field(default=None, ge=0)
    discount: float | None = None
    cap: float | None = Field(default=None, ge=0)
    budget: float = Field(ge=0)
    price_after_voucher: float | None = None

    @model_validator(mode="after")
    def _discount_matches_kind(self) -> Voucher:
        if self.discount_type == "fixed" and self.face_value is None:
            raise ValueError("a fixed voucher needs face_value")
        if self.discount_type == "percentage":
            if self.discount is None or not 0 <= self.discount <= 1:
                raise ValueError("a percentage voucher needs discount as a fraction in [0, 1]")
            if self.cap is None:
                raise ValueError("a percentage voucher needs cap")
        return self


class Problem(BaseModel):
    """One request with its verifiable reward. ``id`` is a content hash unless given."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = ""
    category: Category
    query: str = Field(min_length=1)
    targets: list[RewardTarget] = Field(min_length=1)
    voucher: Voucher | None = None
    difficulty: str | None = None
    title: str | None = None
    reward_title_embeddings: dict[str, list[float]] | None = None

    @model_validator(mode="after")
    def _shape_matches_category(self) -> Problem:
        if self.category == "product" and len(self.targets) != 1:
            raise ValueError("a product problem has exactly one target")
        if (self.category == "voucher") != (self.voucher is not None):
            raise ValueError("a voucher problem, and only a voucher problem, carries a voucher")
        if not self.id:
            object.__setattr__(self, "id", content_id(self.category, self.query, self.reward_json()))
        return self

    def reward_json(self) -> Any:
        """The ``reward`` field as ShoppingBench writes it: one object for product problems, else a list."""
        dumped = [t.model_dump(exclude_defaults=True) for t in self.targets]
        return dumped[0] if self.category == "product" else dumped

    def to_shoppingbench(self) -> dict[str, Any]:
        """The ShoppingBench JSONL object for this problem."""
        out: dict[str, Any] = {"query": self.query, "reward": self.reward_json()}
        if self.voucher is not None:
            out["voucher"] = self.voucher.model_dump()
        return out

    def public_view(self) -> dict[str, Any]:
        """What an agent is allowed to see: never the reward, nor anything computed from it.

        The keys of the reference arena's problem dict (its validator passes the suite entry minus
        ``reward`` and ``voucher``): ``problem_id``, ``query``, ``category`` spelled as there
        (``Product``, ``Shop``, ``Voucher``), ``difficulty`` and ``title`` (``None`` when the problem has
        none), plus our ``id``. ``problem_id`` and ``id`` are not the content id (a hash of the reward: an
        agent could hash candidate answers until one matched) but a keyed hash of it under a key this
        process drew at start, so they still name the problem in logs while revealing nothing about the
        answer. ``reward_title_embeddings`` are computed from the reward and never given.
        """
        shown = public_id(self.id)
        return {"problem_id": shown, "id": shown, "query": self.query,
                "category": REFERENCE_CATEGORY[self.category], "difficulty": self.difficulty,
                "title": self.title}

    @classmethod
    def from_shoppingbench(cls, raw: dict[str, Any], category: Category | None = None) -> Problem:
        """Build from a ShoppingBench line or a reference-arena suite entry.

        The category comes from ``category`` (``Product``/``Shop``/``Voucher`` in suite files), the
        argument, or the shape: a voucher means voucher, a list reward means shop.
        """
        if not isinstance(raw, dict):
            raise ValueError(f"a problem is a JSON object, got {type(raw).__name__}")
        reward = raw.get("reward")
        if reward is None:
            raise ValueError("missing 'reward'")
        stated = raw.get("category")
        if isinstance(stated, str) and stated.strip():
            resolved = stated.strip().lower()
        elif category is not None:
            resolved = category
        elif raw.get("voucher") is not None:
            resolved = "voucher"
        else:
            resolved = "shop" if isinstance(reward, list) else "product"
        targets = reward if isinstance(reward, list) else [reward]
        fields = {k: raw[k] for k in ("id", "query", "voucher", "difficulty", "title",
                                      "reward_title_embeddings") if raw.get(k) is not None}
        return cls.model_validate({**fields, "category": resolved, "targets": targets})


REFERENCE_CATEGORY: Final[dict[Category, str]] = {"product": "Product", "shop": "Shop", "voucher": "Voucher"}
"""How the reference arena spells each category in its suites and in the problem dict its agents get."""

_PUBLIC_ID_KEY = secrets.token_bytes(32)


def public_id(problem_id: str) -> str:
    """The id an agent sees for ``problem_id``: unlinkable to its content without this process's key."""
    return hmac.new(_PUBLIC_ID_KEY, problem_id.encode(), hashlib.sha256).hexdigest()[:16]


def content_id(category: str, query: str, reward: Any) -> str:
    """Stable problem id: a hash of what makes the problem, independent of key order."""
    canonical = orjson.dumps({"category": category, "query": query, "reward": reward},
                             option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()[:16]
