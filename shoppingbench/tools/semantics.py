"""The search tools' semantics, once: raw arguments read as the reference server reads them, over any engine.

Both the HTTP tool server (``shoppingbench.tools.server``, behind the verified proxy) and the training
environment (``trajectories.training.stages.environment``) call these pure functions, so a model sees the same
answer to the same arguments wherever it runs, and the same as on the reference arena's server.

Arguments arrive as the reference's ``request.args`` would hold them: text, or missing. A JSON body or a
tool call may carry numbers, booleans or lists instead; they are read as the text a query string would
carry (``str(value)``, a list joined by commas). Then, exactly as the reference (``src/search_engine/
server.py`` of the SN15 arena):

- ``page``: decimal digits naming 1..5, else the answer is ``[]`` (``abc``, ``2.0``, ``0``, missing);
- ``price``: split on ``-``; exactly two parts, each a ``float()`` or open (``₱100-3000`` keeps only its
  high bound, ``3000-100`` matches nothing); no ``-``, or more than one, means no price filter;
- ``sort``: ``order``, ``priceasc`` or ``pricedesc``, anything else is relevance;
- ``service``: split on ``,`` (not stripped); unknown values are dropped, repeats kept once;
- ``shop_id``: any non-empty text is compared exactly with the product's shop id;
- ``q``: missing or empty gives ``[]``;
- ``product_ids``: split on ``,`` (not stripped), unknown ids skipped, repeats answered again.

What is refused (:class:`ToolRefusal`, a 422 on the server) guards this process, not the semantics: text
that is not valid Unicode, a ``q`` longer than the engine takes, more than ``MAX_VIEW_IDS`` ids.
"""

from __future__ import annotations

import math
from typing import Final

from pydantic import ValidationError

from shoppingbench.catalog.models import SERVICES
from shoppingbench.search.base import (
    MAX_PAGE,
    FindProductQuery,
    PriceRange,
    ProductInformation,
    SearchEngine,
    SearchHit,
    SortOrder,
)

RawArgument = str | int | float | bool | list[str | int | float] | None
"""A tool argument as an agent may send it: query-string text, or a JSON value."""

MAX_VIEW_IDS: Final = 1_000
"""More ids than this in one ``view_product_information`` call is refused: no agent needs it."""

SORT_ORDERS: Final[frozenset[SortOrder]] = frozenset({"order", "priceasc", "pricedesc"})


class ToolRefusal(ValueError):
    """Arguments the tools refuse; the message names the argument and never echoes it."""


def as_text(value: RawArgument) -> str | None:
    """The text a query string would carry for ``value``; ``None`` when the argument is missing."""
    if value is None:
        return None
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolRefusal("text must be valid Unicode (it contains a lone surrogate)") from None
    return text


def page_of(text: str | None) -> int | None:
    """The page, or ``None`` when the reference answers ``[]`` for it."""
    if not text or not text.isdigit():
        return None
    try:
        page = int(text)
    except ValueError:  # a digit int() does not read ("²"): the reference fails with a 500, we answer []
        return None
    return page if 1 <= page <= MAX_PAGE else None


def _bound(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value  # a NaN bound filters nothing on the reference


def price_of(text: str | None) -> PriceRange | None:
    """The price filter, or ``None`` for none; low above high is kept (it matches nothing)."""
    if not text or text.count("-") != 1:
        return None
    low, high = (_bound(side) for side in text.split("-"))
    return None if low is None and high is None else PriceRange(low=low, high=high)


def sort_of(text: str | None) -> SortOrder | None:
    return text if text in SORT_ORDERS else None


def services_of(text: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part for part in (text or "").split(",") if part in SERVICES))


def find_product(engine: SearchEngine, *, q: RawArgument = None, page: RawArgument = None,
                 shop_id: RawArgument = None, price: RawArgument = None, sort: RawArgument = None,
                 service: RawArgument = None) -> list[SearchHit]:
    """One page of ``find_product`` for raw arguments, as the reference answers them."""
    query_text, page_number = as_text(q), page_of(as_text(page))
    shop, price_text, sort_text, service_text = (as_text(v) for v in (shop_id, price, sort, service))
    if not query_text or page_number is None:
        return []
    try:
        query = FindProductQuery(q=query_text, page=page_number, shop_id=shop or None,
                                 price=price_of(price_text), sort=sort_of(sort_text),
                                 service=services_of(service_text))
    except ValidationError as exc:  # only the engine's bound on q's length is left to fail
        raise ToolRefusal("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(
            include_url=False, include_context=False, include_input=False))) from None
    return engine.find_product(query)


def product_ids_of(value: RawArgument) -> list[str]:
    """The ids of a ``product_ids`` argument as the reference splits them; a missing one is refused."""
    text = as_text(value)
    if text is None:
        raise ToolRefusal("product_ids: a comma-separated list of product ids is required")
    ids = text.split(",")
    if len(ids) > MAX_VIEW_IDS:
        raise ToolRefusal(f"product_ids: at most {MAX_VIEW_IDS} product ids per call, got {len(ids)}")
    return ids


def view_product_information(engine: SearchEngine, product_ids: RawArgument) -> list[ProductInformation]:
    """``view_product_information`` for a raw ``product_ids``, as the reference answers it."""
    return engine.view_product_information([pid for pid in product_ids_of(product_ids) if pid])
