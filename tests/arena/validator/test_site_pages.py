"""The site without a CDN or dead ends: Swagger UI and ReDoc served from the package (``fastapi-offline``)
and the site's own error pages for browsers (``arena.validator.api.site.errors``), JSON kept for API
clients; checked over HTTP and in headless Chromium with every request recorded."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.race import ManualClock, MemoryEventStore
from arena.submissions.store import FileStore
from arena.validator.api import ArenaView, create_app
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.tools.server import create_app as create_tools_app
from tests.arena.validator.site_support import BrowserPage, DemoSite, screenshot
from tests.servers import running_server
from trajectories.store import TrajectoryStore

ASSETS = "/static-offline-docs"
"""Where ``fastapi_offline`` serves Swagger UI's and ReDoc's files."""
HTML = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    view = ArenaView(events=MemoryEventStore(), store=store, files=FileStore(tmp_path / "agents"),
                     clock=ManualClock(datetime(2026, 11, 20, tzinfo=UTC)))
    return TestClient(create_app(view), raise_server_exceptions=False)


def _asset_urls(html: str) -> list[str]:
    return [*re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", html),
            *re.findall(r"""url: ['"]([^'"]+)['"]""", html)]


@pytest.mark.parametrize("app", ["validator", "tools"])
def test_the_api_docs_load_nothing_from_another_host(app: str, client: TestClient,
                                                     small_engine: BM25SearchEngine) -> None:
    http = client if app == "validator" else TestClient(create_tools_app(small_engine))
    for page, marker in (("/docs", "SwaggerUIBundle"), ("/redoc", "<redoc")):
        docs = http.get(page)
        assert docs.status_code == 200 and marker in docs.text
        urls = _asset_urls(docs.text)
        assert urls and all(u.startswith("/") for u in urls), urls  # every file from this host
        for url in urls:
            answer = http.get(url)
            assert answer.status_code == 200 and answer.content, url
    assert http.get(f"{ASSETS}/swagger-ui-bundle.js").headers["content-type"].startswith(
        ("text/javascript", "application/javascript"))


def test_a_missing_page_is_the_sites_page_for_a_browser_and_json_for_a_client(client: TestClient) -> None:
    page = client.get("/no/such/page", headers=HTML)
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert 'id="error-status">404 · Not Found' in page.text and 'href="/"' in page.text
    missing = client.get("/attempts/999999", headers=HTML)
    assert missing.status_code == 404 and "no public attempt 999999" in missing.text
    invalid = client.get("/attempts/not-a-number", headers=HTML)
    assert invalid.status_code == 422 and 'id="error-status">422' in invalid.text
    assert "attempt_id" in invalid.text
    assert client.get("/no/such/page").json() == {"detail": "Not Found"}
    assert client.get("/api/dumps/2001-01-01").headers["content-type"] == "application/json"
    hostile = client.get("/attempts/<script>alert(1)</script>", headers=HTML)
    assert "<script>alert(1)" not in hostile.text  # the detail is escaped text


def test_a_failing_page_is_the_sites_error_page(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise RuntimeError("the store is gone")

    monkeypatch.setattr(ArenaView, "state", lambda self: broken())
    page = client.get("/", headers=HTML)
    assert page.status_code == 500 and 'id="error-status">500 · Internal Server Error' in page.text
    assert "the store is gone" not in page.text  # the log says why, not the page
    assert client.get("/race").text == "Internal Server Error"  # an API client's answer is unchanged


@pytest.mark.browser
def test_the_api_docs_and_a_missing_page_in_chromium(site_url: str, browser_page: BrowserPage,
                                                     screenshots_tmp: Path) -> None:
    page = browser_page.page
    browser_page.open(site_url + "/docs")
    page.wait_for_selector(".opblock", timeout=30_000)  # Swagger UI rendered the operations
    assert page.locator(".opblock").count() >= 10
    assert page.locator(".opblock-summary-path", has_text="/api/dumps").count() >= 1
    screenshot(page, "docs", screenshots_tmp)
    answer = page.goto(site_url + "/no/such/page", wait_until="load")
    assert answer is not None and answer.status == 404
    assert page.locator("#error-status").inner_text() == "404 · Not Found"
    page.locator("a", has_text="the leaderboard").click()
    page.wait_for_load_state("load")
    assert page.url.rstrip("/") == site_url.rstrip("/")
    browser_page.requests.assert_loopback_only()
    assert any(f"{ASSETS}/swagger-ui-bundle.js" in url for url in browser_page.requests.seen)


@pytest.mark.browser
def test_hotkeys_fold_and_the_attempt_page_shows_its_verdict_first_in_chromium(
        site_url: str, site_view: ArenaView, browser_page: BrowserPage, screenshots_tmp: Path) -> None:
    state = site_view.state()
    assert state.reign is not None
    hotkey = state.submissions[state.reign.submission_id].hotkey
    page = browser_page.page
    browser_page.open(f"{site_url}/submissions/{state.reign.submission_id}/page")
    card = page.locator("div.hotkey details.key").first
    summary = card.locator("summary")
    assert summary.inner_text() == f"{hotkey[:6]}…{hotkey[-5:]}" and summary.get_attribute("title") == hotkey
    assert not card.locator("code").is_visible()
    summary.click()
    assert card.locator("code").inner_text() == hotkey  # opened: the whole key, to select and copy
    page.locator("#attempts a[href^='/attempts/']").first.click()
    page.wait_for_load_state("load")
    order = page.eval_on_selector_all("main section", "els => els.map(e => e.id)")
    assert order == ["query", "recommendation", "judge", "filter", "steps", "proxy-log"]
    folds = page.locator("#proxy-log details.fold")
    assert folds.count() > 0 and not page.locator("pre.completion").first.is_visible()
    folds.first.locator("summary").click()
    assert folds.first.locator("pre").is_visible()
    screenshot(page, "attempt-folded", screenshots_tmp)
    browser_page.requests.assert_loopback_only()


@pytest.mark.browser
def test_a_site_without_races_shows_no_empty_charts_in_chromium(client: TestClient,
                                                                 browser_page: BrowserPage) -> None:
    assert 'id="no-charts"' in client.get("/", headers=HTML).text
    view = client.app.state.view  # type: ignore[attr-defined]
    with running_server(create_app(view)) as url:
        browser_page.open(url + "/")
        page = browser_page.page
        assert page.locator("svg.chart").count() == 0
        assert "appear after the first" in page.locator("#no-charts").inner_text()
    browser_page.requests.assert_loopback_only()


def test_the_network_demo_holds_its_validators_up_until_told(demo_site: DemoSite) -> None:
    """``arena network-demo --serve`` keeps the servers up while its ``hold`` waits: the demo the site is
    built from looked at its validator's ``/health`` then, before anything went down."""
    assert list(demo_site.served.values()) == [200]
