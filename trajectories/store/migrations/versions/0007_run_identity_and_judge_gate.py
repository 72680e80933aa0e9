"""Runs say what they are, and verdicts keep their gate.

``runs`` gains ``submission_id``, ``race_id`` and ``role`` (``entries.RunRole``), written by whoever
creates a run, so that no reader learns what a run is from its id or its suite's name. ``attempts``
gains ``judge_gates_passed``: the gates (0..4) the judge decided the attempt passed, stored with the
verdict at judging time.

This migration is the one place that parses the run ids and suite names of the arena's old formats,
to back-fill rows written before the columns: ``qualifying-<submission>-<digest>`` (a challenger's
qualifying run), ``qualifying-defender-<code>`` (the reigning winner's code on challengers' problems:
named by its code, so its submission stays unknown), ``behaviour-<submission>`` (a suspected original
re-run for the behaviour copy check), ``race-<submission>-<digest>`` on the suite ``race-<race id>``
(a race entrant). Other runs (local tests) keep NULLs. Old verdicts get their gates by the rule as it
stands: quality level 0.1, 0.3, 0.5, 0.7, 0.9 passed 0, 1, 2, 3, 4 gates; a quality that is none of
these levels keeps NULL.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_DEFENDER = re.compile(r"qualifying-defender-[0-9a-f]+")
_DIGESTED = re.compile(r"(qualifying|race)-(.+)-[0-9a-f]{12}")
_BEHAVIOUR = re.compile(r"behaviour-(.+)")
_RACE_SUITE = "race-"
_LEVELS = (0.1, 0.3, 0.5, 0.7, 0.9)


def _identity(run_id: str, kind: str | None, suite: str | None) -> dict[str, str | None] | None:
    """The old run id's submission, race and role, ``None`` when it is none of the arena's formats."""
    if kind == "qualifying" and _DEFENDER.fullmatch(run_id):
        return {"submission_id": None, "race_id": None, "role": "defender"}
    if kind == "qualifying" and (behaviour := _BEHAVIOUR.fullmatch(run_id)):
        return {"submission_id": behaviour[1], "race_id": None, "role": "original"}
    digested = _DIGESTED.fullmatch(run_id)
    if digested is None or digested[1] != kind:
        return None
    if kind == "qualifying":
        return {"submission_id": digested[2], "race_id": None, "role": "challenger"}
    race = suite[len(_RACE_SUITE):] if suite and suite.startswith(_RACE_SUITE) else None
    return {"submission_id": digested[2], "race_id": race, "role": "entrant"}


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("submission_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("race_id", sa.String(32), nullable=True))
        batch.add_column(sa.Column("role", sa.String(16), nullable=True))
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("judge_gates_passed", sa.Integer(), nullable=True))
    bind = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.String), sa.column("kind", sa.String),
                    sa.column("suite", sa.String), sa.column("submission_id", sa.String),
                    sa.column("race_id", sa.String), sa.column("role", sa.String))
    stored = bind.execute(sa.select(runs.c.id, runs.c.kind, runs.c.suite)).all()
    updates = [{"old_id": row.id, **{f"old_{name}": value for name, value in found.items()}}
               for row in stored if (found := _identity(row.id, row.kind, row.suite)) is not None]
    if updates:
        bind.execute(runs.update().where(runs.c.id == sa.bindparam("old_id")).values(
            submission_id=sa.bindparam("old_submission_id"), race_id=sa.bindparam("old_race_id"),
            role=sa.bindparam("old_role")), updates)
    attempts = sa.table("attempts", sa.column("judge_quality", sa.Double),
                        sa.column("judge_gates_passed", sa.Integer))
    quality = attempts.c.judge_quality
    bind.execute(attempts.update().where(quality.is_not(None)).values(judge_gates_passed=sa.case(
        *((sa.func.abs(quality - level) < 1e-9, passed) for passed, level in enumerate(_LEVELS)),
        else_=None)))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("judge_gates_passed")
    # Not a batch: on SQLite that copies ``runs`` to a new table, which the attempts' foreign keys refuse
    # while they reference it. SQLite (3.35 on) and PostgreSQL both drop a column in place.
    for column in ("role", "race_id", "submission_id"):
        op.execute(f"ALTER TABLE runs DROP COLUMN {column}")
