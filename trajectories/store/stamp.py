"""A cheap stamp of what the store holds: it changes whenever an attempt is added.

For caches of answers computed from the store (the validator's public site): ``max(id)`` of the attempts
is read from the end of the primary key, so it costs the same on an empty store and on one of millions
of attempts. Re-writing an attempt that exists (same run, agent and problem) keeps its id and so the
stamp; so does a verdict added later. Caches that must see those bound their answers' age instead.
"""

from __future__ import annotations

from sqlalchemy import func, select

from trajectories.store.repository import TrajectoryStore
from trajectories.store.schema import ATTEMPTS


def attempts_stamp(store: TrajectoryStore) -> int:
    """The newest attempt's id (0 for an empty store)."""
    with store.engine.connect() as connection:
        return int(connection.execute(select(func.max(ATTEMPTS.c.id))).scalar_one() or 0)
