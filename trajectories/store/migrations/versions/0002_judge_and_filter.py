"""Judge verdicts and structural-filter labels: derived after the record is written.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("judge_model", sa.String(128), nullable=True))
        batch.add_column(sa.Column("judge_quality", sa.Double(), nullable=True))
        batch.add_column(sa.Column("judge_json", sa.Text(), nullable=True))
        batch.add_column(sa.Column("filter_label", sa.String(16), nullable=True))
        batch.add_column(sa.Column("filter_json", sa.Text(), nullable=True))
    op.create_index(op.f("ix_attempts_filter_label"), "attempts", ["filter_label"])


def downgrade() -> None:
    op.drop_index(op.f("ix_attempts_filter_label"), table_name="attempts")
    with op.batch_alter_table("attempts") as batch:
        for column in ("filter_json", "filter_label", "judge_json", "judge_quality", "judge_model"):
            batch.drop_column(column)
