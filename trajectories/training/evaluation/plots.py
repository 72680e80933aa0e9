"""PNG plots of a checkpoint: reward/loss per training step, or success/rule per held-out problem.

The per-stage figure of a pipeline is drawn beside its table (:mod:`stage_table`) with :func:`save_figure`.

Uses matplotlib's object API (``Figure``), never ``pyplot``: no global state, no GUI backend needed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from trajectories.training.evaluation.evaluate import ProblemResult

PLOTTED_PREFIXES = ("reward", "rewards/", "loss", "eval_loss")
"""Trainer log keys worth a curve: GRPO logs ``reward`` (and ``rewards/<func>/mean``), SFT/DPO ``loss``."""


def find_log_history(model_dir: Path) -> list[dict[str, Any]] | None:
    """The trainer's ``log_history`` for ``model_dir``: its own ``trainer_state.json``, else the newest
    ``checkpoint-N/trainer_state.json`` beside it (a run's ``OUT/final`` sits next to its checkpoints)."""
    candidates = [model_dir / "trainer_state.json"]
    checkpoints = sorted(model_dir.parent.glob("checkpoint-*/trainer_state.json"),
                         key=lambda p: int(p.parent.name.rsplit("-", 1)[1]) if p.parent.name.rsplit("-", 1)[1]
                         .isdigit() else -1)
    candidates.extend(reversed(checkpoints))
    for state in candidates:
        if state.is_file():
            history = json.loads(state.read_text(encoding="utf-8")).get("log_history")
            if isinstance(history, list) and history:
                return [entry for entry in history if isinstance(entry, dict)]
    return None


def history_series(log_history: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """``{key: [(step, value), ...]}`` for the numeric keys of :data:`PLOTTED_PREFIXES`."""
    series: dict[str, list[tuple[float, float]]] = {}
    for entry in log_history:
        step = entry.get("step")
        if not isinstance(step, int | float):
            continue
        for key, value in entry.items():
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            if key.startswith(PLOTTED_PREFIXES) and numeric:
                series.setdefault(key, []).append((float(step), float(value)))
    return series


def plot_history(log_history: list[dict[str, Any]], out: Path, title: str) -> Path:
    """One curve per logged reward/loss key against the training step."""
    series = history_series(log_history)
    if not series:
        raise ValueError("the log history has no reward or loss values to plot")
    figure = Figure(figsize=(7, 4), dpi=100)
    axes = figure.subplots()
    for key, points in sorted(series.items()):
        axes.plot([s for s, _ in points], [v for _, v in points], marker="o", markersize=3, label=key)
    axes.set_xlabel("training step")
    axes.set_title(title)
    axes.legend()
    return save_figure(figure, out)


def plot_problems(problems: list[ProblemResult], out: Path, title: str) -> Path:
    """Success share (successes / k) and mean rule score per held-out problem, in evaluation order."""
    if not problems:
        raise ValueError("no problem results to plot")
    figure = Figure(figsize=(max(6.0, 0.35 * len(problems)), 4), dpi=100)
    axes = figure.subplots()
    positions = list(range(len(problems)))
    axes.bar([p - 0.2 for p in positions], [r.successes / r.attempts for r in problems], width=0.4,
             label="success (ASR)")
    axes.bar([p + 0.2 for p in positions], [r.mean_rule for r in problems], width=0.4, label="mean rule")
    axes.set_xticks(positions, [r.problem_id[:10] for r in problems], rotation=90, fontsize=7)
    axes.set_ylim(0, 1.05)
    axes.set_title(title)
    axes.legend()
    return save_figure(figure, out)


def save_figure(figure: Figure, out: Path) -> Path:
    """Write ``figure`` as a PNG to ``out`` (its directory made as needed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(out, format="png")
    return out
