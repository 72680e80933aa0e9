"""HTTP client for everything an agent may reach: the search tools and the LLM, through the proxy.

Inside the sandbox the only address an agent can talk to is ``SANDBOX_PROXY_URL``: the verified
proxy, which serves ``/search/find_product``, ``/search/view_product_information`` and the
OpenAI-compatible ``/inference/chat/completions`` and logs every call. The model to ask for is
``SANDBOX_DEFAULT_MODEL``; ``SANDBOX_ALLOWED_MODELS`` (comma list) names every model the proxy accepts.

``get``/``post`` behave like the reference arena's ``ProxyClient`` (JSON or ``None`` after the last
retry), so its agents work unchanged; the typed helpers raise :class:`ProxyError` instead.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx

log = logging.getLogger(__name__)

FIND_PRODUCT_PATH = "/search/find_product"
VIEW_PRODUCT_PATH = "/search/view_product_information"
INFERENCE_PATH = "/inference/chat/completions"

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_DELAY_S = 2.0
DEFAULT_RATE_LIMIT_RETRY_DELAY_S = 5.0
MAX_RETRY_DELAY_S = 10.0
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
BUDGET_EXHAUSTED = "budget_exhausted"
"""The proxy's error code for a spent call/token budget: a 429 that no retry can cure."""
"""Worth another try: rate limits and server-side hiccups. Any other 4xx means the request is wrong."""


_TLS_CONTEXT = ssl.create_default_context()
"""Shared by every client: httpx builds a fresh one per client otherwise (~40 ms loading CA certificates),
and the sandbox imports this module once per slot but creates a client for every problem."""


class ProxyError(RuntimeError):
    """A call the proxy refused or could not answer, after the retries it deserved."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def allowed_models() -> list[str]:
    """The models the proxy accepts (``SANDBOX_ALLOWED_MODELS``); empty when the runner set none."""
    return [m.strip() for m in os.environ.get("SANDBOX_ALLOWED_MODELS", "").split(",") if m.strip()]


def default_model() -> str:
    """``SANDBOX_DEFAULT_MODEL``, else the first allowed model."""
    model = os.environ.get("SANDBOX_DEFAULT_MODEL", "").strip() or next(iter(allowed_models()), "")
    if not model:
        raise ProxyError("no model to ask for: set SANDBOX_DEFAULT_MODEL (the runner does) or pass model=")
    return model


@dataclass(frozen=True)
class ChatReply:
    """The first choice of a chat completion, with the fields agents use."""

    content: str
    reasoning_content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Native tool calls as sent: ``{"id", "type", "function": {"name", "arguments": "<json>"}}``."""
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_response(cls, body: Any) -> ChatReply:
        choices = body.get("choices") if isinstance(body, dict) else None
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message: dict[str, Any] = first["message"] if isinstance(first.get("message"), dict) else {}
        calls = message.get("tool_calls")
        usage = body.get("usage") if isinstance(body, dict) else None
        return cls(content=_text(message.get("content")),
                   # vLLM sends reasoning_content; some OpenAI-compatible servers call it reasoning.
                   reasoning_content=_text(message.get("reasoning_content") or message.get("reasoning")),
                   tool_calls=[c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else [],
                   finish_reason=first.get("finish_reason") if isinstance(first.get("finish_reason"), str)
                   else None,
                   usage=usage if isinstance(usage, dict) else {},
                   raw=body if isinstance(body, dict) else {})


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return ""


class ProxyClient:
    """Calls the proxy with retries on connection errors, 429 and 5xx (``max_retries`` attempts in all,
    the delay doubling from ``retry_delay``, or from ``rate_limit_retry_delay`` after a 429, up to 10 s).

    The base URL is ``proxy_url`` or, read at each call, ``SANDBOX_PROXY_URL``. The client is safe to
    share between threads; ``close()`` (or a ``with`` block) frees its connections.
    """

    def __init__(self, proxy_url: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 max_retries: int = DEFAULT_MAX_RETRIES, retry_delay: float = DEFAULT_RETRY_DELAY_S,
                 rate_limit_retry_delay: float = DEFAULT_RATE_LIMIT_RETRY_DELAY_S,
                 api_key: str | None = None) -> None:
        self.proxy_url = proxy_url
        self.timeout = timeout
        self.max_retries = max(1, max_retries)
        self.retry_delay = retry_delay
        self.rate_limit_retry_delay = rate_limit_retry_delay
        self.api_key = api_key
        # trust_env=False: the proxy is the only route out; HTTP(S)_PROXY variables must not divert it.
        self._http = httpx.Client(timeout=timeout, trust_env=False, verify=_TLS_CONTEXT)

    @property
    def base_url(self) -> str:
        url = self.proxy_url or os.environ.get("SANDBOX_PROXY_URL", "")
        if not url:
            raise ProxyError("no proxy URL: set SANDBOX_PROXY_URL (the runner does) or pass proxy_url=")
        return url.rstrip("/")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ProxyClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json: Any = None) -> Any:
        """One call with retries; the decoded JSON answer, or :class:`ProxyError`."""
        url = f"{self.base_url}{path}"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        authorised = self.api_key and path == INFERENCE_PATH
        headers = {"Authorization": f"Bearer {self.api_key}"} if authorised else {}
        failure = ProxyError(f"{method} {path}: no attempt made")
        for attempt in range(self.max_retries):
            delay = self.retry_delay * 2 ** attempt
            try:
                response = self._http.request(method, url, params=query, json=json, headers=headers)
            except httpx.HTTPError as exc:
                failure = ProxyError(f"{method} {path}: {type(exc).__name__}: {exc}")
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise ProxyError(f"{method} {path}: answer is not JSON: {response.text[:200]!r}",
                                         response.status_code) from None
                failure = ProxyError(f"{method} {path} answered {response.status_code}: "
                                     f"{response.text[:300]}", response.status_code)
                if response.status_code not in RETRIED_STATUSES or _budget_exhausted(response):
                    raise failure
                if response.status_code == 429:
                    delay = self.rate_limit_retry_delay * 2 ** attempt
            if attempt + 1 < self.max_retries:
                log.warning("proxy call failed, retrying: %s (attempt %d/%d)", failure, attempt + 1,
                            self.max_retries)
                time.sleep(min(delay, MAX_RETRY_DELAY_S))
        raise failure

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET ``path``: the JSON answer, or ``None`` once every attempt failed (reference behaviour)."""
        try:
            return self.request("GET", path, params=params)
        except ProxyError as exc:
            log.error("%s", exc)
            return None

    def post(self, path: str, json_data: Any = None) -> Any:
        """POST a JSON body to ``path``: the JSON answer, or ``None`` once every attempt failed."""
        try:
            return self.request("POST", path, json=json_data)
        except ProxyError as exc:
            log.error("%s", exc)
            return None

    def find_product(self, q: str, page: int = 1, shop_id: str | None = None, price: str | None = None,
                     sort: str | None = None, service: str | None = None) -> list[dict[str, Any]]:
        """Up to 10 hits ``{product_id, shop_id, title, price, service, sold_count}`` (pages 1..5)."""
        hits = self.request("GET", FIND_PRODUCT_PATH, params={
            "q": q, "page": page, "shop_id": shop_id, "price": price, "sort": sort, "service": service})
        return _list_of_dicts(hits, FIND_PRODUCT_PATH)

    def view_product_information(self, product_ids: str | Sequence[str]) -> list[dict[str, Any]]:
        """``{product_id, short_description, description, sku_options, attributes}`` per id found."""
        ids = product_ids if isinstance(product_ids, str) else ",".join(product_ids)
        details = self.request("GET", VIEW_PRODUCT_PATH, params={"product_ids": ids})
        return _list_of_dicts(details, VIEW_PRODUCT_PATH)

    def chat(self, messages: Sequence[Mapping[str, Any]], *, model: str | None = None,
             temperature: float | None = 0.0, max_tokens: int | None = None, **extra: Any) -> ChatReply:
        """One chat completion through the proxy (``extra`` goes into the body as is, e.g. ``tools``)."""
        chosen = model or default_model()
        allowed = allowed_models()
        if allowed and chosen not in allowed:
            raise ProxyError(f"model {chosen!r} is not allowed here; allowed: {', '.join(allowed)}", 403)
        body: dict[str, Any] = {"model": chosen, "messages": [dict(m) for m in messages], "stream": False,
                                **extra}
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return ChatReply.from_response(self.request("POST", INFERENCE_PATH, json=body))


def _budget_exhausted(response: httpx.Response) -> bool:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return False
    return isinstance(error, dict) and error.get("code") == BUDGET_EXHAUSTED


def _list_of_dicts(value: Any, path: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ProxyError(f"{path}: expected a JSON list, got {type(value).__name__}")
    return [item for item in value if isinstance(item, dict)]
