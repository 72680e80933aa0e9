"""Verified answers: whether an attempt's answer was bound to verified tool results, and the reference
scorer's success beside the arena's.

The tool results the proxy now records (ids, titles, prices, shops, services, values, the answer's
sha256) live in each proxy-log entry of the payload, which older entries simply lack; these columns
project the verdict for queries and dumps. Rows written before the rule keep ``answer_verified`` NULL
(never checked) and get ``reference_success = success`` (no arena rule overrode their score then).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("answer_verified", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("reference_success", sa.Boolean(), nullable=True))
    op.execute(sa.text("UPDATE attempts SET reference_success = success"))
    op.create_index(op.f("ix_attempts_answer_verified"), "attempts", ["answer_verified"])


def downgrade() -> None:
    op.drop_index(op.f("ix_attempts_answer_verified"), table_name="attempts")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("reference_success")
        batch.drop_column("answer_verified")
