"""Reads for the validator's public site: one attempt in its context, an agent's attempts (their ids and
the counts its submission page sums up), a page of attempts by id. Every read is an indexed lookup,
never a scan:

- :meth:`SiteReads.attempt` and :meth:`SiteReads.summaries`: ``attempts`` by primary key, each joined to
  its run, problem (and agent) by theirs.
- :meth:`SiteReads.agent_index`: ``attempts`` through ``ix_attempts_agent_hash`` (one agent's rows only;
  SQLite keeps them in id order inside that index, so the order needs no sort), joined likewise.
- :meth:`SiteReads.latest_attempt_id`: the primary key's last entry.

Which attempts may be shown is the caller's rule (the arena's: public problems only); this module only
applies it, as a :class:`Scope`: run kinds and the suites whose problems are public. What a run is for
is read from its columns (submission, race, role), never from its id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import ColumnElement, Select, and_, func, or_, select

from trajectories.store.entries import RunRole, StoredAttempt
from trajectories.store.repository import TrajectoryStore
from trajectories.store.rows import decode_attempt
from trajectories.store.schema import AGENTS, ATTEMPTS, PROBLEMS, RUNS

MAX_PAGE = 200
"""The most attempts one page read returns."""


@dataclass(frozen=True)
class Scope:
    """The attempts a reader may see: a run of one of ``kinds`` on a problem of one of ``suites``."""

    kinds: tuple[str, ...]
    suites: frozenset[str] = field(default_factory=frozenset)

    def admits(self, kind: str | None, suite: str | None) -> bool:
        return kind in self.kinds and suite in self.suites

    def clause(self) -> ColumnElement[bool]:
        """The same rule in SQL, over ``runs`` and ``problems`` joined to ``attempts``."""
        return and_(RUNS.c.kind.in_(self.kinds), PROBLEMS.c.suite.in_(sorted(self.suites)))


class AttemptInContext(BaseModel):
    """One stored attempt with the run and problem it belongs to."""

    model_config = ConfigDict(frozen=True)

    attempt: StoredAttempt
    run_kind: str | None
    run_suite: str | None
    run_submission_id: str | None
    run_race_id: str | None
    run_role: str | None
    validator: str | None
    problem_suite: str | None
    hotkey: str | None


class AttemptSummary(BaseModel):
    """One attempt as a list shows it: the projections, none of the large parts."""

    model_config = ConfigDict(frozen=True)

    id: int
    run_id: str
    run_kind: str | None
    problem_id: str
    problem_suite: str | None
    category: str
    started_at: float
    success: bool
    answer_verified: bool | None
    failure_kind: str | None
    judge_quality: float | None
    filter_label: str | None
    n_steps: int
    n_proxy_calls: int
    n_inference_calls: int
    completion_tokens: int


class AttemptCount(BaseModel):
    """How many of an agent's attempts in one run share a category and these verdicts."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_kind: str | None
    run_race_id: str | None
    run_role: str | None
    problem_suite: str | None
    category: str
    success: bool
    answer_verified: bool | None
    judge_quality: float | None
    judge_gates_passed: int | None
    filter_label: str | None
    attempts: int


_SUMMARY_COLUMNS = (
    ATTEMPTS.c.id,
    ATTEMPTS.c.run_id,
    RUNS.c.kind.label("run_kind"),
    ATTEMPTS.c.problem_id,
    PROBLEMS.c.suite.label("problem_suite"),
    PROBLEMS.c.category,
    ATTEMPTS.c.started_at,
    ATTEMPTS.c.success,
    ATTEMPTS.c.answer_verified,
    ATTEMPTS.c.failure_kind,
    ATTEMPTS.c.judge_quality,
    ATTEMPTS.c.filter_label,
    ATTEMPTS.c.n_steps,
    ATTEMPTS.c.n_proxy_calls,
    ATTEMPTS.c.n_inference_calls,
    ATTEMPTS.c.completion_tokens,
)
_COUNT_NAMES = (
    "run_id",
    "run_kind",
    "run_race_id",
    "run_role",
    "problem_suite",
    "category",
    "success",
    "answer_verified",
    "judge_quality",
    "judge_gates_passed",
    "filter_label",
)
_COUNT_KEYS = (
    ATTEMPTS.c.run_id,
    RUNS.c.kind,
    RUNS.c.race_id,
    RUNS.c.role,
    PROBLEMS.c.suite,
    PROBLEMS.c.category,
    ATTEMPTS.c.success,
    ATTEMPTS.c.answer_verified,
    ATTEMPTS.c.judge_quality,
    ATTEMPTS.c.judge_gates_passed,
    ATTEMPTS.c.filter_label,
)


@dataclass(frozen=True)
class AgentIndex:
    """An agent's attempts in a scope: ids oldest first, and counts."""

    ids: list[int]
    counts: list[AttemptCount]


def _joined(query: Select[Any]) -> Select[Any]:
    return query.join(RUNS, RUNS.c.id == ATTEMPTS.c.run_id).join(
        PROBLEMS, PROBLEMS.c.id == ATTEMPTS.c.problem_id
    )


@dataclass(frozen=True)
class AgentRuns:
    """Which runs of an agent a read covers: those of submission ``submission_id`` in one of ``roles``, and
    those of the agent's code in one of ``code_roles`` whichever submission registered them (a run named
    by its code only, as a defender's)."""

    submission_id: str
    roles: tuple[RunRole, ...]
    code_roles: tuple[RunRole, ...] = ()

    def clause(self) -> ColumnElement[bool]:
        """The rule in SQL, over ``runs`` joined to the agent's ``attempts``."""
        own = and_(RUNS.c.submission_id == self.submission_id, RUNS.c.role.in_(self.roles))
        return or_(own, RUNS.c.role.in_(self.code_roles)) if self.code_roles else own


def _agent_clause(agent_hash: str, scope: Scope, runs: AgentRuns) -> tuple[ColumnElement[bool], ...]:
    return ATTEMPTS.c.agent_hash == agent_hash, scope.clause(), runs.clause()


class SiteReads:
    """The site's reads over one store."""

    def __init__(self, store: TrajectoryStore) -> None:
        self.engine = store.engine

    def attempt(self, attempt_id: int) -> AttemptInContext | None:
        """The attempt ``attempt_id`` with its run, problem and agent, ``None`` if there is none."""
        query = (
            _joined(
                select(
                    ATTEMPTS,
                    RUNS.c.kind.label("run_kind"),
                    RUNS.c.suite.label("run_suite"),
                    RUNS.c.submission_id.label("run_submission_id"),
                    RUNS.c.race_id.label("run_race_id"),
                    RUNS.c.role.label("run_role"),
                    RUNS.c.validator,
                    PROBLEMS.c.suite.label("problem_suite"),
                    AGENTS.c.hotkey,
                )
            )
            .outerjoin(AGENTS, AGENTS.c.code_hash == ATTEMPTS.c.agent_hash)
            .where(ATTEMPTS.c.id == attempt_id)
        )
        with self.engine.connect() as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        return AttemptInContext(
            attempt=decode_attempt(row),
            run_kind=row.run_kind,
            run_suite=row.run_suite,
            run_submission_id=row.run_submission_id,
            run_race_id=row.run_race_id,
            run_role=row.run_role,
            validator=row.validator,
            problem_suite=row.problem_suite,
            hotkey=row.hotkey,
        )

    def summaries(self, ids: Sequence[int]) -> list[AttemptSummary]:
        """The attempts ``ids`` (at most :data:`MAX_PAGE`) as a list shows them, in ``ids`` order."""
        wanted = list(ids)[:MAX_PAGE]
        if not wanted:
            return []
        query = _joined(select(*_SUMMARY_COLUMNS)).where(ATTEMPTS.c.id.in_(wanted))
        with self.engine.connect() as connection:
            found = {row.id: row for row in connection.execute(query)}
        return [AttemptSummary.model_validate(found[i]._asdict()) for i in wanted if i in found]

    def agent_index(self, agent_hash: str, scope: Scope, *, runs: AgentRuns) -> AgentIndex:
        """The agent's attempts in ``scope`` in ``runs``: their ids, oldest first, and their counts by run,
        category, success and verdicts (one pass over the agent's rows)."""
        query = (
            _joined(select(ATTEMPTS.c.id, *_COUNT_KEYS))
            .where(*_agent_clause(agent_hash, scope, runs))
            .order_by(ATTEMPTS.c.id)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        counts: Counter[tuple[Any, ...]] = Counter(tuple(row)[1:] for row in rows)
        return AgentIndex(
            ids=[row.id for row in rows],
            counts=[
                AttemptCount(**dict(zip(_COUNT_NAMES, key, strict=True)), attempts=n)
                for key, n in sorted(counts.items(), key=lambda item: tuple(map(str, item[0])))
            ],
        )

    def latest_attempt_id(self) -> int:
        """The highest attempt id (0 for none): it grows with every attempt written, so a reader can tell
        cheaply (primary key) whether the store has grown since it last looked."""
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.max(ATTEMPTS.c.id))).scalar() or 0)
