"""Pagination (``?page=&page_size=`` -> ``{items, page, page_size, total}``) and cache headers for the
site's JSON API and pages.

Every list endpoint takes :data:`PageDep` and answers a :class:`Page`; ``page`` is at most
:data:`MAX_PAGE` and ``page_size`` at most :data:`MAX_PAGE_SIZE` (422 past either, naming the bound, so
no offset a store cannot hold reaches a query); :func:`cached_json` serialises the
answer once, sets ``Cache-Control`` (public, ``max-age``) and a strong ``ETag`` over the body, and answers
``304 Not Modified`` when the client's ``If-None-Match`` already names it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Final, Generic, TypeVar

from fastapi import Depends, Query, Request, Response
from pydantic import BaseModel, Field

DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 200
MAX_PAGE: Final = 1_000_000
"""The highest page number any list endpoint answers (its offset, at most 2e8 items, fits every store)."""
LIVE_MAX_AGE: Final = 30
"""Seconds a client or proxy may reuse an answer that changes as the race log grows."""
IMMUTABLE_MAX_AGE: Final = 86_400
"""Seconds for answers that never change once they exist (a finished attempt, an exported dump day)."""

T = TypeVar("T")


@dataclass(frozen=True)
class PageParams:
    """Which page of a list a request asks for (1-based)."""

    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size

    @property
    def limit(self) -> int:
        return self.page_size


def page_params(
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description="1-based page number")] = 1,
    page_size: Annotated[
        int, Query(ge=1, le=MAX_PAGE_SIZE, description="Items per page")
    ] = DEFAULT_PAGE_SIZE,
) -> PageParams:
    """The ``?page=&page_size=`` query parameters (422 when out of range: below 1, ``page`` above
    :data:`MAX_PAGE`, ``page_size`` above :data:`MAX_PAGE_SIZE`)."""
    return PageParams(page=page, page_size=page_size)


PageDep = Annotated[PageParams, Depends(page_params)]


class Page(BaseModel, Generic[T]):
    """One page of a list, with the list's total length."""

    items: list[T]
    page: int = Field(ge=1, le=MAX_PAGE)
    page_size: int = Field(ge=1, le=MAX_PAGE_SIZE)
    total: int = Field(ge=0, description="Items in the whole list, across pages")


def paged(items: Sequence[T], params: PageParams, *, total: int) -> Page[T]:
    """A page of items the store already cut to ``params`` (``LIMIT``/``OFFSET``), of a list ``total``
    long."""
    return Page[T](items=list(items), page=params.page, page_size=params.page_size, total=total)


def paginate(items: Sequence[T], params: PageParams) -> Page[T]:
    """The page ``params`` names of a list held in memory (the race state's, already folded)."""
    return paged(items[params.offset : params.offset + params.limit], params, total=len(items))


def cache_control(max_age: int) -> str:
    """The ``Cache-Control`` value of a public answer reusable for ``max_age`` seconds."""
    return f"public, max-age={max_age}"


def etag_of(body: bytes) -> str:
    """A strong validator of ``body``: its sha256, quoted."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def not_modified(request: Request, etag: str) -> bool:
    """Whether the client's ``If-None-Match`` names ``etag`` (or ``*``)."""
    wanted = request.headers.get("if-none-match")
    if wanted is None:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in wanted.split(",")}
    return etag in tags or "*" in tags


def cached_body(request: Request, body: bytes, *, media_type: str, max_age: int) -> Response:
    """``body`` with ``Cache-Control`` and ``ETag`` (or an empty 304 when the client holds it already)."""
    etag = etag_of(body)
    headers = {"Cache-Control": cache_control(max_age), "ETag": etag}
    if not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type=media_type, headers=headers)


def cached_json(request: Request, answer: BaseModel, *, max_age: int = LIVE_MAX_AGE) -> Response:
    """``answer`` as JSON with cache headers; declare ``response_model`` on the route for the OpenAPI
    document (a returned ``Response`` is sent as it is)."""
    return cached_body(
        request, answer.model_dump_json().encode(), media_type="application/json", max_age=max_age
    )
