"""Copy every row of one store into another, empty one: a SQLite store into PostgreSQL, or back.

Rows go across as they are stored (the compressed payloads are not decoded or encoded again), table by
table in the order their foreign keys need, a batch per transaction; attempts keep their ids, and on
PostgreSQL the id sequence is moved past them so later writes continue after the copied rows. Both
stores must be at the same schema revision (``TrajectoryStore.open`` brings both to the newest).
"""

from __future__ import annotations

from sqlalchemy import func, insert, select, text

from trajectories.store.repository import StoreError, TrajectoryStore
from trajectories.store.schema import ATTEMPTS, Base

BATCH = 500


def copy_store(source: TrajectoryStore, target: TrajectoryStore, *, batch: int = BATCH) -> dict[str, int]:
    """Copy ``source`` into the empty ``target``; the rows copied per table."""
    if target.count_attempts():
        raise StoreError("the target store already holds attempts: copy only into an empty store")
    copied: dict[str, int] = {}
    with source.engine.connect() as reader:
        for table in Base.metadata.sorted_tables:
            rows = reader.execution_options(yield_per=batch).execute(select(table))
            copied[table.name] = 0
            for part in rows.partitions(batch):
                with target.engine.begin() as writer:
                    writer.execute(insert(table), [row._asdict() for row in part])
                copied[table.name] += len(part)
    if target.engine.dialect.name == "postgresql":
        with target.engine.begin() as writer:
            last = writer.execute(select(func.max(ATTEMPTS.c.id))).scalar_one()
            if last is not None:
                writer.execute(
                    text("SELECT setval(pg_get_serial_sequence('attempts', 'id'), :last)"), {"last": last}
                )
    return copied
