"""Validator capacity: the real validator path at 4, 16 and 64 slots against an LLM with realistic latency.

    python -m benchmarks.capacity [--slots 4,16,64] [--runs 4] [--problems-per-run 60]
                                  [--concurrent-runs 2] [--sandbox auto] [--quick]

Each slot count submits a busy day's *shape*: ``--runs`` runs of ``--problems-per-run`` problems owed
together, computed ``--concurrent-runs`` at a time (default ``ARENA_CONCURRENT_RUNS``') through the
validator's own :class:`~arena.validator.concurrent.RunPool` over its
:class:`~arena.validator.runs.SuiteRun`, every run's sandboxes sharing one
:class:`~shoppingbench.sandbox.budget.SlotBudget` of that many slots, as ``Validator.tick()`` computes
the runs it owes. Real pieces: the configured sandbox backend (``auto``: docker when its engine answers
and the sandbox image is built, else namespace), the verified proxy, the production grader, the LLM
judge (with its offline fallback), the run recorder and a SQLite trajectory store. Only the hosted LLM
is a double (``benchmarks.capacity.llm``, in a process of its own): every call, the agent's and the
judge's, waits a lognormal time fitted to ``--p50``/``--p95`` (default 2 s and 8 s), and the agent
makes ``--calls`` (default 8-20, seeded per problem) model calls per problem, each followed by a
catalog search, before its scripted answer.

Per slot count: ``attempts_per_hour`` (attempts / wall time, slot start-up and the last wave's tail
included), ``steady_per_hour`` (the attempts finished by the moment the last attempt started, over
that time: while some run still had a problem for every slot that freed up; start-up included, the
attempts in flight at that moment not counted, so it errs low), ``tail_s`` (from that moment to the
end: the last wave, no queued problem left for the freed slots), ``slot_bound_per_hour`` (slots x 3600
/ the mean attempt's own duration: the slots never idle), ``slot_utilisation`` (the attempts' summed
durations / slots x wall), the peak RSS of the validator process and of the sandboxes,
``rss_mb_per_slot`` (sandbox peak / slots), the validator's own CPU share (its CPU time / wall time /
cores), the machine's and the load average. Over all: ``lost_attempts`` and ``doubled_attempts`` (the
store's attempt keys against the ones scheduled), the store's bytes per attempt (its file's growth over
the runs / attempts) and ``busy_day_hours_16_slots``: a busy day's attempts (200 qualifying runs of 60
problems and a 150-problem race with 10 entrants: 13,500) at the 16-slot *steady* rate, plus two
16-slot tails (a busy day's runs are owed as a backlog: one last wave when the qualifying runs owed run
out, one when the race's do), with the store's growth for that day. ``busy_day_hours_16_slots_plain``
is the plain extrapolation at ``attempts_per_hour`` (a start-up and a tail every ``--runs`` runs). The
last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import orjson

from arena.settings import ArenaSettings
from arena.validator.assemble import sandbox_runner
from arena.validator.concurrent import RunPool
from arena.validator.runs import SuiteRun, run_id_for
from benchmarks.capacity.llm import (
    AGENT_MODEL,
    JUDGE_MODEL,
    Latency,
    LatencyPolicy,
    agent_source,
    served_double,
)
from benchmarks.capacity.probe import (
    MemorySampler,
    cpu_s,
    lost_and_doubled,
    machine_busy,
    store_bytes,
    stored_keys,
)
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.grading.grader import Grader
from shoppingbench.logs import configure_logging
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.sample_world import ensure_sample_world
from shoppingbench.sandbox.backends import BackendName, SandboxUnavailable, make_backend
from shoppingbench.sandbox.budget import SlotBudget
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, inference_config
from shoppingbench.search.base import SearchEngine
from shoppingbench.settings import HarnessSettings
from trajectories.store import AttemptKey, RunEntry, StoredAttempt, TrajectoryStore

BUSY_DAY_QUALIFYING_RUNS = 200
BUSY_DAY_QUALIFYING_PROBLEMS = 60
BUSY_DAY_RACE_PROBLEMS = 150
BUSY_DAY_RACE_ENTRANTS = 10
BUSY_DAY_ATTEMPTS = (BUSY_DAY_QUALIFYING_RUNS * BUSY_DAY_QUALIFYING_PROBLEMS
                     + BUSY_DAY_RACE_PROBLEMS * BUSY_DAY_RACE_ENTRANTS)
"""13,500: a busy day's attempts (the defending winner's runs on challengers' problems come on top)."""
BUSY_DAY_TAILS = 2
"""Last waves in a busy day whose runs are owed as a backlog: the qualifying runs', then the race's (a
tick computes the qualifying runs it owes, then the race's runs)."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def choose_backend(name: str, image: str) -> BackendName:
    """``auto``: docker when the engine answers and has the image, else namespace; or the named one."""
    if name != "auto":
        if name not in ("namespace", "docker", "none"):
            raise SystemExit(f"unknown sandbox backend {name!r}: auto, namespace, docker or none")
        return cast(BackendName, name)
    try:
        probe = subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30)
        engine_up = probe.returncode == 0
        make_backend("docker", docker_image=image).check()
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable):
        engine_up = False
    return "docker" if engine_up else "namespace"


@dataclass(frozen=True)
class Bench:
    """What every slot count shares: settings, catalog, grader, agent, suite pool, store."""

    settings: ArenaSettings
    engine: SearchEngine
    grader: Grader
    agent: AgentFile
    problems: list[Problem]
    store: TrajectoryStore
    exclude: tuple[int, ...]


def _suite_pool(world_dir: Path, products: int, needed: int) -> tuple[Path, list[Problem]]:
    """The world's catalog and ``needed`` of its problems, the categories interleaved."""
    world = ensure_sample_world(world_dir, products=products, seed=0, progress=False)
    per_category = -(-needed // len(CATEGORIES))
    suite = world.suite(per_category)
    by_category = {c: [p for p in suite if p.category == c] for c in CATEGORIES}
    interleaved = [p for group in zip(*by_category.values(), strict=False) for p in group]
    if len(interleaved) < needed:
        raise SystemExit(f"the world has {len(interleaved)} problems, {needed} are needed: "
                         "use more --products")
    return world.catalog_dir, interleaved[:needed]


@dataclass(frozen=True)
class Shape:
    """A busy day's shape at one slot count: ``runs`` runs of ``problems`` problems owed together, computed
    ``concurrent`` at a time over one slot budget, as a validator's tick computes the runs it owes."""

    runs: int
    problems: int
    concurrent: int


def measure(bench: Bench, slots: int, shape: Shape,
            label: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``shape``'s runs at ``slots`` slots through the validator's own concurrent path: its RunPool over
    SuiteRun, the runner sharing one SlotBudget of ``slots`` sandboxes."""
    suite = bench.problems[:shape.problems]
    ids = [p.id for p in suite]
    run_ids = [run_id_for("race", f"capacity-{label}-{slots}-{i}", ids) for i in range(shape.runs)]
    sandbox = SandboxConfig.from_settings(bench.settings)
    run_agent = sandbox_runner(bench.engine, bench.grader, inference=inference_config(bench.settings),
                               sandbox=sandbox, workers=slots, budget=SlotBudget(slots))
    runs = SuiteRun(store=bench.store, run_agent=run_agent, judge=bench.settings.judge(),
                    validator="capacity-benchmark", leak_config=bench.settings.leak_clusters,
                    judge_concurrency=bench.settings.judge_concurrency)
    cores = os.cpu_count() or 1
    busy0, total0 = machine_busy()
    cpu0, children0 = cpu_s(), cpu_s(resource.RUSAGE_CHILDREN)
    started, started_epoch = time.perf_counter(), time.time()
    # DockerBackend.container_name: "sb-" + the run id's first 12 characters, the same for these runs.
    prefix = f"sb-{run_ids[0][:12]}-" if sandbox.backend == "docker" else None
    with MemorySampler(exclude=bench.exclude, container_prefix=prefix) as memory, \
            RunPool(shape.concurrent) as pool:
        pending = [pool.submit(run_id, functools.partial(
            runs.judged, RunEntry(id=run_id, kind="race", suite=f"capacity-{label}"), agent=bench.agent,
            hotkey=None, submitted_at=None, suite=suite)) for run_id in run_ids]
        judged = [p.result() for p in pending]  # taken in order, as the validator records them
    wall, ended_epoch = time.perf_counter() - started, time.time()
    busy1, total1 = machine_busy()
    stored = [a for run_id in run_ids for pid in ids
              if (a := bench.store.get_attempt(AttemptKey(run_id, bench.agent.sha256, pid))) is not None]
    attempts = len(run_ids) * len(ids)
    figures = {"slots": slots, "runs": shape.runs, "problems_per_run": shape.problems,
               "concurrent_runs": shape.concurrent, "attempts": attempts, "wall_s": round(wall, 1),
               "attempts_per_hour": round(attempts / wall * 3600, 1),
               **_steady(stored, slots, started_epoch, ended_epoch),
               "validator_rss_mb": round(memory.validator_peak_kb / 1024, 1),
               "sandbox_rss_mb": round(memory.sandbox_peak_kb / 1024, 1),
               "rss_mb_per_slot": round(memory.sandbox_peak_kb / 1024 / slots, 1),
               "sandbox_processes": memory.sandbox_peak_processes,
               "validator_cpu_share": round((cpu_s() - cpu0) / wall / cores, 3),
               "sandbox_child_cpu_share": round((cpu_s(resource.RUSAGE_CHILDREN) - children0) / wall / cores,
                                                3),
               "machine_cpu_share": round((busy1 - busy0) / max(1.0, total1 - total0), 3),
               "load_average_1m": round(os.getloadavg()[0], 2),
               "success_rate": round(sum(sum(j.successes) for j in judged) / attempts, 3),
               "judged_online": sum(1 for j in judged for v in j.verdicts if not v.offline),
               **_failures(stored)}
    _say(f"  {slots} slots: {shape.runs} runs x {shape.problems} problems ({shape.concurrent} at once) = "
         f"{attempts} attempts in {figures['wall_s']} s = {figures['attempts_per_hour']}/h (steady "
         f"{figures['steady_per_hour']}/h, tail {figures['tail_s']} s; mean attempt "
         f"{figures['mean_attempt_s']} s, slot-bound {figures['slot_bound_per_hour']}/h, slots busy "
         f"{figures['slot_utilisation']:.0%}); validator {figures['validator_rss_mb']} MB, sandboxes "
         f"{figures['sandbox_rss_mb']} MB ({figures['rss_mb_per_slot']} MB/slot); validator CPU "
         f"{figures['validator_cpu_share']:.1%}, machine {figures['machine_cpu_share']:.1%}, load "
         f"{figures['load_average_1m']}; judged online {figures['judged_online']}; failures "
         f"{figures['failures']}")
    return figures, [(run_id, pid) for run_id in run_ids for pid in ids]


def _steady(stored: Sequence[StoredAttempt], slots: int, started: float, ended: float) -> dict[str, Any]:
    """The slots' pace while every slot had work, and the tail after it.

    Up to the last attempt's start some run still had a problem for every slot that freed up: the steady
    rate is the attempts finished by then over that time (slot start-up included; the attempts in flight
    at that moment are not counted, so it errs low). The tail is what follows: the last wave finishing
    with no queued problem left to give the freed slots.
    """
    durations = [a.record.finished_at - a.record.started_at for a in stored]
    mean_attempt_s = sum(durations) / max(1, len(durations))
    last_start = max((a.record.started_at for a in stored), default=ended)
    finished = sum(1 for a in stored if a.record.finished_at <= last_start)
    window = last_start - started
    return {"mean_attempt_s": round(mean_attempt_s, 1),
            # What the slots would do if never idle (no start-up, no tail, no wait for the judge).
            "slot_bound_per_hour": round(slots * 3600 / mean_attempt_s, 1) if mean_attempt_s > 0 else None,
            "slot_utilisation": round(sum(durations) / max(1e-9, slots * (ended - started)), 3),
            "steady_per_hour": round(finished / window * 3600, 1) if window > 0 and finished else None,
            "tail_s": round(ended - last_start, 1)}


def _failures(stored: Sequence[StoredAttempt]) -> dict[str, Any]:
    failures = Counter(a.record.failure.kind for a in stored if a.record.failure is not None)
    calls = [len(a.record.proxy_log or []) for a in stored]
    reasons = {a.record.failure.kind: a.record.failure.reason[:300] for a in reversed(stored)
               if a.record.failure is not None}  # the first reason of each kind
    return {"proxy_calls_per_attempt": round(sum(calls) / max(1, len(calls)), 1),
            "failures": dict(failures), "failure_reasons": reasons}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capacity",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--slots", default="4,16,64", help="comma list of slot counts")
    parser.add_argument("--runs", type=int, default=4, help="runs owed together at each slot count")
    parser.add_argument("--problems-per-run", type=int, default=60,
                        help="problems of each run (a qualifying run has 60)")
    parser.add_argument("--concurrent-runs", type=int, default=None,
                        help="runs computed at once (default: ARENA_CONCURRENT_RUNS' default)")
    parser.add_argument("--p50", type=float, default=2.0, help="median seconds of one agent LLM call")
    parser.add_argument("--p95", type=float, default=8.0, help="95th percentile of one agent LLM call")
    parser.add_argument("--judge-p50", type=float, default=None, help="judge call median (default --p50)")
    parser.add_argument("--judge-p95", type=float, default=None, help="judge call p95 (default --p95)")
    parser.add_argument("--calls", default="8-20", help="LLM calls per problem: LOW-HIGH, seeded per problem")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sandbox", default="auto", help="auto, namespace, docker or none")
    parser.add_argument("--products", type=int, default=3000, help="sample world size (built once, cached)")
    parser.add_argument("--world-dir", type=Path, default=None, help="sample world (default: under --home)")
    parser.add_argument("--home", type=Path, default=None, help="data root: embedding cache, default world")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed 2-problem warm-up run")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: slots 1,2, 2 runs of 2 problems, 10-20 ms calls, 2-3 calls per "
                             "problem, the none backend")
    return parser


def _settings(args: argparse.Namespace, backend: BackendName, llm_url: str) -> ArenaSettings:
    overrides: dict[str, Any] = {
        "sandbox": backend, "sandbox_timeout_s": 300.0, "inference_base_url": f"{llm_url}/v1",
        "inference_models": AGENT_MODEL, "judge_base_url": f"{llm_url}/v1", "judge_models": [JUDGE_MODEL]}
    if args.home is not None:
        overrides["home"] = args.home
    return ArenaSettings(_env_file=None, **overrides)


def _apply_quick(args: argparse.Namespace) -> None:
    if args.quick:
        args.slots, args.runs, args.problems_per_run = "1,2", 2, 2
        args.p50, args.p95, args.calls = 0.01, 0.02, "2-3"
        args.sandbox = "none" if args.sandbox == "auto" else args.sandbox


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    _apply_quick(args)
    slot_counts = [int(s) for s in args.slots.split(",") if s.strip()]
    low, _, high = args.calls.partition("-")
    agent_latency = Latency(args.p50, args.p95, args.seed)
    judge_latency = Latency(args.judge_p50 if args.judge_p50 is not None else args.p50,
                            args.judge_p95 if args.judge_p95 is not None else args.p95, args.seed)
    configure_logging("console", "warning")
    home = (args.home or HarnessSettings(_env_file=None).root).expanduser()
    world_dir = args.world_dir or home / "benchmarks" / f"capacity-world-{args.products}"
    concurrent = args.concurrent_runs or ArenaSettings(_env_file=None).concurrent_runs
    shape = Shape(runs=args.runs, problems=args.problems_per_run, concurrent=concurrent)
    catalog_dir, problems = _suite_pool(world_dir, args.products, shape.problems)
    source = agent_source(seed=args.seed, calls_low=int(low), calls_high=int(high or low))
    agent = AgentFile(name="capacity_agent.py", source=source, sha256=hashlib.sha256(source).hexdigest())
    _say(f"sandbox {args.sandbox}, slots {slot_counts}, calls {args.calls} per problem, LLM p50 {args.p50} s "
         f"p95 {args.p95} s (mean {agent_latency.mean_s:.2f} s), judge p50 {judge_latency.p50_s} s; "
         f"{shape.runs} runs x {shape.problems} problems per slot count, {shape.concurrent} at once")
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as tmp, \
            served_double(LatencyPolicy(agent_latency, judge_latency)) as (llm_url, llm_pid):
        backend = choose_backend(args.sandbox, ArenaSettings(_env_file=None).sandbox_docker_image)
        settings = _settings(args, backend, llm_url)
        store_file = Path(tmp) / "trajectories.sqlite3"
        engine = open_catalog(catalog_dir)
        try:
            with TrajectoryStore.open(f"sqlite:///{Path(tmp) / 'empty.sqlite3'}"):
                pass  # an empty store's size (the schema), measured as the run's is: closed
            empty = store_bytes(Path(tmp) / "empty.sqlite3")
            with TrajectoryStore.open(f"sqlite:///{store_file}") as store:
                grader = Grader.from_settings(engine.get_products, settings)
                bench = Bench(settings=settings, engine=engine, grader=grader, agent=agent, problems=problems,
                              store=store, exclude=(llm_pid,))
                result = _run_all(bench, slot_counts, shape, warmup=not args.no_warmup)
            size = store_bytes(store_file) - empty
        finally:
            engine.close()
    result = _summary(result, size, backend, args, (agent_latency, judge_latency))
    print(orjson.dumps(result).decode())
    return result


def _run_all(bench: Bench, slot_counts: Sequence[int], shape: Shape, *, warmup: bool) -> dict[str, Any]:
    scheduled: list[tuple[str, str]] = []
    if warmup:  # loads the embedding model, warms the page cache and the judge client; not timed
        few = min(2, len(bench.problems))
        _, keys = measure(bench, few, Shape(runs=1, problems=few, concurrent=1), "warmup")
        scheduled += keys
    per_slots: dict[str, Any] = {}
    for slots in slot_counts:
        figures, keys = measure(bench, slots, shape, "measured")
        per_slots[str(slots)] = figures
        scheduled += keys
    lost, doubled = lost_and_doubled(scheduled, stored_keys(bench.store))
    return {"per_slots": per_slots, "scheduled": len(scheduled), "lost_attempts": lost,
            "doubled_attempts": doubled}


def _busy_day(sixteen: dict[str, Any]) -> tuple[float | None, float]:
    """Hours of a busy day at 16 slots: its attempts at the steady rate plus :data:`BUSY_DAY_TAILS` last
    waves; and, plainly, its attempts at the measured rate (a start-up and a tail every ``runs`` runs)."""
    plain = round(BUSY_DAY_ATTEMPTS / sixteen["attempts_per_hour"], 2)
    steady = sixteen["steady_per_hour"]
    if not steady:
        return None, plain
    return round(BUSY_DAY_ATTEMPTS / steady + BUSY_DAY_TAILS * sixteen["tail_s"] / 3600, 2), plain


def _judge_calls_at_once(result: dict[str, Any]) -> int:
    concurrent_runs = max((v["concurrent_runs"] for v in result["per_slots"].values()), default=1)
    return int(ArenaSettings(_env_file=None).judge_concurrency * concurrent_runs)


def _summary(result: dict[str, Any], size: int, backend: BackendName, args: argparse.Namespace,
             latencies: tuple[Latency, Latency]) -> dict[str, Any]:
    latency, judge = latencies
    per_slots = result["per_slots"]
    bytes_per_attempt = size / max(1, result["scheduled"])
    sixteen = per_slots.get("16")
    busy_day, plain = _busy_day(sixteen) if sixteen else (None, None)
    summary = {
        "sandbox": backend, "cpus": os.cpu_count(), "quick": bool(args.quick),
        "llm": {"p50_s": args.p50, "p95_s": args.p95, "mean_s": round(latency.mean_s, 3), "calls": args.calls,
                "judge_p50_s": judge.p50_s, "judge_p95_s": judge.p95_s,
                "judge_mean_s": round(judge.mean_s, 3)},
        # Each run asks ARENA_JUDGE_CONCURRENCY verdicts at once, and runs overlap: the judge's ceiling.
        "judge_cap_per_hour": (round(_judge_calls_at_once(result) * 3600 / judge.mean_s, 1)
                               if judge.mean_s > 0 else None),
        "attempts_per_hour": {k: v["attempts_per_hour"] for k, v in per_slots.items()},
        "rss_mb_per_slot": {k: v["rss_mb_per_slot"] for k, v in per_slots.items()},
        "validator_rss_mb": {k: v["validator_rss_mb"] for k, v in per_slots.items()},
        "validator_cpu_share": {k: v["validator_cpu_share"] for k, v in per_slots.items()},
        "machine_cpu_share": {k: v["machine_cpu_share"] for k, v in per_slots.items()},
        "per_slots": per_slots,
        "busy_day_attempts": BUSY_DAY_ATTEMPTS,
        "busy_day_hours_16_slots": busy_day,
        "busy_day_hours_16_slots_plain": plain,
        "busy_day_basis": (f"{BUSY_DAY_ATTEMPTS} attempts at the steady 16-slot rate of {sixteen['runs']} "
                           f"runs of {sixteen['problems_per_run']} ({sixteen['concurrent_runs']} at once, "
                           f"{sixteen['attempts']} attempts) plus {BUSY_DAY_TAILS} tails of "
                           f"{sixteen['tail_s']} s"
                           if sixteen else "no 16-slot run"),
        "lost_attempts": result["lost_attempts"], "doubled_attempts": result["doubled_attempts"],
        "store_bytes": size, "store_bytes_per_attempt": round(bytes_per_attempt),
        "store_growth_mb_per_busy_day": round(bytes_per_attempt * BUSY_DAY_ATTEMPTS / 2**20, 1),
    }
    _say(f"busy day ({BUSY_DAY_ATTEMPTS} attempts) at 16 slots: {busy_day} h ({summary['busy_day_basis']}); "
         f"lost {result['lost_attempts']}, doubled {result['doubled_attempts']}; store "
         f"{summary['store_bytes_per_attempt']} B/attempt, "
         f"{summary['store_growth_mb_per_busy_day']} MB per busy day")
    return summary
