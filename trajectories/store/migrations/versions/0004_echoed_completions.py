"""Echoed completions: how many of an attempt's LLM completions only repeated the text the agent sent.

The measure (``shoppingbench.echo``) reads each inference entry's request messages and completion, which
the payload already holds; this column projects it for queries and dumps. Rows written before the
measure keep NULL (never measured; the dump export measures them from their payload), so upgrading
touches no stored data.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("echoed_completions", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("echoed_completions")
