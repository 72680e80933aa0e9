"""Infrastructure failures: attempts the inference provider failed (``AttemptRecord.infra_failed``).

The record's header already keeps the flag; this column projects it so that summaries (per-category
scores) leave such attempts out instead of counting them as the agent's failures. Rows written before
it keep NULL (no provider error was recorded then), so upgrading touches no stored data.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("infra_failed", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("infra_failed")
