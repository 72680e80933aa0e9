"""Reads for the validator's public site: one attempt in its context, an agent's attempts a page at a
time, and the counts its submission page sums up. Every read is an indexed lookup, never a scan:

- :meth:`SiteReads.attempt`: ``attempts`` by primary key, its run and problem by theirs.
- :meth:`SiteReads.agent_attempts` and :meth:`SiteReads.agent_counts`: ``attempts`` through
  ``ix_attempts_agent_hash`` (one agent's rows only; SQLite keeps them in id order inside that index, so
  the page needs no sort), each joined to its run and problem by primary key.

Which attempts may be shown is the caller's rule (the arena's: public problems only); this module only
applies it, as a :class:`Scope`: run kinds, suite-name prefixes, and suites still hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import ColumnElement, Select, and_, func, or_, select

from trajectories.store.entries import StoredAttempt
from trajectories.store.repository import TrajectoryStore
from trajectories.store.rows import decode_attempt
from trajectories.store.schema import AGENTS, ATTEMPTS, PROBLEMS, RUNS

MAX_PAGE = 200
"""The most attempts one page read returns."""


@dataclass(frozen=True)
class Scope:
    """The attempts a reader may see: a run of one of ``kinds`` on a problem whose suite starts with one of
    ``prefixes`` and is not one of ``hidden``."""

    kinds: tuple[str, ...]
    prefixes: tuple[str, ...]
    hidden: frozenset[str] = field(default_factory=frozenset)

    def admits(self, kind: str | None, suite: str | None) -> bool:
        return (
            kind in self.kinds
            and suite is not None
            and suite.startswith(self.prefixes)
            and suite not in self.hidden
        )

    def clause(self) -> ColumnElement[bool]:
        """The same rule in SQL, over ``runs`` and ``problems`` joined to ``attempts``."""
        suite = PROBLEMS.c.suite
        conditions = [
            RUNS.c.kind.in_(self.kinds),
            or_(*(suite.startswith(p, autoescape=True) for p in self.prefixes)),
        ]
        if self.hidden:
            conditions.append(suite.not_in(sorted(self.hidden)))
        return and_(*conditions)


class AttemptInContext(BaseModel):
    """One stored attempt with the run and problem it belongs to."""

    model_config = ConfigDict(frozen=True)

    attempt: StoredAttempt
    run_kind: str | None
    run_suite: str | None
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
    problem_suite: str | None
    category: str
    success: bool
    answer_verified: bool | None
    judge_quality: float | None
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
_COUNT_KEYS = (
    ATTEMPTS.c.run_id,
    RUNS.c.kind,
    PROBLEMS.c.suite,
    PROBLEMS.c.category,
    ATTEMPTS.c.success,
    ATTEMPTS.c.answer_verified,
    ATTEMPTS.c.judge_quality,
    ATTEMPTS.c.filter_label,
)


def _joined(query: Select[Any]) -> Select[Any]:
    return query.join(RUNS, RUNS.c.id == ATTEMPTS.c.run_id).join(
        PROBLEMS, PROBLEMS.c.id == ATTEMPTS.c.problem_id
    )


def _agent_clause(agent_hash: str, scope: Scope, runs: Sequence[str]) -> tuple[ColumnElement[bool], ...]:
    return (
        ATTEMPTS.c.agent_hash == agent_hash,
        scope.clause(),
        or_(*(ATTEMPTS.c.run_id.startswith(prefix, autoescape=True) for prefix in runs)),
    )


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
            validator=row.validator,
            problem_suite=row.problem_suite,
            hotkey=row.hotkey,
        )

    def agent_attempts(
        self,
        agent_hash: str,
        scope: Scope,
        *,
        runs: Sequence[str],
        offset: int,
        limit: int,
    ) -> tuple[list[AttemptSummary], int]:
        """A page of the agent's attempts in ``scope`` in runs whose id starts with one of ``runs`` (oldest
        first, by id), and how many there are."""
        limit = max(0, min(limit, MAX_PAGE))
        where = _agent_clause(agent_hash, scope, runs)
        page = _joined(select(*_SUMMARY_COLUMNS)).where(*where).order_by(ATTEMPTS.c.id)
        count = _joined(select(func.count()).select_from(ATTEMPTS)).where(*where)
        with self.engine.connect() as connection:
            total = int(connection.execute(count).scalar_one())
            rows = connection.execute(page.offset(max(0, offset)).limit(limit)).all()
        return [AttemptSummary.model_validate(row._asdict()) for row in rows], total

    def agent_counts(self, agent_hash: str, scope: Scope, *, runs: Sequence[str]) -> list[AttemptCount]:
        """The agent's attempts as :meth:`agent_attempts` selects them, counted by run, category, success
        and verdicts."""
        query = (
            _joined(select(*_COUNT_KEYS, func.count().label("attempts")))
            .where(*_agent_clause(agent_hash, scope, runs))
            .group_by(*_COUNT_KEYS)
            .order_by(*_COUNT_KEYS)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return [
            AttemptCount(
                run_id=r.run_id,
                run_kind=r.kind,
                problem_suite=r.suite,
                category=r.category,
                success=r.success,
                answer_verified=r.answer_verified,
                judge_quality=r.judge_quality,
                filter_label=r.filter_label,
                attempts=int(r.attempts),
            )
            for r in rows
        ]
