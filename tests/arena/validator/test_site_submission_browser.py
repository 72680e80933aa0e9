"""The submission page and the attempt viewer in headless Chromium: rendered from a network-demo
validator's stores (``site_support``), with no request leaving the host; and a trajectory holding
``<script>alert(1)</script>`` (``site_scenario``) shows it as text, with no dialog."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.race.state import RaceState
from arena.validator.api import ArenaView, create_app
from tests.arena.validator.site_scenario import XSS, build_scenario
from tests.arena.validator.site_support import BrowserPage, screenshot
from tests.servers import running_server

pytestmark = pytest.mark.browser


def test_the_winners_page_and_one_of_its_attempts_render_from_the_network_demo(
    site_url: str, site_view: ArenaView, browser_page: BrowserPage, screenshots_tmp: Path
) -> None:
    state: RaceState = site_view.state()
    assert state.reign is not None
    browser_page.open(f"{site_url}/submissions/{state.reign.submission_id}/page")
    page = browser_page.page
    assert page.locator("#status").inner_text() == state.submissions[state.reign.submission_id].status
    steps = page.locator("#timeline tr.step").all_inner_texts()
    assert any("qualified" in s for s in steps) and any("promoted" in s for s in steps)
    assert page.locator("#scores tr.run").count() >= 2  # its qualifying run and the race
    bars = page.locator("#gates svg.bar-chart rect.bar")
    assert (
        bars.count() == 6 and sum(int(b) for b in bars.evaluate_all("e => e.map(x => x.dataset.value)")) > 0
    )
    assert "under embargo until" in page.locator("#code").inner_text()
    links = page.locator("#attempts a[href^='/attempts/']")
    assert links.count() > 0
    screenshot(page, "submission", screenshots_tmp)

    links.first.click()
    page.wait_for_load_state("load")
    assert page.url.startswith(f"{site_url}/attempts/")
    assert page.locator("#query pre").inner_text().strip()
    assert page.locator("#proxy-log .proxy-call").count() > 0
    assert page.locator("#recommendation table.targets tr").count() >= 2
    assert page.locator("#judge").inner_text().strip() and page.locator("#filter").inner_text().strip()
    screenshot(page, "attempt", screenshots_tmp)
    browser_page.requests.assert_loopback_only()


def test_a_script_in_a_trajectory_shows_as_text_and_never_runs(
    tmp_path: Path, browser_page: BrowserPage
) -> None:
    scenario = build_scenario(tmp_path)
    dialogs: list[str] = []
    page = browser_page.page
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        with running_server(create_app(scenario.view)) as url:
            (attempt_id,) = scenario.attempts["xss"]
            browser_page.open(f"{url}/attempts/{attempt_id}")
            assert XSS in (page.locator("#step-0 pre.reasoning").text_content() or "")
            assert XSS in page.locator("#proxy-log table.results").first.inner_text()
            assert page.locator("main script").count() == 0
            browser_page.open(f"{url}/submissions/{scenario.alice}/page")
    finally:
        scenario.close()
    assert dialogs == []
    browser_page.requests.assert_loopback_only()
