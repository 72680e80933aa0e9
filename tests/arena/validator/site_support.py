"""What the public site's tests share: a network-demo validator's stores opened read-only behind the API
on loopback, and headless Chromium driven by Playwright with every request recorded.

- :func:`build_demo_site`: ``arena network-demo`` (one validator, 3 problems per category) into a
  directory, once per session, its clock starting at a fixed instant (``tests.demo_support``); the stores
  it leaves (race log, trajectory store, agent files) are the site's real data. :func:`open_site_view`
  opens them as an :class:`ArenaView` on a manual clock.
- :func:`launch_chromium`: Debian's ``/usr/bin/chromium`` (``apt-get install -y chromium``; the
  ``playwright`` wheel brings only its driver) with :data:`CHROMIUM_FLAGS` and a fresh user-data-dir.
- :class:`RequestLog`: a Playwright route handler that records every request the page makes and aborts
  any that would leave the host; a test asserts :meth:`RequestLog.assert_loopback_only`.
- :func:`screenshot`: a PNG of the page, into ``docs/images/site-NAME.png`` when
  ``ARENA_UPDATE_SCREENSHOTS=1`` (the README's pictures), else under the test's tmp dir.

Where Chromium or Playwright is missing, :func:`browser_missing` says which, and the ``browser``-marked
tests skip with that reason (CI installs both: ``scripts/bootstrap.sh``).
"""

from __future__ import annotations

import io
import ipaddress
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import httpx
from rich.console import Console

from arena.race import ManualClock, SqlEventStore, replay
from arena.settings import ArenaSettings
from arena.storage import open_database
from arena.submissions.store import FileStore
from arena.validator.api import ArenaView
from arena.validator.assemble import agent_files_dir
from neurons.network_demo import run_network_demo
from shoppingbench.sample_world import SampleWorld
from tests.demo_support import DEMO_START, demo_race_time
from tests.sandbox_support import UID_BASE
from trajectories.dumps import DumpWindow, export_dump
from trajectories.store import TrajectoryStore

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Playwright, Route

ROOT: Final = Path(__file__).resolve().parents[3]
SCREENSHOTS_DIR: Final = ROOT / "docs" / "images"
CHROMIUM: Final = "/usr/bin/chromium"
CHROMIUM_FLAGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
DEMO_VALIDATOR: Final = "validator-1"
SITE_CLOCK_AFTER_RACE: Final = timedelta(hours=2)
"""Where the site's clock stands: two hours after the demo's race finished (from ``DEMO_START`` the
embargo still runs then)."""
LOCAL_SCHEMES: Final = frozenset({"data", "blob", "about", "chrome-error"})


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (``None``: they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return "Debian's chromium is not installed (apt-get install -y chromium)"
    return None


def chromium_path() -> str:
    return CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))


@dataclass(frozen=True)
class DemoSite:
    """A network demo's output: ``home`` is its validator's data directory (race log, trajectories,
    agent files); ``finished_at`` is when its last race finished; ``output`` is what the demo printed."""

    root: Path
    home: Path
    settings: ArenaSettings
    finished_at: datetime
    output: str
    dumps: Path | None = None
    """The demo's daily dumps (``dump export`` of each day with attempts), which the site serves."""
    served: dict[str, int] = field(default_factory=dict)
    """What each validator's ``GET /health`` answered while the demo held its servers up (``hold``, as
    ``--serve`` does)."""


def build_demo_site(root: Path, world: SampleWorld, *, start: datetime = DEMO_START) -> DemoSite:
    """Run ``arena network-demo`` (one validator) into ``root`` from ``start``: real uploads, qualifying, a
    race."""
    settings = ArenaSettings(
        home=root / "home",
        sandbox_uid_base=UID_BASE,
        workers=2,
        qualifying_suite_per_category=3,
        race_suite_per_category=3,
        race_time_utc=demo_race_time(start),
    )
    console = Console(file=io.StringIO(), width=200)
    served: dict[str, int] = {}

    def hold(urls: Sequence[str]) -> None:  # what `--serve` keeps up, looked at before it goes down
        served.update({url: httpx.get(f"{url}/health", timeout=30).status_code for url in urls})

    run_network_demo(settings, world, root / "demo", validators=1, console=console, start=start, hold=hold)
    home = root / "demo" / DEMO_VALIDATOR
    own = settings.model_copy(update={"home": home})
    database = open_database(own.arena_database_url())
    try:
        state = replay(SqlEventStore(database).load())
    finally:
        database.dispose()
    assert state.last_race is not None, "the network demo finished no race"
    output = console.file.getvalue()  # type: ignore[attr-defined]
    own = own.model_copy(update={"dumps_dir": root / "dumps"})
    first, last = attempt_days(own)
    export_demo_days(own, first=first, last=last)
    return DemoSite(
        root=root,
        home=home,
        settings=own,
        finished_at=state.last_race.finished_at,
        output=output,
        dumps=own.dumps_root(),
        served=served,
    )


def attempt_days(settings: ArenaSettings) -> tuple[date, date]:
    """The first and last UTC day of the attempts in the settings' trajectory store: the sandbox stamps
    them with the real time, not the demo's clock."""
    with TrajectoryStore.open(settings.trajectory_store_url()) as store:
        started = [row.started_at for row in store.fetch(store.attempt_ids())]
    assert started, "the network demo stored no attempt"
    first, last = (datetime.fromtimestamp(t, UTC).date() for t in (min(started), max(started)))
    return first, last


def export_demo_days(settings: ArenaSettings, *, first: date, last: date) -> list[date]:
    """``dump export`` of each day in ``first..last`` whose attempts the demo stored, into the settings'
    dumps folder (as the validator's operator runs it); the days exported."""
    exported = []
    with TrajectoryStore.open(settings.trajectory_store_url()) as store:
        day = first
        while day <= last:
            window = DumpWindow.day(day)
            if store.attempt_ids(window.since.timestamp(), window.until.timestamp()):
                export_dump(store, window, settings.dumps_root() / day.isoformat(), progress=False)
                exported.append(day)
            day += timedelta(days=1)
    return exported


@contextmanager
def open_site_view(site: DemoSite, clock: ManualClock) -> Iterator[ArenaView]:
    """The demo validator's stores as the API reads them, on ``clock``."""
    with ExitStack() as stack:
        database = open_database(site.settings.arena_database_url())
        stack.callback(database.dispose)
        store = TrajectoryStore.open(site.settings.trajectory_store_url())
        stack.callback(store.close)
        yield ArenaView(
            events=SqlEventStore(database),
            store=store,
            files=FileStore(agent_files_dir(site.settings)),
            clock=clock,
            race_rules=site.settings.race_rules,
            dumps_dir=site.dumps,
        )


def is_loopback(url: str) -> bool:
    """Whether fetching ``url`` stays on this host (loopback address, ``localhost`` or a local scheme)."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    host = parts.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class RequestLog:
    """Every request a page made; those leaving the host were aborted and are listed in ``outside``."""

    seen: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def handle(self, route: Route) -> None:
        url = route.request.url
        self.seen.append(url)
        if is_loopback(url):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort("blockedbyclient")

    def assert_loopback_only(self) -> None:
        assert self.seen, "the page made no request at all: was the route handler installed?"
        assert not self.outside, f"requests left the host: {self.outside}"


@contextmanager
def launch_chromium(playwright: Playwright, user_data_dir: Path) -> Iterator[BrowserContext]:
    """Headless Debian Chromium with a fresh profile in ``user_data_dir``."""
    shutil.rmtree(user_data_dir, ignore_errors=True)
    context = playwright.chromium.launch_persistent_context(
        str(user_data_dir),
        executable_path=chromium_path(),
        headless=True,
        args=list(CHROMIUM_FLAGS),
        viewport={"width": 1200, "height": 900},
        service_workers="block",
    )
    try:
        yield context
    finally:
        context.close()


@dataclass
class BrowserPage:
    """A fresh tab whose every request goes through ``requests``."""

    page: Page
    requests: RequestLog

    def open(self, url: str) -> Any:
        """Go to ``url``; fails on an HTTP error status."""
        response = self.page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        return response


def screenshot(page: Page, name: str, tmp_dir: Path) -> Path:
    """A full-page PNG of ``page``: ``docs/images/site-NAME.png`` with ``ARENA_UPDATE_SCREENSHOTS=1``,
    else ``tmp_dir/site-NAME.png``; fails when the picture is blank (one colour)."""
    folder = SCREENSHOTS_DIR if os.environ.get("ARENA_UPDATE_SCREENSHOTS") == "1" else tmp_dir
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"site-{name}.png"
    data = page.screenshot(path=str(path), full_page=True)
    assert data.startswith(b"\x89PNG") and len(set(data[200:2000])) > 8, f"{path} looks blank"
    return path
