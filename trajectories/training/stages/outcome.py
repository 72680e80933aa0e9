"""What a stage produced, as the pipeline hands it on and keeps it: a :class:`StageOutcome` is
``OUT/NN-<stage>/result.json``, its entry in ``OUT/pipeline.json`` and the line ``worker train`` prints last.

A stage's own counts (rollouts kept, pairs built, drops by reason...) are its ``details``, written as
top-level keys of the file; reading a file, every key that is no field of the model is a detail, and a
``skipped`` mapping (GRPO's problems left out, by reason) is the detail ``problems_skipped``, so a
``result.json`` that kept them that way reads too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from trajectories.training.evaluation.outcome import EvaluationOutcome


class StageOutcome(BaseModel):
    """One stage of a pipeline run: the model it leaves, what it trained on, or why it trained nothing."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    final: Path | None = Field(description=(
        "The model the next stage starts from: this stage's OUT/final, or for a skipped stage the model it "
        "passed on (None when it was the first)"))
    skipped: str | None = Field(default=None, description=(
        "Why the stage trained nothing (it had nothing to train on); its model passed on unchanged"))
    attempts_file: Path | None = Field(default=None, description=(
        "The rollouts of a sampling stage (OUT/rollouts/attempts.jsonl), which later stages read"))
    global_step: int | None = None
    examples: int | None = Field(default=None, description="Training examples (GRPO: problems)")
    last_loss: float | None = None
    tokens_trained: int | None = Field(default=None, description="Tokens TRL counted (num_tokens)")
    minutes: float | None = Field(default=None, description="Wall time of the stage's run")
    resumed_from: Path | None = Field(default=None, description="The checkpoint the run resumed from")
    details: dict[str, Any] = Field(default_factory=dict, description=(
        "The stage's own counts (rollouts, pairs, drops by reason...), written as top-level keys"))
    evaluation: EvaluationOutcome | None = None

    @model_validator(mode="before")
    @classmethod
    def _details_from_top_level_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = {key: value for key, value in data.items() if key in cls.model_fields}
        details = {**known.get("details", {}),
                   **{key: value for key, value in data.items() if key not in cls.model_fields}}
        if isinstance(known.get("skipped"), dict):  # GRPO's problems left out, not a skip reason
            details["problems_skipped"] = known.pop("skipped")
        return {**known, "details": details}

    @model_serializer(mode="wrap")
    def _details_at_top_level(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        details = dumped.pop("details", {})
        return {**details, **dumped}
