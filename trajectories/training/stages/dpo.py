"""Stage 4: DPO on successful over failed attempts of the same problem, with TRL's ``DPOTrainer``.

Candidates are the dumps' ``train`` rows under the leak-cluster guard of
:func:`~trajectories.training.data.conversations.select_graded` (the guard SFT applies) and, optionally,
rollout records (``AttemptRecord`` JSONL as ``worker evaluate`` and the sampling stages write it) of problems
that :func:`~trajectories.training.data.problems.dump_problems` returns for the dumps' train split under the
same guard; a rollout is labelled by the structural filter from its verified proxy log.
:mod:`trajectories.training.data.dpo_pairs` pairs them (pure and deterministic).

Multi-turn, assistant-only: the prompt is the system turn (with the tool schemas) and the user's query; a
pair's chosen and rejected sequences are the rest of each conversation, rendered by the training chat template
of :mod:`trajectories.training.data.tokens`. The sequence log-probabilities DPO compares sum over the
assistant tokens only (think, content, tool calls, the closing ``<|im_end|>``), never over tool results or
turn headers: the dataset is tokenized here with those masks, and :class:`AssistantMaskCollator` hands them to
the trainer as its ``completion_mask`` (TRL's own collator marks the whole completion). With LoRA the
reference model is the policy with its adapter disabled (TRL's way with PEFT); with full fine-tuning it is a
frozen copy of the starting model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog
import torch
from datasets import Dataset, IterableDataset
from pydantic import Field
from transformers import PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin
from trl.trainer.dpo_config import DPOConfig
from trl.trainer.dpo_trainer import DataCollatorForPreference, DPOTrainer

from shoppingbench.grading.verified import UNVERIFIED_ANSWER
from trajectories.filter import label_attempt
from trajectories.training.data.conversations import (
    Conversation,
    DataFilter,
    GradedConversation,
    record_conversation,
    select_graded,
)
from trajectories.training.data.dpo_pairs import PairFilter, PreferencePair, select_pairs
from trajectories.training.data.problems import dump_problems
from trajectories.training.data.tokens import RenderedMessages, render_messages
from trajectories.training.data.weighting import sample_reward
from trajectories.training.stages import stage
from trajectories.training.stages.rollouts import read_attempts
from trajectories.training.stages.stage import StageConfig, StageResult

log = structlog.get_logger(__name__)

PROMPT_MESSAGES = 2
"""The prompt is the system turn and the user's query; everything after it is the completion."""

PAIR_COLUMNS = ("prompt_ids", "chosen_ids", "chosen_mask", "rejected_ids", "rejected_mask")


class DPOStageConfig(StageConfig):
    """One DPO stage: model, pair selection, rollout files, sequence length, LoRA and ``trl.DPOConfig``."""

    stage: Literal["dpo"] = "dpo"
    data: PairFilter = Field(default_factory=PairFilter)
    rollouts: list[Path] = Field(default_factory=list, description=(
        "AttemptRecord JSONL files (k samples per problem) to take candidates from besides the dumps; "
        "relative paths are relative to the config file"))

    @classmethod
    def trainer_config_class(cls) -> type:
        return DPOConfig


@dataclass(frozen=True)
class Candidates:
    """Attempts that passed the guard, from the dumps and the rollout files, and why the others did not."""

    graded: list[GradedConversation]
    dropped: Counter[str]
    from_dumps: int
    from_rollouts: int


def rollout_candidates(paths: Sequence[Path], clusters: Mapping[str, str],
                       max_tool_chars: int) -> tuple[list[GradedConversation], Counter[str]]:
    """Graded conversations of the records in ``paths`` whose problem is a guarded train problem
    (``clusters``: problem id -> leak cluster); a record seen twice counts once."""
    kept: dict[str, GradedConversation] = {}
    dropped: Counter[str] = Counter()
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"rollouts file {path} does not exist: pass an attempts.jsonl of "
                                    "`worker evaluate` or of a sampling stage")
        for record in read_attempts(path):
            cluster = clusters.get(record.problem_id)
            if cluster is None:
                dropped["rollout:not_a_train_problem"] += 1
                continue
            if record.answer_verified is False:
                dropped[f"rollout:{UNVERIFIED_ANSWER}"] += 1
                continue
            conversation = record_conversation(record, cluster, max_tool_chars)
            if conversation is None:
                dropped["rollout:unreadable_steps"] += 1
                continue
            if conversation.attempt_id in kept:
                dropped["rollout:duplicate"] += 1
                continue
            kept[conversation.attempt_id] = GradedConversation(
                conversation=conversation, success=record.score.success, rule=record.score.rule,
                judge_quality=None, filter_label=label_attempt(record.proxy_log, record.steps,
                                                                     query=record.query).label,
                reward=sample_reward(record.score))
    return list(kept.values()), dropped


def guarded_candidates(dumps: Sequence[Path], *, labels: frozenset[str], max_tool_chars: int,
                       held_out: frozenset[str], rollouts: Sequence[Path],
                       from_dumps: bool = True) -> Candidates:
    """The dumps' guarded train rows with one of ``labels`` (unless not ``from_dumps``), then the rollout
    records of guarded train problems; the preference stages' (DPO, KTO) candidates."""
    graded: list[GradedConversation] = []
    dropped: Counter[str] = Counter()
    if from_dumps:
        selection = select_graded(dumps, DataFilter(labels=labels, max_tool_chars=max_tool_chars),
                                  held_out_clusters=held_out)
        graded, dropped = list(selection.graded), Counter(selection.dropped)
    from_rollouts: list[GradedConversation] = []
    if rollouts:
        clusters = dump_problems(dumps, "train", held_out_clusters=held_out).clusters
        from_rollouts, rollout_dropped = rollout_candidates(rollouts, clusters, max_tool_chars)
        dropped.update(rollout_dropped)
    return Candidates(graded=graded + from_rollouts, dropped=dropped, from_dumps=len(graded),
                      from_rollouts=len(from_rollouts))


def collect_candidates(dumps: Sequence[Path], config: DPOStageConfig) -> Candidates:
    """Every guarded attempt that could be a pair's side; the label filter already keeps only labels either
    side accepts (others are dropped as ``label:<label>``)."""
    return guarded_candidates(dumps, labels=config.data.chosen_labels | config.data.rejected_labels,
                              max_tool_chars=config.data.max_tool_chars, held_out=config.held_out_clusters(),
                              rollouts=config.rollouts)


@dataclass(frozen=True)
class TokenizedPair:
    """A pair as the trainer reads it: the shared prompt, each side's completion and its assistant mask
    (1 = the model generated the token: its log-probability counts)."""

    prompt_ids: list[int]
    chosen_ids: list[int]
    chosen_mask: list[int]
    rejected_ids: list[int]
    rejected_mask: list[int]
    truncated: bool
    """a side was cut to ``max_length`` (keeping its start, as SFT does)"""


def completion_side(rendered: RenderedMessages, prompt: Sequence[int],
                    room: int) -> tuple[list[int], list[int], bool] | str:
    """The completion of ``rendered`` after ``prompt``, cut to ``room`` tokens: ids, assistant mask and
    whether it was cut; or why it cannot be trained on."""
    # The trainer scores prompt + completion as one sequence: a prompt that does not render as the start of
    # the conversation (another query, tokens merging across the boundary) would be wrong
    if rendered.input_ids[:len(prompt)] != list(prompt):
        return "prompt_mismatch"
    ids, mask = rendered.input_ids[len(prompt):], rendered.assistant_mask[len(prompt):]
    if not any(mask[:room]):
        return "no_assistant_tokens_within_max_length"
    return ids[:room], mask[:room], len(ids) > room


class PairTokenizer:
    """Tokenizes pairs, rendering each conversation once however many pairs reuse it."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_length: int) -> None:
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._rendered: dict[str, RenderedMessages] = {}

    def _render(self, conversation: Conversation) -> RenderedMessages:
        rendered = self._rendered.get(conversation.attempt_id)
        if rendered is None:
            rendered = render_messages(self._tokenizer, conversation.messages, conversation.tools)
            self._rendered[conversation.attempt_id] = rendered
        return rendered

    def __call__(self, pair: PreferencePair) -> TokenizedPair | str:
        """The tokenized pair, or why it cannot be trained on."""
        prompt = render_messages(self._tokenizer, pair.chosen.messages[:PROMPT_MESSAGES],
                                 pair.chosen.tools).input_ids
        room = self._max_length - len(prompt)
        if room <= 0:
            return "prompt_over_max_length"
        sides: list[tuple[list[int], list[int]]] = []
        truncated = False
        for conversation in (pair.chosen, pair.rejected):
            side = completion_side(self._render(conversation), prompt, room)
            if isinstance(side, str):
                return side
            ids, mask, cut = side
            truncated = truncated or cut
            sides.append((ids, mask))
        (chosen_ids, chosen_mask), (rejected_ids, rejected_mask) = sides
        return TokenizedPair(prompt_ids=prompt, chosen_ids=chosen_ids, chosen_mask=chosen_mask,
                             rejected_ids=rejected_ids, rejected_mask=rejected_mask, truncated=truncated)


@dataclass(frozen=True)
class PreferenceDataset:
    """The tokenized pairs, the pairs left out and how many were cut."""

    dataset: Dataset
    dropped: Counter[str]
    """pairs that could not be tokenized, by reason"""
    truncated: int


def build_preference_dataset(tokenizer: PreTrainedTokenizerBase, pairs: Sequence[PreferencePair],
                             max_length: int) -> PreferenceDataset:
    """The pairs as a ``datasets.Dataset`` of :data:`PAIR_COLUMNS`; refuses when no pair is left."""
    tokenize = PairTokenizer(tokenizer, max_length)
    rows: list[TokenizedPair] = []
    dropped: Counter[str] = Counter()
    for pair in pairs:
        result = tokenize(pair)
        if isinstance(result, str):
            dropped[result] += 1
        else:
            rows.append(result)
    if not rows:
        raise stage.NothingToTrain(f"none of the {len(pairs)} DPO pairs can be trained on within max_length "
                                   f"{max_length}: {dict(dropped)}")
    dataset = Dataset.from_dict({column: [getattr(row, column) for row in rows] for column in PAIR_COLUMNS})
    return PreferenceDataset(dataset=dataset, dropped=dropped, truncated=sum(row.truncated for row in rows))


@dataclass
class AssistantMaskCollator(DataCollatorForPreference):
    """TRL's preference collator (chosen rows first, then rejected, right-padded), with the completion mask
    taken from the dataset's assistant masks instead of marking every completion token."""

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super().torch_call(examples)
        masks = ([[0] * len(example["prompt_ids"]) + example["chosen_mask"] for example in examples]
                 + [[0] * len(example["prompt_ids"]) + example["rejected_mask"] for example in examples])
        completion_mask = torch.zeros_like(batch["completion_mask"])
        for row, mask in enumerate(masks):
            completion_mask[row, :len(mask)] = torch.tensor(mask, dtype=completion_mask.dtype)
        batch["completion_mask"] = completion_mask
        return batch


class PretokenizedDPOTrainer(DPOTrainer):
    """``DPOTrainer`` over a dataset tokenized by :class:`PairTokenizer`: TRL's own preparation would render
    the pairs again from text and lose the assistant masks."""

    def _prepare_dataset(self, dataset: Dataset | IterableDataset,
                         processing_class: PreTrainedTokenizerBase | ProcessorMixin, args: DPOConfig,
                         dataset_name: str) -> Dataset | IterableDataset:
        return dataset


def trainer_arguments(config: StageConfig, out: Path) -> DPOConfig:
    # The collator reads the mask columns, which are no model inputs: the trainer must not drop them
    return DPOConfig(**stage.trainer_arguments(config, out, max_length=config.max_length,
                                               remove_unused_columns=False))


def dpo_trainer(config: StageConfig, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                dataset: Dataset, out: Path) -> PretokenizedDPOTrainer:
    """The trainer over a :func:`build_preference_dataset` dataset, with LoRA or a frozen reference copy."""
    reference = stage.frozen_reference(config, model)
    arguments = trainer_arguments(config, out)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    multiple = arguments.pad_to_multiple_of  # "auto" is resolved to a number or None by DPOConfig itself
    collator = AssistantMaskCollator(pad_token_id=pad,
                                     pad_to_multiple_of=multiple if isinstance(multiple, int) else None)
    return PretokenizedDPOTrainer(model=model, ref_model=reference, args=arguments, data_collator=collator,
                                  train_dataset=dataset, processing_class=tokenizer,
                                  peft_config=stage.peft_config(config.lora))


def run_dpo(config: DPOStageConfig, dumps: list[Path], out: Path, *, resume: bool = True) -> StageResult:
    """DPO on the pairs of the dumps (and rollout files); checkpoints under ``out``, the result in
    ``out/final``. Refuses (:class:`stage.NothingToTrain`) when no pair can be built, saying why."""
    candidates = collect_candidates(dumps, config)
    selection = select_pairs(candidates.graded, config.data)
    if not selection.pairs:
        raise stage.NothingToTrain(
            f"no DPO pair: {candidates.from_dumps} dump and {candidates.from_rollouts} rollout attempts "
            f"passed the leak-cluster guard and label filter (dropped: {dict(candidates.dropped)}); "
            f"{selection.why_empty()}")
    model, tokenizer = stage.load_stage_model(config, out)
    data = build_preference_dataset(tokenizer, selection.pairs, config.max_length)
    checkpoint = stage.last_checkpoint(out) if resume else None
    trainer = dpo_trainer(config, model, tokenizer, data.dataset, out)
    extra = {"pairs": len(data.dataset), "pairs_selected": len(selection.pairs),
             "pair_problems": len({pair.problem_id for pair in selection.pairs}),
             "dump_candidates": candidates.from_dumps, "rollout_candidates": candidates.from_rollouts,
             "chosen_candidates": selection.chosen, "rejected_candidates": selection.rejected,
             "problems_without_success": selection.problems_without_success,
             "problems_without_failure": selection.problems_without_failure,
             "truncated_pairs": data.truncated, "dropped": dict(candidates.dropped + selection.dropped),
             "pairs_dropped": dict(data.dropped)}
    log.info("training.dpo_started", model=config.model, lora=config.lora.enabled, resume_from=checkpoint,
             **extra)
    output = trainer.train(resume_from_checkpoint=checkpoint)
    stage.require_finite(trainer.state.log_history, config.stage)
    final = stage.save_final(trainer, tokenizer, out)
    log.info("training.dpo_finished", step=output.global_step, train_loss=output.training_loss,
             final=str(final))
    return StageResult(stage=config.stage, final_dir=final,
                       resumed_from=None if checkpoint is None else Path(checkpoint),
                       global_step=output.global_step, train_examples=len(data.dataset),
                       log_history=list(trainer.state.log_history), extra=extra)
