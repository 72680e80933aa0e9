"""The trajectory store (SPEC 6): every attempt with its steps, verified proxy log, scores and verdicts.

Embedded SQLite by default (``ARENA_STORE_URL`` unset), PostgreSQL by URL. Open it with
:meth:`TrajectoryStore.open`, which also brings the schema up to date.
"""

from trajectories.store.entries import (
    AgentEntry,
    AttemptKey,
    AttemptWrite,
    CategoryScore,
    JudgeVerdict,
    ProblemEntry,
    RunEntry,
    RunKind,
    RunRole,
    StoredAttempt,
)
from trajectories.store.repository import StoreError, TrajectoryStore

__all__ = [
    "AgentEntry",
    "AttemptKey",
    "AttemptWrite",
    "CategoryScore",
    "JudgeVerdict",
    "ProblemEntry",
    "RunEntry",
    "RunKind",
    "RunRole",
    "StoreError",
    "StoredAttempt",
    "TrajectoryStore",
]
