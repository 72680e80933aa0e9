"""``worker import-sft``: chat-format SFT rows of the study's released shape as a dump the worker trains on.

The work is in :mod:`trajectories.dumps.public_sft`; ``neurons.worker`` registers the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer

from shoppingbench.logs import configure_logging


def import_sft(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help=(
        "Chat-format SFT rows, one JSON object a line (system prompt, tool schemas, messages)"))],
    out: Annotated[Path, typer.Option("--out", file_okay=False, help=(
        "The dump directory to write (then `--dump DIR` of train and pipeline, beside the arena's dumps)"))],
) -> None:
    """Import chat-format SFT rows of the shape the study released into a dump the worker trains on.

    Every row lands in the `train` split with `run_kind` `imported` and its conversation in `messages` and
    `tools` (docs/trajectories.md lists the fields mapped). The last line printed is the manifest as JSON.
    Exit code 2: a malformed row (the message names its line; nothing is written) or an OUT that is not
    empty.
    """
    configure_logging("console")
    from trajectories.dumps.public_sft import import_sft as run_import

    try:
        manifest = run_import(file, out)
    except (ValueError, FileExistsError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(orjson.dumps(manifest).decode())
