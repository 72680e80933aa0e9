"""An evaluation's results as a person reads them: the per-category table, the first call the proxy
refused, and where a run's results file goes under the data root."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from rich.table import Table

from shoppingbench.evaluation import EvaluationResult
from shoppingbench.records import ProxyCall
from shoppingbench.scoring import CategoryScore
from shoppingbench.settings import HarnessSettings


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


def results_path(settings: HarnessSettings, name: str) -> Path:
    """``<home>/results/<name>-<UTC time>.jsonl``"""
    return settings.root / "results" / f"{name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl"
