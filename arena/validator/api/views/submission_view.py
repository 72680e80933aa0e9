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
from arena.validator.runs import defender_run_id, qualifying_suite_name
from trajectories.store.site_reads import AttemptCount, Scope

PUBLIC_KINDS = ("qualifying", "race")
QUALIFYING_PREFIX = qualifying_suite_name("")
RACE_PREFIX = "race-"
"""The trajectory store's suite name of a race's problems: ``race-<race id>``."""


def race_suite_name(race_id: str) -> str:
    return f"{RACE_PREFIX}{race_id}"


def public_scope(state: RaceState) -> Scope:
    """The attempts the site may show under ``state``: runs of the validator's own kinds on qualifying and
    race problems, less the suites not public yet (a qualifying run not scored, the running race)."""
    hidden = {
        qualifying_suite_name(s.submission_id)
        for s in state.submissions.values()
        if s.qualifying_score is None and s.status != "rejected"
    }
    if state.running is not None:
        hidden.add(race_suite_name(state.running.race_id))
    return Scope(kinds=PUBLIC_KINDS, prefixes=(QUALIFYING_PREFIX, RACE_PREFIX), hidden=frozenset(hidden))


def _finished_race(state: RaceState, race_id: str) -> bool:
    try:
        day = date.fromisoformat(race_id)
    except ValueError:
        return False
    running = state.running is not None and state.running.race_id == race_id
    return not running and state.last_settled_day is not None and day <= state.last_settled_day


def is_public(state: RaceState, kind: str | None, suite: str | None) -> bool:
    """Whether an attempt of a run of ``kind`` on a problem of ``suite`` may be shown: the scope's rule,
    and the suite names a submission of this log whose qualifying is scored or a race that finished."""
    if not public_scope(state).admits(kind, suite):
        return False
    assert suite is not None
    if suite.startswith(QUALIFYING_PREFIX):
        owner = state.submissions.get(suite.removeprefix(QUALIFYING_PREFIX))
        return owner is not None and owner.qualifying_score is not None
    return _finished_race(state, suite.removeprefix(RACE_PREFIX))


def submission_runs(submission: Submission) -> tuple[str, ...]:
    """Prefixes of the run ids holding a submission's attempts: its qualifying run, its race runs, and the
    runs of its code as a defender on challengers' qualifying problems (``arena.validator.runs``)."""
    sid = submission.submission_id
    return (f"qualifying-{sid}-", f"race-{sid}-", defender_run_id(submission.code_hash))


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


def run_summaries(rows: Sequence[AttemptCount], code_hash: str) -> list[RunSummary]:
    """Per run, oldest run id first: its public attempts by category, success and judged quality."""
    summaries = []
    for run_id in sorted({r.run_id for r in rows}):
        mine = [r for r in rows if r.run_id == run_id]
        attempts = sum(r.attempts for r in mine)
        rate = sum(r.attempts for r in mine if r.success) / attempts
        quality = _mean([(r.judge_quality, r.attempts) for r in mine if r.judge_quality is not None])
        coefficient = None if quality is None else quality_coefficient(min(1.0, max(0.0, quality)))
        suite = mine[0].problem_suite or ""
        summaries.append(
            RunSummary(
                run_id=run_id,
                kind=mine[0].run_kind,
                race_id=suite.removeprefix(RACE_PREFIX) if suite.startswith(RACE_PREFIX) else None,
                defending=run_id == defender_run_id(code_hash),
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
    """How many attempts stopped at each judge gate (and passed all, and were not judged)."""
    counts = []
    for index, level in enumerate(QUALITY_LEVELS):
        n = sum(
            r.attempts for r in rows if r.judge_quality is not None and abs(r.judge_quality - level) < 1e-9
        )
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
