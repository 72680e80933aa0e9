"""The verified proxy as an ASGI app: the only door from a sandbox to the catalog and the LLM.

Every request is attributed to the attempt running on the channel (listening socket) it arrived on,
answered, and logged as a :class:`ProxyCall` of that attempt:

- ``GET|POST /search/find_product`` and ``/search/view_product_information`` go to the tool server app
  (``shoppingbench.tools.server``, the very same handlers and validation); the log keeps what the
  answer returned (``results.py``: ids, titles, prices, shops, services, values, the body's sha256);
- ``POST /inference/chat/completions`` goes through :class:`InferenceForwarder`;
- anything else answers 404 and is logged as ``kind="other"``.

A request on a channel without a running attempt answers 403 and is logged nowhere but the proxy's
own structured log.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final
from urllib.parse import parse_qsl

import orjson
import structlog

from shoppingbench.proxy.calllog import AttemptLog, ChannelRegistry
from shoppingbench.proxy.inference import InferenceForwarder
from shoppingbench.proxy.results import digest, tool_results
from shoppingbench.records import ProxyCall, ProxyCallKind
from shoppingbench.search.base import SearchEngine
from shoppingbench.tools.server import create_app as create_tool_app

log = structlog.get_logger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SEARCH_PATHS: Final = frozenset({"/search/find_product", "/search/view_product_information"})
INFERENCE_PATH: Final = "/inference/chat/completions"
MAX_BODY_BYTES: Final = 8 * 1024 * 1024
"""A larger request body answers 413: no tool call or chat request of an agent needs more."""
MAX_LOGGED_ERROR_CHARS: Final = 500


def channel_of(scope: Scope) -> str:
    """The listening socket a request came in on: a Unix socket path, or ``host:port``."""
    server = scope.get("server")
    if not server:
        return ""
    host, port = server
    return str(host) if port is None else f"{host}:{port}"


class _BodyTooLarge(Exception):
    pass


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _detail(status: int, message: str) -> tuple[int, bytes]:
    return status, orjson.dumps({"detail": message})


def _kind(path: str) -> ProxyCallKind:
    if path in SEARCH_PATHS:
        return "search"
    return "inference" if path == INFERENCE_PATH else "other"


def _search_params(scope: Scope, body: bytes) -> dict[str, Any]:
    if scope["method"] == "GET":
        return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _error_text(status: int, body: bytes) -> str | None:
    if status < 400:
        return None
    return body[:MAX_LOGGED_ERROR_CHARS].decode("utf-8", "replace")


class VerifiedProxy:
    """ASGI app; one per evaluation run."""

    def __init__(self, engine: SearchEngine, registry: ChannelRegistry,
                 inference: InferenceForwarder) -> None:
        self.registry = registry
        self.inference = inference
        self._tools = create_tool_app(engine, title="ShoppingBench tools (verified proxy)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        channel = channel_of(scope)
        attempt = self.registry.current(channel)
        seq = attempt.open_call() if attempt is not None else None
        if attempt is None or seq is None:
            log.warning("proxy_request_without_attempt", channel=channel, path=scope["path"])
            await _respond(send, *_detail(403, "no attempt is running on this channel"))
            return
        started_at = time.time()
        t0 = time.perf_counter()
        kind = _kind(scope["path"])
        fields: dict[str, Any] = {"kind": kind}
        status = 500
        try:
            status, fields = await self._handle(scope, receive, send, attempt, kind)
        except BaseException as exc:
            fields["error"] = f"the proxy failed answering: {type(exc).__name__}"
            raise
        finally:
            # The call is logged even if answering failed half-way (the agent hung up).
            duration_ms = (time.perf_counter() - t0) * 1000
            attempt.finish_call(ProxyCall(seq=seq, method=scope["method"], path=scope["path"], status=status,
                                          started_at=started_at, duration_ms=duration_ms, **fields))

    async def _handle(self, scope: Scope, receive: Receive, send: Send, attempt: AttemptLog,
                      kind: ProxyCallKind) -> tuple[int, dict[str, Any]]:
        method, path = scope["method"], scope["path"]
        try:
            body = await _read_body(receive)
        except _BodyTooLarge:
            status, answer = _detail(413, f"request bodies are limited to {MAX_BODY_BYTES} bytes")
            await _respond(send, status, answer)
            return status, {"kind": kind, "error": "request body too large"}
        if kind == "search" and method in ("GET", "POST"):
            return await self._search(scope, body, send)
        if kind == "inference" and method == "POST":
            outcome = await self.inference.complete(body, attempt.spending)
            await _respond(send, outcome.status, outcome.body)
            return outcome.status, {"kind": kind, **outcome.log_fields}
        status, answer = _detail(404 if kind == "other" else 405,
                                 f"{method} {path} is not served: the proxy serves GET|POST "
                                 f"{', '.join(sorted(SEARCH_PATHS))} and POST {INFERENCE_PATH}")
        await _respond(send, status, answer)
        return status, {"kind": kind, "error": f"{method} {path} is not served"}

    async def _search(self, scope: Scope, body: bytes, send: Send) -> tuple[int, dict[str, Any]]:
        """Run the tool server's own handler, passing its answer through while keeping a copy."""
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return {"type": "http.disconnect"}
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        status = 500
        answer = bytearray()

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                answer.extend(message.get("body", b""))
            await send(message)

        await self._tools(scope, replay, capture)
        data = bytes(answer)
        results = tool_results(data) if status == 200 else []
        return status, {"kind": "search", "params": _search_params(scope, body),
                        "product_ids": [r.product_id for r in results], "results": results,
                        "response_sha256": digest(data), "error": _error_text(status, data)}

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.inference.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.inference.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
