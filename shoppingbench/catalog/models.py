"""Typed catalog records: a marketplace product and the ShoppingBench document that wraps it.

A ShoppingBench ``documents.jsonl`` line is ``{"id", "contents", "product"}`` (SPEC 2). ``contents``
is the only text the search engine indexes; ``product`` carries everything the tools return.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

SERVICES: Final[tuple[str, ...]] = ("official", "freeShipping", "COD", "flashsale")
"""The service flags a product may carry, in the order the reference uses."""


def _as_text(value: Any) -> Any:
    # Real dumps carry numeric ids in places; ids always compare as strings (SPEC 2).
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    return value


MAX_ID_LENGTH: Final = 256
"""Longest product / shop id accepted. Real ids are ~10 digits; the cap keeps one runaway id from
inflating per-document memory (ids are held for every product while indexing)."""


class Product(BaseModel):
    """One marketplace product exactly as the catalog stores it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    product_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    shop_id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    brand: str = ""
    category: str = ""
    title: str
    short_description: str = ""
    description: str = ""
    specification: str = ""
    price: float = Field(ge=0, allow_inf_nan=False)
    sold_count: int = Field(default=0, ge=0)
    sku_options: dict[str, dict[str, str]] = Field(default_factory=dict)
    attributes: dict[str, list[str]] = Field(default_factory=dict)
    main_image_url: str = ""
    product_url: str = ""
    service: list[str] = Field(default_factory=list)

    @field_validator("product_id", "shop_id", mode="before")
    @classmethod
    def _ids_are_text(cls, value: Any) -> Any:
        return _as_text(value)

    @field_validator("brand", "category", "short_description", "description", "specification",
                     "main_image_url", "product_url", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("sku_options", "attributes", mode="before")
    @classmethod
    def _none_is_empty_mapping(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("service", mode="before")
    @classmethod
    def _none_is_no_service(cls, value: Any) -> Any:
        return [] if value is None else value


class CatalogDocument(BaseModel):
    """One line of ``documents.jsonl``: the indexed text plus the product it describes."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    contents: str
    product: Product

    @field_validator("id", mode="before")
    @classmethod
    def _id_is_text(cls, value: Any) -> Any:
        return _as_text(value)


def build_contents(product: Product) -> str:
    """The ShoppingBench ``contents`` text: title, then sku values, then attribute values.

    Values are de-duplicated keeping first appearance so that a product with many sku
    variants does not repeat ``750ml`` once per variant (which would inflate BM25 tf).
    """

    def unique(values: list[str]) -> list[str]:
        return list(dict.fromkeys(v for v in values if v))

    sku_values = unique([v for option in product.sku_options.values() for v in option.values()])
    attribute_values = unique([v for values in product.attributes.values() for v in values])
    lines = [product.title, " ".join(sku_values), " ".join(attribute_values)]
    return "\n".join(lines)


def document_for(product: Product) -> CatalogDocument:
    """Wrap a product as the ShoppingBench document the importer and indexer consume."""
    return CatalogDocument(id=product.product_id, contents=build_contents(product), product=product)
