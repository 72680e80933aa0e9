"""What the public site gives away or breaks on: a running race's per-submission, per-category figures on
``/scores`` before the race finished, and a huge ``page`` (or ``page_size``) on a paginated endpoint,
which must be refused with a 422 naming the bound, not answered with a 500 or a reset connection.

The validator's history is ``site_scenario``'s (real race log and trajectory store, on a manual clock):
alice's race is running with her race attempts stored; bob's qualifying run is stored but not scored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.validator.api import create_app
from arena.validator.api.site.paging import MAX_PAGE, MAX_PAGE_SIZE
from arena.validator.runs import run_id_for
from tests.arena.validator.site_scenario import Scenario, build_scenario, finish_the_race
from tests.servers import running_server

HUGE = (10**30, 2**63, 2**63 - 1, MAX_PAGE + 1)
PAGINATED = ("/scores", "/api/leaderboard", "/api/leaderboard/history", "/dumps", "/api/dumps",
             "/api/submissions/{alice}/attempts", "/submissions/{alice}/page")
"""Every route of the API that takes ``?page=``."""


def _serve(root: Path) -> Iterator[tuple[Scenario, httpx.Client]]:
    scenario = build_scenario(root, finish_race=False)
    with running_server(create_app(scenario.view)) as url, httpx.Client(base_url=url) as http:
        yield scenario, http
    scenario.close()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Scenario, httpx.Client]]:
    yield from _serve(tmp_path)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Scenario, httpx.Client]]:
    """The same history, shared by the cases that only read it."""
    yield from _serve(tmp_path_factory.mktemp("site"))


def test_a_running_race_shows_no_per_category_figures_until_it_finishes(
        running: tuple[Scenario, httpx.Client]) -> None:
    scenario, http = running
    race_run = run_id_for("race", scenario.alice, ["p1", "p2"])
    during = http.get("/scores").json()
    assert during["total"] == 3  # alice's qualifying run, bob's, the race run: all listed
    assert all(row["run_id"] != race_run and row["kind"] != "race" for row in during["items"])
    assert race_run in during["withheld"]
    bob_run = run_id_for("qualifying", scenario.bob, ["q"])  # not scored yet: withheld too
    assert bob_run in during["withheld"] and all(row["run_id"] != bob_run for row in during["items"])
    assert {row["run_id"] for row in during["items"]} == {run_id_for("qualifying", scenario.alice, ["q"])}

    finish_the_race(scenario)
    after = http.get("/scores").json()
    assert race_run not in after["withheld"]
    race_rows = [row for row in after["items"] if row["run_id"] == race_run]
    assert race_rows and sum(row["attempts"] for row in race_rows) == 7


@pytest.mark.parametrize("route", PAGINATED)
@pytest.mark.parametrize("number", HUGE)
def test_a_huge_page_is_refused_with_a_clear_422(
        site: tuple[Scenario, httpx.Client], route: str, number: int) -> None:
    scenario, http = site
    path = route.format(alice=scenario.alice)
    answer = http.get(path, params={"page": str(number)})
    assert answer.status_code == 422, answer.text[:300]
    assert "page" in answer.text and f"{MAX_PAGE:,}".replace(",", "") in answer.text.replace(",", "")


@pytest.mark.parametrize("route", [r for r in PAGINATED if r != "/dumps"])  # /dumps has a fixed page size
def test_a_huge_page_size_is_refused_with_a_clear_422(
        site: tuple[Scenario, httpx.Client], route: str) -> None:
    scenario, http = site
    for size in (10**30, 2**63, MAX_PAGE_SIZE + 1):
        answer = http.get(route.format(alice=scenario.alice), params={"page_size": str(size)})
        assert answer.status_code == 422 and "page_size" in answer.text, answer.text[:300]


@pytest.mark.parametrize("route", PAGINATED)
def test_the_last_allowed_page_is_answered(site: tuple[Scenario, httpx.Client], route: str) -> None:
    scenario, http = site
    sized = {} if route == "/dumps" else {"page_size": str(MAX_PAGE_SIZE)}
    answer = http.get(route.format(alice=scenario.alice), params={"page": str(MAX_PAGE), **sized})
    assert answer.status_code == 200, answer.text[:300]
