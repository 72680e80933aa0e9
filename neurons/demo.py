"""The README's main job on embedded defaults: sample world -> tool server -> baseline -> scores.

Later issues grow this into the local network demo (chain, validators, miners); today it shows the
benchmark harness end to end with the scripted baseline agent.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
from rich.console import Console
from rich.table import Table

from shoppingbench.agents.scripted_baseline import agent_main
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.evaluation import EvaluationResult, evaluate
from shoppingbench.records import ProxyCall
from shoppingbench.sample_world import SampleWorld, ensure_sample_world
from shoppingbench.scoring import CachedEmbedder, CategoryScore, MiniLMEmbedder, get_profile
from shoppingbench.settings import HarnessSettings
from shoppingbench.tools.server import create_app
from shoppingbench.tools.serving import running_server


def sample_world(settings: HarnessSettings) -> SampleWorld:
    return ensure_sample_world(settings.world_dir(), products=settings.world_products,
                               seed=settings.world_seed, llm=settings.llm(), progress=sys.stderr.isatty())


def results_table(result: EvaluationResult, title: str) -> Table:
    """Per-category success and gt rates, mean rule and format, the calls the proxy refused (403 model not
    allowed, 429 budget spent), and the suite aggregate (ASR)."""
    table = Table(title=title)
    for column in ("category", "problems", "success", "gt", "mean rule", "mean format", "proxy refusals"):
        table.add_column(column, justify="left" if column == "category" else "right")
    refused = Counter(attempt.category for attempt in result.attempts for _ in attempt.refused_calls())
    rows: list[tuple[str, CategoryScore, int]] = [(name, score, refused[name])
                                                  for name, score in result.suite.by_category.items()]
    rows.append(("all (ASR)", result.suite, refused.total()))
    for name, score, refusals in rows:
        table.add_row(name, str(score.problems), f"{score.success_rate:.1%}", f"{score.gt_rate:.1%}",
                      f"{score.mean_rule:.3f}", f"{score.mean_format:.3f}",
                      f"[red]{refusals}[/red]" if refusals else "0")
    return table


def first_refusal(result: EvaluationResult) -> ProxyCall | None:
    """The first call the proxy refused, in suite order: what to tell a miner whose agent was refused."""
    return next((call for attempt in result.attempts for call in attempt.refused_calls()), None)


def _write_attempts(result: EvaluationResult, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        for attempt in result.attempts:
            handle.write(orjson.dumps(attempt.model_dump(mode="json")) + b"\n")


def results_path(settings: HarnessSettings, name: str) -> Path:
    """``<home>/results/<name>-<UTC time>.jsonl``"""
    return settings.root / "results" / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl"


def run_demo(settings: HarnessSettings) -> EvaluationResult:
    console = Console()
    world = sample_world(settings)
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
