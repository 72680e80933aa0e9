"""The config of the GRPO stage: the problems' catalog, the teacher's attempts, the rewards, and the
trainer arguments that make it Dr. GRPO. :mod:`grpo` runs the stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from trajectories.training.stages.rewards import RewardSettings
from trajectories.training.stages.stage import StageConfig

DR_GRPO: dict[str, Any] = {"loss_type": "dr_grpo", "scale_rewards": "none"}
"""What makes GRPO Dr. GRPO in TRL: no length normalisation, no division by the group's reward std."""


class GRPOStageConfig(StageConfig):
    """Stage 5: the problems' catalog, the teacher's attempts, the rewards and ``trl.GRPOConfig``'s arguments.

    ``max_length`` is the context a rollout must fit in: the longest prompt plus the trainer's
    ``max_completion_length`` (which counts the tool results inside the completion too)."""

    stage: Literal["grpo"] = "grpo"
    catalog: Path | None = Field(default=None, description=(
        "Catalog directory the dumps' problems come from (`worker train --catalog` sets or overrides it)"))
    teacher_attempts: list[Path] = Field(default_factory=list, description=(
        "Stage 3's AttemptRecord JSONL files (OUT/rollouts/attempts.jsonl); relative to the config file"))
    rewards: RewardSettings = Field(default_factory=RewardSettings)
    max_problems: int | None = Field(default=None, ge=1, description="Use only the first N train problems")

    @classmethod
    def trainer_config_class(cls) -> type:
        from trl.trainer.grpo_config import GRPOConfig  # on demand, as the pipeline imports the stages

        return GRPOConfig

    @model_validator(mode="after")
    def _dr_grpo_only(self) -> GRPOStageConfig:
        for name, value in DR_GRPO.items():
            if self.trainer.get(name, value) != value:
                raise ValueError(f"trainer.{name} must be {value!r} (Dr. GRPO), got {self.trainer[name]!r}")
        if "reward_weights" in self.trainer:
            raise ValueError("set the reward weights under `rewards:` (outcome, teacher, hallucination), "
                             "not trainer.reward_weights")
        return self
