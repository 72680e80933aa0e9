"""The arena's SQL database: one SQLAlchemy metadata for the race log and the exposure ledger.

Any SQLAlchemy URL works: ``sqlite:////path/arena.sqlite3`` for one validator on one disk,
``postgresql+psycopg://user@host/db`` for a shared server. Alembic keeps the schema
(``arena/migrations``, version table ``arena_alembic_version``, so the trajectory store may share the
database): opening it upgrades it to the newest revision; a database made before it had migrations is
adopted by the first revision with its rows; one a newer release upgraded is refused (``SchemaError``).

SQLite serves concurrent writers (the submission API answers uploads on many threads while the work
loop appends to the race log) in write-ahead-log mode with a busy timeout: a writer waits for the lock
instead of failing with ``database is locked``, and readers never wait for writers.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase

from trajectories.store.migrate import Migrations

SQLITE_BUSY_TIMEOUT_MS: Final = 30_000
"""How long a SQLite writer waits for the lock; writes take milliseconds, only a stuck peer waits it out."""


MIGRATIONS: Final = Migrations("arena:migrations", "the arena database", lock_id=0x5A7A_A001,
                              version_table="arena_alembic_version")
"""The arena database's revisions (``arena/migrations``)."""


class Base(DeclarativeBase):
    pass


class ConcurrentWriterError(RuntimeError):
    """Someone else appended to a log this writer thought it owned: two validators on one database."""


def open_database(url: str) -> Engine:
    """An engine for ``url``, its schema upgraded to the newest revision (``SchemaError`` when this code
    cannot)."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_for_concurrent_writers)
    try:
        MIGRATIONS.upgrade(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _sqlite_for_concurrent_writers(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()
