"""The config of the sampling stages (``rejection``, ``teacher``): what is rolled out, and where the
rolled-out model answers. :mod:`sampling` runs the stage, :mod:`rollouts` the attempts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from trajectories.training.data.weighting import RewardWeighting
from trajectories.training.serving.defaults import MAX_TOKENS, SAMPLES_PER_PROBLEM, TEMPERATURE, WORKERS
from trajectories.training.stages.stage import StageConfig


class ServingSettings(BaseModel):
    """Where the rolled-out model answers, and how it samples."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["auto", "hf", "vllm", "endpoint"] = Field(default="auto", description=(
        "hf: serve the stage's model on loopback with transformers (CPU); vllm: start `vllm serve` for it "
        "(GPU); auto: vllm where CUDA and vllm are present, else hf; endpoint: an OpenAI-compatible URL "
        "that serves it already (base_url, model_name)"))
    base_url: str | None = Field(default=None, description="endpoint only: the OpenAI base URL (.../v1)")
    model_name: str | None = Field(default=None, description="endpoint only: the model name it serves")
    api_key_env: str | None = Field(default=None, description=(
        "endpoint only: the environment variable holding its API key (keys never go in the YAML)"))
    temperature: float = Field(default=TEMPERATURE, ge=0, le=2, description=(
        "Forced on every call of every sample"))
    max_tokens: int = Field(default=MAX_TOKENS, ge=1, description="Cap on tokens per completion")
    vllm_args: list[str] = Field(default_factory=list, description=(
        "vllm only: extra `vllm serve` arguments, e.g. [--tensor-parallel-size, '2']"))
    startup_timeout_s: float = Field(default=900.0, gt=0, description="vllm only: time to load the model")

    @model_validator(mode="after")
    def _endpoint_is_complete(self) -> ServingSettings:
        if self.backend == "endpoint" and not (self.base_url and self.model_name):
            raise ValueError("serving.backend endpoint needs base_url and model_name")
        return self

    def api_key(self) -> SecretStr:
        if self.api_key_env is None:
            return SecretStr("not-needed")
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ValueError(f"serving.api_key_env names {self.api_key_env}, which is not set: export it")
        return SecretStr(value)


class RolloutSettings(BaseModel):
    """What is rolled out: on which catalog, with which agent, how many samples of how many problems."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    catalog: Path | None = Field(default=None, description=(
        "Catalog directory the dumps' problems come from (`worker train --catalog` sets or overrides it)"))
    agent: Path | None = Field(default=None, description=(
        "Agent file run in the sandbox (default: the tool-calling reference agent)"))
    samples_per_problem: int = Field(default=SAMPLES_PER_PROBLEM, ge=1, description="k attempts per problem")
    max_problems: int | None = Field(default=None, ge=1, description="Use only the first N train problems")
    workers: int = Field(default=WORKERS, ge=1, description="Sandbox slots run at once")
    serving: ServingSettings = Field(default_factory=ServingSettings)
    keep_labels: frozenset[str] = Field(default=frozenset({"agentic"}), description=(
        "Structural-filter labels a successful rollout must have to be trained on"))
    max_tool_chars: int = Field(default=4000, ge=16, description="Tool results longer than this are cut")
    weighting: RewardWeighting = Field(default_factory=RewardWeighting, description=(
        "How kept samples are weighted for the SFT that follows (mode reward: reward-weighted rejection "
        "sampling, each repeated in proportion to its reward)"))


class SamplingStageConfig(StageConfig):
    """Stage 2 (``rejection``) or 3 (``teacher``): the rollouts, then SFT (``trainer``: ``trl.SFTConfig``)."""

    stage: Literal["rejection", "teacher"]
    rollouts: RolloutSettings

    @classmethod
    def trainer_config_class(cls) -> type:
        from trl.trainer.sft_config import SFTConfig  # on demand, as the pipeline imports the stages

        return SFTConfig

    @model_validator(mode="after")
    def _teacher_is_an_endpoint(self) -> SamplingStageConfig:
        if self.stage == "teacher" and self.rollouts.serving.backend != "endpoint":
            raise ValueError("the teacher stage rolls out a teacher model: set rollouts.serving.backend to "
                             "endpoint with its base_url, model_name and api_key_env")
        return self
