"""The leaderboard (``GET /``, ``/api/leaderboard``, ``/api/leaderboard/history``): in headless Chromium
over a network-demo validator's stores, and over race logs the real race engine writes (several days,
a change of reign, hostile text) served by the API under uvicorn on loopback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from arena.judge import ProblemOutcome, quality_coefficient
from arena.race import (
    ManualClock,
    MemoryEventStore,
    RaceEngine,
    RaceRules,
    Rejection,
    embargo_until,
    race_slot,
)
from arena.submissions.store import FileStore
from arena.validator.api import ArenaView, create_app
from arena.validator.api.site.pages import duration
from arena.validator.api.site.paging import MAX_PAGE_SIZE, PageParams
from arena.validator.api.views.leaderboard import leaderboard, next_race
from arena.validator.demo import AFTER_SLOT
from neurons.network_demo import demo_race_tick
from shoppingbench.problems.models import CATEGORIES
from tests.arena.validator.site_support import SITE_CLOCK_AFTER_RACE, BrowserPage, DemoSite, screenshot
from tests.demo_support import DEMO_START, demo_race_time
from tests.servers import running_server
from trajectories.store import ProblemEntry, TrajectoryStore

HOSTILE = "<script>window.__pwned=1</script>"
T0 = datetime(2026, 11, 16, 9, 0, tzinfo=UTC)  # a Monday
DEMO_BLOCK = timedelta(seconds=12)  # the local chain's block time, the demo's
COUNTDOWN = re.compile(r'id="embargo-countdown" data-remaining="(\d+)">\s*([^<]*?)\s*</span>')


def embargo_countdown(view: ArenaView) -> str:
    """What the page's countdown shows, from the view's own figure: the embargo's remaining time, clamped
    at 0 (``0m``) once its end has passed and the code is not published yet."""
    remaining = leaderboard(view, PageParams(page=1, page_size=MAX_PAGE_SIZE)).embargo_remaining_s
    assert remaining is not None, "no winner under embargo"
    return duration(timedelta(seconds=remaining))


@dataclass(frozen=True)
class EngineLog:
    """A race log the real engine wrote: alice wins day one, ``HOSTILE`` takes the crown on day two; the
    engine and its store stay open to write more."""

    view: ArenaView
    clock: ManualClock
    ids: dict[str, str]
    engine: RaceEngine
    events: MemoryEventStore
    problems: list[str]


def _race(
    engine: RaceEngine, clock: ManualClock, seed: str, problems: list[str], runs: dict[str, str]
) -> None:
    clock.advance(datetime.combine(clock.now().date(), time(16), tzinfo=UTC) - clock.now())
    engine.start_race(seed, problems)
    for sid in engine.pending_race_runs():
        run = runs[engine.state.submissions[sid].hotkey]
        engine.record_race_result(
            sid,
            run.count("1") / len(run),
            [
                ProblemOutcome(problem_id=p, success=c == "1", quality=0.9)
                for p, c in zip(problems, run, strict=True)
            ],
        )


@pytest.fixture
def engine_log(tmp_path: Path) -> Iterator[EngineLog]:
    """Two race days and a rejected upload whose reason carries ``HOSTILE`` (miner-derived text), the
    challenger's hotkey too; the race problems registered in a real SQLite trajectory store."""
    clock = ManualClock(T0)
    events = MemoryEventStore()
    engine = RaceEngine(events, RaceRules(), clock)
    store = TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}")
    problems = [f"p{n}" for n in range(30)]
    store.register_problems(
        ProblemEntry(id=p, category=CATEGORIES[n % 3], query="q") for n, p in enumerate(problems)
    )
    ids = {}
    runs = {"alice": "1" * 10 + "0" * 20, "bob": "1" * 5 + "0" * 25, HOSTILE: "1" * 30}
    for day, hotkeys in enumerate((["alice", "bob"], [HOSTILE])):
        for hotkey in hotkeys:
            sid = engine.submit(hotkey, f"{hotkey}-code", commitment_block=day).submission_id
            assert sid is not None
            ids[hotkey] = sid
            winner_score = None if engine.state.reign is None else 0.1
            assert engine.record_qualifying(sid, 0.5, winner_score=winner_score).qualified
        _race(engine, clock, f"0xseed{day}", problems, runs)
        clock.advance(timedelta(hours=17 if day == 0 else 5))  # day two ends at 21:00, under embargo
    engine.submit("mallory", "m-code", Rejection(kind="integrity", reason=f"embedded text {HOSTILE}"))
    view = ArenaView(events=events, store=store, files=FileStore(tmp_path / "agents"), clock=clock)
    yield EngineLog(view=view, clock=clock, ids=ids, engine=engine, events=events, problems=problems)
    store.close()


def test_the_api_pages_standings_and_history_with_cache_headers(engine_log: EngineLog) -> None:
    with running_server(create_app(engine_log.view)) as url, httpx.Client(base_url=url) as http:
        board = http.get("/api/leaderboard", params={"page_size": 1})
        assert board.headers["cache-control"] == "public, max-age=30"
        body = board.json()
        assert (body["total"], body["page"], body["page_size"], len(body["items"])) == (2, 1, 1, 1)
        first = body["items"][0]
        assert (first["hotkey"], first["winner"], first["race_score"]) == (HOSTILE, True, 1.0)
        assert [c["category"] for c in first["categories"]] == sorted(CATEGORIES)
        assert all(c["problems"] == 10 and c["success_rate"] == 1.0 for c in first["categories"])
        assert first["coefficient"] == quality_coefficient(0.9) and first["page"] == (
            f"/submissions/{engine_log.ids[HOSTILE]}/page"
        )
        second = http.get("/api/leaderboard", params={"page": 2, "page_size": 1}).json()["items"]
        assert [s["hotkey"] for s in second] == ["alice"]
        assert (
            http.get(
                "/api/leaderboard", headers={"If-None-Match": board.headers["etag"]}, params={"page_size": 1}
            ).status_code
            == 304
        )

        past = http.get("/api/leaderboard/history", params={"days": 30}).json()
        assert [(d["day"], d["winner_score"], d["promoted"]) for d in past["items"]] == [
            ("2026-11-17", 1.0, True),
            ("2026-11-16", 10 / 30, True),
        ]
        assert past["items"][1]["best_challenger_score"] == past["items"][1]["field_median"] == 5 / 30
        assert [(r["hotkey"], r["start"], r["end"]) for r in past["reigns"]] == [
            ("alice", "2026-11-16", "2026-11-16"),
            (HOSTILE, "2026-11-17", "2026-11-17"),
        ]
        assert http.get("/api/leaderboard/history", params={"days": 0}).status_code == 422
        assert http.get("/api/leaderboard/history", params={"page_size": 500}).status_code == 422
        today = http.get("/api/leaderboard/history", params={"days": 1}).json()
        assert [d["day"] for d in today["items"]] == ["2026-11-17"]
        assert [r["hotkey"] for r in today["reigns"]] == [HOSTILE]

        schema = http.get("/openapi.json").json()
        for path, model in (
            ("/api/leaderboard", "Leaderboard"),
            ("/api/leaderboard/history", "LeaderboardHistory"),
        ):
            answer = schema["paths"][path]["get"]
            assert answer["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(model)
            assert {"page", "page_size"} <= {p["name"] for p in answer["parameters"]}


def test_what_a_challenger_must_beat_follows_the_rules_and_the_clock(engine_log: EngineLog) -> None:
    view, clock = engine_log.view, engine_log.clock
    with running_server(create_app(view)) as url:
        board = httpx.get(url + "/api/leaderboard").json()
    rules, reign = view.race_rules, view.state().reign
    assert reign is not None
    upcoming = next_race(clock.now(), rules)
    assert upcoming == datetime(2026, 11, 18, 16, 0, tzinfo=UTC) > clock.now()
    assert challenge_age(board) == pytest.approx((upcoming - reign.since) / timedelta(days=1))
    challenge = board["challenge"]
    assert challenge["margin_at_next_race"] == pytest.approx(rules.margin.margin(upcoming - reign.since))
    assert challenge["winner_race_score"] == 1.0
    assert challenge["qualifying_bar_estimate"] == pytest.approx(rules.qualify_ratio * 1.0)
    assert challenge["last_qualifying_threshold"] == pytest.approx(rules.qualify_ratio * 0.1)
    assert challenge["last_lead_lower_bound"] is not None
    assert challenge["last_lead_lower_bound"] > challenge["last_required_margin"]  # it was promoted
    until = view.state().embargoed[reign.submission_id]
    assert board["embargo_remaining_s"] == (until - clock.now()).total_seconds() > 0


def test_the_history_follows_the_growing_log_as_a_full_replay_would(engine_log: EngineLog) -> None:
    """Each request folds in only the new events; the history then equals one built from scratch."""
    view, engine, clock = engine_log.view, engine_log.engine, engine_log.clock
    with running_server(create_app(view)) as url, httpx.Client(base_url=url) as http:
        before = http.get("/api/leaderboard/history").json()
        assert before["total"] == 2
        carol = engine.submit("carol", "carol-code", commitment_block=2).submission_id
        assert carol is not None and engine.record_qualifying(carol, 0.9, winner_score=0.1).qualified
        clock.advance(timedelta(hours=11))  # Wednesday 08:00, before the slot
        _race(engine, clock, "0xseed2", engine_log.problems, {"carol": "0" * 30, HOSTILE: "1" * 30})
        after = http.get("/api/leaderboard/history").json()
        board = http.get("/api/leaderboard").json()
    assert [d["day"] for d in after["items"]] == ["2026-11-18", "2026-11-17", "2026-11-16"]
    assert after["items"][0]["winner_hotkey"] == HOSTILE and after["items"][0]["promoted"] is False
    assert [s["hotkey"] for s in board["items"]] == [HOSTILE, "carol"]
    fresh = ArenaView(events=engine_log.events, store=view.store, files=view.files, clock=clock)
    assert fresh.followed() == view.followed()  # folding forward equals a full replay


def challenge_age(board: dict[str, Any]) -> float:
    age = board["challenge"]["reign_age_days"]
    assert isinstance(age, float)
    return age


@pytest.mark.browser
def test_hostile_text_from_the_log_shows_as_text_in_every_place_it_appears(
    engine_log: EngineLog, browser_page: BrowserPage
) -> None:
    with running_server(create_app(engine_log.view)) as url:
        browser_page.open(url + "/")
        page = browser_page.page
        assert page.evaluate("window.__pwned") is None
        scripts = page.eval_on_selector_all("script", "els => els.map(e => e.textContent)")
        assert len(scripts) == 1 and "countdown" in scripts[0]  # only the page's own
        for where in ("#winner", "#standings", "#submissions"):
            assert HOSTILE in page.locator(where).inner_text()
        reign = page.locator("svg.reign-bar rect.reign").last.get_attribute("data-label")
        assert reign is not None and reign.startswith(HOSTILE[:10])
    browser_page.requests.assert_loopback_only()


@pytest.mark.browser
def test_the_leaderboard_of_the_network_demo_in_chromium(
    demo_site: DemoSite, site_url: str, site_view: ArenaView, browser_page: BrowserPage, screenshots_tmp: Path
) -> None:
    state = site_view.state()
    last = state.last_race
    assert last is not None and state.reign is not None
    browser_page.open(site_url + "/")
    page = browser_page.page

    rows = page.locator("#standings tr")
    assert rows.count() == 1 + len(last.standings)
    headers = rows.first.locator("th").all_inner_texts()
    assert headers[3:6] == sorted(CATEGORIES) and headers[-4:] == [
        "success",
        "mean quality",
        "coefficient",
        "race score",
    ]
    links = page.locator("#standings tr td:nth-child(2) a").evaluate_all("els => els.map(a => a.pathname)")
    assert links == [f"/submissions/{sid}/page" for sid in last.standings]
    scores = page.locator("#standings tr td:last-child").all_inner_texts()
    assert scores == [f"{last.results[sid]:.4f}" for sid in last.standings]

    countdown = page.locator("#embargo-countdown").inner_text()
    assert countdown == embargo_countdown(site_view)
    for card in ("#qualifying-bar", "#margin", "#promotion-bound"):
        assert page.locator(f"{card} .figure").inner_text().strip()

    lines = page.locator("svg.line-chart path.series")
    assert lines.count() >= 1 and all(v for v in lines.evaluate_all("ps => ps.map(p => p.dataset.values)"))
    winner_line = lines.first.get_attribute("data-values") or ""
    assert winner_line.endswith(f"{last.day.toordinal()}:{last.results[last.winner]:.4f}")
    reigns = page.locator("svg.reign-bar rect.reign")
    assert reigns.count() == 1 and reigns.first.get_attribute("data-end") == str(site_view.clock.now().date())
    box = reigns.first.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0
    browser_page.requests.assert_loopback_only()
    screenshot(page, "leaderboard", screenshots_tmp)
    assert date.fromisoformat(str(reigns.first.get_attribute("data-start"))) <= site_view.clock.now().date()


@pytest.mark.parametrize(
    "start",
    [
        # the race ends near midnight: the embargo has ended by the site's clock, the code is not published
        datetime(2026, 12, 1, 22, 11, tzinfo=UTC),
        datetime(2026, 11, 20, 23, 50, tzinfo=UTC),  # the slot at midnight, the race on Sunday
        DEMO_START,  # Monday 09:00
    ],
    ids=["tuesday-22:11", "friday-23:50", "monday-09:00"],
)
def test_from_any_demo_start_the_page_shows_the_countdown_its_view_computes(
    start: datetime, tmp_path: Path
) -> None:
    """The demo's calendar from ``start`` (its race tick, the winner's embargo, the site's clock two hours
    after the race) on the real race engine and leaderboard page, without running the demo."""
    rules = RaceRules(race_time=demo_race_time(start))
    tick = demo_race_tick(start, rules, block=DEMO_BLOCK)
    # the slot 10 minutes after the start falls inside the first weights epoch: the race is a later day's
    assert tick == race_slot(tick.date(), rules.race_time) + AFTER_SLOT
    assert timedelta(minutes=20) < tick - start < timedelta(days=2)
    clock = ManualClock(start)
    events = MemoryEventStore()
    engine = RaceEngine(events, rules, clock)
    sid = engine.submit("alice", "alice-code", commitment_block=0).submission_id
    assert sid is not None and engine.record_qualifying(sid, 0.5).qualified
    clock.advance(tick - clock.now())
    engine.start_race("0xseed", ["p0"])
    engine.record_race_result(sid, 1.0, [ProblemOutcome(problem_id="p0", success=True, quality=0.9)])
    last, reign = engine.state.last_race, engine.state.reign
    assert last is not None and last.finished_at == tick
    assert reign is not None and reign.submission_id == sid
    assert engine.state.embargoed[sid] == embargo_until(last.day)
    clock.advance(SITE_CLOCK_AFTER_RACE)

    with TrajectoryStore.open(f"sqlite:///{tmp_path / 'trajectories.sqlite3'}") as store:
        store.register_problems([ProblemEntry(id="p0", category=CATEGORIES[0], query="q")])
        view = ArenaView(
            events=events, store=store, files=FileStore(tmp_path / "agents"), clock=clock, race_rules=rules
        )
        shown = COUNTDOWN.search(TestClient(create_app(view)).get("/").text)
        board = leaderboard(view, PageParams(page=1, page_size=MAX_PAGE_SIZE))
    assert shown is not None, "no embargo countdown on the page"
    assert shown[2] == embargo_countdown(view)
    assert board.embargo_remaining_s is not None and int(shown[1]) == int(board.embargo_remaining_s)
    # the one rule: the remaining time until the embargo's end, 0 once it has passed unpublished
    until = engine.state.embargoed[sid]
    assert board.embargo_remaining_s == max(0.0, (until - clock.now()).total_seconds())
