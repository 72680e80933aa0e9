"""The public site under load: its pages over a month of a busy validator, on SQLite and PostgreSQL.

    python -m benchmarks.site [--days 30] [--attempts-per-day 27000] [--quick] [--backends sqlite,postgresql]

Builds (``benchmarks.site.build``, cached under ``$ARENA_HOME/bench/site/`` by its parameters, so re-runs
skip it) ``--days`` days of ``--attempts-per-day`` synthetic attempts (``trajectories.doubles.synthetic``,
as ``benchmarks.store`` makes them) with the race log, agent files and dump directory they imply
(``benchmarks.site.world``), then serves the validator API over them the way ``validator run`` does:
``create_app`` under uvicorn on loopback, in its own process. One httpx client then requests each page
(leaderboard ``/``, a submission page, an attempt viewer, the dumps index) ``--requests`` times, and
``--clients`` clients at once make ``--client-requests`` requests each over all of them.
PostgreSQL gets a throwaway database on the loopback server (``--pg-server``) holding a copy of the
SQLite world's rows (``trajectories.store.copy``: the same attempts, ids and race log), dropped at the
end. Every SELECT the API sends is explained afterwards (``benchmarks.site.plans``, ``--plans``).

The last line printed is one JSON object: ``page_p95_ms`` (the worst page's p95, single client),
``pages`` (each page's figures, or ``missing`` for a page this build does not serve),
``concurrent_p95_ms`` and ``errors``, ``health_crowd`` (the same crowd on ``/health``, the cheapest
route the cache does not answer: a thread-pool route reading the race log's length), ``full_scans``
(statements reading a whole table of attempts or problems) for SQLite at the top level, the same under
``postgresql``, and the 1-minute load average around each phase (the machine is shared).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import httpx
import orjson

from arena.race import ManualClock, SqlEventStore
from arena.race.state import replay
from arena.submissions.store import FileStore
from benchmarks.site.build import World, WorldSpec, build_sqlite, copy_world
from benchmarks.site.load import Page, concurrent, present, single_client
from benchmarks.site.plans import PlanRecorder
from shoppingbench.logs import configure_logging
from trajectories.store import TrajectoryStore
from trajectories.store.engine import DEFAULT_POSTGRES_SERVER, scratch_postgres_database

QUICK = {"days": 3, "attempts_per_day": 360, "requests": 10, "clients": 40, "client_requests": 3}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def serve(world: World, now: float, urls: Any, stop: Event, plans: Path) -> None:
    """The validator API over ``world``, as ``validator run`` serves it, until ``stop`` is set; then the
    plans of the statements it sent, to ``plans`` (:mod:`.plans`)."""
    from arena.validator.api import ArenaView, create_app
    from shoppingbench.tools.serving import running_server

    configure_logging("console", "warning")
    store = TrajectoryStore.open(world.store_url)
    events = SqlEventStore.open(world.events_url)
    recorder = PlanRecorder([store.engine, events.engine])
    view = ArenaView(
        events=events,
        store=store,
        files=FileStore(world.files),
        clock=ManualClock(datetime.fromtimestamp(now, UTC)),
    )
    _attach_dumps(view, world.dumps)
    with running_server(create_app(view), host="127.0.0.1", port=0) as url:
        urls.put(url)
        stop.wait()
    plans.write_bytes(orjson.dumps(recorder.explain(), option=orjson.OPT_INDENT_2))
    store.close()


def _attach_dumps(view: Any, dumps: Path) -> None:
    """Point the view at the dump directory (``ArenaView.dumps_dir``, where this build's view has it)."""
    if hasattr(view, "dumps_dir"):
        view.dumps_dir = dumps


def pages(world: World, base_url: str, ids: int = 20) -> list[Page]:
    """The four pages, with submissions from the race log and attempts the API lists for them."""
    events = SqlEventStore.open(world.events_url)
    state = replay(events.load())
    events.engine.dispose()
    raced = sorted(
        (s for s in state.submissions.values() if s.races), key=lambda s: (s.submitted_at, s.submission_id)
    )
    chosen = ([state.reign.submission_id] if state.reign else []) + [s.submission_id for s in raced[-ids:]]
    chosen = list(dict.fromkeys(chosen))[:ids]
    attempts: list[str] = []
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for sid in chosen[:5]:
            response = client.get(f"/api/submissions/{sid}/attempts", params={"page_size": 4})
            if response.is_success:
                for item in response.json().get("items", []):
                    key = item.get("attempt_id", item.get("id"))
                    if key is not None:
                        attempts.append(str(key))
    return [
        Page("leaderboard", ("/",)),
        Page("submission", tuple(f"/submissions/{sid}/page" for sid in chosen)),
        Page("attempt", tuple(f"/attempts/{key}" for key in attempts)),
        Page("dumps", ("/dumps",)),
    ]


def measure(world: World, spec: WorldSpec, args: argparse.Namespace, backend: str) -> dict[str, Any]:
    """Serve ``world`` in a child process and run both client phases against it."""
    context = multiprocessing.get_context("spawn")
    urls, stop = context.Queue(), context.Event()
    plans = Path(tempfile.mkdtemp(prefix="bench-site-plans-")) / "plans.json"
    server = context.Process(target=serve, args=(world, spec.end, urls, stop, plans), name="site-api")
    server.start()
    figures: dict[str, Any] = {}
    try:
        base_url = urls.get(timeout=600)
        wanted = pages(world, base_url)
        served, first = present(base_url, wanted)
        statuses = ", ".join(f"{name} {f['status']}" for name, f in first.items())
        _say(f"  serving {base_url}; pages {statuses}")
        figures["load_before"] = _load()
        single = single_client(base_url, served, args.requests)
        page_figures = {name: {**first[name], **single.get(name, {})} for name in first}
        figures["pages"] = page_figures
        p95s = [f["p95_ms"] for f in single.values()]
        figures["page_p95_ms"] = max(p95s) if p95s else None
        figures["missing"] = sorted(n for n, f in first.items() if f["status"] == "missing")
        _say("  single client: " + ", ".join(f"{n} p95 {f['p95_ms']} ms" for n, f in single.items()))
        figures["load_single"] = _load()
        figures.update(concurrent(base_url, served, args.clients, args.client_requests))
        figures["load_concurrent"] = _load()
        _say(
            f"  {args.clients} clients: p95 {figures['concurrent_p95_ms']} ms, errors {figures['errors']}, "
            f"{figures['requests_per_s']} requests/s (load {figures['load_concurrent']})"
        )
        health = concurrent(base_url, [Page("health", ("/health",))], args.clients, args.client_requests)
        figures["health_crowd"] = {
            "p95_ms": health["concurrent_p95_ms"],
            "requests_per_s": health["requests_per_s"],
            "errors": health["errors"],
            "load": _load(),
        }
        _say(
            f"  the same crowd on /health (not cached): p95 {health['concurrent_p95_ms']} ms, "
            f"{health['requests_per_s']} requests/s"
        )
    finally:
        stop.set()
        server.join(120)
        if server.is_alive():
            server.terminate()
    keep = None if args.plans is None else args.plans.with_name(f"{args.plans.stem}-{backend}.json")
    figures.update(_plans(plans, keep))
    return figures


def _plans(recorded: Path, keep: Path | None) -> dict[str, Any]:
    """How many distinct statements the pages sent and which read a big table whole."""
    if not recorded.exists():
        return {"statements": None, "full_scans": None}
    plans = orjson.loads(recorded.read_bytes())
    if keep is not None:
        shutil.copyfile(recorded, keep)
        _say(f"  query plans: {keep}")
    shutil.rmtree(recorded.parent)
    scans = [{"sql": p["sql"][:160], "tables": p["scans"]} for p in plans if p["scans"]]
    _say(f"  {len(plans)} distinct statements, {len(scans)} reading a big table whole")
    return {"statements": len(plans), "full_scans": scans}


def run_postgresql(spec: WorldSpec, sqlite_world: World, args: argparse.Namespace) -> dict[str, Any]:
    """The same world copied into a throwaway PostgreSQL database (agent files and dumps shared)."""
    with (
        scratch_postgres_database(args.pg_server, prefix="arena_bench_site") as pg_url,
        tempfile.TemporaryDirectory(prefix="bench-site-pg-") as tmp,
    ):
        url = pg_url.render_as_string(hide_password=False)
        world = replace(sqlite_world, root=Path(tmp), store_url=url, events_url=url)
        for name in ("agents", "dumps"):
            (Path(tmp) / name).symlink_to(sqlite_world.root / name)
        figures = {"copy": copy_world(sqlite_world, world, _say)}
        return {**figures, **measure(world, spec, args, "postgresql")}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.site",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--attempts-per-day", type=int, default=27_000)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a tiny world and few requests: {QUICK} (for tests; explicit flags win)",
    )
    parser.add_argument("--requests", type=int, default=100, help="requests per page, single client")
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients")
    parser.add_argument("--client-requests", type=int, default=10, help="requests per concurrent client")
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma list of sqlite, postgresql")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="where built worlds are cached (default: $ARENA_HOME, else ~/.arena)",
    )
    parser.add_argument(
        "--plans", type=Path, default=None, help="write each backend's query plans to PLANS-<backend>.json"
    )
    parser.add_argument(
        "--pg-server",
        default=DEFAULT_POSTGRES_SERVER,
        help="PostgreSQL URL allowed to CREATE DATABASE (a throwaway database is made and dropped)",
    )
    raw = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(raw)
    if args.quick:
        for name, value in QUICK.items():
            if f"--{name.replace('_', '-')}" not in raw:
                setattr(args, name, value)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgresql"} or "sqlite" not in backends:
        parser.error("--backends: sqlite, optionally with postgresql")
    configure_logging("console", "warning")
    home = args.home or Path(os.environ.get("ARENA_HOME") or Path.home() / ".arena")
    spec = WorldSpec(days=args.days, attempts_per_day=args.attempts_per_day)
    results: dict[str, Any] = {
        "days": spec.days,
        "attempts_per_day": spec.attempts_per_day,
        "attempts": spec.days * spec.attempts_per_day,
        "cpus": os.cpu_count(),
        "load_average_1m": _load(),
    }
    _say("sqlite:")
    world, build = build_sqlite(spec, home, _say)
    results["build"] = build
    results.update(measure(world, spec, args, "sqlite"))
    if "postgresql" in backends:
        _say("postgresql:")
        results["postgresql"] = run_postgresql(spec, world, args)
    print(orjson.dumps(results).decode())
