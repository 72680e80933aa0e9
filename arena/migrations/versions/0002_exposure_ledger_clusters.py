"""The exposure ledger's problems and clusters: every problem it placed (whole, public or only held out)
with its leak cluster, and each cluster's side (``train``, ``held_out``, ``contested``), decided once.

Problems exposed before this revision are in ``problem_exposures`` by id only: the ledger holds no cluster
for them, and dumps put their attempts in ``unclustered``.

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
    # A database that ``create_all`` made with these models (before the arena had migrations) has them.
    present = set(sa.inspect(op.get_bind()).get_table_names())
    if "ledger_clusters" not in present:
        op.create_table("ledger_clusters",
                        sa.Column("cluster", sa.String(length=128), nullable=False),
                        sa.Column("side", sa.String(length=16), nullable=False),
                        sa.Column("reference", sa.String(length=256), nullable=False),
                        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
                        sa.PrimaryKeyConstraint("cluster"))
    if "ledger_problems" not in present:
        op.create_table("ledger_problems",
                        sa.Column("problem_id", sa.String(length=128), nullable=False),
                        sa.Column("cluster", sa.String(length=128), nullable=False),
                        sa.Column("public", sa.Boolean(), nullable=False),
                        sa.Column("problem", sa.LargeBinary(), nullable=False),
                        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
                        sa.PrimaryKeyConstraint("problem_id"))
        with op.batch_alter_table("ledger_problems", schema=None) as batch_op:
            batch_op.create_index(batch_op.f("ix_ledger_problems_cluster"), ["cluster"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ledger_problems", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_problems_cluster"))
    op.drop_table("ledger_problems")
    op.drop_table("ledger_clusters")
