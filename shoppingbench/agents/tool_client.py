"""HTTP client for the ShoppingBench tool server, as an agent uses it.

The base URL comes from ``SANDBOX_PROXY_URL`` (the name the reference arena's sandbox sets) so the
same agent code runs against the bare tool server here and the verified proxy later.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

import httpx

DEFAULT_TIMEOUT_S = 30.0


class ToolError(RuntimeError):
    """A tool call the server refused (4xx) or could not answer."""


class ToolClient:
    def __init__(self, base_url: str | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
                 retries: int = 3) -> None:
        url = base_url or os.environ.get("SANDBOX_PROXY_URL")
        if not url:
            raise ToolError("no tool server URL: pass base_url or set SANDBOX_PROXY_URL")
        # Transport retries cover refused/reset connections, which a busy local server can produce.
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout,
                                  transport=httpx.HTTPTransport(retries=retries))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ToolClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        response = self._http.get(path, params={k: v for k, v in params.items() if v is not None})
        if response.status_code >= 400:
            raise ToolError(f"{path} answered {response.status_code}: {response.text[:300]}")
        return response.json()

    def find_product(self, q: str, page: int = 1, shop_id: str | None = None, price: str | None = None,
                     sort: str | None = None, service: str | None = None) -> list[dict[str, Any]]:
        params = {"q": q, "page": page, "shop_id": shop_id, "price": price, "sort": sort, "service": service}
        hits: list[dict[str, Any]] = self._get("/search/find_product", params)
        return hits

    def view_product_information(self, product_ids: list[str]) -> list[dict[str, Any]]:
        details: list[dict[str, Any]] = self._get("/search/view_product_information",
                                                  {"product_ids": ",".join(product_ids)})
        return details
