"""The site benchmark's clients: one client page by page, then many at once, over HTTP with httpx.

The crowd is a thread pool, one ``httpx.Client`` (one keep-alive connection) per thread: a single
``httpx.AsyncClient`` shared by 200 tasks measured mostly itself here (its connection pool served the
tasks so unevenly that even ``/health`` showed a p95 of seconds, ten times what threads see).

A page answering 404 on its first request is reported ``missing`` (a page this build does not serve)
and left out of the figures; any other non-2xx answer, a timeout or a refused connection is an error.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Page:
    """A page of the site and the URLs that stand for it (several ids, so no single URL is all the load)."""

    name: str
    urls: tuple[str, ...]


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile; ``share`` in (0, 1]."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))
    return ordered[int(rank) - 1]


def _figures(latencies_ms: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(latencies_ms, 0.5), 1),
        "p95_ms": round(percentile(latencies_ms, 0.95), 1),
        "max_ms": round(max(latencies_ms), 1),
    }


def present(base_url: str, pages: Sequence[Page]) -> tuple[list[Page], dict[str, dict[str, Any]]]:
    """The pages this server serves, and each first request's status and time (caches cold)."""
    served: list[Page] = []
    first: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for page in pages:
            if not page.urls:
                first[page.name] = {"status": "missing", "reason": "no id to request it with"}
                continue
            started = time.perf_counter()
            response = client.get(page.urls[0])
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            if response.status_code == 404:
                first[page.name] = {"status": "missing", "url": page.urls[0]}
                continue
            first[page.name] = {
                "status": response.status_code,
                "first_ms": elapsed,
                "bytes": len(response.content),
            }
            served.append(page)
    return served, first


def single_client(base_url: str, pages: Sequence[Page], requests: int) -> dict[str, dict[str, Any]]:
    """``requests`` sequential requests per page from one keep-alive client."""
    out: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for page in pages:
            latencies, errors = [], 0
            for n in range(requests):
                started = time.perf_counter()
                response = client.get(page.urls[n % len(page.urls)])
                latencies.append((time.perf_counter() - started) * 1000)
                errors += not response.is_success
            out[page.name] = {**_figures(latencies), "requests": requests, "errors": errors}
    return out


def _client(
    base_url: str,
    urls: Sequence[str],
    offset: int,
    requests: int,
    latencies: list[float],
    failures: list[str],
) -> None:
    """One client: its own keep-alive connection, ``requests`` requests one after the other."""
    with httpx.Client(base_url=base_url, timeout=60) as http:
        for n in range(requests):
            url = urls[(offset + n) % len(urls)]
            started = time.perf_counter()
            try:
                response = http.get(url)
            except httpx.HTTPError as exc:
                failures.append(f"{url}: {type(exc).__name__}")
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            if not response.is_success:
                failures.append(f"{url}: {response.status_code}")


def _crowd(
    base_url: str, urls: Sequence[str], clients: int, requests: int
) -> tuple[list[float], list[str], float]:
    """``clients`` threads, one client each (list appends are atomic under the GIL)."""
    latencies: list[float] = []
    failures: list[str] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for done in [
            pool.submit(_client, base_url, urls, i, requests, latencies, failures) for i in range(clients)
        ]:
            done.result()
    return latencies, failures, time.perf_counter() - started


def concurrent(base_url: str, pages: Sequence[Page], clients: int, requests: int) -> dict[str, Any]:
    """``clients`` clients at once, each making ``requests`` requests in turn over every served page."""
    urls = [url for page in pages for url in page.urls[:4]]
    if not urls:
        return {"concurrent_p95_ms": None, "errors": 0, "concurrent_requests": 0}
    latencies, failures, wall = _crowd(base_url, urls, clients, requests)
    figures = _figures(latencies) if latencies else {"p50_ms": None, "p95_ms": None, "max_ms": None}
    return {
        "concurrent_p95_ms": figures["p95_ms"],
        "concurrent_p50_ms": figures["p50_ms"],
        "concurrent_max_ms": figures["max_ms"],
        "errors": len(failures),
        "clients": clients,
        "concurrent_requests": clients * requests,
        "requests_per_s": round(clients * requests / wall, 1),
        "error_examples": sorted(set(failures))[:5],
    }
