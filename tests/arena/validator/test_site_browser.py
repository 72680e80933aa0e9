"""The public site in headless Chromium over a network-demo validator's stores (``site_support``): each
page renders from real data, with no request leaving the host."""

from __future__ import annotations

import httpx
import pytest

from arena.race.state import RaceState
from arena.validator.api import ArenaView
from tests.arena.validator.site_support import BrowserPage

pytestmark = pytest.mark.browser


def test_the_leaderboard_renders_styled_with_the_race_and_no_request_leaves_the_host(
    site_url: str, site_view: ArenaView, browser_page: BrowserPage
) -> None:
    state: RaceState = site_view.state()
    assert state.last_race is not None
    browser_page.open(site_url + "/")
    page = browser_page.page
    nav = page.locator("header nav a")
    assert nav.all_inner_texts() == ["Leaderboard", "Dumps", "API docs"]
    assert page.locator('header nav a[aria-current="page"]').inner_text() == "Leaderboard"
    # The stylesheet came from the package (/static/site.css) and applies.
    assert page.evaluate("getComputedStyle(document.querySelector('main')).maxWidth") == "1100px"
    standings = page.locator("#standings tr").all_inner_texts()
    assert len(standings) == 1 + len(state.last_race.standings)
    requests = browser_page.requests
    requests.assert_loopback_only()
    assert any(url.endswith("/static/site.css") for url in requests.seen)


def test_the_stylesheet_is_served_from_the_package_with_cache_headers(site_url: str) -> None:
    css = httpx.get(site_url + "/static/site.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    page = httpx.get(site_url + "/")
    assert page.headers["cache-control"].startswith("public, max-age=")
    assert httpx.get(site_url + "/", headers={"If-None-Match": page.headers["etag"]}).status_code == 304
