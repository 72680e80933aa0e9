"""Reads the validator's leaderboard makes of the trajectory store, each an indexed lookup (no scan):

- :func:`problem_categories`: the category of each of a race's problems (primary-key lookups on
  ``problems``), so per-category success comes from the race log's per-problem outcomes.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from trajectories.store.repository import TrajectoryStore
from trajectories.store.schema import PROBLEMS

CHUNK = 500
"""Ids per ``IN (...)`` (far below SQLite's and PostgreSQL's parameter limits)."""


def problem_categories(store: TrajectoryStore, problem_ids: Iterable[str]) -> dict[str, str]:
    """``{problem id: category}`` for those of ``problem_ids`` the store registered (others are left
    out)."""
    ids = sorted(set(problem_ids))
    found: dict[str, str] = {}
    with store.engine.connect() as connection:
        for start in range(0, len(ids), CHUNK):
            query = select(PROBLEMS.c.id, PROBLEMS.c.category).where(
                PROBLEMS.c.id.in_(ids[start : start + CHUNK])
            )
            found.update({row.id: row.category for row in connection.execute(query)})
    return found
