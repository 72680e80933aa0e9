"""The search tools' contract: parameters, result shapes and the engine interface (SPEC 2).

The tool server, the sandbox proxy and the scorers all speak through :class:`SearchEngine`; the
BM25 implementation behind it can be swapped without touching them.
"""

from __future__ import annotations

import re
from typing import Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shoppingbench.catalog.models import SERVICES, Product

PAGE_SIZE: Final = 10
MAX_PAGE: Final = 5
MAX_RESULTS: Final = PAGE_SIZE * MAX_PAGE
"""The reference keeps at most this many filtered products before sorting and paging."""
TOP_HITS: Final = 10_000
"""The reference ranks at most this many BM25 hits before applying filters."""

SortOrder = Literal["priceasc", "pricedesc", "order"]

_NUMBER = r"\s*(\d+(?:\.\d+)?|\.\d+)?\s*"
_PRICE_RANGE = re.compile(rf"^{_NUMBER}-{_NUMBER}$")


class PriceRange(BaseModel):
    """Inclusive price bounds; either side may be open."""

    model_config = ConfigDict(frozen=True)

    low: float | None = None
    high: float | None = None

    @classmethod
    def parse(cls, text: str) -> PriceRange:
        """Parse ``"lo-hi"``, ``"lo-"`` or ``"-hi"``; raise ``ValueError`` naming the problem."""
        match = _PRICE_RANGE.match(text)
        if match is None:
            raise ValueError(
                f"price must look like 'low-high', 'low-' or '-high' with non-negative numbers, got {text!r}"
            )
        low, high = (float(side) if side else None for side in match.groups())
        if low is not None and high is not None and low > high:
            raise ValueError(f"price range {text!r} has its low bound above its high bound")
        return cls(low=low, high=high)

    def contains(self, price: float) -> bool:
        return (self.low is None or price >= self.low) and (self.high is None or price <= self.high)


class FindProductQuery(BaseModel):
    """Validated ``find_product`` parameters.

    ``page`` outside 1..5 is valid input that yields an empty page (SPEC 2), not an error.
    """

    model_config = ConfigDict(frozen=True)

    q: str = Field(max_length=2_000)
    page: int = 1
    shop_id: str | None = None
    price: PriceRange | None = None
    sort: SortOrder | None = None
    service: tuple[str, ...] = ()

    @field_validator("shop_id", mode="before")
    @classmethod
    def _blank_shop_is_none(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and not value:
            return None  # only empty: " " is a shop id like any other, which no product has
        return value

    @field_validator("price", mode="before")
    @classmethod
    def _parse_price(cls, value: object) -> object:
        if isinstance(value, str):
            return None if not value.strip() else PriceRange.parse(value)
        return value

    @field_validator("sort", mode="before")
    @classmethod
    def _blank_sort_is_relevance(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in {"", "relevance", "default"}:
            return None
        return value

    @field_validator("service", mode="before")
    @classmethod
    def _parse_services(cls, value: object) -> object:
        if value is None:
            return ()
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple):
            unknown = [s for s in value if s not in SERVICES]
            if unknown:
                raise ValueError(f"unknown service {unknown[0]!r}; allowed: {', '.join(SERVICES)}")
            return tuple(dict.fromkeys(value))
        return value

    @property
    def page_in_range(self) -> bool:
        return 1 <= self.page <= MAX_PAGE


class SearchHit(BaseModel):
    """What ``find_product`` returns for each product: these six fields and nothing else."""

    product_id: str
    shop_id: str
    title: str
    price: float
    service: list[str]
    sold_count: int

    @classmethod
    def of(cls, product: Product) -> SearchHit:
        return cls(product_id=product.product_id, shop_id=product.shop_id, title=product.title,
                   price=product.price, service=list(product.service), sold_count=product.sold_count)


class ProductInformation(BaseModel):
    """What ``view_product_information`` returns for each id found."""

    product_id: str
    short_description: str
    description: str
    sku_options: dict[str, dict[str, str]]
    attributes: dict[str, list[str]]

    @classmethod
    def of(cls, product: Product) -> ProductInformation:
        return cls(product_id=product.product_id, short_description=product.short_description,
                   description=product.description, sku_options=product.sku_options,
                   attributes=product.attributes)


def split_product_ids(text: str) -> list[str]:
    """Comma-separated ids as agents send them: stripped, blanks dropped, order kept, de-duplicated."""
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


class SearchEngine(Protocol):
    """The catalog as the tools see it."""

    def find_product(self, query: FindProductQuery) -> list[SearchHit]:
        """One page of products, ranked and filtered exactly like the reference (SPEC 2)."""
        ...

    def view_product_information(self, product_ids: list[str]) -> list[ProductInformation]:
        """Details for each id found, in the order asked; unknown ids are skipped."""
        ...

    def get_product(self, product_id: str) -> Product | None:
        """The full stored product, for scorers."""
        ...

    def get_products(self, product_ids: list[str]) -> dict[str, Product]:
        """Full stored products for the ids found, keyed by id."""
        ...

    def __len__(self) -> int:
        """Number of products in the catalog."""
        ...
