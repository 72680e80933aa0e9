"""The pipeline's evaluation step: each model it is asked about, on the held-out problems, into the registry.

The problems are the newest held-out suite under ``$ARENA_HOME/held-out`` (``validator held-out``), else the
dumps' ``held_out`` split; with neither holding a problem the evaluation is skipped, with the reason, and a
later run tries again. Every evaluation of a run uses the run's open catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from shoppingbench.problems.held_out import HELD_OUT_DIR, latest_held_out
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import Problem
from shoppingbench.settings import HarnessSettings
from trajectories.training.data.catalog import Catalog
from trajectories.training.data.problems import dump_problems
from trajectories.training.evaluation.held_out import evaluate_checkpoint
from trajectories.training.evaluation.outcome import EvaluationOutcome

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class HeldOutEvaluator:
    """``(model, stage, out) -> EvaluationOutcome``, as :func:`~trajectories.training.pipeline.run_pipeline`
    calls it; ``k`` samples per problem, the first ``max_problems`` problems."""

    dumps: list[Path]
    catalog: Catalog
    settings: HarnessSettings
    k: int
    max_problems: int | None
    temperature: float
    max_tokens: int

    def problems(self) -> tuple[list[Problem], str, str]:
        """The held-out problems, where they come from, and why there are none when there are none."""
        suite = latest_held_out(self.settings.root / HELD_OUT_DIR)
        if suite is not None:
            return load_problems(suite)[:self.max_problems], str(suite), f"{suite} holds no problem"
        source = "held_out split of " + ", ".join(str(d) for d in self.dumps)
        try:
            problems = dump_problems(self.dumps, "held_out").problems[:self.max_problems]
        except FileNotFoundError as exc:
            return [], source, str(exc)
        return problems, source, "the dumps' held_out split has no problem with a reward"

    def __call__(self, model: Path, stage: str, out: Path) -> EvaluationOutcome:
        problems, source, reason = self.problems()
        if not problems:
            log.warning("training.evaluation_skipped", reason=reason)
            return EvaluationOutcome(skipped=reason)
        run = evaluate_checkpoint(str(model), problems, catalog=self.catalog, out=out, k=self.k,
                                  settings=self.settings, stage=stage, data_manifest=self.dumps[-1],
                                  temperature=self.temperature, max_tokens=self.max_tokens)
        return run.outcome(problems_source=source)
