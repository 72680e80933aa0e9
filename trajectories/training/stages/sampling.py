"""Stages 2 and 3: sample attempts through the sandbox, keep the successful ones, fine-tune on them.

- ``rejection`` (stage 2): the stage's own ``model`` (usually stage 1's ``OUT/final``) attempts every
  train problem k times; the successful, model-driven (``agentic``) attempts are the new SFT data. With
  ``rollouts.weighting.mode: reward`` (the study's reward-weighted rejection sampling) each kept attempt is
  repeated in proportion to its reward (:mod:`trajectories.training.data.weighting`).
- ``teacher`` (stage 3): a strong model behind an OpenAI-compatible endpoint attempts the same problems;
  the student (``model``) is fine-tuned on the teacher's successful attempts. The teacher's attempts
  (``OUT/rollouts/attempts.jsonl``) are also what GRPO's per-step teacher reward reads.

The problems are the dumps' ``train`` split under the leak-cluster guard
(:mod:`trajectories.training.data.problems`), so no rollout touches a held-out cluster. Rollouts resume after
a crash (:mod:`rollouts`), then SFT resumes from its newest checkpoint like stage 1.
``OUT/rollouts/summary.json`` records what the sampling gave.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel

from shoppingbench.grading.grader import Grader
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, inference_config
from shoppingbench.settings import HarnessSettings
from trajectories.training.data.catalog import Catalog, opened_catalog
from trajectories.training.data.problems import dump_problems
from trajectories.training.data.weighting import weighted
from trajectories.training.evaluation.evaluate import DEFAULT_AGENT
from trajectories.training.stages.rollouts import (
    ATTEMPTS_FILE,
    RolloutSelection,
    collect_rollouts,
    rollout_conversations,
    rollout_meta,
    rollouts_complete,
    served_model,
)
from trajectories.training.stages.sampling_config import SamplingStageConfig
from trajectories.training.stages.sft import train_sft
from trajectories.training.stages.stage import NothingToTrain, StageResult, model_source

log = structlog.get_logger(__name__)

ROLLOUTS_DIR = "rollouts"


class SamplingSummary(BaseModel):
    """What the rollouts gave (``OUT/rollouts/summary.json`` and the stage result's extras)."""

    problems: int
    attempts: int
    successes: int
    kept: int
    dropped: dict[str, int]
    success_by_category: dict[str, float]


def _summary(records: Sequence[AttemptRecord], problems: int, kept: int,
             dropped: Counter[str]) -> SamplingSummary:
    by_category: dict[str, list[bool]] = {}
    for record in records:
        by_category.setdefault(record.category, []).append(record.score.success)
    return SamplingSummary(problems=problems, attempts=len(records),
                           successes=sum(1 for r in records if r.score.success), kept=kept,
                           dropped=dict(sorted(dropped.items())),
                           success_by_category={c: sum(v) / len(v) for c, v in sorted(by_category.items())})


def _rolled_out_model(config: SamplingStageConfig, out: Path) -> tuple[str | Path, str]:
    """What answers the rollouts, and its name in the rollout fingerprint."""
    serving = config.rollouts.serving
    if config.stage == "teacher" or serving.backend == "endpoint":
        return config.model, f"{serving.base_url}#{serving.model_name}"
    source = model_source(config.model, out)
    return source, str(Path(source).resolve()) if Path(source).is_dir() else str(source)


@dataclass(frozen=True)
class SampledData:
    """The rollout phase's outcome: what to fine-tune on and what the sampling gave."""

    selection: RolloutSelection
    summary: SamplingSummary
    directory: Path


def _distributed() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def sample_stage_data(config: SamplingStageConfig, dumps: list[Path], out: Path, *, resume: bool = True,
                      settings: HarnessSettings | None = None, progress: bool = True,
                      catalog: Catalog | None = None) -> SampledData:
    """The rollout phase alone (``worker rollouts``): roll out on the dumps' guarded train problems (or
    finish doing so) and select the successful, kept attempts. ``catalog``: the run's open catalog, else
    the config's ``rollouts.catalog``."""
    settings = settings or HarnessSettings()
    found = dump_problems(dumps, "train", held_out_clusters=config.held_out_clusters())
    problems = found.problems[:config.rollouts.max_problems]
    if not problems:
        raise NothingToTrain(f"the dumps' train split has no problem with a reward outside the held-out "
                             f"clusters ({dict(found.skipped)}): nothing to roll out on")
    directory = out / ROLLOUTS_DIR
    if not resume and directory.exists():
        shutil.rmtree(directory)
    agent = AgentFile.read(config.rollouts.agent or DEFAULT_AGENT)
    rolled, identity = _rolled_out_model(config, out)
    serving = config.rollouts.serving
    meta = rollout_meta(identity, agent, problems, config.rollouts.samples_per_problem, serving.temperature)
    catalog = catalog or config.rollouts.catalog
    if catalog is None:
        raise ValueError("no catalog to roll out on: set rollouts.catalog in the config or pass --catalog")
    if _distributed() and not rollouts_complete(directory, meta):
        raise RuntimeError(f"the rollouts in {directory} are not complete and this is one of several "
                           "training processes: run `worker rollouts` with the same arguments on one process "
                           "first, then launch the training")
    log.info("training.sampling_started", stage=config.stage, problems=len(problems), model=identity,
             k=meta.samples_per_problem, backend=serving.backend)
    with (opened_catalog(catalog) as engine,
          served_model(serving, rolled, out=out, budgets=inference_config(settings).budgets) as inference):
        grader = Grader.from_settings(engine.get_products, settings)
        records = collect_rollouts(agent, problems, engine, grader, inference=inference,
                                   sandbox=SandboxConfig.from_settings(settings), meta=meta,
                                   directory=directory, workers=config.rollouts.workers, progress=progress)
    selection = rollout_conversations(records, {p.id: p for p in problems}, found.clusters,
                                      keep_labels=config.rollouts.keep_labels,
                                      max_tool_chars=config.rollouts.max_tool_chars)
    summary = _summary(records, len(problems), len(selection.conversations), selection.dropped)
    (directory / "summary.json").write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    return SampledData(selection=selection, summary=summary, directory=directory)


def run_sampling_stage(config: SamplingStageConfig, dumps: list[Path], out: Path, *, resume: bool = True,
                       settings: HarnessSettings | None = None, progress: bool = True,
                       catalog: Catalog | None = None) -> StageResult:
    """Roll out on the dumps' guarded train problems, keep the successes, SFT ``config.model`` on them."""
    sampled = sample_stage_data(config, dumps, out, resume=resume, settings=settings, progress=progress,
                                catalog=catalog)
    summary = sampled.summary
    if not sampled.selection.conversations:
        raise NothingToTrain(
            f"none of the {summary.attempts} rollouts was a successful, kept attempt ({summary.dropped}): "
            "nothing to fine-tune on; sample more (rollouts.samples_per_problem), use more problems, or "
            f"start from a stronger model. The attempts are in {sampled.directory}")
    weighting, kept = config.rollouts.weighting, sampled.selection.conversations
    conversations = weighted(kept, sampled.selection.rewards, weighting)
    extra: dict[str, Any] = {"rollouts": summary.model_dump(),
                             "weighting": {"mode": weighting.mode, "kept": len(kept),
                                           "examples": len(conversations)}}
    trained = train_sft(config, conversations, out, resume=resume, extra=extra)
    return dataclasses.replace(trained, attempts_file=sampled.directory / ATTEMPTS_FILE)
