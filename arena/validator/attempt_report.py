"""Why each attempt of a local test scored as it did: the judge's verdict (its quality level, the first
gate it failed and why) and the structural filter's label (agentic, sub_task or no_llm, and why), on the
console and in the run's JSONL file.

The JSONL lines go out as attempts finish (before judging), so an interrupted run keeps what it ran;
once the run is judged the file is rewritten with each line's ``verdict`` and ``filter``, atomically (a
temporary file in the same directory, then ``os.replace``): a reader sees the old file or the new one,
never half of one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
from rich.table import Table

from arena.judge import JudgeVerdict
from arena.judge.verdict import GATES
from arena.validator.runs import JudgedRun
from shoppingbench.files import write_file_atomically
from shoppingbench.problems.models import Problem
from trajectories.filter import FilterVerdict
from trajectories.store import AttemptKey, TrajectoryStore

MAX_ATTEMPT_ROWS: Final = 30
"""Attempts the console table lists in full; a longer suite lists the ones that did not pass first."""
REASON_CHARS: Final = 100
"""The console's cut of a judge's explanation and of the filter's reasons (the JSONL keeps them whole)."""
NOT_SCORED: Final = "not scored"


@dataclass(frozen=True)
class AttemptExplanation:
    """One attempt's outcome and why: ``verdict`` is ``None`` when it was not scored (the inference
    provider failed it and a deadline passed before its retries), ``label`` when the store holds none."""

    problem_id: str
    category: str
    success: bool
    verdict: JudgeVerdict | None
    label: FilterVerdict | None

    @property
    def gate(self) -> str:
        """The first gate failed as ``N: what it asks``, ``passed`` or ``not scored``."""
        if self.verdict is None:
            return NOT_SCORED
        failed = self.verdict.failed_gate
        return "passed" if failed is None else f"{failed}: {GATES[failed - 1]}"

    @property
    def passed(self) -> bool:
        """A success that passed every gate with an agentic label: nothing for the miner to look at."""
        return self.success and self.gate == "passed" and self.label is not None \
            and self.label.label == "agentic"

    def jsonl_fields(self) -> dict[str, Any]:
        """The ``verdict`` and ``filter`` fields the attempt's JSONL line gains after judging."""
        verdict = None if self.verdict is None else {
            "quality": self.verdict.quality, "failed_gate": self.verdict.failed_gate, "gate": self.gate,
            "reason": self.verdict.explanation, "judge": self.verdict.judge, "offline": self.verdict.offline}
        label = None if self.label is None else {
            "label": self.label.label, "reasons": list(self.label.reasons), "filter": self.label.filter}
        return {"verdict": verdict, "filter": label}


def explain_attempts(judged: JudgedRun, suite: Sequence[Problem], store: TrajectoryStore, *, run_id: str,
                     agent_hash: str) -> list[AttemptExplanation]:
    """Each problem of ``suite`` (in suite order) with its scored verdict and the label the store keeps
    for its attempt in run ``run_id`` (the last one the run took, with its steered requests known)."""
    outcomes = dict(zip(judged.problem_ids, zip(judged.successes, judged.verdicts, strict=True), strict=True))
    explained = []
    for problem in suite:
        stored = store.get_attempt(AttemptKey(run_id, agent_hash, problem.id))
        success, verdict = outcomes.get(problem.id, (False, None))
        explained.append(AttemptExplanation(
            problem_id=problem.id, category=problem.category, success=success, verdict=verdict,
            label=None if stored is None else stored.label))
    return explained


def rewrite_with_explanations(out: Path, explanations: Sequence[AttemptExplanation]) -> None:
    """Rewrite the JSONL file ``out`` with each attempt line's ``verdict`` and ``filter`` added (lines
    in the order they were written), atomically: interrupted, ``out`` stays as it was."""
    by_problem: Mapping[str, AttemptExplanation] = {e.problem_id: e for e in explanations}
    lines = []
    for line in out.read_bytes().splitlines():
        attempt = orjson.loads(line)
        explanation = by_problem.get(attempt.get("problem_id"))
        lines.append(orjson.dumps(attempt if explanation is None
                                  else {**attempt, **explanation.jsonl_fields()}))
    write_file_atomically(out, b"".join(line + b"\n" for line in lines))


def _short(text: str, limit: int = REASON_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown_attempts(explanations: Sequence[AttemptExplanation],
                   limit: int = MAX_ATTEMPT_ROWS) -> list[AttemptExplanation]:
    """All attempts up to ``limit``; beyond it the first ``limit`` of them with the ones that did not pass
    (failed, failed a gate, not agentic) first, each group in suite order."""
    if len(explanations) <= limit:
        return list(explanations)
    return sorted(explanations, key=lambda e: e.passed)[:limit]


REASONS_WIDTH = 140
"""Console columns below which the two reason columns are left to the JSONL: at 80 columns eight columns
wrap one word a line."""


def attempt_table(explanations: Sequence[AttemptExplanation], out: Path, limit: int = MAX_ATTEMPT_ROWS, *,
                  width: int = REASONS_WIDTH) -> tuple[Table, str | None]:
    """One row per attempt shown (:func:`shown_attempts`): problem, category, success, judge quality, the
    gate failed, the filter label and, on a console at least :data:`REASONS_WIDTH` wide, the judge's reason
    and the filter's reasons; with a note of what was left out (attempts, reasons) and where all of it
    is."""
    shown = shown_attempts(explanations, limit)
    reasons_shown = width >= REASONS_WIDTH
    table = Table(title="each attempt: the judge's verdict and the structural filter's label")
    columns = ("problem", "category", "success", "quality", "gate", "judge reason", "filter",
               "filter reasons")
    kept = [i for i, column in enumerate(columns) if reasons_shown or "reason" not in column]
    for i in kept:
        table.add_column(columns[i], justify="right" if columns[i] == "quality" else "left")
    for e in shown:
        quality = "-" if e.verdict is None else f"{e.verdict.quality:.1f}"
        reason = "the inference provider failed it" if e.verdict is None else _short(e.verdict.explanation)
        label, reasons = ("-", "") if e.label is None else (e.label.label, _short("; ".join(e.label.reasons)))
        cells = (e.problem_id, e.category, "yes" if e.success else "no", quality, e.gate, reason, label,
                 reasons)
        table.add_row(*(cells[i] for i in kept))
    omitted = len(explanations) - len(shown)
    notes = [f"{omitted} of {len(explanations)} attempts not shown (those that did not pass are listed first)"
             ] if omitted else []
    if not reasons_shown:
        notes.append(f"the judge's and the filter's reasons need a console {REASONS_WIDTH} columns wide")
    if not notes:
        return table, None
    return table, "; ".join(notes) + f"; every attempt's verdict, reasons and filter label: {out}"
