"""An OpenAI-compatible chat-completions server that plays a scripted policy: a TEST DOUBLE.

It stands in for what cannot run here, a hosted LLM or a vLLM server, in the tests, the benchmarks and
the offline demo. It speaks the real wire protocol the ``openai`` client and vLLM use, so code under
test talks to it exactly as it would to a real endpoint:

- ``POST /v1/chat/completions``: a ``chat.completion`` object (``choices[0].message`` with ``content``,
  ``tool_calls`` as ``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}`` and
  vLLM's ``reasoning_content``; ``finish_reason`` ``stop``, ``tool_calls`` or ``length``; ``usage``), or
  with ``"stream": true`` the same as server-sent ``chat.completion.chunk`` events ending in
  ``data: [DONE]``.
- ``GET /v1/models``: the served models.
- Errors as OpenAI sends them, ``{"error": {"message", "type", "param", "code"}}``: 401 for a missing
  or wrong key (when the server has one), 404 for a model it does not serve, 400 for a malformed
  body, and whatever status the policy asks for (429, 500, ...) to rehearse outages.
- Failures on command (:class:`Faults`, also ``POST /admin/faults`` and ``DELETE /admin/faults``):
  fail the next K calls (optionally after N good ones), or every call until cleared, in one of the
  three ways a hosted provider fails: an OpenAI-style 5xx error (``{"error": {...,"type":
  "server_error"}}``, 503 by default, as OpenAI and vLLM answer when overloaded), a hang (no answer for
  ``hang_s`` seconds: the client's timeout fires first), or a dropped connection (the response starts,
  then the connection closes mid-body, as a crashed upstream or a reset load balancer leaves it); or
  (``Faults.break_on``) every call whose messages contain a text, as a server fails on an input that
  crashes it while answering everything else.
- A capacity limit (``capacity``): at most N chat-completions calls are served at once, as a provider
  with limited capacity serves them. A call that arrives while N are being served is answered a 503
  (``over_capacity="reject"``, an overloaded server's ``server_error``) or waits in line, first come
  first served, until one of them is answered (``"queue"``). A call holds its place from the moment
  its body is accepted until its answer is produced (a slow reply's ``delay_s`` and a hang included);
  ``app.state.capacity`` counts the calls served at once, the most seen and the calls rejected.

What a reply says is decided by a *policy*, a plain function of the request body. Token counts come
from a simple word-and-punctuation split, a deterministic stand-in for a tokenizer; ``max_tokens``
(or ``max_completion_tokens``) cuts the content at that many such tokens with ``finish_reason``
``length``, as a real server does.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class StubReply:
    """What the policy wants answered to one request."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Native tool calls, each ``{"name": str, "arguments": dict | str}``."""
    reasoning: str | None = None
    status: int = 200
    """A status other than 200 answers an OpenAI-style error with ``content`` as its message."""
    delay_s: float = 0.0
    """Seconds to wait before answering (rehearses slow endpoints and client timeouts)."""


Policy = Callable[[dict[str, Any]], StubReply]
"""Decides the reply from the parsed chat-completions request body."""

FaultKind = Literal["status", "hang", "drop"]
OverCapacity = Literal["reject", "queue"]


@dataclass(frozen=True)
class Fault:
    """How one call fails: an error ``status`` (5xx), a hang of ``hang_s`` s, or a dropped connection."""

    kind: FaultKind = "status"
    status: int = 503
    hang_s: float = 30.0


class Faults:
    """Provider failures on command, decided per chat-completions call in arrival order. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plan: list[Fault | None] = []
        self._always: Fault | None = None
        self._breaking: tuple[str, Fault] | None = None
        self.failed = 0
        """Calls failed so far."""

    def fail_next(self, count: int, fault: Fault | None = None, *, after: int = 0) -> None:
        """Let ``after`` calls through, then fail ``count`` calls with ``fault`` (a 503 by default); queued
        behind any plan not yet played."""
        with self._lock:
            self._plan.extend([None] * after + [fault or Fault()] * count)

    def outage(self, fault: Fault | None = None) -> None:
        """Fail every call with ``fault`` (a 503 by default) until :meth:`clear`."""
        with self._lock:
            self._always = fault or Fault()

    def break_on(self, text: str, fault: Fault | None = None) -> None:
        """Fail every call whose messages contain ``text`` with ``fault`` (a 500 by default), as a server
        fails on an input that crashes it, while it answers every other call."""
        with self._lock:
            self._breaking = (text, fault or Fault(status=500))

    def clear(self) -> None:
        with self._lock:
            self._plan.clear()
            self._always = None
            self._breaking = None

    def take(self, body: dict[str, Any] | None = None) -> Fault | None:
        """The fault of the call that just arrived (its request ``body``), if it is to fail."""
        with self._lock:
            breaking = self._breaking
            if breaking is not None and body is not None and breaking[0] in str(body.get("messages")):
                self.failed += 1
                return breaking[1]
            fault = self._plan.pop(0) if self._plan else self._always
            self.failed += fault is not None
            return fault


class Capacity:
    """At most ``limit`` calls served at once; a call beyond is rejected (a 503) or queued (FIFO).
    Lives in the server's event loop; the counters are for assertions."""

    def __init__(self, limit: int, over: OverCapacity = "reject") -> None:
        if limit < 1:
            raise ValueError(f"capacity must be at least 1, not {limit}")
        self.limit = limit
        self.over = over
        self.in_flight = 0
        """Calls being served now."""
        self.most = 0
        """The most calls served at once so far."""
        self.rejected = 0
        """Calls answered a 503 because ``limit`` calls were being served."""
        self._slots = asyncio.Semaphore(limit)

    async def enter(self) -> bool:
        """Take a place for a call that arrived; ``False`` when it is rejected."""
        if self.over == "reject" and self._slots.locked():
            self.rejected += 1
            return False
        await self._slots.acquire()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        return True

    def leave(self) -> None:
        self.in_flight -= 1
        self._slots.release()


async def _failed(fault: Fault) -> Response:
    if fault.kind == "hang":
        await asyncio.sleep(fault.hang_s)
        return _error(504, "The upstream did not answer in time.", "server_error")
    if fault.kind == "drop":
        async def cut_off() -> AsyncIterator[bytes]:
            yield b'{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"ind'
            raise ConnectionResetError("the double drops the connection mid-answer")
        return StreamingResponse(cut_off(), media_type="application/json")
    return _error(fault.status, "The server is overloaded or not ready yet.", "server_error")


def count_tokens(text: str) -> int:
    """Tokens of ``text`` as this server counts them: words and single punctuation marks."""
    return len(_TOKEN.findall(text))


def _truncate(text: str, max_tokens: int) -> tuple[str, bool]:
    for index, match in enumerate(_TOKEN.finditer(text)):
        if index == max_tokens:
            return text[:match.start()].rstrip(), True
    return text, False


def _error(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}},
                        status_code=status)


_ERROR_KINDS = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error",
                404: "invalid_request_error", 429: "rate_limit_exceeded"}


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _tool_call_entries(calls: list[dict[str, Any]], ids: itertools.count[int]) -> list[dict[str, Any]]:
    entries = []
    for call in calls:
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = orjson.dumps(arguments).decode()
        entries.append({"id": f"call_{next(ids)}", "type": "function",
                        "function": {"name": str(call.get("name", "")), "arguments": arguments}})
    return entries


def create_app(policy: Policy, *, api_key: str | None = None, models: list[str] | None = None,
               faults: Faults | None = None, capacity: int | None = None,
               over_capacity: OverCapacity = "reject") -> FastAPI:
    """The server. ``models`` lists the served models (any name is accepted when it is ``None``);
    with ``api_key`` every request must carry ``Authorization: Bearer <api_key>``; ``faults`` (also
    ``app.state.faults``) fails calls on command; ``capacity`` (also ``app.state.capacity``, a
    :class:`Capacity`; ``None`` without a limit) serves that many calls at once, rejecting or queueing
    the others as ``over_capacity`` says.

    ``app.state.requests`` keeps every well-formed request body received, in order, for assertions.
    """
    app = FastAPI(title="OpenAI-compatible test double", docs_url=None, redoc_url=None)
    app.state.requests = []
    app.state.faults = faults = faults or Faults()
    app.state.capacity = limit = Capacity(capacity, over_capacity) if capacity is not None else None
    lock = threading.Lock()
    ids = itertools.count()

    def unauthorised(request: Request) -> JSONResponse | None:
        if api_key is None or request.headers.get("authorization") == f"Bearer {api_key}":
            return None
        return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")

    @app.get("/v1/models")
    async def list_models(request: Request) -> Response:
        refused = unauthorised(request)
        if refused is not None:
            return refused
        served = models or ["stub"]
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "stub"} for name in served]})

    _mount_fault_commands(app, faults, unauthorised)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        refused = unauthorised(request)
        if refused is not None:
            return refused
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return _error(400, "The request body is not valid JSON.", "invalid_request_error")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) \
                or not isinstance(body.get("model"), str):
            return _error(400, "'model' (string) and 'messages' (array) are required.",
                          "invalid_request_error")
        model = body["model"]
        if models is not None and model not in models:
            return _error(404, f"The model `{model}` does not exist.", "invalid_request_error",
                          "model_not_found")
        with lock:
            app.state.requests.append(body)
        if limit is None:
            return await answer(body)
        if not await limit.enter():
            return _error(503, "The server is over capacity: try again later.", "server_error")
        try:
            return await answer(body)
        finally:
            limit.leave()

    async def answer(body: dict[str, Any]) -> Response:
        fault = faults.take(body)
        if fault is not None:
            return await _failed(fault)
        reply = await asyncio.to_thread(policy, body)
        if reply.delay_s > 0:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return _error(reply.status, reply.content or f"stub error {reply.status}",
                          _ERROR_KINDS.get(reply.status, "server_error"))
        return _completion(body, reply, next(ids), ids)

    return app


def _mount_fault_commands(app: FastAPI, faults: Faults,
                          unauthorised: Callable[[Request], JSONResponse | None]) -> None:
    """``POST /admin/faults`` and ``DELETE /admin/faults``: :class:`Faults` over HTTP."""
    @app.post("/admin/faults")
    async def command_faults(request: Request) -> Response:
        """``{"count": K, "after": N, "kind": "status"|"hang"|"drop", "status": 503, "hang_s": 30}``, or
        ``{"always": true, ...}`` for an outage until ``DELETE /admin/faults``."""
        refused = unauthorised(request)
        if refused is not None:
            return refused
        try:
            body = orjson.loads(await request.body())
            if body.get("kind", "status") not in ("status", "hang", "drop"):
                raise ValueError(f"unknown kind {body.get('kind')!r}")
            fault = Fault(kind=body.get("kind", "status"), status=int(body.get("status", 503)),
                          hang_s=float(body.get("hang_s", 30.0)))
            count, after = int(body.get("count", 1)), int(body.get("after", 0))
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
            raise HTTPException(400, f"not a fault command: {exc}") from exc
        if body.get("always"):
            faults.outage(fault)
        else:
            faults.fail_next(count, fault, after=after)
        return JSONResponse({"ok": True})

    @app.delete("/admin/faults")
    async def clear_faults(request: Request) -> Response:
        refused = unauthorised(request)
        if refused is not None:
            return refused
        faults.clear()
        return JSONResponse({"ok": True})


def _completion(body: dict[str, Any], reply: StubReply, number: int,
                ids: itertools.count[int]) -> Response:
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    content, cut = (_truncate(reply.content, limit) if isinstance(limit, int) and limit > 0
                    else (reply.content, False))
    tool_calls = [] if cut else _tool_call_entries(reply.tool_calls, ids)
    finish = "length" if cut else ("tool_calls" if tool_calls else "stop")
    prompt_tokens = sum(count_tokens(_message_text(m)) for m in body["messages"])
    completion_tokens = count_tokens(content) + count_tokens(reply.reasoning or "") + sum(
        count_tokens(call["function"]["arguments"]) + 1 for call in tool_calls)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    completion_id, created = f"chatcmpl-stub-{number}", int(time.time())
    if not body.get("stream"):
        return JSONResponse({"id": completion_id, "object": "chat.completion", "created": created,
                             "model": body["model"], "usage": usage, "choices": [
                                 {"index": 0, "message": message, "finish_reason": finish,
                                  "logprobs": None}]})

    def chunk(delta: dict[str, Any], finish_reason: str | None, **extra: Any) -> bytes:
        event = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                 "model": body["model"], "choices": [{"index": 0, "delta": delta,
                                                      "finish_reason": finish_reason}], **extra}
        return b"data: " + orjson.dumps(event) + b"\n\n"

    async def events() -> AsyncIterator[bytes]:
        yield chunk({"role": "assistant", "content": ""}, None)
        delta: dict[str, Any] = {"content": content}
        if reply.reasoning is not None:
            delta["reasoning_content"] = reply.reasoning
        if tool_calls:
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(tool_calls)]
        yield chunk(delta, None)
        include_usage = isinstance(body.get("stream_options"), dict) and \
            body["stream_options"].get("include_usage")
        yield chunk({}, finish, **({"usage": usage} if include_usage else {}))
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")
