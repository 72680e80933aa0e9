"""Harness overhead: the scripted baseline through sandbox + verified proxy + scorer vs. in-process.

    python -m benchmarks.harness [--problems 200] [--workers 4] [--products 3000] [--sandbox namespace,docker]

Both runs use the same agent file, problems, worker count, catalog and scorer (MiniLM titles, cache
warmed by an untimed first pass). The proxy's inference upstream is a zero-latency OpenAI-compatible
stub (the baseline makes no LLM call; the upstream is configured as in production).

- in-process: the agent's ``agent_main`` in threads, calling the bare tool server over loopback HTTP;
- sandboxed: ``shoppingbench.sandbox.runner.run_suite``: slots started, every tool call through the
  in-sandbox forwarder and the verified proxy, every attempt logged, graded, recorded.

``overhead_ms_per_problem`` = (sandboxed wall time - in-process wall time) / problems: what the sandbox
and the proxy add per problem, amortised over the run with its concurrency (it includes starting the
proxy and the slots). It can be negative: sandboxed agents run in processes of their own, in-process
ones share one interpreter lock. Also printed: the per-problem latency the slot adds around the agent
(host round trip minus the agent's own time as the sandbox measured it) and the slot start time.
``--sandbox`` takes a comma list: each backend runs the same suite after the one in-process run, and its
figures go under ``backends`` side by side (the docker backend needs an engine and the sandbox image:
``scripts/docker-check.sh``). The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, cast

import orjson

from shoppingbench.agents import scripted_baseline
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.doubles.llm_server import StubReply, create_app
from shoppingbench.evaluation import EvaluationResult, collect, iter_in_process, new_run_id
from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.proxy import InferenceConfig
from shoppingbench.sample_world import SampleWorld, ensure_sample_world
from shoppingbench.sandbox.backends import BackendName
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, run_suite
from shoppingbench.scoring import PRODUCTION_STRICT, CachedEmbedder, MiniLMEmbedder
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.server import create_app as create_tool_app
from shoppingbench.tools.serving import running_server

STUB_MODEL = "zero-latency-stub"


def _suite(world: SampleWorld, problems: int) -> list[Problem]:
    per_category = -(-problems // len(CATEGORIES))
    suite = world.suite(per_category)
    by_category = {c: [p for p in suite if p.category == c] for c in CATEGORIES}
    interleaved = [p for group in zip(*by_category.values(), strict=False) for p in group]
    if len(interleaved) < problems:
        raise SystemExit(f"the world has only {len(interleaved)} problems; use more --products")
    return interleaved[:problems]


def _in_process(suite: list[Problem], engine: BM25SearchEngine, grader: Grader,
                workers: int) -> EvaluationResult:
    with running_server(create_tool_app(engine)) as url:
        os.environ["SANDBOX_PROXY_URL"] = url
        run_id = new_run_id()
        records = iter_in_process(scripted_baseline.agent_main, suite, grader, run_id=run_id, workers=workers)
        return collect(records, suite, run_id=run_id, progress=False)


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--products", type=int, default=3000, help="sample world size (built once, cached)")
    parser.add_argument("--sandbox", default="namespace",
                        help="Backends to compare, comma-separated: namespace, docker, none")
    args = parser.parse_args(argv)
    backends: list[BackendName] = []
    for name in args.sandbox.split(","):
        if name not in ("namespace", "docker", "none"):
            parser.error(f"unknown sandbox backend {name!r}: namespace, docker or none")
        backends.append(cast(BackendName, name))

    settings = HarnessSettings()
    world = ensure_sample_world(settings.root / "benchmarks" / f"harness-world-{args.products}",
                                products=args.products, seed=0, progress=False)
    suite = _suite(world, args.problems)
    engine = open_catalog(world.catalog_dir)
    grader = Grader(engine.get_products, CachedEmbedder(MiniLMEmbedder(), settings.embedding_cache),
                    PRODUCTION_STRICT)

    print(f"{len(suite)} problems, {args.workers} workers, sandbox {', '.join(backends)}, "
          f"{len(engine):,} products", file=sys.stderr)
    _in_process(suite, engine, grader, args.workers)  # warms the embedding cache and the page cache
    started = time.perf_counter()
    trusted = _in_process(suite, engine, grader, args.workers)
    in_process_s = time.perf_counter() - started
    figures = {backend: _sandboxed(backend, suite, engine, grader, trusted, in_process_s, args.workers,
                                   settings.sandbox_uid_base) for backend in backends}
    engine.close()
    result = {"problems": len(suite), "workers": args.workers, "in_process_s": round(in_process_s, 3),
              "backends": figures}
    print(orjson.dumps(result).decode())
    return result


def _sandboxed(backend: BackendName, suite: list[Problem], engine: BM25SearchEngine, grader: Grader,
               trusted: EvaluationResult, in_process_s: float, workers: int, uid_base: int) -> dict[str, Any]:
    """The suite through ``backend``'s sandbox and the verified proxy, against the in-process run."""
    agent = AgentFile.read(Path(scripted_baseline.__file__))
    sandbox = SandboxConfig(backend=backend, limits=SandboxLimits(timeout_s=60), uid_base=uid_base)
    with running_server(create_app(lambda body: StubReply(content="<think>ok</think>"),
                                   models=[STUB_MODEL])) as llm:
        inference = InferenceConfig(base_url=f"{llm}/v1", models=[STUB_MODEL])
        started = time.perf_counter()
        sandboxed = run_suite(agent, suite, engine, grader, inference=inference, sandbox=sandbox,
                              workers=workers, progress=False)
        sandboxed_s = time.perf_counter() - started

    round_trips = [(r.finished_at - r.started_at) * 1000 for r in sandboxed.attempts]
    around_agent = [trip - (record.agent_ms or 0.0)
                    for trip, record in zip(round_trips, sandboxed.attempts, strict=True)]
    failures = sum(1 for r in sandboxed.attempts if r.failure is not None)
    result = {
        "sandboxed_s": round(sandboxed_s, 3),
        "overhead_ms_per_problem": round((sandboxed_s - in_process_s) / len(suite) * 1000, 2),
        "sandboxed_problem_ms": _percentiles(round_trips),
        "slot_overhead_ms": _percentiles(around_agent),
        "proxy_calls": sum(len(r.proxy_log) for r in sandboxed.attempts),
        "failures": failures,
        "same_scores": [a.score for a in sandboxed.attempts] == [a.score for a in trusted.attempts],
        "asr": round(sandboxed.suite.success_rate, 4),
    }
    print(f"{backend}: in-process {in_process_s:.2f} s, sandboxed {sandboxed_s:.2f} s: "
          f"{result['overhead_ms_per_problem']} ms per problem amortised; "
          f"slot overhead around the agent p50 {result['slot_overhead_ms']['p50']} ms; "
          f"same scores: {result['same_scores']}; failures: {failures}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
