"""The training stages by name, and the recipe as one resumable pipeline of them (SPEC 7).

:func:`load_stage_config` reads a stage YAML into its config class by its ``stage`` key; :func:`run_stage`
runs it. A pipeline YAML (``configs/pipeline.yaml``) lists stage files in order and runs them into
``OUT/NN-<stage>/``, each starting from the previous stage's ``final`` model. Later stages also get what
earlier ones produced: DPO and KTO the rejection-sampling rollouts (k samples per problem give successes and
failures of one problem; KTO takes them unpaired), GRPO the teacher's attempts (its per-step teacher
reward). Each stage's :class:`~trajectories.training.stages.outcome.StageOutcome` is its ``result.json``; a
stage whose ``result.json`` is written is done and read back when the pipeline runs again, so a preempted
pipeline resumes at the stage it was in (which itself resumes from its newest checkpoint). The catalog's
search engine is opened once per run and handed to every stage that rolls out and to the evaluation. After
the last stage (or every stage, and the base model first: the study's table) the model is evaluated on the
held-out problems and entered in the registry; each evaluation is kept in ``OUT/NN-<stage>/evaluation.json``
(the base model's in ``OUT/00-base/``) and never repeated on a rerun. The per-stage table, with the best
checkpoint named, goes to ``OUT/stages.{json,md,png}`` (:mod:`evaluation.stage_table`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog
import yaml
from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.generator.catalog import opened_catalog_dir
from shoppingbench.settings import HarnessSettings
from trajectories.training.data.catalog import Catalog
from trajectories.training.evaluation import stage_table
from trajectories.training.evaluation.outcome import EvaluationOutcome
from trajectories.training.evaluation.stage_table import StageRow
from trajectories.training.serving.defaults import MAX_TOKENS, SAMPLES_PER_PROBLEM, TEMPERATURE
from trajectories.training.stages.outcome import StageOutcome
from trajectories.training.stages.stage import NothingToTrain, StageConfig, StageResult

log = structlog.get_logger(__name__)

STAGE_NAMES = ("sft", "rejection", "teacher", "dpo", "kto", "grpo")
RESULT_FILE = "result.json"
EVALUATION_FILE = "evaluation.json"
PIPELINE_FILE = "pipeline.json"
BASE_DIRECTORY = "00-base"


def _config_class(stage: str) -> type[StageConfig]:
    # Imported on demand: each stage module pulls in its TRL trainer, which takes seconds to import
    if stage == "sft":
        from trajectories.training.stages.sft import SFTStageConfig
        return SFTStageConfig
    if stage in ("rejection", "teacher"):
        from trajectories.training.stages.sampling_config import SamplingStageConfig
        return SamplingStageConfig
    if stage == "dpo":
        from trajectories.training.stages.dpo import DPOStageConfig
        return DPOStageConfig
    if stage == "kto":
        from trajectories.training.stages.kto import KTOStageConfig
        return KTOStageConfig
    if stage == "grpo":
        from trajectories.training.stages.grpo_config import GRPOStageConfig
        return GRPOStageConfig
    raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGE_NAMES)}")


def load_stage_config(path: Path) -> StageConfig:
    """The stage config in ``path``, of the class its ``stage`` key names."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(raw, dict) or not isinstance(raw.get("stage"), str):
        raise ValueError(f"{path} must be a YAML mapping with a `stage:` key ({', '.join(STAGE_NAMES)})")
    return _config_class(raw["stage"]).load(path)


def with_catalog(config: StageConfig, catalog: Path) -> StageConfig:
    """``config`` rolling out on ``catalog`` (the stages that touch the tools have one)."""
    from trajectories.training.stages.sampling_config import SamplingStageConfig

    if isinstance(config, SamplingStageConfig):
        return config.model_copy(update={"rollouts": config.rollouts.model_copy(update={"catalog": catalog})})
    if "catalog" in type(config).model_fields:
        return config.model_copy(update={"catalog": catalog})
    return config


def catalog_of(config: StageConfig) -> Path | None:
    """The catalog ``config`` rolls out on, if its stage has one."""
    from trajectories.training.stages.sampling_config import SamplingStageConfig

    if isinstance(config, SamplingStageConfig):
        return config.rollouts.catalog
    found = getattr(config, "catalog", None)
    return found if isinstance(found, Path) else None


def needs_catalog(config: StageConfig) -> bool:
    """Whether ``config``'s stage rolls out but has no catalog set."""
    from trajectories.training.stages.sampling_config import SamplingStageConfig

    has_one = isinstance(config, SamplingStageConfig) or "catalog" in type(config).model_fields
    return has_one and catalog_of(config) is None


def with_teacher_endpoint(config: StageConfig, base_url: str, model_name: str) -> StageConfig:
    """A teacher stage rolling out the model ``model_name`` at ``base_url`` (no key); others unchanged."""
    from trajectories.training.stages.sampling_config import SamplingStageConfig

    if not isinstance(config, SamplingStageConfig) or config.stage != "teacher":
        return config
    endpoint = config.rollouts.serving.model_copy(update={
        "backend": "endpoint", "base_url": base_url, "model_name": model_name, "api_key_env": None})
    return config.model_copy(update={"rollouts": config.rollouts.model_copy(update={"serving": endpoint})})


def run_stage(config: StageConfig, dumps: list[Path], out: Path, *, resume: bool = True,
              settings: HarnessSettings | None = None, catalog: Catalog | None = None) -> StageResult:
    """Run one stage on the dumps into ``out`` (checkpoints; the model in ``out/final``; its outcome in
    ``out/result.json``). ``catalog``: the run's open catalog for the stages that roll out (default: the
    one their config names)."""
    runner: Callable[..., StageResult]
    if config.stage == "sft":
        from trajectories.training.stages.sft import run_sft as runner
    elif config.stage in ("rejection", "teacher"):
        from trajectories.training.stages.sampling import run_sampling_stage

        def runner(config: Any, dumps: list[Path], out: Path, *, resume: bool) -> StageResult:
            return run_sampling_stage(config, dumps, out, resume=resume, settings=settings, catalog=catalog)
    elif config.stage == "dpo":
        from trajectories.training.stages.dpo import run_dpo as runner
    elif config.stage == "kto":
        from trajectories.training.stages.kto import run_kto as runner
    elif config.stage == "grpo":
        from trajectories.training.stages.grpo import run_grpo

        def runner(config: Any, dumps: list[Path], out: Path, *, resume: bool) -> StageResult:
            return run_grpo(config, dumps, out, resume=resume, settings=settings, catalog=catalog)
    else:
        raise ValueError(f"unknown stage {config.stage!r}")
    started = time.perf_counter()
    result = runner(config, dumps, out, resume=resume)
    result = dataclasses.replace(result, minutes=round((time.perf_counter() - started) / 60, 2))
    (out / RESULT_FILE).write_text(result.outcome().model_dump_json(indent=2), encoding="utf-8")
    return result


class PipelineEvaluation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    after: Literal["last", "every", "none"] = Field(default="last", description=(
        "Evaluate the final model only, every stage's model, or none"))
    base: bool = Field(default=False, description=(
        "Also evaluate the first stage's starting model (the table's `base` row)"))
    k: int = Field(default=SAMPLES_PER_PROBLEM, ge=1, description="Attempts per held-out problem (pass@k)")
    max_problems: int | None = Field(default=None, ge=1, description="The first N held-out problems")
    temperature: float = Field(default=TEMPERATURE, ge=0)
    max_tokens: int = Field(default=MAX_TOKENS, ge=1)


class PipelineConfig(BaseModel):
    """The recipe: stage files in order, the catalog their rollouts use, and the evaluation."""

    model_config = ConfigDict(extra="forbid")

    stages: list[Path] = Field(min_length=1, description="Stage YAML files, relative to this file")
    skip_empty_stages: bool = Field(default=True, description=(
        "A stage left with nothing to train on (e.g. no rollout succeeded) passes the previous model on "
        "and is recorded as skipped; false: the pipeline stops there"))
    catalog: Path | None = Field(default=None, description=(
        "Catalog the dumps' problems come from, for rollouts and evaluation (or --catalog)"))
    evaluation: PipelineEvaluation = Field(default_factory=PipelineEvaluation)

    @classmethod
    def load(cls, path: Path) -> PipelineConfig:
        config = cls.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
        def relative(value: Path) -> Path:
            return value if value.is_absolute() else path.parent / value

        return config.model_copy(update={
            "stages": [relative(stage) for stage in config.stages],
            "catalog": None if config.catalog is None else relative(config.catalog)})


def chain_stage(config: StageConfig, previous: Path | None, produced: dict[str, Path]) -> StageConfig:
    """``config`` starting from the previous stage's model, with the rollouts earlier stages produced."""
    updates: dict[str, Any] = {}
    if previous is not None:
        updates["model"] = str(previous)
    if config.stage in ("dpo", "kto") and "rejection" in produced:
        updates["rollouts"] = [*getattr(config, "rollouts", []), produced["rejection"]]
    if config.stage == "grpo" and "teacher" in produced:
        updates["teacher_attempts"] = [*getattr(config, "teacher_attempts", []), produced["teacher"]]
    return config.model_copy(update=updates)


def _skipped(config: StageConfig, out: Path, previous: Path | None, reason: str) -> StageOutcome:
    """The record of a stage that had nothing to train on: the model passes through unchanged."""
    log.warning("training.pipeline_stage_skipped_empty", stage=config.stage, reason=reason)
    attempts = out / "rollouts" / "attempts.jsonl"
    # failed rollouts still pair with other attempts of their problems in DPO
    outcome = StageOutcome(stage=config.stage, skipped=reason, final=previous,
                           attempts_file=attempts if attempts.exists() else None)
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULT_FILE).write_text(outcome.model_dump_json(indent=2), encoding="utf-8")
    return outcome


Evaluator = Callable[[Path, str, Path], EvaluationOutcome]
"""(model directory, stage name, evaluation output directory) -> its evaluation; see :func:`run_pipeline`
(``evaluation.evaluator.HeldOutEvaluator`` evaluates on the held-out problems)."""


def base_model_dir(model: str, out: Path) -> Path:
    """The directory the first stage's ``model`` loads from: ``tiny`` built into ``out/base`` (the same
    seed-0 weights the first stage builds for itself), a local directory as is, else the Hugging Face id's
    snapshot in the local cache (never downloaded: the worker runs offline)."""
    from trajectories.training.stages.stage import model_source

    source = model_source(model, out)
    if isinstance(source, Path) or Path(source).is_dir():
        return Path(source)
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(source, local_files_only=True))


def _evaluated(evaluate: Evaluator, model: Path, stage: str, stage_out: Path,
               resume: bool) -> EvaluationOutcome:
    """``stage_out/evaluation.json`` when ``resume`` finds one (never evaluated twice), else a new
    evaluation into ``stage_out/eval``, kept there unless it was skipped (no held-out problem yet: a
    later run, e.g. once `validator held-out` made a suite, tries again)."""
    done = stage_out / EVALUATION_FILE
    if resume and done.exists():
        log.info("training.pipeline_evaluation_skipped", stage=stage, out=str(done))
        return EvaluationOutcome.model_validate_json(done.read_text(encoding="utf-8"))
    evaluation = evaluate(model, stage, stage_out / "eval")
    if evaluation.skipped is None:
        stage_out.mkdir(parents=True, exist_ok=True)
        done.write_text(evaluation.model_dump_json(indent=2), encoding="utf-8")
    return evaluation


Adjust = Callable[[StageConfig], StageConfig]
"""The command line's overrides of a stage config (catalog, teacher endpoint)."""


def _stage_config(pipeline: PipelineConfig, loaded: StageConfig, previous: Path | None,
                  produced: dict[str, Path], adjust: Adjust | None) -> StageConfig:
    """``loaded`` as the pipeline runs it: chained to the previous stage, on the pipeline's catalog, with the
    command line's overrides last."""
    config = chain_stage(loaded, previous, produced)
    if pipeline.catalog is not None:
        config = with_catalog(config, pipeline.catalog)
    return adjust(config) if adjust is not None else config


def _stage_outcome(pipeline: PipelineConfig, config: StageConfig, dumps: list[Path], stage_out: Path,
                   previous: Path | None, *, resume: bool, settings: HarnessSettings | None,
                   catalog: Catalog | None) -> StageOutcome:
    """The stage's outcome: read back from its ``result.json`` when ``resume`` finds one, else its run's
    (a stage left with nothing to train on passing ``previous`` on, unless the pipeline forbids it)."""
    done = stage_out / RESULT_FILE
    if resume and done.exists():
        log.info("training.pipeline_stage_skipped", stage=config.stage, out=str(stage_out))
        return StageOutcome.model_validate_json(done.read_text(encoding="utf-8"))
    log.info("training.pipeline_stage_started", stage=config.stage, out=str(stage_out))
    try:
        result = run_stage(config, dumps, stage_out, resume=resume, settings=settings, catalog=catalog)
        return result.outcome()
    except NothingToTrain as exc:
        if not pipeline.skip_empty_stages:
            raise
        return _skipped(config, stage_out, previous, str(exc))


@dataclass
class _Table:
    """The rows of the study's table so far, and the row of each model evaluated in this run."""

    rows: list[StageRow] = dataclasses.field(default_factory=list)
    by_model: dict[Path, StageRow] = dataclasses.field(default_factory=dict)

    def evaluated(self, stage: str, model: Path, evaluation: EvaluationOutcome, directory: str) -> None:
        row = stage_table.evaluated_row(stage, str(model), evaluation, directory=directory)
        self.rows.append(row)
        self.by_model[model] = row


def _evaluate_stage(pipeline: PipelineConfig, outcome: StageOutcome, stage_out: Path, table: _Table, *,
                    last: bool, evaluate: Evaluator | None, resume: bool) -> StageOutcome:
    """``outcome`` with its model's evaluation when ``evaluation.after`` asks for one, its row added to
    ``table`` (a stage skipped as empty carries the row of the model it passed on, never evaluated twice)."""
    assert outcome.final is not None
    carried = table.by_model.get(outcome.final)
    after = pipeline.evaluation.after
    if carried is not None and outcome.skipped is not None:
        table.rows.append(stage_table.carried_row(outcome.stage, carried, outcome.skipped,
                                                  directory=stage_out.name))
    elif evaluate is not None and (after == "every" or (after == "last" and last)):
        evaluation = _evaluated(evaluate, outcome.final, outcome.stage, stage_out, resume)
        table.evaluated(outcome.stage, outcome.final, evaluation, stage_out.name)
        return outcome.model_copy(update={"evaluation": evaluation})
    elif evaluate is not None:
        table.rows.append(stage_table.skipped_row(outcome.stage, f"not evaluated (evaluation.after: {after})",
                                                  model=str(outcome.final), directory=stage_out.name))
    return outcome


def run_pipeline(pipeline: PipelineConfig, dumps: list[Path], out: Path, *, resume: bool = True,
                 settings: HarnessSettings | None = None, evaluate: Evaluator | None = None,
                 adjust: Adjust | None = None, catalog: Catalog | None = None) -> list[StageOutcome]:
    """Run every stage in order (skipping those already done when ``resume``); returns their outcomes.
    ``adjust`` is applied to each stage's config last (the command line's overrides). ``catalog``: the
    run's open catalog (default: ``pipeline.catalog``, opened here once), handed to every stage.

    With ``evaluate``: the base model first when ``evaluation.base``, then each stage's model as
    ``evaluation.after`` says; a model already evaluated in this run is not evaluated again (a stage skipped
    as empty carries its row). The table of every row is written to ``OUT/stages.*``."""
    configs = [load_stage_config(path) for path in pipeline.stages]  # refuse a bad file before training
    table = _Table()
    outcomes: list[StageOutcome] = []
    chosen = catalog if catalog is not None else pipeline.catalog
    with opened_catalog_dir(chosen) if chosen is not None else nullcontext(None) as opened:
        if evaluate is not None and pipeline.evaluation.base:
            base_out = out / BASE_DIRECTORY
            base = base_model_dir(_stage_config(pipeline, configs[0], None, {}, adjust).model, base_out)
            table.evaluated("base", base, _evaluated(evaluate, base, "base", base_out, resume), base_out.name)
        previous: Path | None = None
        produced: dict[str, Path] = {}
        for number, loaded in enumerate(configs, start=1):
            stage_out = out / f"{number:02d}-{loaded.stage}"
            config = _stage_config(pipeline, loaded, previous, produced, adjust)
            outcome = _stage_outcome(pipeline, config, dumps, stage_out, previous, resume=resume,
                                     settings=settings, catalog=opened)
            if outcome.attempts_file is not None:
                produced[config.stage] = outcome.attempts_file
            if outcome.final is None:
                table.rows.append(stage_table.skipped_row(config.stage, outcome.skipped or "no model",
                                                          directory=stage_out.name))
            else:
                previous = outcome.final
                outcome = _evaluate_stage(pipeline, outcome, stage_out, table, last=number == len(configs),
                                          evaluate=evaluate, resume=resume)
            outcomes.append(outcome)
    (out / PIPELINE_FILE).write_text(_outcomes_json(outcomes), encoding="utf-8")
    if any(row.status != "not_evaluated" for row in table.rows):
        written = stage_table.write_table(table.rows, out, title=f"Held-out evaluation per stage: {out.name}")
        log.info("training.pipeline_table", table=str(out / stage_table.TABLE_MARKDOWN),
                 best=None if written.best is None else written.best.stage)
    return outcomes


def _outcomes_json(outcomes: Sequence[StageOutcome]) -> str:
    return json.dumps([outcome.model_dump(mode="json") for outcome in outcomes], indent=2)


def day_dumps(root: Path) -> list[Path]:
    """Complete daily dumps under ``root`` (``YYYY-MM-DD/manifest.json``), oldest first."""
    return sorted(path.parent for path in root.glob("????-??-??/manifest.json"))


def window(dumps: Sequence[Path], newest: Path, days: int) -> list[Path]:
    """The ``days`` dumps up to and including ``newest``."""
    upto = [d for d in dumps if d.name <= newest.name]
    return upto[-days:]
