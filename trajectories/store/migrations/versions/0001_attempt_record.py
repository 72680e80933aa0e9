"""Problems, agents, runs and attempts: the attempt record as the runner writes it.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_attempt_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "problems",
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("category", sa.String(16), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("suite", sa.String(128), nullable=True),
        sa.Column("leak_cluster", sa.String(128), nullable=True),
        sa.Column("reward_json", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_problems")),
    )
    op.create_index(op.f("ix_problems_leak_cluster"), "problems", ["leak_cluster"])
    op.create_table(
        "agents",
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("hotkey", sa.String(64), nullable=True),
        sa.Column("submitted_at", sa.Double(), nullable=True),
        sa.Column("embargo_until", sa.Double(), nullable=True),
        sa.Column("published_at", sa.Double(), nullable=True),
        sa.Column("code", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("code_hash", name=op.f("pk_agents")),
    )
    op.create_index(op.f("ix_agents_hotkey"), "agents", ["hotkey"])
    op.create_table(
        "runs",
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=True),
        sa.Column("validator", sa.String(64), nullable=True),
        sa.Column("suite", sa.String(128), nullable=True),
        sa.Column("started_at", sa.Double(), nullable=True),
        sa.Column("finished_at", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    op.create_table(
        "attempts",
        sa.Column("id", _attempt_id, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("agent_hash", sa.String(64), nullable=False),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=False),
        sa.Column("finished_at", sa.Double(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("gt", sa.Double(), nullable=False),
        sa.Column("rule", sa.Double(), nullable=False),
        sa.Column("format", sa.Double(), nullable=False),
        sa.Column("length", sa.Double(), nullable=False),
        sa.Column("failure_kind", sa.String(32), nullable=True),
        sa.Column("n_steps", sa.Integer(), nullable=False),
        sa.Column("n_proxy_calls", sa.Integer(), nullable=False),
        sa.Column("n_inference_calls", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("header", sa.Text(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("steps_size", sa.Integer(), nullable=False),
        sa.Column("proxy_log_size", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["agent_hash"], ["agents.code_hash"],
                                name=op.f("fk_attempts_agent_hash_agents")),
        sa.ForeignKeyConstraint(["problem_id"], ["problems.id"],
                                name=op.f("fk_attempts_problem_id_problems")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name=op.f("fk_attempts_run_id_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attempts")),
        sa.UniqueConstraint("run_id", "agent_hash", "problem_id", name=op.f("uq_attempts_run_id")),
    )
    op.create_index("ix_attempts_started_at", "attempts", ["started_at"])
    op.create_index(op.f("ix_attempts_agent_hash"), "attempts", ["agent_hash"])
    op.create_index(op.f("ix_attempts_problem_id"), "attempts", ["problem_id"])


def downgrade() -> None:
    op.drop_table("attempts")
    op.drop_table("runs")
    op.drop_table("agents")
    op.drop_table("problems")
