"""The site's response cache (``arena/validator/api/cache.py``) in front of a small FastAPI app: what it
keeps, for how long, what a new version does, conditional requests, and one render per URL under load."""

from __future__ import annotations

import asyncio
import time

import httpx
from fastapi import FastAPI, Request, Response

from arena.validator.api.cache import MAX_AGE_S, ResponseCache
from arena.validator.api.site.paging import cached_body


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _app(
    version: list[int], clock: Clock, *, delay: float = 0.0, every: float = 0.0
) -> tuple[ResponseCache, dict[str, int]]:
    renders: dict[str, int] = {}
    app = FastAPI()

    def count(name: str) -> int:
        renders[name] = renders.get(name, 0) + 1
        return renders[name]

    @app.get("/api/public")
    def public(request: Request) -> Response:
        time.sleep(delay)
        body = f"render {count('public')} of {request.url.query}".encode()
        return cached_body(request, body, media_type="text/plain", max_age=30)

    @app.get("/api/private")
    def private() -> Response:
        return Response(f"render {count('private')}", headers={"Cache-Control": "private, max-age=30"})

    @app.get("/api/missing")
    def missing() -> Response:
        return Response(
            f"render {count('missing')}", status_code=404, headers={"Cache-Control": "public, max-age=30"}
        )

    @app.get("/health")
    def health() -> Response:
        return Response(f"render {count('health')}", headers={"Cache-Control": "public, max-age=30"})

    cache = ResponseCache(app, version=lambda: version[0], clock=clock, version_every_s=every)
    return cache, renders


def _get(cache: ResponseCache, url: str, **headers: str) -> httpx.Response:
    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=cache)
        async with httpx.AsyncClient(transport=transport, base_url="http://site") as client:
            return await client.get(url, headers=headers)

    return asyncio.run(fetch())


def test_a_public_answer_is_served_again_until_the_version_changes() -> None:
    version, clock = [1], Clock()
    cache, renders = _app(version, clock)
    first = _get(cache, "/api/public?page=1")
    assert first.text == "render 1 of page=1"
    assert _get(cache, "/api/public?page=1").text == "render 1 of page=1"
    assert _get(cache, "/api/public?page=2").text == "render 2 of page=2", "another query is another URL"
    version[0] = 2
    assert _get(cache, "/api/public?page=1").text == "render 3 of page=1"
    assert renders == {"public": 3}
    assert (cache.hits, cache.misses) == (1, 3)
    assert _get(cache, "/api/public?page=1").headers["cache-control"] == "public, max-age=30"


def test_an_answer_is_kept_no_longer_than_its_max_age() -> None:
    version, clock = [1], Clock()
    cache, _ = _app(version, clock)
    assert _get(cache, "/api/public").text == "render 1 of "
    clock.now += 29.9
    assert _get(cache, "/api/public").text == "render 1 of "
    clock.now += 0.2
    assert _get(cache, "/api/public").text == "render 2 of "
    assert MAX_AGE_S >= 30


def test_private_errors_and_other_paths_pass_through() -> None:
    version, clock = [1], Clock()
    cache, renders = _app(version, clock)
    for _ in range(2):
        _get(cache, "/api/private")
        _get(cache, "/api/missing")
        _get(cache, "/health")
    assert renders == {"private": 2, "missing": 2, "health": 2}


def test_a_client_holding_the_etag_gets_304_from_the_cache() -> None:
    version, clock = [1], Clock()
    cache, renders = _app(version, clock)
    etag = _get(cache, "/api/public").headers["etag"]
    again = _get(cache, "/api/public", **{"If-None-Match": etag})
    assert again.status_code == 304
    assert again.headers["etag"] == etag and again.content == b""
    assert renders == {"public": 1}


def test_many_clients_asking_at_once_cause_one_render() -> None:
    version, clock = [1], Clock()
    cache, renders = _app(version, clock, delay=0.2)

    async def crowd() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=cache)
        async with httpx.AsyncClient(transport=transport, base_url="http://site") as client:
            return await asyncio.gather(*(client.get("/api/public") for _ in range(20)))

    answers = asyncio.run(crowd())
    assert {a.text for a in answers} == {"render 1 of "}
    assert renders == {"public": 1}


def test_the_version_is_read_at_most_once_a_second() -> None:
    version, clock = [1], Clock()
    cache, renders = _app(version, clock, every=1.0)
    assert _get(cache, "/api/public").text == "render 1 of "
    version[0] = 2
    clock.now += 0.5
    assert _get(cache, "/api/public").text == "render 1 of ", "the new version is not read yet"
    clock.now += 0.5
    assert _get(cache, "/api/public").text == "render 2 of "
    assert renders == {"public": 2}


def test_a_crowd_shares_version_reads_none_older_than_its_request() -> None:
    reads: list[int] = []
    version = [1]
    app = FastAPI()

    @app.get("/api/public")
    def public(request: Request) -> Response:
        return cached_body(request, f"version {version[0]}".encode(), media_type="text/plain", max_age=30)

    def slow_version() -> int:
        reads.append(version[0])
        time.sleep(0.05)
        return version[0]

    cache = ResponseCache(app, version=slow_version)

    async def crowd() -> tuple[list[httpx.Response], httpx.Response]:
        transport = httpx.ASGITransport(app=cache)
        async with httpx.AsyncClient(transport=transport, base_url="http://site") as client:
            answers = await asyncio.gather(*(client.get("/api/public") for _ in range(30)))
            version[0] = 2
            return list(answers), await client.get("/api/public")

    answers, after = asyncio.run(crowd())
    assert {a.text for a in answers} == {"version 1"}
    assert len(reads) <= 3, f"30 requests made {len(reads)} version reads"
    assert after.text == "version 2", "a request after the change reads a new version"
