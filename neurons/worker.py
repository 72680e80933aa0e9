"""``worker``: the post-training worker (issue 7): train stages on daily dumps, build the tiny CPU model.

Entry points and wiring only: the work is in ``trajectories.training``.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import orjson
import typer

from shoppingbench.logs import configure_logging

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="Post-training worker: fine-tune a model on the arena's daily trajectory dumps "
                       "(filtered, leak-cluster guarded), or build the tiny Qwen3 used on CPU.")


class Stage(StrEnum):
    sft = "sft"


LogFormatOption = Annotated[str, typer.Option("--log-format", help="console or json")]


def _offline() -> None:
    # Models and tokenizers come from local directories or the HF cache; never reach the hub from here
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@app.command()
def train(
    config: Annotated[Path, typer.Option("--config", exists=True, dir_okay=False, help=(
        "Stage YAML, e.g. trajectories/training/configs/sft.yaml (sft_tiny.yaml for CPU)"))],
    dump: Annotated[list[Path], typer.Option("--dump", exists=True, file_okay=False, help=(
        "A directory written by `dump export`; repeat for several days"))],
    out: Annotated[Path, typer.Option("--out", help="Checkpoints go here; the result in OUT/final")],
    stage: Annotated[Stage, typer.Option("--stage", help="Which stage the config describes")] = Stage.sft,
    resume: Annotated[bool, typer.Option(help="Continue from the newest OUT/checkpoint-* if any")] = True,
    log_format: LogFormatOption = "console",
) -> None:
    """Run one training stage on the dumps' `train` split; the last line printed is a JSON summary."""
    configure_logging("json" if log_format == "json" else "console")
    _offline()
    # torch, transformers and TRL take seconds to import: only commands that train pay for them
    from trajectories.training.sft import SFTStageConfig, run_sft

    stage_config = SFTStageConfig.load(config)
    if stage_config.stage != stage.value:
        raise typer.BadParameter(f"{config} describes stage {stage_config.stage!r}, not {stage.value!r}")
    result = run_sft(stage_config, dump, out, resume=resume)
    typer.echo(orjson.dumps(result.summary()).decode())


@app.command("tiny-model")
def tiny_model(
    out: Annotated[Path, typer.Option("--out", help="Directory to write the model and tokenizer to")],
    seed: Annotated[int, typer.Option(help="Initialisation seed")] = 0,
) -> None:
    """Write the tiny Qwen3 (real Qwen3 vocabulary, 2 layers, hidden 64) for CPU runs."""
    configure_logging()
    _offline()
    from trajectories.training.tiny import save_tiny_model

    typer.echo(str(save_tiny_model(out, seed)))


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
        "Held-out problems: ShoppingBench JSONL or a suite JSON"))] = None,
    dump: Annotated[Path | None, typer.Option("--dump", exists=True, file_okay=False, help=(
        "Or: a `dump export` directory; the problems of its held_out split are used"))] = None,
    k: Annotated[int, typer.Option("-k", "--samples", min=1, help="Attempts per problem (pass@k)")] = 4,
    agent: Annotated[Path | None, typer.Option("--agent", exists=True, dir_okay=False, help=(
        "Agent file (default: the ReAct reference agent)"))] = None,
    inference_url: Annotated[str | None, typer.Option("--inference-url", help=(
        "OpenAI-compatible base URL serving --model (default: serve the --model directory locally)"))] = None,
    temperature: Annotated[float, typer.Option(min=0, help=(
        "Sampling temperature of the locally served model, forced on every call (the reference agent asks "
        "for 0, which would make the k samples identical)"))] = 1.0,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help=(
        "Cap on tokens per completion"))] = 4096,
    stage: Annotated[str, typer.Option(help="Training stage of the checkpoint, for the registry")] = "base",
    data_manifest: Annotated[Path | None, typer.Option("--data-manifest", exists=True, file_okay=False, help=(
        "Dump the checkpoint was trained on; its manifest.json sha256 goes to the registry "
        "(default: --dump)"))] = None,
    registry: Annotated[Path | None, typer.Option("--registry", dir_okay=False, help=(
        "Model registry SQLite file (default $ARENA_HOME/models/registry.sqlite3)"))] = None,
    workers: Annotated[int, typer.Option(min=1, help="Problems run at once")] = 2,
    home: Annotated[Path | None, typer.Option("--home", help="Data root (default $ARENA_HOME)")] = None,
    log_format: LogFormatOption = "console",
) -> None:
    """Evaluate a checkpoint on held-out problems through the validator's sandbox, proxy and scorer.

    Runs the agent k times per problem, prints pass@1 (ASR), pass@k, mean rule and the hallucination
    rates per category, writes results and a plot to OUT, and records the checkpoint and its metrics in
    the model registry. The last line printed is a JSON summary. Sandbox settings come from `ARENA_*`
    as for `miner test` (`ARENA_SANDBOX`, `ARENA_SANDBOX_TIMEOUT_S`, `ARENA_SANDBOX_UID_BASE`, ...).
    """
    configure_logging("json" if log_format == "json" else "console")
    _offline()
    from contextlib import nullcontext

    from rich.console import Console

    from shoppingbench.catalog.build import open_catalog
    from shoppingbench.evaluation import Grader
    from shoppingbench.problems.loaders import ProblemFileError, load_problems
    from shoppingbench.records import AttemptRecord
    from shoppingbench.sandbox.backends import SandboxUnavailable
    from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, inference_config
    from shoppingbench.settings import HarnessSettings
    from trajectories.training import evaluate as evaluation
    from trajectories.training.plots import find_log_history, history_series, plot_history, plot_problems
    from trajectories.training.registry import CheckpointEntry, ModelRegistry, manifest_sha256

    if (problems is None) == (dump is None):
        raise typer.BadParameter("give exactly one of --problems FILE or --dump DIR")
    try:
        if problems is not None:
            suite = load_problems(problems)
        elif dump is not None:
            suite = evaluation.held_out_problems(dump)
    except (ProblemFileError, FileNotFoundError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    settings = HarnessSettings(home=home) if home is not None else HarnessSettings()
    model_dir = None if inference_url else Path(model).resolve()
    # Key and budgets per attempt and run as the validator sets them (ARENA_INFERENCE_*)
    proxy_inference = inference_config(settings)
    served = (nullcontext(proxy_inference.model_copy(update={
                  "base_url": inference_url, "models": [model], "max_tokens": max_tokens}))
              if inference_url else
              evaluation.local_inference(Path(model), temperature=temperature, max_tokens=max_tokens,
                                         budgets=proxy_inference.budgets))
    engine = open_catalog(catalog)
    out.mkdir(parents=True, exist_ok=True)
    try:
        grader = Grader.from_settings(engine.get_products, settings)
        with served as inference, (out / "attempts.jsonl").open("wb") as attempts:
            def keep(record: AttemptRecord) -> None:
                attempts.write(record.model_dump_json().encode() + b"\n")

            report, _ = evaluation.evaluate(
                AgentFile.read(agent or evaluation.DEFAULT_AGENT), suite, engine, grader, inference=inference,
                sandbox=SandboxConfig.from_settings(settings), k=k, model=model, workers=workers,
                on_attempt=keep)
    except SandboxUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from exc
    finally:
        engine.close()
    (out / "results.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    history = find_log_history(model_dir) if model_dir is not None else None
    plot = (plot_history(history, out / "plot.png", f"{model}: training log")
            if history is not None and history_series(history) else
            plot_problems(report.problems, out / "plot.png", f"{model}: held-out problems, k={k}"))
    manifest_dump = data_manifest or dump
    entries = ModelRegistry(registry or settings.root / "models" / "registry.sqlite3")
    entry = entries.add(CheckpointEntry(
        path=str(model_dir) if model_dir is not None else model, stage=stage,
        data_manifest_sha256=manifest_sha256(manifest_dump) if manifest_dump is not None else None,
        metrics={c.category: c.model_dump(exclude={"category"}) for c in report.categories} | {"k": k}))
    entries.close()
    Console().print(evaluation.results_table(report))
    overall = report.category(evaluation.ALL)
    typer.echo(orjson.dumps({
        "results": str(out / "results.json"), "plot": str(plot), "registry_id": entry.id,
        "pass_at_1": overall.pass_at_1, f"pass_at_{k}": overall.pass_at_k,
        "step_hallucination_rate": overall.step_hallucination_rate}).decode())
