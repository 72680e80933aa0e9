"""Stage 1: supervised fine-tuning on filtered arena trajectories with TRL's ``SFTTrainer``.

A stage is a YAML file (``configs/sft.yaml``) read into :class:`SFTStageConfig` (see :mod:`stage` for
the fields every stage shares). ``lora.enabled`` trains a PEFT LoRA adapter; off, the whole model is
fine-tuned. :func:`train_sft` is the SFT step itself, reused by the stages that build their
conversations another way (rejection sampling, teacher trajectories).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import structlog
import torch
import trl.trainer.utils
from pydantic import Field
from trl.trainer.sft_config import SFTConfig
from trl.trainer.sft_trainer import SFTTrainer

from trajectories.training.data.conversations import Conversation, DataFilter, select_conversations
from trajectories.training.data.tokens import build_dataset
from trajectories.training.stages import stage
from trajectories.training.stages.stage import NothingToTrain, StageConfig, StageResult

log = structlog.get_logger(__name__)


class SFTStageConfig(StageConfig):
    """One SFT stage: model, data selection, sequence length, LoRA and the ``trl.SFTConfig`` arguments."""

    stage: Literal["sft"] = "sft"
    data: DataFilter = Field(default_factory=DataFilter)

    @classmethod
    def trainer_config_class(cls) -> type:
        return SFTConfig


def trainer_arguments(config: StageConfig, out: Path) -> SFTConfig:
    return SFTConfig(**stage.trainer_arguments(config, out, max_length=config.max_length, packing=False))


@contextlib.contextmanager
def labelled_positions_only_on_cpu() -> Iterator[None]:
    """TRL's fused LM head projects only the positions with a label on Triton devices and every position
    elsewhere (a varying count would recompile Neuron's graphs). On a CPU, eager, the subset is exact and
    cheaper: with Gemma 3's 262,144-token vocabulary the head over a whole conversation costs more than
    the model under it, and only the assistant turns have labels. So, while training on a CPU, TRL's
    device check says yes there (the kernel still picks its own CPU code)."""
    check = getattr(trl.trainer.utils, "_use_triton", None)
    if check is None:  # another TRL: leave it as it is
        yield
        return

    def compact(device: torch.device) -> bool:
        return device.type == "cpu" or bool(check(device))

    setattr(trl.trainer.utils, "_use_triton", compact)  # noqa: B010 (a private name mypy does not export)
    try:
        yield
    finally:
        setattr(trl.trainer.utils, "_use_triton", check)  # noqa: B010


def train_sft(config: StageConfig, conversations: Sequence[Conversation], out: Path, *, resume: bool = True,
              extra: Mapping[str, Any] | None = None) -> StageResult:
    """SFT on ``conversations`` (assistant tokens only); checkpoints and ``final`` go under ``out``."""
    model, tokenizer = stage.load_stage_model(config, out)
    dataset = build_dataset(tokenizer, conversations, config.max_length)
    checkpoint = stage.last_checkpoint(out) if resume else None
    trainer = SFTTrainer(model=model, args=trainer_arguments(config, out), train_dataset=dataset,
                         processing_class=tokenizer, peft_config=stage.peft_config(config.lora))
    log.info("training.sft_started", stage=config.stage, examples=len(dataset), model=config.model,
             lora=config.lora.enabled, resume_from=checkpoint)
    with labelled_positions_only_on_cpu():
        output = trainer.train(resume_from_checkpoint=checkpoint)
    stage.require_finite(trainer.state.log_history, config.stage)
    final = stage.save_final(trainer, tokenizer, out)
    log.info("training.sft_finished", stage=config.stage, step=output.global_step,
             train_loss=output.training_loss, final=str(final))
    return StageResult(stage=config.stage, final_dir=final,
                       resumed_from=None if checkpoint is None else Path(checkpoint),
                       global_step=output.global_step, train_examples=len(dataset),
                       log_history=list(trainer.state.log_history), extra=dict(extra or {}))


def run_sft(config: SFTStageConfig, dumps: list[Path], out: Path, *, resume: bool = True) -> StageResult:
    """Train on the dumps' selected conversations; checkpoints under ``out``, the result in ``out/final``."""
    selection = select_conversations(dumps, config.data, held_out_clusters=config.held_out_clusters())
    if not selection.conversations:
        raise NothingToTrain(f"no dump row passed the data selection ({dict(selection.dropped)})")
    return train_sft(config, selection.conversations, out, resume=resume,
                     extra={"dropped": dict(selection.dropped)})
