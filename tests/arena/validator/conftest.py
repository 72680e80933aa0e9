"""Fixtures of the public site's tests (``site_support``): one network-demo store per session served
by the validator API on loopback, and headless Chromium with a request-recording tab per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.race import ManualClock
from arena.validator.api import ArenaView, create_app
from shoppingbench.sample_world import SampleWorld
from tests.arena.validator.site_support import (
    SITE_CLOCK_AFTER_RACE,
    BrowserPage,
    DemoSite,
    RequestLog,
    browser_missing,
    build_demo_site,
    launch_chromium,
    open_site_view,
)
from tests.demo_support import DEMO_START
from tests.servers import running_server


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory: pytest.TempPathFactory, small_world: SampleWorld) -> DemoSite:
    """``arena network-demo`` run once per session (about half a minute), its clock from ``DEMO_START``."""
    return build_demo_site(tmp_path_factory.mktemp("site-demo"), small_world, start=DEMO_START)


@pytest.fixture(scope="session")
def site_clock(demo_site: DemoSite) -> ManualClock:
    return ManualClock(demo_site.finished_at + SITE_CLOCK_AFTER_RACE)


@pytest.fixture(scope="session")
def site_view(demo_site: DemoSite, site_clock: ManualClock) -> Iterator[ArenaView]:
    with open_site_view(demo_site, site_clock) as view:
        yield view


@pytest.fixture(scope="session")
def site_url(site_view: ArenaView) -> Iterator[str]:
    """The validator API over the demo's stores, under uvicorn on loopback."""
    with running_server(create_app(site_view)) as url:
        yield url


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One headless Chromium per session (skips, saying why, where it or Playwright is missing)."""
    missing = browser_missing()
    if missing is not None:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with (
        sync_playwright() as playwright,
        launch_chromium(playwright, tmp_path_factory.mktemp("chromium") / "profile") as context,
    ):
        yield context


@pytest.fixture
def browser_page(chromium: object) -> Iterator[BrowserPage]:
    """A fresh tab whose every request is recorded and any leaving the host aborted; the test fails at
    teardown if one tried."""
    from playwright.sync_api import BrowserContext

    assert isinstance(chromium, BrowserContext)
    log = RequestLog()
    page = chromium.new_page()
    page.route("**/*", log.handle)
    try:
        yield BrowserPage(page=page, requests=log)
    finally:
        page.close()
    assert not log.outside, f"requests left the host: {log.outside}"


@pytest.fixture
def screenshots_tmp(tmp_path: Path) -> Path:
    return tmp_path / "screenshots"
