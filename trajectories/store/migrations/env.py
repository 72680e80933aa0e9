"""Alembic environment: runs on the connection ``trajectories.store.migrate`` hands over.

No ``alembic.ini`` is needed. Developers create a revision with ``alembic`` pointed at this directory
(``script_location = trajectories.store:migrations``).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, engine_from_config, pool, text

from trajectories.store.schema import Base

# Any fixed number: PostgreSQL serialises concurrent upgrades (two validators starting at once) on it.
MIGRATION_LOCK_ID = 0x5A7A_0006


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata,
                      render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        elif connection.dialect.name == "sqlite":
            # SQLite's equivalent: the database's write lock before the version is read, so a second
            # process waits (busy timeout) and then finds the schema at head instead of creating it again.
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        context.run_migrations()


def run() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = engine_from_config(config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
                                poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)


if context.is_offline_mode():
    raise SystemExit("the trajectory store has no offline (SQL script) migrations; run them on a database")
run()
