"""HTTP tool server: the ShoppingBench search tools over any :class:`SearchEngine` (SPEC 2).

Routes and parameter names match the reference server (``GET /search/find_product?q=..&page=..``), so
agents and ``ref_search.py compare`` work against either. Every tool also takes a JSON body by POST.

Endpoints are plain ``def``: the engine is synchronous and CPU-bound, so FastAPI runs each call in its
thread pool; the engine's :class:`ProductStore` gives every thread its own SQLite connection.

Any input gets a 200 or a 4xx, never a 500: parameters pass through :class:`FindProductQuery` and the
request models below, and their errors become 422 responses in FastAPI's validation-error shape.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal

import uvicorn
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shoppingbench.catalog.models import SERVICES, Product
from shoppingbench.search.base import (
    MAX_PAGE,
    PAGE_SIZE,
    FindProductQuery,
    ProductInformation,
    SearchEngine,
    SearchHit,
    split_product_ids,
)

MAX_VIEW_IDS: Final = 1_000
"""More ids than this in one ``view_product_information`` call is refused (422): no agent needs it."""

_API_DESCRIPTION = (
    "The ShoppingBench search tools an agent calls (`find_product`, `view_product_information`), each by GET "
    "with query parameters or by POST with the same fields as a JSON object, plus `get_product_raw` for "
    "scorers. Invalid parameters answer 422 naming the field."
)
_Q = "Search text, matched lexically (BM25) against each product's title, sku and attribute values."
_PAGE = f"Result page, {PAGE_SIZE} products each; pages 1..{MAX_PAGE} exist, any other integer gives []."
_SHOP_ID = "Only products of this shop (ids compare as strings)."
_PRICE = "Inclusive price range 'low-high'; either side may be empty, e.g. '1000-' or '-250.5'."
_SORT = "'priceasc', 'pricedesc' or 'order' (most sold first); empty or omitted: relevance."
_SERVICE = f"Comma-separated services every product must carry, from: {', '.join(SERVICES)}."
_PRODUCT_IDS = f"Comma-separated product ids (at most {MAX_VIEW_IDS}); unknown ids are skipped."


def _valid_unicode(value: str) -> str:
    # A JSON body can carry a lone surrogate ("\ud800"); it cannot be encoded for SQLite or the response.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (it contains a lone surrogate)") from None
    return value


class FindProductRequest(BaseModel):
    """``find_product`` parameters as a JSON body (same names and meaning as the query parameters)."""

    model_config = ConfigDict(extra="forbid")

    q: str = Field(description=_Q)
    page: int = Field(1, description=_PAGE)
    shop_id: str | int | None = Field(None, description=_SHOP_ID)
    price: str | None = Field(None, description=_PRICE)
    sort: str | None = Field(None, description=_SORT)
    service: str | list[str] | None = Field(None, description=_SERVICE + " A JSON list is accepted too.")

    @field_validator("q", "shop_id", "price", "sort", "service")
    @classmethod
    def _unicode(cls, value: Any) -> Any:
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                _valid_unicode(text)
        return value


class ViewProductInformationRequest(BaseModel):
    """``view_product_information`` parameters as a JSON body."""

    model_config = ConfigDict(extra="forbid")

    product_ids: str | list[str | int] = Field(description=_PRODUCT_IDS + " A JSON list is accepted too.")

    @field_validator("product_ids")
    @classmethod
    def _unicode(cls, value: str | list[str | int]) -> str | list[str | int]:
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                _valid_unicode(text)
        return value

    def ids(self) -> list[str]:
        text = self.product_ids if isinstance(self.product_ids, str) else ",".join(map(str, self.product_ids))
        return split_product_ids(text)


class Health(BaseModel):
    status: Literal["ok"]
    products: int


def create_app(engine: SearchEngine, *, title: str = "ShoppingBench tools") -> FastAPI:
    """The tool server's ASGI app over ``engine`` (which must be safe for concurrent reads)."""
    app = FastAPI(title=title, description=_API_DESCRIPTION)
    app.exception_handler(RequestValidationError)(_validation_error_response)

    def find(location: str, **fields: Any) -> list[SearchHit]:
        try:
            query = FindProductQuery(**fields)
        except ValidationError as exc:
            raise _request_error(location, exc) from None
        return engine.find_product(query)

    def view(location: str, ids: list[str]) -> list[ProductInformation]:
        if len(ids) > MAX_VIEW_IDS:
            raise RequestValidationError([{
                "type": "too_long", "loc": (location, "product_ids"),
                "msg": f"at most {MAX_VIEW_IDS} product ids per call, got {len(ids)}",
            }])
        return engine.view_product_information(ids)

    @app.get("/search/find_product", response_model=list[SearchHit], tags=["tools"],
             summary="Search products (query parameters)")
    def find_product(
        q: Annotated[str, Query(description=_Q)],
        page: Annotated[int, Query(description=_PAGE)] = 1,
        shop_id: Annotated[str | None, Query(description=_SHOP_ID)] = None,
        price: Annotated[str | None, Query(description=_PRICE)] = None,
        sort: Annotated[str | None, Query(description=_SORT)] = None,
        service: Annotated[str | None, Query(description=_SERVICE)] = None,
    ) -> list[SearchHit]:
        """One page of products ranked by relevance (or `sort`), filtered by shop, price and services.

        Each hit carries only `product_id, shop_id, title, price, service, sold_count`."""
        return find("query", q=q, page=page, shop_id=shop_id, price=price, sort=sort, service=service)

    @app.post("/search/find_product", response_model=list[SearchHit], tags=["tools"],
              summary="Search products (JSON body)")
    def find_product_post(request: Annotated[FindProductRequest, Body()]) -> list[SearchHit]:
        """Same as the GET form, with the parameters as a JSON object."""
        return find("body", **request.model_dump())

    @app.get("/search/view_product_information", response_model=list[ProductInformation], tags=["tools"],
             summary="Product details (query parameters)")
    def view_product_information(
        product_ids: Annotated[str, Query(description=_PRODUCT_IDS)],
    ) -> list[ProductInformation]:
        """`product_id, short_description, description, sku_options, attributes` of each id found,
        in the order asked."""
        return view("query", split_product_ids(product_ids))

    @app.post("/search/view_product_information", response_model=list[ProductInformation], tags=["tools"],
              summary="Product details (JSON body)")
    def view_product_information_post(
        request: Annotated[ViewProductInformationRequest, Body()],
    ) -> list[ProductInformation]:
        """Same as the GET form; `product_ids` may be a comma-separated string or a JSON list."""
        return view("body", request.ids())

    @app.get("/search/get_product_raw", response_model=Product, tags=["scoring"],
             summary="The full stored product",
             responses={404: {"description": "No product with this id in the catalog"}})
    def get_product_raw(
        product_id: Annotated[str, Query(description="One product id.")],
    ) -> Product:
        """Every stored field of one product, for scorers; not one of the agent's tools."""
        product = engine.get_product(product_id.strip())
        if product is None:
            raise HTTPException(status_code=404, detail=f"no product with id {product_id!r} in the catalog")
        return product

    @app.get("/health", response_model=Health, tags=["service"], summary="Liveness and catalog size")
    def health() -> Health:
        return Health(status="ok", products=len(engine))

    return app


def serve_tools(engine: SearchEngine, host: str = "127.0.0.1", port: int = 8000,
                log_level: str = "info") -> None:
    """Serve the tools over ``engine`` until interrupted.

    ``log_config=None`` keeps uvicorn from installing its own handlers, so its access and error logs
    go through the process's structlog set-up (JSON in production) like every other event.
    """
    uvicorn.run(create_app(engine), host=host, port=port, log_level=log_level, log_config=None)


def _request_error(location: str, exc: ValidationError) -> RequestValidationError:
    """A validation failure inside an endpoint, reported like FastAPI's own (422, located fields)."""
    return RequestValidationError([
        {"type": error["type"], "loc": (location, *error["loc"]), "msg": error["msg"]}
        for error in exc.errors(include_url=False, include_context=False, include_input=False)
    ])


async def _validation_error_response(request: Request, exc: RequestValidationError) -> Response:
    """422 in FastAPI's shape, minus the echoed ``input``.

    The default handler echoes each bad input, and an input Starlette cannot encode (a NaN, a lone
    surrogate from a JSON body) would turn the 422 into a 500. ``ensure_ascii`` keeps any message text
    that quotes such input encodable.
    """
    detail = [{"type": error.get("type"), "loc": error.get("loc"), "msg": _message(error)}
              for error in exc.errors()]
    body = json.dumps({"detail": jsonable_encoder(detail)}, ensure_ascii=True, separators=(",", ":"))
    return Response(body, status_code=422, media_type="application/json")


def _message(error: dict[str, Any]) -> str:
    # FastAPI reports a malformed body as just "JSON decode error"; the parser's reason sits in ctx.
    message = str(error.get("msg", "invalid input"))
    context = error.get("ctx") or {}
    if error.get("type") == "json_invalid" and "error" in context:
        message += f": {context['error']}"
    return message
