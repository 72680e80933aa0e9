"""What a tool answer returned, as the proxy records it: product ids, the fields the judge and the
structural filter read (title, price, shop, services, sku/attribute values, sold count, descriptions),
and the answer's digest.

The proxy reads these from the tool server's own response body before passing it on, so they are
verified: the agent cannot change what the log says a tool returned. The digest (sha256 of the full
body) lets anyone holding the catalog check that the recorded fields came from that answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, Final

import orjson

from shoppingbench.records import ReturnedProduct

MAX_VALUES_PER_PRODUCT: Final = 64
"""Sku option and attribute values kept per product (a real product has a handful)."""
MAX_VALUE_CHARS: Final = 100
MAX_TEXT_CHARS: Final = 2_000
"""Characters kept of a description (agents show the model a few hundred)."""


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict | list) else str(value)


def _price(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _option_values(raw: Any) -> Iterator[str]:
    """Values of ``sku_options`` (``{"1": {k: v}}``) and ``attributes`` (``{k: [v]}``)."""
    if isinstance(raw, str):
        yield raw
    elif isinstance(raw, list):
        for item in raw:
            yield from _option_values(item)
    elif isinstance(raw, dict):
        for item in raw.values():
            yield from _option_values(item)


def _values(item: dict[str, Any]) -> list[str]:
    raw = (*_option_values(item.get("sku_options")), *_option_values(item.get("attributes")))
    found = dict.fromkeys(v.strip().lower()[:MAX_VALUE_CHARS] for v in raw if v.strip())
    return list(found)[:MAX_VALUES_PER_PRODUCT]


def _keys(raw: Any) -> Iterator[str]:
    """Keys of ``sku_options`` (the option numbers and their keys) and ``attributes``."""
    if isinstance(raw, dict):
        for key, item in raw.items():
            yield str(key)
            yield from _keys(item)


def _texts(item: dict[str, Any]) -> list[str]:
    texts = [text[:MAX_TEXT_CHARS] for key in ("short_description", "description")
             if (text := _text(item.get(key)))]
    keys = " ".join(dict.fromkeys((*_keys(item.get("sku_options")), *_keys(item.get("attributes")))))
    return [*texts, keys[:MAX_TEXT_CHARS]] if keys else texts


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def returned_product(item: dict[str, Any]) -> ReturnedProduct:
    """One entry of a ``find_product`` hit list or a ``view_product_information`` answer."""
    service = item.get("service")
    return ReturnedProduct(
        product_id=str(item["product_id"]), title=_text(item.get("title")), price=_price(item.get("price")),
        shop_id=_text(item.get("shop_id")),
        service=[str(s) for s in service] if isinstance(service, list) else [], values=_values(item),
        sold_count=_count(item.get("sold_count")), texts=_texts(item))


def tool_results(body: bytes) -> list[ReturnedProduct]:
    """The products a successful tool answer (a JSON list of product objects) returned, in order."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(parsed, list):
        return []
    return [returned_product(item) for item in parsed if isinstance(item, dict) and "product_id" in item]


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
