"""HTTP tool server: the ShoppingBench search tools over any :class:`SearchEngine` (SPEC 2).

Routes and parameter names match the reference server (``GET /search/find_product?q=..&page=..``), so
agents and ``ref_search.py compare`` work against either. Every tool also takes a JSON body by POST.

Endpoints are plain ``def``: the engine is synchronous and CPU-bound, so FastAPI runs each call in its
thread pool; the engine's :class:`ProductStore` gives every thread its own SQLite connection.

What the tools answer for any arguments is ``shoppingbench.tools.semantics`` (the reference server's
reading of sloppy arguments, shared with the training environment); this module only routes. Any input
gets a 200 or a 4xx, never a 500: what the semantics refuse, and bodies that are not JSON objects, become
422 responses in FastAPI's validation-error shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import uvicorn
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.catalog.models import SERVICES, Product
from shoppingbench.search.base import MAX_PAGE, PAGE_SIZE, ProductInformation, SearchEngine, SearchHit
from shoppingbench.tools import semantics
from shoppingbench.tools.semantics import MAX_VIEW_IDS, RawArgument, ToolRefusal

_T = TypeVar("_T")

_API_DESCRIPTION = (
    "The ShoppingBench search tools an agent calls (`find_product`, `view_product_information`), each by GET "
    "with query parameters or by POST with the same fields as a JSON object, plus `get_product_raw` for "
    "scorers. Arguments are read as the reference arena's server reads them: a page it does not know "
    "gives [], a sort, service or price it cannot read is ignored. Only text that is not valid Unicode, an "
    "overlong query and too many ids answer 422."
)
_Q = "Search text, matched lexically (BM25) against each product's title, sku and attribute values."
_PAGE = (f"Result page, {PAGE_SIZE} products each; pages 1..{MAX_PAGE} exist, anything else (and no page, "
         "as on the reference server) gives [].")
_SHOP_ID = "Only products of this shop (ids compare as strings)."
_PRICE = ("Inclusive price range 'low-high'; either side may be empty, e.g. '1000-' or '-250.5'; "
          "a range it cannot read is ignored.")
_SORT = "'priceasc', 'pricedesc' or 'order' (most sold first); anything else: relevance."
_SERVICE = (f"Comma-separated services every product must carry, from: {', '.join(SERVICES)}; "
            "other values are ignored.")
_PRODUCT_IDS = f"Comma-separated product ids (at most {MAX_VIEW_IDS}); unknown ids are skipped."


class FindProductRequest(BaseModel):
    """``find_product`` parameters as a JSON body (same names and meaning as the query parameters)."""

    model_config = ConfigDict(extra="ignore")

    q: RawArgument = Field(None, description=_Q)
    page: RawArgument = Field(None, description=_PAGE)
    shop_id: RawArgument = Field(None, description=_SHOP_ID)
    price: RawArgument = Field(None, description=_PRICE)
    sort: RawArgument = Field(None, description=_SORT)
    service: RawArgument = Field(None, description=_SERVICE + " A JSON list is accepted too.")


class ViewProductInformationRequest(BaseModel):
    """``view_product_information`` parameters as a JSON body."""

    model_config = ConfigDict(extra="ignore")

    product_ids: RawArgument = Field(description=_PRODUCT_IDS + " A JSON list is accepted too.")


class Health(BaseModel):
    status: Literal["ok"]
    products: int


def create_app(engine: SearchEngine, *, title: str = "ShoppingBench tools") -> FastAPI:
    """The tool server's ASGI app over ``engine`` (which must be safe for concurrent reads)."""
    # FastAPIOffline: FastAPI with /docs and /redoc served from the package, not a CDN.
    app = FastAPIOffline(title=title, description=_API_DESCRIPTION)
    app.exception_handler(RequestValidationError)(_validation_error_response)

    def answer(location: str, tool: Callable[[], _T]) -> _T:
        try:
            return tool()
        except ToolRefusal as exc:
            error = {"type": "value_error", "loc": (location,), "msg": str(exc)}
            raise RequestValidationError([error]) from None

    @app.get("/search/find_product", response_model=list[SearchHit], tags=["tools"],
             summary="Search products (query parameters)")
    def find_product(
        q: Annotated[str | None, Query(description=_Q)] = None,
        page: Annotated[str | None, Query(description=_PAGE)] = None,
        shop_id: Annotated[str | None, Query(description=_SHOP_ID)] = None,
        price: Annotated[str | None, Query(description=_PRICE)] = None,
        sort: Annotated[str | None, Query(description=_SORT)] = None,
        service: Annotated[str | None, Query(description=_SERVICE)] = None,
    ) -> list[SearchHit]:
        """One page of products ranked by relevance (or `sort`), filtered by shop, price and services.

        Each hit carries only `product_id, shop_id, title, price, service, sold_count`."""
        return answer("query", lambda: semantics.find_product(engine, q=q, page=page, shop_id=shop_id,
                                                              price=price, sort=sort, service=service))

    @app.post("/search/find_product", response_model=list[SearchHit], tags=["tools"],
              summary="Search products (JSON body)")
    def find_product_post(request: Annotated[FindProductRequest, Body()]) -> list[SearchHit]:
        """Same as the GET form, with the parameters as a JSON object."""
        return answer("body", lambda: semantics.find_product(engine, **request.model_dump()))

    @app.get("/search/view_product_information", response_model=list[ProductInformation], tags=["tools"],
             summary="Product details (query parameters)")
    def view_product_information(
        product_ids: Annotated[str, Query(description=_PRODUCT_IDS)],
    ) -> list[ProductInformation]:
        """`product_id, short_description, description, sku_options, attributes` of each id found,
        in the order asked."""
        return answer("query", lambda: semantics.view_product_information(engine, product_ids))

    @app.post("/search/view_product_information", response_model=list[ProductInformation], tags=["tools"],
              summary="Product details (JSON body)")
    def view_product_information_post(
        request: Annotated[ViewProductInformationRequest, Body()],
    ) -> list[ProductInformation]:
        """Same as the GET form; `product_ids` may be a comma-separated string or a JSON list."""
        return answer("body", lambda: semantics.view_product_information(engine, request.product_ids))

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
