"""What the site shows of one submission, and which attempts it may show at all (pure: no I/O).

An attempt is public when its problem is: a qualifying problem once its submission's qualifying run is
scored (``GET /qualifying/<id>`` publishes them then), a race problem once its race has finished.
Held-out problems, miners' local tests and anything still running are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from pydantic import BaseModel, Field

from arena.judge.score import quality_coefficient
from arena.judge.verdict import GATES, QUALITY_LEVELS
from arena.race import RaceState
from arena.race.state import Submission
from arena.validator.api.views.timeline import TimelineEntry
from arena.validator.runs import qualifying_suite_name, race_suite_name
from trajectories.store import RunRole
from trajectories.store.site_reads import AgentRuns, AttemptCount, Scope

PUBLIC_KINDS = ("qualifying", "race")
SUBMISSION_ROLES: tuple[RunRole, ...] = ("challenger", "entrant")
"""The runs a submission page shows: its own qualifying run and its race runs, and (``CODE_ROLES``) the
runs of its code as the defender on challengers' qualifying problems."""
CODE_ROLES: tuple[RunRole, ...] = ("defender",)


def _finished_race(state: RaceState, race_id: str) -> bool:
    try:
        day = date.fromisoformat(race_id)
    except ValueError:
        return False
    running = state.running is not None and state.running.race_id == race_id
    return not running and state.last_settled_day is not None and day <= state.last_settled_day


def public_scope(state: RaceState) -> Scope:
    """The attempts the site may show under ``state``: runs of the validator's own kinds on the problems
    of a submission of this log whose qualifying is scored, or of a race that finished (every race with
    an entrant is in its entrants' ``races``)."""
    qualifying = {qualifying_suite_name(s.submission_id) for s in state.submissions.values()
                  if s.qualifying_score is not None}
    races = {race for s in state.submissions.values() for race in s.races}
    finished = {race_suite_name(race) for race in races if _finished_race(state, race)}
    return Scope(kinds=PUBLIC_KINDS, suites=frozenset(qualifying | finished))


def is_public(state: RaceState, kind: str | None, suite: str | None) -> bool:
    """Whether an attempt of a run of ``kind`` on a problem of ``suite`` may be shown."""
    return public_scope(state).admits(kind, suite)


def submission_runs(submission: Submission) -> AgentRuns:
    """The runs holding a submission's attempts that its page shows (``arena.validator.runs``)."""
    return AgentRuns(submission_id=submission.submission_id, roles=SUBMISSION_ROLES, code_roles=CODE_ROLES)


class CategoryLine(BaseModel):
    category: str
    attempts: int
    successes: int
    success_rate: float
    mean_quality: float | None


class RunSummary(BaseModel):
    run_id: str
    kind: str | None
    race_id: str | None = Field(description="The race of a race run")
    defending: bool = Field(description="Its code's runs as the defender on challengers' qualifying problems")
    attempts: int
    success_rate: float
    mean_quality: float | None
    coefficient: float | None = Field(description="Quality coefficient of the mean judged quality")
    score: float | None = Field(description="success rate x coefficient over these public attempts")
    categories: list[CategoryLine]


class GateCount(BaseModel):
    stopped_at_gate: int | None = Field(description="First gate failed (1..4); None: passed all or unjudged")
    quality: float | None
    label: str
    attempts: int


class VerifiedCounts(BaseModel):
    verified: int = Field(description="Every recommended id was returned to the attempt by a tool")
    unverified: int = Field(description="An id no tool returned: the attempt failed (unverified_answer)")
    unchecked: int = Field(description="Not checked (no verified log or no dialogue)")


def _mean(values: list[tuple[float, int]]) -> float | None:
    total = sum(n for _, n in values)
    return sum(v * n for v, n in values) / total if total else None


def _category_lines(rows: Sequence[AttemptCount]) -> list[CategoryLine]:
    lines = []
    for category in sorted({r.category for r in rows}):
        mine = [r for r in rows if r.category == category]
        attempts = sum(r.attempts for r in mine)
        successes = sum(r.attempts for r in mine if r.success)
        lines.append(
            CategoryLine(
                category=category,
                attempts=attempts,
                successes=successes,
                success_rate=successes / attempts,
                mean_quality=_mean(
                    [(r.judge_quality, r.attempts) for r in mine if r.judge_quality is not None]
                ),
            )
        )
    return lines


def run_summaries(rows: Sequence[AttemptCount]) -> list[RunSummary]:
    """Per run, oldest run id first: its public attempts by category, success and judged quality."""
    summaries = []
    for run_id in sorted({r.run_id for r in rows}):
        mine = [r for r in rows if r.run_id == run_id]
        attempts = sum(r.attempts for r in mine)
        rate = sum(r.attempts for r in mine if r.success) / attempts
        quality = _mean([(r.judge_quality, r.attempts) for r in mine if r.judge_quality is not None])
        coefficient = None if quality is None else quality_coefficient(min(1.0, max(0.0, quality)))
        summaries.append(
            RunSummary(
                run_id=run_id,
                kind=mine[0].run_kind,
                race_id=mine[0].run_race_id,
                defending=mine[0].run_role == "defender",
                attempts=attempts,
                success_rate=rate,
                mean_quality=quality,
                coefficient=coefficient,
                score=None if coefficient is None else round(rate * coefficient, 4),
                categories=_category_lines(mine),
            )
        )
    return summaries


def gate_counts(rows: Sequence[AttemptCount]) -> list[GateCount]:
    """How many attempts stopped at each judge gate (and passed all, and were not judged), by the gates
    their stored verdicts passed."""
    counts = []
    for index, level in enumerate(QUALITY_LEVELS):
        n = sum(r.attempts for r in rows if r.judge_gates_passed == index)
        gate = index + 1 if index < len(GATES) else None
        counts.append(
            GateCount(
                stopped_at_gate=gate,
                quality=level,
                attempts=n,
                label=f"stopped at gate {gate}: {GATES[index]}" if gate else "passed all four gates",
            )
        )
    unjudged = sum(r.attempts for r in rows if r.judge_quality is None)
    counts.append(GateCount(stopped_at_gate=None, quality=None, label="not judged", attempts=unjudged))
    return counts


def label_counts(rows: Sequence[AttemptCount]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        key = r.filter_label or "unlabelled"
        counts[key] = counts.get(key, 0) + r.attempts
    return dict(sorted(counts.items()))


def verified_counts(rows: Sequence[AttemptCount]) -> VerifiedCounts:
    return VerifiedCounts(
        verified=sum(r.attempts for r in rows if r.answer_verified is True),
        unverified=sum(r.attempts for r in rows if r.answer_verified is False),
        unchecked=sum(r.attempts for r in rows if r.answer_verified is None),
    )


class CodeStatus(BaseModel):
    visible: bool
    reason: str = Field(description="Why it is not shown, or where it was published")
    url: str | None = Field(description="GET /code/<id> once published")


class SubmissionDetail(BaseModel):
    submission: Submission
    timeline: list[TimelineEntry]
    runs: list[RunSummary]
    gates: list[GateCount]
    labels: dict[str, int]
    verified: VerifiedCounts
    code: CodeStatus
    attempts_url: str
