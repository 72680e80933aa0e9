"""The arena's tables as ``create_all`` made them before the database had migrations.

A database made then (arena tables, no ``arena_alembic_version``) is adopted, not rebuilt: each of these
tables it has must have exactly these columns and primary key (else :class:`SchemaError` names the table
and nothing changes), the ones it lacks (added by releases after it was made) are created, and its rows
stay as they are. Other tables (``submission_verdicts`` and ``submission_findings`` of verdicts keyed by
hotkey and block, which ``arena.submissions.store`` adopts) are left alone.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from trajectories.store.migrate import SchemaError

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _key(*names: str) -> list[sa.Column[str]]:
    return [sa.Column(name, sa.String(64), primary_key=True) for name in names]


def _tables(metadata: sa.MetaData) -> list[sa.Table]:
    block = "commitment_block"
    return [
        sa.Table("race_events", metadata,
                 sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
                 sa.Column("type", sa.String(40), nullable=False),
                 sa.Column("at", sa.DateTime(timezone=True), nullable=False),
                 sa.Column("payload", sa.Text(), nullable=False)),
        sa.Table("problem_exposures", metadata,
                 sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
                 sa.Column("problem_id", sa.String(128), nullable=False, index=True),
                 sa.Column("kind", sa.String(32), nullable=False),
                 sa.Column("reference", sa.String(256), nullable=False),
                 sa.Column("at", sa.DateTime(timezone=True), nullable=False)),
        sa.Table("public_suites", metadata,
                 sa.Column("key", sa.String(256), primary_key=True),
                 sa.Column("seed", sa.String(256), nullable=False),
                 sa.Column("problems", sa.LargeBinary(), nullable=False)),
        sa.Table("submission_nonces", metadata, *_key("hotkey"),
                 sa.Column("nonce_ns", sa.BigInteger(), primary_key=True, index=True)),
        sa.Table("submission_judgements", metadata, *_key("hotkey", "sha256"),
                 sa.Column(block, sa.Integer(), primary_key=True, autoincrement=False),
                 sa.Column("commitment_time", sa.DateTime(), nullable=False),
                 sa.Column("outcome", sa.String(16), nullable=False),
                 sa.Column("name", sa.String(), nullable=False),
                 sa.Column("size_bytes", sa.Integer(), nullable=False),
                 sa.Column("received_at", sa.DateTime(), nullable=False)),
        sa.Table("submission_judgement_findings", metadata, *_key("hotkey", "sha256"),
                 sa.Column(block, sa.Integer(), primary_key=True, autoincrement=False),
                 sa.Column("findings", sa.Text(), nullable=False)),
        sa.Table("submission_code", metadata, *_key("hotkey", "sha256"),
                 sa.Column(block, sa.Integer(), primary_key=True, autoincrement=False),
                 sa.Column("extrinsic_index", sa.Integer(), nullable=True),
                 sa.Column("fingerprint", sa.Text(), nullable=False),
                 sa.Column("copy_of", sa.Text(), nullable=True)),
        sa.Table("weights_epochs", metadata, *_key("hotkey"),
                 sa.Column("netuid", sa.Integer(), primary_key=True, autoincrement=False),
                 sa.Column("epoch", sa.Integer(), nullable=False),
                 sa.Column("block", sa.Integer(), nullable=False)),
    ]


def _check_adoptable(inspector: sa.Inspector, table: sa.Table) -> None:
    """``table`` as the database has it must be ``table`` as this revision makes it (columns, primary key)."""
    found = sorted(column["name"] for column in inspector.get_columns(table.name))
    key = sorted(inspector.get_pk_constraint(table.name)["constrained_columns"])
    expected, expected_key = sorted(table.columns.keys()), sorted(c.name for c in table.primary_key)
    if (found, key) != (expected, expected_key):
        raise SchemaError(
            f"the arena database has a table {table.name} with columns {found} (primary key {key}); the "
            f"arena's table has {expected} (primary key {expected_key}). Not a table this code made: point "
            "ARENA_DATABASE_URL at another database, or move the table out of the way")


def upgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    present = set(inspector.get_table_names())
    tables = _tables(sa.MetaData())
    for table in tables:
        if table.name in present:
            _check_adoptable(inspector, table)
    for table in tables:
        if table.name not in present:
            table.create(bind)


def downgrade() -> None:
    for table in reversed(_tables(sa.MetaData())):
        op.drop_table(table.name)
