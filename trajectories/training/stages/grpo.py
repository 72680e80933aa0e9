"""Stage 5: GRPO with the Dr. GRPO loss over multi-turn tool rollouts, with TRL's ``GRPOTrainer``.

Each train problem of the dumps (the leak-cluster-guarded ``train`` split,
:mod:`trajectories.training.data.problems`) is one prompt: the system prompt and the user's query.
``GRPOTrainer`` samples ``num_generations`` rollouts of it; in each, the model's tool calls run against
:class:`~environment.ShoppingEnvironment` (the catalog's search engine, in process) until it stops calling
tools or ``max_tool_calling_iterations`` turns have passed. The rollouts are scored by the three reward
functions of :mod:`rewards` (outcome, per-step teacher agreement, hallucination penalty), weighted by
``rewards`` in the YAML (TRL's ``reward_weights``); with ``rewards.mode: study_teacher_match`` by the study's
per-step teacher tool match alone, and only problems with a teacher plan are rolled out on (a rollout without
one would have no reward at all).

The spec names Dr. GRPO, so the loss is ``dr_grpo`` (token losses summed and divided by a constant, no
length bias) and rewards are not divided by the group's standard deviation (``scale_rewards: none``, no
difficulty bias); a config asking for another loss or scaling is refused. Teacher plans come from stage
3's ``attempts.jsonl`` files (:func:`read_teacher_plans`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog
from datasets import Dataset
from transformers import PreTrainedTokenizerBase
from trl.trainer.grpo_config import GRPOConfig
from trl.trainer.grpo_trainer import GRPOTrainer, RewardFunc

from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.settings import HarnessSettings
from trajectories.training.data.catalog import Catalog, opened_catalog
from trajectories.training.data.problems import dump_problems
from trajectories.training.data.tools import SYSTEM_PROMPT, TOOL_SCHEMAS
from trajectories.training.stages import stage
from trajectories.training.stages.environment import (
    ShoppingContext,
    environment_factory,
)
from trajectories.training.stages.grpo_config import DR_GRPO, GRPOStageConfig
from trajectories.training.stages.rewards import (
    ToolStep,
    attempt_plan,
    best_teacher_attempts,
    plan_json,
    reward_functions,
)
from trajectories.training.stages.rollouts import read_attempts
from trajectories.training.stages.stage import NothingToTrain, StageResult

log = structlog.get_logger(__name__)

def trainer_arguments(config: GRPOStageConfig, out: Path) -> GRPOConfig:
    weights = config.rewards.weights()
    return GRPOConfig(**stage.trainer_arguments(config, out, **DR_GRPO, reward_weights=weights,
                                                vllm_max_model_length=config.max_length))


def read_teacher_plans(paths: Sequence[Path]) -> dict[str, list[ToolStep]]:
    """Problem id -> the tool calls of its best successful teacher attempt across ``paths``."""
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"teacher attempts not found: {', '.join(missing)}")
    records = [record for path in paths for record in read_attempts(path)]
    return {problem_id: attempt_plan(record) for problem_id, record in best_teacher_attempts(records).items()}


def prompt(problem: Problem) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": problem.query}]


def prompt_token_ids(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]], *,
                     chat_template: str | None = None, **template_kwargs: Any) -> list[int]:
    """The prompt as the model reads it: the tools listed as ``TOOL_SCHEMAS``, as in the SFT data and the
    tool-calling agent's requests, then the generation header."""
    tools: list[dict[str, Any] | Callable[..., Any]] = list(TOOL_SCHEMAS)
    rendered: Any = tokenizer.apply_chat_template(messages, tools=tools, chat_template=chat_template,
                                                  add_generation_prompt=True, tokenize=True, return_dict=True,
                                                  **template_kwargs)
    return list(rendered["input_ids"])


class ShoppingGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose prompts list the tools as ``TOOL_SCHEMAS``. TRL would render the environment's
    methods through ``get_json_schema`` (alphabetical, with ``nullable`` and ``return`` entries and generated
    enum descriptions), a system turn the model never saw in stages 1-4 nor sees at evaluation. The
    methods still execute the calls and parse the completions."""

    def _tokenize_prompts(self, prompts: list[Any]) -> tuple[list[list[int]], None, dict[str, Any]]:
        kwargs = self.chat_template_kwargs if isinstance(self.chat_template_kwargs, dict) else {}
        ids = [prompt_token_ids(self._tokenizer, messages, chat_template=self.chat_template, **kwargs)
               for messages in prompts]
        return ids, None, {}


def grpo_dataset(problems: Sequence[Problem], plans: Mapping[str, Sequence[ToolStep]]) -> Dataset:
    """One row per problem: ``prompt``, ``problem_id``, ``problem`` (JSON, read by the environment's
    ``reset``) and ``teacher_plan`` (JSON, or None without a plan; read by the teacher reward)."""
    return Dataset.from_dict({
        "prompt": [prompt(p) for p in problems],
        "problem_id": [p.id for p in problems],
        "problem": [p.model_dump_json() for p in problems],
        "teacher_plan": [plan_json(plans[p.id]) if p.id in plans else None for p in problems],
    })


def _longest_prompt(tokenizer: PreTrainedTokenizerBase, problems: Sequence[Problem]) -> int:
    """Tokens of the longest prompt as the model reads it: system prompt, tool schemas, query."""
    return max(len(prompt_token_ids(tokenizer, prompt(p))) for p in problems)


def run_grpo(config: GRPOStageConfig, dumps: list[Path], out: Path, *, resume: bool = True,
             settings: HarnessSettings | None = None, catalog: Catalog | None = None) -> StageResult:
    """GRPO on the dumps' guarded train problems; checkpoints under ``out``, the result in ``out/final``.
    ``catalog``: the run's open catalog, else the config's."""
    settings = settings or HarnessSettings()
    found = dump_problems(dumps, "train", held_out_clusters=config.held_out_clusters())
    problems = found.problems[:config.max_problems]
    if not problems:
        raise NothingToTrain(f"the dumps' train split has no problem with a reward outside the held-out "
                             f"clusters ({dict(found.skipped)}): nothing to roll out on")
    catalog = catalog or config.catalog
    if catalog is None:
        raise ValueError("no catalog to roll out on: set catalog in the config or pass --catalog")
    plans = read_teacher_plans(config.teacher_attempts)
    if config.rewards.mode == "study_teacher_match":  # the reward is the plan: roll out where there is one
        problems = [p for p in found.problems if p.id in plans][:config.max_problems]
        if not problems:
            raise NothingToTrain(f"rewards.mode study_teacher_match needs teacher plans, and none of the "
                                 f"{len(found.problems)} train problems has a successful teacher attempt in "
                                 f"{[str(path) for path in config.teacher_attempts]}")
    planned = sum(1 for p in problems if p.id in plans)
    with opened_catalog(catalog) as engine:
        context = ShoppingContext(engine, Grader.from_settings(engine.get_products, settings))
        model, tokenizer = stage.load_stage_model(config, out)
        args = trainer_arguments(config, out)
        longest = _longest_prompt(tokenizer, problems)
        if longest + (args.max_completion_length or 0) > config.max_length:
            raise ValueError(f"a prompt of {longest} tokens plus max_completion_length "
                             f"{args.max_completion_length} exceeds max_length {config.max_length}: raise "
                             "max_length or lower max_completion_length")
        checkpoint = stage.last_checkpoint(out) if resume else None
        rewards: list[RewardFunc] = [*reward_functions(config.rewards)]
        trainer = ShoppingGRPOTrainer(model=model, reward_funcs=rewards, args=args,
                              train_dataset=grpo_dataset(problems, plans), processing_class=tokenizer,
                              peft_config=stage.peft_config(config.lora),
                              environment_factory=environment_factory(context))
        log.info("training.grpo_started", problems=len(problems), with_teacher_plan=planned,
                 model=config.model, lora=config.lora.enabled, longest_prompt=longest, resume_from=checkpoint)
        output = trainer.train(resume_from_checkpoint=checkpoint)
        stage.require_finite(trainer.state.log_history, config.stage)
        final = stage.save_final(trainer, tokenizer, out)
    log.info("training.grpo_finished", step=output.global_step, train_loss=output.training_loss,
             final=str(final))
    extra: dict[str, Any] = {"problems": len(problems), "with_teacher_plan": planned,
                             "reward_mode": config.rewards.mode,
                             "problems_skipped": dict(found.skipped)}
    return StageResult(stage=config.stage, final_dir=final,
                       resumed_from=None if checkpoint is None else Path(checkpoint),
                       global_step=output.global_step, train_examples=len(problems),
                       log_history=list(trainer.state.log_history), extra=extra)
