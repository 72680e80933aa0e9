"""Trajectory store throughput: ingest, label and export one realistic day, on SQLite and PostgreSQL.

    python -m benchmarks.store [--attempts 27000] [--backends sqlite,postgresql]

A synthetic day (``trajectories.doubles.synthetic``: ReAct, sub-task and scripted agents in equal parts, about
20 steps and 25 proxy calls per attempt; the steps and each request's messages parsed from JSON as the
runner and the proxy parse them) is generated in memory first, each record carrying its echo
measure as the harness's grader builds them (``AttemptRecord.measure_echoes``: in ``generate``, like the
runner's work while the sandbox waits on the model), then timed phase by phase:
``ingest`` (``write_attempts``: encoding, compression, commits), ``filter`` (``dump label``'s pass:
read, decode, label, store the verdicts) and ``export`` (``dump export`` of the day: Parquet, JSONL.gz,
manifest). Each backend runs in its own process so its peak RSS is its own. The SQLite file lives in
a temporary directory; PostgreSQL gets a throwaway database on the loopback server (``--pg-server``).
Every phase also reports this process's CPU seconds and the 1-minute load average at its end: on a
shared machine wall time alone misleads; on a virtual machine also the share of the CPU time the host
gave to other guests meanwhile (``steal_share``, from ``/proc/stat``), which slows every phase unseen
by the load. The last line printed is one JSON object with
``ingest_per_s``, ``filter_per_s``, ``export_s``, ``peak_rss_mb`` and ``bytes_per_attempt`` (the SQLite
file, or PostgreSQL's ``pg_total_relation_size`` of the store's tables, over the attempts) per
backend, with ``encode_cpu_ms_per_attempt``: one thread's CPU time to encode an attempt's row on this
machine (the ingest rate on two cores is bound by it, so it tells a slow machine from slow code).
``python`` names the interpreter (its version and path): its build changes the figures.
``peak_rss_mb`` is the backend process's own peak; a store given records without their echo
measure also runs echo processes (``trajectories/store/ingest.py``; not here, since every record carries
it), and ``ingest_peak_rss_with_echo_processes_mb`` is the peak of their sum with the backend process
(sampled every 0.2 s).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import text

from shoppingbench.logs import configure_logging
from shoppingbench.records import AttemptRecord
from trajectories.doubles.synthetic import synthetic_day
from trajectories.dumps import DumpWindow, export_dump
from trajectories.labelling import label_stored
from trajectories.store import TrajectoryStore
from trajectories.store.engine import DEFAULT_POSTGRES_SERVER, scratch_postgres_database
from trajectories.store.entries import AttemptWrite
from trajectories.store.rows import attempt_parts, attempt_row

DAY_START = datetime(2026, 11, 21, tzinfo=UTC)
AGENTS = 60
CALIBRATION_ATTEMPTS = 500
PG_TABLES_SIZE = ("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                  "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                  "AND c.relkind = 'r'")
"""The store's tables with their indexes and TOAST, as PostgreSQL counts them."""


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _rss_mb(pid: int | str) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # the process ended meanwhile
        return 0.0
    rss = (int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:"))
    return next(rss, 0.0)


class _TreeRss(threading.Thread):
    """Samples the resident memory of this process and its children (the store's echo processes)
    together, since each one's own peak (``ru_maxrss``) says nothing about their sum."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mb = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.2):
            total = _rss_mb("self") + sum(_rss_mb(c.pid) for c in multiprocessing.active_children() if c.pid)
            self.peak_mb = max(self.peak_mb, total)

    def stop(self) -> float:
        self._done.set()
        self.join()
        return round(self.peak_mb, 1)


def _cpu_s() -> float:
    """This process's CPU seconds and its finished children's (the store's echo processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _cpu_ticks() -> tuple[int, int] | None:
    """The machine's (stolen, all) CPU ticks so far (``/proc/stat``), or ``None`` off Linux. On a virtual
    machine, time the host gives to other guests (steal) slows every phase without showing in the load."""
    try:
        fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def phase(name: str, figures: dict[str, Any]) -> Iterator[None]:
    """Time a phase: wall seconds, and this process's CPU seconds (all threads and the echo processes;
    not PostgreSQL's own) with the load average and the CPU time stolen by the host, since the machine is
    shared and wall time alone misleads."""
    wall, cpu, ticks = time.perf_counter(), _cpu_s(), _cpu_ticks()
    yield
    figures[f"{name}_wall_s"] = round(time.perf_counter() - wall, 2)
    figures[f"{name}_cpu_s"] = round(_cpu_s() - cpu, 2)
    figures[f"{name}_load_1m"] = round(os.getloadavg()[0], 2)
    if ticks is not None and (after := _cpu_ticks()) is not None and after[1] > ticks[1]:
        figures[f"{name}_steal_share"] = round((after[0] - ticks[0]) / (after[1] - ticks[1]), 3)


def encode_cpu_ms(records: list[AttemptRecord]) -> float:
    """The CPU milliseconds one thread spends encoding an attempt's row (JSON, compression, hash): the
    machine's speed at the store's own work, so figures from machines (or hours) of different speed can
    be compared; the ingest rate is bound by it on two cores."""
    start = time.thread_time()
    for record in records:
        write = AttemptWrite(record=record)
        attempt_row(write, attempt_parts(record), 0)
    return round((time.thread_time() - start) / len(records) * 1000, 3)


def _run(url: str, attempts: int, out: Path) -> dict[str, Any]:
    day = synthetic_day(day_start=DAY_START.timestamp(), problems=math.ceil(attempts / AGENTS), agents=AGENTS)
    figures: dict[str, Any] = {}
    with phase("generate", figures):
        # As the validator's runner makes them: each record carries its echo measure, taken when it was
        # built (the grader), so the timed ingest stores that count instead of measuring again.
        records = list(day.attempts(attempts, measure_echoes=True))
    figures["mean_steps"] = round(statistics.fmean(len(r.steps) for r in records), 1)
    figures["mean_proxy_calls"] = round(statistics.fmean(len(r.proxy_log) for r in records), 1)
    _say(f"  generated {attempts} attempts in {figures['generate_wall_s']} s "
         f"({figures['mean_steps']} steps, {figures['mean_proxy_calls']} proxy calls per attempt)")
    figures["encode_cpu_ms_per_attempt"] = encode_cpu_ms(records[:CALIBRATION_ATTEMPTS])
    _say(f"  this machine encodes an attempt in {figures['encode_cpu_ms_per_attempt']} ms of CPU "
         "(one thread: JSON, compression, hash)")
    with TrajectoryStore.open(url) as store:
        store.register_problems(day.problems)
        for agent in day.agents:
            store.register_agent(agent.entry)
        for run in day.runs():
            store.register_run(run)

        tree = _TreeRss()
        tree.start()
        with phase("ingest", figures):
            store.write_attempts(records)
        figures["ingest_peak_rss_with_echo_processes_mb"] = tree.stop()
        figures["ingest_per_s"] = round(attempts / figures["ingest_wall_s"], 1)
        figures["ingest_cpu_ms_per_attempt"] = round(figures["ingest_cpu_s"] / attempts * 1000, 3)
        _say(f"  ingest: {figures['ingest_wall_s']} s, {figures['ingest_per_s']} attempts/s "
             f"({figures['ingest_cpu_s']} CPU s, load {figures['ingest_load_1m']}, "
             f"steal {figures.get('ingest_steal_share', '-')})")
        del records

        with phase("filter", figures):
            label_stored(store, progress=False)
        figures["filter_per_s"] = round(attempts / figures["filter_wall_s"], 1)
        _say(f"  filter: {figures['filter_wall_s']} s, {figures['filter_per_s']} attempts/s "
             f"({figures['filter_cpu_s']} CPU s, load {figures['filter_load_1m']})")

        with phase("export", figures):
            manifest = export_dump(store, DumpWindow.day(DAY_START.date()), out, progress=False)
        figures["export_s"] = figures["export_wall_s"]
        figures["export_mb"] = round(sum(f["bytes"] for f in manifest["files"].values()) / 2**20, 1)
        figures["labels"] = manifest["stats"]["counts"]["label"]
        _say(f"  export: {figures['export_s']} s, {figures['export_mb']} MiB, splits {manifest['splits']} "
             f"({figures['export_cpu_s']} CPU s, load {figures['export_load_1m']})")
        if store.engine.dialect.name == "postgresql":
            with store.engine.connect() as connection:
                size = int(connection.execute(text(PG_TABLES_SIZE)).scalar_one())
            figures["store_mb"] = round(size / 2**20, 1)
            figures["bytes_per_attempt"] = round(size / attempts)
    figures["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    return figures


def run_backend(backend: str, attempts: int, pg_server: str) -> dict[str, Any]:
    """One backend from scratch, in the calling process (the parent runs each in a fresh one)."""
    configure_logging("console", "warning")
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        if backend == "sqlite":
            url = f"sqlite:///{Path(tmp) / 'store.sqlite3'}"
            figures = _run(url, attempts, Path(tmp) / "dump")
            size = sum(p.stat().st_size for p in Path(tmp).glob("store.sqlite3*"))
            figures["store_mb"] = round(size / 2**20, 1)
            figures["bytes_per_attempt"] = round(size / attempts)
            return figures
        with scratch_postgres_database(pg_server, prefix="arena_bench") as pg_url:
            return _run(pg_url.render_as_string(hide_password=False), attempts, Path(tmp) / "dump")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=27_000)
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma list of sqlite, postgresql")
    parser.add_argument("--pg-server", default=DEFAULT_POSTGRES_SERVER,
                        help="PostgreSQL URL allowed to CREATE DATABASE (a throwaway database is made "
                             "and dropped)")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"sqlite", "postgresql"}
    if unknown:
        parser.error(f"unknown backends {sorted(unknown)}")

    # The interpreter's build matters here: Debian's Python 3.11 (the Docker images') ingests 4-5% faster
    # than a pyenv build of the same version without PGO (docs/trajectories.md#benchmark).
    results: dict[str, Any] = {"attempts": args.attempts, "cpus": os.cpu_count(),
                               "load_average_1m": round(os.getloadavg()[0], 2),
                               "python": f"{platform.python_version()} ({sys.executable})"}
    context = multiprocessing.get_context("spawn")
    for backend in backends:
        _say(f"{backend}:")
        # Not a multiprocessing.Pool: its daemonic worker could not start the store's echo processes.
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            results[backend] = pool.submit(run_backend, backend, args.attempts, args.pg_server).result()
    print(orjson.dumps(results).decode())


if __name__ == "__main__":
    main()
