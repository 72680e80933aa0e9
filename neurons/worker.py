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
    losses = [entry["loss"] for entry in result.log_history if "loss" in entry]
    typer.echo(orjson.dumps({
        "stage": stage.value, "final": str(result.final_dir), "global_step": result.global_step,
        "examples": result.train_examples, "last_loss": losses[-1] if losses else None,
        "resumed_from": None if result.resumed_from is None else str(result.resumed_from)}).decode())


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
