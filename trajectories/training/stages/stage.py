"""What every training stage shares: its YAML config, model loading, TRL arguments, resume and the final save.

A stage is a YAML file read into a subclass of :class:`StageConfig` (``stage: sft``, ``rejection``,
``teacher``, ``dpo``, ``grpo``). ``model`` is a Hugging Face id, a local directory (a previous stage's
``OUT/final``: a LoRA adapter there is merged into its base first, so stages chain), or ``tiny`` for the
CPU test model. ``trainer`` is passed to the stage's TRL config class unchanged, so every TRL/transformers
argument (``deepspeed``, ``save_steps``, ``use_vllm``, ...) is set in the YAML; each key is checked against
that class's fields and their types when the config is read (:func:`check_trainer_arguments`), so a
misspelt or mistyped argument fails at load, not when the stage starts. Runs resume from the newest
``checkpoint-*`` under the output directory (optimizer, scheduler, RNG state and step).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import structlog
import torch
import yaml
from peft import LoraConfig
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from transformers import PreTrainedModel, PreTrainedTokenizerBase
from transformers.trainer_utils import get_last_checkpoint

from trajectories.dumps.reader import read_held_out_clusters
from trajectories.training.dev.tiny import save_tiny_model
from trajectories.training.serving.checkpoints import load_causal_lm
from trajectories.training.serving.devices import cpu_has_bf16
from trajectories.training.stages.outcome import StageOutcome

log = structlog.get_logger(__name__)

TINY_MODEL = "tiny"
"""``model: tiny`` builds the tiny CPU Qwen3 of ``dev/tiny.py`` (into ``OUT/base``) instead of loading one."""

class NothingToTrain(ValueError):
    """The stage's data selection left nothing to train on; the message says what was dropped and why."""


class LoraSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    r: int = Field(default=16, ge=1)
    alpha: int = Field(default=32, ge=1)
    dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: str | list[str] = "all-linear"


class StageConfig(BaseModel):
    """The fields every stage has; a stage's own config class adds its data and sampling settings."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    model: str = Field(default="Qwen/Qwen3-4B", description=(
        "Hugging Face id or local directory of the starting model (a previous stage's OUT/final), or "
        "'tiny' for the CPU test model"))
    held_out_clusters_file: Path | None = Field(default=None, description=(
        "Cluster ids never to train on, one per line (relative paths are relative to the config file)"))
    max_length: int = Field(default=8192, ge=16, description="Tokens per example; longer ones are cut")
    lora: LoraSettings = Field(default_factory=LoraSettings)
    trainer: dict[str, Any] = Field(default_factory=dict, description="Arguments of the stage's TRL config")

    @classmethod
    def trainer_config_class(cls) -> type | None:
        """The TRL config class ``trainer`` is passed to (``SFTConfig``, ``DPOConfig``...); None for a
        config of no particular stage, whose ``trainer`` is not checked."""
        return None

    @model_validator(mode="after")
    def _trainer_arguments_exist(self) -> Self:
        trainer_class = self.trainer_config_class()
        if trainer_class is not None:
            check_trainer_arguments(self.stage, self.trainer, trainer_class)
        return self

    @classmethod
    def load(cls, path: Path) -> Self:
        """Read ``path``; relative paths in it (top-level ``Path`` and ``list[Path]`` fields) are taken
        relative to its directory."""
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(raw, dict):
            raise ValueError(f"{path} must hold a YAML mapping of stage settings")
        config = cls.model_validate(raw)

        def relative(value: Path) -> Path:
            return value if value.is_absolute() else path.parent / value

        updates: dict[str, Any] = {}
        for name, value in config:
            if isinstance(value, Path):
                updates[name] = relative(value)
            elif isinstance(value, list) and value and all(isinstance(item, Path) for item in value):
                updates[name] = [relative(item) for item in value]
        return config.model_copy(update=updates)

    def held_out_clusters(self) -> frozenset[str]:
        if self.held_out_clusters_file is None:
            return frozenset()
        return read_held_out_clusters(self.held_out_clusters_file)


@functools.cache
def _argument_types(trainer_class: type) -> dict[str, TypeAdapter[Any]]:
    """Field name -> a validator of its declared type, for a TRL config dataclass (built once per class)."""
    hints = typing.get_type_hints(trainer_class)
    return {field.name: TypeAdapter(hints[field.name]) for field in dataclasses.fields(trainer_class)}


def check_trainer_arguments(stage: str, trainer: Mapping[str, Any], trainer_class: type) -> None:
    """Refuse a ``trainer`` key ``trainer_class`` has no field for, or a value its field's type refuses
    (pydantic's lax reading: YAML's ``1e-5``, a string, passes as a float as TRL would take it)."""
    types = _argument_types(trainer_class)
    for key, value in for_installed_transformers(dict(trainer), frozenset(types)).items():
        if key not in types:
            raise ValueError(f"stage {stage}: trainer.{key} is not an argument of {trainer_class.__name__}")
        try:
            types[key].validate_python(value)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            raise ValueError(f"stage {stage}: trainer.{key} = {value!r} does not fit "
                             f"{trainer_class.__name__}.{key} ({reason})") from None


@dataclass(frozen=True)
class StageResult:
    """What a stage run produced; ``extra`` holds stage-specific counts (rollouts kept, pairs built...);
    ``attempts_file`` the rollouts a sampling stage made (later stages read them)."""

    stage: str
    final_dir: Path
    resumed_from: Path | None
    global_step: int
    train_examples: int
    log_history: list[dict[str, Any]]
    extra: Mapping[str, Any]
    attempts_file: Path | None = None
    minutes: float | None = None
    """Wall time of the whole stage, set by the pipeline's ``run_stage``"""

    def outcome(self) -> StageOutcome:
        """The record of the run (``OUT/result.json``, the JSON line ``worker train`` prints last)."""
        losses = [entry["loss"] for entry in self.log_history if "loss" in entry]
        tokens = [int(entry["num_tokens"]) for entry in self.log_history if "num_tokens" in entry]
        return StageOutcome(stage=self.stage, final=self.final_dir, global_step=self.global_step,
                            examples=self.train_examples, last_loss=losses[-1] if losses else None,
                            tokens_trained=max(tokens) if tokens else None, minutes=self.minutes,
                            resumed_from=self.resumed_from, attempts_file=self.attempts_file,
                            details=dict(self.extra))


def model_source(model: str, out: Path) -> str | Path:
    """Where ``model`` loads from; ``tiny`` is written to ``out/base`` on first use."""
    if model != TINY_MODEL:
        return model
    base = out / "base"
    if not (base / "config.json").exists():
        save_tiny_model(base)
    return base


def load_stage_model(config: StageConfig, out: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    source = model_source(config.model, out)
    local = Path(source)
    return load_causal_lm(local if local.is_dir() else source)


def peft_config(lora: LoraSettings) -> LoraConfig | None:
    """The LoRA adapter to train, or None for full fine-tuning."""
    if not lora.enabled:
        return None
    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                      target_modules=lora.target_modules, task_type="CAUSAL_LM")


def frozen_reference(config: StageConfig, model: PreTrainedModel) -> PreTrainedModel | None:
    """The reference model of a preference stage (DPO, KTO): None under LoRA (TRL then uses the policy with
    its adapter disabled), else a frozen copy of the starting weights (TRL would reload the reference from
    the config's name, which after a merged LoRA stage is the base model)."""
    if config.lora.enabled:
        return None
    reference: PreTrainedModel = copy.deepcopy(model).requires_grad_(False)
    return reference


def trainer_arguments(config: StageConfig, out: Path, **fixed: Any) -> dict[str, Any]:
    """The stage's TRL arguments: ours where they must hold (``output_dir`` and ``fixed``), the YAML's
    otherwise, and overrides that make a GPU recipe run on CPU when there is no CUDA device."""
    arguments: dict[str, Any] = {"report_to": "none", "logging_steps": 1, **config.trainer,
                                 "output_dir": str(out), **fixed}
    if not torch.cuda.is_available():
        # GPU recipes ask for activation checkpointing and vLLM, which on CPU fail or only slow down; bf16
        # (autocast, fp32 master weights) only where the CPU computes it natively: elsewhere it slows down
        arguments.update(bf16=bool(arguments.get("bf16")) and cpu_has_bf16(), use_cpu=True,
                         activation_checkpointing=False)
        if "use_vllm" in arguments:
            arguments["use_vllm"] = False
    return for_installed_transformers(arguments)


def for_installed_transformers(arguments: dict[str, Any],
                               fields: frozenset[str] | None = None) -> dict[str, Any]:
    """``arguments`` with ``activation_checkpointing`` named ``gradient_checkpointing`` when the installed
    transformers predates the rename (``fields``: ``TrainingArguments``' field names, default the
    installed ones). The ``gpu`` extra's vLLM caps transformers below 5.18, which has only the old name."""
    if fields is None:
        from transformers import TrainingArguments

        fields = frozenset(f.name for f in dataclasses.fields(TrainingArguments))
    if "activation_checkpointing" in arguments and "activation_checkpointing" not in fields:
        arguments = dict(arguments)
        arguments["gradient_checkpointing"] = arguments.pop("activation_checkpointing")
    return arguments


def last_checkpoint(out: Path) -> str | None:
    if not out.is_dir():
        return None
    found: str | None = get_last_checkpoint(str(out))  # type: ignore[no-untyped-call]
    return found


def require_finite(log_history: Iterable[Mapping[str, Any]], stage: str, key: str = "loss") -> None:
    """Refuse a run whose logged ``key`` went NaN or infinite (nothing is saved as final then)."""
    values = [entry[key] for entry in log_history if key in entry]
    if not all(math.isfinite(value) for value in values):
        raise FloatingPointError(f"{stage} {key} went non-finite, nothing saved as final: {values}")


def save_final(trainer: Any, tokenizer: PreTrainedTokenizerBase, out: Path) -> Path:
    """Save the trained model (the adapter alone under LoRA) and the tokenizer to ``out/final``."""
    final = out / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(final)
    return final
