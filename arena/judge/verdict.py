"""The judge's answer: one of five reasoning-quality levels, walked as strict gates (SPEC 3).

A verdict says who judged (a model name, or the offline rules), why, and how many calls it took, so
every score built on it can show where it came from.
"""

from __future__ import annotations

from typing import Final, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arena.judge.evidence import JudgeInput

QUALITY_LEVELS: Final[tuple[float, ...]] = (0.1, 0.3, 0.5, 0.7, 0.9)
"""The only values a verdict may carry: gate 1 failed, 2 failed, 3 failed, 4 failed, all passed."""

GATES: Final[tuple[str, ...]] = (
    "no inference call with >= 30 completion tokens",
    "thinking never analyses tool results",
    "no specific datum (product id, price, attribute) cited",
    "no explicit comparison of >= 2 candidates with a reason in one step",
)
"""Gate ``i`` (1-based) failing gives ``QUALITY_LEVELS[i - 1]``."""

OFFLINE_JUDGE: Final = "offline-rules"
"""The label of the deterministic judge, wherever its verdicts and scores appear."""

PROXY_LOG_RULE: Final = "proxy-log-rule"
"""The label of a gate-1 verdict read straight off the verified proxy log (no model asked)."""


def allowed_quality(value: float) -> float | None:
    """``value`` as one of the five levels, or ``None`` when it is not one of them."""
    for level in QUALITY_LEVELS:
        if abs(value - level) < 1e-9:
            return level
    return None


class JudgeVerdict(BaseModel):
    """The reasoning quality of one attempt."""

    model_config = ConfigDict(frozen=True)

    quality: float
    judge: str = Field(description="The model that answered, or offline-rules / proxy-log-rule")
    offline: bool = Field(description="Decided by the offline rules rather than a judge model")
    explanation: str
    attempts: int = Field(ge=0, description="Judge-model calls made for this verdict")
    failed_calls: int = Field(default=0, ge=0, description=(
        "Of those, the calls that gave no verdict (provider errors, refusals, unparseable answers)"))
    models_tried: tuple[str, ...] = ()
    echoed_completions: int = Field(default=0, ge=0, description=(
        "Completions the offline rules found only repeating their request (no credit; the LLM judge may "
        "not lift such a verdict)"))
    steered_completions: int = Field(default=0, ge=0, description=(
        "Completions that answered a request holding the agent's code's own text (trajectories.filter."
        "decided): no credit, and the LLM judge may not lift such a verdict"))

    @property
    def undecided_completions(self) -> int:
        """Completions that are not the model's own decision (echoed or steered)."""
        return self.echoed_completions + self.steered_completions

    @field_validator("quality")
    @classmethod
    def _one_of_the_levels(cls, value: float) -> float:
        level = allowed_quality(value)
        if level is None:
            raise ValueError(f"quality must be one of {QUALITY_LEVELS}, got {value}")
        return level

    @property
    def failed_gate(self) -> int | None:
        """The first gate the attempt failed (1..4), or ``None`` when it passed them all."""
        passed = self.gates_passed
        return passed + 1 if passed < len(GATES) else None

    @property
    def gates_passed(self) -> int:
        """How many gates the attempt passed (0..4): the rule that maps a quality level to its gate."""
        return QUALITY_LEVELS.index(self.quality)


class Judge(Protocol):
    def judge(self, item: JudgeInput) -> JudgeVerdict: ...
