"""Stage 1: supervised fine-tuning on filtered arena trajectories with TRL's ``SFTTrainer``.

A stage is a YAML file (``configs/sft.yaml``) read into :class:`SFTStageConfig`. ``trainer`` is passed
through to ``trl.SFTConfig`` unchanged, so every TRL/transformers training argument (batch size,
learning rate, ``save_steps``, ``deepspeed``, ...) is set there. ``lora.enabled`` trains a PEFT LoRA
adapter; off, the whole model is fine-tuned. Runs resume from the newest ``checkpoint-*`` under the
output directory (optimizer, scheduler, RNG and step), so a preempted GPU job continues where it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog
import torch
import yaml
from peft import LoraConfig
from pydantic import BaseModel, ConfigDict, Field
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.trainer_utils import get_last_checkpoint
from trl.trainer.sft_config import SFTConfig
from trl.trainer.sft_trainer import SFTTrainer

from trajectories.training.conversations import DataFilter, read_held_out_clusters, select_conversations
from trajectories.training.tiny import save_tiny_model
from trajectories.training.tokens import build_dataset

log = structlog.get_logger(__name__)

TINY_MODEL = "tiny"
"""``model: tiny`` builds the tiny CPU Qwen3 of ``tiny.py`` instead of loading a checkpoint."""


class LoraSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    r: int = Field(default=16, ge=1)
    alpha: int = Field(default=32, ge=1)
    dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: str | list[str] = "all-linear"


class SFTStageConfig(BaseModel):
    """One SFT stage: model, data selection, sequence length, LoRA and the TRL trainer arguments."""

    model_config = ConfigDict(extra="forbid")

    stage: Literal["sft"] = "sft"
    model: str = Field(default="Qwen/Qwen3-4B", description=(
        "Hugging Face id or local directory of the base model, or 'tiny' for the CPU test model"))
    data: DataFilter = Field(default_factory=DataFilter)
    held_out_clusters_file: Path | None = Field(default=None, description=(
        "Cluster ids never to train on, one per line (relative paths are relative to the config file)"))
    max_length: int = Field(default=8192, ge=16, description="Tokens per example; longer ones are cut")
    lora: LoraSettings = Field(default_factory=LoraSettings)
    trainer: dict[str, Any] = Field(default_factory=dict, description="Arguments of trl.SFTConfig")

    @classmethod
    def load(cls, path: Path) -> SFTStageConfig:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        config = cls.model_validate(raw)
        if config.held_out_clusters_file is not None and not config.held_out_clusters_file.is_absolute():
            config.held_out_clusters_file = path.parent / config.held_out_clusters_file
        return config


@dataclass(frozen=True)
class SFTResult:
    final_dir: Path
    resumed_from: Path | None
    global_step: int
    train_examples: int
    log_history: list[dict[str, Any]]


def _load_model(config: SFTStageConfig, out: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    source: str | Path = config.model
    if config.model == TINY_MODEL:
        source = out / "base"
        if not (source / "config.json").exists():
            save_tiny_model(source)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source, dtype="auto")
    return model, tokenizer


def trainer_arguments(config: SFTStageConfig, out: Path) -> SFTConfig:
    arguments: dict[str, Any] = {"report_to": "none", "logging_steps": 1, **config.trainer,
                                 "output_dir": str(out), "max_length": config.max_length, "packing": False}
    if not torch.cuda.is_available():
        # TRL defaults to bf16 and activation checkpointing, which on CPU only slow a tiny model down
        arguments.update(bf16=False, use_cpu=True, activation_checkpointing=False)
    return SFTConfig(**arguments)


def _last_checkpoint(out: Path) -> str | None:
    if not out.is_dir():
        return None
    found: str | None = get_last_checkpoint(str(out))  # type: ignore[no-untyped-call]
    return found


def _peft_config(lora: LoraSettings) -> LoraConfig | None:
    if not lora.enabled:
        return None
    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                      target_modules=lora.target_modules, task_type="CAUSAL_LM")


def run_sft(config: SFTStageConfig, dumps: list[Path], out: Path, *, resume: bool = True) -> SFTResult:
    """Train on the dumps' selected conversations; checkpoints under ``out``, the result in ``out/final``."""
    held_out = (read_held_out_clusters(config.held_out_clusters_file)
                if config.held_out_clusters_file is not None else frozenset())
    selection = select_conversations(dumps, config.data, held_out_clusters=held_out)
    model, tokenizer = _load_model(config, out)
    dataset = build_dataset(tokenizer, selection.conversations, config.max_length)
    checkpoint = _last_checkpoint(out) if resume else None
    trainer = SFTTrainer(model=model, args=trainer_arguments(config, out), train_dataset=dataset,
                         processing_class=tokenizer, peft_config=_peft_config(config.lora))
    log.info("training.sft_started", examples=len(dataset), model=config.model, lora=config.lora.enabled,
             resume_from=checkpoint, dropped=dict(selection.dropped))
    output = trainer.train(resume_from_checkpoint=checkpoint)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    if not all(math.isfinite(loss) for loss in losses):
        raise FloatingPointError(f"SFT loss went non-finite, nothing saved as final: {losses}")
    final = out / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(final)
    log.info("training.sft_finished", step=output.global_step, train_loss=output.training_loss,
             final=str(final))
    return SFTResult(final_dir=final, resumed_from=None if checkpoint is None else Path(checkpoint),
                     global_step=output.global_step, train_examples=len(dataset),
                     log_history=list(trainer.state.log_history))
