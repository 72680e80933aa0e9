"""The study's preference stage: KTO on unpaired desirable and undesirable attempts, with TRL's
``KTOTrainer``.

Candidates are the rejection-sampling stage's rollouts (``rollouts``: ``AttemptRecord`` JSONL; the pipeline
passes the rejection stage's ``attempts.jsonl``) and, with ``data.from_dumps``, the dumps' ``train`` rows,
under the leak-cluster guard and readers DPO uses (``dpo.guarded_candidates``). A successful attempt whose
filter label is in ``data.desirable_labels`` is desirable, a failed one whose label is in
``data.undesirable_labels`` undesirable; nothing needs a partner, so a problem the model only failed still
teaches. Kept (desirable) rollouts are weighted by their reward as rejection sampling weights them
(``data.weighting``, by repetition: :mod:`trajectories.training.data.weighting`); dump rows count once.

Multi-turn, assistant-only, as DPO: the prompt is the system turn (with the tool schemas) and the user's
query, the completion the rest of the conversation rendered by the training chat template
(:mod:`trajectories.training.data.tokens`), cut to ``max_length`` keeping its start; the log-probabilities
KTO compares sum over the assistant tokens only (think, content, tool calls, ``<|im_end|>``), never over
tool results: :class:`AssistantMaskCollator` hands the masks to the trainer (TRL's own marks the whole
completion). The examples are shuffled with the trainer seed, so desirable and undesirable ones share
batches; KTO's KL estimate pairs each prompt with its batch neighbour's completion (TRL's rotation, made
here once), hence a batch of at least 2 for ``loss_type: kto``. With LoRA the reference model is the
policy with its adapter disabled, else a frozen copy of the starting weights.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog
import torch
from datasets import Dataset, IterableDataset
from pydantic import BaseModel, ConfigDict, Field, model_validator
from transformers import PreTrainedTokenizerBase, ProcessorMixin
from trl.trainer.kto_config import KTOConfig
from trl.trainer.kto_trainer import DataCollatorForUnpairedPreference, KTOTrainer

from shoppingbench.agent_sdk import MAX_TOOL_CHARS
from trajectories.training.data.conversations import Conversation, GradedConversation
from trajectories.training.data.tokens import RenderedMessages, render_messages
from trajectories.training.data.weighting import RewardWeighting, weighted
from trajectories.training.stages import stage
from trajectories.training.stages.dpo import PROMPT_MESSAGES, completion_side, guarded_candidates
from trajectories.training.stages.stage import NothingToTrain, StageConfig, StageResult

log = structlog.get_logger(__name__)

EXAMPLE_COLUMNS = ("prompt_ids", "completion_ids", "completion_mask", "KL_completion_ids",
                   "KL_completion_mask", "label")


class KTOData(BaseModel):
    """Which attempts are desirable or undesirable, and how kept rollouts are weighted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    desirable_labels: frozenset[str] = Field(default=frozenset({"agentic"}), description=(
        "Structural-filter labels a successful attempt needs to be desirable"))
    undesirable_labels: frozenset[str] = Field(default=frozenset({"agentic"}), description=(
        "Structural-filter labels a failed attempt needs to be undesirable"))
    from_dumps: bool = Field(default=True, description=(
        "Also the dumps' guarded train rows (successes desirable, failures undesirable), not only rollouts"))
    weighting: RewardWeighting = Field(default_factory=lambda: RewardWeighting(mode="reward"), description=(
        "How the kept (desirable) rollouts are weighted: by reward, as rejection sampling weights them"))
    max_tool_chars: int = Field(default=MAX_TOOL_CHARS, ge=16, description="Tool results longer are cut")


class KTOStageConfig(StageConfig):
    """One KTO stage: model, example selection, rollout files, sequence length, LoRA and ``trl.KTOConfig``."""

    stage: Literal["kto"] = "kto"
    data: KTOData = Field(default_factory=KTOData)
    rollouts: list[Path] = Field(default_factory=list, description=(
        "AttemptRecord JSONL files (a sampling stage's rollouts/attempts.jsonl) to take completions from; "
        "relative paths are relative to the config file"))

    @classmethod
    def trainer_config_class(cls) -> type:
        return KTOConfig

    @model_validator(mode="after")
    def _kl_needs_a_batch(self) -> KTOStageConfig:
        if "max_length" in self.trainer:
            raise ValueError("set the sequence length as the stage's max_length, not trainer.max_length")
        kl = self.trainer.get("loss_type", "kto") == "kto"
        if kl and int(self.trainer.get("per_device_train_batch_size", 8)) < 2:
            raise ValueError("loss_type kto estimates its KL term within a batch: set "
                             "trainer.per_device_train_batch_size to 2 or more")
        return self


@dataclass(frozen=True)
class KTOExamples:
    """The conversations to train on with their labels (desirable: True), and what was left out, by reason."""

    examples: list[tuple[Conversation, bool]]
    dropped: Counter[str]
    desirable: int
    undesirable: int
    kept_rollouts: int
    """desirable rollouts before their reward weighting"""


def build_examples(candidates: Sequence[GradedConversation], data: KTOData, seed: int) -> KTOExamples:
    """The labelled conversations of the candidates (pure): labels filtered, kept rollouts (those with a
    reward) weighted, then shuffled with ``seed``."""
    dropped: Counter[str] = Counter()
    examples: list[tuple[Conversation, bool]] = []
    kept: list[tuple[Conversation, bool]] = []
    rewards: list[float] = []
    for graded in candidates:
        labels = data.desirable_labels if graded.success else data.undesirable_labels
        if graded.filter_label not in labels:
            dropped[f"{'desirable' if graded.success else 'undesirable'}:label:{graded.filter_label}"] += 1
        elif graded.success and graded.reward is not None:
            kept.append((graded.conversation, True))
            rewards.append(graded.reward)
        else:
            examples.append((graded.conversation, graded.success))
    examples.extend(weighted(kept, rewards, data.weighting))
    random.Random(seed).shuffle(examples)
    desirable = sum(1 for _, label in examples if label)
    return KTOExamples(examples=examples, dropped=dropped, desirable=desirable,
                       undesirable=len(examples) - desirable, kept_rollouts=len(kept))


def collect_examples(dumps: Sequence[Path], config: KTOStageConfig) -> KTOExamples:
    """The guarded candidates of the dumps and rollout files, as :func:`build_examples` makes them."""
    data = config.data
    candidates = guarded_candidates(dumps, labels=data.desirable_labels | data.undesirable_labels,
                                    max_tool_chars=data.max_tool_chars, held_out=config.held_out_clusters(),
                                    rollouts=config.rollouts, from_dumps=data.from_dumps)
    examples = build_examples(candidates.graded, data, seed=int(config.trainer.get("seed", 0)))
    examples.dropped.update(candidates.dropped)
    return examples


def tokenize_examples(tokenizer: PreTrainedTokenizerBase, examples: Sequence[tuple[Conversation, bool]],
                      max_length: int, batch_size: int) -> tuple[Dataset, Counter[str], int]:
    """The examples as the trainer reads them (:data:`EXAMPLE_COLUMNS`; the KL completion of each is its
    batch predecessor's, the first taking the batch's last, as TRL rotates them), the ones left out by
    reason, and how many were cut to ``max_length``."""
    rows: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    truncated = 0
    rendered: dict[str, RenderedMessages] = {}
    for conversation, label in examples:
        messages, tools = conversation.messages, conversation.tools
        prompt = render_messages(tokenizer, messages[:PROMPT_MESSAGES], tools).input_ids
        if len(prompt) >= max_length:
            dropped["prompt_over_max_length"] += 1
            continue
        if conversation.attempt_id not in rendered:  # a weighted example repeats: render it once
            rendered[conversation.attempt_id] = render_messages(tokenizer, messages, tools)
        side = completion_side(rendered[conversation.attempt_id], prompt, max_length - len(prompt))
        if isinstance(side, str):
            dropped[side] += 1
        else:
            truncated += side[2]
            rows.append({"prompt_ids": prompt, "completion_ids": side[0], "completion_mask": side[1],
                         "label": label})
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        for row, neighbour in zip(batch, [batch[-1], *batch[:-1]], strict=True):
            row["KL_completion_ids"], row["KL_completion_mask"] = (neighbour["completion_ids"],
                                                                   neighbour["completion_mask"])
    dataset = Dataset.from_dict({column: [row[column] for row in rows] for column in EXAMPLE_COLUMNS})
    return dataset, dropped, truncated


@dataclass
class AssistantMaskCollator(DataCollatorForUnpairedPreference):
    """TRL's unpaired collator (prompt + completion, right-padded, cut to ``max_length``), with the
    completion masks (the example's and its KL completion's) taken from the assistant masks."""

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super().torch_call(examples)
        for prefix in ("", "KL_"):
            key = f"{prefix}completion_mask"
            if key not in batch:
                continue
            mask = torch.zeros_like(batch[key])
            for row, example in enumerate(examples):
                values = ([0] * len(example["prompt_ids"]) + example[key])[:self.max_length]
                mask[row, :len(values)] = torch.tensor(values, dtype=mask.dtype)
            batch[key] = mask
        return batch


class PretokenizedKTOTrainer(KTOTrainer):
    """``KTOTrainer`` over a dataset tokenized by :func:`tokenize_examples`: TRL's own preparation would
    render the examples again from text and train on the tool results too."""

    def _prepare_dataset(self, dataset: Dataset | IterableDataset,
                         processing_class: PreTrainedTokenizerBase | ProcessorMixin, args: KTOConfig,
                         dataset_name: str) -> Dataset | IterableDataset:
        return dataset


def trainer_arguments(config: StageConfig, out: Path) -> KTOConfig:
    # The collator reads the mask columns, which are no model inputs: the trainer must not drop them
    return KTOConfig(**stage.trainer_arguments(config, out, max_length=config.max_length,
                                               remove_unused_columns=False))


def run_kto(config: KTOStageConfig, dumps: list[Path], out: Path, *, resume: bool = True) -> StageResult:
    """KTO on the dumps' and rollouts' conversations; checkpoints under ``out``, the result in ``out/final``.
    Refuses (:class:`stage.NothingToTrain`) when no example is left, saying why."""
    examples = collect_examples(dumps, config)
    if not examples.examples:
        raise NothingToTrain(f"no KTO example: every candidate was left out ({dict(examples.dropped)})")
    model, tokenizer = stage.load_stage_model(config, out)
    arguments = trainer_arguments(config, out)
    dataset, unusable, truncated = tokenize_examples(tokenizer, examples.examples, config.max_length,
                                                     arguments.per_device_train_batch_size)
    if not len(dataset):
        raise NothingToTrain(f"none of the {len(examples.examples)} KTO examples can be trained on within "
                             f"max_length {config.max_length}: {dict(unusable)}")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    multiple = arguments.pad_to_multiple_of
    collator = AssistantMaskCollator(pad_token_id=pad, max_length=config.max_length,
                                     pad_to_multiple_of=multiple if isinstance(multiple, int) else None)
    checkpoint = stage.last_checkpoint(out) if resume else None
    trainer = PretokenizedKTOTrainer(model=model, ref_model=stage.frozen_reference(config, model),
                                     args=arguments, data_collator=collator, train_dataset=dataset,
                                     processing_class=tokenizer, peft_config=stage.peft_config(config.lora))
    log.info("training.kto_started", examples=len(dataset), desirable=examples.desirable,
             undesirable=examples.undesirable, model=config.model, lora=config.lora.enabled,
             resume_from=checkpoint)
    output = trainer.train(resume_from_checkpoint=checkpoint)
    stage.require_finite(trainer.state.log_history, config.stage)
    final = stage.save_final(trainer, tokenizer, out)
    log.info("training.kto_finished", step=output.global_step, train_loss=output.training_loss,
             final=str(final))
    extra = {"desirable": examples.desirable, "undesirable": examples.undesirable,
             "kept_rollouts": examples.kept_rollouts, "truncated": truncated,
             "dropped": dict(sorted((examples.dropped + unusable).items()))}
    return StageResult(stage=config.stage, final_dir=final,
                       resumed_from=None if checkpoint is None else Path(checkpoint),
                       global_step=output.global_step, train_examples=len(dataset),
                       log_history=list(trainer.state.log_history), extra=extra)
