"""Build the site benchmark's validator records once, and find them again: cached by their parameters.

A built world is a directory holding the trajectory store (SQLite; ``copy_world`` copies it into
another database, e.g. a throwaway PostgreSQL one), the race log (``arena.sqlite3``), the accepted agent files
(``agents/``) and a dump directory with one exported day per day (``dumps/YYYY-MM-DD``). The first day is
exported for real (``trajectories.dumps.export_dump``); the other days are hard links to its files with
their own window in the manifest and card, since the dumps index reads manifests only and a real export
of every day would take longer than the pages take to measure. A ``built.json`` written last marks a
directory as complete; one without it is removed and built again.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, timedelta
from pathlib import Path

import orjson

from arena.race import SqlEventStore
from arena.race.events import CodePublished, RaceFinished
from arena.submissions.store import FileStore
from benchmarks.site.world import AGENTS, DAY0, Day, History, agent_entries, registered_problems
from trajectories.dumps import DumpWindow, export_dump
from trajectories.dumps.card import render_card
from trajectories.store import TrajectoryStore
from trajectories.store.copy import copy_store
from trajectories.store.entries import AgentEntry

BUILD_VERSION = 2
"""Bump when the generated world changes: cached worlds of another version are not reused."""


@dataclass(frozen=True)
class WorldSpec:
    days: int
    attempts_per_day: int

    @property
    def key(self) -> str:
        return f"v{BUILD_VERSION}-{self.days}d-{self.attempts_per_day}a"

    @property
    def end(self) -> float:
        """The moment the benchmark's clock reads: the morning after the last day."""
        return (DAY0 + timedelta(days=self.days, hours=6)).timestamp()


@dataclass(frozen=True)
class World:
    root: Path
    store_url: str
    events_url: str

    @property
    def files(self) -> Path:
        return self.root / "agents"

    @property
    def dumps(self) -> Path:
        return self.root / "dumps"


def fill(spec: WorldSpec, world: World, say: Callable[[str], None]) -> dict[str, float]:
    """Write every day's attempts, race log and agent files into ``world`` (empty stores)."""
    history = History()
    events = SqlEventStore.open(world.events_url)
    files = FileStore(world.files)
    wall = time.perf_counter()
    with TrajectoryStore.open(world.store_url) as store:
        for index in range(spec.days):
            day = Day(index=index, attempts=spec.attempts_per_day, history=history)
            store.register_problems(registered_problems(day))
            for agent in agent_entries(day):
                store.register_agent(agent)
            for run in day.runs():
                store.register_run(run)
            started = time.perf_counter()
            store.write_attempts(day.writes())
            for run in day.runs():  # the race runs, now that the entrants are known
                store.register_run(run)
            log = day.events()
            events.append(log, expected=events.count())
            for entrant in day.entrants:
                files.put(entrant.code_hash, entrant.code.encode())
            for event in log:
                _record_embargo(store, history, event)
            rate = spec.attempts_per_day / (time.perf_counter() - started)
            say(
                f"  day {index + 1}/{spec.days}: {spec.attempts_per_day} attempts at {rate:.0f}/s, "
                f"{len(log)} events, load {os.getloadavg()[0]:.1f}"
            )
    events.engine.dispose()
    return {"build_s": round(time.perf_counter() - wall, 1), "agents_per_day": AGENTS}


def _record_embargo(store: TrajectoryStore, history: History, event: object) -> None:
    """Winners' embargo and publication, as the validator records them beside the agent's code."""
    if isinstance(event, RaceFinished) and event.promoted and event.embargo_until is not None:
        winner = history.winners[event.winner]
        store.register_agent(
            AgentEntry(
                code_hash=winner.code_hash,
                hotkey=winner.hotkey,
                embargo_until=event.embargo_until.timestamp(),
            )
        )
    elif isinstance(event, CodePublished):
        winner = history.winners[event.submission_id]
        store.register_agent(
            AgentEntry(code_hash=winner.code_hash, hotkey=winner.hotkey, published_at=event.at.timestamp())
        )


def export_days(spec: WorldSpec, world: World, say: Callable[[str], None]) -> float:
    """The dump directory: the first day exported, the others linked to its files (see the module doc)."""
    first = DumpWindow.day(DAY0.date())
    out = world.dumps / first.label
    started = time.perf_counter()
    with TrajectoryStore.open(world.store_url) as store:
        manifest = export_dump(store, first, out, progress=False)
    seconds = round(time.perf_counter() - started, 1)
    say(f"  exported {first.label} in {seconds} s; linking {spec.days - 1} more days")
    for index in range(1, spec.days):
        window = DumpWindow.day((DAY0 + timedelta(days=index)).date())
        target = world.dumps / window.label
        shutil.copytree(
            out, target, copy_function=os.link, ignore=shutil.ignore_patterns("manifest.json", "README.md")
        )
        since, until = (
            m.astimezone(UTC).isoformat().replace("+00:00", "Z") for m in (window.since, window.until)
        )
        copy = {
            **manifest,
            "window": {"label": window.label, "since": since, "until": until, "embargo_cutoff": until},
        }
        (target / "README.md").write_text(render_card(copy))
        (target / "manifest.json").write_bytes(
            orjson.dumps(copy, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        )
    return seconds


def copy_world(source: World, target: World, say: Callable[[str], None]) -> dict[str, float]:
    """``source``'s trajectory store and race log copied into ``target``'s (empty) databases."""
    started = time.perf_counter()
    with TrajectoryStore.open(source.store_url) as reader, TrajectoryStore.open(target.store_url) as writer:
        copied = copy_store(reader, writer)
    log, into = SqlEventStore.open(source.events_url), SqlEventStore.open(target.events_url)
    into.append(log.load(), expected=0)
    for events in (log, into):
        events.engine.dispose()
    seconds = round(time.perf_counter() - started, 1)
    say(f"  copied {copied['attempts']} attempts and {into.count()} race events in {seconds} s")
    return {"copy_s": seconds, "attempts": copied["attempts"]}


def build_sqlite(spec: WorldSpec, home: Path, say: Callable[[str], None]) -> tuple[World, dict[str, float]]:
    """The SQLite world of ``spec`` under ``home``: reused when a complete one exists, else built."""
    root = home / "bench" / "site" / spec.key
    world = World(
        root=root,
        store_url=f"sqlite:///{root / 'store.sqlite3'}",
        events_url=f"sqlite:///{root / 'arena.sqlite3'}",
    )
    marker = root / "built.json"
    if marker.exists():
        say(f"  reusing the built world {root}")
        figures: dict[str, float] = orjson.loads(marker.read_bytes())["figures"]
        return world, figures
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    figures = fill(spec, world, say)
    figures["export_s"] = export_days(spec, world, say)
    marker.write_bytes(orjson.dumps({"spec": asdict(spec), "figures": figures}))
    return world, figures
