"""``arena demo``: the harness alone on embedded defaults: sample world -> tool server -> baseline -> scores.

The whole arena (chain, validators, miners) is ``arena network-demo``; this shows the harness end to end
with the scripted baseline agent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
from rich.console import Console

from shoppingbench.agents.scripted_baseline import agent_main
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.evaluation import EvaluationResult, evaluate
from shoppingbench.results import results_path, results_table
from shoppingbench.sample_world import configured_sample_world
from shoppingbench.scoring import CachedEmbedder, MiniLMEmbedder, get_profile
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.server import create_app
from shoppingbench.tools.serving import running_server


def _write_attempts(result: EvaluationResult, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        for attempt in result.attempts:
            handle.write(orjson.dumps(attempt.model_dump(mode="json")) + b"\n")


def run_demo(settings: HarnessSettings) -> EvaluationResult:
    console = Console()
    world = configured_sample_world(settings, progress=sys.stderr.isatty())
    suite = world.suite(settings.suite_per_category)
    engine = open_catalog(world.catalog_dir)
    embedder = CachedEmbedder(MiniLMEmbedder(), settings.embedding_cache)
    profile = get_profile(settings.scoring_profile)
    with running_server(create_app(engine), host=settings.tools_host, port=settings.tools_port) as url:
        console.print(f"tool server: {url}  (catalog {world.catalog_dir}, {len(engine):,} products)")
        # The agent reaches the tools exactly as it will inside the sandbox: through this variable.
        os.environ["SANDBOX_PROXY_URL"] = url
        result = evaluate(agent_main, suite, engine.get_products, embedder, profile,
                          workers=settings.workers, progress=sys.stderr.isatty())
    console.print(results_table(result, "Scripted baseline on the sample suite"))
    out = results_path(settings, "demo")
    _write_attempts(result, out)
    console.print(f"dialogues and scores: {out}")
    return result
