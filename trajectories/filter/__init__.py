"""The structural-quality filter: labels attempts ``agentic``, ``sub_task`` or ``no_llm`` (SPEC 6)."""

from trajectories.filter.calls import LoggedCall
from trajectories.filter.label import (
    LABELS,
    FilterConfig,
    FilterEvidence,
    FilterVerdict,
    Label,
    decide,
    label_attempt,
)

__all__ = ["LABELS", "FilterConfig", "FilterEvidence", "FilterVerdict", "Label", "LoggedCall", "decide",
           "label_attempt"]
