"""The arena's SQL database: one SQLAlchemy metadata for the race log and the exposure ledger.

Any SQLAlchemy URL works: ``sqlite:////path/arena.sqlite3`` for one validator on one disk,
``postgresql+psycopg://user@host/db`` for a shared server. Tables are created on first use.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass


class ConcurrentWriterError(RuntimeError):
    """Someone else appended to a log this writer thought it owned: two validators on one database."""


def open_database(url: str) -> Engine:
    """An engine for ``url`` with every arena table created."""
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    return engine
