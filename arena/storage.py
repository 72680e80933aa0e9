"""The arena's SQL database: one SQLAlchemy metadata for the race log and the exposure ledger.

Any SQLAlchemy URL works: ``sqlite:////path/arena.sqlite3`` for one validator on one disk,
``postgresql+psycopg://user@host/db`` for a shared server. Tables are created on first use.

SQLite serves concurrent writers (the submission API answers uploads on many threads while the work
loop appends to the race log) in write-ahead-log mode with a busy timeout: a writer waits for the lock
instead of failing with ``database is locked``, and readers never wait for writers.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase

SQLITE_BUSY_TIMEOUT_MS: Final = 30_000
"""How long a SQLite writer waits for the lock; writes take milliseconds, only a stuck peer waits it out."""


class Base(DeclarativeBase):
    pass


class ConcurrentWriterError(RuntimeError):
    """Someone else appended to a log this writer thought it owned: two validators on one database."""


def open_database(url: str) -> Engine:
    """An engine for ``url`` with every arena table created."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_for_concurrent_writers)
    Base.metadata.create_all(engine)
    return engine


def _sqlite_for_concurrent_writers(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()
