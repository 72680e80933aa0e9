"""A small cache of the public site's answers, keyed by URL and a version of what the validator recorded.

What a public page or JSON answer shows changes when the race log grows (a new event), when an attempt
is stored, or as time passes (a countdown, a verdict added to a stored attempt). Rendering one over a
month of records costs 5-40 ms of one core, and many clients asking at once queue behind each other.
So an answer that says anyone may keep it (status 200 with ``Cache-Control: public, max-age=N``) is
served again to the next request for the same URL while the version is the same (the app's: the race
log's length, the newest attempt's id and the dump folder's modification time) and the answer is
younger than ``N`` seconds (at most ``MAX_AGE_S``): never staler than the answer itself allows any
client to keep it. Requests for a URL not answered yet wait for the first one to be rendered
rather than each rendering it again (one render per URL and version). Answers without that header
(uploads, health, metrics, anything private) pass through untouched, and only the site's paths
(``SITE_PATHS``) are looked at.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from anyio import to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_AGE_S = 60.0
"""The longest any answer is kept, whatever its own max-age."""
ENTRIES = 512
"""Answers kept at most (least recently used first out): pages of a few kB to a few hundred kB."""
_MAX_AGE = re.compile(rb"max-age=(\d+)")
SITE_PATHS = re.compile(r"^/(?:$|api/|dumps|submissions/[^/]+/page$|attempts/)")
"""The public site's pages and JSON API: the only paths the cache looks at."""
VERSION_EVERY_S = 0.0
"""How long a version read is reused: 0, a read begun after each request arrived (two primary-key
lookups and a stat on a worker thread, shared by the requests that arrive while one runs), so a page
asked for after an event, an attempt or an export shows it."""


_Key = tuple[str, bytes, Hashable]


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: bytes | None
    expires: float


def _cacheable(status: int, headers: list[tuple[bytes, bytes]]) -> float | None:
    """Seconds the answer may be kept (``None``: not at all)."""
    if status != 200:
        return None
    control = b",".join(v for k, v in headers if k.lower() == b"cache-control").lower()
    if b"public" not in control or b"no-store" in control or b"private" in control:
        return None
    match = _MAX_AGE.search(control)
    if match is None or int(match.group(1)) <= 0:
        return None
    return min(float(match.group(1)), MAX_AGE_S)


class ResponseCache:
    """ASGI middleware keeping public GET answers per (path, query, version); see the module doc."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        version: Callable[[], Hashable],
        clock: Callable[[], float] = time.monotonic,
        entries: int = ENTRIES,
        paths: re.Pattern[str] = SITE_PATHS,
        version_every_s: float = VERSION_EVERY_S,
    ) -> None:
        self.app = app
        self.version_every_s = version_every_s
        self._version: tuple[float, Hashable] | None = None
        self._next: asyncio.Future[Hashable] | None = None
        self._reading = False
        self._reader: asyncio.Future[None] | None = None
        self.paths = paths
        self.version = version
        self.clock = clock
        self.entries = entries
        self._answers: OrderedDict[_Key, _Answer] = OrderedDict()
        self._rendering: dict[_Key, asyncio.Lock] = {}
        self._passing: OrderedDict[_Key, float] = OrderedDict()
        self.hits = 0
        self.misses = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not self.paths.match(scope["path"]):
            await self.app(scope, receive, send)
            return
        version = await self._current_version()
        key = (scope["path"], scope.get("query_string", b""), version)
        if await self._replay(key, scope, send):
            return
        if self._passing.get(key, 0.0) > self.clock():  # answered uncacheable lately: no queueing for it
            await self.app(scope, receive, send)
            return
        lock = self._rendering.setdefault(key, asyncio.Lock())
        async with lock:
            if await self._replay(key, scope, send):
                return
            self.misses += 1
            await self._render(key, scope, receive, send)
        if not lock.locked():
            self._rendering.pop(key, None)

    async def _current_version(self) -> Hashable:
        """The version as of a read begun after this request arrived (or reused for ``version_every_s``).

        Reads run on a worker thread (they query the databases), one at a time: requests arriving while
        one runs share the next, so a crowd costs a read per read's duration, not one per request, and
        no request is answered from a version read before it arrived.
        """
        now = self.clock()
        if (
            self.version_every_s > 0
            and self._version is not None
            and now - self._version[0] < self.version_every_s
        ):
            return self._version[1]
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
            if not self._reading:
                self._reader = asyncio.ensure_future(self._read_versions())
        value = await asyncio.shield(self._next)
        self._version = (now, value)
        return value

    async def _read_versions(self) -> None:
        self._reading = True
        try:
            while self._next is not None:
                future, self._next = self._next, None
                try:
                    future.set_result(await to_thread.run_sync(self.version))
                except Exception as exc:  # every request waiting on this read fails with it
                    future.set_exception(exc)
        finally:
            self._reading = False

    async def _replay(self, key: _Key, scope: Scope, send: Send) -> bool:
        answer = self._answers.get(key)
        if answer is None:
            return False
        if answer.expires <= self.clock():
            del self._answers[key]
            return False
        self._answers.move_to_end(key)
        self.hits += 1
        if answer.etag is not None and answer.etag in _header(scope, b"if-none-match"):
            kept = [(k, v) for k, v in answer.headers if k.lower() in (b"etag", b"cache-control")]
            await send({"type": "http.response.start", "status": 304, "headers": kept})
            await send({"type": "http.response.body", "body": b""})
            return True
        await send({"type": "http.response.start", "status": answer.status, "headers": answer.headers})
        await send({"type": "http.response.body", "body": answer.body})
        return True

    async def _render(self, key: _Key, scope: Scope, receive: Receive, send: Send) -> None:
        start: dict[str, Any] = {}
        chunks: list[bytes] = []
        keep: list[float | None] = [None]

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                keep[0] = _cacheable(message["status"], list(message.get("headers", [])))
            elif message["type"] == "http.response.body" and keep[0] is not None:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    self._store(key, start, b"".join(chunks), keep[0])
            await send(message)

        await self.app(scope, receive, capture)
        if keep[0] is None:
            self._passing[key] = self.clock() + MAX_AGE_S
            self._passing.move_to_end(key)
            while len(self._passing) > self.entries:
                self._passing.popitem(last=False)

    def _store(self, key: _Key, start: dict[str, Any], body: bytes, seconds: float) -> None:
        headers = [(bytes(k), bytes(v)) for k, v in start.get("headers", [])]
        etag = next((v for k, v in headers if k.lower() == b"etag"), None)
        self._answers[key] = _Answer(
            status=start["status"], headers=headers, body=body, etag=etag, expires=self.clock() + seconds
        )
        self._answers.move_to_end(key)
        while len(self._answers) > self.entries:
            self._answers.popitem(last=False)


def _header(scope: Scope, name: bytes) -> bytes:
    return b",".join(v for k, v in scope.get("headers", []) if k.lower() == name)
