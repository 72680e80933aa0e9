"""The store's tables as SQLAlchemy 2 typed models. Alembic migrations (``migrations/``) create them.

Times are Unix seconds (UTC) as floats, the unit of :class:`~shoppingbench.records.AttemptRecord`, so
a record round-trips exactly on every backend. An attempt keeps its record in three parts: the
``header`` (every record field except the two large ones, as JSON, so fields the runner adds later
survive without a migration), and the ``payload``: the steps JSON followed by the proxy log JSON,
compressed together (``blobs.py``; the sizes say where one ends).
The other attempt columns are projections of these for queries and dumps.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Explicit constraint names make migrations identical on SQLite and PostgreSQL.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit key.
AttemptId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class ProblemRow(Base):
    """A problem as registered by whoever owns the bank; ``leak_cluster`` decides dump splits."""

    __tablename__ = "problems"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    category: Mapped[str] = mapped_column(String(16))
    query: Mapped[str] = mapped_column(Text)
    suite: Mapped[str | None] = mapped_column(String(128))
    leak_cluster: Mapped[str | None] = mapped_column(String(128), index=True)
    reward_json: Mapped[str | None] = mapped_column(Text)


class AgentRow(Base):
    """An agent file, keyed by the sha256 of its bytes. ``code`` is exported only once published."""

    __tablename__ = "agents"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    hotkey: Mapped[str | None] = mapped_column(String(64), index=True)
    submitted_at: Mapped[float | None] = mapped_column(Double)
    embargo_until: Mapped[float | None] = mapped_column(Double)
    published_at: Mapped[float | None] = mapped_column(Double)
    code: Mapped[str | None] = mapped_column(Text)


class RunRow(Base):
    """One evaluation run: a qualifying run, a race, a local test or a held-out evaluation."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[str | None] = mapped_column(String(16))
    # Who and what the run is for (migration 0007): the creator says so; never parsed out of the id.
    submission_id: Mapped[str | None] = mapped_column(String(64))
    race_id: Mapped[str | None] = mapped_column(String(32))
    role: Mapped[str | None] = mapped_column(String(16))
    validator: Mapped[str | None] = mapped_column(String(64))
    suite: Mapped[str | None] = mapped_column(String(128))
    started_at: Mapped[float | None] = mapped_column(Double)
    finished_at: Mapped[float | None] = mapped_column(Double)


class AttemptRow(Base):
    """One agent x problem x run. Re-writing the same triple updates this row (never a second one)."""

    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("run_id", "agent_hash", "problem_id"),
        Index("ix_attempts_started_at", "started_at"),
    )

    id: Mapped[int] = mapped_column(AttemptId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"))
    agent_hash: Mapped[str] = mapped_column(ForeignKey("agents.code_hash"), index=True)
    problem_id: Mapped[str] = mapped_column(ForeignKey("problems.id"), index=True)
    started_at: Mapped[float] = mapped_column(Double)
    finished_at: Mapped[float] = mapped_column(Double)
    success: Mapped[bool] = mapped_column(Boolean)
    gt: Mapped[float] = mapped_column(Double)
    rule: Mapped[float] = mapped_column(Double)
    format: Mapped[float] = mapped_column(Double)
    length: Mapped[float] = mapped_column(Double)
    failure_kind: Mapped[str | None] = mapped_column(String(32))
    n_steps: Mapped[int] = mapped_column(Integer)
    n_proxy_calls: Mapped[int] = mapped_column(Integer)
    n_inference_calls: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    header: Mapped[str] = mapped_column(Text)
    # zstd-compressed already: on PostgreSQL stored out of line without compressing it again
    # (``STORAGE EXTERNAL``, migration 0006).
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    steps_size: Mapped[int] = mapped_column(Integer)
    proxy_log_size: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64))
    # The verified-answer rule (migration 0003): NULL when never checked (rows from before the rule).
    answer_verified: Mapped[bool | None] = mapped_column(Boolean, index=True)
    reference_success: Mapped[bool | None] = mapped_column(Boolean)
    # Derived later by the judge and the structural filter (migration 0002).
    judge_model: Mapped[str | None] = mapped_column(String(128))
    judge_quality: Mapped[float | None] = mapped_column(Double)
    judge_json: Mapped[str | None] = mapped_column(Text)
    # The gates the judge's verdict passed (0..4, migration 0007), stored with it, not re-derived.
    judge_gates_passed: Mapped[int | None] = mapped_column(Integer)
    filter_label: Mapped[str | None] = mapped_column(String(16), index=True)
    filter_json: Mapped[str | None] = mapped_column(Text)
    # Completions that only repeated their request (``shoppingbench.echo``, migration 0004): measured
    # from the record when written; NULL on rows stored before the measure (the dumps measure those).
    echoed_completions: Mapped[int | None] = mapped_column(Integer)
    # The inference provider failed the attempt (migration 0005): not the agent's failure. NULL on rows
    # stored before the flag.
    infra_failed: Mapped[bool | None] = mapped_column(Boolean)


# The Core tables, for bulk statements that bypass the ORM.
PROBLEMS: Table = ProblemRow.__table__  # type: ignore[assignment]
AGENTS: Table = AgentRow.__table__  # type: ignore[assignment]
RUNS: Table = RunRow.__table__  # type: ignore[assignment]
ATTEMPTS: Table = AttemptRow.__table__  # type: ignore[assignment]
