"""What a held-out evaluation produced, as the pipeline hands it on and keeps it: an
:class:`EvaluationOutcome` is ``OUT/NN-<stage>/evaluation.json`` (and the stage's ``evaluation`` in
``OUT/pipeline.json``). Its ``pass_at_<k>`` key, as ``worker evaluate`` prints it, gives ``k`` and
``pass_at_k``.
"""

from __future__ import annotations

import re
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

from trajectories.training.evaluation.evaluate import EvaluationReport

_PASS_AT_K = re.compile(r"pass_at_(\d+)")


class EvaluationOutcome(BaseModel):
    """One held-out evaluation of a model: its figures and files, or why it was skipped."""

    model_config = ConfigDict(extra="forbid")

    skipped: str | None = Field(default=None, description=(
        "Why nothing was evaluated (no held-out problem yet: a later run tries again)"))
    results: Path | None = Field(default=None, description="The EvaluationReport's results.json")
    plot: Path | None = None
    registry_id: int | None = None
    problems_source: str | None = Field(default=None, description="The held-out suite or dump evaluated on")
    k: int | None = None
    pass_at_1: float | None = Field(default=None, description="Over all held-out problems")
    pass_at_k: float | None = Field(default=None, description="Over all held-out problems")
    step_hallucination_rate: float | None = None
    report: EvaluationReport | None = Field(default=None, exclude=True, description=(
        "The report itself while the run that made it holds it (never written: `results` names its file)"))

    @model_validator(mode="before")
    @classmethod
    def _k_from_its_key(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        keyed = {key: match for key in data if (match := _PASS_AT_K.fullmatch(key)) and key != "pass_at_1"}
        if not keyed:
            return data
        (key, match), = keyed.items()
        rest = {name: value for name, value in data.items() if name != key}
        return {**rest, "k": int(match.group(1)), "pass_at_k": data[key]}

    @model_serializer(mode="wrap")
    def _pass_at_k_keyed_by_k(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if "pass_at_k" in dumped and self.k is not None:  # as `worker evaluate` prints it: pass_at_4
            dumped[f"pass_at_{self.k}"] = dumped.pop("pass_at_k")
            dumped.pop("k", None)
        return dumped

    def read_report(self) -> EvaluationReport | None:
        """The report: the one held in memory, else read from ``results`` (a finished run's file)."""
        if self.report is not None:
            return self.report
        if self.results is None:
            return None
        return EvaluationReport.model_validate_json(self.results.read_text(encoding="utf-8"))
