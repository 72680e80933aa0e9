"""Engines for the two backends: embedded SQLite (WAL, foreign keys on) and PostgreSQL through psycopg 3."""

from __future__ import annotations

import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL

DEFAULT_POSTGRES_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalise_url(url: str | URL) -> URL:
    """``postgresql://`` and ``postgres://`` mean psycopg 3, the one PostgreSQL driver we ship."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # First: switching a new file to WAL takes its lock, and without a busy timeout a process opening
    # the store at the same moment as another failed at once with "database is locked".
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    # WAL lets the dump exporter read while the validator writes; NORMAL sync is crash-safe in WAL
    # mode (a power cut may lose the last commits, never corrupt the file).
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, waiting as the busy timeout would: while another connection switches a
    new file to WAL, SQLite answers "database is locked" without calling its busy handler."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def make_engine(url: str | URL) -> Engine:
    """An engine for a store URL (``sqlite:///path`` or ``postgresql+psycopg://...``)."""
    parsed = normalise_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            parsed = parsed.set(database=str(Path(parsed.database).expanduser()))
        engine = create_engine(parsed)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"unsupported store URL {parsed.render_as_string(hide_password=True)}: "
                         "use sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB")
    engine = create_engine(parsed, pool_pre_ping=True)
    # Batches of rows as multi-row INSERT ... VALUES statements (SQLAlchemy's "insertmanyvalues", which
    # it applies to psycopg only for INSERT ... RETURNING): a fraction of the server's work per row.
    engine.dialect.use_insertmanyvalues_wo_returning = True
    return engine


@contextmanager
def scratch_postgres_database(server_url: str | URL = DEFAULT_POSTGRES_SERVER, *,
                              prefix: str = "arena_scratch") -> Iterator[URL]:
    """Create a uniquely named PostgreSQL database, yield its URL, and drop it afterwards.

    For tests and benchmarks. ``server_url`` must allow ``CREATE DATABASE`` (the loopback server of
    ``scripts/services.sh`` with its ``postgres`` user does).
    """
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", prefix):
        raise ValueError(f"database name prefix {prefix!r} must be lower-case letters, digits and _")
    server = normalise_url(server_url)
    name = f"{prefix}_{secrets.token_hex(6)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield server.set(database=name)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
